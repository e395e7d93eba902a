// Accurate float32 math, prepended to every shader that needs a transcendental function.
//
// Why our own: WGSL's built-in exp/log/pow/tanh/sin... carry the driver's precision, which Vulkan,
// Metal and D3D let be poor (lavapipe's pow is thousands of ULP off, its tanh over a thousand near
// 0), so results would differ by vendor and training would drift from TF-CPU. Each function here
// is within a few ULP of the exact result over its whole float32 domain (the sweep in
// tests/python/test_accuracy.py measures it): Cody-Waite or Payne-Hanek range reduction and
// polynomials, as fdlibm, Eigen and CUDA's libdevice do.
//
// Nothing here relies on `fma` being fused (lavapipe splits it into a product and a sum), nor on the
// driver keeping floating-point expressions as written: Mesa, for one, rewrites `(a + b) - a` to
// `b`. Where the rounding error of a sum or product must be recovered exactly, the operands pass
// through `math_keep`, which the optimiser cannot see through, and products are split by masking
// bits (Dekker's algorithm). tests/math_library.rs checks these assumptions on the adapter. NaN and
// infinity are recognised from the bits, because WGSL lets implementations assume finite math.
// Names start with `math_` so that they cannot collide with the including shader's own.

fn math_is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn math_is_inf(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) == 0x7f800000u;
}

fn math_nan() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}

fn math_inf() -> f32 {
    return bitcast<f32>(0x7f800000u);
}

// `magnitude` with the sign bit of `sign_of` (so -0 stays -0).
fn math_copysign(magnitude: f32, sign_of: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(magnitude) & 0x7fffffffu) | (bitcast<u32>(sign_of) & 0x80000000u));
}

// v, opaque to the optimiser: the bits pass through an integer operation whose operand it cannot
// know (it sets the low bit of a NaN, so every value keeps its class). A `select` is not enough:
// Mesa distributes a sum over it when the other arm is a constant.
fn math_keep(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) | u32(math_is_nan(v)));
}

// The rounding error of `sum` = a + b, for |a| >= |b| (Fast2Sum).
fn math_sum_error(a: f32, b: f32, sum: f32) -> f32 {
    return b - (math_keep(sum) - a);
}

// The upper 12 significant bits of v.
fn math_split_high(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) & 0xfffff000u);
}

// The rounding error of `product` = a * b, exactly (Dekker's product on 12-bit halves, each partial
// product exact, so no fused fma is needed).
fn math_product_error(a: f32, b: f32, product: f32) -> f32 {
    let a_hi = math_split_high(a);
    let a_lo = a - a_hi;
    let b_hi = math_split_high(b);
    let b_lo = b - b_hi;
    return (((a_hi * b_hi - product) + a_hi * b_lo) + a_lo * b_hi) + a_lo * b_lo;
}

// 2^k exactly, for k in [-126, 127].
fn math_pow2i(k: i32) -> f32 {
    return bitcast<f32>(u32(k + 127) << 23u);
}

// y * 2^k for k in [-226, 254], rounding once: each factor is a normal power of two, and only the
// last product can leave the normal range.
fn math_ldexp(y: f32, k: i32) -> f32 {
    if (k > 127) {
        return y * math_pow2i(127) * math_pow2i(k - 127);
    }
    if (k < -126) {
        return y * math_pow2i(k + 100) * math_pow2i(-100);
    }
    return y * math_pow2i(k);
}

// ln 2 in two parts; LN2_HI has 15 significant bits, so n * LN2_HI is exact for |n| < 512.
const MATH_LN2_HI: f32 = 0.693145751953125;
const MATH_LN2_LO: f32 = 1.428606765330187e-06;
const MATH_INV_LN2: f32 = 1.4426950408889634;

// expm1(r) for |r| <= 0.35: Taylor to r^8, whose remainder is under 2^-30 relative.
fn math_expm1_small(r: f32) -> f32 {
    var q = fma(r, 1.0 / 40320.0, 1.0 / 5040.0);
    q = fma(q, r, 1.0 / 720.0);
    q = fma(q, r, 1.0 / 120.0);
    q = fma(q, r, 1.0 / 24.0);
    q = fma(q, r, 1.0 / 6.0);
    q = fma(q, r, 0.5);
    return fma(r * r, q, r);
}

// exp(x) = 2^n * exp(r), r = x - n ln 2 in [-0.35, 0.35]; returns (exp(r), n), so that callers
// can scale before the one rounding into the subnormal range.
fn math_exp_parts(x: f32) -> vec2<f32> {
    let n = round(x * MATH_INV_LN2);
    let r = fma(-n, MATH_LN2_LO, fma(-n, MATH_LN2_HI, x));
    return vec2<f32>(1.0 + math_expm1_small(r), n);
}

fn math_exp(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    // exp rounds to infinity past ln(FLT_MAX), and to zero below ln(2^-150).
    if (x > 88.72283172607422) { return math_inf(); }
    if (x < -103.97208404541016) { return 0.0; }
    let parts = math_exp_parts(x);
    return math_ldexp(parts.x, i32(parts.y));
}

// 2^x, as exp(x ln 2) with the product kept in two parts.
fn math_exp2(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (x >= 128.0) { return math_inf(); }
    if (x < -150.0) { return 0.0; }
    let n = round(x);
    // x - n is exact; ln 2 in two parts keeps r to within an ulp.
    let f = x - n;
    let r = fma(f, 0.6931471824645996, f * -1.904654290582768e-09);
    return math_ldexp(1.0 + math_expm1_small(r), i32(n));
}

fn math_expm1(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (x > 88.72283172607422) { return math_inf(); }
    // exp(x) under half an ulp of 1.
    if (x < -17.5) { return -1.0; }
    let n = round(x * MATH_INV_LN2);
    if (n == 0.0) { return math_expm1_small(x); }
    let r = fma(-n, MATH_LN2_LO, fma(-n, MATH_LN2_HI, x));
    let p = math_expm1_small(r);
    let k = i32(n);
    // 2^k (1 + p) - 1, arranged so that the subtraction of 1 is exact or harmless.
    if (k < 0) { return math_ldexp(1.0 + p, k) - 1.0; }
    if (k <= 23) { return math_ldexp((1.0 - math_pow2i(-k)) + p, k); }
    return math_ldexp((p - math_pow2i(-min(k, 126))) + 1.0, k);
}

// Splits a positive finite x into 2^k * m with m in [sqrt(1/2), sqrt(2)); returns (m - 1, k).
// m - 1 is exact.
fn math_log_reduce(x: f32) -> vec2<f32> {
    var bits = bitcast<u32>(x);
    var k = 0;
    if (bits < 0x00800000u) {
        // Subnormal: scale up by 2^25 first.
        bits = bitcast<u32>(x * 33554432.0);
        k = -25;
    }
    bits += 0x3f800000u - 0x3f3504f3u;
    k += i32(bits >> 23u) - 127;
    bits = (bits & 0x007fffffu) + 0x3f3504f3u;
    return vec2<f32>(bitcast<f32>(bits) - 1.0, f32(k));
}

