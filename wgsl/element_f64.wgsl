// The element type of the window kernels (`conv.wgsl`, `volume.wgsl`) and the recurrent cells
// (`rnn.wgsl`), and the helpers whose code depends on it, for float64 (`math_f64.wgsl` comes first;
// the device has SHADER_F64).

alias T = f64;

fn negative_infinity() -> f64 {
    return -m64_inf();
}

// The lowest finite value: where TF-CPU's max pools start.
fn lowest() -> f64 {
    return -1.7976931348623157e308;
}

// WGSL has no bitcast of an f64, and implementations may assume finite math (so `v != v` cannot be
// trusted): a NaN stays one when converted to float32, whose bits are readable.
fn is_nan(v: f64) -> bool {
    return (bitcast<u32>(f32(v)) & 0x7fffffffu) > 0x7f800000u;
}

// Two correctly rounded steps, as Eigen's rsqrt for double.
fn reciprocal_sqrt(v: f64) -> f64 {
    return 1.0 / sqrt(v);
}

fn element_sigmoid(v: f64) -> f64 {
    if (is_nan(v)) {
        return v;
    }
    return m64_sigmoid(v);
}

fn element_tanh(v: f64) -> f64 {
    if (is_nan(v)) {
        return v;
    }
    return m64_tanh(v);
}
