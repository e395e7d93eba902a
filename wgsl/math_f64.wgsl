// Accurate float64 functions for the float64 shaders. GLSL.std.450 (so WGSL on Vulkan) defines
// exp, log and the like for 16- and 32-bit floats only, so float64 needs its own. This library is
// separate from math.wgsl because a module that declares f64 at all needs SHADER_F64, which Metal
// lacks: only shaders for float64 kernels prepend it.
// exp and log are fdlibm's (Sun's freely distributable libm, as in musl): under 1 ulp. expm1
// follows Eigen's generic_expm1, which TF-CPU's double kernels run; log1p uses fdlibm's log kernel.
// As math.wgsl says, Mesa rewrites `(a + b) - a` to `b`, and where a is a constant it reassociates
// `a - (a - b)` to `b` too (so fdlibm's `(1 - w) - h` for w = 1 - h is 0 on lavapipe): no algorithm
// here depends on such a difference. `a - (a - b)` and `(a - (a + b)) + b` of variables are
// computed as written, and the error-free steps below use only those, or go through `m64_hi` and
// `m64_opaque`, which the optimiser cannot see through. (lavapipe splits `fma` into a product and a
// sum, so products are split as fdlibm splits them, by clearing low bits.)

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

// v rounded half to even (C's rint). Not WGSL's round: on some llvmpipe builds (Mesa 22.3 with
// LLVM 15 on an AVX2 CPU) an f64's round and trunc return values from 2^24 up unchanged, fraction
// and all, and `f64(i32(v))` is folded into that trunc. floor and ceil are right there.
fn m64_round(v: f64) -> f64 {
    let a = abs(v);
    let whole = floor(a);
    // Exact: a and whole are within a factor of two of each other, or whole is 0.
    let fraction = a - whole;
    if (fraction == 0.0) {
        // Integers as they are, -0 included.
        return v;
    }
    let odd = whole - 2.0 * floor(0.5 * whole) != 0.0;
    let up = fraction > 0.5 || (fraction == 0.5 && odd);
    let r = select(whole, whole + 1.0, up);
    return select(r, -r, v < 0.0);
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
// of 1 + x); elsewhere log(u) + c / u for u = 1 + x rounded and c its rounding error, recovered
// from u passed through `m64_opaque` (Mesa folds (1 + x) - 1 to x, but cannot see through that).
fn m64_log1p(x: f64) -> f64 {
    if (x >= -0.29289321881345247560 && x < 0.41421356237309504880) {
        return m64_log_kernel(x, 0);
    }
    if (x == -1.0) {
        return -m64_inf();
    }
    let u = 1.0 + x;
    var c: f64 = 0.0;
    if (x < 9007199254740992.0) {
        let v = m64_opaque(u);
        c = select(x - (v - 1.0), 1.0 - (v - x), x > 1.0);
    }
    return m64_log(u) + c / u;
}

// As math_sigmoid: exp(x) / (1 + exp(x)) below zero keeps the tiny results 1 / (1 + inf) would lose.
// (NaN: the caller's check, as WGSL has no bitcast of an f64.)
fn m64_sigmoid(x: f64) -> f64 {
    if (x >= 0.0) {
        return 1.0 / (1.0 + m64_exp(-x));
    }
    let e = m64_exp(x);
    return e / (1.0 + e);
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

// ---- Trigonometry and its inverses, hyperbolic functions, erf, erfc, pow, lgamma, digamma ------
// fdlibm's algorithms (as musl and FreeBSD ship them), digamma Eigen's. Where fdlibm clears the low
// word of a double to split it (SET_LOW_WORD(v, 0), so that products of the high parts are exact),
// `m64_hi` keeps the same 21 leading bits with floor and ldexp, as WGSL has no bitcast of f64; where
// fdlibm reads the exponent or sign from the bits, comparisons do (and the kernels pass the sign bits
// of their operands, for signed zeros). tests/python/test_accuracy.py measures every function
// against the exact result.

const M64_MAX: f64 = 1.7976931348623157e308;

fn m64_is_inf(x: f64) -> bool {
    return abs(x) > M64_MAX;
}

// `magnitude`, negated where `negative`.
fn m64_signed(magnitude: f64, negative: bool) -> f64 {
    return select(magnitude, -magnitude, negative);
}

// C's fmod for finite x and finite nonzero y, exact: |y| scaled into |x|'s binade, then one
// subtraction per binade down to |y|'s, each exact (the operands are within a factor of two).
fn m64_fmod(x: f64, y: f64) -> f64 {
    var r = abs(x);
    let ay = abs(y);
    if (r < ay) {
        return x;
    }
    var mr = r;
    var my = ay;
    var k = m64_binade(&mr) - m64_binade(&my);
    if (mr < my) {
        k -= 1;
    }
    // t = |y| 2^k <= r < 2t, and halving t is exact down to |y|.
    var t = m64_scale(ay, k);
    for (; k >= 0; k--) {
        if (r >= t) {
            r -= t;
        }
        t *= 0.5;
    }
    return select(r, -r, x < 0.0);
}

// v truncated toward zero to its leading `bits` significant bits (fdlibm's SET_LOW_WORD(v, 0) for
// bits = 21), for |v| < 2^128: the exponent is read from the float32 conversion, then corrected by
// one where that rounded up a binade. (Below 2^-126 it keeps fewer bits, which is still a split.)
fn m64_hi(v: f64, bits: i32) -> f64 {
    let a = abs(v);
    var e = i32((bitcast<u32>(f32(a)) >> 23u) & 0xffu) - 127;
    if (ldexp(f64(1.0), e) > a) {
        e -= 1;
    }
    let h = ldexp(floor(ldexp(a, bits - 1 - e)), e + 1 - bits);
    return select(h, -h, v < 0.0);
}

// v itself, for 2^-126 <= |v| < 2^128, through operations the optimiser cannot see through, so that
// a difference such as (1 + x) - 1 is computed as written.
fn m64_opaque(v: f64) -> f64 {
    return m64_hi(v, 53);
}

// x = n pi/2 + (hi + lo), |hi + lo| <= pi/4 (about), n's low bits exact.
struct M64Reduced {
    n: i32,
    hi: f64,
    lo: f64,
}

// pi/2 in three 33-bit parts and their tails: n * part is exact for n < 2^20.
const M64_INV_PIO2: f64 = 6.36619772367581382433e-01;
const M64_PIO2_1: f64 = 1.57079632673412561417e+00;
const M64_PIO2_2: f64 = 6.07710050630396597660e-11;
const M64_PIO2_3: f64 = 2.02226624871116645580e-21;
const M64_PIO2_3T: f64 = 8.47842766036889956997e-32;

// fdlibm's __rem_pio2 medium case (|x| < 2^20 pi/2): x - n (p1 + p2 + p3 + p3t), n p1, n p2 and
// n p3 exact, the first difference exact and the rounding errors of the next two kept, all three
// rounds (good to 151 bits) taken every time instead of where the exponent bits say they are needed.
fn m64_rem_pio2_medium(x: f64) -> M64Reduced {
    let fn_ = m64_round(x * M64_INV_PIO2);
    let t1 = x - fn_ * M64_PIO2_1;
    let w2 = fn_ * M64_PIO2_2;
    let t2 = t1 - w2;
    let e2 = (t1 - t2) - w2;
    let w3 = fn_ * M64_PIO2_3;
    let r = t2 - w3;
    let e3 = (t2 - r) - w3;
    let w = fn_ * M64_PIO2_3T - (e3 + e2);
    let y0 = r - w;
    return M64Reduced(i32(fn_), y0, (r - y0) - w);
}

// 2/pi in 24-bit pieces (enough for every double's exponent) and pi/2 in 24-bit pieces.
const M64_IPIO2 = array<i32, 66>(
    0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163,
    0xABDEBB, 0xC561B7, 0x246E3A, 0x424DD2, 0xE00649, 0x2EEA09, 0xD1921C, 0xFE1DEB, 0x1CB129,
    0xA73EE8, 0x8235F5, 0x2EBB44, 0x84E99C, 0x7026B4, 0x5F7E41, 0x3991D6, 0x398353, 0x39F49C,
    0x845F8B, 0xBDF928, 0x3B1FF8, 0x97FFDE, 0x05980F, 0xEF2F11, 0x8B5A0A, 0x6D1F6D, 0x367ECF,
    0x27CB09, 0xB74F46, 0x3F669E, 0x5FEA2D, 0x7527BA, 0xC7EBE5, 0xF17B3D, 0x0739F7, 0x8A5292,
    0xEA6BFB, 0x5FB11F, 0x8D5D08, 0x560330, 0x46FC7B, 0x6BABF0, 0xCFBC20, 0x9AF436, 0x1DA9E3,
    0x91615E, 0xE61B08, 0x659985, 0x5F14A0, 0x68408D, 0xFFD880, 0x4D7327, 0x310606, 0x1556CA,
    0x73A8C9, 0x60E27B, 0xC08C6B,
);
const M64_PIO2_24 = array<f64, 8>(
    1.57079625129699707031e+00, 7.54978941586159635335e-08, 5.39030252995776476554e-15,
    3.28200341580791294123e-22, 1.27065575308067607349e-29, 1.22933308981111328932e-36,
    2.73370053816464559624e-44, 2.16741683877804819444e-51,
);
const M64_TWO24: f64 = 16777216.0;
const M64_TWON24: f64 = 5.96046447753906250000e-08;

// fdlibm's __kernel_rem_pio2 for double precision (jk = 4), x positive and at least 2^20 pi/2:
// the product of x and 2/pi in 24-bit pieces, of which only the ones that matter mod 8.
fn m64_rem_pio2_large(ax: f64) -> M64Reduced {
    var ipio2 = M64_IPIO2;
    var pio2 = M64_PIO2_24;
    // ax = (tx[0] + tx[1] 2^-24 + tx[2] 2^-48) 2^e0, pieces of 24 bits.
    var m = ax;
    let e0 = m64_binade(&m) - 23;
    var tx: array<f64, 3>;
    var z = ldexp(m, 23);
    tx[0] = floor(z);
    z = (z - tx[0]) * M64_TWO24;
    tx[1] = floor(z);
    tx[2] = (z - tx[1]) * M64_TWO24;
    var nx = 3;
    if (tx[2] == 0.0) {
        nx = select(2, 1, tx[1] == 0.0);
    }
    let jk = 4;
    let jx = nx - 1;
    let jv = max((e0 - 3) / 24, 0);
    var q0 = e0 - 24 * (jv + 1);
    var f: array<f64, 20>;
    var q: array<f64, 20>;
    var fq: array<f64, 20>;
    var iq: array<i32, 20>;
    for (var i = 0; i <= jx + jk; i++) {
        let j = jv - jx + i;
        f[i] = select(f64(ipio2[max(j, 0)]), 0.0, j < 0);
    }
    for (var i = 0; i <= jk; i++) {
        var fw: f64 = 0.0;
        for (var j = 0; j <= jx; j++) {
            fw += tx[j] * f[jx + i - j];
        }
        q[i] = fw;
    }
    var jz = jk;
    var n = 0;
    var ih = 0;
    for (var round = 0; round < 8; round++) {
        // Distill q[] into iq[], most significant last.
        z = q[jz];
        for (var j = jz; j > 0; j--) {
            let fw = floor(M64_TWON24 * z);
            iq[jz - j] = i32(z - M64_TWO24 * fw);
            z = q[j - 1] + fw;
        }
        // The integer part mod 8.
        z = ldexp(z, q0);
        z -= 8.0 * floor(z * 0.125);
        n = i32(z);
        z -= f64(n);
        ih = 0;
        if (q0 > 0) {
            let i = iq[jz - 1] >> u32(24 - q0);
            n += i;
            iq[jz - 1] -= i << u32(24 - q0);
            ih = iq[jz - 1] >> u32(23 - q0);
        } else if (q0 == 0) {
            ih = iq[jz - 1] >> 23u;
        } else if (z >= 0.5) {
            ih = 2;
        }
        if (ih > 0) {
            // The fraction is at least 0.5: take 1 - fraction, and one more for n.
            n += 1;
            var carry = 0;
            for (var i = 0; i < jz; i++) {
                let j = iq[i];
                if (carry == 0) {
                    if (j != 0) {
                        carry = 1;
                        iq[i] = 0x1000000 - j;
                    }
                } else {
                    iq[i] = 0xffffff - j;
                }
            }
            if (q0 == 1) {
                iq[jz - 1] &= 0x7fffff;
            } else if (q0 == 2) {
                iq[jz - 1] &= 0x3fffff;
            }
            if (ih == 2) {
                z = 1.0 - z;
                if (carry != 0) {
                    z -= ldexp(f64(1.0), q0);
                }
            }
        }
        // Cancellation down to the last pieces computed: take more of 2/pi and distill again.
        if (z != 0.0) {
            break;
        }
        var any = 0;
        for (var i = jz - 1; i >= jk; i--) {
            any |= iq[i];
        }
        if (any != 0) {
            break;
        }
        var k = 1;
        while (k < jk && iq[jk - k] == 0) {
            k++;
        }
        for (var i = jz + 1; i <= jz + k; i++) {
            f[jx + i] = f64(ipio2[jv + i]);
            var fw: f64 = 0.0;
            for (var j = 0; j <= jx; j++) {
                fw += tx[j] * f[jx + i - j];
            }
            q[i] = fw;
        }
        jz += k;
    }
    // Chop off zero pieces, or split the last into 24 bits.
    if (z == 0.0) {
        jz -= 1;
        q0 -= 24;
        while (jz > 0 && iq[jz] == 0) {
            jz--;
            q0 -= 24;
        }
    } else {
        z = ldexp(z, -q0);
        if (z >= M64_TWO24) {
            let fw = floor(M64_TWON24 * z);
            iq[jz] = i32(z - M64_TWO24 * fw);
            jz += 1;
            q0 += 24;
            iq[jz] = i32(fw);
        } else {
            iq[jz] = i32(z);
        }
    }
    var fw = ldexp(f64(1.0), q0);
    for (var i = jz; i >= 0; i--) {
        q[i] = fw * f64(iq[i]);
        fw *= M64_TWON24;
    }
    // pi/2 times the fraction.
    for (var i = jz; i >= 0; i--) {
        var s: f64 = 0.0;
        for (var k = 0; k <= 4 && k <= jz - i; k++) {
            s += pio2[k] * q[i + k];
        }
        fq[jz - i] = s;
    }
    var hi: f64 = 0.0;
    for (var i = jz; i >= 0; i--) {
        hi += fq[i];
    }
    var lo = fq[0] - hi;
    for (var i = 1; i <= jz; i++) {
        lo += fq[i];
    }
    return M64Reduced(n & 7, m64_signed(hi, ih != 0), m64_signed(lo, ih != 0));
}

// x mod pi/2 for finite x beyond pi/4.
fn m64_rem_pio2(x: f64) -> M64Reduced {
    let ax = abs(x);
    if (ax < 1647099.0) {
        return m64_rem_pio2_medium(x);
    }
    let r = m64_rem_pio2_large(ax);
    if (x < 0.0) {
        return M64Reduced(-r.n, -r.hi, -r.lo);
    }
    return r;
}

// sin(x + y) on [-pi/4, pi/4], y the tail of x (fdlibm's __sin).
fn m64_sin_kernel(x: f64, y: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = 8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04 + z * 2.75573137070700676789e-06)
        + z * w * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10);
    let v = z * x;
    return x - ((z * (0.5 * y - v * r) - y) - v * -1.66666666666666324348e-01);
}

