// Elementwise binary float ops with NumPy broadcasting, and activation gradients (`math.wgsl` and
// `broadcast.wgsl` are prepended). `T` is aliased per dtype; `OP` is an override constant, so each
// op is its own specialised pipeline.

override OP: u32 = 0u;
// LeakyReluGrad's slope.
override ALPHA: f32 = 0.0;

struct Params {
    n: u32,
    rank: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    shape: array<vec4<u32>, 2>,
    a_strides: array<vec4<u32>, 2>,
    b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> a: array<T>;
@group(0) @binding(1) var<storage, read_write> b: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;
@group(0) @binding(3) var<uniform> p: Params;

// C's fmod for finite x and finite nonzero y: x - trunc(x / y) * y without rounding, by long
// division of the integer significands (musl's fmodf). `x - y * trunc(x / y)` in floats is off
// by a whole y when x / y rounds up to an integer.
fn fmod_exact(x: f32, y: f32) -> f32 {
    let ux = bitcast<u32>(x) & 0x7fffffffu;
    let uy = bitcast<u32>(y) & 0x7fffffffu;
    let sign = bitcast<u32>(x) & 0x80000000u;
    if (ux < uy) {
        return x;
    }
    var ex = i32(ux >> 23u);
    var ey = i32(uy >> 23u);
    var mx = ux & 0x7fffffu;
    var my = uy & 0x7fffffu;
    // Significands with their leading one at bit 23; subnormals are shifted up to get there.
    if (ex == 0) {
        let shift = countLeadingZeros(mx) - 8u;
        mx <<= shift;
        ex = 1 - i32(shift);
    } else {
        mx |= 0x800000u;
    }
    if (ey == 0) {
        let shift = countLeadingZeros(my) - 8u;
        my <<= shift;
        ey = 1 - i32(shift);
    } else {
        my |= 0x800000u;
    }
    for (; ex > ey; ex--) {
        if (mx >= my) {
            mx -= my;
        }
        mx <<= 1u;
    }
    if (mx >= my) {
        mx -= my;
    }
    if (mx == 0u) {
        return bitcast<f32>(sign);
    }
    let shift = countLeadingZeros(mx) - 8u;
    mx <<= shift;
    ex -= i32(shift);
    if (ex > 0) {
        return bitcast<f32>(sign | (u32(ex) << 23u) | (mx & 0x7fffffu));
    }
    return bitcast<f32>(sign | (mx >> u32(1 - ex)));
}

fn apply(x: f32, y: f32) -> f32 {
    return apply_op(OP, x, y);
}

// The op `op` of the table below (`OP` for the specialised kernels, whose switch folds away).
fn apply_op(op: u32, x: f32, y: f32) -> f32 {
    switch op {
        case 0u: { return x + y; }
        case 1u: { return x * y; }
        case 2u: { return x - y; }
        case 3u: { return x / y; }
        case 4u: { return select(x / y, 0.0, y == 0.0); }
        // The quotient rounded to T first, as TF's half kernel floors a half quotient.
        case 5u: { return floor(f32(T(x / y))); }
        case 6u: {
            // fmod semantics: an infinite divisor leaves x; the sign follows the divisor.
            if (math_is_inf(x) || y == 0.0 || math_is_nan(x) || math_is_nan(y)) { return math_nan(); }
            var r = select(fmod_exact(x, y), x, math_is_inf(y));
            if (r != 0.0 && (r < 0.0) != (y < 0.0)) { r += y; }
            return r;
        }
        case 7u: {
            if (math_is_nan(x) || math_is_nan(y)) { return math_nan(); }
            return max(x, y);
        }
        case 8u: {
            if (math_is_nan(x) || math_is_nan(y)) { return math_nan(); }
            return min(x, y);
        }
        case 9u: { return math_pow(x, y); }
        case 10u: { return (x - y) * (x - y); }
        // Activation gradients, in TF's argument order: (gradients, features) for 11-16 and
        // (outputs, output gradients) for 17-21.
        // As TF: a product with the mask (so NaN gradients stay NaN), and a zero gradient gives
        // zero for Rsqrt/Sqrt/Reciprocal even where the output is infinite.
        case 11u: { return x * select(0.0, 1.0, y > 0.0); }
        case 12u: { return x * select(0.0, 1.0, y > 0.0 && y < 6.0); }
        case 13u: { return select(x, x * (y + 1.0), y < 0.0); }
        case 14u: { return select(x * 1.0507009873554805, x * (y + 1.7580993408473769), y < 0.0); }
        // gradients * alpha as TF computes it: an infinite or NaN gradient times an alpha of 0 is
        // NaN, which the compiler's x * 0.0 -> 0.0 folding of the specialised ALPHA would lose.
        case 15u: {
            let scaled = select(x * ALPHA, math_nan(), ALPHA == 0.0 && (math_is_inf(x) || math_is_nan(x)));
            return select(scaled, x, y > 0.0);
        }
        case 16u: { return x / (1.0 + math_exp(-y)); }
        // Eigen's order, y * (1 - y) first: 0 * -inf is NaN where the left-to-right order gives 0.
        case 17u: { return y * (x * (1.0 - x)); }
        case 18u: { return y * (1.0 - x * x); }
        case 19u: { return select(-0.5 * (y * x) * (x * x), 0.0, y == 0.0); }
        case 20u: { return select(0.5 * y / x, 0.0, y == 0.0); }
        case 21u: { return select(-y * x * x, 0.0, y == 0.0); }
        // ClipByValue's bounds as Eigen's cwiseMin/cwiseMax: a NaN bound leaves x.
        case 22u: { return select(x, y, y < x); }
        case 23u: { return select(x, y, x < y); }
        // SoftsignGrad(gradients, features): gradients / (1 + |features|)^2, as TF computes it.
        case 24u: {
            let d = 1.0 + abs(y);
            return x / (d * d);
        }
        // Xlogy, Xdivy, Xlog1py: 0 wherever x is 0 (even for a NaN y), as TF's functors.
        case 25u: { return select(x * math_log(y), 0.0, x == 0.0); }
        case 26u: { return select(x / y, 0.0, x == 0.0); }
        case 27u: { return select(x * math_log1p(y), 0.0, x == 0.0); }
        // Atan2(y, x): the first operand is y.
        case 28u: { return math_atan2(x, y); }
        // MulNoNan: 0 wherever y is 0, even for an infinite or NaN x.
        case 29u: { return select(x * y, 0.0, y == 0.0); }
        case 30u: { return math_next_after(x, y); }
        default: { return x; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    let at = broadcast_offsets(i, p.shape, p.a_strides, p.b_strides, p.b_strides);
    out[p.out_off + i] = T(apply(f32(a[p.a_off + at.x]), f32(b[p.b_off + at.y])));
}

// The same ops four elements at a time, for operands shaped like the output, one scalar operand
// (`SCALAR`: 1 for `a`, 2 for `b`) or one row repeated along the output (`ROW`: 1 for `a`, 2 for
// `b`; a bias over the trailing dimensions, `p.shape[0].x` vec4s long), every other offset a
// multiple of 4 elements and `p.n` (the elements covered) a multiple of 4; the host runs `main`
// on the rest. On llvmpipe every storage access is a per-lane loop with a bounds check and the
// broadcasting index math of `main` costs more than the loads, so one vec4 access and one index
// per four elements go a long way. The vec4 views share the scalar views' bindings (no entry point
// uses both).
override SCALAR: u32 = 0u;
override ROW: u32 = 0u;

@group(0) @binding(0) var<storage, read_write> a4: array<vec4<T>>;
@group(0) @binding(1) var<storage, read_write> b4: array<vec4<T>>;
@group(0) @binding(2) var<storage, read_write> out4: array<vec4<T>>;

fn apply4(x: vec4<f32>, y: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(apply(x.x, y.x), apply(x.y, y.y), apply(x.z, y.z), apply(x.w, y.w));
}

@compute @workgroup_size(256)
fn main_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n / 4u) {
        return;
    }
    var x: vec4<f32>;
    var y: vec4<f32>;
    if (SCALAR == 1u) {
        x = vec4<f32>(f32(a4[p.a_off / 4u][p.a_off % 4u]));
    } else if (ROW == 1u) {
        x = vec4<f32>(a4[p.a_off / 4u + rem(i, p.shape[0].x)]);
    } else {
        x = vec4<f32>(a4[p.a_off / 4u + i]);
    }
    if (SCALAR == 2u) {
        y = vec4<f32>(f32(b4[p.b_off / 4u][p.b_off % 4u]));
    } else if (ROW == 2u) {
        y = vec4<f32>(b4[p.b_off / 4u + rem(i, p.shape[0].x)]);
    } else {
        y = vec4<f32>(b4[p.b_off / 4u + i]);
    }
    out4[p.out_off / 4u + i] = vec4<T>(apply4(x, y));
}

// `main_vec4` with its operands read from textures instead (`TEXELS`: 1 for `a`, 2 for `b`, 3 for
// both), copies of them of 4096 texels a row (a scalar: the texel that holds it), for f32 on CPU
// adapters (`binary::launch_vec4`): llvmpipe fetches texels as vectors where it loads storage lane
// by lane, and the copies are memcpys. The textures bind after the parameter block.
override TEXELS: u32 = 0u;

@group(0) @binding(4) var a_texels: texture_2d<u32>;
@group(0) @binding(5) var b_texels: texture_2d<u32>;

fn texel_coord(i: u32) -> vec2<u32> {
    return vec2<u32>(i & 4095u, i >> 12u);
}

// Operand `which` (1: a, 2: b) for output vec4 `i`, from its texture.
fn operand_texel(which: u32, i: u32, off: u32) -> vec4<f32> {
    var texel: vec4<u32>;
    var at = i;
    if (SCALAR == which) {
        at = 0u;
    } else if (ROW == which) {
        at = rem(i, p.shape[0].x);
    }
    if (which == 1u) {
        texel = textureLoad(a_texels, texel_coord(at), 0);
    } else {
        texel = textureLoad(b_texels, texel_coord(at), 0);
    }
    let v = bitcast<vec4<f32>>(texel);
    if (SCALAR == which) {
        return vec4<f32>(v[off % 4u]);
    }
    return v;
}

@compute @workgroup_size(256)
fn main_vec4_texels(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n / 4u) {
        return;
    }
    var x: vec4<f32>;
    var y: vec4<f32>;
    if ((TEXELS & 1u) != 0u) {
        x = operand_texel(1u, i, p.a_off);
    } else if (SCALAR == 1u) {
        x = vec4<f32>(f32(a4[p.a_off / 4u][p.a_off % 4u]));
    } else if (ROW == 1u) {
        x = vec4<f32>(a4[p.a_off / 4u + rem(i, p.shape[0].x)]);
    } else {
        x = vec4<f32>(a4[p.a_off / 4u + i]);
    }
    if ((TEXELS & 2u) != 0u) {
        y = operand_texel(2u, i, p.b_off);
    } else if (SCALAR == 2u) {
        y = vec4<f32>(f32(b4[p.b_off / 4u][p.b_off % 4u]));
    } else if (ROW == 2u) {
        y = vec4<f32>(b4[p.b_off / 4u + rem(i, p.shape[0].x)]);
    } else {
        y = vec4<f32>(b4[p.b_off / 4u + i]);
    }
    out4[p.out_off / 4u + i] = vec4<T>(apply4(x, y));
}

