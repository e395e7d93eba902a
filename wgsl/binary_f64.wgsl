// float64 elementwise ops, computed in f64 (`math_f64.wgsl`, `quot.wgsl` and `broadcast.wgsl` are
// prepended; the device has SHADER_F64). The transcendental functions (exponentials, logarithms,
// trigonometry and its inverses, the hyperbolic functions, erf, erfc, lgamma, digamma, pow,
// atan2) come from `math_f64.wgsl`.
//   main:    binary ops with NumPy broadcasting, `OP` numbered as binary.wgsl's (all of
//            `binary::FLOAT64_OPS`), into `out`
//   next_after: NextAfter, into `out_words` (below)
//   compare: comparisons as compare.wgsl's `OP`, into packed bools (`out_words`, four per word)
//   unary:   unary ops as unary.wgsl's `OP` (the subset `unary::FLOAT64_OPS` names), `a` into `out`
// NaN is recognised from the bits (`words_a`, `words_b`: the host binds each operand a second time
// as words, as WGSL has no bitcast from f64): WGSL lets implementations assume finite math, so
// `v != v` cannot be trusted.

override OP: u32 = 0u;
// LeakyRelu's and LeakyReluGrad's slope.
override ALPHA: f32 = 0.0;
// ApproximateEqual's bound on |x - y| (compare's OP 6): a float attribute, widened exactly.
override TOLERANCE: f32 = 0.0;