// fdlibm's logf: log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f); under 1 ulp.
fn math_log(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (x < 0.0) { return math_nan(); }
    if (x == 0.0) { return -math_inf(); }
    if (math_is_inf(x)) { return x; }
    let reduced = math_log_reduce(x);
    let f = reduced.x;
    let k = reduced.y;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * fma(w, 0.24279078841209412, 0.40000972151756287);
    let t2 = z * fma(w, 0.28498786687850952, 0.66666662693023682);
    let hfsq = 0.5 * f * f;
    // ln 2 split as fdlibm's logf splits it (0x3f317180 + 0x3717f7d1).
    return s * (hfsq + t1 + t2) + k * 9.0580006144591607e-06 - hfsq + f + k * 0.69313812255859375;
}

fn math_log1p(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (x < -1.0) { return math_nan(); }
    if (x == -1.0) { return -math_inf(); }
    if (math_is_inf(x)) { return x; }
    let u = 1.0 + x;
    // The exact rounding error of 1 + x (Fast2Sum, larger operand first), added back to first
    // order: log(u + c) = log(u) + c / u.
    let c = select(math_sum_error(x, 1.0, u), math_sum_error(1.0, x, u), abs(x) <= 1.0);
    return math_log(u) + c / u;
}

// log(x) as an unevaluated sum hi + lo, good to about 2^-40 relative, for positive finite x: what
// pow needs, since y * log(x) up to 89 must be right to 2^-25 absolute.
fn math_log_two_part(x: f32) -> vec2<f32> {
    let reduced = math_log_reduce(x);
    let f = reduced.x;
    let k = reduced.y;
    // log(1 + f) = 2 atanh(s), s = f / (2 + f), with s in two parts.
    let d = 2.0 + f;
    let d_lo = math_sum_error(2.0, f, d);
    let s_hi = f / d;
    // f - s_hi (d + d_lo), the product's rounding error recovered exactly.
    let sd = s_hi * d;
    let s_lo = (((f - sd) - math_product_error(s_hi, d, sd)) - s_hi * d_lo) / d;
    let z = s_hi * s_hi;
    // 2 atanh(s) - 2 s = s^3 (2/3 + 2/5 s^2 + ...); s^2 <= 0.0295, so seven terms are plenty.
    var q = fma(z, 2.0 / 15.0, 2.0 / 13.0);
    q = fma(q, z, 2.0 / 11.0);
    q = fma(q, z, 2.0 / 9.0);
    q = fma(q, z, 2.0 / 7.0);
    q = fma(q, z, 2.0 / 5.0);
    q = fma(q, z, 2.0 / 3.0);
    // s_lo enters the cubic term to first order too (2 s^2 s_lo), which is 2^-31 of the result.
    let tail = 2.0 * s_lo * (1.0 + z) + s_hi * z * q;
    let head = 2.0 * s_hi;
    // k ln 2 + head + tail, the first sum exact (Fast2Sum on the larger part).
    let kl = k * MATH_LN2_HI;
    let big = select(head, kl, abs(kl) > abs(head));
    let small = select(kl, head, abs(kl) > abs(head));
    let hi = big + small;
    let lo = math_sum_error(big, small, hi) + tail + k * MATH_LN2_LO;
    let sum = hi + lo;
    return vec2<f32>(sum, math_sum_error(hi, lo, sum));
}

fn math_is_odd_integer(y: f32) -> bool {
    return floor(y) == y && abs(y) < 16777216.0 && (i32(y) & 1) == 1;
}

// x^y for finite positive x: exp(y log x) with y log x in two parts.
fn math_pow_positive(x: f32, y: f32) -> f32 {
    let l = math_log_two_part(x);
    let t_hi = y * l.x;
    if (t_hi > 88.75) { return math_inf(); }
    if (t_hi < -104.0) { return 0.0; }
    let t_lo = math_product_error(y, l.x, t_hi) + y * l.y;
    let t = t_hi + t_lo;
    if (t > 88.72283172607422) { return math_inf(); }
    if (t < -103.97208404541016) { return 0.0; }
    let n = round(t_hi * MATH_INV_LN2);
    let r = fma(-n, MATH_LN2_LO, fma(-n, MATH_LN2_HI, t_hi)) + t_lo;
    return math_ldexp(1.0 + math_expm1_small(r), i32(n));
}

// pow with C99's (and TF's) special cases; WGSL's pow is undefined for x < 0 and infinities.
fn math_pow(x: f32, y: f32) -> f32 {
    let inf = math_inf();
    if (y == 0.0) { return 1.0; }
    if (math_is_nan(x) || math_is_nan(y)) { return math_nan(); }
    if (math_is_inf(y)) {
        let ax = abs(x);
        if (ax == 1.0) { return 1.0; }
        return select(0.0, inf, (ax > 1.0) == (y > 0.0));
    }
    if (math_is_inf(x)) {
        let odd = math_is_odd_integer(y);
        if (x > 0.0) { return select(0.0, inf, y > 0.0); }
        if (y > 0.0) { return select(inf, -inf, odd); }
        return select(0.0, -0.0, odd);
    }
    if (x == 0.0) {
        if (y > 0.0) { return select(0.0, x, math_is_odd_integer(y)); }
        return select(inf, 1.0 / x, math_is_odd_integer(y));
    }
    if (x < 0.0) {
        if (floor(y) != y) { return math_nan(); }
        let magnitude = math_pow_positive(-x, y);
        return select(magnitude, -magnitude, math_is_odd_integer(y));
    }
    return math_pow_positive(x, y);
}

// tanh |x| = t / (t + 2), t = expm1(2|x|): no cancellation anywhere, about 2 ulp.
fn math_tanh(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    let a = abs(x);
    // Past 9, tanh rounds to 1 (1 - tanh < 2^-25).
    if (a > 9.0) { return math_copysign(1.0, x); }
    let t = math_expm1(2.0 * a);
    return math_copysign(t / (t + 2.0), x);
}

fn math_sigmoid(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (x >= 0.0) { return 1.0 / (1.0 + math_exp(-x)); }
    // exp(x) / (1 + exp(x)) keeps the tiny results that 1 / (1 + inf) would lose.
    let e = math_exp(x);
    return e / (1.0 + e);
}

// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)).
fn math_softplus(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    return max(x, 0.0) + math_log1p(math_exp(-abs(x)));
}

