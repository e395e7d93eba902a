// Scatters and gathers by index tuples, for UnsortedSegmentSum/Prod/Min/Max, ScatterNd, the
// TensorScatter ops, GatherNd and the resource variables' scatter updates. One invocation per
// 32-bit word of the updates (scatters) or of the output (gathers). Row r of the updates goes to
// the output row its index tuple names (`depth` indices, int32 or int64, into the leading output
// dims); rows whose indices fall outside the output are dropped, and gathers give zeros for them,
// as TF-GPU does. Arithmetic combines land through a compare-exchange loop on the element's word
// (`KIND`: float32 0, int32 1, uint32 2; integers wrap), so the order in which duplicate indices
// combine, and with it a float's rounding, varies from run to run; `assign` stores words of any
// whole-word dtype (with duplicates, one wins).

override KIND: u32 = 0u;

const COMBINE_ADD: u32 = 0u;
const COMBINE_SUB: u32 = 1u;
const COMBINE_MUL: u32 = 2u;
const COMBINE_DIV: u32 = 3u;
const COMBINE_MIN: u32 = 4u;
const COMBINE_MAX: u32 = 5u;
const COMBINE_ASSIGN: u32 = 6u;

struct Params {
    // Words to process: the updates' (scatters) or the output's (gathers).
    n: u32,
    // Words per row (a row is what one index tuple names).
    row_len: u32,
    depth: u32,
    // 1 for int32 indices, 2 for int64 (little-endian word pairs).
    index_words: u32,
    idx_off: u32,
    upd_off: u32,
    out_off: u32,
    combine: u32,
    // The leading dims the index tuples address, and their strides in rows.
    dims: array<vec4<u32>, 2>,
    row_strides: array<vec4<u32>, 2>,
    // Batched scatters (DenseBincount of a matrix): tuple t addresses batch t / batch_tuples, whose
    // rows start batch_rows after the previous batch's; 0 for one batch.
    batch_tuples: u32,
    batch_rows: u32,
    // gather_narrow, scatter_narrow: bytes per element (1 or 2) and the output's elements.
    elem_bytes: u32,
    elements: u32,
}

@group(0) @binding(0) var<storage, read_write> indices: array<u32>;
// The updates of a scatter, the params of a gather.
@group(0) @binding(1) var<storage, read_write> rows: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> p: Params;

fn at(v: array<vec4<u32>, 2>, k: u32) -> u32 {
    return v[k / 4u][k % 4u];
}

// The row index tuple `row` names, or 0xffffffff when it falls outside the dims.
fn target_row(row: u32) -> u32 {
    var found = 0u;
    for (var k = 0u; k < p.depth; k++) {
        let w = p.idx_off + (row * p.depth + k) * p.index_words;
        let lo = indices[w];
        // Negative or too large: an int32 with its sign bit, an int64 with any high bit.
        var outside = lo >= at(p.dims, k);
        if (p.index_words == 2u) {
            outside = outside || indices[w + 1u] != 0u;
        }
        if (outside) {
            return 0xffffffffu;
        }
        found += lo * at(p.row_strides, k);
    }
    if (p.batch_tuples != 0u) {
        found += row / p.batch_tuples * p.batch_rows;
    }
    return found;
}

fn combined(old: f32, v: f32) -> f32 {
    switch p.combine {
        case COMBINE_SUB: { return old - v; }
        case COMBINE_MUL: { return old * v; }
        case COMBINE_DIV: { return old / v; }
        // TF-CPU's cwiseMin/cwiseMax(old, v): the update only where it compares smaller/larger.
        case COMBINE_MIN: { return select(old, v, v < old); }
        case COMBINE_MAX: { return select(old, v, old < v); }
        default: { return old + v; }
    }
}

fn combined_i32(old: i32, v: i32) -> i32 {
    switch p.combine {
        case COMBINE_SUB: { return old - v; }
        case COMBINE_MUL: { return old * v; }
        case COMBINE_DIV: { return old / v; }
        case COMBINE_MIN: { return min(old, v); }
        case COMBINE_MAX: { return max(old, v); }
        default: { return old + v; }
    }
}