// cos(x + y) on [-pi/4, pi/4] (fdlibm's __cos). fdlibm's w = 1 - x^2/2 plus its rounding error
// (1 - w) - x^2/2, which Mesa folds to 0: here x^2/2 rounded to w's grid (2^-53) instead, so that
// w = 1 - that is exact and the error is the rounding of x^2/2.
fn m64_cos_kernel(x: f64, y: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 + z * 2.48015872894767294178e-05))
        + w * w * (-2.75573143513906633035e-07 + z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11));
    let hz = 0.5 * z;
    let hz_r = ldexp(m64_round(ldexp(hz, 53)), -53);
    return (1.0 - hz_r) + ((hz_r - hz) + (z * r - x * y));
}

// tan(x + y) on [-pi/4, pi/4], or -1 / tan(x + y) where `cot` (fdlibm's __tan).
fn m64_tan_kernel(x_in: f64, y_in: f64, cot: bool) -> f64 {
    var x = x_in;
    var y = y_in;
    let big = abs(x) >= 0.6743354797363281;
    let negative = x < 0.0;
    if (big) {
        if (negative) {
            x = -x;
            y = -y;
        }
        x = (7.85398163397448278999e-01 - x) + (3.06161699786838301793e-17 - y);
        y = 0.0;
    }
    let z = x * x;
    let w = z * z;
    var r = 1.33333333333201242699e-01 + w * (2.18694882948595424599e-02 + w * (3.59207910759131235356e-03
        + w * (5.88041240820264096874e-04 + w * (7.81794442939557092300e-05 + w * -1.85586374855275456654e-05))));
    let v = z * (5.39682539762260521377e-02 + w * (8.86323982359930005737e-03 + w * (1.45620945432529025516e-03
        + w * (2.46463134818469906812e-04 + w * (7.14072491382608190305e-05 + w * 2.59073051863633712884e-05)))));
    let s = z * x;
    r = y + z * (s * (r + v) + y);
    r += 3.33333333333334091986e-01 * s;
    let t = x + r;
    if (big) {
        let k = select(f64(1.0), f64(-1.0), cot);
        return m64_signed(k - 2.0 * (x - (t * t / (t + k) - r)), negative);
    }
    if (!cot) {
        return t;
    }
    // -1 / (x + r) accurately: t_hi + v = x + r, and a = -1 / t split likewise.
    let t_hi = m64_hi(t, 21);
    let v2 = r - (t_hi - x);
    let a = -1.0 / t;
    let a_hi = m64_hi(a, 21);
    let s2 = 1.0 + a_hi * t_hi;
    return a_hi + a * (s2 + a_hi * v2);
}

