// Elementwise binary float ops with NumPy broadcasting, and activation gradients (`broadcast.wgsl` is prepended). `T` is
// aliased per dtype; `OP` is an override constant, so each op is its own specialised pipeline.

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

fn nan() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}

fn is_odd_integer(y: f32) -> bool {
    return floor(y) == y && abs(y) < 16777216.0 && (i32(y) & 1) == 1;
}

fn is_inf_f32(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) == 0x7f800000u;
}

fn pow_(x: f32, y: f32) -> f32 {
    let inf = bitcast<f32>(0x7f800000u);
    if (y == 0.0) { return 1.0; }
    if (is_nan_f32(x) || is_nan_f32(y)) { return nan(); }
    // IEEE 754 pow for infinite operands; WGSL's pow is undefined there.
    if (is_inf_f32(y)) {
        let ax = abs(x);
        if (ax == 1.0) { return 1.0; }
        return select(0.0, inf, (ax > 1.0) == (y > 0.0));
    }
    if (is_inf_f32(x)) {
        let odd = is_odd_integer(y);
        if (x > 0.0) { return select(0.0, inf, y > 0.0); }
        if (y > 0.0) { return select(inf, -inf, odd); }
        return select(0.0, -0.0, odd);
    }
    if (x == 0.0) {
        if (y > 0.0) { return select(0.0, x, is_odd_integer(y)); }
        return select(bitcast<f32>(0x7f800000u), 1.0 / x, is_odd_integer(y));
    }
    if (x < 0.0) {
        if (floor(y) != y) { return nan(); }
        let magnitude = pow(-x, y);
        return select(magnitude, -magnitude, is_odd_integer(y));
    }
    return pow(x, y);
}

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
    switch OP {
        case 0u: { return x + y; }
        case 1u: { return x * y; }
        case 2u: { return x - y; }
        case 3u: { return x / y; }
        case 4u: { return select(x / y, 0.0, y == 0.0); }
        // The quotient rounded to T first, as TF's half kernel floors a half quotient.
        case 5u: { return floor(f32(T(x / y))); }
        case 6u: {
            // fmod semantics: an infinite divisor leaves x; the sign follows the divisor.
            if (is_inf_f32(x) || y == 0.0 || is_nan_f32(x) || is_nan_f32(y)) { return nan(); }
            var r = select(fmod_exact(x, y), x, is_inf_f32(y));
            if (r != 0.0 && (r < 0.0) != (y < 0.0)) { r += y; }
            return r;
        }
        case 7u: {
            if (is_nan_f32(x) || is_nan_f32(y)) { return nan(); }
            return max(x, y);
        }
        case 8u: {
            if (is_nan_f32(x) || is_nan_f32(y)) { return nan(); }
            return min(x, y);
        }
        case 9u: { return pow_(x, y); }
        case 10u: { return (x - y) * (x - y); }
        // Activation gradients, in TF's argument order: (gradients, features) for 11-16 and
        // (outputs, output gradients) for 17-21.
        // As TF: a product with the mask (so NaN gradients stay NaN), and a zero gradient gives
        // zero for Rsqrt/Sqrt/Reciprocal even where the output is infinite.
        case 11u: { return x * select(0.0, 1.0, y > 0.0); }
        case 12u: { return x * select(0.0, 1.0, y > 0.0 && y < 6.0); }
        case 13u: { return select(x, x * (y + 1.0), y < 0.0); }
        case 14u: { return select(x * 1.0507009873554805, x * (y + 1.7580993408473769), y < 0.0); }
        case 15u: { return select(x * ALPHA, x, y > 0.0); }
        case 16u: { return x / (1.0 + exp(-y)); }
        case 17u: { return y * x * (1.0 - x); }
        case 18u: { return y * (1.0 - x * x); }
        case 19u: { return select(-0.5 * (y * x) * (x * x), 0.0, y == 0.0); }
        case 20u: { return select(0.5 * y / x, 0.0, y == 0.0); }
        case 21u: { return select(-y * x * x, 0.0, y == 0.0); }
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
