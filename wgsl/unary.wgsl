// Elementwise unary float ops (`math.wgsl` is prepended). `T` is aliased to the float type, `OP` is an
// override constant.
// NaN is recognised from the bits (`math_is_nan`): WGSL lets implementations assume finite math, so
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

fn apply(v: f32) -> f32 {
    if (math_is_nan(v) && OP != 28u && OP != 29u) {
        return v;
    }
    switch OP {
        case 0u: { return abs(v); }
        case 1u: { return -v; }
        case 2u: { return sign(v); }
        case 3u: { return v * v; }
        case 4u: { return math_sqrt(v); }
        case 5u: { return math_rsqrt(v); }
        case 6u: { return 1.0 / v; }
        case 7u: { return math_exp(v); }
        case 8u: { return math_expm1(v); }
        case 9u: { return math_log(v); }
        case 10u: { return math_log1p(v); }
        case 11u: { return math_sin(v); }
        case 12u: { return math_cos(v); }
        case 13u: { return math_tan(v); }
        case 14u: { return math_tanh(v); }
        case 15u: { return math_sigmoid(v); }
        case 16u: { return math_erf(v); }
        case 17u: { return floor(v); }
        case 18u: { return ceil(v); }
        case 19u, 20u: { return round(v); }
        case 21u: { return max(v, 0.0); }
        case 22u: { return clamp(v, 0.0, 6.0); }
        case 23u: { return select(math_expm1(v), v, v > 0.0); }
        case 24u: { return 1.0507009873554805 * select(1.6732632423543772 * math_expm1(v), v, v > 0.0); }
        case 25u: { return select(v * p.alpha, v, v > 0.0); }
        case 26u: { return math_softplus(v); }
        case 27u: { return v / (1.0 + abs(v)); }
        case 30u: { return 0.5 * v * (1.0 + math_erf(v * 0.7071067811865476)); }
        case 31u: {
            let inner = 0.7978845608028654 * (v + 0.044715 * v * v * v);
            return 0.5 * v * (1.0 + math_tanh(inner));
        }
        case 32u: { return math_erfc(v); }
        case 33u: { return math_sinh(v); }
        case 34u: { return math_cosh(v); }
        case 35u: { return math_asinh(v); }
        case 36u: { return math_acosh(v); }
        case 37u: { return math_atanh(v); }
        case 38u: { return math_atan(v); }
        case 39u: { return math_asin(v); }
        case 40u: { return math_acos(v); }
        case 41u: { return math_lgamma(v); }
        case 42u: { return math_digamma(v); }
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

// `main_vec4` reading its input from a texture, a copy of it of 4096 texels a row, for f32 on CPU
// adapters (see `main_vec4_texels` in binary.wgsl). The texture binds after the parameter block.
@group(0) @binding(3) var x_texels: texture_2d<u32>;

@compute @workgroup_size(256)
fn main_vec4_texels(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n / 4u) {
        return;
    }
    let v = bitcast<vec4<f32>>(textureLoad(x_texels, vec2<u32>(i & 4095u, i >> 12u), 0));
    y4[p.out_off / 4u + i] = vec4<T>(vec4<f32>(apply(v.x), apply(v.y), apply(v.z), apply(v.w)));
}
