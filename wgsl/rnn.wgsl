// The recurrent cells of CudnnRNN*: one time step of one direction of one layer per dispatch, an
// invocation per (batch row, unit). The products with the weight matrices run as matmuls between
// these dispatches (src/kernels/rnn.rs); these kernels apply biases, activations and the state
// update, and their gradients. Every offset is in elements of its binding. `T` is the element type
// (`element_f32.wgsl` or `element_f64.wgsl` comes first); `lens` is u32.
//
// MODE: 0 rnn_relu, 1 rnn_tanh, 2 lstm, 3 gru. Gate slots of the gate buffers: lstm [i, f, c, o]
// (cuDNN's order); gru [R_GATE, Z_GATE, 2 = n] as the weights are laid out, plus slot 3 holding
// R_n h + b_Rn (the reset gate multiplies it, so the gradient needs it); rnn keeps none.

override MODE: u32 = 2u;
// LSTM with a projection (num_proj): the cell writes m = o * tanh(c) and `project_step` makes
// h = m Wp^T of it (the product runs between them); the backprop's dh comes from `proj_back` and
// a product with Wp.
override PROJ: bool = false;
override R_GATE: u32 = 0u;
override Z_GATE: u32 = 1u;

struct Params {
    batch: u32,
    units: u32,
    steps: u32,
    step: u32,
    reverse: u32,
    time_major: u32,
    // Input projection (or the input itself for skip_input): row stride, gate stride.
    xw_off: u32,
    xw_row: u32,
    xw_gate: u32,
    // h_prev x R^T (forward) or dh_rec (backward), rows of `gate_row` (forward) / `units` (backward).
    hr_off: u32,
    bias_w_off: u32,
    bias_r_off: u32,
    h_prev_off: u32,
    h_next_off: u32,
    c_prev_off: u32,
    c_next_off: u32,
    gates_off: u32,
    gate_slots: u32,
    // Sequence output (forward) or its gradient (backward): offset, row stride, first column.
    y_off: u32,
    y_row: u32,
    y_col: u32,
    // Backward: gate gradients by input row (dgi, binding `out`) and by step (dgr), the carried
    // state gradients (binding `carry`).
    dgi_off: u32,
    dgr_off: u32,
    dh_off: u32,
    dc_off: u32,
    // copy_rows / gate_sums: rows x cols, strides, flags (1: add src2, 2: add dst).
    rows: u32,
    cols: u32,
    src_off: u32,
    src_stride: u32,
    src2_off: u32,
    src2_stride: u32,
    dst_off: u32,
    dst_stride: u32,
    flags: u32,
    // Dropout between layers: the probability's threshold on 32 random bits, 1 / (1 - p), and
    // the call's random stream. The scale comes as three float32s (`keep_scale` rounded, then the
    // rest in two parts) whose sum is the float64 scale exactly.
    keep_threshold: u32,
    keep_scale: f32,
    seeds: vec4<u32>,
    // Projection: where this step's m goes in the reserve space.
    m_off: u32,
    keep_scale_mid: f32,
    keep_scale_low: f32,
    // dropout_forward / dropout_backward: the first element of this dispatch (a layer's output
    // past a storage binding goes in ranges; the random bits follow the element, not the range).
    first: u32,
    // Where each binding's tensor starts inside its (aligned) window, in elements: a, hr, wts,
    // lens; res, out, dgr, carry.
    base0: vec4<u32>,
    base1: vec4<u32>,
}

@group(0) @binding(0) var<storage, read_write> a: array<T>;
@group(0) @binding(1) var<storage, read_write> hr: array<T>;
@group(0) @binding(2) var<storage, read_write> wts: array<T>;
@group(0) @binding(3) var<storage, read_write> lens: array<u32>;
@group(0) @binding(4) var<storage, read_write> res: array<T>;
@group(0) @binding(5) var<storage, read_write> out: array<T>;
@group(0) @binding(6) var<storage, read_write> dgr: array<T>;
@group(0) @binding(7) var<storage, read_write> carry: array<T>;
@group(0) @binding(8) var<uniform> p: Params;

const LSTM: u32 = 2u;
const GRU: u32 = 3u;
const RNN_TANH: u32 = 1u;

