//! Integer elementwise ops on every integer width TF stores, int8 to uint64 (`wgsl/integer.wgsl`):
//! arithmetic, bitwise ops, comparisons and unary ops with broadcasting, and the integer and bool
//! steps of Cast. int32 is registered only where TF core has no DEVICE_DEFAULT kernel, which keeps
//! int32 tensors in host memory as TF-GPU does (the bitwise ops, TruncateDiv, Pow, ArgMax/ArgMin).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{PipelineSpec, Shader};
use crate::runtime::Stream;

use super::binary::{broadcast_shapes, launch_two, Units};
use super::{kernel, leak, t_of, AttrKind, DType, KernelContext, KernelDef, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "integer",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/int64.wgsl"),
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/broadcast.wgsl"),
        include_str!("../../wgsl/integer.wgsl")
    ),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

/// `OP` of `integer.wgsl` for AddV2 and Sub.
pub const ADD: u32 = 0;
pub const SUB: u32 = 1;
/// `OP` of `integer.wgsl` for Mul, TruncateDiv (and Div: toward zero), Maximum and Minimum.
pub const MUL: u32 = 2;
pub const TRUNCATE_DIV: u32 = 3;
pub const MAXIMUM: u32 = 7;
pub const MINIMUM: u32 = 8;
/// `OP` of `integer.wgsl` for Equal.
pub const EQUAL: u32 = 30;
/// `OP` of `integer.wgsl` for ZerosLike and OnesLike.
pub const ZEROS: u32 = 26;
pub const ONES: u32 = 27;
/// `OP` of `integer.wgsl` for a cast between integer types (bool included) and for one into bool.
pub const CAST: u32 = 28;
pub const TO_BOOL: u32 = 29;
/// `OP` of `integer.wgsl`: the nearest float32, ties to even (as C++ converts).
pub const TO_F32: u32 = 36;

use DType::{Bool, I16, I64, I8, U16, U32, U64, U8};

/// The integer dtypes TF-GPU serves on the device.
const ALL: &[DType] = &[I8, U8, I16, U16, U32, I64, U64];
const SIGNED: &[DType] = &[I8, I16, I64];
/// The ops TF-GPU also serves for int32 in device memory (the bitwise family, TruncateDiv), which
/// TF core's DEVICE_DEFAULT kernels leave out.
const WITH_I32: &[DType] = &[I8, U8, I16, U16, DType::I32, U32, I64, U64];

/// Two-operand ops: TF op, `OP`, and the integer dtypes its op definition allows (TF-CPU has kernels
/// for each, the reference of the tests).
pub const BINARY_OPS: [(&str, u32, &[DType]); 24] = [
    ("Add", 0, &[I8, U8, I16, I64]),
    ("AddV2", 0, ALL),
    ("Sub", 1, ALL),
    ("Mul", MUL, ALL),
    ("Div", TRUNCATE_DIV, ALL),
    ("TruncateDiv", TRUNCATE_DIV, WITH_I32),
    ("FloorDiv", 4, ALL),
    ("TruncateMod", 5, &[I64]),
    ("FloorMod", 6, ALL),
    ("Maximum", MAXIMUM, ALL),
    ("Minimum", MINIMUM, ALL),
    ("SquaredDifference", 9, &[I64]),
    ("Pow", 10, &[I8, I16, DType::I32, I64]),
    ("BitwiseAnd", 11, WITH_I32),
    ("BitwiseOr", 12, WITH_I32),
    ("BitwiseXor", 13, WITH_I32),
    ("LeftShift", 14, WITH_I32),
    ("RightShift", 15, WITH_I32),
    ("Equal", 30, &[I8, U8, I16, U16, U32, I64, U64, Bool]),
    ("NotEqual", 31, &[I8, U8, I16, U16, U32, I64, U64, Bool]),
    ("Less", 32, ALL),
    ("LessEqual", 33, ALL),
    ("Greater", 34, ALL),
    ("GreaterEqual", 35, ALL),
];

/// One-operand ops, as `BINARY_OPS`.
pub const UNARY_OPS: [(&str, u32, &[DType]); 8] = [
    ("Abs", 20, SIGNED),
    ("Neg", 21, SIGNED),
    ("Sign", 22, SIGNED),
    ("Square", 23, ALL),
    ("Invert", 24, WITH_I32),
    ("PopulationCount", 25, WITH_I32),
    ("ZerosLike", 26, &[I8, U8, I16, U16, DType::I32, U32, I64, U64, Bool]),
    ("OnesLike", 27, &[I8, U8, I16, U16, DType::I32, U32, I64, U64, Bool]),
];

/// Equal's and NotEqual's attribute.
pub const EQUALITY_ATTRS: &[(&str, AttrKind)] = &[("incompatible_shape_error", AttrKind::Bool)];

/// The attributes an elementwise comparison reads.
pub fn compare_attrs(op: &str) -> &'static [(&'static str, AttrKind)] {
    if op == "Equal" || op == "NotEqual" {
        EQUALITY_ATTRS
    } else {
        &[]
    }
}

