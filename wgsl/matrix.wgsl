// Matrix structure ops over the innermost two dimensions [..., rows, cols], moving elements as
// raw bits (any dtype):
//   band_words: MatrixBandPart for elements of `unit` whole words (1, 2 or 4): an invocation per
//     word, zero outside the band
//   band_parts: the same for elements of a half or a byte (`parts` of them to a word): an
//     invocation per output word (`out_off` counts parts), parts outside the output kept
// An element (m, n) is in the band where (lower < 0 or m - n <= lower) and (upper < 0 or
// n - m <= upper).

struct Params {
    n: u32,
    unit: u32,
    parts: u32,
    rows: u32,
    cols: u32,
    lower: i32,
    upper: i32,
    in_off: u32,
    out_off: u32,
    // The element index, within its matrix, of the launch's first element (windows of big
    // tensors).
    base: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read_write> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn in_band(i: u32) -> bool {
    let element = (i % (p.rows * p.cols) + p.base) % (p.rows * p.cols);
    let n = element % p.cols;
    let m = element / p.cols;
    let below = i32(m) - i32(n);
    return (p.lower < 0 || below <= p.lower) && (p.upper < 0 || -below <= p.upper);
}

@compute @workgroup_size(256)
fn band_words(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    out[p.out_off + i] = select(0u, input[p.in_off + i], in_band(i / p.unit));
}

@compute @workgroup_size(256)
fn band_parts(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg);
    let lead = p.out_off % p.parts;
    if (w * p.parts >= p.n + lead) {
        return;
    }
    let bits = 32u / p.parts;
    let mask = (1u << bits) - 1u;
    let at = p.out_off / p.parts + w;
    var word = out[at];
    for (var k = 0u; k < p.parts; k++) {
        let slot = w * p.parts + k;
        if (slot >= lead && slot - lead < p.n) {
            let e = slot - lead;
            let source = p.in_off + e;
            let value = select(0u, (input[source / p.parts] >> ((source % p.parts) * bits)) & mask, in_band(e));
            let shift = k * bits;
            word = (word & ~(mask << shift)) | (value << shift);
        }
    }
    out[at] = word;
}
