// Special functions of float64 (`math_f64.wgsl` comes first; the device has SHADER_F64): the same
// entry points as `special_math.wgsl`'s float32 ones (`math_ndtri`, `math_bessel_i0`, ...), so that
// `special.wgsl` calls either library by the same names, computed in f64 as TF-CPU's double kernels
// (Eigen's and TF's double code paths) compute them. Four sections: what the others share
// (subnormals, NaN), the Gamma family with Ndtri and Erfinv, the Bessel functions, and TF's own
// Dawsn, Expint, Fresnel integrals and Spence; each section's header says what it ports and which
// of TF-CPU's quirks it keeps. Where results differ from TF-CPU's by more than a few ulp, the cause
// is the last bit of `m64_log`/`m64_exp` (within an ulp, not always glibc's correctly rounded
// one) magnified by a cancellation in the algorithm that TF-CPU's result carries as well (near the
// zeros of Y0, Y1 and Ei, in K0 on (0.4, 1.8], Igamma's x^a e^-x / Gamma(a), Igammac's 1 - series).

// WGSL has no bitcast of an f64 and lets implementations assume finite math (so `v != v` cannot be
// trusted): a NaN stays one when converted to float32, whose bits are readable.
fn math_is_nan(x: f64) -> bool {
    return (bitcast<u32>(f32(x)) & 0x7fffffffu) > 0x7f800000u;
}

fn math_is_inf(x: f64) -> bool {
    return m64_is_inf(x);
}

fn math_inf() -> f64 {
    return m64_inf();
}

fn math_nan() -> f64 {
    return m64_nan();
}

// Subnormal -> zero of the same sign: TF's denormals-are-zero on arguments and flush-to-zero on
// results (TF-CPU's threads set both for double arithmetic too).
fn math_flush(x: f64) -> f64 {
    // (Zeros as they are: -0 keeps its sign.)
    if (x != 0.0 && abs(x) < 2.2250738585072014e-308) {
        return select(f64(0.0), -f64(0.0), x < 0.0);
    }
    return x;
}

