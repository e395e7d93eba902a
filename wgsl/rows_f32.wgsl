// float32 row math for rows.wgsl, softmax.wgsl and xent.wgsl (math.wgsl prepended): accurate exp
// and log, and Kahan-compensated sums.

alias RowSum = MathSum;

fn row_sum() -> RowSum {
    return MathSum(0.0, 0.0);
}

fn row_sum_add(acc: ptr<function, RowSum>, x: f32) {
    math_sum_add(acc, x);
}

fn row_sum_value(acc: RowSum) -> f32 {
    return math_sum_value(acc);
}

fn row_exp(x: f32) -> f32 {
    return math_exp(x);
}

fn row_log(x: f32) -> f32 {
    return math_log(x);
}

fn row_neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

fn row_nan() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}
