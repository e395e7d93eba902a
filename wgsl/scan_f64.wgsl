// Values of `scan.wgsl` in f64 (float64; `math_f64.wgsl` comes first, and the device has
// SHADER_F64); offsets count elements.

alias V = f64;

@group(0) @binding(0) var<storage, read_write> input: array<f64>;
@group(0) @binding(1) var<storage, read_write> out: array<f64>;
@group(0) @binding(2) var<storage, read_write> totals: array<f64>;

fn load_input(e: u32) -> f64 {
    return input[p.in_off + e];
}

fn load_out(e: u32) -> f64 {
    return out[p.out_off + e];
}

fn store_out(e: u32, v: f64) {
    out[p.out_off + e] = v;
}

fn load_total(e: u32) -> f64 {
    return totals[p.totals_off + e];
}

fn store_total(e: u32, v: f64) {
    totals[p.totals_off + e] = v;
}

// TF's LogSumExp(a, b), as `scan_words.wgsl`'s in float32.
fn log_sum_exp(a: f64, b: f64) -> f64 {
    let low = select(a, b, b < a);
    let high = select(a, b, a < b);
    if (high < -M64_MAX) {
        return high;
    }
    return m64_log1p(m64_exp(low - high)) + high;
}

fn combine(a: f64, b: f64) -> f64 {
    switch COMBINE {
        case 1u: { return a * b; }
        case 2u: { return log_sum_exp(a, b); }
        default: { return a + b; }
    }
}

fn identity() -> f64 {
    switch COMBINE {
        case 1u: { return 1.0; }
        case 2u: { return -m64_inf(); }
        default: { return 0.0; }
    }
}