struct Params {
    n: u32,
    rank: u32,
    a_off: u32,
    b_off: u32,
    // Elements of `out`, or bytes for `compare` (a multiple of 4).
    out_off: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    shape: array<vec4<u32>, 2>,
    a_strides: array<vec4<u32>, 2>,
    b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> a: array<f64>;
@group(0) @binding(1) var<storage, read_write> b: array<f64>;
@group(0) @binding(2) var<storage, read_write> out: array<f64>;
// `compare`'s output view of binding 2 (no entry point uses both).
@group(0) @binding(2) var<storage, read_write> out_words: array<u32>;
@group(0) @binding(3) var<storage, read_write> words_a: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> words_b: array<vec2<u32>>;
@group(0) @binding(5) var<uniform> p: Params;

// `w` (low word, high word) is a NaN: all exponent bits set and a nonzero fraction.
fn is_nan_bits(w: vec2<u32>) -> bool {
    let high = w.y & 0x7fffffffu;
    return high > 0x7ff00000u || (high == 0x7ff00000u && w.x != 0u);
}

const ZERO: f64 = 0.0;
const ONE: f64 = 1.0;

fn nan64() -> f64 {
    // 0/0 folds at compile time in some compilers; an infinity times zero at run time does not.
    return f64(bitcast<f32>(0x7fc00000u));
}

// `wx` and `wy`: the operands' bits (low word, high word), for NaN and the sign of zero.
fn apply(x: f64, y: f64, wx: vec2<u32>, wy: vec2<u32>) -> f64 {
    let x_nan = is_nan_bits(wx);
    let y_nan = is_nan_bits(wy);
    switch OP {
        case 0u: { return x + y; }
        case 1u: { return x * y; }
        case 2u: { return x - y; }
        case 3u: { return x / y; }
        case 4u: { return select(x / y, 0.0, y == 0.0); }
        case 5u: { return floor(x / y); }
        // FloorMod: fmod's remainder, moved to the divisor's sign; an infinite divisor leaves x.
        case 6u: {
            if (x_nan || y_nan || m64_is_inf(x) || y == 0.0) { return nan64(); }
            var r = select(m64_fmod(x, y), x, m64_is_inf(y));
            if (r != 0.0 && (r < 0.0) != (y < 0.0)) { r += y; }
            return r;
        }
        case 7u: {
            if (x_nan || y_nan) { return nan64(); }
            return max(x, y);
        }
        case 8u: {
            if (x_nan || y_nan) { return nan64(); }
            return min(x, y);
        }
        // Pow with C99's special cases (x^0 = 1 and 1^y = 1 even for NaN).
        case 9u: { return m64_pow(x, y, x_nan, y_nan, (wx.y & 0x80000000u) != 0u); }
        case 10u: { return (x - y) * (x - y); }
        // Activation gradients in TF's argument order, as binary.wgsl computes them.
        case 11u: { return x * select(ZERO, ONE, y > 0.0); }
        case 12u: { return x * select(ZERO, ONE, y > 0.0 && y < 6.0); }
        case 13u: { return select(x, (y + 1.0) * x, y < 0.0); }
        case 14u: { return select(x * 1.0507009873554804934, x * (y + 1.7580993408473768599), y < 0.0); }
        case 15u: {
            let alpha = f64(ALPHA);
            let scaled = select(x * alpha, nan64(), ALPHA == 0.0 && (x_nan || abs(x) > 1.7976931348623157e308));
            return select(scaled, x, y > 0.0);
        }
        // SoftplusGrad as TF: gradients / (exp(-features) + 1).
        case 16u: { return x / (m64_exp(-y) + 1.0); }
        case 17u: { return y * (x * (1.0 - x)); }
        case 18u: { return y * (1.0 - x * x); }
        case 19u: { return select(-0.5 * (y * x) * (x * x), 0.0, y == 0.0); }
        case 20u: { return select(0.5 * y / x, 0.0, y == 0.0); }
        case 21u: { return select(-y * x * x, 0.0, y == 0.0); }
        // ClipByValue's bounds as Eigen's cwiseMin/cwiseMax: a NaN bound leaves x.
        case 22u: { return select(x, y, y < x); }
        case 23u: { return select(x, y, x < y); }
        case 24u: {
            let d = 1.0 + abs(y);
            return x / (d * d);
        }
        // Xlogy, Xdivy, Xlog1py: 0 wherever x is 0 (even for a NaN y), as TF's functors.
        case 25u, 26u, 27u: {
            if (x == 0.0 && !x_nan) { return 0.0; }
            if (x_nan || y_nan) { return nan64(); }
            if (OP == 25u) { return x * m64_log(y); }
            if (OP == 26u) { return x / y; }
            return x * m64_log1p(y);
        }
        // MulNoNan: 0 wherever y is 0, even for an infinite or NaN x.
        case 29u: {
            if (y == 0.0 && !y_nan) { return 0.0; }
            if (x_nan || y_nan) { return nan64(); }
            return x * y;
        }
        // Atan2(y, x): TF's first operand is y.
        case 28u: {
            if (x_nan || y_nan) { return nan64(); }
            return m64_atan2(x, y, (wx.y & 0x80000000u) != 0u, (wy.y & 0x80000000u) != 0u);
        }
        default: { return x; }
    }
}

// NextAfter as C's nextafter, on the bits: its results are often subnormal, which an f64
// computation may flush to zero (llvmpipe does), and a stored word pair is not. The quiet NaN where
// either operand is NaN; y where they are equal; the smallest subnormal of y's sign from a zero.
fn next_after_bits(x: f64, y: f64, wx: vec2<u32>, wy: vec2<u32>) -> vec2<u32> {
    if (is_nan_bits(wx) || is_nan_bits(wy)) {
        return vec2<u32>(0u, 0x7ff80000u);
    }
    if (x == y) {
        return wy;
    }
    if ((wx.y & 0x7fffffffu) == 0u && wx.x == 0u) {
        return vec2<u32>(1u, select(0u, 0x80000000u, y < 0.0));
    }
    // Away from zero where y lies beyond x on x's side: the magnitude's bits plus one, else less one.
    let positive = (wx.y & 0x80000000u) == 0u;
    if ((y > x) == positive) {
        return vec2<u32>(wx.x + 1u, wx.y + select(0u, 1u, wx.x == 0xffffffffu));
    }
    return vec2<u32>(wx.x - 1u, wx.y - select(0u, 1u, wx.x == 0u));
}

// The indices of output element i's operands in `a` and `b`, broadcast.
fn operand_indices(i: u32) -> vec2<u32> {
    let at = broadcast_offsets(i, p.shape, p.a_strides, p.b_strides, p.b_strides);
    return vec2<u32>(p.a_off + at.x, p.b_off + at.y);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    let at = operand_indices(i);
    out[p.out_off + i] = apply(a[at.x], b[at.y], words_a[at.x], words_b[at.y]);
}

// `main` for NextAfter: the result's words into `out_words`.
@compute @workgroup_size(256)
fn next_after(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    let at = operand_indices(i);
    let bits = next_after_bits(a[at.x], b[at.y], words_a[at.x], words_b[at.y]);
    out_words[2u * (p.out_off + i)] = bits.x;
    out_words[2u * (p.out_off + i) + 1u] = bits.y;
}

fn compare(x: f64, y: f64, unordered: bool) -> bool {
    if (unordered) {
        return OP == 1u;
    }
    switch OP {
        case 0u: { return x == y; }
        case 1u: { return x != y; }
        case 2u: { return x < y; }
        case 3u: { return x <= y; }
        case 4u: { return x > y; }
        // As TF's functor: |x - y| <= T(tolerance), the difference in f64.
        case 6u: { return abs(x - y) <= f64(TOLERANCE); }
        default: { return x >= y; }
    }
}

@compute @workgroup_size(256)
fn compare_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = gid.x + gid.y * nwg.x * 256u;
    if (w * 4u >= p.n) {
        return;
    }
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let i = w * 4u + k;
        if (i < p.n) {
            let at = operand_indices(i);
            let unordered = is_nan_bits(words_a[at.x]) || is_nan_bits(words_b[at.y]);
            word |= select(0u, 1u, compare(a[at.x], b[at.y], unordered)) << (k * 8u);
        }
    }
    out_words[p.out_off / 4u + w] = word;
}