// sqrt and 1/sqrt refined by a Newton step: WGSL allows inverseSqrt 2 ulp and sqrt more.
// sqrt and 1/sqrt refined by a Newton step with an exact residual: WGSL allows inverseSqrt 2 ulp
// and sqrt more. Arguments outside [2^-100, 2^100] are scaled by 2^64 first, so that neither
// subnormals (which some drivers flush) nor overflowing squares reach the step.
// (scale, sqrt(scale)).
fn math_sqrt_scale(x: f32) -> vec2<f32> {
    if (x < 7.888609052210118e-31) { return vec2<f32>(18446744073709551616.0, 4294967296.0); }
    if (x > 1.2676506002282294e30) { return vec2<f32>(5.421010862427522e-20, 2.3283064365386963e-10); }
    return vec2<f32>(1.0, 1.0);
}

fn math_rsqrt(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (x < 0.0) { return math_nan(); }
    if (x == 0.0) { return math_copysign(math_inf(), x); }
    if (math_is_inf(x)) { return 0.0; }
    let scale = math_sqrt_scale(x);
    let v = x * scale.x;
    let y = inverseSqrt(v);
    // 1 - v y^2, with both products' rounding errors.
    let vy = v * y;
    let vy_err = math_product_error(v, y, vy);
    let vyy = vy * y;
    let e = ((1.0 - vyy) - math_product_error(vy, y, vyy)) - vy_err * y;
    return fma(0.5 * y, e, y) * scale.y;
}

fn math_sqrt(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (x < 0.0) { return math_nan(); }
    if (x == 0.0 || math_is_inf(x)) { return x; }
    let scale = math_sqrt_scale(x);
    let v = x * scale.x;
    let s = v * inverseSqrt(v);
    // s + (v - s^2) / (2 s).
    let ss = s * s;
    let residual = (v - ss) - math_product_error(s, s, ss);
    return (s + residual * 0.5 / s) / scale.y;
}

// erfc(x) exp(x^2) on four intervals, each a degree-12 fit in x - c (exact, as x is within a factor
// of two of c): relative error under 1e-8 in float64 (scripts/fit-erfc.py).
const MATH_ERFC_SCALED_0: array<f32, 13> = array<f32, 13>(0.5069376230239868, -0.3679727017879486, 0.23095813393592834, -0.1298360675573349, 0.06679054349660873, -0.03189726173877716, 0.014289194718003273, -0.006051558069884777, 0.0024377545341849327, -0.0009380158153362572, 0.0003451529482845217, -0.00012779638927895576, 5.117590626468882e-05);
const MATH_ERFC_SCALED_1: array<f32, 13> = array<f32, 13>(0.32158541679382324, -0.1636229157447815, 0.076151043176651, -0.03293090686202049, 0.013377340510487556, -0.0051459562964737415, 0.0018861352000385523, -0.0006619507912546396, 0.00022331015497911721, -7.251388888107613e-05, 2.2844629711471498e-05, -7.456134881067555e-06, 2.1726320937887067e-06);
const MATH_ERFC_SCALED_2: array<f32, 13> = array<f32, 13>(0.17900115251541138, -0.054372258484363556, 0.01588437147438526, -0.004479431081563234, 0.0012230389984324574, -0.00032412336440756917, 8.355423051398247e-05, -2.0997400497435592e-05, 5.1470042308210395e-06, -1.219575551658636e-06, 2.873574942441337e-07, -7.773640930963666e-08, 1.7043134903360624e-08);
const MATH_ERFC_SCALED_3: array<f32, 13> = array<f32, 13>(0.07980005443096161, -0.011178405955433846, 0.001551209483295679, -0.0002132981171598658, 2.9067663490423e-05, -3.925199962395709e-06, 5.263054845272563e-07, -7.066324059223916e-08, 9.196139849620977e-09, -1.0596621358160974e-09, 1.4997321440279876e-10, -3.242234952738343e-11, 3.6425289867692e-12);

fn math_horner13(c: array<f32, 13>, t: f32) -> f32 {
    var acc = c[12];
    for (var i = 11; i >= 0; i--) {
        acc = fma(acc, t, c[i]);
    }
    return acc;
}

// erfc(x) for x >= 0.5: exp(-x^2) times the fit above, x^2 kept in two parts.
fn math_erfc_tail(x: f32) -> f32 {
    if (x > 10.1) { return 0.0; }
    var scaled: f32;
    if (x < 1.0) {
        scaled = math_horner13(MATH_ERFC_SCALED_0, x - 0.75);
    } else if (x < 2.0) {
        scaled = math_horner13(MATH_ERFC_SCALED_1, x - 1.5);
    } else if (x < 4.0) {
        scaled = math_horner13(MATH_ERFC_SCALED_2, x - 3.0);
    } else {
        scaled = math_horner13(MATH_ERFC_SCALED_3, x - 7.0);
    }
    let sq = x * x;
    let sq_lo = math_product_error(x, x, sq);
    // exp(-sq - sq_lo) = exp(-sq) (1 - sq_lo), with the power of two applied last so that a
    // subnormal result is rounded once.
    let e = math_exp_parts(-sq);
    return math_ldexp(e.x * (1.0 - sq_lo) * scaled, i32(e.y));
}

// erf on [-1/2, 1/2]: x times the Taylor series of erf(x) / x in x^2 (remainder under 2^-30).
fn math_erf_small(x: f32) -> f32 {
    let z = x * x;
    var q = fma(z, -1.492565035840625e-05, 0.00012055332981789664);
    q = fma(q, z, -0.0008548327023450852);
    q = fma(q, z, 0.005223977625442188);
    q = fma(q, z, -0.026866170645131252);
    q = fma(q, z, 0.11283791670955126);
    q = fma(q, z, -0.37612638903183754);
    return x * fma(q, z, 1.1283791670955126);
}

// Beyond 1/2, erf = 1 - erfc, where erfc < 0.48 so its error shrinks in the difference.
fn math_erf(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (abs(x) < 0.5) { return math_erf_small(x); }
    return math_copysign(1.0 - math_erfc_tail(abs(x)), x);
}

fn math_erfc(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (x < -0.5) { return 2.0 - math_erfc_tail(-x); }
    if (x < 0.5) { return 1.0 - math_erf_small(x); }
    return math_erfc_tail(x);
}

// sin and cos of |r| <= pi/4 (plus a little): Taylor polynomials, remainders under 2^-28.
fn math_sin_kernel(r: f32) -> f32 {
    let z = r * r;
    var q = fma(z, 2.7557319223985893e-06, -1.9841269841269841e-04);
    q = fma(q, z, 8.3333333333333333e-03);
    q = fma(q, z, -1.6666666666666667e-01);
    return fma(r * z, q, r);
}

fn math_cos_kernel(r: f32) -> f32 {
    let z = r * r;
    var q = fma(z, -2.7557319223985888e-07, 2.4801587301587302e-05);
    q = fma(q, z, -1.3888888888888889e-03);
    q = fma(q, z, 4.1666666666666667e-02);
    return fma(z * z, q, fma(z, -0.5, 1.0));
}

