// The loads of `conv2d_grad_filter_rows` (conv.wgsl), from its storage bindings; appended to
// conv.wgsl in the storage shaders (`conv_loads_texels.wgsl`: from textures, on CPU adapters).

// Input element `at` (the binding's index).
fn rows_input(at: u32) -> T {
    return input[at];
}

// dy's vec4 `at` (binding 1's vec4 index).
fn rows_dy4(at: u32) -> vec4<T> {
    return weights4[at];
}
