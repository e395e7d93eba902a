// Special functions of float32 (`math.wgsl` comes first): Cephes' algorithms as Eigen's float code
// computes them, which TF-CPU's and TF-GPU's kernels call (Ndtri, Erfinv, Igamma, Igammac,
// IgammaGradA, RandomGammaGrad, Zeta, Polygamma and the Bessel functions), on `math.wgsl`'s
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

// c[0] x^8 + c[1] x^7 + ... + c[8] (Cephes' polevl, highest degree first).
fn math_polevl8(x: f32, c: array<f32, 9>) -> f32 {
    var acc = c[0];
    for (var i = 1; i < 9; i++) {
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

// Eigen's ppolevl<T, N>: coef[0] x^N + ... + coef[N] by Horner's rule (N + 1 coefficients).
fn math_bessel_polevl4(x: f32, coef: array<f32, 5>) -> f32 {
    var acc = coef[0];
    for (var i = 1; i < 5; i++) {
        acc = acc * x + coef[i];
    }
    return acc;
}

fn math_bessel_polevl7(x: f32, coef: array<f32, 8>) -> f32 {
    var acc = coef[0];
    for (var i = 1; i < 8; i++) {
        acc = acc * x + coef[i];
    }
    return acc;
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
    let p = math_rsqrt(y) * math_bessel_polevl7(q, MATH_BESSEL_J0_MO);
    let w = q * q;
    return vec2<f32>(p, q * math_bessel_polevl7(w, MATH_BESSEL_J0_PH) + MATH_BESSEL_NEG_PIO4);
}

fn math_bessel_asymptotic1(y: f32) -> vec2<f32> {
    let q = 1.0 / y;
    let p = math_rsqrt(y) * math_bessel_polevl7(q, MATH_BESSEL_J1_MO1);
    let w = q * q;
    return vec2<f32>(p, q * math_bessel_polevl7(w, MATH_BESSEL_J1_PH1) + MATH_BESSEL_NEG_THREE_PIO4);
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
        return (z - MATH_BESSEL_J0_DR1) * math_bessel_polevl4(z, MATH_BESSEL_J0_JP);
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
        return math_flush((z - MATH_BESSEL_J1_Z1) * (x * math_bessel_polevl4(z, MATH_BESSEL_J1_JP)));
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
        return (z - MATH_BESSEL_Y0_YZ1) * math_bessel_polevl4(z, MATH_BESSEL_Y0_YP) + r;
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
        let r = (z - MATH_BESSEL_Y1_YO1) * math_bessel_polevl4(z, MATH_BESSEL_Y1_YP);
        return r * x + MATH_BESSEL_TWO_OVER_PI * (math_bessel_j1(x) * math_log(x) + -1.0 / x);
    }
    let mp = math_bessel_asymptotic1(x);
    return mp.x * math_sin(mp.y + x);
}
