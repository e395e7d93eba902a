//! Complex numbers (`wgsl/complex.wgsl`): Real, Imag, Conj, Complex and Neg for complex64 and
//! complex128 (word moves), and complex64 Add, Sub, Mul, Div, ComplexAbs and Angle, with
//! broadcasting.

use crate::error::{Error, Result};
use crate::runtime::memory::DeviceSlice;
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};
use crate::runtime::Stream;

use super::binary::{broadcast_shapes, Layout, TwoOperandParams};
use super::windows::elementwise_parts;
use super::{
    fast_div, kernel, leak, rank_constant, shader_len, t_of, DType, KernelContext, KernelDef, KernelInstance, TensorRef,
};

pub const SHADER: Shader = Shader {
    name: "complex",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/broadcast.wgsl"),
        include_str!("../../wgsl/complex.wgsl")
    ),
    storage_buffers: 3,
    uniform_buffers: 0,
};

/// complex64 arithmetic: TF op and `OP` of `complex.wgsl`.
const ARITHMETIC: [(&str, u32); 6] =
    [("AddV2", 10), ("Add", 10), ("Sub", 11), ("Mul", 12), ("Div", 13), ("RealDiv", 13)];

/// The registration rows of the family.
pub fn register(table: &mut Vec<KernelDef>) {
    use DType::{C128, C64, F32, F64};
    for (complex, part) in [(C64, F32), (C128, F64)] {
        let to_part = leak(vec![("T", complex), ("Tout", part)]);
        for op in ["Real", "Imag"] {
            table.push(kernel(op, to_part, &[], &[], compute));
        }
        table.push(kernel("Conj", t_of(complex), &[], &[], compute));
        table.push(kernel("Neg", t_of(complex), &[], &[], compute));
        table.push(kernel("Complex", leak(vec![("T", part), ("Tout", complex)]), &[], &[], compute));
    }
    // (complex128 arithmetic would need float64 math: left to the CPU.)
    let to_f32 = leak(vec![("T", C64), ("Tout", F32)]);
    table.push(kernel("ComplexAbs", to_f32, &[], &[], compute));
    table.push(kernel("Angle", to_f32, &[], &[], compute));
    for (op, _) in ARITHMETIC {
        table.push(kernel(op, t_of(C64), &[], &[], compute));
    }
}

/// `OP` of `complex.wgsl` for a TF op.
fn op_code(op: &str) -> Result<u32> {
    Ok(match op {
        "Real" => 0,
        "Imag" => 1,
        "Conj" => 2,
        "Complex" => 3,
        "Neg" => 4,
        "ComplexAbs" => 20,
        "Angle" => 21,
        other => ARITHMETIC
            .iter()
            .find(|(name, _)| *name == other)
            .map(|(_, code)| *code)
            .ok_or_else(|| Error::internal(format!("complex: unknown op {other}")))?,
    })
}

pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let code = op_code(kernel.def.op)?;
    let a = ctx.input(0)?;
    let two_operands = code == 3 || (10..20).contains(&code);
    let b = if two_operands { ctx.input(1)? } else { a.clone() };
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let out_dtype = ctx.expected_output_dtype(0)?;
    let out = if out_dtype == a.dtype {
        ctx.forward_input_or_allocate_output(if two_operands { &[0, 1] } else { &[0] }, 0, out_dtype, &shape)?
    } else {
        ctx.allocate_output(0, out_dtype, &shape)?
    };
    launch(ctx.stream()?, code, &a, &b, &out)
}

/// `OP` of `complex.wgsl` for Real (a complex number's real part) and for a real number as complex.
pub const REAL: u32 = 0;
pub const FROM_REAL: u32 = 5;

/// Encodes `out = OP(a, b)` with broadcasting (`b` is `a` for one-operand ops).
pub fn launch(stream: &Stream, code: u32, a: &TensorRef, b: &TensorRef, out: &TensorRef) -> Result<()> {
    if let Some(parts) = elementwise_parts(stream.device(), out, &[a, b])? {
        return parts.iter().try_for_each(|p| launch(stream, code, &p.operands[0], &p.operands[1], &p.out));
    }
    let n = shader_len(out.num_elements(), "complex")?;
    if n == 0 {
        return Ok(());
    }
    // Words per real part: the complex operand's half, or the real operand's whole.
    let complex = if matches!(a.dtype, DType::C64 | DType::C128) { a } else { out };
    let part_words = complex.dtype.size() / 8;
    let layout = Layout::new(&out.shape, &[&a.shape, &b.shape])?;
    let device = stream.device();
    let mems: Vec<DeviceSlice> =
        [a, b, out].iter().map(|t| device.memory.resolve(t.address, t.byte_len())).collect::<Result<_>>()?;
    let constants =
        [("OP", f64::from(code)), ("PART_WORDS", part_words as f64), fast_div(n), rank_constant(layout.rank)];
    let pipeline =
        device.pipelines.get(device, &SHADER, &PipelineSpec { entry: "main", aliases: &[], constants: &constants })?;
    stream.encode(|core, encoder| {
        let (a_bind, a_off) = storage_window(core, &mems[0], 4)?;
        let (b_bind, b_off) = storage_window(core, &mems[1], 4)?;
        let (out_bind, out_off) = storage_window(core, &mems[2], 4)?;
        let params = TwoOperandParams {
            n,
            rank: layout.rank,
            a_off,
            b_off,
            out_off,
            _pad: [0; 3],
            shape: layout.shape,
            a_strides: layout.strides[0],
            b_strides: layout.strides[1],
        };
        dispatch(
            core,
            encoder,
            "complex",
            &pipeline,
            &[a_bind, b_bind, out_bind],
            bytemuck::bytes_of(&params),
            u64::from(n),
        )
    })
}
