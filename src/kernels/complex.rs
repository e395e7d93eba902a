//! Complex numbers (`wgsl/complex.wgsl`): Real, Imag, Conj, Complex and Neg for complex64 and
//! complex128 (word moves), and complex64 Add, Sub, Mul, Div, ComplexAbs and Angle, with
//! broadcasting. complex128 Add, Sub and Mul, and both types' products (MatMul, BatchMatMul), run
//! on their real and imaginary parts through the float64 and float32 kernels.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{PipelineSpec, Shader};
use crate::runtime::Stream;

use super::binary::{broadcast_shapes, launch_two, Units};
use super::index;
use super::{kernel, leak, t_of, DType, KernelContext, KernelDef, KernelInstance, TensorRef};

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
    textures: 0,
};

/// complex64 arithmetic: TF op and `OP` of `complex.wgsl`.
const ARITHMETIC: [(&str, u32); 6] =
    [("AddV2", 10), ("Add", 10), ("Sub", 11), ("Mul", 12), ("Div", 13), ("RealDiv", 13)];

/// The registration rows of the family.
pub fn register(table: &mut Vec<KernelDef>, with_f64: bool) {
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
    // complex128 arithmetic through its float64 parts; its division, ComplexAbs and Angle in float64
    // (all of it needs SHADER_F64).
    if with_f64 {
        for op in ["AddV2", "Add", "Sub", "Mul"] {
            table.push(kernel(op, t_of(C128), &[], &[], arithmetic_in_parts));
        }
        for op in ["Div", "RealDiv"] {
            table.push(kernel(op, t_of(C128), &[], &[], complex128_in_float64));
        }
        let to_f64 = leak(vec![("T", C128), ("Tout", F64)]);
        table.push(kernel("ComplexAbs", to_f64, &[], &[], complex128_in_float64));
        table.push(kernel("Angle", to_f64, &[], &[], complex128_in_float64));
    }
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

/// The real type of a complex one's parts.
pub fn part_of(dtype: DType) -> Option<DType> {
    match dtype {
        DType::C64 => Some(DType::F32),
        DType::C128 => Some(DType::F64),
        _ => None,
    }
}

/// A complex tensor's memory as its parts: the same words, twice as many floats (others as they are).
pub fn as_parts(t: &TensorRef) -> TensorRef {
    match part_of(t.dtype) {
        Some(part) => TensorRef { dtype: part, shape: vec![2 * t.num_elements() as i64], ..t.clone() },
        None => t.clone(),
    }
}

/// `OP` of `complex.wgsl` for Real (a complex number's real part) and for a real number as complex.
pub const REAL: u32 = 0;
pub const CONJ: u32 = 2;
pub const FROM_REAL: u32 = 5;

/// Real and Imag (`OP` of `complex.wgsl`) and Complex, which builds one from its parts.
const IMAG: u32 = 1;
const FROM_PARTS: u32 = 3;

/// `t`'s real and imaginary parts, as two float temporaries of its shape.
fn split_parts(ctx: &mut dyn KernelContext, t: &TensorRef) -> Result<(TensorRef, TensorRef)> {
    let part = part_of(t.dtype).ok_or_else(|| Error::internal(format!("{:?} is not complex", t.dtype)))?;
    let re = ctx.allocate_temp(part, &t.shape)?;
    let im = ctx.allocate_temp(part, &t.shape)?;
    let stream = ctx.stream()?;
    launch(stream, REAL, t, t, &re)?;
    launch(stream, IMAG, t, t, &im)?;
    Ok((re, im))
}

/// `t` (complex) viewed as its parts with a trailing axis of 2: elementwise sums and broadcasts
/// of the view are those of the complex numbers.
pub fn parts_view(t: &TensorRef) -> Option<TensorRef> {
    let part = part_of(t.dtype)?;
    let mut shape = t.shape.clone();
    shape.push(2);
    Some(TensorRef { dtype: part, shape, ..t.clone() })
}

/// complex128 AddV2, Add, Sub (the parts' sums) and Mul ((ar br - ai bi) + i (ar bi + ai br)), with
/// broadcasting, in float64.
pub fn arithmetic_in_parts(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    use super::binary::{launch as float_op, BinaryOp};
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let out = ctx.allocate_output(0, a.dtype, &shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let view = |t: &TensorRef| parts_view(t).ok_or_else(|| Error::internal("complex arithmetic on real operands"));
    if kernel.def.op != "Mul" {
        let op = if kernel.def.op == "Sub" { BinaryOp::Sub } else { BinaryOp::Add };
        return float_op(ctx.stream()?, op, &view(&a)?, &view(&b)?, &view(&out)?);
    }
    mul_in_parts(ctx, &a, &b, &out)
}

/// `out = a * b` (complex, broadcast to `out`'s shape) from four real products of the parts.
fn mul_in_parts(ctx: &mut dyn KernelContext, a: &TensorRef, b: &TensorRef, out: &TensorRef) -> Result<()> {
    use super::binary::{launch as float_op, BinaryOp};
    let (ar, ai) = split_parts(ctx, a)?;
    let (br, bi) = split_parts(ctx, b)?;
    let products = four_temps(ctx, ar.dtype, &out.shape)?;
    let stream = ctx.stream()?;
    let [rr, ii, ri, ir] = &products;
    for (x, y, product) in [(&ar, &br, rr), (&ai, &bi, ii), (&ar, &bi, ri), (&ai, &br, ir)] {
        float_op(stream, BinaryOp::Mul, x, y, product)?;
    }
    combine_products(stream, &products, out)
}

/// `complex.wgsl`'s Mul.
const MUL: u32 = 12;

/// complex Prod of `input` over the axes `mask` marks, into `out`: the reduced axes moved to the
/// front, then halved by elementwise products (row i times row i + half, in place; the odd row of
/// a halving folded into row 0). TF-CPU multiplies in order: the results differ by rounding only.
pub fn prod(ctx: &mut dyn KernelContext, input: &TensorRef, mask: &[bool], out: &TensorRef) -> Result<()> {
    let outputs = out.num_elements();
    if outputs == 0 {
        return Ok(());
    }
    let reduced: u64 = input.shape.iter().zip(mask).filter(|(_, &m)| m).map(|(&d, _)| d as u64).product();
    let elem = input.dtype.size();
    if reduced == 0 {
        // The product of nothing: 1 + 0i.
        let one = match input.dtype {
            DType::C64 => [1f32.to_le_bytes(), 0f32.to_le_bytes()].concat(),
            _ => [1f64.to_le_bytes(), 0f64.to_le_bytes()].concat(),
        };
        return ctx.stream()?.memcpy_htod(out.address, &one.repeat(outputs as usize));
    }
    let rank = input.shape.len();
    let perm: Vec<usize> = (0..rank).filter(|&d| mask[d]).chain((0..rank).filter(|&d| !mask[d])).collect();
    let rows = ctx.allocate_temp(input.dtype, &[reduced as i64, outputs as i64])?;
    let permuted = TensorRef { shape: index::permuted_shape(&input.shape, &perm), ..rows.clone() };
    index::permute_any_size(ctx, input, &permuted, &perm)?;
    let row = |first: u64, count: u64| TensorRef {
        address: rows.address + first * outputs * elem,
        dtype: rows.dtype,
        shape: vec![(count * outputs) as i64],
    };
    let mut n = reduced;
    while n > 1 {
        let half = n / 2;
        multiply(ctx, &row(0, half), &row(half, half), &row(0, half))?;
        if n % 2 == 1 {
            multiply(ctx, &row(0, 1), &row(2 * half, 1), &row(0, 1))?;
        }
        n = half;
    }
    ctx.stream()?.memcpy_dtod(out.address, rows.address, outputs * elem)
}

/// `out = a * b`, complex, of one shape (in place allowed: each element reads only its own).
fn multiply(ctx: &mut dyn KernelContext, a: &TensorRef, b: &TensorRef, out: &TensorRef) -> Result<()> {
    if a.dtype == DType::C64 {
        return launch(ctx.stream()?, MUL, a, b, out);
    }
    mul_in_parts(ctx, a, b, out)
}

fn four_temps(ctx: &mut dyn KernelContext, dtype: DType, shape: &[i64]) -> Result<[TensorRef; 4]> {
    Ok([
        ctx.allocate_temp(dtype, shape)?,
        ctx.allocate_temp(dtype, shape)?,
        ctx.allocate_temp(dtype, shape)?,
        ctx.allocate_temp(dtype, shape)?,
    ])
}

/// `out` = (rr - ii) + i (ri + ir), from the four real products of the parts.
fn combine_products(stream: &Stream, [rr, ii, ri, ir]: &[TensorRef; 4], out: &TensorRef) -> Result<()> {
    use super::binary::{launch as float_op, BinaryOp};
    float_op(stream, BinaryOp::Sub, rr, ii, rr)?;
    float_op(stream, BinaryOp::Add, ri, ir, ri)?;
    launch(stream, FROM_PARTS, rr, ri, out)
}

/// complex128 Div and RealDiv (Eigen's scaled division, as complex64's), with broadcasting, and
/// ComplexAbs and Angle, in float64 (`binary_f64.wgsl`'s `complex_main`).
pub fn complex128_in_float64(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    use super::binary::FLOAT64_SHADER;
    let a = ctx.input(0)?;
    let (b, code, out_dtype) = match kernel.def.op {
        "ComplexAbs" => (a.clone(), 20u32, DType::F64),
        "Angle" => (a.clone(), 21, DType::F64),
        _ => (ctx.input(1)?, 3, DType::C128),
    };
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let out = ctx.allocate_output(0, out_dtype, &shape)?;
    let constants = [("OP", f64::from(code))];
    let spec = PipelineSpec { entry: "complex_main", aliases: &[], constants: &constants };
    let units = Units { input: 16, output: out_dtype.size(), per_thread: 1 };
    launch_two(ctx.stream()?, &FLOAT64_SHADER, spec, &a, &b, &out, units)
}

/// The complex product `out = op(a) x op(b)` (matmul's shapes), from four real products of the
/// parts: op transposes (`transpose_*`) and, with `conjugate_*`, conjugates (BatchMatMul's adj).
pub fn matmul(
    ctx: &mut dyn KernelContext,
    (a, b, out): (&TensorRef, &TensorRef, &TensorRef),
    (transpose_a, transpose_b): (bool, bool),
    (conjugate_a, conjugate_b): (bool, bool),
) -> Result<()> {
    use super::unary::{launch as unary_op, UnaryOp};
    if out.num_elements() == 0 {
        return Ok(());
    }
    let (ar, ai) = split_parts(ctx, a)?;
    let (br, bi) = split_parts(ctx, b)?;
    let products = four_temps(ctx, ar.dtype, &out.shape)?;
    let stream = ctx.stream()?;
    if conjugate_a {
        unary_op(stream, UnaryOp::Neg, 0.0, &ai, &ai)?;
    }
    if conjugate_b {
        unary_op(stream, UnaryOp::Neg, 0.0, &bi, &bi)?;
    }
    let [rr, ii, ri, ir] = &products;
    for (x, y, product) in [(&ar, &br, rr), (&ai, &bi, ii), (&ar, &bi, ri), (&ai, &br, ir)] {
        super::matmul::launch(stream, x, y, product, transpose_a, transpose_b)?;
    }
    combine_products(stream, &products, out)
}

/// Encodes `out = OP(a, b)` with broadcasting (`b` is `a` for one-operand ops).
pub fn launch(stream: &Stream, code: u32, a: &TensorRef, b: &TensorRef, out: &TensorRef) -> Result<()> {
    // Words per real part: the complex operand's half, or the real operand's whole.
    let complex = if matches!(a.dtype, DType::C64 | DType::C128) { a } else { out };
    let constants = [("OP", f64::from(code)), ("PART_WORDS", (complex.dtype.size() / 8) as f64)];
    let spec = PipelineSpec { entry: "main", aliases: &[], constants: &constants };
    launch_two(stream, &SHADER, spec, a, b, out, Units::elements(4))
}