fn invocation(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// The input row of time `t`, batch row `b` in the sequence layout.
fn row_of(t: u32, b: u32) -> u32 {
    return select(b * p.steps + t, t * p.batch + b, p.time_major == 1u);
}

// The time step `p.step` reaches for batch row `b` (the reverse direction walks each sequence
// from its own last valid step), or none past the sequence's length.
fn time_of(b: u32) -> i32 {
    let len = lens[p.base0.w + b];
    if (p.step >= len) {
        return -1;
    }
    return i32(select(p.step, len - 1u - p.step, p.reverse == 1u));
}

fn gate_count() -> u32 {
    switch MODE {
        case 2u: { return 4u; }
        case 3u: { return 3u; }
        default: { return 1u; }
    }
}

// x W_g^T + b_Wg for gate g (the product computed beforehand, or the input itself).
fn input_part(row: u32, g: u32, j: u32) -> T {
    return a[p.base0.x + p.xw_off + row * p.xw_row + g * p.xw_gate + j] + wts[p.base0.z + p.bias_w_off + g * p.units + j];
}

// h R_g^T + b_Rg for gate g.
fn recurrent_part(b: u32, g: u32, j: u32) -> T {
    return hr[p.base0.y + p.hr_off + b * gate_count() * p.units + g * p.units + j] + wts[p.base0.z + p.bias_r_off + g * p.units + j];
}

@compute @workgroup_size(256)
fn forward_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.batch * p.units) {
        return;
    }
    let b = i / p.units;
    let j = i % p.units;
    let t = time_of(b);
    if (t < 0) {
        // Past the sequence's end the state is carried unchanged (the output stays zero; with a
        // projection, project_step carries h).
        if (!PROJ) {
            res[p.base1.x + p.h_next_off + i] = res[p.base1.x + p.h_prev_off + i];
        }
        if (MODE == LSTM) {
            res[p.base1.x + p.c_next_off + i] = res[p.base1.x + p.c_prev_off + i];
        }
        return;
    }
    let row = row_of(u32(t), b);
    let slot = p.gates_off + b * p.gate_slots * p.units + j;
    var h: T = 0.0;
    if (MODE == LSTM) {
        let in_gate = element_sigmoid(input_part(row, 0u, j) + recurrent_part(b, 0u, j));
        let forget = element_sigmoid(input_part(row, 1u, j) + recurrent_part(b, 1u, j));
        let cell = element_tanh(input_part(row, 2u, j) + recurrent_part(b, 2u, j));
        let out_gate = element_sigmoid(input_part(row, 3u, j) + recurrent_part(b, 3u, j));
        let c = forget * res[p.base1.x + p.c_prev_off + i] + in_gate * cell;
        h = out_gate * element_tanh(c);
        res[p.base1.x + p.c_next_off + i] = c;
        res[p.base1.x + slot] = in_gate;
        res[p.base1.x + slot + p.units] = forget;
        res[p.base1.x + slot + 2u * p.units] = cell;
        res[p.base1.x + slot + 3u * p.units] = out_gate;
    } else if (MODE == GRU) {
        let r = element_sigmoid(input_part(row, R_GATE, j) + recurrent_part(b, R_GATE, j));
        let z = element_sigmoid(input_part(row, Z_GATE, j) + recurrent_part(b, Z_GATE, j));
        let hn = recurrent_part(b, 2u, j);
        let n = element_tanh(input_part(row, 2u, j) + r * hn);
        h = (1.0 - z) * n + z * res[p.base1.x + p.h_prev_off + i];
        res[p.base1.x + slot + R_GATE * p.units] = r;
        res[p.base1.x + slot + Z_GATE * p.units] = z;
        res[p.base1.x + slot + 2u * p.units] = n;
        res[p.base1.x + slot + 3u * p.units] = hn;
    } else {
        let pre = input_part(row, 0u, j) + recurrent_part(b, 0u, j);
        h = select(max(pre, 0.0), element_tanh(pre), MODE == RNN_TANH);
    }
    if (PROJ) {
        res[p.base1.x + p.m_off + i] = h;
        return;
    }
    res[p.base1.x + p.h_next_off + i] = h;
    out[p.base1.y + p.y_off + row * p.y_row + p.y_col + j] = h;
}

// Projection, forward: h = (m Wp^T) where the sequence goes on (bound as `hr`, [batch, units] with
// `units` the projection's size here), the carried h past its end; the output gets the new h.
@compute @workgroup_size(256)
fn project_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.batch * p.units) {
        return;
    }
    let b = i / p.units;
    let t = time_of(b);
    if (t < 0) {
        res[p.base1.x + p.h_next_off + i] = res[p.base1.x + p.h_prev_off + i];
        return;
    }
    let h = hr[p.base0.y + p.hr_off + i];
    res[p.base1.x + p.h_next_off + i] = h;
    out[p.base1.y + p.y_off + row_of(u32(t), b) * p.y_row + p.y_col + i % p.units] = h;
}