fn m64_sin(x: f64) -> f64 {
    let ax = abs(x);
    if (ax < 0.7853984832763672) {
        if (ax < 1.4901161193847656e-08) {
            return x;
        }
        return m64_sin_kernel(x, 0.0);
    }
    if (m64_is_inf(x)) {
        return m64_nan();
    }
    let r = m64_rem_pio2(x);
    switch (r.n & 3) {
        case 0: { return m64_sin_kernel(r.hi, r.lo); }
        case 1: { return m64_cos_kernel(r.hi, r.lo); }
        case 2: { return -m64_sin_kernel(r.hi, r.lo); }
        default: { return -m64_cos_kernel(r.hi, r.lo); }
    }
}

fn m64_cos(x: f64) -> f64 {
    let ax = abs(x);
    if (ax < 0.7853984832763672) {
        if (ax < 7.450580596923828e-09) {
            return 1.0;
        }
        return m64_cos_kernel(x, 0.0);
    }
    if (m64_is_inf(x)) {
        return m64_nan();
    }
    let r = m64_rem_pio2(x);
    switch (r.n & 3) {
        case 0: { return m64_cos_kernel(r.hi, r.lo); }
        case 1: { return -m64_sin_kernel(r.hi, r.lo); }
        case 2: { return -m64_cos_kernel(r.hi, r.lo); }
        default: { return m64_sin_kernel(r.hi, r.lo); }
    }
}

fn m64_tan(x: f64) -> f64 {
    let ax = abs(x);
    if (ax < 0.7853984832763672) {
        if (ax < 7.450580596923828e-09) {
            return x;
        }
        return m64_tan_kernel(x, 0.0, false);
    }
    if (m64_is_inf(x)) {
        return m64_nan();
    }
    let r = m64_rem_pio2(x);
    return m64_tan_kernel(r.hi, r.lo, (r.n & 1) != 0);
}