fn unary_op(v: f64) -> f64 {
    switch OP {
        case 0u: { return abs(v); }
        case 1u: { return -v; }
        // Eigen's sign: (x > 0) - (x < 0), a positive zero for either zero.
        case 2u: { return select(select(ZERO, -ONE, v < 0.0), ONE, v > 0.0); }
        case 3u: { return v * v; }
        case 4u: { return sqrt(v); }
        // Eigen's rsqrt for double: 1 / sqrt(x), two correctly rounded steps.
        case 5u: { return 1.0 / sqrt(v); }
        case 6u: { return 1.0 / v; }
        case 7u: { return m64_exp(v); }
        case 8u: { return m64_expm1(v); }
        case 9u: { return m64_log(v); }
        case 10u: { return m64_log1p(v); }
        case 11u: { return m64_sin(v); }
        case 12u: { return m64_cos(v); }
        case 13u: { return m64_tan(v); }
        case 14u: { return m64_tanh(v); }
        // Eigen's logistic for double: 1 / (1 + exp(-x)).
        case 15u: { return 1.0 / (1.0 + m64_exp(-v)); }
        case 16u: { return m64_erf(v); }
        case 17u: { return floor(v); }
        case 18u: { return ceil(v); }
        // Round and Rint: half to even.
        case 19u, 20u: { return m64_round(v); }
        case 21u: { return max(v, 0.0); }
        case 22u: { return clamp(v, 0.0, 6.0); }
        // Elu and Selu as TF computes them: exp(x) - 1, not expm1.
        case 23u: { return select(v, m64_exp(v) - 1.0, v < 0.0); }
        case 24u: { return select(1.0507009873554804934 * v, 1.7580993408473768599 * (m64_exp(v) - 1.0), v < 0.0); }
        // v * alpha as TF computes it: an infinity times an alpha of 0 is NaN, which folding the
        // specialised ALPHA's v * 0.0 to 0.0 would lose.
        case 25u: {
            let scaled = select(v * f64(ALPHA), nan64(), ALPHA == 0.0 && abs(v) > 1.7976931348623157e308);
            return select(scaled, v, v > 0.0);
        }
        // Softplus as TF: x past -log(eps) - 2, exp(x) below log(eps) + 2, else log(exp(x) + 1).
        case 26u: {
            let threshold: f64 = -34.04365338911715;
            if (v > -threshold) { return v; }
            if (v < threshold) { return m64_exp(v); }
            return m64_log(m64_exp(v) + 1.0);
        }
        case 27u: { return v / (1.0 + abs(v)); }
        case 28u: { return 0.0; }
        case 29u: { return 1.0; }
        case 32u: { return m64_erfc(v); }
        case 33u: { return m64_sinh(v); }
        case 34u: { return m64_cosh(v); }
        case 35u: { return m64_asinh(v); }
        case 36u: { return m64_acosh(v); }
        case 37u: { return m64_atanh(v); }
        case 38u: { return m64_atan(v); }
        case 39u: { return m64_asin(v); }
        case 40u: { return m64_acos(v); }
        case 41u: { return m64_lgamma(v); }
        case 42u: { return m64_digamma(v); }
        default: { return v; }
    }
}

