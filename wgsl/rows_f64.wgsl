// float64 row math for rows.wgsl, softmax.wgsl and xent.wgsl (math_f64.wgsl prepended): fdlibm's
// exp and log, and plain sums (a row's rounding error in f64 is far below what float64 results
// show; Kahan's compensation would also need math.wgsl's guard against Mesa folding it away).

struct RowSum {
    total: f64,
}

fn row_sum() -> RowSum {
    return RowSum(0.0);
}

fn row_sum_add(acc: ptr<function, RowSum>, x: f64) {
    (*acc).total += x;
}

fn row_sum_value(acc: RowSum) -> f64 {
    return acc.total;
}

fn row_exp(x: f64) -> f64 {
    return m64_exp(x);
}

fn row_log(x: f64) -> f64 {
    return m64_log(x);
}

fn row_neg_inf() -> f64 {
    return -m64_inf();
}

fn row_nan() -> f64 {
    return m64_nan();
}
