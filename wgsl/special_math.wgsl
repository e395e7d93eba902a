// Special functions of float32 (`math.wgsl` comes first): Cephes' algorithms as Eigen's float code
// computes them, which TF-CPU's and TF-GPU's kernels call (Ndtri, Erfinv, Igamma, Igammac,
// IgammaGradA, RandomGammaGrad, Zeta, Polygamma, the Bessel functions, Dawsn, Expint, FresnelCos,
// FresnelSin and Spence), on `math.wgsl`'s
// accurate exp, log, lgamma and digamma. A library of its own, apart from `math.wgsl`: their loops
// and tables would slow the compile of every shader that includes the common math.

// Subnormal -> zero of the same sign, from the bits: TF's denormals-are-zero on arguments and
// flush-to-zero on results (TF-CPU's threads and TF-GPU's kernels both), whichever the adapter does.
fn math_flush(x: f32) -> f32 {
    if ((bitcast<u32>(x) & 0x7fffffffu) < 0x00800000u) {
        return bitcast<f32>(bitcast<u32>(x) & 0x80000000u);
    }
    return x;
}

// Cephes' polevl (Eigen's ppolevl<T, N>): c[0] x^N + c[1] x^(N-1) + ... + c[N] by Horner's rule,
// highest degree first, a * b + c written out (no reliance on fma being fused). One copy per
// degree, as WGSL arrays are typed by their length; every section of the library uses these.
fn math_polevl4(x: f32, c: array<f32, 5>) -> f32 {
    var acc = c[0];
    for (var i = 1; i < 5; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl5(x: f32, c: array<f32, 6>) -> f32 {
    var acc = c[0];
    for (var i = 1; i < 6; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl6(x: f32, c: array<f32, 7>) -> f32 {
    var acc = c[0];
    for (var i = 1; i < 7; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl7(x: f32, c: array<f32, 8>) -> f32 {
    var acc = c[0];
    for (var i = 1; i < 8; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl8(x: f32, c: array<f32, 9>) -> f32 {
    var acc = c[0];
    for (var i = 1; i < 9; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl9(x: f32, c: array<f32, 10>) -> f32 {
    var acc = c[0];
    for (var i = 1; i < 10; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl10(x: f32, c: array<f32, 11>) -> f32 {
    var acc = c[0];
    for (var i = 1; i < 11; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

fn math_polevl11(x: f32, c: array<f32, 12>) -> f32 {
    var acc = c[0];
    for (var i = 1; i < 12; i++) {
        acc = acc * x + c[i];
    }
    return acc;
}

const MATH_NDTRI_P1: array<f32, 9> = array<f32, 9>(4.05544892305962419923, 31.5251094599893866154, 57.1628192246421288162, 44.0805073893200834700, 14.6849561928858024014, 2.18663306850790267539, -0.140256079171354495875, -0.0350424626827848203418, -0.000857456785154685413611);
const MATH_NDTRI_Q1: array<f32, 9> = array<f32, 9>(1.0, 15.7799883256466749731, 45.3907635128879210584, 41.3172038254672030440, 15.0425385692907503408, 2.50464946208309415979, -0.142182922854787788574, -0.0380806407691578277194, -0.000933259480895457427372);
const MATH_NDTRI_P2: array<f32, 9> = array<f32, 9>(3.23774891776946035970, 6.91522889068984211695, 3.93881025292474443415, 1.33303460815807542389, 0.201485389549179081538, 0.0123716634817820021358, 0.000301581553508235416007, 2.65806974686737550832e-6, 6.23974539184983293730e-9);
const MATH_NDTRI_Q2: array<f32, 9> = array<f32, 9>(1.0, 6.02427039364742014255, 3.67983563856160859403, 1.37702099489081330271, 0.216236993594496635890, 0.0134204006088543189037, 0.000328014464682127739104, 2.89247864745380683936e-6, 6.79019408009981274425e-9);

// The inverse of the standard normal CDF: -inf at 0, +inf at 1, NaN outside [0, 1] (Eigen's
// generic_ndtri).
fn math_ndtri(a_in: f32) -> f32 {
    let a = math_flush(a_in);
    let exp_neg_two = 0.13533528323661269189;
    let flip = a <= 1.0 - exp_neg_two;
    let b = select(1.0 - a, a, flip);
    var r: f32;
    if (exp_neg_two < b) {
        let c = b - 0.5;
        let c2 = c * c;
        let p = (((-59.9633501014107895267 * c2 + 98.0010754185999661536) * c2 - 56.6762857469070293439) * c2
            + 13.9312609387279679503) * c2 - 1.23916583867381258016;
        let q = (((((((c2 + 1.95448858338141759834) * c2 + 4.67627912898881538453) * c2 + 86.3602421390890590575) * c2
            - 225.462687854119370527) * c2 + 200.260212380060660359) * c2 - 82.0372256168333339912) * c2
            + 15.9056225126211695515) * c2 - 1.18331621121330003142;
        r = (c * (c2 * (p / q)) + c) * 2.50662827463100050242;
    } else {
        let x = math_sqrt(-2.0 * math_log(b));
        let x0 = x - math_log(x) / x;
        let z = 1.0 / x;
        var ratio: f32;
        if (x < 8.0) {
            ratio = math_polevl8(z, MATH_NDTRI_P1) / math_polevl8(z, MATH_NDTRI_Q1);
        } else {
            ratio = math_polevl8(z, MATH_NDTRI_P2) / math_polevl8(z, MATH_NDTRI_Q2);
        }
        r = x0 - z * ratio;
        r = select(r, -r, flip);
    }
    return select(select(r, math_inf(), a == 1.0), -math_inf(), a == 0.0);
}

// TF's erfinv: ndtri((x + 1) / 2) / sqrt(2).
fn math_erfinv(x: f32) -> f32 {
    return math_ndtri(0.5 * x + 0.5) * 0.70710678118654752440;
}

// Eigen's IgammaComputationMode: the value, d/da, or the Gamma sample's implicit derivative.
const MATH_IGAMMA_VALUE: u32 = 0u;
const MATH_IGAMMA_DERIVATIVE: u32 = 1u;
const MATH_IGAMMA_SAMPLE_DERIVATIVE: u32 = 2u;
// float32's machep, big and biginv (cephes_helper<float>).
const MATH_MACHEP: f32 = 5.9604644775390625e-8;
const MATH_BIG: f32 = 16777216.0;

// x^a exp(-x) / gamma(a), 0 where it underflows or is NaN (Eigen's main_igamma_term: the value
// and its derivatives are then taken as 0). Underflow starts below float32's smallest normal, as
// on TF-CPU, whose threads flush subnormal results to zero: otherwise RandomGammaGrad, which is
// not scaled by this term, would answer where TF-CPU answers 0.
fn math_igamma_term(a: f32, x: f32) -> f32 {
    let logax = a * math_log(x) - x - math_lgamma(a);
    if (logax < -87.33654475055310898 || math_is_nan(logax)) {
        return 0.0;
    }
    return math_exp(logax);
}

// igammac(a, x) (or its derivative) by the continued fraction, for x >= 1 and x >= a.
fn math_igammac_cf(a: f32, x: f32, mode: u32) -> f32 {
    if (math_is_inf(x)) {
        return 0.0;
    }
    let ax = math_igamma_term(a, x);
    if (ax == 0.0) {
        return 0.0;
    }
    var y = 1.0 - a;
    var z = x + y + 1.0;
    var c = 0.0;
    var pkm2 = 1.0;
    var qkm2 = x;
    var pkm1 = x + 1.0;
    var qkm1 = z * x;
    var ans = pkm1 / qkm1;
    var dpkm2_da = 0.0;
    var dqkm2_da = 0.0;
    var dpkm1_da = 0.0;
    var dqkm1_da = -x;
    var dans_da = (dpkm1_da - ans * dqkm1_da) / qkm1;
    let iterations = select(200, 2000, mode == MATH_IGAMMA_VALUE);
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
                if (abs(ans_prev - ans) <= MATH_MACHEP * abs(ans)) {
                    break;
                }
            } else if (abs(dans_da - dans_da_prev) <= MATH_MACHEP) {
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
        if (abs(pk) > MATH_BIG) {
            pkm2 *= MATH_MACHEP;
            pkm1 *= MATH_MACHEP;
            qkm2 *= MATH_MACHEP;
            qkm1 *= MATH_MACHEP;
            dpkm2_da *= MATH_MACHEP;
            dpkm1_da *= MATH_MACHEP;
            dqkm2_da *= MATH_MACHEP;
            dqkm1_da *= MATH_MACHEP;
        }
    }
    let dlogax_da = math_log(x) - math_digamma(a);
    if (mode == MATH_IGAMMA_VALUE) {
        return ans * ax;
    }
    if (mode == MATH_IGAMMA_DERIVATIVE) {
        return ans * (ax * dlogax_da) + dans_da * ax;
    }
    return -(dans_da + ans * dlogax_da) * x;
}

// igamma(a, x) (or its derivative) by the power series, for x > 0, a > 0, !(x > 1 && x > a).
fn math_igamma_series(a: f32, x: f32, mode: u32) -> f32 {
    var ax = math_igamma_term(a, x);
    if (ax == 0.0) {
        return 0.0;
    }
    ax /= a;
    var r = a;
    var c = 1.0;
    var ans = 1.0;
    var dc_da = 0.0;
    var dans_da = 0.0;
    let iterations = select(200, 2000, mode == MATH_IGAMMA_VALUE);
    for (var i = 0; i < iterations; i++) {
        r += 1.0;
        let term = x / r;
        let dterm_da = -x / (r * r);
        dc_da = term * dc_da + dterm_da * c;
        dans_da += dc_da;
        c *= term;
        ans += c;
        if (mode == MATH_IGAMMA_VALUE) {
            if (c <= MATH_MACHEP * ans) {
                break;
            }
        } else if (abs(dc_da) <= MATH_MACHEP * abs(dans_da)) {
            break;
        }
    }
    let dlogax_da = math_log(x) - math_digamma(a + 1.0);
    if (mode == MATH_IGAMMA_VALUE) {
        return ans * ax;
    }
    if (mode == MATH_IGAMMA_DERIVATIVE) {
        return ans * (ax * dlogax_da) + dans_da * ax;
    }
    return -(dans_da + ans * dlogax_da) * x / a;
}

// igamma(a, x), d/da igamma(a, x), or the Gamma sample's derivative (Eigen's igamma_generic_impl).
fn math_igamma(a: f32, x: f32, mode: u32) -> f32 {
    if (x == 0.0) {
        return 0.0;
    }
    if (x < 0.0 || a <= 0.0 || math_is_nan(a) || math_is_nan(x)) {
        return math_nan();
    }
    if (x > 1.0 && x > a) {
        let ret = math_igammac_cf(a, x, mode);
        return select(-ret, 1.0 - ret, mode == MATH_IGAMMA_VALUE);
    }
    return math_igamma_series(a, x, mode);
}

// igammac(a, x) = 1 - igamma(a, x) (Eigen's igammac_impl).
fn math_igammac(a: f32, x: f32) -> f32 {
    if (x < 0.0 || a <= 0.0 || math_is_nan(a) || math_is_nan(x)) {
        return math_nan();
    }
    if (x < 1.0 || x < a) {
        return 1.0 - math_igamma_series(a, x, MATH_IGAMMA_VALUE);
    }
    return math_igammac_cf(a, x, MATH_IGAMMA_VALUE);
}

// Hurwitz's zeta(x, q), by Euler-Maclaurin summation (Eigen's zeta_impl, float series).
fn math_zeta(x: f32, q: f32) -> f32 {
    if (x == 1.0) {
        return math_inf();
    }
    if (x < 1.0) {
        return math_nan();
    }
    if (q <= 0.0) {
        if (q == floor(q)) {
            // A pole: infinite for even integer orders, NaN otherwise (Eigen's current zeta).
            return select(math_nan(), math_inf(), round(0.5 * x) == 0.5 * x);
        }
        if (x != floor(x)) {
            return math_nan();
        }
    }
    // The powers flushed as TF's flush-to-zero would: a huge q's terms underflow to 0 there.
    var s = math_flush(math_pow(q, -x));
    var a = q;
    var b = 0.0;
    for (var i = 0; i < 9; i++) {
        a += 1.0;
        b = math_flush(math_pow(a, -x));
        s += b;
        if (abs(b / s) < MATH_MACHEP) {
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
    var m = 1.0;
    var k = 0.0;
    let bernoulli = array<f32, 12>(12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
        7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
        1.8152105401943546773e17, -7.1661652561756670113e18);
    for (var i = 0; i < 12; i++) {
        m *= x + k;
        b /= w;
        let t = m * b / bernoulli[i];
        s = s + t;
        if (abs(t / s) < MATH_MACHEP) {
            break;
        }
        k += 1.0;
        m *= x + k;
        b /= w;
        k += 1.0;
    }
    return s;
}

// polygamma(n, x): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x) (Eigen's polygamma_impl).
fn math_polygamma(n: f32, x: f32) -> f32 {
    if (floor(n) != n || n < 0.0) {
        return math_nan();
    }
    if (n == 0.0) {
        return math_digamma(x);
    }
    let nplus = n + 1.0;
    let factorial = math_exp(math_lgamma(nplus));
    return math_pow(-1.0, nplus) * factorial * math_zeta(nplus, x);
}

// Bessel functions for float32, ported from the float (single-precision) code paths of Eigen's
// unsupported/Eigen/src/SpecialFunctions/BesselFunctionsImpl.h (generic_i0e<T, float> ...
// generic_y1<T, float>), which TF's BesselI0 ... BesselY1 ops call through Eigen::numext::bessel_*.
// Eigen's code is based on the Cephes Math Library (i0ef.c, i1ef.c, k0f.c, k1f.c, j0f.c, j1f.c) by
// Stephen L. Moshier, incorporated into Eigen by permission of the author.
//
// Each coefficient below is the float32 value of Cephes' decimal constant (shown in the comment),
// printed exactly, so every conversion from the WGSL literal is exact. Eigen's pmadd(a, b, c) is
// written a * b + c (no reliance on fma being fused).
//
// Special values are decided from the bits first, because WGSL lets implementations assume finite
// math; they are the values TF-CPU returns (Eigen's formulas evaluated on NaN, +-inf, +-0):
//   NaN -> NaN everywhere; i0e, i1e(+-inf) -> +-0; i0, i1(+-inf) -> NaN (inf * 0 in Eigen);
//   k*(x <= 0) -> +inf, k*(+inf) -> 0; j0, j1(+-inf) -> NaN; y0(x <= 0) -> -inf;
//   y1(x < 0) -> -inf, y1(+-0) -> NaN (Eigen evaluates 0 * log(0) there); y0, y1(+inf) -> NaN.
// Subnormals are taken as zero of the same sign, as TF-CPU does (its kernels run with
// denormals-are-zero and flush-to-zero): on every argument, and on the results that can underflow
// (i1e, i1, j1 near 0; k0, k1 past x ~ 87), so that no result depends on whether the adapter
// flushes them.
// Names start with `math_bessel_` so that they cannot collide with the including shader's own.

const MATH_BESSEL_I0E_A: array<f32, 18> = array<f32, 18>(
    -1.3000249765582339e-08,  // -1.30002500998624804212E-8
    6.046995082442663e-08,    // 6.04699502254191894932E-8
    -2.6707937195169507e-07,  // -2.67079385394061173391E-7
    1.1173875691383728e-06,   // 1.11738753912010371815E-6
    -4.416738192958292e-06,   // -4.41673835845875056359E-6
    1.6448448150185868e-05,   // 1.64484480707288970893E-5
    -5.75419508095365e-05,    // -5.75419501008210370398E-5
    0.0001885028905235231,    // 1.88502885095841655729E-4
    -0.0005763755762018263,   // -5.76375574538582365885E-4
    0.001639475580304861,     // 1.63947561694133579842E-3
    -0.00432430999353528,     // -4.32430999505057594430E-3
    0.010546460747718811,     // 1.05464603945949983183E-2
    -0.023737415671348572,    // -2.37374148058994688156E-2
    0.04930528253316879,      // 4.93052842396707084878E-2
    -0.09490109980106354,     // -9.49010970480476444210E-2
    0.1716209053993225,       // 1.71620901522208775349E-1
    -0.3046826720237732,      // -3.04682672343198398683E-1
    0.6767953038215637        // 6.76795274409476084995E-1
);
const MATH_BESSEL_I0E_B: array<f32, 7> = array<f32, 7>(
    3.3962319623270787e-09,   // 3.39623202570838634515E-9
    2.266668985839715e-08,    // 2.26666899049817806459E-8
    2.0489186169925233e-07,   // 2.04891858946906374183E-7
    2.891370513680158e-06,    // 2.89137052083475648297E-6
    6.889758515171707e-05,    // 6.88975834691682398426E-5
    0.0033691164571791887,    // 3.36911647825569408990E-3
    0.8044903874397278        // 8.04490411014108831608E-1
);
const MATH_BESSEL_I1E_A: array<f32, 17> = array<f32, 17>(
    9.381537324770761e-09,    // 9.38153738649577178388E-9
    -4.445059076374491e-08,   // -4.44505912879632808065E-8
    2.0032948100379144e-07,   // 2.00329475355213526229E-7
    -8.568720204493729e-07,   // -8.56872026469545474066E-7
    3.4702513858064776e-06,   // 3.47025130813767847674E-6
    -1.3273163858684711e-05,  // -1.32731636560394358279E-5
    4.781565075973049e-05,    // 4.78156510755005422638E-5
    -0.0001617608213564381,   // -1.61760815825896745588E-4
    0.0005122859729453921,    // 5.12285956168575772895E-4
    -0.001513572409749031,    // -1.51357245063125314899E-3
    0.0041564228013157845,    // 4.15642294431288815669E-3
    -0.010564085096120834,    // -1.05640848946261981558E-2
    0.024726448580622673,     // 2.47264490306265168283E-2
    -0.05294598266482353,     // -5.29459812080949914269E-2
    0.10264366120100021,      // 1.02643658689847095384E-1
    -0.1764165163040161,      // -1.76416518357834055153E-1
    0.2525871992111206        // 2.52587186443633654823E-1
);
const MATH_BESSEL_I1E_B: array<f32, 7> = array<f32, 7>(
    -3.8353804576729544e-09,  // -3.83538038596423702205E-9
    -2.631468909441992e-08,   // -2.63146884688951950684E-8
    -2.5122361080320843e-07,  // -2.51223623787020892529E-7
    -3.882564669765998e-06,   // -3.88256480887769039346E-6
    -0.00011058893869630992,  // -1.10588938762623716291E-4
    -0.009761097840964794,    // -9.76109749136146840777E-3
    0.7785762548446655        // 7.78576235018280120474E-1
);
const MATH_BESSEL_K0_A: array<f32, 7> = array<f32, 7>(
    1.904516322426275e-09,    // 1.90451637722020886025E-9
    2.5347910082018643e-07,   // 2.53479107902614945675E-7
    2.2862121113575995e-05,   // 2.28621210311945178607E-5
    0.0012646154500544071,    // 1.26461541144692592338E-3
    0.03597993776202202,      // 3.59799365153615016266E-2
    0.3442898988723755,       // 3.44289899924628486886E-1
    -0.5353273749351501       // -5.35327393233902768720E-1
);
const MATH_BESSEL_K0_B: array<f32, 10> = array<f32, 10>(
    -1.6975345573655432e-09,  // -1.69753450938905987466E-9
    8.574033927288838e-09,    // 8.57403401741422608519E-9
    -4.6604899495150676e-08,  // -4.66048989768794782956E-8
    2.7668136226566276e-07,   // 2.76681363944501510342E-7
    -1.8317555259272922e-06,  // -1.83175552271911948767E-6
    1.3949813364888541e-05,   // 1.39498137188764993662E-5
    -0.00012849549239035696,  // -1.28495495816278026384E-4
    0.0015698838979005814,    // 1.56988388573005337491E-3
    -0.03144809976220131,     // -3.14481013119645005427E-2
    2.440303087234497         // 2.44030308206595545468E0
);
const MATH_BESSEL_K1_A: array<f32, 7> = array<f32, 7>(
    -2.2133876953489562e-08,  // -2.21338763073472585583E-8
    -2.4334060526598478e-06,  // -2.43340614156596823496E-6
    -0.00017302889318671077,  // -1.73028895751305206302E-4
    -0.006975723896175623,    // -6.97572385963986435018E-3
    -0.12261117994785309,     // -1.22611180822657148235E-1
    -0.3531559705734253,      // -3.53155960776544875667E-1
    1.5253002643585205        // 1.52530022733894777053E0
);
const MATH_BESSEL_K1_B: array<f32, 10> = array<f32, 10>(
    2.015049682668746e-09,    // 2.01504975519703286596E-9
    -1.0345762468944031e-08,  // -1.03457624656780970260E-8
    5.741084052601764e-08,    // 5.74108412545004946722E-8
    -3.50196046383644e-07,    // -3.50196060308781257119E-7
    2.406485009487369e-06,    // 2.40648494783721712015E-6
    -1.9361979866516776e-05,  // -1.93619797416608296024E-5
    0.00019521551439538598,   // 1.95215518471351631108E-4
    -0.002857816871255636,    // -2.85781685962277938680E-3
    0.1039237380027771,       // 1.03923736576817238437E-1
    2.72062611579895          // 2.72062619048444266945E0
);
const MATH_BESSEL_J0_JP: array<f32, 5> = array<f32, 5>(
    -6.068350444365933e-08,   // -6.068350350393235E-008
    6.3889456214383245e-06,   // 6.388945720783375E-006
    -0.0003969646350014955,   // -3.969646342510940E-004
    0.013329134322702885,     // 1.332913422519003E-002
    -0.17291507124900818      // -1.729150680240724E-001
);
const MATH_BESSEL_J0_MO: array<f32, 8> = array<f32, 8>(
    -0.06838999688625336,     // -6.838999669318810E-002
    0.18649493157863617,      // 1.864949361379502E-001
    -0.21450075507164001,     // -2.145007480346739E-001
    0.11975494027137756,      // 1.197549369473540E-001
    -0.0035602818243205547,   // -3.560281861530129E-003
    -0.04969382658600807,     // -4.969382655296620E-002
    -3.3554247238498647e-06,  // -3.355424622293709E-006
    0.7978845834732056        // 7.978845717621440E-001
);
const MATH_BESSEL_J0_PH: array<f32, 8> = array<f32, 8>(
    32.4207763671875,         // 3.242077816988247E+001
    -36.30592727661133,       // -3.630592630518434E+001
    17.562213897705078,       // 1.756221482109099E+001
    -4.974978446960449,       // -4.974978466280903E+000
    1.0019733905792236,       // 1.001973420681837E+000
    -0.19399069249629974,     // -1.939906941791308E-001
    0.06490598618984222,      // 6.490598792654666E-002
    -0.12499921768903732      // -1.249992184872738E-001
);
const MATH_BESSEL_Y0_YP: array<f32, 5> = array<f32, 5>(
    9.454583960177843e-08,    // 9.454583683980369E-008
    -9.413212865183596e-06,   // -9.413212653797057E-006
    0.0005344486562535167,    // 5.344486707214273E-004
    -0.015842892229557037,    // -1.584289289821316E-002
    0.1707584708929062        // 1.707584643733568E-001
);
const MATH_BESSEL_J1_JP: array<f32, 5> = array<f32, 5>(
    -4.87878804023012e-09,    // -4.878788132172128E-009
    6.009061621625733e-07,    // 6.009061827883699E-007
    -4.5413438783725724e-05,  // -4.541343896997497E-005
    0.001937383902259171,     // 1.937383947804541E-003
    -0.034055374562740326     // -3.405537384615824E-002
);
const MATH_BESSEL_J1_MO1: array<f32, 8> = array<f32, 8>(
    0.06913942843675613,      // 6.913942741265801E-002
    -0.22848014533519745,     // -2.284801500053359E-001
    0.3138238489627838,       // 3.138238455499697E-001
    -0.2102302461862564,      // -2.102302420403875E-001
    0.0054353647865355015,    // 5.435364690523026E-003
    0.149338960647583,        // 1.493389585089498E-001
    4.976029686076799e-06,    // 4.976029650847191E-006
    0.7978845238685608        // 7.978845453073848E-001
);
const MATH_BESSEL_J1_PH1: array<f32, 8> = array<f32, 8>(
    -44.97014236450195,       // -4.497014141919556E+001
    50.734657287597656,       // 5.073465654089319E+001
    -24.85774040222168,       // -2.485774108720340E+001
    7.222973346710205,        // 7.222973196770240E+000
    -1.5448428392410278,      // -1.544842782180211E+000
    0.35037878155708313,      // 3.503787691653334E-001
    -0.16379867494106293,     // -1.637986776941202E-001
    0.37499895691871643       // 3.749989509080821E-001
);
const MATH_BESSEL_Y1_YP: array<f32, 5> = array<f32, 5>(
    8.061978640228062e-09,    // 8.061978323326852E-009
    -9.4964605068526e-07,     // -9.496460629917016E-007
    6.719544035149738e-05,    // 6.719543806674249E-005
    -0.0026417856570333242,   // -2.641785726447862E-003
    0.04202369973063469       // 4.202369946500099E-002
);
const MATH_BESSEL_J0_DR1: f32 = 5.783185958862305;  // 5.78318596294678452118
const MATH_BESSEL_NEG_PIO4: f32 = -0.7853981852531433;  // -0.7853981633974483096
const MATH_BESSEL_Y0_YZ1: f32 = 0.43221455812454224;  // 0.43221455686510834878
const MATH_BESSEL_TWO_OVER_PI: f32 = 0.6366197466850281;  // 0.636619772367581343075535
const MATH_BESSEL_J1_Z1: f32 = 14.681970596313477;  // 1.46819706421238932572E1
const MATH_BESSEL_NEG_THREE_PIO4: f32 = -2.356194496154785;  // -2.35619449019234492885
const MATH_BESSEL_Y1_YO1: f32 = 4.665393352508545;  // 4.66539330185668857532

// Eigen's pchebevl<T, N>: sum' coef[i] T_i(x / 2) by Clenshaw's recurrence, coefficients in
// reverse order (zero-order term last). One copy per coefficient count, as WGSL arrays are typed
// by their length.
fn math_bessel_chbevl7(x: f32, coef: array<f32, 7>) -> f32 {
    var b0 = coef[0];
    var b1 = 0.0;
    var b2 = 0.0;
    for (var i = 1; i < 7; i++) {
        b2 = b1;
        b1 = b0;
        b0 = (x * b1 + coef[i]) - b2;
    }
    return 0.5 * (b0 - b2);
}

fn math_bessel_chbevl10(x: f32, coef: array<f32, 10>) -> f32 {
    var b0 = coef[0];
    var b1 = 0.0;
    var b2 = 0.0;
    for (var i = 1; i < 10; i++) {
        b2 = b1;
        b1 = b0;
        b0 = (x * b1 + coef[i]) - b2;
    }
    return 0.5 * (b0 - b2);
}

fn math_bessel_chbevl17(x: f32, coef: array<f32, 17>) -> f32 {
    var b0 = coef[0];
    var b1 = 0.0;
    var b2 = 0.0;
    for (var i = 1; i < 17; i++) {
        b2 = b1;
        b1 = b0;
        b0 = (x * b1 + coef[i]) - b2;
    }
    return 0.5 * (b0 - b2);
}

fn math_bessel_chbevl18(x: f32, coef: array<f32, 18>) -> f32 {
    var b0 = coef[0];
    var b1 = 0.0;
    var b2 = 0.0;
    for (var i = 1; i < 18; i++) {
        b2 = b1;
        b1 = b0;
        b0 = (x * b1 + coef[i]) - b2;
    }
    return 0.5 * (b0 - b2);
}

// i0e: generic_i0e<T, float> (Cephes i0ef.c). Even; Chebyshev in |x| on [0, 8], in 32/|x| above.
fn math_bessel_i0e(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    let y = abs(x);
    // Eigen: chbevl(-2, B) * rsqrt(inf) = +0.
    if (math_is_inf(y)) { return 0.0; }
    if (y <= 8.0) {
        return math_bessel_chbevl18(0.5 * y + -2.0, MATH_BESSEL_I0E_A);
    }
    return math_bessel_chbevl7(32.0 / y - 2.0, MATH_BESSEL_I0E_B) * math_rsqrt(y);
}

// i1e: generic_i1e<T, float> (Cephes i1ef.c). Odd; computed for |x| and negated for x < 0.
fn math_bessel_i1e(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    let y = abs(x);
    var r: f32;
    if (math_is_inf(y)) {
        r = 0.0;
    } else if (y <= 8.0) {
        r = y * math_bessel_chbevl17(0.5 * y + -2.0, MATH_BESSEL_I1E_A);
    } else {
        r = math_bessel_chbevl7(32.0 / y - 2.0, MATH_BESSEL_I1E_B) * math_rsqrt(y);
    }
    return math_flush(select(r, -r, x < 0.0));
}

// i0: generic_i0 = exp(|x|) * i0e(x). Eigen gives NaN at +-inf (inf * 0) and inf once exp(|x|)
// overflows (|x| > ~88.72), although i0 itself would still be finite there.
fn math_bessel_i0(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    let e = math_exp(abs(x));
    if (math_is_inf(e)) { return math_inf(); }
    return e * math_bessel_i0e(x);
}

// i1: generic_i1 = exp(|x|) * i1e(x); same special values as i0, with the sign of x.
fn math_bessel_i1(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    let e = math_exp(abs(x));
    if (math_is_inf(e)) { return math_copysign(math_inf(), x); }
    return math_flush(e * math_bessel_i1e(x));
}

// k0e: generic_k0e<T, float> (Cephes k0f.c, scaled by exp(x)). +inf for x <= 0.
fn math_bessel_k0e(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return math_inf(); }
    if (math_is_inf(x)) { return 0.0; }
    if (x <= 2.0) {
        var r = math_bessel_chbevl7(x * x + -2.0, MATH_BESSEL_K0_A);
        r = math_bessel_i0(x) * -math_log(0.5 * x) + r;
        return math_exp(x) * r;
    }
    return math_bessel_chbevl10(8.0 / x - 2.0, MATH_BESSEL_K0_B) * math_rsqrt(x);
}

// k0: generic_k0<T, float> (Cephes k0f.c). +inf for x <= 0; underflows to 0 past x ~ 88.
fn math_bessel_k0(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return math_inf(); }
    if (math_is_inf(x)) { return 0.0; }
    if (x <= 2.0) {
        let r = math_bessel_chbevl7(x * x + -2.0, MATH_BESSEL_K0_A);
        return math_bessel_i0(x) * -math_log(0.5 * x) + r;
    }
    return math_flush((math_exp(-x) * math_bessel_chbevl10(8.0 / x - 2.0, MATH_BESSEL_K0_B)) * math_rsqrt(x));
}

// k1e: generic_k1e<T, float> (Cephes k1f.c, scaled by exp(x)). +inf for x <= 0.
fn math_bessel_k1e(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return math_inf(); }
    if (math_is_inf(x)) { return 0.0; }
    if (x <= 2.0) {
        var r = math_bessel_chbevl7(x * x + -2.0, MATH_BESSEL_K1_A) / x;
        r = math_bessel_i1(x) * math_log(0.5 * x) + r;
        return r * math_exp(x);
    }
    return math_bessel_chbevl10(8.0 / x - 2.0, MATH_BESSEL_K1_B) * math_rsqrt(x);
}

// k1: generic_k1<T, float> (Cephes k1f.c). +inf for x <= 0; underflows to 0 past x ~ 88.
fn math_bessel_k1(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return math_inf(); }
    if (math_is_inf(x)) { return 0.0; }
    if (x <= 2.0) {
        let r = math_bessel_chbevl7(x * x + -2.0, MATH_BESSEL_K1_A) / x;
        return math_bessel_i1(x) * math_log(0.5 * x) + r;
    }
    return math_flush(math_exp(-x) * (math_bessel_chbevl10(8.0 / x - 2.0, MATH_BESSEL_K1_B) * math_rsqrt(x)));
}

// The modulus and phase of the float asymptotic forms (Cephes j0f.c / j1f.c) for y > 2:
// (sqrt(1/y) MO(1/y), 1/y PH(1/y^2) + phase0). The caller adds y to the phase.
fn math_bessel_asymptotic0(y: f32) -> vec2<f32> {
    let q = 1.0 / y;
    let p = math_rsqrt(y) * math_polevl7(q, MATH_BESSEL_J0_MO);
    let w = q * q;
    return vec2<f32>(p, q * math_polevl7(w, MATH_BESSEL_J0_PH) + MATH_BESSEL_NEG_PIO4);
}

fn math_bessel_asymptotic1(y: f32) -> vec2<f32> {
    let q = 1.0 / y;
    let p = math_rsqrt(y) * math_polevl7(q, MATH_BESSEL_J1_MO1);
    let w = q * q;
    return vec2<f32>(p, q * math_polevl7(w, MATH_BESSEL_J1_PH1) + MATH_BESSEL_NEG_THREE_PIO4);
}

// j0: generic_j0<T, float> (Cephes j0f.c). Even. Polynomial with the first zero removed on
// [0, 2] (1 - x^2/4 below 1e-3), modulus * cos(phase) above. NaN at +-inf (cos(inf) in Eigen).
fn math_bessel_j0(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    let y = abs(x);
    if (y <= 2.0) {
        let z = y * y;
        if (y < 1.0e-3) {
            return z * -0.25 + 1.0;
        }
        return (z - MATH_BESSEL_J0_DR1) * math_polevl4(z, MATH_BESSEL_J0_JP);
    }
    let mp = math_bessel_asymptotic0(y);
    return mp.x * math_cos(mp.y + y);
}

// j1: generic_j1<T, float> (Cephes j1f.c), odd: x (x^2 - z1) P(x^2) on [0, 2]; modulus *
// cos(phase) above, negated for x < 0 (Eigen's fix to Cephes). NaN at +-inf.
fn math_bessel_j1(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x) || math_is_inf(x)) { return math_nan(); }
    let y = abs(x);
    if (y <= 2.0) {
        let z = y * y;
        return math_flush((z - MATH_BESSEL_J1_Z1) * (x * math_polevl4(z, MATH_BESSEL_J1_JP)));
    }
    let mp = math_bessel_asymptotic1(y);
    let r = mp.x * math_cos(mp.y + y);
    return select(r, -r, x < 0.0);
}

// y0: generic_y0<T, float> (Cephes y0f in j0f.c): (x^2 - yz1) P(x^2) + 2/pi log(x) j0(x) on
// (0, 2], modulus * sin(phase) above. -inf for x <= 0, NaN at +inf (sin(inf) in Eigen).
fn math_bessel_y0(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x <= 0.0) { return -math_inf(); }
    if (math_is_inf(x)) { return math_nan(); }
    if (x <= 2.0) {
        let z = x * x;
        let r = MATH_BESSEL_TWO_OVER_PI * (math_log(x) * math_bessel_j0(x));
        return (z - MATH_BESSEL_Y0_YZ1) * math_polevl4(z, MATH_BESSEL_Y0_YP) + r;
    }
    let mp = math_bessel_asymptotic0(x);
    return mp.x * math_sin(mp.y + x);
}

// y1: generic_y1<T, float> (Cephes y1f in j1f.c): x (x^2 - yo1) P(x^2) + 2/pi (j1(x) log(x) - 1/x)
// on (0, 2], modulus * sin(phase) above. -inf for x < 0; NaN at +-0 (Eigen tests x < 0, not
// x <= 0, and evaluates 0 * log(0) there); NaN at +inf.
fn math_bessel_y1(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x < 0.0) { return -math_inf(); }
    if (x == 0.0 || math_is_inf(x)) { return math_nan(); }
    if (x <= 2.0) {
        let z = x * x;
        let r = (z - MATH_BESSEL_Y1_YO1) * math_polevl4(z, MATH_BESSEL_Y1_YP);
        return r * x + MATH_BESSEL_TWO_OVER_PI * (math_bessel_j1(x) * math_log(x) + -1.0 / x);
    }
    let mp = math_bessel_asymptotic1(x);
    return mp.x * math_sin(mp.y + x);
}
// Dawson's integral, the exponential integral Ei, the Fresnel integrals C and S, and Spence's
// integral, in float32 (`math.wgsl` and `special_math.wgsl` come first): the ops Dawsn, Expint,
// FresnelCos, FresnelSin and Spence as TF-CPU computes them, i.e. the scalar float code of
// dawsn_op, expint_op, fresnel_cos_op, fresnel_sin_op and spence_op in TF's
// tensorflow/core/kernels/special_math/special_math_op_misc_impl.h (Cephes' dawsn.c, ei.c,
// fresnl.c and spence.c, ported to Eigen; one coefficient set, the double one, converted to float).
// The branch points, the evaluation order and the float constants are TF's, op by op; its
// numext::exp/log/log1p/sin/cos are math.wgsl's accurate ones.
//
// Each coefficient below is the float32 value of Cephes' decimal constant (shown in the comment),
// printed exactly, so every conversion from the WGSL literal is exact. Eigen's
// ppolevl<T, N>(x, c) is Horner's rule with pmadd(a, b, c) = a * b + c, written so here (no
// reliance on fma being fused).
//
// Special values are decided from the bits first, because WGSL lets implementations assume finite
// math; they are the values TF-CPU returns (its formulas evaluated on NaN, +-inf, +-0):
//   NaN -> NaN everywhere.
//   dawsn(+-inf) -> +0; dawsn(x) for |x| >= 1e9 is 0.5 / |x|, positive for negative x too (TF
//     computes 0.5 / x there and then negates it for x < 0); dawsn(-0) -> +0.
//   expint(x < 0) -> NaN; expint(+-0) -> -inf; expint(+inf) -> NaN (exp(inf) * (1/inf));
//     expint -> +inf once exp(x) overflows (x > ~88.72), NaN for x > 2^126 (1/x flushes to 0).
//   fresnel_cos, fresnel_sin(|x| > 36974, +-inf included) -> +-0.5; (-0) -> +0.
//   spence(x < 0, -inf) -> NaN; spence(+-0) -> pi^2/6; spence(1) -> 0; spence(+inf) -> NaN and
//     spence(x > 2^126) -> NaN (1/x flushes to 0, and Eigen evaluates -log(0) * log1p(-0)).
// Subnormals are taken as zero of the same sign, as TF-CPU does (its kernels run with
// denormals-are-zero and flush-to-zero): on every argument, on 1/x where it can underflow, and on
// the results that can (dawsn past |x| ~ 4e37, fresnel_sin near 0), so that no result depends on
// whether the adapter flushes them. One exception follows TF-CPU's libm rather than its
// arithmetic: expint's log(x) is glibc's logf, which reads the bits of the subnormal argument that
// denormals-are-zero hides from the comparisons, so TF returns NaN for a negative subnormal and
// EUL + log(2^-150) = -103.39486 for a positive one (glibc's x * 2^23 normalisation flushes to 0).
// Names start with `math_misc_` (helpers) or are the five entry points, so that they cannot
// collide with the including shader's own.

const MATH_MISC_DAWSN_AN: array<f32, 10> = array<f32, 10>(
    1.1368149477331002e-11,  // 1.13681498971755972054E-11
    8.492622716183007e-10,   // 8.49262267667473811108E-10
    1.9443421095388658e-08,  // 1.94434204175553054283E-8
    9.531517548566626e-07,   // 9.53151741254484363489E-7
    3.078283043578267e-06,   // 3.07828309874913200438E-6
    0.00035251336521469057,  // 3.52513368520288738649E-4
    -0.0008501498377881944,  // -8.50149846724410912031E-4
    0.04226182401180267,     // 4.22618223005546594270E-2
    -0.09174803644418716,    // -9.17480371773452345351E-2
    1.0                      // 9.99999999999999994612E-1
);

const MATH_MISC_DAWSN_AD: array<f32, 11> = array<f32, 11>(
    2.403720798793696e-11,   // 2.40372073066762605484E-11
    1.4886467614161347e-09,  // 1.48864681368493396752E-9
    5.2126527094742414e-08,  // 5.21265281010541664570E-8
    1.2725847682304448e-06,  // 1.27258478273186970203E-6
    2.324902561667841e-05,   // 2.32490249820789513991E-5
    0.00032552474294789135,  // 3.25524741826057911661E-4
    0.0034880582243204117,   // 3.48805814657162590916E-3
    0.02794485352933407,     // 2.79448531198828973716E-2
    0.1588742434978485,      // 1.58874241960120565368E-1
    0.5749186277389526,      // 5.74918629489320327824E-1
    1.0                      // 1.00000000000000000539E0
);

const MATH_MISC_DAWSN_BN: array<f32, 11> = array<f32, 11>(
    0.508955180644989,        // 5.08955156417900903354E-1
    -0.24475441873073578,     // -2.44754418142697847934E-1
    0.09415123611688614,      // 9.41512335303534411857E-2
    -0.02187112532556057,     // -2.18711255142039025206E-2
    0.0036620760802179575,    // 3.66207612329569181322E-3
    -0.00042320910142734647,  // -4.23209114460388756528E-4
    3.5964130802312866e-05,   // 3.59641304793896631888E-5
    -2.146403630831628e-06,   // -2.14640351719968974225E-6
    9.100107689619108e-08,    // 9.10010780076391431042E-8
    -2.4027451139829736e-09,  // -2.40274520828250956942E-9
    3.5923337221577256e-11    // 3.59233385440928410398E-11
);

const MATH_MISC_DAWSN_BD: array<f32, 11> = array<f32, 11>(
    1.0,                      // 1.0
    -0.6318398714065552,      // -6.31839869873368190192E-1
    0.23670679330825806,      // 2.36706788228248691528E-1
    -0.05318063497543335,     // -5.31806367003223277662E-2
    0.008480417542159557,     // 8.48041718586295374409E-3
    -0.0009479967411607504,   // -9.47996768486665330168E-4
    7.810255920048803e-05,    // 7.81025592944552338085E-5
    -4.558751697913976e-06,   // -4.55875153252442634831E-6
    1.8910036203578784e-07,   // 1.89100358111421846170E-7
    -4.9132466983792256e-09,  // -4.91324691331920606875E-9
    7.184663974868499e-11     // 7.18466403235734541950E-11
);

const MATH_MISC_DAWSN_CN: array<f32, 5> = array<f32, 5>(
    -0.5905928611755371,     // -5.90592860534773254987E-1
    0.6292352676391602,      // 6.29235242724368800674E-1
    -0.17285896837711334,    // -1.72858975380388136411E-1
    0.01648370549082756,     // 1.64837047825189632310E-2
    -0.0004868276009801775   // -4.86827613020462700845E-4
);

const MATH_MISC_DAWSN_CD: array<f32, 6> = array<f32, 6>(
    1.0,                    // 1.0
    -2.6982004642486572,    // -2.69820057197544900361E0
    1.7327079772949219,     // 1.73270799045947845857E0
    -0.39370858669281006,   // -3.93708582281939493482E-1
    0.03442789241671562,    // 3.44278924041233391079E-2
    -0.000973655201960355   // -9.73655226040941223894E-4
);

const MATH_MISC_EXPINT_A: array<f32, 6> = array<f32, 6>(
    -5.350447177886963,  // -5.350447357812542947283E0
    218.50491333007812,  // 2.185049168816613393830E2
    -4176.572265625,     // -4.176572384826693777058E3
    55411.765625,        // 5.541176756393557601232E4
    -331338.125,         // -3.313381331178144034309E5
    1592627.125          // 1.592627163384945414220E6
);

const MATH_MISC_EXPINT_B: array<f32, 7> = array<f32, 7>(
    1.0,                 // 1.0
    -52.50547790527344,  // -5.250547959112862969197E1
    1259.6162109375,     // 1.259616186786790571525E3
    -17565.49609375,     // -1.756549581973534652631E4
    149306.21875,        // 1.493062117002725991967E5
    -729494.9375,        // -7.294949239640527645655E5
    1592627.125          // 1.592627163384945429726E6
);

const MATH_MISC_EXPINT_A6: array<f32, 8> = array<f32, 8>(
    0.019818084314465523,    // 1.981808503259689673238E-2
    -1.2716456651687622,     // -1.271645625984917501326E0
    -2.088160276412964,      // -2.088160335681228318920E0
    2.755544424057007,       // 2.755544509187936721172E0
    -0.4409506916999817,     // -4.409507048701600257171E-1
    0.04665623977780342,     // 4.665623805935891391017E-2
    -0.0015450427308678627,  // -1.545042679673485262580E-3
    7.05998027115129e-05     // 7.059980605299617478514E-5
);

const MATH_MISC_EXPINT_B6: array<f32, 8> = array<f32, 8>(
    1.0,                     // 1.0
    1.4764987230300903,      // 1.476498670914921440652E0
    0.5629177093505859,      // 5.629177174822436244827E-1
    0.1699017882347107,      // 1.699017897879307263248E-1
    0.02291647158563137,     // 2.291647179034212017463E-2
    0.004450150299817324,    // 4.450150439728752875043E-3
    0.00017274396668653935,  // 1.727439612206521482874E-4
    3.953167106374167e-05    // 3.953167195549672482304E-5
);

const MATH_MISC_EXPINT_A5: array<f32, 8> = array<f32, 8>(
    -1.3732153177261353,    // -1.373215375871208729803E0
    -0.7084559202194214,    // -7.084559133740838761406E-1
    1.580806851387024,      // 1.580806855547941010501E0
    -0.2601500451564789,    // -2.601500427425622944234E-1
    0.029946746304631233,   // 2.994674694113713763365E-2
    -0.001038086018525064,  // -1.038086040188744005513E-3
    4.371064278529957e-05,  // 4.371064420753005429514E-5
    2.141783625120297e-06   // 2.141783679522602903795E-6
);

const MATH_MISC_EXPINT_B5: array<f32, 9> = array<f32, 9>(
    1.0,                     // 1.0
    0.8585231304168701,      // 8.585231423622028380768E-1
    0.44832858443260193,     // 4.483285822873995129957E-1
    0.07687932252883911,     // 7.687932158124475434091E-2
    0.024498682469129562,    // 2.449868241021887685904E-2
    0.0008832166204228997,   // 8.832165941927796567926E-4
    0.0004590952303260565,   // 4.590952299511353531215E-4
    -4.729848569695605e-06,  // -4.729848351866523044863E-6
    2.665195552253863e-06    // 2.665195537390710170105E-6
);

const MATH_MISC_EXPINT_A2: array<f32, 10> = array<f32, 10>(
    -2.1069345474243164,      // -2.106934601691916512584E0
    1.7327338457107544,       // 1.732733869664688041885E0
    -0.242361918091774,       // -2.423619178935841904839E-1
    0.02322724089026451,      // 2.322724180937565842585E-2
    0.00023728804080747068,   // 2.372880440493179832059E-4
    -8.343219815287739e-05,   // -8.343219561192552752335E-5
    1.363408773613628e-05,    // 1.363408795605250394881E-5
    -3.6554123994392285e-07,  // -3.655412321999253963714E-7
    1.4649417678924692e-08,   // 1.464941733975961318456E-8
    6.176407718605503e-10     // 6.176407863710360207074E-10
);

const MATH_MISC_EXPINT_B2: array<f32, 10> = array<f32, 10>(
    1.0,                      // 1.0
    -0.22980622947216034,     // -2.298062239901678075778E-1
    0.11050770431756973,      // 1.105077041474037862347E-1
    -0.015665430575609207,    // -1.566542966630792353556E-2
    0.002761106938123703,     // 2.761106850817352773874E-3
    -0.00020891480380669236,  // -2.089148012284048449115E-4
    1.7085289073293097e-05,   // 1.708528938807675304186E-5
    -4.4593119241653767e-07,  // -4.459311796356686423199E-7
    1.3946348964566369e-08,   // 1.394634930353847498145E-8
    6.150865927700977e-10     // 6.150865933977338354138E-10
);

const MATH_MISC_EXPINT_A4: array<f32, 8> = array<f32, 8>(
    -0.24581193923950195,    // -2.458119367674020323359E-1
    -0.1483382284641266,     // -1.483382253322077687183E-1
    0.07248292118310928,     // 7.248291795735551591813E-2
    -0.013483156450092793,   // -1.348315687380940523823E-2
    0.0013427750673145056,   // 1.342775069788636972294E-3
    -7.942465890664607e-05,  // -7.942465637159712264564E-5
    2.6441796308063203e-06,  // 2.644179518984235952241E-6
    -4.239473483380607e-08   // -4.239473659313765177195E-8
);

const MATH_MISC_EXPINT_B4: array<f32, 9> = array<f32, 9>(
    1.0,                      // 1.0
    -0.10442259162664413,     // -1.044225908443871106315E-1
    -0.26764529943466187,     // -2.676453128101402655055E-1
    0.096950002014637,        // 9.695000254621984627876E-2
    -0.016017457470297813,    // -1.601745692712991078208E-2
    0.0014964148867875338,    // 1.496414899205908021882E-3
    -8.462452387902886e-05,   // -8.462452563778485013756E-5
    2.7289383979223203e-06,   // 2.728938403476726394024E-6
    -4.2394624699682026e-08   // -4.239462431819542051337E-8
);

const MATH_MISC_EXPINT_A7: array<f32, 6> = array<f32, 6>(
    0.12125611305236816,      // 1.212561118105456670844E-1
    -0.5823132991790771,      // -5.823133179043894485122E-1
    0.2348887324333191,       // 2.348887314557016779211E-1
    -0.030400343239307404,    // -3.040034318113248237280E-2
    0.0015100821619853377,    // 1.510082146865190661777E-3
    -2.5231371182599105e-05   // -2.523137095499571377122E-5
);

const MATH_MISC_EXPINT_B7: array<f32, 6> = array<f32, 6>(
    1.0,                      // 1.0
    -1.0022521018981934,      // -1.002252150365854016662E0
    0.29287096858024597,      // 2.928709694872224144953E-1
    -0.03337004408240318,     // -3.337004338674007801307E-2
    0.001560544827952981,     // 1.560544881127388842819E-3
    -2.5231371182599105e-05   // -2.523137093603234562648E-5
);

const MATH_MISC_EXPINT_A3: array<f32, 9> = array<f32, 9>(
    -0.7657846808433533,      // -7.657847078286127362028E-1
    0.6886192560195923,       // 6.886192415566705051750E-1
    -0.21325981616973877,     // -2.132598113545206124553E-1
    0.0334610752761364,       // 3.346107552384193813594E-2
    -0.003076541470363736,    // -3.076541477344756050249E-3
    0.00017471193859819323,   // 1.747119316454907477380E-4
    -6.103711712057702e-06,   // -6.103711682274170530369E-6
    1.2180328212707536e-07,   // 1.218032765428652199087E-7
    -1.0860761179287692e-09   // -1.086076102793290233007E-9
);

const MATH_MISC_EXPINT_B3: array<f32, 10> = array<f32, 10>(
    1.0,                      // 1.0
    -1.8888028860092163,      // -1.888802868662308731041E0
    1.0666916370391846,       // 1.066691687211408896850E0
    -0.27519160509109497,     // -2.751915982306380647738E-1
    0.03930852562189102,      // 3.930852688233823569726E-2
    -0.003414684673771262,    // -3.414684558602365085394E-3
    0.00018668443954084069,   // 1.866844370703555398195E-4
    -6.345146175590344e-06,   // -6.345146083130515357861E-6
    1.239754254811487e-07,    // 1.239754287483206878024E-7
    -1.0860761179287692e-09   // -1.086076102793126632978E-9
);

const MATH_MISC_FRESNEL_CN: array<f32, 6> = array<f32, 6>(
    -4.988431001606841e-08,  // -4.98843114573573548651E-8
    9.504280569672119e-06,   // 9.50428062829859605134E-6
    -0.0006451914086937904,  // -6.45191435683965050962E-4
    0.018884332850575447,    // 1.88843319396703850064E-2
    -0.20552590489387512,    // -2.05525900955013891793E-1
    1.0                      // 9.99999999999999998822E-1
);

const MATH_MISC_FRESNEL_CD: array<f32, 7> = array<f32, 7>(
    3.999829547435274e-12,   // 3.99982968972495980367E-12
    9.154392244248299e-10,   // 9.15439215774657478799E-10
    1.2500186130637303e-07,  // 1.25001862479598821474E-7
    1.222627906827256e-05,   // 1.22262789024179030997E-5
    0.0008680295431986451,   // 8.68029542941784300606E-4
    0.04121420904994011,     // 4.12142090722199792936E-2
    1.0                      // 1.00000000000000000118E0
);

const MATH_MISC_FRESNEL_SN: array<f32, 6> = array<f32, 6>(
    -2991.819091796875,  // -2.99181919401019853726E3
    708840.0625,         // 7.08840045257738576863E5
    -62974148.0,         // -6.29741486205862506537E7
    2548908800.0,        // 2.54890880573376359104E9
    -44297953280.0,      // -4.42979518059697779103E10
    318016290816.0       // 3.18016297876567817986E11
);

const MATH_MISC_FRESNEL_SD: array<f32, 7> = array<f32, 7>(
    1.0,                 // 1.0
    281.37628173828125,  // 2.81376268889994315696E2
    45584.78125,         // 4.55847810806532581675E4
    5173439.0,           // 5.17343888770096400730E6
    419320256.0,         // 4.19320245898111231129E8
    22441179136.0,       // 2.24411795645340920940E10
    607366414336.0       // 6.07366389490084639049E11
);

const MATH_MISC_FRESNEL_FN: array<f32, 10> = array<f32, 10>(
    0.42154356837272644,     // 4.21543555043677546506E-1
    0.1434079259634018,      // 1.43407919780758885261E-1
    0.011522095650434494,    // 1.15220955073585758835E-2
    0.0003450179356150329,   // 3.45017939782574027900E-4
    4.636137418856379e-06,   // 4.63613749287867322088E-6
    3.0556897456790466e-08,  // 3.05568983790257605827E-8
    1.0230451208403935e-10,  // 1.02304514164907233465E-10
    1.7201074820148016e-13,  // 1.72010743268161828879E-13
    1.3428326979710703e-16,  // 1.34283276233062758925E-16
    3.763296970901213e-20    // 3.76329711269987889006E-20
);

const MATH_MISC_FRESNEL_FD: array<f32, 11> = array<f32, 11>(
    1.0,                     // 1.0
    0.751586377620697,       // 7.51586398353378947175E-1
    0.11688892543315887,     // 1.16888925859191382142E-1
    0.006440515164285898,    // 6.44051526508858611005E-3
    0.00015593440912198275,  // 1.55934409164153020873E-4
    1.8462757225279347e-06,  // 1.84627567348930545870E-6
    1.1269922772783048e-08,  // 1.12699224763999035261E-8
    3.601400427877266e-11,   // 3.60140029589371370404E-11
    5.887545090127108e-14,   // 5.88754533621578410010E-14
    4.5200143063714874e-17,  // 4.52001434074129701496E-17
    1.2544324044130943e-20   // 1.25443237090011264384E-20
);

const MATH_MISC_FRESNEL_GN: array<f32, 11> = array<f32, 11>(
    0.5044420957565308,      // 5.04442073643383265887E-1
    0.19710282981395721,     // 1.97102833525523411709E-1
    0.018764859065413475,    // 1.87648584092575249293E-2
    0.0006840793648734689,   // 6.84079380915393090172E-4
    1.1513882782310247e-05,  // 1.15138826111884280931E-5
    9.828524127897253e-08,   // 9.82852443688422223854E-8
    4.453444280017038e-10,   // 4.45344415861750144738E-10
    1.0826803863162038e-12,  // 1.08268041139020870318E-12
    1.3755546130449084e-15,  // 1.37555460633261799868E-15
    8.36354459136547e-19,    // 8.36354435630677421531E-19
    1.8695870925105903e-22   // 1.86958710162783235106E-22
);

const MATH_MISC_FRESNEL_GD: array<f32, 12> = array<f32, 12>(
    1.0,                     // 1.0
    1.4749575853347778,      // 1.47495759925128324529E0
    0.3377489745616913,      // 3.37748989120019970451E-1
    0.02536037378013134,     // 2.53603741420338795122E-2
    0.0008146790787577629,   // 8.14679107184306179049E-4
    1.2754507224599365e-05,  // 1.27545075667729118702E-5
    1.0431458719040165e-07,  // 1.04314589657571990585E-7
    4.6068071579696834e-10,  // 4.60680728146520428211E-10
    1.102732163395237e-12,   // 1.10273215066240270757E-12
    1.3879653397880784e-15,  // 1.38796531259578871258E-15
    8.391588082082549e-19,   // 8.39158816283118707363E-19
    1.8695870925105903e-22   // 1.86958710162783236342E-22
);

const MATH_MISC_SPENCE_A: array<f32, 8> = array<f32, 8>(
    4.651285780710168e-05,  // 4.65128586073990045278E-5
    0.007315890397876501,   // 7.31589045238094711071E-3
    0.13384763896465302,    // 1.33847639578309018650E-1
    0.8796913027763367,     // 8.79691311754530315341E-1
    2.711498498916626,      // 2.71149851196553469920E0
    4.25697135925293,       // 4.25697156008121755724E0
    3.2977135181427,        // 3.29771340985225106936E0
    1.0                     // 1.00000000000000000126E0
);

const MATH_MISC_SPENCE_B: array<f32, 8> = array<f32, 8>(
    0.0006909904768690467,  // 6.90990488912553276999E-4
    0.025404376909136772,   // 2.54043763932544379113E-2
    0.28297486901283264,    // 2.82974860602568089943E-1
    1.4117259979248047,     // 1.41172597751831069617E0
    3.638005256652832,      // 3.63800533345137075418E0
    5.0327887535095215,     // 5.03278880143316990390E0
    3.5477135181427,        // 3.54771340985225096217E0
    1.0                     // 9.99999999999999998740E-1
);
// ---- Dawson's integral: dawsn_op (Cephes dawsn.c) ----

// generic_dawsn_interval_1, |x| in [0, 3.25): x AN(x^2) / AD(x^2).
fn math_misc_dawsn_interval_1(x: f32) -> f32 {
    let x2 = x * x;
    return (x * math_polevl9(x2, MATH_MISC_DAWSN_AN)) / math_polevl10(x2, MATH_MISC_DAWSN_AD);
}

// generic_dawsn_interval_2, |x| in [3.25, 6.25): (1/x + 1/x^2 BN(1/x^2) / (x BD(1/x^2))) / 2.
fn math_misc_dawsn_interval_2(x: f32) -> f32 {
    let inverse_x = 1.0 / x;
    let inverse_x2 = inverse_x * inverse_x;
    let z = math_polevl10(inverse_x2, MATH_MISC_DAWSN_BN) / (x * math_polevl10(inverse_x2, MATH_MISC_DAWSN_BD));
    let y = inverse_x2 * z + inverse_x;
    return 0.5 * y;
}

// generic_dawsn_interval_3, |x| in [6.25, 1e9): as interval 2, with CN and CD.
fn math_misc_dawsn_interval_3(x: f32) -> f32 {
    let inverse_x = 1.0 / x;
    let inverse_x2 = inverse_x * inverse_x;
    let z = math_polevl4(inverse_x2, MATH_MISC_DAWSN_CN) / (x * math_polevl5(inverse_x2, MATH_MISC_DAWSN_CD));
    let y = inverse_x2 * z + inverse_x;
    return 0.5 * y;
}

// dawsn(x) = exp(-x^2) * integral_0^x exp(t^2) dt. Odd, computed on |x| and negated for x < 0,
// except past |x| >= 1e9 (see the header).
fn math_dawsn(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    // TF: 0.5 / +-inf = +-0, negated for -inf: +0 either way.
    if (math_is_inf(x)) { return 0.0; }
    let abs_x = abs(x);
    if (abs_x >= 1.0e9) {
        // TF: dawsn = 0.5 / x, then -dawsn for x < 0, i.e. 0.5 / |x|; underflows past ~4.25e37.
        return math_flush(0.5 / abs_x);
    }
    var dawsn: f32;
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
const MATH_MISC_EUL: f32 = 0.5772156715393066;

// generic_expint_interval_2 .. _7 share x exp(-x) Ei(x) - 1 = w R(w), w = 1/x:
// Ei(x) = exp(x) * w * (w R(w) + 1), evaluated as TF does, (exp(x) * w) * f.
fn math_misc_expint_large(x: f32, w: f32, r: f32) -> f32 {
    let f = w * r + 1.0;
    let e = math_exp(x);
    // exp(x) overflows past ~88.72: TF's inf * w * f (w, f > 0) is +inf.
    if (math_is_inf(e)) { return math_inf(); }
    return e * w * f;
}

// Ei(x) = -integral_{-x}^inf exp(-t)/t dt (principal value), for x >= 0; NaN for x < 0.
fn math_expint(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x < 0.0) { return math_nan(); }
    // TF: exp(inf) * (1/inf) * f = inf * 0.
    if (math_is_inf(x)) { return math_nan(); }
    if (x < 2.0) {
        // generic_expint_interval_1, [0, 2): Ei(x) - EUL - log(x) = x A(x) / B(x).
        if (x == 0.0) {
            // glibc's logf on the raw argument (see the header): -inf at +-0, NaN for a negative
            // subnormal, -150 ln 2 for a positive one (then 0 * f + EUL + that, in float).
            let bits = bitcast<u32>(x_in);
            if ((bits & 0x7fffffffu) == 0u) { return -math_inf(); }
            if ((bits & 0x80000000u) != 0u) { return math_nan(); }
            return -103.39485931396484;
        }
        let f = math_polevl5(x, MATH_MISC_EXPINT_A) / math_polevl6(x, MATH_MISC_EXPINT_B);
        return x * f + MATH_MISC_EUL + math_log(x);
    }
    // TF flushes 1/x to zero past 2^126, and then exp(x) * 0 = inf * 0.
    let w = math_flush(1.0 / x);
    if (w == 0.0) { return math_nan(); }
    var r: f32;
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
const MATH_MISC_PI: f32 = 3.1415927410125732;
const MATH_MISC_HALF_PI: f32 = 1.5707963705062866;

// generic_fresnel_cos_interval_1, x^2 < 2.5625: x CN(x^4) / CD(x^4).
fn math_misc_fresnel_cos_interval_1(x: f32) -> f32 {
    let x2 = x * x;
    let x4 = x2 * x2;
    return x * math_polevl5(x4, MATH_MISC_FRESNEL_CN) / math_polevl6(x4, MATH_MISC_FRESNEL_CD);
}

// generic_fresnel_sin_interval_1, x^2 < 2.5625: x^3 SN(x^4) / SD(x^4). x^3 flushed as TF does
// (the result is then subnormal or zero either way, and flushed by the caller).
fn math_misc_fresnel_sin_interval_1(x: f32) -> f32 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let z = math_flush(x * x2);
    return z * math_polevl5(x4, MATH_MISC_FRESNEL_SN) / math_polevl6(x4, MATH_MISC_FRESNEL_SD);
}

// generic_fresnel_asymp, x^2 >= 2.5625 and x <= 36974: the auxiliary functions f and g in
// t = 1 / (pi x^2), then C = 1/2 + (f sin z - g cos z) / (pi x), S = 1/2 - (f cos z + g sin z) /
// (pi x), z = (pi/2) x^2 computed in float as TF does (so its sin and cos see the rounded z).
fn math_misc_fresnel_asymp(x: f32, use_sin: bool) -> f32 {
    let x2 = x * x;
    let t = 1.0 / (MATH_MISC_PI * x2);
    let u = t * t;
    let f = 1.0 - u * (math_polevl9(u, MATH_MISC_FRESNEL_FN) / math_polevl10(u, MATH_MISC_FRESNEL_FD));
    let g = t * math_polevl10(u, MATH_MISC_FRESNEL_GN) / math_polevl11(u, MATH_MISC_FRESNEL_GD);
    let z = MATH_MISC_HALF_PI * x2;
    let c = math_cos(z);
    let s = math_sin(z);
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
fn math_misc_fresnel(x_in: f32, use_sin: bool) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    let abs_x = abs(x);
    // Also +-inf.
    if (abs_x > 36974.0) { return select(0.5, -0.5, x < 0.0); }
    let x2 = x * x;
    var r: f32;
    if (x2 < 2.5625) {
        if (use_sin) {
            r = math_misc_fresnel_sin_interval_1(abs_x);
        } else {
            r = math_misc_fresnel_cos_interval_1(abs_x);
        }
    } else {
        r = math_misc_fresnel_asymp(abs_x, use_sin);
    }
    return math_flush(select(r, -r, x < 0.0));
}

// C(x) = integral_0^x cos(pi t^2 / 2) dt.
fn math_fresnel_cos(x: f32) -> f32 {
    return math_misc_fresnel(x, false);
}

// S(x) = integral_0^x sin(pi t^2 / 2) dt.
fn math_fresnel_sin(x: f32) -> f32 {
    return math_misc_fresnel(x, true);
}

// ---- Spence's integral: spence_op (Cephes spence.c) ----

// Scalar(EIGEN_PI * EIGEN_PI / 6.0).
const MATH_MISC_PI2O6: f32 = 1.644934058189392;

// spence(x) = integral_1^x log(t) / (1 - t) dt = dilog(1 - x), for x >= 0; NaN for x < 0.
fn math_spence(x_in: f32) -> f32 {
    let x = math_flush(x_in);
    if (math_is_nan(x)) { return x; }
    if (x < 0.0) { return math_nan(); }
    if (x == 0.0) { return MATH_MISC_PI2O6; }
    if (x == 1.0) { return 0.0; }
    // TF: y = 1/inf = 0, or 1/x flushed to 0 past 2^126; then -log(0) * log1p(-0) = inf * -0.
    if (math_is_inf(x)) { return math_nan(); }
    var y = x;
    if (x >= 2.0) {
        y = math_flush(1.0 / x);
        if (y == 0.0) { return math_nan(); }
    }
    var w: f32;
    if (1.5 < y) {
        w = 1.0 / y - 1.0;
    } else if (y < 0.5) {
        w = -y;
    } else {
        w = y - 1.0;
    }
    var spence = -w * (math_polevl7(w, MATH_MISC_SPENCE_A) / math_polevl7(w, MATH_MISC_SPENCE_B));
    let z = math_log(y);
    if (y < 0.5) {
        spence = -z * math_log1p(-y) + MATH_MISC_PI2O6 - spence;
    }
    if (1.5 < x) {
        spence = -0.5 * z * z - spence;
    }
    return spence;
}
