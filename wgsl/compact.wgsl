// Stream compaction (Where): the coordinates of an input's nonzero elements in row-major order,
// found on the device; only their count goes back to the host. The input comes in parts of whole
// chunks (CHUNK elements), each bound on its own; chunk indices below are the part's.
//   count_chunks: workgroup c counts the nonzero elements of chunk c into counts[chunk_base + c].
//   scan_counts: one workgroup turns counts[0..chunks) into exclusive offsets and writes their
//     total at counts[chunks].
//   write_coords: workgroup c counts again, scans its threads' counts, and writes each nonzero
//     element's coordinates (int64, low word first) at row counts[chunk_base + c] + its rank in the
//     chunk, where those words fall inside the bound output window.

const WG: u32 = 256u;
const PER_THREAD: u32 = 4u;
const CHUNK: u32 = 1024u;

struct Params {
    // Elements in this part.
    n: u32,
    // Byte offset of the part's first element inside its binding.
    in_byte: u32,
    elem_bytes: u32,
    // The bits that make an element nonzero: in its even words (or in the element, for one under
    // a word) and in its odd ones.
    mask_even: u32,
    mask_odd: u32,
    chunk_base: u32,
    // scan_counts: chunks in all.
    chunks: u32,
    rank: u32,
    // Flat index of the part's first element.
    flat_base: u32,
    // The output window: its word offset in the binding, its first word and its length.
    out_off: u32,
    out_first: u32,
    out_words: u32,
    dims: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> counts: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> partial: array<u32, WG>;

// Whether element i of the part is nonzero: any bit under its word's mask set. The masks keep an
// integer's every bit and a float32's or float64's exponent only: NaN and infinities count, signed
// zeros do not, and neither do those types' subnormals (TF-CPU compares them as zero; its float16
// and bfloat16 comparisons count them).
fn nonzero(i: u32) -> bool {
    let start = p.in_byte + i * p.elem_bytes;
    if (p.elem_bytes < 4u) {
        return ((input[start / 4u] >> ((start % 4u) * 8u)) & p.mask_even) != 0u;
    }
    var any = 0u;
    for (var j = 0u; j < p.elem_bytes / 4u; j += 2u) {
        any |= input[start / 4u + j] & p.mask_even;
        if (j + 1u < p.elem_bytes / 4u) {
            any |= input[start / 4u + j + 1u] & p.mask_odd;
        }
    }
    return any != 0u;
}

// Thread t's elements are PER_THREAD consecutive ones, so threads in order cover the chunk in order.
fn thread_count(chunk: u32, t: u32) -> u32 {
    var c = 0u;
    for (var k = 0u; k < PER_THREAD; k++) {
        let i = chunk * CHUNK + t * PER_THREAD + k;
        if (i < p.n && nonzero(i)) {
            c += 1u;
        }
    }
    return c;
}

// Inclusive prefix sums of `partial` across the workgroup (Hillis-Steele).
fn scan_partial(t: u32) {
    for (var s = 1u; s < WG; s <<= 1u) {
        var add = 0u;
        if (t >= s) {
            add = partial[t - s];
        }
        workgroupBarrier();
        partial[t] += add;
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn count_chunks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let chunk = wid.x + wid.y * nwg.x;
    partial[t] = thread_count(chunk, t);
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            partial[t] += partial[t + s];
        }
        workgroupBarrier();
    }
    if (t == 0u && chunk * CHUNK < p.n) {
        counts[p.chunk_base + chunk] = partial[0];
    }
}

@compute @workgroup_size(256)
fn scan_counts(@builtin(local_invocation_index) t: u32) {
    let per = (p.chunks + WG - 1u) / WG;
    let lo = min(t * per, p.chunks);
    let hi = min(lo + per, p.chunks);
    var sum = 0u;
    for (var c = lo; c < hi; c++) {
        sum += counts[c];
    }
    partial[t] = sum;
    workgroupBarrier();
    scan_partial(t);
    var run = partial[t] - sum;
    for (var c = lo; c < hi; c++) {
        let v = counts[c];
        counts[c] = run;
        run += v;
    }
    if (t == WG - 1u) {
        counts[p.chunks] = partial[WG - 1u];
    }
}

// Writes the coordinates of flat index `flat` as output row `row`, the words inside the window.
fn write_row(flat: u32, row: u32) {
    var rest = flat;
    for (var d = p.rank; d > 0u; d--) {
        let size = p.dims[(d - 1u) / 4u][(d - 1u) % 4u];
        let word = (row * p.rank + d - 1u) * 2u;
        if (word >= p.out_first && word - p.out_first < p.out_words) {
            out[p.out_off + word - p.out_first] = rest % size;
            out[p.out_off + word - p.out_first + 1u] = 0u;
        }
        rest /= size;
    }
}

@compute @workgroup_size(256)
fn write_coords(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let chunk = wid.x + wid.y * nwg.x;
    let mine = thread_count(chunk, t);
    partial[t] = mine;
    workgroupBarrier();
    scan_partial(t);
    if (chunk * CHUNK >= p.n) {
        return;
    }
    var row = counts[p.chunk_base + chunk] + partial[t] - mine;
    for (var k = 0u; k < PER_THREAD; k++) {
        let i = chunk * CHUNK + t * PER_THREAD + k;
        if (i < p.n && nonzero(i)) {
            write_row(p.flat_base + i, row);
            row += 1u;
        }
    }
}
