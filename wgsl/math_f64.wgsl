// Accurate float64 functions for the float64 shaders. GLSL.std.450 (so WGSL on Vulkan) defines
// exp, log and the like for 16- and 32-bit floats only, so float64 needs its own. This library is
// separate from math.wgsl because a module that declares f64 at all needs SHADER_F64, which Metal
// lacks: only shaders for float64 kernels prepend it.
// exp and log are fdlibm's (Sun's freely distributable libm, as in musl): under 1 ulp. expm1
// follows Eigen's generic_expm1, which TF-CPU's double kernels run; log1p uses fdlibm's log kernel.
// As math.wgsl says, Mesa rewrites `(a + b) - a` to `b`: nothing here depends on such a difference.

const M64_LN2_HI: f64 = 6.93147180369123816490e-01;
const M64_LN2_LO: f64 = 1.90821492927058770002e-10;
const M64_INV_LN2: f64 = 1.44269504088896338700e+00;

fn m64_inf() -> f64 {
    return f64(bitcast<f32>(0x7f800000u));
}

fn m64_nan() -> f64 {
    return f64(bitcast<f32>(0x7fc00000u));
}

// x * 2^k for k in [-1100, 1100], in two steps so that neither overflows early nor loses a
// subnormal result to a single ldexp past the exponent range.
fn m64_scale(x: f64, k: i32) -> f64 {
    let half = k / 2;
    return ldexp(ldexp(x, half), k - half);
}

// Scales positive finite *m into [1, 2) by powers of two and returns the exponent taken out. (naga
// types frexp's exponent for f64 as i64, which needs SHADER_INT64; this needs no bits either.)
fn m64_binade(m: ptr<function, f64>) -> i32 {
    var k = 0;
    // Subnormals first up by 2^54, into the normal range.
    if (*m < 2.2250738585072014e-308) {
        *m = ldexp(*m, 54);
        k = -54;
    }
    for (var s = 512; s > 0; s >>= 1u) {
        if (*m >= ldexp(f64(1.0), s)) {
            *m = ldexp(*m, -s);
            k += s;
        }
        if (*m < ldexp(f64(1.0), 1 - s)) {
            *m = ldexp(*m, s);
            k -= s;
        }
    }
    return k;
}

fn m64_exp(x: f64) -> f64 {
    if (x > 7.09782712893383973096e+02) {
        return m64_inf();
    }
    if (x < -7.45133219101941108420e+02) {
        return 0.0;
    }
    if (abs(x) < 3.725290298461914e-09) {
        return 1.0 + x;
    }
    // x = k ln2 + r, |r| <= ln2 / 2, with ln2 in two parts so that k ln2 is exact.
    let k = floor(x * M64_INV_LN2 + 0.5);
    let hi = x - k * M64_LN2_HI;
    let lo = k * M64_LN2_LO;
    let r = hi - lo;
    let t = r * r;
    let c = r - t * (1.66666666666666019037e-01 + t * (-2.77777777770155933842e-03
        + t * (6.61375632143793436117e-05 + t * (-1.65339022054652515390e-06 + t * 4.13813679705723846039e-08))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    return m64_scale(y, i32(k));
}

// log(1 + f) for 1 + f in [sqrt(2)/2, sqrt(2)), plus k ln 2: fdlibm's kernel, 2 atanh(f / (2 + f))
// as a polynomial in s = f / (2 + f).
fn m64_log_kernel(f: f64, k: i32) -> f64 {
    let dk = f64(k);
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
    let t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01
        + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    return dk * M64_LN2_HI - ((hfsq - (s * (hfsq + r) + dk * M64_LN2_LO)) - f);
}

fn m64_log(x: f64) -> f64 {
    if (x < 0.0) {
        return m64_nan();
    }
    if (x == 0.0) {
        return -m64_inf();
    }
    if (x == m64_inf()) {
        return x;
    }
    // x = 2^k (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)).
    var m = x;
    var k = m64_binade(&m);
    if (m > 1.41421356237309504880) {
        m *= 0.5;
        k += 1;
    }
    return m64_log_kernel(m - 1.0, k);
}

// Eigen's generic_expm1: (exp(x) - 1) * x / log(exp(x)), which cancels exp's rounding.
fn m64_expm1(x: f64) -> f64 {
    let u = m64_exp(x);
    if (u == 1.0) {
        return x;
    }
    let um1 = u - 1.0;
    if (um1 == -1.0) {
        return -1.0;
    }
    if (u == m64_inf()) {
        return u;
    }
    return um1 * (x / m64_log(u));
}

// log(1 + x): where 1 + x falls in the log kernel's interval, the kernel on x itself (no rounding
// of 1 + x, and none of Eigen's (1 + x) - 1 correction, which Mesa folds to x); elsewhere log(1 + x),
// whose rounding is under an ulp of a result at least log(sqrt(2)) in size.
fn m64_log1p(x: f64) -> f64 {
    if (x >= -0.29289321881345247560 && x < 0.41421356237309504880) {
        return m64_log_kernel(x, 0);
    }
    if (x == -1.0) {
        return -m64_inf();
    }
    return m64_log(1.0 + x);
}

// tanh(x) = -expm1(-2|x|) / (expm1(-2|x|) + 2), signed; 1 past |x| = 22, where it rounds to 1.
fn m64_tanh(x: f64) -> f64 {
    let ax = abs(x);
    var t: f64 = 1.0;
    if (ax < 22.0) {
        let e = m64_expm1(-2.0 * ax);
        t = -e / (e + 2.0);
    }
    return select(t, -t, x < 0.0);
}