// Small launches batched into one dispatch on CPU adapters (`binary::launch_batched`), where a
// dispatch costs more than a small op: lavapipe wakes its compute thread pool for every dispatch.
// The storage bindings are slots, each a whole buffer (`a`, `b`, `out` and `s3`..`s27`); each
// record names its operands by slot and element offset. One workgroup runs the records in order,
// a storage barrier after each, so a record sees what the ones before it wrote. The params block
// sits at binding 28, where no other entry point of this file looks.
const BATCH_RECORDS: u32 = 32u;

struct BatchRecord {
    op: u32,
    n: u32,
    a_slot: u32,
    a_off: u32,
    a_step: u32,
    b_slot: u32,
    b_off: u32,
    b_step: u32,
    out_slot: u32,
    out_off: u32,
    _pad0: u32,
    _pad1: u32,
}

struct Batch {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    records: array<BatchRecord, BATCH_RECORDS>,
}

@group(0) @binding(3) var<storage, read_write> s3: array<T>;
@group(0) @binding(4) var<storage, read_write> s4: array<T>;
@group(0) @binding(5) var<storage, read_write> s5: array<T>;
@group(0) @binding(6) var<storage, read_write> s6: array<T>;
@group(0) @binding(7) var<storage, read_write> s7: array<T>;
@group(0) @binding(8) var<storage, read_write> s8: array<T>;
@group(0) @binding(9) var<storage, read_write> s9: array<T>;
@group(0) @binding(10) var<storage, read_write> s10: array<T>;
@group(0) @binding(11) var<storage, read_write> s11: array<T>;
@group(0) @binding(12) var<storage, read_write> s12: array<T>;
@group(0) @binding(13) var<storage, read_write> s13: array<T>;
@group(0) @binding(14) var<storage, read_write> s14: array<T>;
@group(0) @binding(15) var<storage, read_write> s15: array<T>;
@group(0) @binding(16) var<storage, read_write> s16: array<T>;
@group(0) @binding(17) var<storage, read_write> s17: array<T>;
@group(0) @binding(18) var<storage, read_write> s18: array<T>;
@group(0) @binding(19) var<storage, read_write> s19: array<T>;
@group(0) @binding(20) var<storage, read_write> s20: array<T>;
@group(0) @binding(21) var<storage, read_write> s21: array<T>;
@group(0) @binding(22) var<storage, read_write> s22: array<T>;
@group(0) @binding(23) var<storage, read_write> s23: array<T>;
@group(0) @binding(24) var<storage, read_write> s24: array<T>;
@group(0) @binding(25) var<storage, read_write> s25: array<T>;
@group(0) @binding(26) var<storage, read_write> s26: array<T>;
@group(0) @binding(27) var<storage, read_write> s27: array<T>;
@group(0) @binding(28) var<uniform> batch: Batch;

