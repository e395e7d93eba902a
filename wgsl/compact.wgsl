// Stream compaction (Where): the coordinates of an input's nonzero elements in row-major order,
// found on the device; only their count goes back to the host. The input comes in parts of whole
// chunks (CHUNK elements), each bound on its own; chunk indices below are the part's.
//   count_chunks, scan_counts (`chunk_scan.wgsl`, which follows): the nonzero elements per chunk,
//     then their offsets, the total at counts[chunks].
//   write_coords: workgroup c counts again, scans its threads' counts, and writes each nonzero
//     element's coordinates (int64, low word first) at row counts[chunk_base + c] + its rank in the
//     chunk, where those words fall inside the bound output window.

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

// `chunk_scan.wgsl`'s hooks.
fn kept(i: u32) -> bool {
    return nonzero(i);
}

fn chunk_base() -> u32 {
    return p.chunk_base;
}

fn load_count(c: u32) -> u32 {
    return counts[c];
}

fn store_count(c: u32, v: u32) {
    counts[c] = v;
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
    let before = chunk_rank(chunk, t);
    if (chunk * CHUNK >= p.n) {
        return;
    }
    var row = load_count(chunk_base() + chunk) + before;
    for (var k = 0u; k < PER_THREAD; k++) {
        let i = chunk * CHUNK + t * PER_THREAD + k;
        if (i < p.n && nonzero(i)) {
            write_row(p.flat_base + i, row);
            row += 1u;
        }
    }
}
