// Image resizing, NHWC (`math.wgsl` is prepended, for `math_keep`). The host computes every
// source coordinate TF computes in float32 (indices and interpolation weights, in `table`), so
// the shaders pick exactly TF's pixels and weights. `S` is the input's storage type, `O` the float
// output's (f32; f64 for float64 gradient sums).
//   bilinear: ResizeBilinear, S in (f32, f16 or f64, read as float as TF does), f32 out, with TF's
//     compute_lerp; table rows (top, bottom, lerp bits) for output rows at `y_table`, for output
//     columns at `x_table`.
//   nearest: ResizeNearestNeighbor on 32-bit words (`channels` words a pixel: float64 is two);
//     the source row of each output row at `y_table`, the source column of each column at
//     `x_table`.
//   nearest_halves: the same on 16-bit elements, an invocation per output word (two elements).
//   axis_sum: one separable pass of a gradient, over the tensor as [outer, axis, inner]:
//     out[o, d, i] = sum_k w_k * input[o, s_k, i] over the sources k of destination d, in `O`.
//     Sources are CSR: table[y_table + d] .. table[y_table + d + 1] index the (s_k, w_k bits)
//     pairs at `x_table`; a launch adds the sources [k_begin, k_end) of each destination's list
//     (long lists take several launches under the adapter's loop limit).

struct Params {
    n: u32,
    channels: u32,
    out_h: u32,
    out_w: u32,
    in_h: u32,
    in_w: u32,
    in_off: u32,
    out_off: u32,
    y_table: u32,
    x_table: u32,
    inner: u32,
    axis_in: u32,
    axis_out: u32,
    k_begin: u32,
    k_end: u32,
    accumulate: u32,
}

@group(0) @binding(0) var<storage, read_write> input: array<S>;
@group(0) @binding(0) var<storage, read_write> input_words: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<O>;
@group(0) @binding(1) var<storage, read_write> out_words: array<u32>;
@group(0) @binding(2) var<storage, read_write> table: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn read(at: u32) -> f32 {
    return f32(input[p.in_off + at]);
}

@compute @workgroup_size(256)
fn bilinear(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let c = i % p.channels;
    let pixel = i / p.channels;
    let x = pixel % p.out_w;
    let row = pixel / p.out_w;
    let y = row % p.out_h;
    let b = row / p.out_h;
    let ty = p.y_table + 3u * y;
    let tx = p.x_table + 3u * x;
    let top = (b * p.in_h + table[ty]) * p.in_w;
    let bottom = (b * p.in_h + table[ty + 1u]) * p.in_w;
    let left = table[tx] * p.channels + c;
    let right = table[tx + 1u] * p.channels + c;
    let y_lerp = bitcast<f32>(table[ty + 2u]);
    let x_lerp = bitcast<f32>(table[tx + 2u]);
    let top_left = read(top * p.channels + left);
    let top_right = read(top * p.channels + right);
    let bottom_left = read(bottom * p.channels + left);
    let bottom_right = read(bottom * p.channels + right);
    // TF's compute_lerp, each product kept apart from its sum (no fused multiply-add, as TF-CPU).
    let upper = top_left + math_keep((top_right - top_left) * x_lerp);
    let lower = bottom_left + math_keep((bottom_right - bottom_left) * x_lerp);
    out[p.out_off + i] = O(upper + math_keep((lower - upper) * y_lerp));
}

// The source element of output element `e` (elements of `p.channels` a pixel).
fn nearest_source(e: u32) -> u32 {
    let c = e % p.channels;
    let pixel = e / p.channels;
    let x = pixel % p.out_w;
    let row = pixel / p.out_w;
    let y = row % p.out_h;
    let b = row / p.out_h;
    return ((b * p.in_h + table[p.y_table + y]) * p.in_w + table[p.x_table + x]) * p.channels + c;
}

@compute @workgroup_size(256)
fn nearest(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    out_words[p.out_off + i] = input_words[p.in_off + nearest_source(i)];
}

// Offsets in 16-bit elements; the output starts on a word.
fn half_at(e: u32) -> u32 {
    let at = p.in_off + e;
    return (input_words[at / 2u] >> (16u * (at % 2u))) & 0xffffu;
}

// Invocation w writes output word `p.out_off / 2 + w`. A part of a batch (batch.rs) can start
// half-way into a word: its halves outside this output (`lead` before, past `p.n` after) keep what
// the word holds, and no other invocation of this launch writes that word.
@compute @workgroup_size(256)
fn nearest_halves(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg);
    let lead = p.out_off % 2u;
    if (2u * w >= p.n + lead) {
        return;
    }
    let at = p.out_off / 2u + w;
    var word = out_words[at];
    for (var half = 0u; half < 2u; half++) {
        let slot = 2u * w + half;
        if (slot >= lead && slot - lead < p.n) {
            let shift = 16u * half;
            word = (word & ~(0xffffu << shift)) | (half_at(nearest_source(slot - lead)) << shift);
        }
    }
    out_words[at] = word;
}

@compute @workgroup_size(256)
fn axis_sum(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let inner = i % p.inner;
    let rest = i / p.inner;
    let d = rest % p.axis_out;
    let o = rest / p.axis_out;
    let first = table[p.y_table + d];
    let last = table[p.y_table + d + 1u];
    let base = o * p.axis_in * p.inner + inner;
    var sum = select(O(0.0), out[p.out_off + i], p.accumulate != 0u);
    // Counted within the destination's list, so that no bound wraps (`k_end` may be u32::MAX).
    for (var k = p.k_begin; k < min(last - first, p.k_end); k++) {
        let pair = p.x_table + 2u * (first + k);
        sum += O(bitcast<f32>(table[pair + 1u])) * O(input[p.in_off + base + table[pair] * p.inner]);
    }
    out[p.out_off + i] = sum;
}