// 2/pi in 32-bit words, behind one zero word (see math_reduce_large).
const MATH_TWO_OVER_PI: array<u32, 10> = array<u32, 10>(
    0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
    0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u, 0xb7246e3au);

// The high and low words of the 64-bit product a * b, from 16-bit halves (WGSL has no 64-bit
// integers). Shared by Payne-Hanek below, Philox (random.wgsl) and int64 multiplication.
fn math_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let lo_lo = a_lo * b_lo;
    let hi_lo = a_hi * b_lo;
    let lo_hi = a_lo * b_hi;
    let middle = (lo_lo >> 16u) + (hi_lo & 0xffffu) + (lo_hi & 0xffffu);
    return vec2<u32>(a_hi * b_hi + (hi_lo >> 16u) + (lo_hi >> 16u) + (middle >> 16u), a * b);
}

fn math_window_word(index: u32, shift: u32) -> u32 {
    let head = MATH_TWO_OVER_PI[index];
    if (shift == 0u) { return head; }
    return (head << shift) | (MATH_TWO_OVER_PI[index + 1u] >> (32u - shift));
}

// Payne-Hanek: |x| * 2/pi mod 4 from 96 bits of 2/pi, for |x| >= 4096. Returns (r, quadrant), r in
// [-pi/4, pi/4] with |x| = r + (quadrant + 4j) pi / 2.
fn math_reduce_large(ax: f32) -> vec2<f32> {
    let bits = bitcast<u32>(ax);
    let e = bits >> 23u;
    let m = (bits & 0x7fffffu) | 0x800000u;
    // |x| = m 2^(e - 150). Bits of 2/pi that would only add multiples of 4 are skipped; with the
    // window starting at bit e - 120 of the padded table, the low 96 bits of m * window hold
    // |x| * 2/pi mod 4 scaled by 2^94.
    let start = e - 120u;
    let index = start / 32u;
    let shift = start % 32u;
    let w0 = math_window_word(index, shift);
    let w1 = math_window_word(index + 1u, shift);
    let w2 = math_window_word(index + 2u, shift);
    let p2 = math_mul_wide(m, w2);
    let p1 = math_mul_wide(m, w1);
    let r2 = p2.y;
    let r1 = p1.y + p2.x;
    let r0 = m * w0 + p1.x + select(0u, 1u, r1 < p1.y);
    var quadrant = r0 >> 30u;
    // 64 bits of the fraction, as a two's-complement value in [-1/2, 1/2).
    var f_hi = (r0 << 2u) | (r1 >> 30u);
    var f_lo = (r1 << 2u) | (r2 >> 30u);
    var negative = false;
    if ((f_hi & 0x80000000u) != 0u) {
        quadrant += 1u;
        negative = true;
        f_hi = ~f_hi;
        f_lo = ~f_lo + 1u;
        f_hi += select(0u, 1u, f_lo == 0u);
    }
    var scale = 0;
    if (f_hi == 0u) {
        f_hi = f_lo;
        f_lo = 0u;
        scale = 32;
    }
    let lz = countLeadingZeros(f_hi);
    if (lz > 0u) {
        f_hi = (f_hi << lz) | (f_lo >> (32u - lz));
        f_lo = f_lo << lz;
    }
    scale += i32(lz);
    // The top 48 bits as two exact floats, then times pi/2 in two parts.
    let hi = f32(f_hi >> 8u) * math_pow2i(-24 - scale);
    let lo = f32(((f_hi & 0xffu) << 16u) | (f_lo >> 16u)) * math_pow2i(-48 - scale);
    let r_hi = hi * 1.5707963705062866;
    let r_lo = math_product_error(hi, 1.5707963705062866, r_hi) + (hi * -4.371139000186241e-08 + lo * 1.5707963705062866);
    let r = r_hi + r_lo;
    return vec2<f32>(select(r, -r, negative), f32(quadrant & 3u));
}

// x = r + quadrant pi/2 (mod 2 pi), |r| <= pi/4: Cody-Waite below 4096, Payne-Hanek above. The
// first three parts of pi/2 (Eigen's, for adapters without a fused fma) have at most 12
// significant bits, so for n < 4096 each n * part and each difference is exact.
fn math_reduce(x: f32) -> vec2<f32> {
    let ax = abs(x);
    var reduced: vec2<f32>;
    if (ax < 4096.0) {
        let n = round(ax * 0.63661977236758134);
        var r = ax - n * 1.5703125;
        r = r - n * 0.000483989715576171875;
        r = r + n * 1.62865035235881805419921875e-07;
        r = r + n * 5.5644315544167710640977020375430583953857421875e-11;
        reduced = vec2<f32>(r, f32(u32(n) & 3u));
    } else {
        reduced = math_reduce_large(ax);
    }
    if (x < 0.0) {
        // sin(-x) = -sin(x): negate r and the quadrant.
        reduced = vec2<f32>(-reduced.x, f32((4u - u32(reduced.y)) & 3u));
    }
    return reduced;
}

fn math_sin(x: f32) -> f32 {
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    // Keeps -0 and skips the reduction where sin x rounds to x.
    if (abs(x) < 0.000244140625) { return x; }
    let reduced = math_reduce(x);
    let q = u32(reduced.y);
    let value = select(math_sin_kernel(reduced.x), math_cos_kernel(reduced.x), (q & 1u) == 1u);
    return select(value, -value, q >= 2u);
}

fn math_cos(x: f32) -> f32 {
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    let reduced = math_reduce(x);
    let q = u32(reduced.y);
    let value = select(math_cos_kernel(reduced.x), math_sin_kernel(reduced.x), (q & 1u) == 1u);
    return select(value, -value, q == 1u || q == 2u);
}

fn math_tan(x: f32) -> f32 {
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    if (abs(x) < 0.000244140625) { return x; }
    let reduced = math_reduce(x);
    let s = math_sin_kernel(reduced.x);
    let c = math_cos_kernel(reduced.x);
    return select(s / c, -c / s, (u32(reduced.y) & 1u) == 1u);
}

// A running sum with Kahan's compensation: the low part each addition loses is kept apart and fed
// back, so the error does not grow with the number of terms (a plain running sum's grows like n).
// `math_keep` stops the driver from folding the compensation away (Mesa rewrites (t - s) - y to
// 0). Once the sum is not finite the compensation is dropped, so infinities and NaN propagate as
// in a plain sum.
struct MathSum {
    total: f32,
    // The negated low part lost so far (Kahan's c).
    lost: f32,
}

fn math_sum_add(acc: ptr<function, MathSum>, x: f32) {
    let y = x - (*acc).lost;
    let t = (*acc).total + y;
    let finite = (bitcast<u32>(t) & 0x7f800000u) != 0x7f800000u;
    (*acc).lost = select(0.0, (math_keep(t) - (*acc).total) - y, finite);
    (*acc).total = t;
}