// fdlibm's atan: reduced to [0, 7/16] by atan(x) = atan(c) + atan((x - c) / (1 + x c)) for
// c = 1/2, 1, 3/2 and infinity.
fn m64_atan(x_in: f64) -> f64 {
    let ax = abs(x_in);
    if (ax >= 7.378697629483821e+19) {
        return m64_signed(1.57079632679489655800e+00 + 6.12323399573676603587e-17, x_in < 0.0);
    }
    var x = x_in;
    var id = -1;
    if (ax < 0.4375) {
        if (ax < 3.725290298461914e-09) {
            return x_in;
        }
    } else {
        x = ax;
        if (ax < 1.1875) {
            if (ax < 0.6875) {
                id = 0;
                x = (2.0 * x - 1.0) / (2.0 + x);
            } else {
                id = 1;
                x = (x - 1.0) / (x + 1.0);
            }
        } else {
            if (ax < 2.4375) {
                id = 2;
                x = (x - 1.5) / (1.0 + 1.5 * x);
            } else {
                id = 3;
                x = -1.0 / x;
            }
        }
    }
    let z = x * x;
    let w = z * z;
    let s1 = z * (3.33333333333329318027e-01 + w * (1.42857142725034663711e-01 + w * (9.09088713343650656196e-02
        + w * (6.66107313738753120669e-02 + w * (4.97687799461593236017e-02 + w * 1.62858201153657823623e-02)))));
    let s2 = w * (-1.99999999998764832476e-01 + w * (-1.11111104054623557880e-01 + w * (-7.69187620504482999495e-02
        + w * (-5.83357013379057348645e-02 + w * -3.65315727442169155270e-02))));
    if (id < 0) {
        return x - x * (s1 + s2);
    }
    var hi: f64;
    var lo: f64;
    switch (id) {
        case 0: {
            hi = 4.63647609000806093515e-01;
            lo = 2.26987774529616870924e-17;
        }
        case 1: {
            hi = 7.85398163397448278999e-01;
            lo = 3.06161699786838301793e-17;
        }
        case 2: {
            hi = 9.82793723247329054082e-01;
            lo = 1.39033110312309984516e-17;
        }
        default: {
            hi = 1.57079632679489655800e+00;
            lo = 6.12323399573676603587e-17;
        }
    }
    return m64_signed(hi - ((x * (s1 + s2) - lo) - x), x_in < 0.0);
}

// (asin(x) - x) / x^3 as fdlibm's rational function of t = x^2.
fn m64_asin_ratio(t: f64) -> f64 {
    let p = t * (1.66666666666666657415e-01 + t * (-3.25565818622400915405e-01 + t * (2.01212532134862925881e-01
        + t * (-4.00555345006794114027e-02 + t * (7.91534994289814532176e-04 + t * 3.47933107596021167570e-05)))));
    let q = 1.0 + t * (-2.40339491173441421878e+00 + t * (2.02094576023350569471e+00
        + t * (-6.88283971605453293030e-01 + t * 7.70381505559019352791e-02)));
    return p / q;
}

const M64_PIO2_HI: f64 = 1.57079632679489655800e+00;
const M64_PIO2_LO: f64 = 6.12323399573676603587e-17;

fn m64_asin(x: f64) -> f64 {
    let ax = abs(x);
    if (ax >= 1.0) {
        if (ax == 1.0) {
            return x * M64_PIO2_HI + x * M64_PIO2_LO;
        }
        return m64_nan();
    }
    if (ax < 0.5) {
        if (ax < 1.4901161193847656e-08) {
            return x;
        }
        return x + x * m64_asin_ratio(x * x);
    }
    // asin(x) = pi/2 - 2 asin(sqrt((1 - x) / 2)).
    let t = (1.0 - ax) * 0.5;
    let r = m64_asin_ratio(t);
    let s = sqrt(t);
    var y: f64;
    if (ax >= 0.9749999046325684) {
        y = M64_PIO2_HI - (2.0 * (s + s * r) - M64_PIO2_LO);
    } else {
        let f = m64_hi(s, 21);
        let c = (t - f * f) / (s + f);
        let p = 2.0 * s * r - (M64_PIO2_LO - 2.0 * c);
        let q = 7.85398163397448278999e-01 - 2.0 * f;
        y = 7.85398163397448278999e-01 - (p - q);
    }
    return m64_signed(y, x < 0.0);
}

fn m64_acos(x: f64) -> f64 {
    let ax = abs(x);
    if (ax >= 1.0) {
        if (x == 1.0) {
            return 0.0;
        }
        if (x == -1.0) {
            return 3.14159265358979311600e+00 + 2.0 * M64_PIO2_LO;
        }
        return m64_nan();
    }
    if (ax < 0.5) {
        if (ax <= 5.551115123125783e-17) {
            return M64_PIO2_HI + M64_PIO2_LO;
        }
        return M64_PIO2_HI - (x - (M64_PIO2_LO - x * m64_asin_ratio(x * x)));
    }
    if (x < 0.0) {
        let z = (1.0 + x) * 0.5;
        let s = sqrt(z);
        let w = m64_asin_ratio(z) * s - M64_PIO2_LO;
        return 3.14159265358979311600e+00 - 2.0 * (s + w);
    }
    let z = (1.0 - x) * 0.5;
    let s = sqrt(z);
    let f = m64_hi(s, 21);
    let c = (z - f * f) / (s + f);
    let w = m64_asin_ratio(z) * s + c;
    return 2.0 * (f + w);
}

// atan2(y, x) as fdlibm: the signs (of zeros too) from the bits, `y_neg` and `x_neg`.
fn m64_atan2(y: f64, x: f64, y_neg: bool, x_neg: bool) -> f64 {
    let pi: f64 = 3.1415926535897931160e+00;
    let pi_lo: f64 = 1.2246467991473531772e-16;
    if (x == 1.0) {
        return m64_atan(y);
    }
    if (y == 0.0) {
        if (!x_neg) {
            return y;
        }
        return m64_signed(pi, y_neg);
    }
    if (x == 0.0) {
        return m64_signed(M64_PIO2_HI, y_neg);
    }
    if (m64_is_inf(x)) {
        if (m64_is_inf(y)) {
            return m64_signed(select(f64(7.8539816339744827900e-01), f64(2.3561944901923448370e+00), x_neg), y_neg);
        }
        return m64_signed(select(f64(0.0), pi, x_neg), y_neg);
    }
    if (m64_is_inf(y)) {
        return m64_signed(M64_PIO2_HI, y_neg);
    }
    let ax = abs(x);
    let ay = abs(y);
    var z: f64;
    var x_left = x_neg;
    if (ay > ldexp(ax, 60)) {
        // |y / x| > 2^60.
        z = M64_PIO2_HI + 0.5 * pi_lo;
        x_left = false;
    } else if (x_neg && ldexp(ay, 60) < ax) {
        z = 0.0;
    } else {
        z = m64_atan(abs(y / x));
    }
    if (!x_left) {
        return m64_signed(z, y_neg);
    }
    return m64_signed(pi - (z - pi_lo), y_neg);
}