// Projection, backward: dh of this step (carried + recurrent + output gradient) kept by step in
// `dgr` for the projection's weight gradient and the product dm = dh Wp; past the sequence's end
// dh is carried on and the step's dh is zero.
@compute @workgroup_size(256)
fn proj_back(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.batch * p.units) {
        return;
    }
    let b = i / p.units;
    let dh_in = carry[p.base1.w + p.dh_off + i] + hr[p.base0.y + p.hr_off + i];
    let t = time_of(b);
    if (t < 0) {
        carry[p.base1.w + p.dh_off + i] = dh_in;
        dgr[p.base1.z + p.dgr_off + i] = 0.0;
        return;
    }
    let row = row_of(u32(t), b);
    dgr[p.base1.z + p.dgr_off + i] = dh_in + a[p.base0.x + p.y_off + row * p.y_row + p.y_col + i % p.units];
    carry[p.base1.w + p.dh_off + i] = 0.0;
}

// One step back: from dh (carried, plus the recurrent product of the later step, plus the output
// gradient at this step) to the gate gradients of this step, by input row (`out`, for the input
// weights and the input gradient) and by step (`dgr`, for the recurrent weights and dh_prev). The
// part of dh_prev that bypasses R (gru's z * dh) and dc_prev stay in `carry`.
@compute @workgroup_size(256)
fn backward_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.batch * p.units) {
        return;
    }
    let b = i / p.units;
    let j = i % p.units;
    let gates = gate_count();
    let dgr_at = p.dgr_off + b * gates * p.units + j;
    // With a projection, `hr` holds dm = dh Wp (proj_back has taken the carried and output parts).
    let dh_in = select(carry[p.base1.w + p.dh_off + i], 0.0, PROJ) + hr[p.base0.y + p.hr_off + i];
    let t = time_of(b);
    if (t < 0) {
        if (!PROJ) {
            carry[p.base1.w + p.dh_off + i] = dh_in;
        }
        for (var g = 0u; g < gates; g++) {
            dgr[p.base1.z + dgr_at + g * p.units] = 0.0;
        }
        return;
    }
    let row = row_of(u32(t), b);
    let dgi_at = p.dgi_off + row * gates * p.units + j;
    let slot = p.gates_off + b * p.gate_slots * p.units + j;
    let dh = dh_in + select(a[p.base0.x + p.y_off + row * p.y_row + p.y_col + j], 0.0, PROJ);
    if (MODE == LSTM) {
        let in_gate = res[p.base1.x + slot];
        let forget = res[p.base1.x + slot + p.units];
        let cell = res[p.base1.x + slot + 2u * p.units];
        let out_gate = res[p.base1.x + slot + 3u * p.units];
        let tc = element_tanh(res[p.base1.x + p.c_next_off + i]);
        let dc = carry[p.base1.w + p.dc_off + i] + dh * out_gate * (1.0 - tc * tc);
        var d = array<T, 4>(
            dc * cell * in_gate * (1.0 - in_gate),
            dc * res[p.base1.x + p.c_prev_off + i] * forget * (1.0 - forget),
            dc * in_gate * (1.0 - cell * cell),
            dh * tc * out_gate * (1.0 - out_gate),
        );
        for (var g = 0u; g < 4u; g++) {
            out[p.base1.y + dgi_at + g * p.units] = d[g];
            dgr[p.base1.z + dgr_at + g * p.units] = d[g];
        }
        carry[p.base1.w + p.dc_off + i] = dc * forget;
        if (!PROJ) {
            carry[p.base1.w + p.dh_off + i] = 0.0;
        }
    } else if (MODE == GRU) {
        let r = res[p.base1.x + slot + R_GATE * p.units];
        let z = res[p.base1.x + slot + Z_GATE * p.units];
        let n = res[p.base1.x + slot + 2u * p.units];
        let hn = res[p.base1.x + slot + 3u * p.units];
        let dn_pre = dh * (1.0 - z) * (1.0 - n * n);
        let dz_pre = dh * (res[p.base1.x + p.h_prev_off + i] - n) * z * (1.0 - z);
        let dr_pre = dn_pre * hn * r * (1.0 - r);
        out[p.base1.y + dgi_at + R_GATE * p.units] = dr_pre;
        out[p.base1.y + dgi_at + Z_GATE * p.units] = dz_pre;
        out[p.base1.y + dgi_at + 2u * p.units] = dn_pre;
        dgr[p.base1.z + dgr_at + R_GATE * p.units] = dr_pre;
        dgr[p.base1.z + dgr_at + Z_GATE * p.units] = dz_pre;
        dgr[p.base1.z + dgr_at + 2u * p.units] = dn_pre * r;
        carry[p.base1.w + p.dh_off + i] = dh * z;
    } else {
        let h = res[p.base1.x + p.h_next_off + i];
        let d = select(select(0.0, dh, h > 0.0), dh * (1.0 - h * h), MODE == RNN_TANH);
        out[p.base1.y + dgi_at] = d;
        dgr[p.base1.z + dgr_at] = d;
        carry[p.base1.w + p.dh_off + i] = 0.0;
    }
}

