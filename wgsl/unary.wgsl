// Elementwise unary float ops. `T` is aliased to the float type, `OP` is an override constant.
// NaN and infinity are recognised from the bits: WGSL lets implementations assume finite math, so
// `v != v` cannot be trusted.

override OP: u32 = 0u;

struct Params {
    n: u32,
    in_off: u32,
    out_off: u32,
    // LeakyRelu's alpha.
    alpha: f32,
}

@group(0) @binding(0) var<storage, read_write> x: array<T>;
@group(0) @binding(1) var<storage, read_write> y: array<T>;
@group(0) @binding(2) var<uniform> p: Params;

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn is_inf(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) == 0x7f800000u;
}

fn expm1_(v: f32) -> f32 {
    // Kahan's trick keeps full precision near zero.
    let u = exp(v);
    if (u == 1.0) { return v; }
    let um1 = u - 1.0;
    if (um1 == -1.0) { return -1.0; }
    if (is_inf(u)) { return u; }
    // v / log(u) first: um1 * v overflows near the top of the range.
    return um1 * (v / log(u));
}

fn log1p_(v: f32) -> f32 {
    let u = 1.0 + v;
    if (u < 0.0) { return bitcast<f32>(0x7fc00000u); }
    if (u == 0.0) { return bitcast<f32>(0xff800000u); }
    if (u == 1.0) { return v; }
    if (is_inf(u)) { return u; }
    // v / (u - 1) first: log(u) * v overflows for v near the top of the range.
    return log(u) * (v / (u - 1.0));
}

// Eigen's float erf (what TF-CPU uses): a rational approximation on [-4, 4].
fn erf_(v: f32) -> f32 {
    let x = clamp(v, -4.0, 4.0);
    let x2 = x * x;
    var num = x2 * -2.72614225801306e-10 + 2.77068142495902e-08;
    num = x2 * num + -2.10102402082508e-06;
    num = x2 * num + -5.69250639462346e-05;
    num = x2 * num + -7.34990630326855e-04;
    num = x2 * num + -2.95459980854025e-03;
    num = x2 * num + -1.60960333262415e-02;
    num = x * num;
    var den = x2 * -1.45660718464996e-05 + -2.13374055278905e-04;
    den = x2 * den + -1.68282697438203e-03;
    den = x2 * den + -7.37332916720468e-03;
    den = x2 * den + -1.42647390514189e-02;
    return num / den;
}

fn apply(v: f32) -> f32 {
    if (is_nan(v) && OP != 28u && OP != 29u) {
        return v;
    }
    switch OP {
        case 0u: { return abs(v); }
        case 1u: { return -v; }
        case 2u: { return sign(v); }
        case 3u: { return v * v; }
        case 4u: { return sqrt(v); }
        case 5u: { return 1.0 / sqrt(v); }
        case 6u: { return 1.0 / v; }
        case 7u: { return exp(v); }
        case 8u: { return expm1_(v); }
        case 9u: { return log(v); }
        case 10u: { return log1p_(v); }
        case 11u: { return sin(v); }
        case 12u: { return cos(v); }
        case 13u: { return tan(v); }
        case 14u: { return tanh(clamp(v, -20.0, 20.0)); }
        case 15u: { return 1.0 / (1.0 + exp(-v)); }
        case 16u: { return erf_(v); }
        case 17u: { return floor(v); }
        case 18u: { return ceil(v); }
        case 19u, 20u: { return round(v); }
        case 21u: { return max(v, 0.0); }
        case 22u: { return clamp(v, 0.0, 6.0); }
        case 23u: { return select(expm1_(v), v, v > 0.0); }
        case 24u: { return 1.0507009873554805 * select(1.6732632423543772 * expm1_(v), v, v > 0.0); }
        case 25u: { return select(v * p.alpha, v, v > 0.0); }
        case 26u: {
            if (v > 20.0) { return v; }
            if (v < -20.0) { return exp(v); }
            return log1p_(exp(v));
        }
        case 27u: { return v / (1.0 + abs(v)); }
        case 30u: { return 0.5 * v * (1.0 + erf_(v * 0.7071067811865476)); }
        case 31u: {
            let inner = 0.7978845608028654 * (v + 0.044715 * v * v * v);
            return 0.5 * v * (1.0 + tanh(clamp(inner, -20.0, 20.0)));
        }
        case 32u: { return 1.0 - erf_(v); }
        case 28u: { return 0.0; }
        case 29u: { return 1.0; }
        default: { return v; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    y[p.out_off + i] = T(apply(f32(x[p.in_off + i])));
}

// Four elements per invocation where both offsets are multiples of 4 and `p.n` (the elements
// covered) is too; the host runs `main` on the rest. See `main_vec4` in binary.wgsl for why.
@group(0) @binding(0) var<storage, read_write> x4: array<vec4<T>>;
@group(0) @binding(1) var<storage, read_write> y4: array<vec4<T>>;

@compute @workgroup_size(256)
fn main_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n / 4u) {
        return;
    }
    let v = vec4<f32>(x4[p.in_off / 4u + i]);
    y4[p.out_off / 4u + i] = vec4<T>(vec4<f32>(apply(v.x), apply(v.y), apply(v.z), apply(v.w)));
}