@compute @workgroup_size(256)
fn unary(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    let at = p.a_off + i;
    let nan = is_nan_bits(words_a[at]) && OP != 28u && OP != 29u;
    out[p.out_off + i] = select(unary_op(a[at]), a[at], nan);
}

// complex128 (pairs of f64; offsets and the broadcast counted in complex elements): the quotient
// a / b (OP 3), as complex.wgsl divides complex64 (Eigen's packet division: b scaled by its larger
// part's magnitude m, then a * conj(b / m) / |b / m|^2 / m); ComplexAbs (OP 20), |a| without
// overflow (infinite where a part is, NaN where a part is NaN), and Angle (OP 21), into float64.
@compute @workgroup_size(256)
fn complex_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    let at = broadcast_offsets(i, p.shape, p.a_strides, p.b_strides, p.b_strides);
    let ia = 2u * (p.a_off + at.x);
    let x = vec2<f64>(a[ia], a[ia + 1u]);
    if (OP == 21u) {
        // Angle: atan2(imaginary, real), the parts' signs (of zeros too) from their bits.
        let negative = vec2<bool>((words_a[ia].y & 0x80000000u) != 0u, (words_a[ia + 1u].y & 0x80000000u) != 0u);
        var angle = m64_atan2(x.y, x.x, negative.y, negative.x);
        if (is_nan_bits(words_a[ia]) || is_nan_bits(words_a[ia + 1u])) {
            angle = nan64();
        }
        out[p.out_off + i] = angle;
        return;
    }
    if (OP == 20u) {
        let ax = abs(x.x);
        let ay = abs(x.y);
        let inf_x = (words_a[ia].y & 0x7fffffffu) == 0x7ff00000u && words_a[ia].x == 0u;
        let inf_y = (words_a[ia + 1u].y & 0x7fffffffu) == 0x7ff00000u && words_a[ia + 1u].x == 0u;
        var r: f64;
        if (inf_x || inf_y) {
            r = f64(bitcast<f32>(0x7f800000u));
        } else if (is_nan_bits(words_a[ia]) || is_nan_bits(words_a[ia + 1u])) {
            r = nan64();
        } else {
            let big = max(ax, ay);
            if (big == 0.0) {
                r = 0.0;
            } else {
                let q = min(ax, ay) / big;
                r = big * sqrt(1.0 + q * q);
            }
        }
        out[p.out_off + i] = r;
        return;
    }
    let ib = 2u * (p.b_off + at.y);
    let y = vec2<f64>(b[ib], b[ib + 1u]);
    let m = max(abs(y.x), abs(y.y));
    let c = y.x / m;
    let d = y.y / m;
    let denom = c * c + d * d;
    let o = 2u * (p.out_off + i);
    out[o] = (x.x * c + x.y * d) / denom / m;
    out[o + 1u] = (x.y * c - x.x * d) / denom / m;
}