// fdlibm's expm1 (under 1 ulp, where `m64_expm1`, Eigen's formula that TF-CPU's Expm1 runs, can
// reach 2): x = k ln2 + r + c, expm1(r) by a rational function with the correction c, scaled back.
// (The reduction always goes through k ln2 with k from x, also for |k| = 1, where fdlibm subtracts
// the constant ln2 parts: Mesa reassociates a - (a - constant).)
fn m64_expm1_fdlibm(x: f64) -> f64 {
    if (x > 7.09782712893383973096e+02) {
        return m64_inf();
    }
    if (x < -38.816242111356935) {
        return -1.0;
    }
    let ax = abs(x);
    if (ax < 5.551115123125783e-17) {
        return x;
    }
    var k = 0;
    var r = x;
    var c: f64 = 0.0;
    if (ax > 0.34657359027997264) {
        k = i32(M64_INV_LN2 * x + select(f64(0.5), f64(-0.5), x < 0.0));
        let t = f64(k);
        let hi = x - t * M64_LN2_HI;
        let lo = t * M64_LN2_LO;
        r = hi - lo;
        c = (hi - r) - lo;
    }
    let hfx = 0.5 * r;
    let hxs = r * hfx;
    let r1 = 1.0 + hxs * (-3.33333333333331316428e-02 + hxs * (1.58730158725481460165e-03
        + hxs * (-7.93650757867487942473e-05 + hxs * (4.00821782732936239552e-06 + hxs * -2.01099218183624371326e-07))));
    let t = 3.0 - r1 * hfx;
    var e = hxs * ((r1 - t) / (6.0 - r * t));
    if (k == 0) {
        return r - (r * e - hxs);
    }
    e = r * (e - c) - c;
    e -= hxs;
    if (k == -1) {
        return 0.5 * (r - e) - 0.5;
    }
    if (k == 1) {
        if (r < -0.25) {
            return -2.0 * (e - (r + 0.5));
        }
        return 1.0 + 2.0 * (r - e);
    }
    if (k < 0 || k > 56) {
        return m64_scale(r - e + 1.0, k) - 1.0;
    }
    let twopk = ldexp(f64(1.0), k);
    let twomk = ldexp(f64(1.0), -k);
    if (k < 20) {
        return (r - e + (1.0 - twomk)) * twopk;
    }
    return (r - (e + twomk) + 1.0) * twopk;
}

// fdlibm's sinh: from expm1 below 22, exp above, exp(|x| / 2)^2 / 2 near overflow.
fn m64_sinh(x: f64) -> f64 {
    let ax = abs(x);
    let h = m64_signed(0.5, x < 0.0);
    if (ax < 22.0) {
        if (ax < 3.725290298461914e-09) {
            return x;
        }
        let t = m64_expm1_fdlibm(ax);
        if (ax < 1.0) {
            return h * (2.0 * t - t * t / (t + 1.0));
        }
        return h * (t + t / (t + 1.0));
    }
    if (ax < 709.7822265625) {
        return h * m64_exp(ax);
    }
    if (ax <= 710.4758600739439) {
        let w = m64_exp(0.5 * ax);
        return (h * w) * w;
    }
    return m64_signed(m64_inf(), x < 0.0);
}

fn m64_cosh(x: f64) -> f64 {
    let ax = abs(x);
    if (ax < 0.3465735912322998) {
        let t = m64_expm1_fdlibm(ax);
        let w = 1.0 + t;
        if (ax < 5.551115123125783e-17) {
            return w;
        }
        return 1.0 + (t * t) / (w + w);
    }
    if (ax < 22.0) {
        let t = m64_exp(ax);
        return 0.5 * t + 0.5 / t;
    }
    if (ax < 709.7822265625) {
        return 0.5 * m64_exp(ax);
    }
    if (ax <= 710.4758600739439) {
        let w = m64_exp(0.5 * ax);
        return (0.5 * w) * w;
    }
    return m64_inf();
}

const M64_LN2: f64 = 6.93147180559945286227e-01;

fn m64_asinh(x: f64) -> f64 {
    let ax = abs(x);
    var w: f64;
    if (ax < 3.725290298461914e-09) {
        return x;
    }
    if (ax > 268435456.0) {
        if (m64_is_inf(x)) {
            return x;
        }
        w = m64_log(ax) + M64_LN2;
    } else if (ax > 2.0) {
        w = m64_log(2.0 * ax + 1.0 / (sqrt(x * x + 1.0) + ax));
    } else {
        let t = x * x;
        w = m64_log1p(ax + t / (1.0 + sqrt(1.0 + t)));
    }
    return m64_signed(w, x < 0.0);
}

fn m64_acosh(x: f64) -> f64 {
    if (x < 1.0) {
        return m64_nan();
    }
    if (x >= 268435456.0) {
        if (m64_is_inf(x)) {
            return x;
        }
        return m64_log(x) + M64_LN2;
    }
    if (x == 1.0) {
        return 0.0;
    }
    if (x > 2.0) {
        return m64_log(2.0 * x - 1.0 / (x + sqrt(x * x - 1.0)));
    }
    let t = x - 1.0;
    return m64_log1p(t + sqrt(2.0 * t + t * t));
}

fn m64_atanh(x: f64) -> f64 {
    let ax = abs(x);
    if (ax > 1.0) {
        return m64_nan();
    }
    if (ax == 1.0) {
        return m64_signed(m64_inf(), x < 0.0);
    }
    if (ax < 3.725290298461914e-09) {
        return x;
    }
    var t: f64;
    if (ax < 0.5) {
        let d = ax + ax;
        t = 0.5 * m64_log1p(d + d * ax / (1.0 - ax));
    } else {
        t = 0.5 * m64_log1p((ax + ax) / (1.0 - ax));
    }
    return m64_signed(t, x < 0.0);
}

// fdlibm's erf and erfc share these rational approximations.
// (erf(x) - x) / x on [0, 0.84375], as a function of z = x^2.
fn m64_erf_small(z: f64) -> f64 {
    let r = 1.28379167095512558561e-01 + z * (-3.25042107247001499370e-01 + z * (-2.84817495755985104766e-02
        + z * (-5.77027029648944159157e-03 + z * -2.37630166566501626084e-05)));
    let s = 1.0 + z * (3.97917223959155352819e-01 + z * (6.50222499887672944485e-02 + z * (5.08130628187576562776e-03
        + z * (1.32494738004321644526e-04 + z * -3.96022827877536812320e-06))));
    return r / s;
}