fn combined_u32(old: u32, v: u32) -> u32 {
    switch p.combine {
        case COMBINE_SUB: { return old - v; }
        case COMBINE_MUL: { return old * v; }
        case COMBINE_DIV: { return old / v; }
        case COMBINE_MIN: { return min(old, v); }
        case COMBINE_MAX: { return max(old, v); }
        default: { return old + v; }
    }
}

// The combine of an element's word `old` with the update's `v`, in the element's type.
fn combined_word(old: u32, v: u32) -> u32 {
    if (KIND == 1u) {
        return bitcast<u32>(combined_i32(bitcast<i32>(old), bitcast<i32>(v)));
    }
    if (KIND == 2u) {
        return combined_u32(old, v);
    }
    return bitcast<u32>(combined(bitcast<f32>(old), bitcast<f32>(v)));
}

fn word_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = word_index(gid, nwg);
    if (e >= p.n) {
        return;
    }
    let row = target_row(e / p.row_len);
    if (row == 0xffffffffu) {
        return;
    }
    let i = p.out_off + row * p.row_len + e % p.row_len;
    let update = rows[p.upd_off + e];
    if (p.combine == COMBINE_ASSIGN) {
        atomicStore(&out[i], update);
        return;
    }
    var old = atomicLoad(&out[i]);
    loop {
        let new_bits = combined_word(old, update);
        if (new_bits == old) {
            break;
        }
        let swap = atomicCompareExchangeWeak(&out[i], old, new_bits);
        if (swap.exchanged) {
            break;
        }
        old = swap.old_value;
    }
}

@compute @workgroup_size(256)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = word_index(gid, nwg);
    if (e >= p.n) {
        return;
    }
    let row = target_row(e / p.row_len);
    var word = 0u;
    if (row != 0xffffffffu) {
        word = rows[p.upd_off + row * p.row_len + e % p.row_len];
    }
    atomicStore(&out[p.out_off + e], word);
}

// The 1- or 2-byte element at byte `at` of `rows`.
fn narrow_at(at: u32) -> u32 {
    let mask = (1u << (p.elem_bytes * 8u)) - 1u;
    return (rows[at / 4u] >> ((at % 4u) * 8u)) & mask;
}

// GatherNd of 1- and 2-byte elements: one invocation per output word, which gathers the elements
// it holds one by one (no two invocations share a word). `row_len` counts elements, `upd_off` bytes.
@compute @workgroup_size(256)
fn gather_narrow(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = word_index(gid, nwg);
    if (w >= p.n) {
        return;
    }
    let per_word = 4u / p.elem_bytes;
    var word = 0u;
    for (var k = 0u; k < per_word; k++) {
        let e = w * per_word + k;
        if (e >= p.elements) {
            break;
        }
        let row = target_row(e / p.row_len);
        if (row != 0xffffffffu) {
            let v = narrow_at(p.upd_off + (row * p.row_len + e % p.row_len) * p.elem_bytes);
            word |= v << (k * p.elem_bytes * 8u);
        }
    }
    atomicStore(&out[p.out_off + w], word);
}

// TensorScatterUpdate of 1- and 2-byte elements: one invocation per update element, which swaps
// its lanes of the output word in (with duplicates, one update wins).
@compute @workgroup_size(256)
fn scatter_narrow(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = word_index(gid, nwg);
    if (e >= p.n) {
        return;
    }
    let row = target_row(e / p.row_len);
    if (row == 0xffffffffu) {
        return;
    }
    let v = narrow_at(p.upd_off + e * p.elem_bytes);
    let at = p.out_off * 4u + (row * p.row_len + e % p.row_len) * p.elem_bytes;
    let shift = (at % 4u) * 8u;
    let lanes = ((1u << (p.elem_bytes * 8u)) - 1u) << shift;
    let i = at / 4u;
    var old = atomicLoad(&out[i]);
    loop {
        let new_word = (old & ~lanes) | (v << shift);
        if (new_word == old) {
            break;
        }
        let swap = atomicCompareExchangeWeak(&out[i], old, new_word);
        if (swap.exchanged) {
            break;
        }
        old = swap.old_value;
    }
}
