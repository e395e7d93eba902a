// Comparisons within rows (`math.wgsl` comes first): TopKV2/TopK, InTopKV2/InTopK,
// LowerBound/UpperBound and Bucketize, on 32- or 64-bit words (`words` per element, `KIND` the
// element type). Offsets are in words.
//   top_k: one invocation per input element; its rank in its row (greater values first, ties by
//     lower index, -0 equal to +0, NaN above +inf with its sign's order) places it in the output
//     when below k. The loop stops once the rank reaches k.
//   top_k_keys, top_k_merge, top_k_take: long rows (the rank count is O(n^2) per row, its loop
//     capped on llvmpipe) sort instead: each row's keys and indices, padded to a power of two, go
//     through a bitonic sorting network in the same order, one pass per merge step, and the first
//     k of each row are taken.
//   in_top_k_count, in_top_k: whether the target's prediction has fewer than k strictly greater
//     predictions in its row (false for an out-of-range target or a row with a non-finite
//     prediction), as TF-CPU's kernel: counts in chunks of a row (long rows: many invocations, each
//     loop bounded), then one invocation per word of four bool results adds them up.
//   lower_bound, upper_bound: one invocation per value, std::lower_bound / std::upper_bound over
//     its row of the sorted input (Bucketize: one row of boundaries).