fn math_sum_value(acc: MathSum) -> f32 {
    return acc.total - acc.lost;
}

// Four compensated sums side by side (math_sum_add on each lane), for kernels that read vec4s.
struct MathSum4 {
    total: vec4<f32>,
    lost: vec4<f32>,
}

fn math_sum4_add(acc: ptr<function, MathSum4>, x: vec4<f32>) {
    let y = x - (*acc).lost;
    let t = (*acc).total + y;
    let finite = (bitcast<vec4<u32>>(t) & vec4<u32>(0x7f800000u)) != vec4<u32>(0x7f800000u);
    let kept = vec4<f32>(math_keep(t.x), math_keep(t.y), math_keep(t.z), math_keep(t.w));
    (*acc).lost = select(vec4<f32>(), (kept - (*acc).total) - y, finite);
    (*acc).total = t;
}

fn math_sum4_value(acc: MathSum4) -> vec4<f32> {
    return acc.total - acc.lost;
}

// sinh |x| = (t + t / (t + 1)) / 2, t = expm1(|x|): no cancellation near 0 (fdlibm). Past 9 the
// second term is below an ulp, and exp(|x|) / 2 is scaled so that it overflows only where sinh does.
fn math_sinh(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    let a = abs(x);
    if (a < 0.000244140625) { return x; }
    if (a < 9.0) {
        let t = math_expm1(a);
        return math_copysign(0.5 * (t + t / (t + 1.0)), x);
    }
    if (a > 89.415985) { return math_copysign(math_inf(), x); }
    let parts = math_exp_parts(a);
    return math_copysign(math_ldexp(parts.x, i32(parts.y) - 1), x);
}

// cosh |x|: 1 + t^2 / (2 (1 + t)) near 0 (t = expm1(|x|)), (e + 1/e) / 2 beyond, exp / 2 past 9.
fn math_cosh(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    let a = abs(x);
    if (a < 0.3465735902799726) {
        let t = math_expm1(a);
        return 1.0 + (t * t) / (2.0 * (1.0 + t));
    }
    if (a < 9.0) {
        let e = math_exp(a);
        return 0.5 * e + 0.5 / e;
    }
    if (a > 89.415985) { return math_inf(); }
    let parts = math_exp_parts(a);
    return math_ldexp(parts.x, i32(parts.y) - 1);
}

// asinh |x| = log1p(a + a^2 / (1 + sqrt(1 + a^2))) up to 2, log(2a + 1 / (a + sqrt(a^2 + 1))) to
// 2^28, log(a) + log 2 beyond (fdlibm).
fn math_asinh(x: f32) -> f32 {
    if (math_is_nan(x) || math_is_inf(x)) { return x; }
    let a = abs(x);
    var r: f32;
    if (a < 0.000244140625) {
        return x;
    } else if (a <= 2.0) {
        let a2 = a * a;
        r = math_log1p(a + a2 / (1.0 + math_sqrt(1.0 + a2)));
    } else if (a < 268435456.0) {
        r = math_log(2.0 * a + 1.0 / (math_sqrt(a * a + 1.0) + a));
    } else {
        r = math_log(a) + 0.6931471805599453;
    }
    return math_copysign(r, x);
}

// acosh x (x >= 1): log1p(t + sqrt(2t + t^2)), t = x - 1 (exact), up to 2; log(2x - 1 / (x +
// sqrt(x^2 - 1))) to 2^28; log(x) + log 2 beyond (fdlibm).
fn math_acosh(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (x < 1.0) { return math_nan(); }
    if (math_is_inf(x)) { return x; }
    if (x <= 2.0) {
        let t = x - 1.0;
        return math_log1p(t + math_sqrt(2.0 * t + t * t));
    }
    if (x < 268435456.0) {
        return math_log(2.0 * x - 1.0 / (x + math_sqrt(x * x - 1.0)));
    }
    return math_log(x) + 0.6931471805599453;
}

// atanh |x| = log1p(2a + 2a^2 / (1 - a)) / 2 below 1/2, log1p(2a / (1 - a)) / 2 above (fdlibm).
fn math_atanh(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    let a = abs(x);
    if (a > 1.0) { return math_nan(); }
    if (a == 1.0) { return math_copysign(math_inf(), x); }
    if (a < 0.000244140625) { return x; }
    var r: f32;
    if (a < 0.5) {
        let twice = a + a;
        r = 0.5 * math_log1p(twice + twice * a / (1.0 - a));
    } else {
        r = 0.5 * math_log1p((a + a) / (1.0 - a));
    }
    return math_copysign(r, x);
}

// atan2(y, x): fdlibm's atan2f (the quadrant from both signs, zero and infinite operands as C's
// atan2, atan of |y / x| in between, pi's low part added back in the left half-plane).
fn math_atan2(y: f32, x: f32) -> f32 {
    if (math_is_nan(x) || math_is_nan(y)) { return x + y; }
    let pi = 3.1415927410125732;
    let pi_lo = -8.7422776573e-08;
    let half_pi = 1.5707963705062866;
    let x_negative = (bitcast<u32>(x) & 0x80000000u) != 0u;
    let m = select(0u, 2u, x_negative) + select(0u, 1u, (bitcast<u32>(y) & 0x80000000u) != 0u);
    if (y == 0.0) {
        if (m < 2u) { return y; }
        return select(pi, -pi, m == 3u);
    }
    if (x == 0.0) { return math_copysign(half_pi, y); }
    if (math_is_inf(x)) {
        if (math_is_inf(y)) {
            return math_copysign(select(0.78539818525314331, 2.3561944961547852, x_negative), y);
        }
        return math_copysign(select(0.0, pi, x_negative), y);
    }
    if (math_is_inf(y)) { return math_copysign(half_pi, y); }
    let k = i32((bitcast<u32>(y) >> 23u) & 0xffu) - i32((bitcast<u32>(x) >> 23u) & 0xffu);
    var z: f32;
    if (k > 26) {
        z = half_pi + 0.5 * pi_lo;
    } else if (x_negative && k < -26) {
        z = 0.0;
    } else {
        z = math_atan(abs(y / x));
    }
    switch m {
        case 0u: { return z; }
        case 1u: { return -z; }
        case 2u: { return pi - (z - pi_lo); }
        default: { return (z - pi_lo) - pi; }
    }
}

