//! Every WGSL file in `wgsl/` parses and validates with naga for each specialisation we use, so a
//! shader error fails `cargo test` rather than a user's session.

use tensorflow_wgpu::kernels::matmul_skinny as skinny;
use tensorflow_wgpu::runtime::pipeline::{specialised_source, Shader};

fn validate(shader: &Shader, aliases: &[(&str, &str)]) {
    let source = specialised_source(shader, aliases);
    let module = naga::front::wgsl::parse_str(&source)
        .unwrap_or_else(|e| panic!("{} {aliases:?}: {}", shader.name, e.emit_to_string(&source)));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{} {aliases:?}: {e:?}", shader.name));
}

#[test]
fn memory_shader_is_valid() {
    validate(&tensorflow_wgpu::runtime::transfer::MEMORY_SHADER, &[]);
}

#[test]
fn broadcasting_shaders_are_valid() {
    use tensorflow_wgpu::kernels::binary::{COMPARE_SHADER, LOGICAL_SHADER, SELECT_SHADER, SHADER};
    for ty in ["f32", "f16"] {
        validate(&SHADER, &[("T", ty)]);
        validate(&COMPARE_SHADER, &[("T", ty)]);
    }
    validate(&LOGICAL_SHADER, &[]);
    validate(&SELECT_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::integer::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::complex::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::special::SHADER, &[("T", "f32"), ("M", "f32")]);
    validate(&tensorflow_wgpu::kernels::special::FLOAT64_SHADER, &[("T", "f64"), ("M", "f64")]);
    validate(&tensorflow_wgpu::kernels::sort::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::compact::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::unique::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::matrix::DIAG_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::reduce::INTEGER_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::binary::FLOAT64_SHADER, &[]);
}

#[test]
fn reduce_matmul_and_softmax_shaders_are_valid() {
    validate(&tensorflow_wgpu::kernels::reduce::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::reduce::F64_SHADER, &[]);
    for (ty, accumulator) in [("f32", "f32"), ("f16", "f32"), ("f64", "f64")] {
        validate(&tensorflow_wgpu::kernels::matmul::SHADER, &[("T", ty), ("ACC", accumulator)]);
        validate(&tensorflow_wgpu::kernels::matmul_gpu::SHADER, &[("T", ty), ("ACC", accumulator)]);
    }
    for ty in ["f32", "f16"] {
        validate(&tensorflow_wgpu::kernels::matmul::PACK_SHADER, &[("T", ty)]);
        validate(&tensorflow_wgpu::kernels::matmul::TILES_SHADER, &[("T", ty)]);
        validate(&tensorflow_wgpu::kernels::matmul::TILES_SUBGROUP_SHADER, &[("T", ty)]);
        validate(&tensorflow_wgpu::kernels::matmul::TILES_TEXELS_SHADER, &[("T", ty)]);
    }
    // quot.wgsl is prepended to the broadcasting, reduce, conv, index and pack shaders, rows.wgsl to
    // softmax and xent, tap_passes.wgsl to conv and volume: validated with them.
    validate(&tensorflow_wgpu::kernels::im2col::WINDOW_SHADER, &[("T", "f32")]);
    validate(&tensorflow_wgpu::kernels::im2col::CONV_TILES_SHADER, &[("T", "f32")]);
    validate(&tensorflow_wgpu::kernels::im2col::CONV_TEXELS_SHADER, &[("T", "f32")]);
    for shader in [&skinny::SHADER, &skinny::SHADER_S4, &skinny::SHADER_D4, &skinny::SHADER_S4_D4] {
        validate(shader, &[]);
    }
    validate(&skinny::PACK_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::nn::SOFTMAX_SHADER, &[("F", "f32")]);
    validate(&tensorflow_wgpu::kernels::nn::XENT_SHADER, &[("F", "f32")]);
    validate(&tensorflow_wgpu::kernels::nn::SOFTMAX_F64_SHADER, &[("F", "f64")]);
    validate(&tensorflow_wgpu::kernels::nn::XENT_F64_SHADER, &[("F", "f64")]);
    validate(&tensorflow_wgpu::kernels::random::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::random::F64_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::conv::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::conv::FLOAT64_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::conv::TEXELS_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::batch_norm::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::scatter::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::scatter::CHAIN_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::scatter::CHAIN_F64_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::volume::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::volume::FLOAT64_SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::matrix::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::scan::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::scan::FLOAT64_SHADER, &[]);
}

#[test]
fn index_shader_is_valid() {
    validate(&tensorflow_wgpu::kernels::index::SHADER, &[]);
}