// erf(1 + s) - erx on [0.84375, 1.25].
const M64_ERX: f64 = 8.45062911510467529297e-01;
fn m64_erf_one(s: f64) -> f64 {
    let p = -2.36211856075265944077e-03 + s * (4.14856118683748331666e-01 + s * (-3.72207876035701323847e-01
        + s * (3.18346619901161753674e-01 + s * (-1.10894694282396677476e-01 + s * (3.54783043256182359371e-02
        + s * -2.16637559486879084300e-03)))));
    let q = 1.0 + s * (1.06420880400844228286e-01 + s * (5.40397917702171048937e-01 + s * (7.18286544141962662868e-02
        + s * (1.26171219808761642112e-01 + s * (1.36370839120290507362e-02 + s * 1.19844998467991074170e-02)))));
    return p / q;
}

// erfc(x) for x in [1.25, 28): exp(-x^2 - 0.5625 + R/S) / x, with x^2 = z^2 - (z - x)(z + x)
// for z the high part of x, so that -z^2 - 0.5625 is exact.
fn m64_erfc_tail(x: f64) -> f64 {
    let s = 1.0 / (x * x);
    var r: f64;
    var q: f64;
    if (x < 2.857142857142857) {
        r = -9.86494403484714822705e-03 + s * (-6.93858572707181764372e-01 + s * (-1.05586262253232909814e+01
            + s * (-6.23753324503260060396e+01 + s * (-1.62396669462573470355e+02 + s * (-1.84605092906711035994e+02
            + s * (-8.12874355063065934246e+01 + s * -9.81432934416914548592e+00))))));
        q = 1.0 + s * (1.96512716674392571292e+01 + s * (1.37657754143519042600e+02 + s * (4.34565877475229228821e+02
            + s * (6.45387271733267880336e+02 + s * (4.29008140027567833386e+02 + s * (1.08635005541779435134e+02
            + s * (6.57024977031928170135e+00 + s * -6.04244152148580987438e-02)))))));
    } else {
        r = -9.86494292470009928597e-03 + s * (-7.99283237680523006574e-01 + s * (-1.77579549177547519889e+01
            + s * (-1.60636384855821916062e+02 + s * (-6.37566443368389627722e+02 + s * (-1.02509513161107724954e+03
            + s * -4.83519191608651397019e+02)))));
        q = 1.0 + s * (3.03380607434824582924e+01 + s * (3.25792512996573918826e+02 + s * (1.53672958608443695994e+03
            + s * (3.19985821950859553908e+03 + s * (2.55305040643316442583e+03 + s * (4.74528541206955367215e+02
            + s * -2.24409524465858183362e+01))))));
    }
    let z = m64_hi(x, 21);
    return m64_exp(-z * z - 0.5625) * m64_exp((z - x) * (z + x) + r / q) / x;
}

// erf, NaN where x^2 overflows (|x| > 2^511.5, infinities too) as TF-CPU answers: Eigen's double
// erf, 1 - erfc(|x|) from exp(-x^2) and x^2's rounding error, turns that into 0 * inf.
// (TF-CPU's float64 Erf is NaN past |x| = 1.34e154, where Eigen's formula squares x; C's erf,
// CUDA's and so TF-GPU's give +-1, as this does.)
fn m64_erf(x: f64) -> f64 {
    let ax = abs(x);
    if (ax < 0.84375) {
        if (ax < 3.725290298461914e-09) {
            return x + 1.28379167095512586316e-01 * x;
        }
        return x + x * m64_erf_small(x * x);
    }
    if (ax < 1.25) {
        return m64_signed(M64_ERX + m64_erf_one(ax - 1.0), x < 0.0);
    }
    if (ax >= 6.0) {
        return m64_signed(1.0, x < 0.0);
    }
    return m64_signed(1.0 - m64_erfc_tail(ax), x < 0.0);
}

fn m64_erfc(x: f64) -> f64 {
    let ax = abs(x);
    if (ax < 0.84375) {
        if (ax < 1.3877787807814457e-17) {
            return 1.0 - x;
        }
        let y = m64_erf_small(x * x);
        if (x < 0.25) {
            return 1.0 - (x + x * y);
        }
        return 0.5 - (x * y + (x - 0.5));
    }
    if (ax < 1.25) {
        let p = m64_erf_one(ax - 1.0);
        if (x >= 0.0) {
            return (1.0 - M64_ERX) - p;
        }
        return 1.0 + (M64_ERX + p);
    }
    if (x < -6.0) {
        return 2.0;
    }
    if (ax < 28.0) {
        let r = m64_erfc_tail(ax);
        return select(2.0 - r, r, x > 0.0);
    }
    return select(f64(2.0), f64(0.0), x > 0.0);
}

// Whether y (finite) is an odd integer.
fn m64_is_odd_integer(y: f64) -> bool {
    let h = 0.5 * y;
    return abs(y) < 9007199254740992.0 && floor(y) == y && floor(h) != h;
}