// atan: fdlibm's atanf (reduction to |x| < 7/16 around atan(1/2), atan(1), atan(3/2) and pi/2,
// each in two parts, then an odd polynomial).
fn math_atan(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    let a = abs(x);
    if (a >= 67108864.0) { return math_copysign(1.5707963267948966, x); }
    if (a < 0.000244140625) { return x; }
    var id = -1;
    var t = a;
    if (a >= 0.4375) {
        if (a < 0.6875) {
            id = 0;
            t = (2.0 * a - 1.0) / (2.0 + a);
        } else if (a < 1.1875) {
            id = 1;
            t = (a - 1.0) / (a + 1.0);
        } else if (a < 2.4375) {
            id = 2;
            t = (a - 1.5) / (1.0 + 1.5 * a);
        } else {
            id = 3;
            t = -1.0 / a;
        }
    }
    let z = t * t;
    let w = z * z;
    let s1 = z * (0.33333328366 + w * (0.14253635705 + w * 0.061687607318));
    let s2 = w * (-0.19999158382 + w * -0.10648017377);
    if (id < 0) { return math_copysign(t - t * (s1 + s2), x); }
    var hi = 0.46364760399;
    var lo = 5.0121582440e-09;
    if (id == 1) { hi = 0.78539812565; lo = 3.7748947079e-08; }
    if (id == 2) { hi = 0.98279368877; lo = 3.4473217170e-08; }
    if (id == 3) { hi = 1.5707962513; lo = 7.5497894159e-08; }
    return math_copysign(hi - ((t * (s1 + s2) - lo) - t), x);
}

// asin x = atan(x / sqrt((1 - x)(1 + x))): 1 - x is exact where it matters (|x| near 1).
fn math_asin(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    let a = abs(x);
    if (a > 1.0) { return math_nan(); }
    if (a == 1.0) { return math_copysign(1.5707963267948966, x); }
    if (a < 0.000244140625) { return x; }
    return math_copysign(math_atan(a / math_sqrt((1.0 - a) * (1.0 + a))), x);
}

// acos x = 2 atan(sqrt((1 - x) / (1 + x))).
fn math_acos(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (abs(x) > 1.0) { return math_nan(); }
    if (x == -1.0) { return 3.141592653589793; }
    return 2.0 * math_atan(math_sqrt((1.0 - x) / (1.0 + x)));
}

// --- Two-part ("double-float") values for lgamma: hi + lo, |lo| <= ulp(hi) / 2, about 2^-44
// relative. lgamma near its negative zeros is the difference of two terms that agree to many bits,
// so each must be known far past float32's precision for the difference to be right.

// a + b as hi + lo, the rounding error recovered exactly whichever operand is larger.
fn math_two_sum(a: f32, b: f32) -> vec2<f32> {
    let a_larger = abs(a) >= abs(b);
    let big = select(b, a, a_larger);
    let small = select(a, b, a_larger);
    let sum = big + small;
    return vec2<f32>(sum, math_sum_error(big, small, sum));
}

fn math_two_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let head = math_two_sum(a.x, b.x);
    return math_two_sum(head.x, head.y + (a.y + b.y));
}

fn math_two_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let product = a.x * b.x;
    let error = math_product_error(a.x, b.x, product) + (a.x * b.y + a.y * b.x);
    return math_two_sum(product, error);
}

// log of a positive two-part value, to about 2^-45 absolute near 1 (math_log_two_part's cubic term
// is float32, 2^-36 there): log(hi) = k ln 2 + 2 atanh(s), s = f / (2 + f), with s, s^2 and the
// series' first two coefficients in two parts; then + lo / hi.
fn math_two_log(a: vec2<f32>) -> vec2<f32> {
    let reduced = math_log_reduce(a.x);
    let f = reduced.x;
    let k = reduced.y;
    let d = math_two_sum(2.0, f);
    let s_hi = f / d.x;
    let sd = s_hi * d.x;
    let s_lo = (((f - sd) - math_product_error(s_hi, d.x, sd)) - s_hi * d.y) / d.x;
    let s = vec2<f32>(s_hi, s_lo);
    let z = math_two_mul(s, s);
    // 2 atanh(s) = 2 s + s^3 (2/3 + z (2/5 + z R(z))); z <= 0.0295.
    var r = fma(z.x, 2.0 / 15.0, 2.0 / 13.0);
    r = fma(r, z.x, 2.0 / 11.0);
    r = fma(r, z.x, 2.0 / 9.0);
    r = fma(r, z.x, 2.0 / 7.0);
    var q = math_two_add(vec2<f32>(0.4000000059604645, -5.9604645663569045e-09), vec2<f32>(z.x * r, 0.0));
    q = math_two_add(vec2<f32>(0.6666666865348816, -1.9868215517249155e-08), math_two_mul(z, q));
    let cubic = math_two_mul(math_two_mul(s, z), q);
    var sum = math_two_add(vec2<f32>(2.0 * s.x, 2.0 * s.y), cubic);
    sum = math_two_add(sum, math_two_sum(k * MATH_LN2_HI, k * MATH_LN2_LO));
    return math_two_add(sum, vec2<f32>(a.y / a.x, 0.0));
}

// sin(pi r) for |r| <= 1/2, r exact: pi r with pi in two parts, and cos(pi (1/2 - |r|)) past 1/4
// (1/2 - |r| is exact there).
fn math_sin_pi(r: f32) -> f32 {
    let a = abs(r);
    if (a <= 0.25) {
        return math_sin_kernel(a * 3.1415927410125732 + a * -8.742278e-08) * sign(r);
    }
    let q = 0.5 - a;
    return math_cos_kernel(q * 3.1415927410125732 + q * -8.742278e-08) * sign(r);
}

// lgamma(2 + t) for |t| <= 1/2, two parts: its Taylor series, a_1 = 1 - Euler's gamma and a_k =
// (-1)^k (zeta(k) - 1) / k, whose terms fall like 4^-k; past t^8 float32 is enough.
fn math_lgamma_near_two(t: f32) -> vec2<f32> {
    var tail = -2.2711095226668476e-08;
    tail = fma(tail, t, 4.76981014685407e-08);
    tail = fma(tail, t, -1.0043224563105468e-07);
    tail = fma(tail, t, 2.12071853411544e-07);
    tail = fma(tail, t, -4.4924692588210746e-07);
    tail = fma(tail, t, 9.55141217673372e-07);
    tail = fma(tail, t, -2.039215814875206e-06);
    tail = fma(tail, t, 4.3748668758780695e-06);
    tail = fma(tail, t, -9.439488167117815e-06);
    tail = fma(tail, t, 2.050721195701044e-05);
    tail = fma(tail, t, -4.4926237023901194e-05);
    tail = fma(tail, t, 9.945750935003161e-05);
    tail = fma(tail, t, -0.00022315475507639349);
    let head = array<vec2<f32>, 8>(
        vec2<f32>(0.42278432846069336, 6.637773886097875e-09),
        vec2<f32>(0.32246702909469604, 4.329417269133273e-09),
        vec2<f32>(-0.0673523023724556, 1.319257481036118e-09),
        vec2<f32>(0.020580807700753212, 7.270313240326232e-10),
        vec2<f32>(-0.007385550998151302, -3.0522681604416846e-11),
        vec2<f32>(0.0028905102517455816, 7.89959417324404e-11),
        vec2<f32>(-0.0011927539017051458, -9.998115182985323e-12),
        vec2<f32>(0.0005096695385873318, -1.3844289430131607e-11));
    let t2 = vec2<f32>(t, 0.0);
    var acc = vec2<f32>(tail, 0.0);
    for (var k = 7; k >= 0; k--) {
        acc = math_two_add(math_two_mul(acc, t2), head[k]);
    }
    return math_two_mul(acc, t2);
}

