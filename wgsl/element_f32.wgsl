// The element type of the window kernels (`conv.wgsl`, `volume.wgsl`) and the recurrent cells
// (`rnn.wgsl`), and the helpers whose code depends on it, for float32 (`math.wgsl` comes first).

alias T = f32;

fn negative_infinity() -> f32 {
    return bitcast<f32>(0xff800000u);
}

// The lowest finite value: where TF-CPU's max pools start.
fn lowest() -> f32 {
    return bitcast<f32>(0xff7fffffu);
}

// From the bits: WGSL lets implementations assume finite math, so `v != v` cannot be trusted.
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn reciprocal_sqrt(v: f32) -> f32 {
    return math_rsqrt(v);
}

fn element_sigmoid(v: f32) -> f32 {
    return math_sigmoid(v);
}

fn element_tanh(v: f32) -> f32 {
    return math_tanh(v);
}