// x^y for finite y and positive finite x (not 1): fdlibm's e_pow, log2(x) to about 64 bits in two
// parts, y times it likewise, then 2^(that) with the exponent's integer part split off. `s` is the
// sign of the result.
fn m64_pow_finite(ax_in: f64, y: f64, s: f64) -> f64 {
    let huge = m64_inf();
    // |y| > 2^31: overflow or underflow unless x is within 2^-20 of 1. (fdlibm takes log(x) from
    // the series x - x^2/2 + x^3/3 - x^4/4 there, but in a product with 1/ln2 that is not exact:
    // hundreds of ulp. The general path below stays within an ulp.)
    if (abs(y) > 2147483648.0) {
        if (ax_in < 0.9999990463256836) {
            return select(m64_signed(0.0, s < 0.0), m64_signed(huge, s < 0.0), y < 0.0);
        }
        if (ax_in > 1.0000009536743164) {
            return select(m64_signed(0.0, s < 0.0), m64_signed(huge, s < 0.0), y > 0.0);
        }
    }
    // ax = 2^n m, m in [sqrt(3)/2, sqrt(3)), against bp = 1 or 1.5.
    var ax = ax_in;
    var ex = m64_binade(&ax);
    var k = 0;
    if (ax >= 1.224745750427246) {
        if (ax < 1.7320499420166016) {
            k = 1;
        } else {
            ax *= 0.5;
            ex += 1;
        }
    }
    let bp = select(f64(1.0), f64(1.5), k == 1);
    let dp_h = select(f64(0.0), f64(5.84962487220764160156e-01), k == 1);
    let dp_l = select(f64(0.0), f64(1.35003920212974897128e-08), k == 1);
    // ss = s_h + s_l = (ax - bp) / (ax + bp).
    let u = ax - bp;
    let v = 1.0 / (ax + bp);
    let ss = u * v;
    let s_h = m64_hi(ss, 21);
    var t_h = m64_hi(ax + bp, 21);
    var t_l = ax - (t_h - bp);
    let s_l = v * ((u - s_h * t_h) - s_h * t_l);
    // log(ax) = 2 atanh(ss) = 2 ss + 2/3 ss^3 + ...
    var s2 = ss * ss;
    var r = s2 * s2 * (5.99999999999994648725e-01 + s2 * (4.28571428578550184252e-01 + s2 * (3.33333329818377432918e-01
        + s2 * (2.72728123808534006489e-01 + s2 * (2.30660745775561754067e-01 + s2 * 2.06975017800338417784e-01)))));
    r += s_l * (s_h + ss);
    s2 = s_h * s_h;
    t_h = m64_hi(3.0 + s2 + r, 21);
    t_l = r - ((t_h - 3.0) - s2);
    // u + v = ss (1 + ...).
    let u2 = s_h * t_h;
    let v2 = s_l * t_h + t_l * ss;
    // 2/(3 log 2) (ss + ...).
    let q_h = m64_hi(u2 + v2, 21);
    let q_l = v2 - (q_h - u2);
    let z_h = 9.61796700954437255859e-01 * q_h;
    let z_l = -7.02846165095275826516e-09 * q_h + q_l * 9.61796693925975554329e-01 + dp_l;
    // log2(ax) = ex + dp_h + z_h + z_l.
    let fex = f64(ex);
    let t1 = m64_hi(((z_h + z_l) + dp_h) + fex, 21);
    let t2 = z_l - (((t1 - fex) - dp_h) - z_h);
    // (y1 + y2) (t1 + t2), y1 the high part of y.
    let y1 = m64_hi(y, 21);
    let p_l = (y - y1) * t1 + y * t2;
    var p_h = y1 * t1;
    let z = p_l + p_h;
    // z's rounding error, to decide at the edges of the range.
    let z_err = (p_h - z) + p_l;
    if (z >= 1024.0) {
        if (z > 1024.0 || z_err + 8.0085662595372944372e-17 > 0.0) {
            return m64_signed(huge, s < 0.0);
        }
    } else if (z <= -1075.0) {
        if (z < -1075.0 || z_err <= 0.0) {
            return m64_signed(0.0, s < 0.0);
        }
    }
    // 2^(p_h + p_l) = 2^n 2^(p_h - n + p_l), n the nearest integer to z (halves away from zero).
    var n = 0;
    if (abs(z) > 0.5) {
        let nf = m64_signed(floor(abs(z) + 0.5), z < 0.0);
        n = i32(nf);
        p_h -= nf;
    }
    let e_h = m64_hi(p_l + p_h, 21);
    let e_u = e_h * 6.93147182464599609375e-01;
    let e_v = (p_l - (e_h - p_h)) * M64_LN2 + e_h * -1.90465429995776804525e-09;
    let zz = e_u + e_v;
    let w = (e_u - zz) + e_v;
    let tt = zz * zz;
    let c = zz - tt * (1.66666666666666019037e-01 + tt * (-2.77777777770155933842e-03 + tt * (6.61375632143793436117e-05
        + tt * (-1.65339022054652515390e-06 + tt * 4.13813679705723846039e-08))));
    let e_r = (zz * c) / (c - 2.0) - (w + zz * w);
    return s * m64_scale(1.0 - (e_r - zz), n);
}

// pow with C99's special cases (as glibc and Eigen answer them): x^0 = 1 and 1^y = 1 even for NaN,
// (-1)^(+-inf) = 1, a negative base only to an integer power, and the signed zeros and infinities
// that `x_neg` (x's sign bit) decides.
fn m64_pow(x: f64, y: f64, x_nan: bool, y_nan: bool, x_neg: bool) -> f64 {
    let inf = m64_inf();
    if (y == 0.0 && !y_nan) {
        return 1.0;
    }
    if (x == 1.0 && !x_nan) {
        return 1.0;
    }
    if (x_nan || y_nan) {
        return m64_nan();
    }
    let ax = abs(x);
    if (m64_is_inf(y)) {
        if (ax == 1.0) {
            return 1.0;
        }
        return select(f64(0.0), inf, (ax > 1.0) == (y > 0.0));
    }
    let odd = m64_is_odd_integer(y);
    if (ax == 0.0 || m64_is_inf(x)) {
        // +-0 and +-inf: |x|^y is 0 or inf, negative for a negative x and an odd y.
        let big = (ax == 0.0) == (y < 0.0);
        return m64_signed(select(f64(0.0), inf, big), x_neg && odd);
    }
    if (y == 1.0) {
        return x;
    }
    if (x < 0.0) {
        if (floor(y) != y) {
            return m64_nan();
        }
        return m64_pow_finite(ax, y, select(f64(1.0), f64(-1.0), odd));
    }
    if (y == 0.5) {
        return sqrt(x);
    }
    return m64_pow_finite(ax, y, 1.0);
}

const M64_PI: f64 = 3.14159265358979311600e+00;

// sin(pi x) for x < 0 (fdlibm's sin_pi in lgamma_r), 0 at the integers.
fn m64_sin_pi_negative(x: f64) -> f64 {
    if (abs(x) < 0.25) {
        return m64_sin_kernel(M64_PI * x, 0.0);
    }
    var y = -x;
    if (floor(y) == y) {
        return 0.0;
    }
    // y = |x| mod 2, in eighths of a turn.
    y *= 0.5;
    y = 2.0 * (y - floor(y));
    let n = i32(y * 4.0);
    var s: f64;
    switch (n) {
        case 0: { s = m64_sin_kernel(M64_PI * y, 0.0); }
        case 1, 2: { s = m64_cos_kernel(M64_PI * (0.5 - y), 0.0); }
        case 3, 4: { s = m64_sin_kernel(M64_PI * (1.0 - y), 0.0); }
        case 5, 6: { s = -m64_cos_kernel(M64_PI * (y - 1.5), 0.0); }
        default: { s = m64_sin_kernel(M64_PI * (y - 2.0), 0.0); }
    }
    return -s;
}

