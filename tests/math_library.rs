//! What `wgsl/math.wgsl` assumes of the adapter's compiler, checked on the adapter itself: the
//! rounding error of a sum or a product can be recovered exactly (the error-free transformations
//! its two-part arithmetic is built on) in spite of the driver's optimiser, and without a fused
//! `fma`. If one fails, the library's accuracy does not hold on that adapter, and these tests say
//! which assumption broke. `wgsl/math_f64.wgsl` is checked the same way where the adapter computes
//! in f64.

use std::sync::{Arc, Mutex};

use tensorflow_wgpu::runtime::device::{is_llvmpipe, LLVMPIPE_MAX_LOOP_ITERATIONS};
use tensorflow_wgpu::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};
use tensorflow_wgpu::runtime::{instance, Device, Stream};

/// Evaluates the WGSL expression `expr` (of `x` and `y`, with the math library in scope) for each
/// pair of `inputs` on the adapter.
fn eval(expr: &str, inputs: &[(f32, f32)]) -> Vec<f32> {
    run_probe(&format!("return {expr};"), inputs)
}

/// Runs `fn probe(x: f32, y: f32) -> f32 { body }` for each pair of `inputs` on the adapter.
fn run_probe(body: &str, inputs: &[(f32, f32)]) -> Vec<f32> {
    let source = format!(
        "{}\n@group(0) @binding(0) var<storage, read_write> xy: array<vec2<f32>>;\n\
         @group(0) @binding(1) var<storage, read_write> out: array<f32>;\n\
         @group(0) @binding(2) var<uniform> n: vec4<u32>;\n\
         fn probe(x: f32, y: f32) -> f32 {{ {body} }}\n\
         // 256 invocations a workgroup, as `dispatch` counts them.\n\
         @compute @workgroup_size(256) fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{\n\
           if (gid.x < n.x) {{ out[gid.x] = probe(xy[gid.x].x, xy[gid.x].y); }}\n\
         }}\n",
        include_str!("../wgsl/math.wgsl")
    );
    let bytes: Vec<u8> = inputs.iter().flat_map(|(x, y)| [x.to_le_bytes(), y.to_le_bytes()]).flatten().collect();
    let device = Arc::new(instance::open_private_device(0).expect("no WGPU adapter"));
    let got = run_module(&device, source, &bytes, 8, 4, inputs.len());
    got.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Runs `fn probe(x: f64) -> f64 { body }` (with `wgsl/math_f64.wgsl` in scope) for each of
/// `inputs`, or None where the adapter does not compute in f64.
fn run_probe_f64(body: &str, inputs: &[f64]) -> Option<Vec<f64>> {
    let device = Arc::new(instance::open_private_device(0).expect("no WGPU adapter"));
    if !device.features.contains(wgpu::Features::SHADER_F64) {
        return None;
    }
    let source = format!(
        "{}\n@group(0) @binding(0) var<storage, read_write> xs: array<f64>;\n\
         @group(0) @binding(1) var<storage, read_write> out: array<f64>;\n\
         @group(0) @binding(2) var<uniform> n: vec4<u32>;\n\
         fn probe(x: f64) -> f64 {{ {body} }}\n\
         @compute @workgroup_size(256) fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{\n\
           if (gid.x < n.x) {{ out[gid.x] = probe(xs[gid.x]); }}\n\
         }}\n",
        include_str!("../wgsl/math_f64.wgsl")
    );
    let bytes: Vec<u8> = inputs.iter().flat_map(|x| x.to_le_bytes()).collect();
    let got = run_module(&device, source, &bytes, 8, 8, inputs.len());
    Some(got.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect())
}

/// Runs the probe module `source` over `count` inputs of `in_size` bytes each, returning its
/// outputs of `out_size` bytes each.
fn run_module(
    device: &Arc<Device>,
    source: String,
    input: &[u8],
    in_size: u64,
    out_size: u64,
    count: usize,
) -> Vec<u8> {
    let shader = Shader {
        name: "math probe",
        source: Box::leak(source.into_boxed_str()),
        storage_buffers: 2,
        uniform_buffers: 0,
        textures: 0,
    };
    let stream = Stream::new(device.clone());
    let out_len = out_size * count as u64;
    let input_ptr = device.memory.allocate(device, input.len() as u64).unwrap();
    let output = device.memory.allocate(device, out_len).unwrap();
    stream.memcpy_htod(input_ptr, input).unwrap();
    let pipeline =
        device.pipelines.get(device, &shader, &PipelineSpec { entry: "main", aliases: &[], constants: &[] }).unwrap();
    let in_mem = device.memory.resolve(input_ptr, input.len() as u64).unwrap();
    let out_mem = device.memory.resolve(output, out_len).unwrap();
    stream
        .encode(|core, encoder| {
            let (in_bind, _) = storage_window(core, &in_mem, in_size)?;
            let (out_bind, _) = storage_window(core, &out_mem, out_size)?;
            let n = [count as u32, 0, 0, 0];
            dispatch(core, encoder, "math probe", &pipeline, &[in_bind, out_bind], bytemuck::bytes_of(&n), n[0] as u64)
        })
        .unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    stream.memcpy_dtoh(output, out_len, Box::new(move |b| sink.lock().unwrap().extend_from_slice(b))).unwrap();
    stream.block_until_done().unwrap();
    let bytes = got.lock().unwrap().clone();
    bytes
}

#[test]
fn the_rounding_error_of_a_product_is_recovered_exactly() {
    // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: the product rounds the last term away.
    let a = 1.0 + 2f32.powi(-12);
    let b = 1.0 / 3.0f32;
    let exact = f64::from(b) * f64::from(b) - f64::from(b * b);
    let got = eval("math_product_error(x, y, x * y)", &[(a, a), (b, b), (-a, b)]);
    assert_eq!(got[0], 2f32.powi(-24));
    assert_eq!(f64::from(got[1]), exact);
    assert_eq!(f64::from(got[2]), f64::from(-a) * f64::from(b) - f64::from(-a * b));
}

#[test]
fn the_rounding_error_of_a_sum_survives_the_optimiser() {
    // Without the barrier, Mesa rewrites y - ((x + y) - x) to 0.
    let got = eval("math_sum_error(x, y, x + y)", &[(1.0, 2f32.powi(-30)), (1.0, 3.0 * 2f32.powi(-25))]);
    assert_eq!(got, [2f32.powi(-30), -(2f32.powi(-25))]);
    // With a constant operand, as the library's callers have: Mesa distributes a sum over a select
    // with a constant arm, so a select barrier fails here.
    let got = eval("math_sum_error(2.0, x, 2.0 + x)", &[(3.0 * 2f32.powi(-24), 0.0)]);
    assert_eq!(got, [-(2f32.powi(-24))]);
}

#[test]
fn cody_waite_steps_stay_exact() {
    // The reduction's first step at its largest n: exact, so x - n * 1.5703125 is representable.
    let n = 2607.0f32;
    let x = 4095.5f32;
    let got = eval("x - y * 1.5703125", &[(x, n)]);
    assert_eq!(f64::from(got[0]), f64::from(x) - f64::from(n) * 1.5703125);
}

/// llvmpipe ends every loop of an invocation once it has run 65535 iterations in all (the kernels
/// split or refuse longer work, `DeviceCore::max_loop_iterations`); other adapters run them out.
/// The counter belongs to a SIMD vector of invocations, so each case runs in its own dispatch.
#[test]
fn loop_iterations_per_invocation() {
    let device = instance::open_private_device(0).expect("no WGPU adapter");
    let llvmpipe = is_llvmpipe(&device.info);
    // Two loops of x and y iterations; returns the iterations they ran together.
    let body = "var n = 0u; for (var i = 0u; i < u32(x); i++) { n++; } \
                for (var i = 0u; i < u32(y); i++) { n++; } return f32(n);";
    let limit = LLVMPIPE_MAX_LOOP_ITERATIONS as f32;
    let cases = [(1000.0, 2000.0), (limit, 0.0), (limit + 10.0, 0.0), (60000.0, 10000.0)];
    let got: Vec<f32> = cases.iter().map(|&case| run_probe(body, &[case])[0]).collect();
    assert_eq!(got[..2], [3000.0, limit]);
    if llvmpipe {
        // Cut short at the limit (a loop's last exit test may take one more from the counter).
        for (&n, full) in got[2..].iter().zip([limit + 10.0, 70000.0]) {
            assert!(
                n < full && n >= limit - 1.0,
                "llvmpipe's loop limit moved ({n}): update LLVMPIPE_MAX_LOOP_ITERATIONS"
            );
        }
    } else {
        assert_eq!(got[2..], [limit + 10.0, 70000.0]);
    }
}

/// `math_exp2` has no op of its own (TF has no Exp2), so it is checked here: within 2 ulp of the
/// exact result from deep underflow to overflow, with the edges exact.
#[test]
fn exp2_is_within_two_ulp() {
    let inputs: Vec<f32> = (0..4000).map(|i| -152.0 + 281.0 * i as f32 / 3999.0).collect();
    let got = run_probe("return math_exp2(x);", &inputs.iter().map(|&x| (x, 0.0)).collect::<Vec<_>>());
    for (&x, &g) in inputs.iter().zip(&got) {
        let exact = f64::from(x).exp2();
        if exact >= f64::from(f32::MAX) * (1.0 + f64::EPSILON) || exact > 3.5e38 {
            assert_eq!(g, f32::INFINITY, "exp2({x})");
            continue;
        }
        let ulp = 2f64.powi((exact.log2().floor() as i32 - 23).max(-149));
        let err = (f64::from(g) - exact).abs() / ulp;
        assert!(err <= 2.0, "exp2({x}) = {g}, exact {exact}: {err} ulp");
    }
    assert_eq!(
        eval("math_exp2(x)", &[(0.0, 0.0), (-1.0, 0.0), (127.0, 0.0), (128.0, 0.0), (-151.0, 0.0)]),
        [1.0, 0.5, 2f32.powi(127), f32::INFINITY, 0.0]
    );
}

/// `m64_round` against Rust's round-half-to-even at every magnitude up to 2^53, halves, both signs,
/// and the float64 argument reduction that rests on it and on floor. (On llvmpipe with LLVM 15 on
/// an AVX2 CPU, WGSL's own f64 `round` and `trunc` return values from 2^24 up unchanged; sin, cos
/// and tan of large arguments were wrong there until the library stopped using them.)
#[test]
fn float64_rounding_and_large_argument_reduction_are_exact() {
    let mut inputs = vec![0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.49999999999999994, 4503599627370495.5, 1e300];
    for k in 0..60 {
        let p = 2f64.powi(k);
        inputs.extend([1.37 * p, p + 0.5, p - 0.5, p + 1.5, 3.0 * p + 0.25]);
    }
    inputs.extend(inputs.clone().iter().map(|v| -v));
    let Some(got) = run_probe_f64("return m64_round(x);", &inputs) else {
        return;
    };
    for (&x, &g) in inputs.iter().zip(&got) {
        let want = x.round_ties_even();
        assert!(g == want && g.is_sign_negative() == want.is_sign_negative(), "m64_round({x}) = {g}, not {want}");
    }
    // The library rounds through floor and ceil: they must be exact here.
    assert_eq!(
        run_probe_f64("return floor(x);", &inputs).unwrap(),
        inputs.iter().map(|x| x.floor()).collect::<Vec<_>>()
    );
    assert_eq!(run_probe_f64("return ceil(x);", &inputs).unwrap(), inputs.iter().map(|x| x.ceil()).collect::<Vec<_>>());
    // Large arguments (the reduction's 2^20 pi/2 and beyond): within an ulp of the exact sine (from
    // mpmath), where the broken trunc gave -1.87e-7 and -0.81803.
    let cases =
        [(32515483.964654356, -3.776862162727881e-9), (1e300, -0.8178819121159085), (1e22, -0.8522008497671888)];
    let got = run_probe_f64("return m64_sin(x);", &cases.map(|c| c.0)).unwrap();
    for ((x, exact), g) in cases.iter().zip(got) {
        assert!((g - exact).abs() <= 1.5 * (exact.abs() * f64::EPSILON), "sin({x}) = {g}, exact {exact}");
    }
}