// dst[r, c] = src[r, c] (+ src2[r, c] with flag 1) (+ dst[r, c] with flag 2), over strided rows:
// states in and out of TF's layouts, and sums of gradients.
@compute @workgroup_size(256)
fn copy_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.rows * p.cols) {
        return;
    }
    let r = i / p.cols;
    let c = i % p.cols;
    let at = p.dst_off + r * p.dst_stride + c;
    var v = a[p.base0.x + p.src_off + r * p.src_stride + c];
    if ((p.flags & 1u) != 0u) {
        v += hr[p.base0.y + p.src2_off + r * p.src2_stride + c];
    }
    if ((p.flags & 2u) != 0u) {
        v += out[p.base1.y + at];
    }
    out[p.base1.y + at] = v;
}

// skip_input's input gradient: dst[r, j] (+)= sum over gates of src[r, g * units + j].
@compute @workgroup_size(256)
fn gate_sums(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.rows * p.units) {
        return;
    }
    let r = i / p.units;
    let j = i % p.units;
    var v: T = 0.0;
    for (var g = 0u; g < gate_count(); g++) {
        v += a[p.base0.x + p.src_off + r * p.src_stride + g * p.units + j];
    }
    let at = p.dst_off + r * p.dst_stride + j;
    if ((p.flags & 2u) != 0u) {
        v += out[p.base1.y + at];
    }
    out[p.base1.y + at] = v;
}

// 1 / (1 - p) in T: float32 cells get `keep_scale` itself (the rest is at most half its ulp, and
// rounds away), float64 ones the exact sum.
fn keep_scale() -> T {
    return T(p.keep_scale) + T(p.keep_scale_mid) + T(p.keep_scale_low);
}

// A 32-bit hash of four words (a PCG-style permutation per word): the random bits of dropout.
fn hash4(v: vec4<u32>) -> u32 {
    var h = 0x9e3779b9u;
    for (var k = 0u; k < 4u; k++) {
        h = (h ^ v[k]) * 747796405u + 2891336453u;
        let word = ((h >> ((h >> 28u) + 4u)) ^ h) * 277803737u;
        h = (word >> 22u) ^ word;
    }
    return h;
}

// Dropout of a layer's output before the next layer reads it (training, several layers): each
// element is kept with probability 1 - p and scaled by 1 / (1 - p); the mask is kept (dst, in
// `res`) for the backprop, the output scaled in place (src, in `out`: both are the reserve space,
// bound as two windows). `seeds` = (seed, seed2, the call's counter, the layer).
@compute @workgroup_size(256)
fn dropout_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = p.first + invocation(gid, nwg);
    if (i >= p.rows * p.cols) {
        return;
    }
    let bits = hash4(vec4<u32>(p.seeds.x ^ i, p.seeds.y, p.seeds.z, p.seeds.w * 0x85ebca6bu + i));
    let mask = select(0.0, keep_scale(), bits >= p.keep_threshold);
    res[p.base1.x + p.dst_off + i] = mask;
    out[p.base1.y + p.src_off + i] *= mask;
}

// The backprop of dropout: dst *= mask (read as kept or not: a float16 reserve space rounds the
// stored scale, and the forward pass used the exact one).
@compute @workgroup_size(256)
fn dropout_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = p.first + invocation(gid, nwg);
    if (i >= p.rows * p.cols) {
        return;
    }
    out[p.base1.y + p.dst_off + i] *= select(0.0, keep_scale(), res[p.base1.x + p.src_off + i] != 0.0);
}