// lgamma(x) for x >= 16, two parts: Stirling's series, (x - 1/2)(log x - 1) + log(2 pi)/2 - 1/2 +
// 1/(12x) - 1/(360x^3) + 1/(1260x^5). Past 2^100 the product is all that counts.
fn math_lgamma_stirling(x: f32) -> vec2<f32> {
    let log_x = math_log_two_part(x);
    if (x > 1.0e30) {
        return vec2<f32>(x * (log_x.x - 1.0), 0.0);
    }
    let log_minus_one = math_two_add(log_x, vec2<f32>(-1.0, 0.0));
    let main = math_two_mul(math_two_sum(x, -0.5), log_minus_one);
    let z = 1.0 / x;
    let z2 = z * z;
    let series = z * fma(z2, fma(z2, 1.0 / 1260.0, -1.0 / 360.0), 1.0 / 12.0);
    return math_two_add(main, math_two_sum(0.418938547372818, series + -1.4168145767712303e-08));
}

// log|Gamma(x)| (TF's Lgamma): +inf at the poles (x = 0, -1, -2, ...) and at +-inf. Below 16 in
// magnitude, lgamma(x) = lgamma(2 + t) -+ log|(x + k)...| with t = x - round(x) exact and the
// product of the (exact, two-part) factors carried in two parts: that is what keeps the result
// right near the zeros on the negative axis, where the two terms cancel. Past -16 the reflection
// log(pi / |x sin(pi x)|) - lgamma(-x) has no such cancellation (no float comes near those zeros).
fn math_lgamma(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    let a = abs(x);
    if (math_is_inf(x)) { return math_inf(); }
    let nearest = round(x);
    if (x <= 0.0 && nearest == x) { return math_inf(); }
    if (x >= 16.0) {
        let r = math_lgamma_stirling(x);
        return r.x + r.y;
    }
    if (x <= -16.0) {
        let r = x - nearest;
        let reflected = math_log_two_part(a);
        let log_sin = math_log(abs(math_sin_pi(r)));
        // log(pi) - log|x| - log|sin(pi x)| - lgamma(-x)
        var sum = math_two_add(vec2<f32>(1.1447298526763916, 3.317300922844879e-08), -reflected);
        sum = math_two_add(sum, vec2<f32>(-log_sin, 0.0));
        sum = math_two_add(sum, -math_lgamma_stirling(a));
        return sum.x + sum.y;
    }
    let t = x - nearest;
    let steps = i32(nearest) - 2;
    var product = vec2<f32>(1.0, 0.0);
    // Up (x < 1.5): Gamma(x) = Gamma(2 + t) / (x (x + 1) ... (x - steps - 1)); down (x >= 2.5):
    // Gamma(x) = (x - 1) ... (x - steps) Gamma(2 + t).
    for (var k = 1; k <= abs(steps); k++) {
        let offset = select(f32(k - 1), -f32(k), steps > 0);
        product = math_two_mul(product, math_two_sum(x, offset));
    }
    if (product.x < 0.0) {
        product = -product;
    }
    var log_product = math_two_log(product);
    if (steps < 0) {
        log_product = -log_product;
    }
    let r = math_two_add(math_lgamma_near_two(t), log_product);
    return r.x + r.y;
}

// digamma(2 + t) for |t| <= 1/2, two parts: the derivative of math_lgamma_near_two's series,
// b_j = (j + 1) a_(j+1); float32 past t^8.
fn math_digamma_near_two(t: f32) -> vec2<f32> {
    var tail = -1.1921991927010822e-07;
    tail = fma(tail, t, 2.3845049668125284e-07);
    tail = fma(tail, t, -4.769329962073243e-07);
    tail = fma(tail, t, 9.539620577925234e-07);
    tail = fma(tail, t, -1.9082126527791843e-06);
    tail = fma(tail, t, 3.817293418251211e-06);
    tail = fma(tail, t, -7.637197995791212e-06);
    tail = fma(tail, t, 1.5282259482773952e-05);
    tail = fma(tail, t, -3.0588234949391335e-05);
    tail = fma(tail, t, 6.124813808128238e-05);
    tail = fma(tail, t, -0.0001227133470820263);
    tail = fma(tail, t, 0.00024608656531199813);
    tail = fma(tail, t, -0.000494188629090786);
    tail = fma(tail, t, 0.0009945750935003161);
    let head = array<vec2<f32>, 9>(
        vec2<f32>(0.42278432846069336, 6.637773886097875e-09),
        vec2<f32>(0.6449340581893921, 8.658834538266547e-09),
        vec2<f32>(-0.2020568996667862, -3.492808042793172e-09),
        vec2<f32>(0.08232323080301285, 2.9081252961304926e-09),
        vec2<f32>(-0.036927755922079086, 7.787091527156065e-10),
        vec2<f32>(0.01734306290745735, -9.230082254063632e-10),
        vec2<f32>(-0.008349277079105377, -3.0281743779170256e-10),
        vec2<f32>(0.004077356308698654, -1.1075431544105285e-10),
        vec2<f32>(-0.0020083929412066936, 1.1512447939399095e-10));
    let t2 = vec2<f32>(t, 0.0);
    var acc = vec2<f32>(tail, 0.0);
    for (var k = 8; k >= 0; k--) {
        acc = math_two_add(math_two_mul(acc, t2), head[k]);
    }
    return acc;
}

// 1 / a for a two-part a: the quotient of the high parts, corrected by the exact residual.
fn math_two_recip(a: vec2<f32>) -> vec2<f32> {
    let q = 1.0 / a.x;
    let p = q * a.x;
    let residual = ((1.0 - p) - math_product_error(q, a.x, p)) - q * a.y;
    return math_two_sum(q, residual / a.x);
}