fn slot_load(slot: u32, i: u32) -> f32 {
    switch slot {
        case 0u: { return f32(a[i]); }
        case 1u: { return f32(b[i]); }
        case 2u: { return f32(out[i]); }
        case 3u: { return f32(s3[i]); }
        case 4u: { return f32(s4[i]); }
        case 5u: { return f32(s5[i]); }
        case 6u: { return f32(s6[i]); }
        case 7u: { return f32(s7[i]); }
        case 8u: { return f32(s8[i]); }
        case 9u: { return f32(s9[i]); }
        case 10u: { return f32(s10[i]); }
        case 11u: { return f32(s11[i]); }
        case 12u: { return f32(s12[i]); }
        case 13u: { return f32(s13[i]); }
        case 14u: { return f32(s14[i]); }
        case 15u: { return f32(s15[i]); }
        case 16u: { return f32(s16[i]); }
        case 17u: { return f32(s17[i]); }
        case 18u: { return f32(s18[i]); }
        case 19u: { return f32(s19[i]); }
        case 20u: { return f32(s20[i]); }
        case 21u: { return f32(s21[i]); }
        case 22u: { return f32(s22[i]); }
        case 23u: { return f32(s23[i]); }
        case 24u: { return f32(s24[i]); }
        case 25u: { return f32(s25[i]); }
        case 26u: { return f32(s26[i]); }
        default: { return f32(s27[i]); }
    }
}