struct Params {
    rows: u32,
    // Row length: the input's (top_k, in_top_k) or the sorted input's (searches).
    n: u32,
    // top_k: outputs per row; in_top_k: k as i32 bits.
    k: u32,
    // Searches: values per row (0: every value searches row 0).
    m: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    idx_off: u32,
    // in_top_k: 2 for int64 targets (low word, high word), 1 for int32.
    target_words: u32,
    // top_k and the searches: 32-bit words per element (2 for 64-bit elements, low word first).
    words: u32,
    // The bitonic network's merge stage (the length of the runs it merges) and step (the distance
    // of the pairs it compares); `m` is then the padded row length. in_top_k: `step` classes to a
    // chunk, `m` chunks to a row.
    stage: u32,
    step: u32,
    // in_top_k_count on a window of one row past a binding (`window_of_row` 1): the target's
    // prediction (bits), which the host has read and checked; `a` holds the window's classes.
    target_prediction: u32,
    window_of_row: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read_write> idx: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

fn invocation(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// A float's bits as an unsigned key in a total order: -0 as +0, negative values below positive
// ones, NaN past the infinities.
fn order_key(bits: u32) -> u32 {
    let v = select(bits, 0u, (bits & 0x7fffffffu) == 0u);
    return select(v | 0x80000000u, ~v, (v & 0x80000000u) != 0u);
}

// The element type: float32 (0), a signed integer (1), an unsigned one (2) or float64 (3).
override KIND: u32 = 0u;

// Element e of `a` (of `b`) as (high, low) words: 64-bit elements are two words, low first.
fn a_element(e: u32) -> vec2<u32> {
    if (p.words == 2u) {
        return vec2<u32>(a[2u * e + 1u], a[2u * e]);
    }
    return vec2<u32>(a[e], 0u);
}

fn b_element(e: u32) -> vec2<u32> {
    if (p.words == 2u) {
        return vec2<u32>(b[2u * e + 1u], b[2u * e]);
    }
    return vec2<u32>(b[e], 0u);
}

// An element's key in KIND's total order, as (high, low) words compared in turn.
fn element_key(w: vec2<u32>) -> vec2<u32> {
    if (KIND == 0u) {
        return vec2<u32>(order_key(w.x), 0u);
    }
    if (KIND == 3u) {
        // float64, as order_key orders float32.
        if ((w.x & 0x7fffffffu) == 0u && w.y == 0u) {
            return vec2<u32>(0x80000000u, 0u);
        }
        if ((w.x & 0x80000000u) != 0u) {
            return vec2<u32>(~w.x, ~w.y);
        }
        return vec2<u32>(w.x | 0x80000000u, w.y);
    }
    let sign = select(0u, 0x80000000u, KIND == 1u);
    return vec2<u32>(w.x ^ sign, w.y);
}

// Element e's key in a total order.
fn top_k_key(e: u32) -> vec2<u32> {
    return element_key(a_element(e));
}

// Whether an element's words are a NaN (of a float KIND), from the bits: WGSL lets drivers
// assume finite math.
fn is_nan_element(w: vec2<u32>) -> bool {
    if (KIND == 0u) {
        return (w.x & 0x7fffffffu) > 0x7f800000u;
    }
    if (KIND == 3u) {
        let high = w.x & 0x7fffffffu;
        return high > 0x7ff00000u || (high == 0x7ff00000u && w.y != 0u);
    }
    return false;
}

fn key_greater(x: vec2<u32>, y: vec2<u32>) -> bool {
    return x.x > y.x || (x.x == y.x && x.y > y.y);
}

@compute @workgroup_size(256)
fn top_k(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.rows * p.n) {
        return;
    }
    let row = i / p.n;
    let j = i - row * p.n;
    // (Offsets are in elements for one-word elements, and `a_off` in words for two.)
    let start = p.a_off / p.words + row * p.n;
    let key = top_k_key(start + j);
    var rank = 0u;
    for (var t = 0u; t < p.n && rank < p.k; t++) {
        let other = top_k_key(start + t);
        if (key_greater(other, key) || (all(other == key) && t < j)) {
            rank++;
        }
    }
    if (rank < p.k) {
        let at = row * p.k + rank;
        for (var w = 0u; w < p.words; w++) {
            out[p.out_off + at * p.words + w] = a[(start + j) * p.words + w];
        }
        idx[p.idx_off + at] = j;
    }
}

// The bitonic network's scratch `b`: for each of `rows` padded rows of `m` entries, the keys' high
// words, then their low words, then the element indices.
fn entries() -> u32 {
    return p.rows * p.m;
}

// Whether entry x (key xk, index xi) comes before entry y in TopK's order.
fn before(xk: vec2<u32>, xi: u32, yk: vec2<u32>, yi: u32) -> bool {
    return key_greater(xk, yk) || (all(xk == yk) && xi < yi);
}

// One invocation per padded entry: the element's key and index (padding: the least key and indices
// past the row's, so that it sorts last).
@compute @workgroup_size(256)
fn top_k_keys(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = invocation(gid, nwg);
    if (e >= entries()) {
        return;
    }
    let row = e / p.m;
    let t = e - row * p.m;
    var key = vec2<u32>(0u, 0u);
    if (t < p.n) {
        key = top_k_key(p.a_off / p.words + row * p.n + t);
    }
    b[p.b_off + e] = key.x;
    b[p.b_off + entries() + e] = key.y;
    b[p.b_off + 2u * entries() + e] = t;
}

// One invocation per pair of one merge step: entries `step` apart, ordered as their run of
// 2 * `stage` sorts (runs alternate direction until the last stage).
@compute @workgroup_size(256)
fn top_k_merge(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    let half = p.m / 2u;
    if (i >= p.rows * half) {
        return;
    }
    let row = i / half;
    let t = i - row * half;
    let first = (t / p.step) * 2u * p.step + t % p.step;
    let x = p.b_off + row * p.m + first;
    let y = x + p.step;
    let n = entries();
    let xk = vec2<u32>(b[x], b[n + x]);
    let yk = vec2<u32>(b[y], b[n + y]);
    let xi = b[2u * n + x];
    let yi = b[2u * n + y];
    let forward = (first & p.stage) == 0u;
    if (before(yk, yi, xk, xi) == forward) {
        b[x] = yk.x;
        b[n + x] = yk.y;
        b[2u * n + x] = yi;
        b[y] = xk.x;
        b[n + y] = xk.y;
        b[2u * n + y] = xi;
    }
}

// One invocation per output: the k first entries of each sorted row, their values and indices.
@compute @workgroup_size(256)
fn top_k_take(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.rows * p.k) {
        return;
    }
    let row = i / p.k;
    let j = b[p.b_off + 2u * entries() + row * p.m + i - row * p.k];
    let source = p.a_off / p.words + row * p.n + j;
    for (var w = 0u; w < p.words; w++) {
        out[p.out_off + i * p.words + w] = a[source * p.words + w];
    }
    idx[p.idx_off + i] = j;
}

// The last pass of TopKV2 over rows too long to sort whole (`top_k_of_long_rows`): the second round
// gave positions among the candidates (binding `b`: each piece's top k, piece after piece, with
// indices within the piece); they become indices in the row, the candidate's index plus its piece's
// start (pieces of `p.step` elements).
@compute @workgroup_size(256)
fn top_k_row_indices(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.rows * p.k) {
        return;
    }
    let at = idx[p.idx_off + i];
    idx[p.idx_off + i] = b[p.b_off + at] + (at / p.k) * p.step;
}