#[test]
fn strided_shaders_are_valid() {
    validate(&tensorflow_wgpu::kernels::slice::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::slice::REVERSE_SEQUENCE_SHADER, &[]);
}

#[test]
fn resize_shader_is_valid() {
    for storage in ["f32", "f16", "f64", "u32"] {
        validate(&tensorflow_wgpu::kernels::resize::SHADER, &[("S", storage), ("O", "f32")]);
    }
    // float64 gradient sums.
    validate(&tensorflow_wgpu::kernels::resize::SHADER, &[("S", "f64"), ("O", "f64")]);
}

#[test]
fn rnn_shader_is_valid() {
    validate(&tensorflow_wgpu::kernels::rnn::SHADER, &[]);
    validate(&tensorflow_wgpu::kernels::rnn::FLOAT64_SHADER, &[]);
}

#[test]
fn cast_shader_is_valid_for_every_pair() {
    for (s, d) in [("f32", "i32"), ("i32", "f32"), ("f32", "u32"), ("u32", "f32"), ("f32", "f16"), ("f16", "f32")] {
        validate(&tensorflow_wgpu::kernels::cast::SHADER, &[("S", s), ("D", d), ("W", "f32")]);
    }
    for (s, d) in [("f64", "f32"), ("f32", "f64"), ("f16", "f64"), ("i32", "f64"), ("f64", "i32"), ("u32", "f64")] {
        validate(&tensorflow_wgpu::kernels::cast::SHADER, &[("S", s), ("D", d), ("W", "f64")]);
    }
}

#[test]
fn unary_shaders_are_valid() {
    validate(&tensorflow_wgpu::kernels::unary::SHADER, &[("T", "f32")]);
    validate(&tensorflow_wgpu::kernels::unary::SHADER, &[("T", "f16")]);
    validate(&tensorflow_wgpu::kernels::unary::CLASSIFY_SHADER, &[]);
}

#[test]
fn every_wgsl_file_is_covered() {
    let mut files: Vec<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/wgsl"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "batch_norm.wgsl",
            "binary.wgsl",
            "binary_f64.wgsl",
            "broadcast.wgsl",
            "cast.wgsl",
            "chunk_scan.wgsl",
            "classify.wgsl",
            "compact.wgsl",
            "compare.wgsl",
            "complex.wgsl",
            "conv.wgsl",
            "conv_loads.wgsl",
            "conv_loads_texels.wgsl",
            "conv_tiles_subgroup.wgsl",
            "conv_tiles_texels.wgsl",
            "diag.wgsl",
            "element_f32.wgsl",
            "element_f64.wgsl",
            "index.wgsl",
            "int64.wgsl",
            "integer.wgsl",
            "integer_reduce.wgsl",
            "logical.wgsl",
            "math.wgsl",
            "math_f64.wgsl",
            "matmul.wgsl",
            "matmul_batch.wgsl",
            "matmul_gpu.wgsl",
            "matmul_pack.wgsl",
            "matmul_skinny.wgsl",
            "matmul_skinny_pack.wgsl",
            "matmul_tiles.wgsl",
            "matmul_tiles_subgroup.wgsl",
            "matmul_tiles_texels.wgsl",
            "matrix.wgsl",
            "memory.wgsl",
            "quot.wgsl",
            "random.wgsl",
            "random_f64.wgsl",
            "reduce.wgsl",
            "reduce_f64.wgsl",
            "reduce_index.wgsl",
            "resize.wgsl",
            "reverse_sequence.wgsl",
            "rnn.wgsl",
            "rows.wgsl",
            "rows_f32.wgsl",
            "rows_f64.wgsl",
            "scan.wgsl",
            "scan_f64.wgsl",
            "scan_words.wgsl",
            "scatter.wgsl",
            "scatter_chain.wgsl",
            "scatter_chain_f64.wgsl",
            "scatter_chain_int.wgsl",
            "scatter_index.wgsl",
            "select.wgsl",
            "softmax.wgsl",
            "sort.wgsl",
            "special.wgsl",
            "special_math.wgsl",
            "special_math_f64.wgsl",
            "strided.wgsl",
            "tap_passes.wgsl",
            "unary.wgsl",
            "unique.wgsl",
            "volume.wgsl",
            "xent.wgsl"
        ],
        "add a validation test for the new shader"
    );
}

#[test]
fn generated_matmul_tiles_is_current() {
    let status = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/gen-matmul-tiles.py"))
        .arg("--check")
        .status()
        .expect("python3 runs scripts/gen-matmul-tiles.py");
    assert!(status.success(), "wgsl/matmul_tiles*.wgsl differ from scripts/gen-matmul-tiles.py's output");
}
