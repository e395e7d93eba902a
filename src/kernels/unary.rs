//! Elementwise unary ops (`wgsl/unary.wgsl`) and float classification into bools (`wgsl/classify.wgsl`).

use crate::error::{Error, Result};
use crate::runtime::device::KernelProfile;
use crate::runtime::pipeline::{
    aligned_vec4_window, dispatch, dispatch_with_texels, storage_window, PipelineSpec, Shader, VEC4_MIN_ELEMENTS,
};
use crate::runtime::scratch::{texels_pay_off, TEXELS_A};
use crate::runtime::Stream;

use super::windows::elementwise_parts;
use super::{shader_len, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "unary",
    source: concat!(include_str!("../../wgsl/math.wgsl"), include_str!("../../wgsl/unary.wgsl")),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};
/// `unary.wgsl`'s `main_vec4_texels`: its texture binds after the parameter block.
pub const TEXELS_SHADER: Shader = Shader { name: "unary texels", textures: 1, ..SHADER };
pub const CLASSIFY_SHADER: Shader = Shader {
    name: "classify",
    source: include_str!("../../wgsl/classify.wgsl"),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};

/// The ops of `unary.wgsl`, by the value of its `OP` override constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Abs = 0,
    Neg = 1,
    Sign = 2,
    Square = 3,
    Sqrt = 4,
    Rsqrt = 5,
    Reciprocal = 6,
    Exp = 7,
    Expm1 = 8,
    Log = 9,
    Log1p = 10,
    Sin = 11,
    Cos = 12,
    Tan = 13,
    Tanh = 14,
    Sigmoid = 15,
    Erf = 16,
    Floor = 17,
    Ceil = 18,
    Round = 19,
    Rint = 20,
    Relu = 21,
    Relu6 = 22,
    Elu = 23,
    Selu = 24,
    LeakyRelu = 25,
    Softplus = 26,
    Softsign = 27,
    ZerosLike = 28,
    OnesLike = 29,
    /// Fused-op activations without a TF op of their own.
    GeluExact = 30,
    GeluApproximate = 31,
    Erfc = 32,
    Sinh = 33,
    Cosh = 34,
    Asinh = 35,
    Acosh = 36,
    Atanh = 37,
    Atan = 38,
    Asin = 39,
    Acos = 40,
    Lgamma = 41,
    Digamma = 42,
}

impl UnaryOp {
    /// The TF op name of each unary op.
    pub const ALL: [(&'static str, UnaryOp); 42] = [
        ("Abs", UnaryOp::Abs),
        ("Neg", UnaryOp::Neg),
        ("Sign", UnaryOp::Sign),
        ("Square", UnaryOp::Square),
        ("Sqrt", UnaryOp::Sqrt),
        ("Rsqrt", UnaryOp::Rsqrt),
        ("Reciprocal", UnaryOp::Reciprocal),
        ("Inv", UnaryOp::Reciprocal),
        ("Exp", UnaryOp::Exp),
        ("Expm1", UnaryOp::Expm1),
        ("Log", UnaryOp::Log),
        ("Log1p", UnaryOp::Log1p),
        ("Sin", UnaryOp::Sin),
        ("Cos", UnaryOp::Cos),
        ("Tan", UnaryOp::Tan),
        ("Tanh", UnaryOp::Tanh),
        ("Sigmoid", UnaryOp::Sigmoid),
        ("Erf", UnaryOp::Erf),
        ("Erfc", UnaryOp::Erfc),
        ("Sinh", UnaryOp::Sinh),
        ("Cosh", UnaryOp::Cosh),
        ("Asinh", UnaryOp::Asinh),
        ("Acosh", UnaryOp::Acosh),
        ("Atanh", UnaryOp::Atanh),
        ("Atan", UnaryOp::Atan),
        ("Asin", UnaryOp::Asin),
        ("Acos", UnaryOp::Acos),
        ("Lgamma", UnaryOp::Lgamma),
        ("Digamma", UnaryOp::Digamma),
        ("Floor", UnaryOp::Floor),
        ("Ceil", UnaryOp::Ceil),
        ("Round", UnaryOp::Round),
        ("Rint", UnaryOp::Rint),
        ("Relu", UnaryOp::Relu),
        ("Relu6", UnaryOp::Relu6),
        ("Elu", UnaryOp::Elu),
        ("Selu", UnaryOp::Selu),
        ("LeakyRelu", UnaryOp::LeakyRelu),
        ("Softplus", UnaryOp::Softplus),
        ("Softsign", UnaryOp::Softsign),
        ("ZerosLike", UnaryOp::ZerosLike),
        ("OnesLike", UnaryOp::OnesLike),
    ];

    pub fn from_op(op: &str) -> Result<UnaryOp> {
        UnaryOp::ALL
            .iter()
            .find(|(name, _)| *name == op)
            .map(|(_, u)| *u)
            .ok_or_else(|| Error::internal(format!("{op} is not a unary op")))
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    in_off: u32,
    out_off: u32,
    alpha: f32,
}

/// The unary ops `binary_f64.wgsl` computes in float64 (all of them), with the functions of
/// `math_f64.wgsl`.
pub const FLOAT64_OPS: [&str; 42] = [
    "Abs",
    "Neg",
    "Sign",
    "Square",
    "Sqrt",
    "Rsqrt",
    "Reciprocal",
    "Inv",
    "Floor",
    "Ceil",
    "Round",
    "Rint",
    "Relu",
    "Relu6",
    "LeakyRelu",
    "Softsign",
    "ZerosLike",
    "OnesLike",
    "Exp",
    "Expm1",
    "Log",
    "Log1p",
    "Tanh",
    "Sigmoid",
    "Elu",
    "Selu",
    "Softplus",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "Erf",
    "Erfc",
    "Lgamma",
    "Digamma",
];

/// Encodes `out = op(input)` elementwise; `out` may alias `input`.
pub fn launch(stream: &Stream, op: UnaryOp, alpha: f32, input: &TensorRef, out: &TensorRef) -> Result<()> {
    if out.dtype == DType::F64 {
        return super::binary::launch_unary_f64(stream, op as u32, alpha, input, out);
    }
    if let Some(parts) = elementwise_parts(stream.device(), out, &[input])? {
        return parts.iter().try_for_each(|p| launch(stream, op, alpha, &p.operands[0], &p.out));
    }
    let n = shader_len(out.num_elements(), "unary op")?;
    if n == 0 {
        return Ok(());
    }
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let size = out.dtype.size();
    let pipeline_in = |shader, entry| {
        let spec = PipelineSpec { entry, aliases: &[("T", out.dtype.wgsl())], constants: &[("OP", op as u32 as f64)] };
        device.pipelines.get(device, shader, &spec)
    };
    let pipeline = pipeline_in(&SHADER, "main")?;
    // Four elements per invocation for big float tensors whose offsets fall on a vec4; on CPU
    // adapters, f32 input on a texel read from a texture.
    let texels = device.kernel_profile() == KernelProfile::Cpu
        && out.dtype == DType::F32
        && texels_pay_off(u64::from(n / 4), u64::from(n / 4));
    let vec4 = match (aligned_vec4_window(device, &in_mem, size)?, aligned_vec4_window(device, &out_mem, size)?) {
        (Some(input), Some(output)) if n >= VEC4_MIN_ELEMENTS => {
            let start = input.0.offset + u64::from(input.1) * size;
            let texels = texels && start.is_multiple_of(16);
            let (shader, entry) = if texels { (&TEXELS_SHADER, "main_vec4_texels") } else { (&SHADER, "main_vec4") };
            Some((input, output, pipeline_in(shader, entry)?, texels.then_some(start)))
        }
        _ => None,
    };
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, size)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, size)?;
        let mut done = 0;
        if let Some(((in_vec, in_off), (out_vec, out_off), vec4, texel_start)) = &vec4 {
            done = n / 4 * 4;
            let params = Params { n: done, in_off: *in_off, out_off: *out_off, alpha };
            let (bindings, threads) = ([*in_vec, *out_vec], u64::from(done / 4));
            let params = bytemuck::bytes_of(&params);
            if let Some(start) = *texel_start {
                let view = core.scratch.texels(core, encoder, TEXELS_A, in_vec.buffer, start, threads)?;
                dispatch_with_texels(core, encoder, "unary vec4 texels", vec4, &bindings, &[&view], params, threads)?;
            } else {
                dispatch(core, encoder, "unary vec4", vec4, &bindings, params, threads)?;
            }
        }
        if done < n {
            let params = Params { n: n - done, in_off: in_off + done, out_off: out_off + done, alpha };
            let bindings = [in_bind, out_bind];
            dispatch(core, encoder, "unary", &pipeline, &bindings, bytemuck::bytes_of(&params), u64::from(n - done))?;
        }
        Ok(())
    })
}

pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = UnaryOp::from_op(kernel.def.op)?;
    let dtype = kernel.dtype("T")?;
    let input = ctx.input(0)?;
    let out = ctx.forward_input_or_allocate_output(&[0], 0, dtype, &input.shape)?;
    let alpha = if op == UnaryOp::LeakyRelu { kernel.attrs.float("alpha")? } else { 0.0 };
    launch(ctx.stream()?, op, alpha, &input, &out)
}

/// IsNan, IsInf, IsFinite: float32 or float64 in (`classify.wgsl` reads the bits of any float width), bool out.
pub fn classify(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = match kernel.def.op {
        "IsNan" => 0u32,
        "IsInf" => 1,
        _ => 2,
    };
    let input = ctx.input(0)?;
    let out = ctx.allocate_output(0, DType::Bool, &input.shape)?;
    launch_classify(ctx.stream()?, op, &input, &out)
}

fn launch_classify(stream: &Stream, op: u32, input: &TensorRef, out: &TensorRef) -> Result<()> {
    if let Some(parts) = elementwise_parts(stream.device(), out, &[input])? {
        return parts.iter().try_for_each(|p| launch_classify(stream, op, &p.operands[0], &p.out));
    }
    let n = shader_len(out.num_elements(), "classify")?;
    if n == 0 {
        return Ok(());
    }
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    // The magnitude bits of +infinity (the high word's, for float64).
    let infinity: u32 = match input.dtype {
        DType::F16 => 0x7c00,
        DType::BF16 => 0x7f80,
        DType::F64 => 0x7ff0_0000,
        _ => 0x7f80_0000,
    };
    let width = 8 * input.dtype.size();
    let constants = [("OP", f64::from(op)), ("WIDTH", width as f64), ("INF", f64::from(infinity))];
    let pipeline = device.pipelines.get(
        device,
        &CLASSIFY_SHADER,
        &PipelineSpec { entry: "main", aliases: &[], constants: &constants },
    )?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, input.dtype.size())?;
        let (out_bind, out_byte) = storage_window(core, &out_mem, 1)?;
        if out_byte % 4 != 0 {
            return Err(Error::unimplemented("bool output not word-aligned"));
        }
        let params = Params { n, in_off, out_off: out_byte, alpha: 0.0 };
        dispatch(
            core,
            encoder,
            "classify",
            &pipeline,
            &[in_bind, out_bind],
            bytemuck::bytes_of(&params),
            n.div_ceil(4) as u64,
        )
    })
}