// Cephes' polevl (Eigen's ppolevl<T, N>): c[0] x^N + c[1] x^(N-1) + ... + c[N] by Horner's rule,
// highest degree first, a * b + c written out (no reliance on fma being fused). One copy per
// degree, as WGSL arrays are typed by their length; every section of the library uses these.
fn math_polevl3(x: f64, c: array<f64, 4>) -> f64 {
    var acc = c[0];
    for (var i = 1; i < 4; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl4(x: f64, c: array<f64, 5>) -> f64 {
    var acc = c[0];
    for (var i = 1; i < 5; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl5(x: f64, c: array<f64, 6>) -> f64 {
    var acc = c[0];
    for (var i = 1; i < 6; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl6(x: f64, c: array<f64, 7>) -> f64 {
    var acc = c[0];
    for (var i = 1; i < 7; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl7(x: f64, c: array<f64, 8>) -> f64 {
    var acc = c[0];
    for (var i = 1; i < 8; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl8(x: f64, c: array<f64, 9>) -> f64 {
    var acc = c[0];
    for (var i = 1; i < 9; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl9(x: f64, c: array<f64, 10>) -> f64 {
    var acc = c[0];
    for (var i = 1; i < 10; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl10(x: f64, c: array<f64, 11>) -> f64 {
    var acc = c[0];
    for (var i = 1; i < 11; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl11(x: f64, c: array<f64, 12>) -> f64 {
    var acc = c[0];
    for (var i = 1; i < 12; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

// Ndtri, Erfinv, the Igamma family (Igamma, Igammac, IgammaGradA, RandomGammaGrad), Zeta and
// Polygamma in float64: the double code paths of Eigen's SpecialFunctionsImpl.h (generic_ndtri,
// igamma_generic_impl with igammac_cf_impl / igamma_series_impl and cephes_helper<double>,
// zeta_impl with zeta_impl_series<double>, polygamma_impl) and TF's scalar_erfinv_op
// (cwise_ops.h), which TF-CPU's float64 kernels run; the same algorithms as `special_math.wgsl`'s
// float32 port, with Cephes' double constants and double's machep, big, iteration limits and
// underflow threshold. Eigen's code is based on the Cephes Math Library by Stephen L. Moshier,
// incorporated into Eigen by permission of the author.
// TF-CPU's quirks kept (its float64 outputs, TF 2.16 to 2.21):
//   ndtri(0) = -inf, ndtri(1) = +inf, NaN outside [0, 1] (and for +-inf); erfinv(+-1) = +-inf;
//   igamma(a, 0) = 0 even for a NaN or a <= 0 (also the derivatives); igamma(a, +inf) = 1, its
//   derivatives -0; igamma(+inf, x) = 0 and igammac(+inf, x) = 1 for finite x, igammac(+inf, +inf)
//   = 0 (Eigen's x^a e^-x / Gamma(a) term is NaN there, taken as 0);
//   zeta's pole at q = 0, -1, ...: +inf for an even integer x (C's long(x) is even from 2^63 on, and
//   for +inf), NaN otherwise; zeta(+inf, q) = +inf for q < 1, 1 at q = 1, 0 above;
//   polygamma(+inf, x) = n! zeta(inf, x), so +inf * 0 = NaN for x > 1.
// Subnormal results are flushed to zero as TF-CPU's threads (FTZ) flush them: in the x^a e^-x /
// Gamma(a) term (so its underflow threshold is log(DBL_MIN), not Eigen's -log(DBL_MAX): the
// derivatives below that are 0 on TF-CPU), in zeta's powers, and in the results.
// This section's own names start with `math_gamma_`.

// generic_ndtri's rational functions: P0/Q0 in (b - 1/2)^2 for b above exp(-2), P1/Q1 in 1/z for
// z = sqrt(-2 log b) in [2, 8), P2/Q2 for z in [8, 64).
const MATH_GAMMA_NDTRI_P0 = array<f64, 5>(-5.99633501014107895267e1, 9.80010754185999661536e1,
    -5.66762857469070293439e1, 1.39312609387279679503e1, -1.23916583867381258016e0);
const MATH_GAMMA_NDTRI_Q0 = array<f64, 9>(1.0, 1.95448858338141759834e0, 4.67627912898881538453e0,
    8.63602421390890590575e1, -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
    1.59056225126211695515e1, -1.18331621121330003142e0);
const MATH_GAMMA_NDTRI_P1 = array<f64, 9>(4.05544892305962419923e0, 3.15251094599893866154e1,
    5.71628192246421288162e1, 4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
    -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4);
const MATH_GAMMA_NDTRI_Q1 = array<f64, 9>(1.0, 1.57799883256466749731e1, 4.53907635128879210584e1,
    4.13172038254672030440e1, 1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
    -3.80806407691578277194e-2, -9.33259480895457427372e-4);
const MATH_GAMMA_NDTRI_P2 = array<f64, 9>(3.23774891776946035970e0, 6.91522889068984211695e0,
    3.93881025292474443415e0, 1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
    3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9);
const MATH_GAMMA_NDTRI_Q2 = array<f64, 9>(1.0, 6.02427039364742014255e0, 3.67983563856160859403e0,
    1.37702099489081330271e0, 2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
    2.89247864745380683936e-6, 6.79019408009981274425e-9);

// The inverse of the standard normal CDF (Eigen's generic_ndtri).
fn math_ndtri(a: f64) -> f64 {
    if (math_is_nan(a) || a < 0.0 || a > 1.0) {
        return math_nan();
    }
    if (a == 0.0) {
        return -math_inf();
    }
    if (a == 1.0) {
        return math_inf();
    }
    let exp_neg_two: f64 = 0.13533528323661269189;
    let flip = a <= 1.0 - exp_neg_two;
    let b = select(1.0 - a, a, flip);
    if (exp_neg_two < b) {
        let c = b - 0.5;
        let c2 = c * c;
        let r = c * (c2 * (math_polevl4(c2, MATH_GAMMA_NDTRI_P0) / math_polevl8(c2, MATH_GAMMA_NDTRI_Q0))) + c;
        return r * 2.50662827463100050242e0;
    }
    let x = sqrt(-2.0 * m64_log(b));
    let x0 = x - m64_log(x) / x;
    let z = 1.0 / x;
    var ratio: f64;
    if (x < 8.0) {
        ratio = math_polevl8(z, MATH_GAMMA_NDTRI_P1) / math_polevl8(z, MATH_GAMMA_NDTRI_Q1);
    } else {
        ratio = math_polevl8(z, MATH_GAMMA_NDTRI_P2) / math_polevl8(z, MATH_GAMMA_NDTRI_Q2);
    }
    let r = x0 - z * ratio;
    return select(r, -r, flip);
}

// TF's erfinv: ndtri((x + 1) / 2) / sqrt(2), as 0.5 x + 0.5 times M_SQRT1_2. The argument goes
// through `m64_opaque`: otherwise Mesa folds ndtri's 1 - (0.5 x + 0.5) to 0.5 - 0.5 x, which skips
// the rounding of 0.5 x + 0.5 that TF-CPU's result near x = 1 depends on.
fn math_erfinv(x: f64) -> f64 {
    // (|x| slightly above 1 can round to ndtri(1) = +inf.)
    if (math_is_nan(x) || abs(x) > 2.0) {
        return math_nan();
    }
    return math_ndtri(m64_opaque(0.5 * x + 0.5)) * 0.70710678118654752440;
}

// Eigen's IgammaComputationMode: the value, d/da, or the Gamma sample's implicit derivative.
const MATH_IGAMMA_VALUE: u32 = 0u;
const MATH_IGAMMA_DERIVATIVE: u32 = 1u;
const MATH_IGAMMA_SAMPLE_DERIVATIVE: u32 = 2u;
// cephes_helper<double>: machep = eps / 2, big = 1 / eps, biginv = eps.
const MATH_GAMMA_MACHEP: f64 = 1.1102230246251565404e-16;
const MATH_GAMMA_BIG: f64 = 4503599627370496.0;
const MATH_GAMMA_BIGINV: f64 = 2.220446049250313080847e-16;
// log(DBL_MIN): exp of anything below is subnormal, 0 on TF-CPU's flush-to-zero threads.
const MATH_GAMMA_LOG_MIN: f64 = -708.39641853226410622;

// igamma_num_iterations<double>: 2000 for the value, 500 for the derivatives.
fn math_gamma_iterations(mode: u32) -> i32 {
    return select(500, 2000, mode == MATH_IGAMMA_VALUE);
}

// x^a exp(-x) / gamma(a), 0 where it underflows or is NaN (Eigen's main_igamma_term: the value
// and its derivatives are then taken as 0). Eigen's own cut is -log(DBL_MAX), but between it and
// log(DBL_MIN) glibc's exp returns a subnormal that TF-CPU flushes to 0: RandomGammaGrad, which is
// not scaled by this term, is 0 there on TF-CPU.
fn math_gamma_igamma_term(a: f64, x: f64) -> f64 {
    let logax = a * m64_log(x) - x - m64_lgamma(a);
    if (math_is_nan(logax) || logax < MATH_GAMMA_LOG_MIN) {
        return 0.0;
    }
    return math_flush(m64_exp(logax));
}

// The value ans ax, the derivative ans dax/da + dans/da ax, or the sample's derivative
// -(dans/da + ans dlogax/da) x, from the sum (or fraction) `ans`, its derivative `dans_da`, the
// term `ax` and its log's derivative. The products are flushed, as TF-CPU's FTZ does, where ax is
// near the bottom of the range: dropping a subnormal dans/da ax changes the derivative's last digits.
fn math_gamma_igamma_result(ax: f64, ans: f64, dans_da: f64, dlogax_da: f64, x: f64, mode: u32) -> f64 {
    if (mode == MATH_IGAMMA_VALUE) {
        return ans * ax;
    }
    if (mode == MATH_IGAMMA_DERIVATIVE) {
        let dax_da = math_flush(ax * dlogax_da);
        return math_flush(ans * dax_da) + math_flush(dans_da * ax);
    }
    return -(dans_da + ans * dlogax_da) * x;
}

// igammac(a, x) (or its derivative) by the continued fraction, for x >= 1 and x >= a.
fn math_gamma_igammac_cf(a: f64, x: f64, mode: u32) -> f64 {
    if (math_is_inf(x)) {
        return 0.0;
    }
    let ax = math_gamma_igamma_term(a, x);
    if (ax == 0.0) {
        return 0.0;
    }
    var y = 1.0 - a;
    var z = x + y + 1.0;
    var c: f64 = 0.0;
    var pkm2: f64 = 1.0;
    var qkm2 = x;
    var pkm1 = x + 1.0;
    var qkm1 = z * x;
    var ans = pkm1 / qkm1;
    var dpkm2_da: f64 = 0.0;
    var dqkm2_da: f64 = 0.0;
    var dpkm1_da: f64 = 0.0;
    var dqkm1_da = -x;
    var dans_da = (dpkm1_da - ans * dqkm1_da) / qkm1;
    let iterations = math_gamma_iterations(mode);
    for (var i = 0; i < iterations; i++) {
        c += 1.0;
        y += 1.0;
        z += 2.0;
        let yc = y * c;
        let pk = pkm1 * z - pkm2 * yc;
        let qk = qkm1 * z - qkm2 * yc;
        let dpk_da = dpkm1_da * z - pkm1 - dpkm2_da * yc + pkm2 * c;
        let dqk_da = dqkm1_da * z - qkm1 - dqkm2_da * yc + qkm2 * c;
        if (qk != 0.0) {
            let ans_prev = ans;
            ans = pk / qk;
            let dans_da_prev = dans_da;
            dans_da = (dpk_da - ans * dqk_da) / qk;
            if (mode == MATH_IGAMMA_VALUE) {
                if (abs(ans_prev - ans) <= MATH_GAMMA_MACHEP * abs(ans)) {
                    break;
                }
            } else if (abs(dans_da - dans_da_prev) <= MATH_GAMMA_MACHEP) {
                break;
            }
        }
        pkm2 = pkm1;
        pkm1 = pk;
        qkm2 = qkm1;
        qkm1 = qk;
        dpkm2_da = dpkm1_da;
        dpkm1_da = dpk_da;
        dqkm2_da = dqkm1_da;
        dqkm1_da = dqk_da;
        if (abs(pk) > MATH_GAMMA_BIG) {
            pkm2 *= MATH_GAMMA_BIGINV;
            pkm1 *= MATH_GAMMA_BIGINV;
            qkm2 *= MATH_GAMMA_BIGINV;
            qkm1 *= MATH_GAMMA_BIGINV;
            dpkm2_da *= MATH_GAMMA_BIGINV;
            dpkm1_da *= MATH_GAMMA_BIGINV;
            dqkm2_da *= MATH_GAMMA_BIGINV;
            dqkm1_da *= MATH_GAMMA_BIGINV;
        }
    }
    let dlogax_da = m64_log(x) - m64_digamma(a);
    return math_gamma_igamma_result(ax, ans, dans_da, dlogax_da, x, mode);
}

// igamma(a, x) (or its derivative) by the power series, for x > 0, a > 0, !(x > 1 && x > a).
fn math_gamma_igamma_series(a: f64, x: f64, mode: u32) -> f64 {
    var ax = math_gamma_igamma_term(a, x);
    if (ax == 0.0) {
        return 0.0;
    }
    // Not tested for 0 again: the sample's derivative does not use it.
    ax = math_flush(ax / a);
    var r = a;
    var c: f64 = 1.0;
    var ans: f64 = 1.0;
    var dc_da: f64 = 0.0;
    var dans_da: f64 = 0.0;
    let iterations = math_gamma_iterations(mode);
    for (var i = 0; i < iterations; i++) {
        r += 1.0;
        let term = x / r;
        let dterm_da = -x / (r * r);
        dc_da = term * dc_da + dterm_da * c;
        dans_da += dc_da;
        c *= term;
        ans += c;
        if (mode == MATH_IGAMMA_VALUE) {
            if (c <= MATH_GAMMA_MACHEP * ans) {
                break;
            }
        } else if (abs(dc_da) <= MATH_GAMMA_MACHEP * abs(dans_da)) {
            break;
        }
    }
    let dlogax_da = m64_log(x) - m64_digamma(a + 1.0);
    return math_gamma_igamma_result(ax, ans, dans_da, dlogax_da, x, mode) / select(f64(1.0), a, mode == MATH_IGAMMA_SAMPLE_DERIVATIVE);
}

// igamma(a, x), d/da igamma(a, x), or the Gamma sample's derivative (Eigen's igamma_generic_impl).
fn math_igamma(a: f64, x: f64, mode: u32) -> f64 {
    if (x == 0.0) {
        return 0.0;
    }
    if (math_is_nan(a) || math_is_nan(x) || x < 0.0 || a <= 0.0) {
        return math_nan();
    }
    if (x > 1.0 && x > a) {
        let ret = math_gamma_igammac_cf(a, x, mode);
        return math_flush(select(-ret, 1.0 - ret, mode == MATH_IGAMMA_VALUE));
    }
    return math_flush(math_gamma_igamma_series(a, x, mode));
}

// igammac(a, x) = 1 - igamma(a, x) (Eigen's igammac_impl).
fn math_igammac(a: f64, x: f64) -> f64 {
    if (math_is_nan(a) || math_is_nan(x) || x < 0.0 || a <= 0.0) {
        return math_nan();
    }
    if (x < 1.0 || x < a) {
        return 1.0 - math_gamma_igamma_series(a, x, MATH_IGAMMA_VALUE);
    }
    return math_flush(math_gamma_igammac_cf(a, x, MATH_IGAMMA_VALUE));
}

// zeta_impl's A: the Euler-Maclaurin coefficients (2j)! / B_2j.
const MATH_GAMMA_ZETA_A = array<f64, 12>(12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
    7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18);

// q^-x for finite x and finite nonzero q, subnormals flushed as TF-CPU's pow results are.
fn math_gamma_zeta_power(q: f64, x: f64) -> f64 {
    return math_flush(m64_pow(q, -x, false, false, q < 0.0));
}

// zeta_impl's summation for finite x > 1 and finite q (not a pole, so a negative q comes with an
// integer x): the terms (q + k)^-x one by one (zeta_impl_series<double>: at least 9, and on until
// q + k passes 9), then the Euler-Maclaurin tail. At most |q| + 10 terms: the caller keeps q above
// -MATH_GAMMA_ZETA_TERMS.
fn math_gamma_zeta_sum(x: f64, q: f64) -> f64 {
    var s = math_gamma_zeta_power(q, x);
    var a = q;
    var b: f64 = 0.0;
    var i = 0;
    while (i < 9 || a <= 9.0) {
        i += 1;
        a += 1.0;
        b = math_gamma_zeta_power(a, x);
        s += b;
        // |b / s| < machep, false where b / s is NaN (0 / 0, inf / inf) as in C.
        if (s != 0.0 && !math_is_inf(b) && abs(b / s) < MATH_GAMMA_MACHEP) {
            return s;
        }
    }
    if (b == 0.0) {
        // The tail is zero too (and its terms could overflow to inf * 0).
        return s;
    }
    let w = a;
    s += b * w / (x - 1.0);
    s -= 0.5 * b;
    var m: f64 = 1.0;
    var k: f64 = 0.0;
    for (var j = 0; j < 12; j++) {
        m *= x + k;
        b = math_flush(b / w);
        let t = m * b / MATH_GAMMA_ZETA_A[j];
        s = s + t;
        if (abs(t / s) < MATH_GAMMA_MACHEP) {
            break;
        }
        k += 1.0;
        m *= x + k;
        b = math_flush(b / w);
        k += 1.0;
    }
    return s;
}

// Below q = -MATH_GAMMA_ZETA_TERMS, zeta's term-by-term sum would take |q| iterations, each with
// m64_pow's loop of 10 inside, and llvmpipe stops an invocation's loops after 65,535 iterations in
// all (`LLVMPIPE_MAX_LOOP_ITERATIONS` in src/runtime/device.rs): there the terms of
// q + k < -MATH_GAMMA_ZETA_TERMS are summed in closed form instead.
const MATH_GAMMA_ZETA_TERMS: f64 = 2048.0;

// Hurwitz's zeta(x, q) (Eigen's zeta_impl).
fn math_zeta(x: f64, q: f64) -> f64 {
    if (math_is_nan(x)) {
        return math_nan();
    }
    // Before q is looked at: zeta(1, NaN) = +inf.
    if (x == 1.0) {
        return math_inf();
    }
    if (math_is_nan(q)) {
        return math_nan();
    }
    if (x < 1.0) {
        return math_nan();
    }
    if (q <= 0.0 && (math_is_inf(q) || q == floor(q))) {
        // A pole: +inf for an even integer x (C's long(x) % 2 == 0, which holds from 2^63 on and
        // for +inf), NaN otherwise.
        let even = math_is_inf(x) || 0.5 * x == floor(0.5 * x);
        return select(math_nan(), math_inf(), even);
    }
    if (math_is_inf(x)) {
        // Every term is 0, 1 or +inf: +inf once one has |q + k| < 1.
        if (q == 1.0) {
            return 1.0;
        }
        return select(f64(0.0), math_inf(), q < 1.0);
    }
    if (q <= 0.0 && x != floor(x)) {
        return math_nan();
    }
    if (math_is_inf(q)) {
        return 0.0;
    }
    var start = q;
    var far: f64 = 0.0;
    if (q < -MATH_GAMMA_ZETA_TERMS) {
        // The terms q + k for k < n are below -MATH_GAMMA_ZETA_TERMS (all exact: q has a fraction,
        // so |q| < 2^52). They are (-1)^x (-q - k)^-x, whose sum is (-1)^x (zeta(x, -q - n + 1) -
        // zeta(x, 1 - q)), ten terms each.
        let n = ceil(-q - MATH_GAMMA_ZETA_TERMS);
        far = math_gamma_zeta_sum(x, -q - n + 1.0) - math_gamma_zeta_sum(x, 1.0 - q);
        if (0.5 * x != floor(0.5 * x)) {
            far = -far;
        }
        start = q + n;
    }
    return math_flush(math_gamma_zeta_sum(x, start) + far);
}

// polygamma(n, x): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x) with n! = exp(lgamma(n + 1))
// (Eigen's polygamma_impl, as SciPy).
fn math_polygamma(n: f64, x: f64) -> f64 {
    if (math_is_nan(n) || math_is_nan(x)) {
        return math_nan();
    }
    if (n < 0.0 || (!math_is_inf(n) && floor(n) != n)) {
        return math_nan();
    }
    if (n == 0.0) {
        return m64_digamma(x);
    }
    let nplus = n + 1.0;
    let factorial = m64_exp(m64_lgamma(nplus));
    let sign = select(f64(1.0), f64(-1.0), !math_is_inf(nplus) && 0.5 * nplus != floor(0.5 * nplus));
    return math_flush(sign * factorial * math_zeta(nplus, x));
}

// Bessel functions for float64, ported from the double code paths of Eigen's
// unsupported/Eigen/src/SpecialFunctions/BesselFunctionsImpl.h (generic_i0e<T, double> ...
// generic_y1<T, double>), which TF's BesselI0 ... BesselY1 ops call through Eigen::numext::bessel_*
// (the same code in TF 2.16 to 2.21). Eigen's code is based on the Cephes Math Library (i0.c,
// i1.c, k0.c, k1.c, j0.c, j1.c) by Stephen L. Moshier, incorporated into Eigen by permission of the
// author. The double code differs from the float port in `special_math.wgsl`: longer Chebyshev
// tables for I and K, and for J and Y rational approximations with the branch at 5 (not 2) and
// Hankel's asymptotic form P cos(x - phase) - Q sin(x - phase) above it.
//
// The coefficients are Cephes' decimal constants, which the WGSL literals convert to f64 exactly as
// a C compiler does. Eigen's pmadd(a, b, c) is written a * b + c (TF's builds do not fuse it). The
// phase x - pi/4 (or x - 3pi/4) is rounded to double first and then goes through m64_sin/m64_cos
// (which reduce any argument accurately, as Eigen's psin/pcos and std::sin/cos do), so for large x
// the result is Eigen's, not the true function.
//
// Special values are decided first, because WGSL lets implementations assume finite math; they are
// the values TF-CPU returns (Eigen's formulas evaluated on NaN, +-inf, 0):
//   NaN -> NaN everywhere; i0e, i1e(+-inf) -> 0; i0, i1(+-inf) -> NaN (inf * 0 in Eigen), and
//   +-inf once exp(|x|) overflows (|x| > ~709.78) although the function would still be finite;
//   k*(x <= 0) -> +inf, k*(+inf) -> 0; j0, j1(+-inf) -> NaN; y0, y1(x <= 0) -> -inf (the double
//   y1 tests x <= 0, unlike the float one's x < 0); y0, y1(+inf) -> NaN (sin(inf) in Eigen).
// Subnormals are zero, as on TF-CPU (denormals-are-zero and flush-to-zero, also for double): the
// arguments come flushed, and every result or intermediate that can underflow is flushed where
// Eigen's evaluation would flush it. That shows in three places: i1e, i1, j1 are 0 for
// |x| < ~4.5e-308 (j1 for |x| < ~3.9e-306, where Eigen's first product x R(x^2) underflows);
// k0, k1 are 0 past x ~ 705.4; and where x / 2 underflows (x < 2^-1021), log(x / 2) is -inf, so
// k0, k0e are +inf and k1, k1e NaN (0 * -inf, i1(x) being flushed too), as TF-CPU returns.
// Names start with `math_bessel_` so that they cannot collide with the other sections' names.

const MATH_BESSEL_I0E_A = array<f64, 30>(
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1
);
const MATH_BESSEL_I0E_B = array<f64, 25>(
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1
);
const MATH_BESSEL_I1E_A = array<f64, 29>(
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1
);
const MATH_BESSEL_I1E_B = array<f64, 25>(
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1
);
const MATH_BESSEL_K0_A = array<f64, 10>(
    1.37446543561352307156E-16, 4.25981614279661018399E-14, 1.03496952576338420167E-11,
    1.90451637722020886025E-9, 2.53479107902614945675E-7, 2.28621210311945178607E-5,
    1.26461541144692592338E-3, 3.59799365153615016266E-2, 3.44289899924628486886E-1,
    -5.35327393233902768720E-1
);
const MATH_BESSEL_K0_B = array<f64, 25>(
    5.30043377268626276149E-18, -1.64758043015242134646E-17, 5.21039150503902756861E-17,
    -1.67823109680541210385E-16, 5.51205597852431940784E-16, -1.84859337734377901440E-15,
    6.34007647740507060557E-15, -2.22751332699166985548E-14, 8.03289077536357521100E-14,
    -2.98009692317273043925E-13, 1.14034058820847496303E-12, -4.51459788337394416547E-12,
    1.85594911495471785253E-11, -7.95748924447710747776E-11, 3.57739728140030116597E-10,
    -1.69753450938905987466E-9, 8.57403401741422608519E-9, -4.66048989768794782956E-8,
    2.76681363944501510342E-7, -1.83175552271911948767E-6, 1.39498137188764993662E-5,
    -1.28495495816278026384E-4, 1.56988388573005337491E-3, -3.14481013119645005427E-2,
    2.44030308206595545468E0
);
const MATH_BESSEL_K1_A = array<f64, 11>(
    -7.02386347938628759343E-18, -2.42744985051936593393E-15, -6.66690169419932900609E-13,
    -1.41148839263352776110E-10, -2.21338763073472585583E-8, -2.43340614156596823496E-6,
    -1.73028895751305206302E-4, -6.97572385963986435018E-3, -1.22611180822657148235E-1,
    -3.53155960776544875667E-1, 1.52530022733894777053E0
);
const MATH_BESSEL_K1_B = array<f64, 25>(
    -5.75674448366501715755E-18, 1.79405087314755922667E-17, -5.68946255844285935196E-17,
    1.83809354436663880070E-16, -6.05704724837331885336E-16, 2.03870316562433424052E-15,
    -7.01983709041831346144E-15, 2.47715442448130437068E-14, -8.97670518232499435011E-14,
    3.34841966607842919884E-13, -1.28917396095102890680E-12, 5.13963967348173025100E-12,
    -2.12996783842756842877E-11, 9.21831518760500529508E-11, -4.19035475934189648750E-10,
    2.01504975519703286596E-9, -1.03457624656780970260E-8, 5.74108412545004946722E-8,
    -3.50196060308781257119E-7, 2.40648494783721712015E-6, -1.93619797416608296024E-5,
    1.95215518471351631108E-4, -2.85781685962277938680E-3, 1.03923736576817238437E-1,
    2.72062619048444266945E0
);
const MATH_BESSEL_J0_PP = array<f64, 7>(
    7.96936729297347051624E-4, 8.28352392107440799803E-2, 1.23953371646414299388E0,
    5.44725003058768775090E0, 8.74716500199817011941E0, 5.30324038235394892183E0,
    9.99999999999999997821E-1
);
const MATH_BESSEL_J0_PQ = array<f64, 7>(
    9.24408810558863637013E-4, 8.56288474354474431428E-2, 1.25352743901058953537E0,
    5.47097740330417105182E0, 8.76190883237069594232E0, 5.30605288235394617618E0,
    1.00000000000000000218E0
);
const MATH_BESSEL_J0_QP = array<f64, 8>(
    -1.13663838898469149931E-2, -1.28252718670509318512E0, -1.95539544257735972385E1,
    -9.32060152123768231369E1, -1.77681167980488050595E2, -1.47077505154951170175E2,
    -5.14105326766599330220E1, -6.05014350600728481186E0
);
const MATH_BESSEL_J0_QQ = array<f64, 8>(
    1.00000000000000000000E0, 6.43178256118178023184E1, 8.56430025976980587198E2,
    3.88240183605401609683E3, 7.24046774195652478189E3, 5.93072701187316984827E3,
    2.06209331660327847417E3, 2.42005740240291393179E2
);
const MATH_BESSEL_J0_RP = array<f64, 4>(
    -4.79443220978201773821E9, 1.95617491946556577543E12, -2.49248344360967716204E14,
    9.70862251047306323952E15
);
const MATH_BESSEL_J0_RQ = array<f64, 9>(
    1.00000000000000000000E0, 4.99563147152651017219E2, 1.73785401676374683123E5,
    4.84409658339962045305E7, 1.11855537045356834862E10, 2.11277520115489217587E12,
    3.10518229857422583814E14, 3.18121955943204943306E16, 1.71086294081043136091E18
);
const MATH_BESSEL_Y0_YP = array<f64, 8>(
    1.55924367855235737965E4, -1.46639295903971606143E7, 5.43526477051876500413E9,
    -9.82136065717911466409E11, 8.75906394395366999549E13, -3.46628303384729719441E15,
    4.42733268572569800351E16, -1.84950800436986690637E16
);
const MATH_BESSEL_Y0_YQ = array<f64, 8>(
    1.00000000000000000000E0, 1.04128353664259848412E3, 6.26107330137134956842E5,
    2.68919633393814121987E8, 8.64002487103935000337E10, 2.02979612750105546709E13,
    3.17157752842975028269E15, 2.50596256172653059228E17
);
const MATH_BESSEL_J1_PP = array<f64, 7>(
    7.62125616208173112003E-4, 7.31397056940917570436E-2, 1.12719608129684925192E0,
    5.11207951146807644818E0, 8.42404590141772420927E0, 5.21451598682361504063E0,
    1.00000000000000000254E0
);
const MATH_BESSEL_J1_PQ = array<f64, 7>(
    5.71323128072548699714E-4, 6.88455908754495404082E-2, 1.10514232634061696926E0,
    5.07386386128601488557E0, 8.39985554327604159757E0, 5.20982848682361821619E0,
    9.99999999999999997461E-1
);
const MATH_BESSEL_J1_QP = array<f64, 8>(
    5.10862594750176621635E-2, 4.98213872951233449420E0, 7.58238284132545283818E1,
    3.66779609360150777800E2, 7.10856304998926107277E2, 5.97489612400613639965E2,
    2.11688757100572135698E2, 2.52070205858023719784E1
);
const MATH_BESSEL_J1_QQ = array<f64, 8>(
    1.00000000000000000000E0, 7.42373277035675149943E1, 1.05644886038262816351E3,
    4.98641058337653607651E3, 9.56231892404756170795E3, 7.99704160447350683650E3,
    2.82619278517639096600E3, 3.36093607810698293419E2
);
const MATH_BESSEL_J1_RP = array<f64, 4>(
    -8.99971225705559398224E8, 4.52228297998194034323E11, -7.27494245221818276015E13,
    3.68295732863852883286E15
);
const MATH_BESSEL_J1_RQ = array<f64, 9>(
    1.00000000000000000000E0, 6.20836478118054335476E2, 2.56987256757748830383E5,
    8.35146791431949253037E7, 2.21511595479792499675E10, 4.74914122079991414898E12,
    7.84369607876235854894E14, 8.95222336184627338078E16, 5.32278620332680085395E18
);
const MATH_BESSEL_Y1_YP = array<f64, 6>(
    1.26320474790178026440E9, -6.47355876379160291031E11, 1.14509511541823727583E14,
    -8.12770255501325109621E15, 2.02439475713594898196E17, -7.78877196265950026825E17
);
const MATH_BESSEL_Y1_YQ = array<f64, 9>(
    1.00000000000000000000E0, 5.94301592346128195359E2, 2.35564092943068577943E5,
    7.34811944459721705660E7, 1.87601316108706159478E10, 3.88231277496238566008E12,
    6.20557727146953693363E14, 6.87141087355300489866E16, 3.97270608116560655612E18
);

// Scalar constants (Cephes' values).
const MATH_BESSEL_J0_DR1: f64 = 5.78318596294678452118E0;
const MATH_BESSEL_J0_DR2: f64 = 3.04712623436620863991E1;
const MATH_BESSEL_J1_Z1: f64 = 1.46819706421238932572E1;
const MATH_BESSEL_J1_Z2: f64 = 4.92184563216946036703E1;
const MATH_BESSEL_SQ2OPI: f64 = 7.9788456080286535587989E-1;  // sqrt(2 / pi)
const MATH_BESSEL_TWOOPI: f64 = 0.636619772367581343075535;  // 2 / pi
const MATH_BESSEL_NEG_PIO4: f64 = -0.7853981633974483096;  // -pi / 4
const MATH_BESSEL_NEG_THPIO4: f64 = -2.35619449019234492885;  // -3 pi / 4

// Eigen's pchebevl<T, N>: sum' coef[i] T_i(x / 2) by Clenshaw's recurrence, coefficients in
// reverse order (zero-order term last). One copy per coefficient count, as WGSL arrays are typed
// by their length.
fn math_bessel_chbevl10(x: f64, coef: array<f64, 10>) -> f64 {
    var b0 = coef[0];
    var b1: f64 = 0.0;
    var b2: f64 = 0.0;
    for (var i = 1; i < 10; i++) {
        b2 = b1;
        b1 = b0;
        b0 = (x * b1 + coef[i]) - b2;
    }
    return 0.5 * (b0 - b2);
}

fn math_bessel_chbevl11(x: f64, coef: array<f64, 11>) -> f64 {
    var b0 = coef[0];
    var b1: f64 = 0.0;
    var b2: f64 = 0.0;
    for (var i = 1; i < 11; i++) {
        b2 = b1;
        b1 = b0;
        b0 = (x * b1 + coef[i]) - b2;
    }
    return 0.5 * (b0 - b2);
}

fn math_bessel_chbevl25(x: f64, coef: array<f64, 25>) -> f64 {
    var b0 = coef[0];
    var b1: f64 = 0.0;
    var b2: f64 = 0.0;
    for (var i = 1; i < 25; i++) {
        b2 = b1;
        b1 = b0;
        b0 = (x * b1 + coef[i]) - b2;
    }
    return 0.5 * (b0 - b2);
}

fn math_bessel_chbevl29(x: f64, coef: array<f64, 29>) -> f64 {
    var b0 = coef[0];
    var b1: f64 = 0.0;
    var b2: f64 = 0.0;
    for (var i = 1; i < 29; i++) {
        b2 = b1;
        b1 = b0;
        b0 = (x * b1 + coef[i]) - b2;
    }
    return 0.5 * (b0 - b2);
}

fn math_bessel_chbevl30(x: f64, coef: array<f64, 30>) -> f64 {
    var b0 = coef[0];
    var b1: f64 = 0.0;
    var b2: f64 = 0.0;
    for (var i = 1; i < 30; i++) {
        b2 = b1;
        b1 = b0;
        b0 = (x * b1 + coef[i]) - b2;
    }
    return 0.5 * (b0 - b2);
}

// Eigen's prsqrt for double: 1 / sqrt(x), both correctly rounded.
fn math_bessel_rsqrt(x: f64) -> f64 {
    return 1.0 / sqrt(x);
}

// i0e: generic_i0e<T, double> (Cephes i0.c's i0e). Even; Chebyshev in |x| on [0, 8], in 32/|x|
// above.
fn math_bessel_i0e(x: f64) -> f64 {
    if (math_is_nan(x)) { return x; }
    let y = abs(x);
    // Eigen: chbevl(-2, B) * rsqrt(inf) = +0.
    if (math_is_inf(y)) { return 0.0; }
    if (y <= 8.0) {
        return math_bessel_chbevl30(0.5 * y + -2.0, MATH_BESSEL_I0E_A);
    }
    return math_bessel_chbevl25(32.0 / y - 2.0, MATH_BESSEL_I0E_B) * math_bessel_rsqrt(y);
}

// i1e: generic_i1e<T, double> (Cephes i1.c's i1e). Odd; computed for |x| and negated for x < 0.
fn math_bessel_i1e(x: f64) -> f64 {
    if (math_is_nan(x)) { return x; }
    let y = abs(x);
    var r: f64;
    if (math_is_inf(y)) {
        r = 0.0;
    } else if (y <= 8.0) {
        // |x| (about 1/2) underflows below 2^-1021.
        r = math_flush(y * math_bessel_chbevl29(0.5 * y + -2.0, MATH_BESSEL_I1E_A));
    } else {
        r = math_bessel_chbevl25(32.0 / y - 2.0, MATH_BESSEL_I1E_B) * math_bessel_rsqrt(y);
    }
    return select(r, -r, x < 0.0);
}

// i0: generic_i0 = exp(|x|) * i0e(x). NaN at +-inf (inf * 0), inf once exp(|x|) overflows.
fn math_bessel_i0(x: f64) -> f64 {
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    let e = m64_exp(abs(x));
    if (math_is_inf(e)) { return math_inf(); }
    return e * math_bessel_i0e(x);
}

// i1: generic_i1 = exp(|x|) * i1e(x); same special values as i0, with the sign of x.
fn math_bessel_i1(x: f64) -> f64 {
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    let e = m64_exp(abs(x));
    if (math_is_inf(e)) { return select(math_inf(), -math_inf(), x < 0.0); }
    return e * math_bessel_i1e(x);
}

// K0(x) - i0(x) (-log(x / 2)) on (0, 2], Cephes' k0 before that term: Chebyshev in x^2.
// For x < 2^-1021, x / 2 flushes to 0 on TF-CPU and -log(0) = +inf makes k0 and k0e +inf.
fn math_bessel_k0_small(x: f64) -> f64 {
    let h = math_flush(0.5 * x);
    if (h == 0.0) { return math_inf(); }
    let r = math_bessel_chbevl10(x * x + -2.0, MATH_BESSEL_K0_A);
    return math_bessel_i0(x) * -m64_log(h) + r;
}

// k0e: generic_k0e<T, double> (Cephes k0.c's k0e). +inf for x <= 0.
fn math_bessel_k0e(x: f64) -> f64 {
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return math_inf(); }
    if (math_is_inf(x)) { return 0.0; }
    if (x <= 2.0) {
        let r = math_bessel_k0_small(x);
        if (math_is_inf(r)) { return r; }
        return m64_exp(x) * r;
    }
    return math_bessel_chbevl25(8.0 / x - 2.0, MATH_BESSEL_K0_B) * math_bessel_rsqrt(x);
}

// k0: generic_k0<T, double> (Cephes k0.c). +inf for x <= 0; (exp(-x) B(x)) / sqrt(x) above 2,
// each product flushed, so 0 past x ~ 705.4.
fn math_bessel_k0(x: f64) -> f64 {
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return math_inf(); }
    if (math_is_inf(x)) { return 0.0; }
    if (x <= 2.0) {
        return math_bessel_k0_small(x);
    }
    let b = math_bessel_chbevl25(8.0 / x - 2.0, MATH_BESSEL_K0_B);
    let r = math_flush(math_flush(m64_exp(-x)) * b);
    return math_flush(r * math_bessel_rsqrt(x));
}

// K1(x) - i1(x) log(x / 2) on (0, 2], Cephes' k1 before that term: Chebyshev in x^2 over x.
// Where x / 2 flushes to 0 (x < 2^-1021), i1(x) * log(0) is 0 * -inf = NaN in Eigen, or -inf
// should i1(x) survive the flush.
fn math_bessel_k1_small(x: f64) -> f64 {
    let i1 = math_bessel_i1(x);
    let h = math_flush(0.5 * x);
    if (h == 0.0) { return select(-math_inf(), math_nan(), i1 == 0.0); }
    let r = math_bessel_chbevl11(x * x + -2.0, MATH_BESSEL_K1_A) / x;
    return i1 * m64_log(h) + r;
}

// k1e: generic_k1e<T, double> (Cephes k1.c's k1e). +inf for x <= 0.
fn math_bessel_k1e(x: f64) -> f64 {
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return math_inf(); }
    if (math_is_inf(x)) { return 0.0; }
    if (x <= 2.0) {
        let r = math_bessel_k1_small(x);
        if (math_is_nan(r) || math_is_inf(r)) { return r; }
        return r * m64_exp(x);
    }
    return math_bessel_chbevl25(8.0 / x - 2.0, MATH_BESSEL_K1_B) * math_bessel_rsqrt(x);
}

// k1: generic_k1<T, double> (Cephes k1.c). +inf for x <= 0; exp(-x) (B(x) / sqrt(x)) above 2,
// flushed, so 0 past x ~ 705.4.
fn math_bessel_k1(x: f64) -> f64 {
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return math_inf(); }
    if (math_is_inf(x)) { return 0.0; }
    if (x <= 2.0) {
        return math_bessel_k1_small(x);
    }
    let b = math_bessel_chbevl25(8.0 / x - 2.0, MATH_BESSEL_K1_B) * math_bessel_rsqrt(x);
    return math_flush(math_flush(m64_exp(-x)) * b);
}

// Hankel's asymptotic form for y > 5 (Cephes j0.c / j1.c, as Eigen writes it):
// (P cos(t) + w Q sin(t)) sqrt(2/pi) / sqrt(y), t = y + phase and w = -5/y (with sin and cos, and
// the sign of w, swapped for y0 and y1), P and Q rational in s = 25/y^2. `order1` picks j1's
// tables; `second_kind` picks the Y form.
fn math_bessel_asymptotic(y: f64, order1: bool, second_kind: bool) -> f64 {
    // y^2 overflows past ~1.3e154: s = 0 then, as in Eigen.
    let s = 25.0 / (y * y);
    var p: f64;
    var q: f64;
    var t: f64;
    if (order1) {
        p = math_polevl6(s, MATH_BESSEL_J1_PP) / math_polevl6(s, MATH_BESSEL_J1_PQ);
        q = math_polevl7(s, MATH_BESSEL_J1_QP) / math_polevl7(s, MATH_BESSEL_J1_QQ);
        t = y + MATH_BESSEL_NEG_THPIO4;
    } else {
        p = math_polevl6(s, MATH_BESSEL_J0_PP) / math_polevl6(s, MATH_BESSEL_J0_PQ);
        q = math_polevl7(s, MATH_BESSEL_J0_QP) / math_polevl7(s, MATH_BESSEL_J0_QQ);
        t = y + MATH_BESSEL_NEG_PIO4;
    }
    let c = m64_cos(t);
    let sn = m64_sin(t);
    var r: f64;
    if (second_kind) {
        r = p * sn + (5.0 / y) * (q * c);
    } else {
        r = p * c + (-5.0 / y) * (q * sn);
    }
    return r * (MATH_BESSEL_SQ2OPI * math_bessel_rsqrt(y));
}

// j0: generic_j0<T, double> (Cephes j0.c). Even. On [0, 5] (x^2 - r1^2)(x^2 - r2^2) R(x^2), with
// the first two zeros taken out (1 - x^2/4 below 1e-5); the asymptotic form above. NaN at +-inf
// (cos(inf) in Eigen).
fn math_bessel_j0(x: f64) -> f64 {
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    let y = abs(x);
    if (y <= 5.0) {
        let z = y * y;
        if (y < 1.0e-5) {
            return z * -0.25 + 1.0;
        }
        let r = math_polevl3(z, MATH_BESSEL_J0_RP) / math_polevl8(z, MATH_BESSEL_J0_RQ);
        return ((z - MATH_BESSEL_J0_DR1) * (z - MATH_BESSEL_J0_DR2)) * r;
    }
    return math_bessel_asymptotic(y, false, false);
}

// j1: generic_j1<T, double> (Cephes j1.c), odd: ((R(x^2) x) (x^2 - r1^2)) (x^2 - r2^2) on [0, 5],
// each product flushed as on TF-CPU (so 0 for |x| < ~3.9e-306); the asymptotic form above, negated
// for x < 0 (Eigen's fix to Cephes). NaN at +-inf.
fn math_bessel_j1(x: f64) -> f64 {
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    let y = abs(x);
    if (y <= 5.0) {
        let z = y * y;
        var r = math_polevl3(z, MATH_BESSEL_J1_RP) / math_polevl8(z, MATH_BESSEL_J1_RQ);
        r = math_flush(r * x);
        r = math_flush(r * (z - MATH_BESSEL_J1_Z1));
        return r * (z - MATH_BESSEL_J1_Z2);
    }
    let r = math_bessel_asymptotic(y, true, false);
    return select(r, -r, x < 0.0);
}

// y0: generic_y0<T, double> (Cephes j0.c's y0): R(x^2) + 2/pi log(x) j0(x) on (0, 5], the
// asymptotic form above. -inf for x <= 0, NaN at +inf (sin(inf) in Eigen).
fn math_bessel_y0(x: f64) -> f64 {
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return -math_inf(); }
    if (math_is_inf(x)) { return math_nan(); }
    if (x <= 5.0) {
        let z = x * x;
        let r = math_polevl7(z, MATH_BESSEL_Y0_YP) / math_polevl7(z, MATH_BESSEL_Y0_YQ);
        return (MATH_BESSEL_TWOOPI * m64_log(x)) * math_bessel_j0(x) + r;
    }
    return math_bessel_asymptotic(x, false, true);
}

// y1: generic_y1<T, double> (Cephes j1.c's y1): x R(x^2) + 2/pi (j1(x) log(x) - 1/x) on (0, 5],
// the asymptotic form above. -inf for x <= 0, NaN at +inf.
fn math_bessel_y1(x: f64) -> f64 {
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return -math_inf(); }
    if (math_is_inf(x)) { return math_nan(); }
    if (x <= 5.0) {
        let z = x * x;
        let r = math_polevl5(z, MATH_BESSEL_Y1_YP) / math_polevl8(z, MATH_BESSEL_Y1_YQ);
        return r * x + MATH_BESSEL_TWOOPI * (math_bessel_j1(x) * m64_log(x) + -1.0 / x);
    }
    return math_bessel_asymptotic(x, true, true);
}

// Dawson's integral, the exponential integral Ei, the Fresnel integrals C and S, and Spence's
// integral, in float64 (on `math_f64.wgsl` and this file's shared section): the ops Dawsn,
// Expint, FresnelCos, FresnelSin and Spence as TF-CPU computes them for double, i.e. the scalar
// code of dawsn_op, expint_op, fresnel_cos_op, fresnel_sin_op and spence_op in TF's
// tensorflow/core/kernels/special_math/special_math_op_misc_impl.h (Cephes' dawsn.c, ei.c,
// fresnl.c and spence.c, ported to Eigen). This is special_math.wgsl's float32 port with the
// coefficients at full double precision (Cephes' decimal constants, converted as C converts them),
// the double constants (Scalar(EIGEN_PI), EUL = 0.5772156649015329, ...) and the same branch points
// and evaluation order; numext::exp/log/log1p/sin/cos are math_f64.wgsl's m64_ ones. Eigen's
// ppolevl<T, N>(x, c) is Horner's rule with pmadd(a, b, c) = a * b + c (TF's CPU build does not
// fuse it).
//
// Special values are decided up front, because WGSL lets implementations assume finite math; they
// are the values TF-CPU's float64 kernels return (its formulas evaluated on NaN, +-inf, +-0):
//   NaN -> NaN everywhere.
//   dawsn(+-inf) -> +0; dawsn(x) for |x| >= 1e9 is 0.5 / |x|, positive for negative x too (TF
//     computes 0.5 / x there and then negates it for x < 0), flushed to 0 past |x| = 2^1021;
//     dawsn(-0) -> +0.
//   expint(x < 0) -> NaN; expint(+-0) -> -inf; expint(+inf) -> NaN (exp(inf) * (1/inf));
//     expint -> +inf once exp(x) overflows (x > ~709.78), NaN for x > 2^1022 (1/x flushes to 0).
//   fresnel_cos, fresnel_sin(|x| > 36974, +-inf included) -> +-0.5; (-0) -> +0.
//   spence(x < 0, -inf) -> NaN; spence(+-0) -> pi^2/6; spence(1) -> 0; spence(+inf) -> NaN and
//     spence(x > 2^1022) -> NaN (1/x flushes to 0, and Eigen evaluates -log(0) * log1p(-0)).
// Subnormals are taken as zero of the same sign, as TF-CPU does (its kernels run with
// denormals-are-zero and flush-to-zero): on every argument, on 1/x where it can underflow, and on
// the results that can (dawsn past |x| = 2^1021, fresnel_sin near 0), so that no result depends on
// whether the adapter flushes them. Unlike float32 (where TF's logf reads the raw bits of a
// subnormal argument), TF-CPU's float64 expint returns -inf for every subnormal argument, of
// either sign, as for +-0.
// Names start with `math_misc_` (helpers) or are the five entry points, so that they cannot
// collide with the including shader's own.

const MATH_MISC_DAWSN_AN: array<f64, 10> = array<f64, 10>(
    1.13681498971755972054E-11,
    8.49262267667473811108E-10,
    1.94434204175553054283E-8,
    9.53151741254484363489E-7,
    3.07828309874913200438E-6,
    3.52513368520288738649E-4,
    -8.50149846724410912031E-4,
    4.22618223005546594270E-2,
    -9.17480371773452345351E-2,
    9.99999999999999994612E-1
);

const MATH_MISC_DAWSN_AD: array<f64, 11> = array<f64, 11>(
    2.40372073066762605484E-11,
    1.48864681368493396752E-9,
    5.21265281010541664570E-8,
    1.27258478273186970203E-6,
    2.32490249820789513991E-5,
    3.25524741826057911661E-4,
    3.48805814657162590916E-3,
    2.79448531198828973716E-2,
    1.58874241960120565368E-1,
    5.74918629489320327824E-1,
    1.00000000000000000539E0
);

const MATH_MISC_DAWSN_BN: array<f64, 11> = array<f64, 11>(
    5.08955156417900903354E-1,
    -2.44754418142697847934E-1,
    9.41512335303534411857E-2,
    -2.18711255142039025206E-2,
    3.66207612329569181322E-3,
    -4.23209114460388756528E-4,
    3.59641304793896631888E-5,
    -2.14640351719968974225E-6,
    9.10010780076391431042E-8,
    -2.40274520828250956942E-9,
    3.59233385440928410398E-11
);

const MATH_MISC_DAWSN_BD: array<f64, 11> = array<f64, 11>(
    1.0,
    -6.31839869873368190192E-1,
    2.36706788228248691528E-1,
    -5.31806367003223277662E-2,
    8.48041718586295374409E-3,
    -9.47996768486665330168E-4,
    7.81025592944552338085E-5,
    -4.55875153252442634831E-6,
    1.89100358111421846170E-7,
    -4.91324691331920606875E-9,
    7.18466403235734541950E-11
);

const MATH_MISC_DAWSN_CN: array<f64, 5> = array<f64, 5>(
    -5.90592860534773254987E-1,
    6.29235242724368800674E-1,
    -1.72858975380388136411E-1,
    1.64837047825189632310E-2,
    -4.86827613020462700845E-4
);

const MATH_MISC_DAWSN_CD: array<f64, 6> = array<f64, 6>(
    1.0,
    -2.69820057197544900361E0,
    1.73270799045947845857E0,
    -3.93708582281939493482E-1,
    3.44278924041233391079E-2,
    -9.73655226040941223894E-4
);

const MATH_MISC_EXPINT_A: array<f64, 6> = array<f64, 6>(
    -5.350447357812542947283E0,
    2.185049168816613393830E2,
    -4.176572384826693777058E3,
    5.541176756393557601232E4,
    -3.313381331178144034309E5,
    1.592627163384945414220E6
);

const MATH_MISC_EXPINT_B: array<f64, 7> = array<f64, 7>(
    1.0,
    -5.250547959112862969197E1,
    1.259616186786790571525E3,
    -1.756549581973534652631E4,
    1.493062117002725991967E5,
    -7.294949239640527645655E5,
    1.592627163384945429726E6
);

const MATH_MISC_EXPINT_A6: array<f64, 8> = array<f64, 8>(
    1.981808503259689673238E-2,
    -1.271645625984917501326E0,
    -2.088160335681228318920E0,
    2.755544509187936721172E0,
    -4.409507048701600257171E-1,
    4.665623805935891391017E-2,
    -1.545042679673485262580E-3,
    7.059980605299617478514E-5
);

const MATH_MISC_EXPINT_B6: array<f64, 8> = array<f64, 8>(
    1.0,
    1.476498670914921440652E0,
    5.629177174822436244827E-1,
    1.699017897879307263248E-1,
    2.291647179034212017463E-2,
    4.450150439728752875043E-3,
    1.727439612206521482874E-4,
    3.953167195549672482304E-5
);

const MATH_MISC_EXPINT_A5: array<f64, 8> = array<f64, 8>(
    -1.373215375871208729803E0,
    -7.084559133740838761406E-1,
    1.580806855547941010501E0,
    -2.601500427425622944234E-1,
    2.994674694113713763365E-2,
    -1.038086040188744005513E-3,
    4.371064420753005429514E-5,
    2.141783679522602903795E-6
);

const MATH_MISC_EXPINT_B5: array<f64, 9> = array<f64, 9>(
    1.0,
    8.585231423622028380768E-1,
    4.483285822873995129957E-1,
    7.687932158124475434091E-2,
    2.449868241021887685904E-2,
    8.832165941927796567926E-4,
    4.590952299511353531215E-4,
    -4.729848351866523044863E-6,
    2.665195537390710170105E-6
);

const MATH_MISC_EXPINT_A2: array<f64, 10> = array<f64, 10>(
    -2.106934601691916512584E0,
    1.732733869664688041885E0,
    -2.423619178935841904839E-1,
    2.322724180937565842585E-2,
    2.372880440493179832059E-4,
    -8.343219561192552752335E-5,
    1.363408795605250394881E-5,
    -3.655412321999253963714E-7,
    1.464941733975961318456E-8,
    6.176407863710360207074E-10
);

const MATH_MISC_EXPINT_B2: array<f64, 10> = array<f64, 10>(
    1.0,
    -2.298062239901678075778E-1,
    1.105077041474037862347E-1,
    -1.566542966630792353556E-2,
    2.761106850817352773874E-3,
    -2.089148012284048449115E-4,
    1.708528938807675304186E-5,
    -4.459311796356686423199E-7,
    1.394634930353847498145E-8,
    6.150865933977338354138E-10
);

const MATH_MISC_EXPINT_A4: array<f64, 8> = array<f64, 8>(
    -2.458119367674020323359E-1,
    -1.483382253322077687183E-1,
    7.248291795735551591813E-2,
    -1.348315687380940523823E-2,
    1.342775069788636972294E-3,
    -7.942465637159712264564E-5,
    2.644179518984235952241E-6,
    -4.239473659313765177195E-8
);

const MATH_MISC_EXPINT_B4: array<f64, 9> = array<f64, 9>(
    1.0,
    -1.044225908443871106315E-1,
    -2.676453128101402655055E-1,
    9.695000254621984627876E-2,
    -1.601745692712991078208E-2,
    1.496414899205908021882E-3,
    -8.462452563778485013756E-5,
    2.728938403476726394024E-6,
    -4.239462431819542051337E-8
);

const MATH_MISC_EXPINT_A7: array<f64, 6> = array<f64, 6>(
    1.212561118105456670844E-1,
    -5.823133179043894485122E-1,
    2.348887314557016779211E-1,
    -3.040034318113248237280E-2,
    1.510082146865190661777E-3,
    -2.523137095499571377122E-5
);

const MATH_MISC_EXPINT_B7: array<f64, 6> = array<f64, 6>(
    1.0,
    -1.002252150365854016662E0,
    2.928709694872224144953E-1,
    -3.337004338674007801307E-2,
    1.560544881127388842819E-3,
    -2.523137093603234562648E-5
);

const MATH_MISC_EXPINT_A3: array<f64, 9> = array<f64, 9>(
    -7.657847078286127362028E-1,
    6.886192415566705051750E-1,
    -2.132598113545206124553E-1,
    3.346107552384193813594E-2,
    -3.076541477344756050249E-3,
    1.747119316454907477380E-4,
    -6.103711682274170530369E-6,
    1.218032765428652199087E-7,
    -1.086076102793290233007E-9
);

const MATH_MISC_EXPINT_B3: array<f64, 10> = array<f64, 10>(
    1.0,
    -1.888802868662308731041E0,
    1.066691687211408896850E0,
    -2.751915982306380647738E-1,
    3.930852688233823569726E-2,
    -3.414684558602365085394E-3,
    1.866844370703555398195E-4,
    -6.345146083130515357861E-6,
    1.239754287483206878024E-7,
    -1.086076102793126632978E-9
);

const MATH_MISC_FRESNEL_CN: array<f64, 6> = array<f64, 6>(
    -4.98843114573573548651E-8,
    9.50428062829859605134E-6,
    -6.45191435683965050962E-4,
    1.88843319396703850064E-2,
    -2.05525900955013891793E-1,
    9.99999999999999998822E-1
);

const MATH_MISC_FRESNEL_CD: array<f64, 7> = array<f64, 7>(
    3.99982968972495980367E-12,
    9.15439215774657478799E-10,
    1.25001862479598821474E-7,
    1.22262789024179030997E-5,
    8.68029542941784300606E-4,
    4.12142090722199792936E-2,
    1.00000000000000000118E0
);

const MATH_MISC_FRESNEL_SN: array<f64, 6> = array<f64, 6>(
    -2.99181919401019853726E3,
    7.08840045257738576863E5,
    -6.29741486205862506537E7,
    2.54890880573376359104E9,
    -4.42979518059697779103E10,
    3.18016297876567817986E11
);

const MATH_MISC_FRESNEL_SD: array<f64, 7> = array<f64, 7>(
    1.0,
    2.81376268889994315696E2,
    4.55847810806532581675E4,
    5.17343888770096400730E6,
    4.19320245898111231129E8,
    2.24411795645340920940E10,
    6.07366389490084639049E11
);

const MATH_MISC_FRESNEL_FN: array<f64, 10> = array<f64, 10>(
    4.21543555043677546506E-1,
    1.43407919780758885261E-1,
    1.15220955073585758835E-2,
    3.45017939782574027900E-4,
    4.63613749287867322088E-6,
    3.05568983790257605827E-8,
    1.02304514164907233465E-10,
    1.72010743268161828879E-13,
    1.34283276233062758925E-16,
    3.76329711269987889006E-20
);

const MATH_MISC_FRESNEL_FD: array<f64, 11> = array<f64, 11>(
    1.0,
    7.51586398353378947175E-1,
    1.16888925859191382142E-1,
    6.44051526508858611005E-3,
    1.55934409164153020873E-4,
    1.84627567348930545870E-6,
    1.12699224763999035261E-8,
    3.60140029589371370404E-11,
    5.88754533621578410010E-14,
    4.52001434074129701496E-17,
    1.25443237090011264384E-20
);

const MATH_MISC_FRESNEL_GN: array<f64, 11> = array<f64, 11>(
    5.04442073643383265887E-1,
    1.97102833525523411709E-1,
    1.87648584092575249293E-2,
    6.84079380915393090172E-4,
    1.15138826111884280931E-5,
    9.82852443688422223854E-8,
    4.45344415861750144738E-10,
    1.08268041139020870318E-12,
    1.37555460633261799868E-15,
    8.36354435630677421531E-19,
    1.86958710162783235106E-22
);

const MATH_MISC_FRESNEL_GD: array<f64, 12> = array<f64, 12>(
    1.0,
    1.47495759925128324529E0,
    3.37748989120019970451E-1,
    2.53603741420338795122E-2,
    8.14679107184306179049E-4,
    1.27545075667729118702E-5,
    1.04314589657571990585E-7,
    4.60680728146520428211E-10,
    1.10273215066240270757E-12,
    1.38796531259578871258E-15,
    8.39158816283118707363E-19,
    1.86958710162783236342E-22
);

const MATH_MISC_SPENCE_A: array<f64, 8> = array<f64, 8>(
    4.65128586073990045278E-5,
    7.31589045238094711071E-3,
    1.33847639578309018650E-1,
    8.79691311754530315341E-1,
    2.71149851196553469920E0,
    4.25697156008121755724E0,
    3.29771340985225106936E0,
    1.00000000000000000126E0
);

const MATH_MISC_SPENCE_B: array<f64, 8> = array<f64, 8>(
    6.90990488912553276999E-4,
    2.54043763932544379113E-2,
    2.82974860602568089943E-1,
    1.41172597751831069617E0,
    3.63800533345137075418E0,
    5.03278880143316990390E0,
    3.54771340985225096217E0,
    9.99999999999999998740E-1
);
// ---- Dawson's integral: dawsn_op (Cephes dawsn.c) ----

// generic_dawsn_interval_1, |x| in [0, 3.25): x AN(x^2) / AD(x^2).
fn math_misc_dawsn_interval_1(x: f64) -> f64 {
    let x2 = x * x;
    return (x * math_polevl9(x2, MATH_MISC_DAWSN_AN)) / math_polevl10(x2, MATH_MISC_DAWSN_AD);
}

// generic_dawsn_interval_2, |x| in [3.25, 6.25): (1/x + 1/x^2 BN(1/x^2) / (x BD(1/x^2))) / 2.
fn math_misc_dawsn_interval_2(x: f64) -> f64 {
    let inverse_x = 1.0 / x;
    let inverse_x2 = inverse_x * inverse_x;
    let z = math_polevl10(inverse_x2, MATH_MISC_DAWSN_BN) / (x * math_polevl10(inverse_x2, MATH_MISC_DAWSN_BD));
    let y = inverse_x2 * z + inverse_x;
    return 0.5 * y;
}

// generic_dawsn_interval_3, |x| in [6.25, 1e9): as interval 2, with CN and CD.
fn math_misc_dawsn_interval_3(x: f64) -> f64 {
    let inverse_x = 1.0 / x;
    let inverse_x2 = inverse_x * inverse_x;
    let z = math_polevl4(inverse_x2, MATH_MISC_DAWSN_CN) / (x * math_polevl5(inverse_x2, MATH_MISC_DAWSN_CD));
    let y = inverse_x2 * z + inverse_x;
    return 0.5 * y;
}

// dawsn(x) = exp(-x^2) * integral_0^x exp(t^2) dt. Odd, computed on |x| and negated for x < 0,
// except past |x| >= 1e9 (see the header).
fn math_dawsn(x_in: f64) -> f64 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    // TF: 0.5 / +-inf = +-0, negated for -inf: +0 either way.
    if (math_is_inf(x)) { return 0.0; }
    let abs_x = abs(x);
    if (abs_x >= 1.0e9) {
        // TF: dawsn = 0.5 / x, then -dawsn for x < 0, i.e. 0.5 / |x|; underflows past 2^1021.
        return math_flush(0.5 / abs_x);
    }
    var dawsn: f64;
    if (abs_x < 3.25) {
        dawsn = math_misc_dawsn_interval_1(abs_x);
    } else if (abs_x < 6.25) {
        dawsn = math_misc_dawsn_interval_2(abs_x);
    } else {
        dawsn = math_misc_dawsn_interval_3(abs_x);
    }
    return select(dawsn, -dawsn, x < 0.0);
}

// ---- Exponential integral Ei: expint_op (Cephes ei.c) ----

// Euler's gamma, Scalar(0.5772156649015329).
const MATH_MISC_EUL: f64 = 0.5772156649015329;

// generic_expint_interval_2 .. _7 share x exp(-x) Ei(x) - 1 = w R(w), w = 1/x:
// Ei(x) = exp(x) * w * (w R(w) + 1), evaluated as TF does, (exp(x) * w) * f.
fn math_misc_expint_large(x: f64, w: f64, r: f64) -> f64 {
    let f = w * r + 1.0;
    let e = m64_exp(x);
    // exp(x) overflows past ~709.78: TF's inf * w * f (w, f > 0) is +inf.
    if (math_is_inf(e)) { return math_inf(); }
    return e * w * f;
}

// Ei(x) = -integral_{-x}^inf exp(-t)/t dt (principal value), for x >= 0; NaN for x < 0.
fn math_expint(x_in: f64) -> f64 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x < 0.0) { return math_nan(); }
    // TF: exp(inf) * (1/inf) * f = inf * 0.
    if (math_is_inf(x)) { return math_nan(); }
    if (x < 2.0) {
        // generic_expint_interval_1, [0, 2): Ei(x) - EUL - log(x) = x A(x) / B(x); log(+-0) = -inf.
        // Near Ei's zero (x ~ 0.3725) the sum cancels, so there the result (TF's too) follows the
        // last bit of log(x), and m64_log and glibc's log differ in a few percent of cases.
        if (x == 0.0) { return -math_inf(); }
        let f = math_polevl5(x, MATH_MISC_EXPINT_A) / math_polevl6(x, MATH_MISC_EXPINT_B);
        return x * f + MATH_MISC_EUL + m64_log(x);
    }
    // TF flushes 1/x to zero past 2^1022, and then exp(x) * 0 = inf * 0.
    let w = math_flush(1.0 / x);
    if (w == 0.0) { return math_nan(); }
    var r: f64;
    if (x < 4.0) {
        // generic_expint_interval_2, [2, 4).
        r = math_polevl7(w, MATH_MISC_EXPINT_A6) / math_polevl7(w, MATH_MISC_EXPINT_B6);
    } else if (x < 8.0) {
        // generic_expint_interval_3, [4, 8).
        r = math_polevl7(w, MATH_MISC_EXPINT_A5) / math_polevl8(w, MATH_MISC_EXPINT_B5);
    } else if (x < 16.0) {
        // generic_expint_interval_4, [8, 16).
        r = math_polevl9(w, MATH_MISC_EXPINT_A2) / math_polevl9(w, MATH_MISC_EXPINT_B2);
    } else if (x < 32.0) {
        // generic_expint_interval_5, [16, 32).
        r = math_polevl7(w, MATH_MISC_EXPINT_A4) / math_polevl8(w, MATH_MISC_EXPINT_B4);
    } else if (x < 64.0) {
        // generic_expint_interval_6, [32, 64).
        r = math_polevl5(w, MATH_MISC_EXPINT_A7) / math_polevl5(w, MATH_MISC_EXPINT_B7);
    } else {
        // generic_expint_interval_7, [64, inf).
        r = math_polevl8(w, MATH_MISC_EXPINT_A3) / math_polevl9(w, MATH_MISC_EXPINT_B3);
    }
    return math_misc_expint_large(x, w, r);
}

// ---- Fresnel integrals: fresnel_cos_op, fresnel_sin_op (Cephes fresnl.c) ----

// Scalar(EIGEN_PI) and Scalar(1.5707963267948966).
const MATH_MISC_PI: f64 = 3.141592653589793;
const MATH_MISC_HALF_PI: f64 = 1.5707963267948966;

// generic_fresnel_cos_interval_1, x^2 < 2.5625: x CN(x^4) / CD(x^4).
fn math_misc_fresnel_cos_interval_1(x: f64) -> f64 {
    let x2 = x * x;
    let x4 = x2 * x2;
    return x * math_polevl5(x4, MATH_MISC_FRESNEL_CN) / math_polevl6(x4, MATH_MISC_FRESNEL_CD);
}

// generic_fresnel_sin_interval_1, x^2 < 2.5625: x^3 SN(x^4) / SD(x^4). x^3 flushed as TF does
// (the result is then subnormal or zero either way, and flushed by the caller).
fn math_misc_fresnel_sin_interval_1(x: f64) -> f64 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let z = math_flush(x * x2);
    return z * math_polevl5(x4, MATH_MISC_FRESNEL_SN) / math_polevl6(x4, MATH_MISC_FRESNEL_SD);
}

// generic_fresnel_asymp, x^2 >= 2.5625 and x <= 36974: the auxiliary functions f and g in
// t = 1 / (pi x^2), then C = 1/2 + (f sin z - g cos z) / (pi x), S = 1/2 - (f cos z + g sin z) /
// (pi x), z = (pi/2) x^2 computed in double as TF does (so its sin and cos see the rounded z).
fn math_misc_fresnel_asymp(x: f64, use_sin: bool) -> f64 {
    let x2 = x * x;
    let t = 1.0 / (MATH_MISC_PI * x2);
    let u = t * t;
    let f = 1.0 - u * (math_polevl9(u, MATH_MISC_FRESNEL_FN) / math_polevl10(u, MATH_MISC_FRESNEL_FD));
    let g = t * math_polevl10(u, MATH_MISC_FRESNEL_GN) / math_polevl11(u, MATH_MISC_FRESNEL_GD);
    let z = MATH_MISC_HALF_PI * x2;
    let c = m64_cos(z);
    let s = m64_sin(z);
    let y = 1.0 / (MATH_MISC_PI * x);
    if (use_sin) {
        var intermediate = f * c;
        intermediate += g * s;
        return 0.5 - intermediate * y;
    }
    var intermediate = f * s;
    intermediate -= g * c;
    return 0.5 + intermediate * y;
}

// The common body of fresnel_cos_op and fresnel_sin_op: odd, computed on |x|; +-0.5 past 36974.
fn math_misc_fresnel(x_in: f64, use_sin: bool) -> f64 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    let abs_x = abs(x);
    // Also +-inf.
    if (abs_x > 36974.0) { return select(f64(0.5), f64(-0.5), x < 0.0); }
    let x2 = x * x;
    var r: f64;
    if (x2 < 2.5625) {
        if (use_sin) {
            r = math_misc_fresnel_sin_interval_1(abs_x);
        } else {
            r = math_misc_fresnel_cos_interval_1(abs_x);
        }
    } else {
        r = math_misc_fresnel_asymp(abs_x, use_sin);
    }
    // Flushed before the sign is applied, as TF does (-fresnel_sin of a flushed result is -0;
    // math_flush would turn -0 into +0).
    r = math_flush(r);
    return select(r, -r, x < 0.0);
}

// C(x) = integral_0^x cos(pi t^2 / 2) dt.
fn math_fresnel_cos(x: f64) -> f64 {
    return math_misc_fresnel(x, false);
}

// S(x) = integral_0^x sin(pi t^2 / 2) dt.
fn math_fresnel_sin(x: f64) -> f64 {
    return math_misc_fresnel(x, true);
}

// ---- Spence's integral: spence_op (Cephes spence.c) ----

// Scalar(EIGEN_PI * EIGEN_PI / 6.0), computed in long double and rounded to double.
const MATH_MISC_PI2O6: f64 = 1.6449340668482264;

// spence(x) = integral_1^x log(t) / (1 - t) dt = dilog(1 - x), for x >= 0; NaN for x < 0.
fn math_spence(x_in: f64) -> f64 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x < 0.0) { return math_nan(); }
    if (x == 0.0) { return MATH_MISC_PI2O6; }
    if (x == 1.0) { return 0.0; }
    // TF: y = 1/inf = 0, or 1/x flushed to 0 past 2^1022; then -log(0) * log1p(-0) = inf * -0.
    if (math_is_inf(x)) { return math_nan(); }
    var y = x;
    if (x >= 2.0) {
        y = math_flush(1.0 / x);
        if (y == 0.0) { return math_nan(); }
    }
    var w: f64;
    if (1.5 < y) {
        w = 1.0 / y - 1.0;
    } else if (y < 0.5) {
        w = -y;
    } else {
        w = y - 1.0;
    }
    var spence = -w * (math_polevl7(w, MATH_MISC_SPENCE_A) / math_polevl7(w, MATH_MISC_SPENCE_B));
    let z = m64_log(y);
    if (y < 0.5) {
        spence = -z * m64_log1p(-y) + MATH_MISC_PI2O6 - spence;
    }
    if (1.5 < x) {
        spence = -0.5 * z * z - spence;
    }
    return spence;
}