fn slot_store(slot: u32, i: u32, v: f32) {
    switch slot {
        case 0u: { a[i] = T(v); }
        case 1u: { b[i] = T(v); }
        case 2u: { out[i] = T(v); }
        case 3u: { s3[i] = T(v); }
        case 4u: { s4[i] = T(v); }
        case 5u: { s5[i] = T(v); }
        case 6u: { s6[i] = T(v); }
        case 7u: { s7[i] = T(v); }
        case 8u: { s8[i] = T(v); }
        case 9u: { s9[i] = T(v); }
        case 10u: { s10[i] = T(v); }
        case 11u: { s11[i] = T(v); }
        case 12u: { s12[i] = T(v); }
        case 13u: { s13[i] = T(v); }
        case 14u: { s14[i] = T(v); }
        case 15u: { s15[i] = T(v); }
        case 16u: { s16[i] = T(v); }
        case 17u: { s17[i] = T(v); }
        case 18u: { s18[i] = T(v); }
        case 19u: { s19[i] = T(v); }
        case 20u: { s20[i] = T(v); }
        case 21u: { s21[i] = T(v); }
        case 22u: { s22[i] = T(v); }
        case 23u: { s23[i] = T(v); }
        case 24u: { s24[i] = T(v); }
        case 25u: { s25[i] = T(v); }
        case 26u: { s26[i] = T(v); }
        default: { s27[i] = T(v); }
    }
}

@compute @workgroup_size(8)
fn main_batch(@builtin(local_invocation_id) lid: vec3<u32>) {
    for (var k = 0u; k < min(batch.count, BATCH_RECORDS); k++) {
        let r = batch.records[k];
        for (var i = lid.x; i < r.n; i += 8u) {
            let x = slot_load(r.a_slot, r.a_off + i * r.a_step);
            let y = slot_load(r.b_slot, r.b_off + i * r.b_step);
            slot_store(r.out_slot, r.out_off + i, apply_op(r.op, x, y));
        }
        storageBarrier();
    }
}
