// Values of `scan.wgsl` as words: `KIND` is float32 (0), a 32-bit integer (1) or a 64-bit one (2,
// two words, low first); integers wrap, as TF's do, so signed and unsigned share the bits. Values
// travel as word pairs (`math.wgsl` and `int64.wgsl` come first); offsets count words.

override KIND: u32 = 0u;

alias V = vec2<u32>;

@group(0) @binding(0) var<storage, read_write> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read_write> totals: array<u32>;

fn wide() -> bool {
    return KIND == 2u;
}

fn load_input(e: u32) -> vec2<u32> {
    if (wide()) {
        return vec2<u32>(input[p.in_off + 2u * e], input[p.in_off + 2u * e + 1u]);
    }
    return vec2<u32>(input[p.in_off + e], 0u);
}

fn load_out(e: u32) -> vec2<u32> {
    if (wide()) {
        return vec2<u32>(out[p.out_off + 2u * e], out[p.out_off + 2u * e + 1u]);
    }
    return vec2<u32>(out[p.out_off + e], 0u);
}

fn store_out(e: u32, v: vec2<u32>) {
    if (wide()) {
        out[p.out_off + 2u * e] = v.x;
        out[p.out_off + 2u * e + 1u] = v.y;
    } else {
        out[p.out_off + e] = v.x;
    }
}

fn load_total(e: u32) -> vec2<u32> {
    if (wide()) {
        return vec2<u32>(totals[p.totals_off + 2u * e], totals[p.totals_off + 2u * e + 1u]);
    }
    return vec2<u32>(totals[p.totals_off + e], 0u);
}

fn store_total(e: u32, v: vec2<u32>) {
    if (wide()) {
        totals[p.totals_off + 2u * e] = v.x;
        totals[p.totals_off + 2u * e + 1u] = v.y;
    } else {
        totals[p.totals_off + e] = v.x;
    }
}

// TF's LogSumExp(a, b): Eigen's mini/maxi (a NaN b gives a), then max + log1p(exp(min - max)),
// or the max itself where it is -inf.
fn log_sum_exp(a: f32, b: f32) -> f32 {
    let low = select(a, b, b < a);
    let high = select(a, b, a < b);
    if (high < -3.4028234663852886e38) {
        return high;
    }
    return math_log1p(math_exp(low - high)) + high;
}

fn combine_f32(a: f32, b: f32) -> f32 {
    switch COMBINE {
        case 1u: { return a * b; }
        case 2u: { return log_sum_exp(a, b); }
        default: { return a + b; }
    }
}

fn combine(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (KIND == 0u) {
        return vec2<u32>(bitcast<u32>(combine_f32(bitcast<f32>(a.x), bitcast<f32>(b.x))), 0u);
    }
    if (KIND == 1u) {
        return vec2<u32>(select(a.x + b.x, a.x * b.x, COMBINE == 1u), 0u);
    }
    if (COMBINE == 1u) {
        return mul64(a, b);
    }
    return add64(a, b);
}

fn identity() -> vec2<u32> {
    if (KIND == 0u) {
        switch COMBINE {
            case 1u: { return vec2<u32>(bitcast<u32>(1.0), 0u); }
            case 2u: { return vec2<u32>(bitcast<u32>(-math_inf()), 0u); }
            default: { return vec2<u32>(0u, 0u); }
        }
    }
    return vec2<u32>(select(0u, 1u, COMBINE == 1u), 0u);
}

