// FusedBatchNormV3 in training mode and FusedBatchNormGradV3, channels last: `x` is `rows` rows of
// `c` channels. Per-channel statistics take one workgroup per channel (256 threads striding over the
// rows, then a tree); the element-wise steps take one invocation per element.
//   stats: batch mean (`out_a`) and biased variance (`out_b`), two passes over x like TF-CPU's.
//   running: one running statistic TF outputs (`out_a`), from the batch one (`mean`) and the old one
//     (`aux`): blended by `exponential_avg_factor`, Bessel-corrected first when `mode` is 1 (variance).
//   normalize: y = (x - mean) * rsqrt(variance + epsilon) * scale + offset (`aux`).
//   grad_stats: offset_backprop = sum(dy) (`out_a`), scale_backprop = sum(dy * (x - mean)) * rsqrt(var + eps)
//     (`out_b`), with dy in `aux`.
//   grad_input: x_backprop (`out_c`); in training mode the batch statistics' own gradients enter through
//     the sums of grad_stats (`out_a`, `out_b` read back), in inference mode it is dy * scale * rsqrt(var + eps).

struct Params {
    n: u32,
    rows: u32,
    c: u32,
    // grad_input: 1 in training mode; running: 1 for the variance.
    mode: u32,
    epsilon: f32,
    exponential_avg_factor: f32,
    x_off: u32,
    aux_off: u32,
    scale_off: u32,
    mean_off: u32,
    var_off: u32,
    out_a_off: u32,
    out_b_off: u32,
    out_c_off: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> aux: array<f32>;
@group(0) @binding(2) var<storage, read_write> scale: array<f32>;
@group(0) @binding(3) var<storage, read_write> mean: array<f32>;
@group(0) @binding(4) var<storage, read_write> variance: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_a: array<f32>;
@group(0) @binding(6) var<storage, read_write> out_b: array<f32>;
@group(0) @binding(7) var<storage, read_write> out_c: array<f32>;
@group(0) @binding(8) var<uniform> p: Params;

var<workgroup> partial: array<vec2<f32>, 256>;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn channel_id(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// Sums `partial` over the workgroup; every thread gets the total.
fn workgroup_sum(lid: u32, value: vec2<f32>) -> vec2<f32> {
    partial[lid] = value;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (lid < step) {
            partial[lid] += partial[lid + step];
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(256)
fn stats(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let ch = channel_id(wid, nwg);
    let valid = ch < p.c;
    let channel = select(0u, ch, valid);
    // Compensated sums (math.wgsl): statistics over millions of rows do not drift.
    var sum = MathSum(0.0, 0.0);
    for (var r = lid; valid && r < p.rows; r += 256u) {
        math_sum_add(&sum, x[p.x_off + r * p.c + channel]);
    }
    let batch_mean = workgroup_sum(lid, vec2<f32>(math_sum_value(sum), 0.0)).x / f32(p.rows);
    var squares = MathSum(0.0, 0.0);
    for (var r = lid; valid && r < p.rows; r += 256u) {
        let centered = x[p.x_off + r * p.c + channel] - batch_mean;
        math_sum_add(&squares, centered * centered);
    }
    let batch_var = workgroup_sum(lid, vec2<f32>(math_sum_value(squares), 0.0)).x / f32(p.rows);
    if (lid == 0u && valid) {
        out_a[p.out_a_off + channel] = batch_mean;
        out_b[p.out_b_off + channel] = batch_var;
    }
}

@compute @workgroup_size(256)
fn running(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let ch = linear_id(gid, nwg);
    if (ch >= p.c) {
        return;
    }
    var batch = mean[p.mean_off + ch];
    if (p.mode == 1u) {
        batch *= f32(p.rows) / f32(max(p.rows, 2u) - 1u);
    }
    let factor = p.exponential_avg_factor;
    if (factor == 1.0) {
        out_a[p.out_a_off + ch] = batch;
    } else {
        out_a[p.out_a_off + ch] = (1.0 - factor) * aux[p.aux_off + ch] + factor * batch;
    }
}

@compute @workgroup_size(256)
fn normalize(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let ch = i % p.c;
    let inv = math_rsqrt(variance[p.var_off + ch] + p.epsilon);
    let centered = x[p.x_off + i] - mean[p.mean_off + ch];
    out_c[p.out_c_off + i] = centered * inv * scale[p.scale_off + ch] + aux[p.aux_off + ch];
}

@compute @workgroup_size(256)
fn grad_stats(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let ch = channel_id(wid, nwg);
    let valid = ch < p.c;
    let channel = select(0u, ch, valid);
    let m = mean[p.mean_off + channel];
    var dy_sum = MathSum(0.0, 0.0);
    var dy_x_sum = MathSum(0.0, 0.0);
    for (var r = lid; valid && r < p.rows; r += 256u) {
        let dy = aux[p.aux_off + r * p.c + channel];
        math_sum_add(&dy_sum, dy);
        math_sum_add(&dy_x_sum, dy * (x[p.x_off + r * p.c + channel] - m));
    }
    let total = workgroup_sum(lid, vec2<f32>(math_sum_value(dy_sum), math_sum_value(dy_x_sum)));
    if (lid == 0u && valid) {
        out_a[p.out_a_off + channel] = total.x;
        out_b[p.out_b_off + channel] = total.y * math_rsqrt(variance[p.var_off + channel] + p.epsilon);
    }
}

@compute @workgroup_size(256)
fn grad_input(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let ch = i % p.c;
    let inv = math_rsqrt(variance[p.var_off + ch] + p.epsilon);
    let dy = aux[p.aux_off + i];
    var result = dy;
    if (p.mode != 0u) {
        let rows = f32(p.rows);
        let centered = x[p.x_off + i] - mean[p.mean_off + ch];
        result = dy - out_a[p.out_a_off + ch] / rows - centered * inv * out_b[p.out_b_off + ch] / rows;
    }
    out_c[p.out_c_off + i] = scale[p.scale_off + ch] * inv * result;
}

// The `_vec4` entry points: the same steps on four channels at once, every binding seen as vec4s
// and every offset in vec4s (the host picks them where the channels and all offsets are multiples
// of 4). llvmpipe loads and stores storage lane by lane, one loop per access: a vec4 access is one
// loop where four scalar ones are four, and normalize's and grad_input's per-channel operands are
// loaded once per four elements.
@group(0) @binding(0) var<storage, read_write> x4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> aux4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> scale4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> mean4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> variance4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> out_a4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> out_b4: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> out_c4: array<vec4<f32>>;
var<workgroup> partial_a4: array<vec4<f32>, 256>;
var<workgroup> partial_b4: array<vec4<f32>, 256>;

// `workgroup_sum` of two vec4s, left in partial_a4[0] and partial_b4[0] for the caller (which
// waits at a barrier before it writes them again).
fn workgroup_sum4(lid: u32, a: vec4<f32>, b: vec4<f32>) {
    partial_a4[lid] = a;
    partial_b4[lid] = b;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (lid < step) {
            partial_a4[lid] += partial_a4[lid + step];
            partial_b4[lid] += partial_b4[lid + step];
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn stats_vec4(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let c4 = p.c / 4u;
    let q = channel_id(wid, nwg);
    let valid = q < c4;
    let quad = select(0u, q, valid);
    var sum = MathSum4(vec4<f32>(), vec4<f32>());
    for (var r = lid; valid && r < p.rows; r += 256u) {
        math_sum4_add(&sum, x4[p.x_off + r * c4 + quad]);
    }
    workgroup_sum4(lid, math_sum4_value(sum), vec4<f32>());
    let batch_mean = partial_a4[0] / f32(p.rows);
    workgroupBarrier();
    var squares = MathSum4(vec4<f32>(), vec4<f32>());
    for (var r = lid; valid && r < p.rows; r += 256u) {
        let centered = x4[p.x_off + r * c4 + quad] - batch_mean;
        math_sum4_add(&squares, centered * centered);
    }
    workgroup_sum4(lid, math_sum4_value(squares), vec4<f32>());
    let batch_var = partial_a4[0] / f32(p.rows);
    if (lid == 0u && valid) {
        out_a4[p.out_a_off + quad] = batch_mean;
        out_b4[p.out_b_off + quad] = batch_var;
    }
}

fn rsqrt4(v: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(math_rsqrt(v.x), math_rsqrt(v.y), math_rsqrt(v.z), math_rsqrt(v.w));
}

// Rows per invocation of normalize_vec4 and grad_input_vec4: their per-channel factors (an
// accurate rsqrt each) are computed once per block of rows, not per element.
const ROW_BLOCK: u32 = 8u;

// The channel quad and rows of invocation `i` of the row-block kernels (`n / c` rows in all).
fn row_block(i: u32) -> vec3<u32> {
    let c4 = p.c / 4u;
    let block = i / c4;
    let rows = p.n / p.c;
    return vec3<u32>(i - block * c4, block * ROW_BLOCK, min(rows, (block + 1u) * ROW_BLOCK));
}

@compute @workgroup_size(256)
fn normalize_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    let c4 = p.c / 4u;
    if (i >= (p.n / p.c + ROW_BLOCK - 1u) / ROW_BLOCK * c4) {
        return;
    }
    let b = row_block(i);
    let q = b.x;
    let inv = rsqrt4(variance4[p.var_off + q] + p.epsilon);
    let m = mean4[p.mean_off + q];
    let s = scale4[p.scale_off + q];
    let o = aux4[p.aux_off + q];
    for (var r = b.y; r < b.z; r++) {
        let centered = x4[p.x_off + r * c4 + q] - m;
        out_c4[p.out_c_off + r * c4 + q] = centered * inv * s + o;
    }
}

@compute @workgroup_size(256)
fn grad_stats_vec4(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let c4 = p.c / 4u;
    let q = channel_id(wid, nwg);
    let valid = q < c4;
    let quad = select(0u, q, valid);
    let m = mean4[p.mean_off + quad];
    var dy_sum = MathSum4(vec4<f32>(), vec4<f32>());
    var dy_x_sum = MathSum4(vec4<f32>(), vec4<f32>());
    for (var r = lid; valid && r < p.rows; r += 256u) {
        let dy = aux4[p.aux_off + r * c4 + quad];
        math_sum4_add(&dy_sum, dy);
        math_sum4_add(&dy_x_sum, dy * (x4[p.x_off + r * c4 + quad] - m));
    }
    workgroup_sum4(lid, math_sum4_value(dy_sum), math_sum4_value(dy_x_sum));
    if (lid == 0u && valid) {
        out_a4[p.out_a_off + quad] = partial_a4[0];
        out_b4[p.out_b_off + quad] = partial_b4[0] * rsqrt4(variance4[p.var_off + quad] + p.epsilon);
    }
}

@compute @workgroup_size(256)
fn grad_input_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    let c4 = p.c / 4u;
    if (i >= (p.n / p.c + ROW_BLOCK - 1u) / ROW_BLOCK * c4) {
        return;
    }
    let b = row_block(i);
    let q = b.x;
    let inv = rsqrt4(variance4[p.var_off + q] + p.epsilon);
    let scaled = scale4[p.scale_off + q] * inv;
    let m = mean4[p.mean_off + q];
    let rows = f32(p.rows);
    let dy_mean = out_a4[p.out_a_off + q] / rows;
    let dy_x = out_b4[p.out_b_off + q];
    for (var r = b.y; r < b.z; r++) {
        let at = r * c4 + q;
        let dy = aux4[p.aux_off + at];
        var result = dy;
        if (p.mode != 0u) {
            let centered = x4[p.x_off + at] - m;
            result = dy - dy_mean - centered * inv * dy_x / rows;
        }
        out_c4[p.out_c_off + at] = scaled * result;
    }
}