/// The registration rows of the family, and of the integer reductions (`reduce.rs`).
pub fn register(table: &mut Vec<KernelDef>) {
    for (op, _, dtypes) in BINARY_OPS.iter().chain(UNARY_OPS.iter()) {
        for &dtype in *dtypes {
            table.push(kernel(op, t_of(dtype), &[], compare_attrs(op), compute));
        }
    }
    let keep_dims: &[(&str, AttrKind)] = &[("keep_dims", AttrKind::Bool)];
    for (op, _) in super::reduce::FLOAT_REDUCTIONS {
        for &dtype in ALL {
            table.push(kernel(op, t_of(dtype), &["reduction_indices"], keep_dims, super::reduce::compute_integer));
        }
    }
    // (TF core has no int32 or bool ArgMax, so those run here too.)
    for op in ["ArgMax", "ArgMin"] {
        for &dtype in ALL.iter().chain(&[DType::I32, Bool]) {
            for out in [DType::I64, DType::I32] {
                let constraints = leak(vec![("T", dtype), ("output_type", out)]);
                table.push(kernel(op, constraints, &["dimension"], &[], super::reduce::compute_integer_arg));
            }
        }
    }
    // int32 Sum, Prod and Mean in host memory, as TF-GPU runs them (TF core registers Max and Min).
    for op in ["Sum", "Prod", "Mean"] {
        let host: &[&str] = &["input", "reduction_indices", "output"];
        table.push(kernel(op, t_of(DType::I32), host, keep_dims, super::reduce::compute_int32_on_host));
    }
}

/// Equal and NotEqual with `incompatible_shape_error=false` on shapes that do not broadcast: a
/// scalar false (Equal) or true (NotEqual), as TF's kernels answer. Returns whether it answered.
pub fn answer_incompatible_equality(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    a: &TensorRef,
    b: &TensorRef,
) -> Result<bool> {
    let op = kernel.def.op;
    let lenient = (op == "Equal" || op == "NotEqual")
        && !kernel.attrs.bool("incompatible_shape_error").unwrap_or(true)
        && broadcast_shapes(&a.shape, &b.shape).is_err();
    if !lenient {
        return Ok(false);
    }
    let out = ctx.allocate_output(0, Bool, &[])?;
    let code = if op == "Equal" { ZEROS } else { ONES };
    launch(ctx.stream()?, code, &out, &out, &out)?;
    Ok(true)
}

/// Whether `dtype` is stored as an integer this family reads (bool as an unsigned byte).
pub fn is_integral(dtype: DType) -> bool {
    matches!(dtype, I8 | U8 | I16 | U16 | DType::I32 | U32 | I64 | U64 | Bool)
}

fn op_code(op: &str) -> Result<(u32, bool)> {
    if let Some((_, code, _)) = BINARY_OPS.iter().find(|(name, _, _)| *name == op) {
        return Ok((*code, false));
    }
    UNARY_OPS
        .iter()
        .find(|(name, _, _)| *name == op)
        .map(|(_, code, _)| (*code, true))
        .ok_or_else(|| Error::internal(format!("integer: unknown op {op}")))
}

/// The dtype of `OP`'s result for operands of `dtype`.
fn result_dtype(code: u32, dtype: DType) -> DType {
    match code {
        25 => U8,
        30..=35 => Bool,
        _ => dtype,
    }
}

pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let (code, unary) = op_code(kernel.def.op)?;
    let dtype = kernel.dtype("T")?;
    let a = ctx.input(0)?;
    let (b, shape, candidates): (TensorRef, Vec<i64>, &[usize]) = if unary {
        (a.clone(), a.shape.clone(), &[0])
    } else {
        let b = ctx.input(1)?;
        if answer_incompatible_equality(ctx, kernel, &a, &b)? {
            return Ok(());
        }
        let shape = broadcast_shapes(&a.shape, &b.shape)?;
        (b, shape, &[0, 1])
    };
    let out_dtype = result_dtype(code, dtype);
    let out = if out_dtype == dtype {
        ctx.forward_input_or_allocate_output(candidates, 0, out_dtype, &shape)?
    } else {
        ctx.allocate_output(0, out_dtype, &shape)?
    };
    launch(ctx.stream()?, code, &a, &b, &out)
}

/// Encodes `out = OP(a, b)` with broadcasting; `a` and `b` share a dtype (for one-operand ops and
/// casts `b` is `a`), `out` has its own. `out` may alias an operand of its shape.
pub fn launch(stream: &Stream, code: u32, a: &TensorRef, b: &TensorRef, out: &TensorRef) -> Result<()> {
    let signed = matches!(a.dtype, I8 | I16 | DType::I32 | I64);
    let out_width = out.dtype.size();
    let constants = [
        ("OP", f64::from(code)),
        ("WIDTH", a.dtype.size() as f64),
        ("SIGNED", f64::from(u8::from(signed))),
        ("OUT_WIDTH", out_width as f64),
    ];
    let spec = PipelineSpec { entry: "main", aliases: &[], constants: &constants };
    // Offsets in bytes; narrow outputs a word of elements per invocation.
    let units = Units { input: 1, output: 1, per_thread: (4 / out_width).max(1) };
    launch_two(stream, &SHADER, spec, a, b, out, units)
}