// log|Gamma(x)|: fdlibm's lgamma_r. +inf at the poles (0 and the negative integers) and at both
// infinities, as glibc (TF-CPU) answers. Near the zeros of lgamma on the negative axis (x about -2.46,
// -2.75, -3.14, ...) the reflection lgamma(x) = log(pi / |x sin(pi x)|) - lgamma(-x) cancels: the
// error there is a few ulp of the terms, not of the result.
fn m64_lgamma(x_in: f64) -> f64 {
    var x = x_in;
    let ax = abs(x);
    if (m64_is_inf(x) || x == 0.0) {
        return m64_inf();
    }
    if (ax < 8.470329472543003e-22) {
        return -m64_log(ax);
    }
    var nadj: f64 = 0.0;
    if (x < 0.0) {
        if (ax >= 4503599627370496.0) {
            return m64_inf();
        }
        let t = m64_sin_pi_negative(x);
        if (t == 0.0) {
            return m64_inf();
        }
        nadj = m64_log(M64_PI / abs(t * x));
        x = -x;
    }
    var r: f64 = 0.0;
    if (x == 1.0 || x == 2.0) {
        r = 0.0;
    } else if (x < 2.0) {
        var y: f64;
        var i: i32;
        let tc: f64 = 1.46163214496836224576e+00;
        if (x < 0.9000000953674316) {
            r = -m64_log(x);
            if (x >= 0.7315998077392578) {
                y = 1.0 - x;
                i = 0;
            } else if (x >= 0.23163998126983643) {
                y = x - (tc - 1.0);
                i = 1;
            } else {
                y = x;
                i = 2;
            }
        } else {
            if (x >= 1.7316312789916992) {
                y = 2.0 - x;
                i = 0;
            } else if (x >= 1.2316322326660156) {
                y = x - tc;
                i = 1;
            } else {
                y = x - 1.0;
                i = 2;
            }
        }
        switch (i) {
            case 0: {
                let z = y * y;
                let p1 = 7.72156649015328655494e-02 + z * (6.73523010531292681824e-02 + z * (7.38555086081402883957e-03
                    + z * (1.19270763183362067845e-03 + z * (2.20862790713908385557e-04 + z * 2.52144565451257326939e-05))));
                let p2 = z * (3.22467033424113591611e-01 + z * (2.05808084325167332806e-02 + z * (2.89051383673415629091e-03
                    + z * (5.10069792153511336608e-04 + z * (1.08011567247583939954e-04 + z * 4.48640949618915160150e-05)))));
                r += (y * p1 + p2) - 0.5 * y;
            }
            case 1: {
                let z = y * y;
                let w = z * y;
                let p1 = 4.83836122723810047042e-01 + w * (-3.27885410759859649565e-02 + w * (6.10053870246291332635e-03
                    + w * (-1.40346469989232843813e-03 + w * 3.15632070903625950361e-04)));
                let p2 = -1.47587722994593911752e-01 + w * (1.79706750811820387126e-02 + w * (-3.68452016781138256760e-03
                    + w * (8.81081882437654011382e-04 + w * -3.12754168375120860518e-04)));
                let p3 = 6.46249402391333854778e-02 + w * (-1.03142241298341437450e-02 + w * (2.25964780900612472250e-03
                    + w * (-5.38595305356740546715e-04 + w * 3.35529192635519073543e-04)));
                let p = z * p1 - (-3.63867699703950536541e-18 - w * (p2 + y * p3));
                r += -1.21486290535849611461e-01 + p;
            }
            default: {
                let p1 = y * (-7.72156649015328655494e-02 + y * (6.32827064025093366517e-01 + y * (1.45492250137234768737e+00
                    + y * (9.77717527963372745603e-01 + y * (2.28963728064692451092e-01 + y * 1.33810918536787660377e-02)))));
                let p2 = 1.0 + y * (2.45597793713041134822e+00 + y * (2.12848976379893395361e+00 + y * (7.69285150456672783825e-01
                    + y * (1.04222645593369134254e-01 + y * 3.21709242282423911810e-03))));
                r += -0.5 * y + p1 / p2;
            }
        }
    } else if (x < 8.0) {
        // lgamma(x) = lgamma(2 + y) + log((2 + y) (3 + y) ... (x - 1)).
        let i = i32(x);
        let y = x - f64(i);
        let p = y * (-7.72156649015328655494e-02 + y * (2.14982415960608852501e-01 + y * (3.25778796408930981787e-01
            + y * (1.46350472652464452805e-01 + y * (2.66422703033638609560e-02 + y * (1.84028451407337715652e-03
            + y * 3.19475326584100867617e-05))))));
        let q = 1.0 + y * (1.39200533467621045958e+00 + y * (7.21935547567138069525e-01 + y * (1.71933865632803078993e-01
            + y * (1.86459191715652901344e-02 + y * (7.77942496381893596434e-04 + y * 7.32668430744625636189e-06)))));
        r = 0.5 * y + p / q;
        var z: f64 = 1.0;
        for (var k = i - 1; k >= 2; k--) {
            z *= y + f64(k);
        }
        if (i >= 3) {
            r += m64_log(z);
        }
    } else if (x < 2.8823037615171174e+17) {
        let t = m64_log(x);
        let z = 1.0 / x;
        let y = z * z;
        let w = 4.18938533204672725052e-01 + z * (8.33333333333329678849e-02 + y * (-2.77777777728775536470e-03
            + y * (7.93650558643019558500e-04 + y * (-5.95187557450339963135e-04 + y * (8.36339918996282139126e-04
            + y * -1.63092934096575273989e-03)))));
        r = (x - 0.5) * (t - 1.0) + w;
    } else {
        r = x * (m64_log(x) - 1.0);
    }
    if (x_in < 0.0) {
        r = nadj - r;
    }
    return r;
}

// digamma as Eigen computes it (TF-CPU's kernel): the reflection psi(1 - x) = psi(x) + pi cot(pi x)
// for x <= 0 (NaN at the poles and at -inf), the recurrence psi(x + 1) = psi(x) + 1/x up to 10,
// then the asymptotic series.
fn m64_digamma(x_in: f64) -> f64 {
    var x = x_in;
    var reflection: f64 = 0.0;
    let negative = x <= 0.0;
    if (negative) {
        var p = floor(x);
        if (p == x) {
            return m64_nan();
        }
        var nz = x - p;
        if (nz != 0.5) {
            if (nz > 0.5) {
                p += 1.0;
                nz = x - p;
            }
            reflection = M64_PI / m64_tan(M64_PI * nz);
        }
        x = 1.0 - x;
    }
    var s = x;
    var w: f64 = 0.0;
    while (s < 10.0) {
        w += 1.0 / s;
        s += 1.0;
    }
    var y: f64 = 0.0;
    if (s < 1.0e17) {
        let z = 1.0 / (s * s);
        y = z * (((((((8.33333333333333333333e-2 * z - 2.10927960927960927961e-2) * z + 7.57575757575757575758e-3) * z
            - 4.16666666666666666667e-3) * z + 3.96825396825396825397e-3) * z - 8.33333333333333333333e-3) * z
            + 8.33333333333333333333e-2));
    }
    y = m64_log(s) - (0.5 / s) - y - w;
    return select(y, y - reflection, negative);
}