// What a chunk of in_top_k_count gives where TF-CPU cannot decide: an out-of-range target, or a
// non-finite prediction in the row.
const UNDECIDED: u32 = 0xffffffffu;

// How many of the `step` classes of chunk `chunk` of row `row` are predicted more probable than the
// row's target, or UNDECIDED.
fn greater_in_chunk(row: u32, chunk: u32) -> u32 {
    let start = p.a_off + row * p.n;
    var predicted = bitcast<f32>(p.target_prediction);
    if (p.window_of_row == 0u) {
        let low = b[p.b_off + row * p.target_words];
        var high = select(0u, 0xffffffffu, (low & 0x80000000u) != 0u);
        if (p.target_words == 2u) {
            high = b[p.b_off + row * 2u + 1u];
        }
        // In range: 0 <= target < n, as a 64-bit signed value.
        if (high != 0u || low >= p.n) {
            return UNDECIDED;
        }
        predicted = bitcast<f32>(a[start + low]);
        if (math_is_nan(predicted) || math_is_inf(predicted)) {
            return UNDECIDED;
        }
    }
    var greater = 0u;
    let end = min(chunk * p.step + p.step, p.n);
    for (var c = chunk * p.step; c < end; c++) {
        let v = bitcast<f32>(a[start + c]);
        if (math_is_nan(v) || math_is_inf(v)) {
            return UNDECIDED;
        }
        if (v > predicted) {
            greater++;
        }
    }
    return greater;
}

// One invocation per chunk of `step` classes of a row (`m` chunks to a row): its count, in `out`.
@compute @workgroup_size(256)
fn in_top_k_count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.rows * p.m) {
        return;
    }
    let row = i / p.m;
    out[p.out_off + i] = greater_in_chunk(row, i - row * p.m);
}

// Whether row `row`'s target is among its k most probable classes: fewer than k greater, and
// decided in every chunk.
fn in_top(row: u32) -> bool {
    var greater = 0u;
    for (var c = 0u; c < p.m; c++) {
        let count = out[p.out_off + row * p.m + c];
        if (count == UNDECIDED) {
            return false;
        }
        greater += count;
    }
    return bitcast<i32>(greater) < bitcast<i32>(p.k);
}

// One invocation per word of four bool results (in `idx`), from in_top_k_count's chunks.
@compute @workgroup_size(256)
fn in_top_k(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = invocation(gid, nwg);
    if (w * 4u >= p.rows) {
        return;
    }
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let row = w * 4u + k;
        if (row < p.rows && in_top(row)) {
            word |= 1u << (k * 8u);
        }
    }
    idx[p.idx_off + w] = word;
}

// x < y as the element type compares them: false where either is NaN (IEEE's, whatever the
// driver assumes), -0 equal to +0.
fn less(x: vec2<u32>, y: vec2<u32>) -> bool {
    return !is_nan_element(x) && !is_nan_element(y) && key_greater(element_key(y), element_key(x));
}

// std::lower_bound (upper: std::upper_bound) of value v in row `row` of the sorted input.
fn bound(row: u32, v: vec2<u32>, upper: bool) -> u32 {
    // (Offsets are in words; `words` per element.)
    let start = p.a_off / p.words + row * p.n;
    var first = 0u;
    var count = p.n;
    while (count > 0u) {
        let step = count / 2u;
        let at = first + step;
        let x = a_element(start + at);
        let before = select(less(x, v), !less(v, x), upper);
        if (before) {
            first = at + 1u;
            count -= step + 1u;
        } else {
            count = step;
        }
    }
    return first;
}

fn search(gid: vec3<u32>, nwg: vec3<u32>, upper: bool) {
    let i = invocation(gid, nwg);
    let total = select(p.rows * p.m, p.m, p.rows == 0u);
    if (i >= total) {
        return;
    }
    let row = select(i / max(p.m, 1u), 0u, p.rows == 0u);
    let v = b_element(p.b_off / p.words + i);
    idx[p.idx_off + i] = bound(row, v, upper);
}

@compute @workgroup_size(256)
fn lower_bound(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    search(gid, nwg, false);
}

@compute @workgroup_size(256)
fn upper_bound(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    search(gid, nwg, true);
}