// pi cot(pi r) for 0 < |r| <= 1/4, r exact, two parts: 1/r - r (2 zeta(2) + 2 zeta(4) r^2 + ...),
// whose terms fall like 16^-k; float32 past the sixth.
fn math_two_pi_cot_pi_quarter(r: f32) -> vec2<f32> {
    let r2 = vec2<f32>(r, 0.0);
    let u = math_two_mul(r2, r2);
    var tail = 2.0;
    tail = fma(tail, u.x, 2.000000238418579);
    tail = fma(tail, u.x, 2.000000476837158);
    tail = fma(tail, u.x, 2.000001907348633);
    tail = fma(tail, u.x, 2.0000076293945312);
    tail = fma(tail, u.x, 2.000030517578125);
    tail = fma(tail, u.x, 2.000122547149658);
    let head = array<vec2<f32>, 6>(
        vec2<f32>(3.289868116378784, 1.7317669076533093e-08),
        vec2<f32>(2.1646463871002197, 8.032205300878559e-08),
        vec2<f32>(2.0346860885620117, 3.540688808811865e-08),
        vec2<f32>(2.0081546306610107, 8.17348748682889e-08),
        vec2<f32>(2.0019891262054443, 2.405019117190932e-08),
        vec2<f32>(2.0004920959472656, 7.715934913221645e-08));
    var acc = vec2<f32>(tail, 0.0);
    for (var k = 5; k >= 0; k--) {
        acc = math_two_add(math_two_mul(acc, u), head[k]);
    }
    return math_two_add(math_two_recip(r2), -math_two_mul(acc, r2));
}

// pi cot(pi r) for 0 < |r| <= 1/2, r exact, two parts; past 1/4 from the half angle:
// pi cot(pi r) = (w^2 - pi^2) / (2 w), w = pi cot(pi r / 2).
fn math_two_pi_cot_pi(r: f32) -> vec2<f32> {
    if (abs(r) <= 0.25) {
        return math_two_pi_cot_pi_quarter(r);
    }
    let w = math_two_pi_cot_pi_quarter(0.5 * r);
    let numerator = math_two_add(math_two_mul(w, w), vec2<f32>(-9.869604110717773, -2.903715881075186e-07));
    return math_two_mul(numerator, math_two_recip(2.0 * w));
}

// digamma(1 + t) for t in [0, 2]: (t - t0) R(t), t0 = 0.46163... (digamma's positive zero, less 1)
// in two parts so that the result keeps its relative precision near the zero; R a least-squares
// fit in t - 1 (about 2 ulp).
fn math_digamma_one_to_three(t: f32) -> f32 {
    let u = t - 1.0;
    var r = 5.7658118748804554e-05;
    r = fma(r, u, -0.00011794563033618033);
    r = fma(r, u, 2.005177339015063e-05);
    r = fma(r, u, -3.132429628749378e-05);
    r = fma(r, u, 0.00038691089139319956);
    r = fma(r, u, -0.0007886416860856116);
    r = fma(r, u, 0.0013380919117480516);
    r = fma(r, u, -0.0026910798624157906);
    r = fma(r, u, 0.0055560097098350525);
    r = fma(r, u, -0.011348864063620567);
    r = fma(r, u, 0.02344706282019615);
    r = fma(r, u, -0.04955005645751953);
    r = fma(r, u, 0.10899991542100906);
    r = fma(r, u, -0.26073896884918213);
    r = fma(r, u, 0.7853075265884399);
    return (t - 0.4616321325302124) * r - 1.243815006546356e-08 * r;
}

// digamma(x) for x >= 1: the fit below 3, the recurrence digamma(x) = digamma(x - n) + 1/(x - 1)
// + ... + 1/(x - n) down to [2, 3) below 10 (every term positive), the asymptotic series above.
fn math_digamma_positive(x: f32) -> f32 {
    if (x < 3.0) {
        return math_digamma_one_to_three(x - 1.0);
    }
    if (x < 10.0) {
        let n = floor(x) - 2.0;
        var sum = 0.0;
        for (var k = 1.0; k <= n; k += 1.0) {
            sum += 1.0 / (x - k);
        }
        return math_digamma_one_to_three(x - n - 1.0) + sum;
    }
    let z = 1.0 / (x * x);
    let series = z * (1.0 / 12.0 - z * (1.0 / 120.0 - z * (1.0 / 252.0 - z * (1.0 / 240.0))));
    return math_log(x) - 0.5 / x - series;
}

// digamma(x) (TF's Digamma): NaN at the poles (0, -1, -2, ...) and at -inf, as Eigen gives. Below
// 1: digamma(x) = digamma(1 + x) - 1/x; below 0 the recurrence up to [1.5, 2.5) in two parts, and
// past -16 the reflection digamma(1 - x) - pi cot(pi x).
fn math_digamma(x: f32) -> f32 {
    if (math_is_nan(x)) { return x; }
    if (math_is_inf(x)) { return select(math_nan(), x, x > 0.0); }
    if (x >= 1.0) { return math_digamma_positive(x); }
    if (x > 0.0) { return math_digamma_one_to_three(x) - 1.0 / x; }
    let nearest = round(x);
    if (nearest == x) { return math_nan(); }
    if (x > -1.0e-20) {
        // -1/x - Euler's gamma; the next term (zeta(2) x) is past float32's precision.
        return -1.0 / x - 0.5772156649015329;
    }
    if (x > -16.0) {
        // digamma(x) = digamma(2 + t) - 1/x - 1/(x + 1) - ... in two parts: the terms cancel near
        // digamma's negative zeros.
        var sum = math_digamma_near_two(x - nearest);
        for (var k = 0.0; k < 2.0 - nearest; k += 1.0) {
            sum = math_two_add(sum, -math_two_recip(math_two_sum(x, k)));
        }
        return sum.x + sum.y;
    }
    // Past -16: digamma(x) = digamma(y) + 1/y - pi cot(pi x), y = -x, with digamma(y)'s asymptotic
    // series log y - 1/(2y) - 1/(12y^2) + 1/(120y^4) - ..., all in two parts: the terms cancel near
    // the zeros, which lie between every pair of poles.
    let y = -x;
    let inverse = math_two_recip(vec2<f32>(y, 0.0));
    let inverse_square = math_two_mul(inverse, inverse);
    let u = inverse_square.x;
    let small_terms = u * u * (1.0 / 120.0 - u * (1.0 / 252.0 - u * (1.0 / 240.0)));
    var sum = math_two_add(math_two_log(vec2<f32>(y, 0.0)), 0.5 * inverse);
    sum = math_two_add(sum, -math_two_mul(inverse_square, vec2<f32>(0.0833333358168602, -2.4835269396561444e-09)));
    sum = math_two_add(sum, vec2<f32>(small_terms, 0.0));
    sum = math_two_add(sum, -math_two_pi_cot_pi(x - nearest));
    return sum.x + sum.y;
}

// std::nextafter for float32: the next representable value after x towards y.
fn math_next_after(x: f32, y: f32) -> f32 {
    if (math_is_nan(x) || math_is_nan(y)) {
        return math_nan();
    }
    if (x == y) {
        return y;
    }
    if (x == 0.0) {
        return math_copysign(bitcast<f32>(1u), y);
    }
    let bits = bitcast<u32>(x);
    return bitcast<f32>(select(bits - 1u, bits + 1u, (x < y) == (x > 0.0)));
}
