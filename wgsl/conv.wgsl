// NHWC spatial ops, one invocation per output element (direct loops; implicit GEMM is future work):
//   conv2d:    Conv2D with strides, dilations, padding and groups; filter HWIO
//   depthwise: DepthwiseConv2dNative; filter [KH, KW, C, M], output channel c * M + m
//   max_pool, avg_pool: windows over H and W; padding is excluded from max and from the average
//   batch_norm: FusedBatchNormV3 inference, y = (x - mean) * rsqrt(var + eps) * scale + offset

struct Params {
    n: u32,
    batch: u32,
    h: u32,
    w: u32,
    c: u32,
    oh: u32,
    ow: u32,
    // Output channels.
    oc: u32,
    kh: u32,
    kw: u32,
    sh: u32,
    sw: u32,
    dh: u32,
    dw: u32,
    pad_top: u32,
    pad_left: u32,
    // Filter input channels (conv2d: c / groups) or depth multiplier (depthwise).
    fc: u32,
    in_off: u32,
    f_off: u32,
    out_off: u32,
    // Extra per-channel operands of batch_norm (offsets into `weights`, which holds the scale).
    offset_off: u32,
    mean_off: u32,
    var_off: u32,
    epsilon: f32,
}

@group(0) @binding(0) var<storage, read_write> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> weights: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// Used by batch_norm only: the offset, mean and variance vectors.
@group(0) @binding(3) var<storage, read_write> shift: array<f32>;
@group(0) @binding(4) var<storage, read_write> mean: array<f32>;
@group(0) @binding(5) var<storage, read_write> variance: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

struct Position {
    b: u32,
    y: u32,
    x: u32,
    ch: u32,
}

fn position(i: u32) -> Position {
    var pos: Position;
    pos.ch = i % p.oc;
    pos.x = (i / p.oc) % p.ow;
    pos.y = (i / (p.oc * p.ow)) % p.oh;
    pos.b = i / (p.oc * p.ow * p.oh);
    return pos;
}

fn input_at(b: u32, y: u32, x: u32, ch: u32) -> f32 {
    return input[p.in_off + ((b * p.h + y) * p.w + x) * p.c + ch];
}

@compute @workgroup_size(256)
fn conv2d(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = position(i);
    let groups = p.c / p.fc;
    let group = pos.ch / (p.oc / groups);
    var acc = 0.0;
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(pos.y * p.sh + ky * p.dh) - i32(p.pad_top);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let ix = i32(pos.x * p.sw + kx * p.dw) - i32(p.pad_left);
            if (ix < 0 || ix >= i32(p.w)) { continue; }
            let in_base = p.in_off + ((pos.b * p.h + u32(iy)) * p.w + u32(ix)) * p.c + group * p.fc;
            let f_base = p.f_off + (ky * p.kw + kx) * p.fc * p.oc + pos.ch;
            for (var ci = 0u; ci < p.fc; ci++) {
                acc += input[in_base + ci] * weights[f_base + ci * p.oc];
            }
        }
    }
    out[p.out_off + i] = acc;
}

@compute @workgroup_size(256)
fn depthwise(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = position(i);
    let ch = pos.ch / p.fc;
    var acc = 0.0;
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(pos.y * p.sh + ky * p.dh) - i32(p.pad_top);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let ix = i32(pos.x * p.sw + kx * p.dw) - i32(p.pad_left);
            if (ix < 0 || ix >= i32(p.w)) { continue; }
            acc += input_at(pos.b, u32(iy), u32(ix), ch) * weights[p.f_off + ((ky * p.kw + kx) * p.c + ch) * p.fc + pos.ch % p.fc];
        }
    }
    out[p.out_off + i] = acc;
}

fn pool(i: u32, average: bool) -> f32 {
    let pos = position(i);
    var best = bitcast<f32>(0xff800000u);
    var sum = 0.0;
    var count = 0.0;
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(pos.y * p.sh + ky) - i32(p.pad_top);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let ix = i32(pos.x * p.sw + kx) - i32(p.pad_left);
            if (ix < 0 || ix >= i32(p.w)) { continue; }
            let v = input_at(pos.b, u32(iy), u32(ix), pos.ch);
            if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) {
                best = v;
            } else if (!((bitcast<u32>(best) & 0x7fffffffu) > 0x7f800000u)) {
                best = max(best, v);
            }
            sum += v;
            count += 1.0;
        }
    }
    return select(best, sum / count, average);
}

@compute @workgroup_size(256)
fn max_pool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i < p.n) {
        out[p.out_off + i] = pool(i, false);
    }
}

@compute @workgroup_size(256)
fn avg_pool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i < p.n) {
        out[p.out_off + i] = pool(i, true);
    }
}

@compute @workgroup_size(256)
fn batch_norm(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let ch = i % p.c;
    let scale = weights[p.f_off + ch];
    let inv = inverseSqrt(variance[p.var_off + ch] + p.epsilon);
    out[p.out_off + i] = (input[p.in_off + i] - mean[p.mean_off + ch]) * inv * scale + shift[p.offset_off + ch];
}
