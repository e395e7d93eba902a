//! Cast between every pair of float, integer and bool dtypes: one step where `wgsl/cast.wgsl` or the
//! integer family (`integer.rs`) converts directly, else a route through float32, int32 or int64
//! that converts as TF-CPU does (`route`).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};
use crate::runtime::Stream;

use super::windows::elementwise_parts;
use super::{complex, integer, shader_len, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "cast",
    source: include_str!("../../wgsl/cast.wgsl"),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    in_off: u32,
    out_off: u32,
    /// to_bf16: truncate instead of rounding (Cast's `Truncate`).
    truncate: u32,
}

/// The `cast.wgsl` entry for a (source, destination) pair, or None when the pair is not supported.
pub fn entry_for(src: DType, dst: DType) -> Option<&'static str> {
    use DType::*;
    let typed = |d: DType| matches!(d, F32 | F16 | F64 | I32 | U32);
    match (src, dst) {
        (F32 | F16 | F64, I32) => Some("to_i32"),
        // TF-CPU rounds float64 to float16 through float32 (Eigen's half from double), twice.
        (F64, F16) => None,
        // Floats to uint32 go through int64 (C++ on x86-64: negative values wrap).
        (F32 | F16 | F64, U32) => None,
        (s, d) if typed(s) && typed(d) && s != d => Some("main"),
        (F32 | F16, Bool) => Some("to_bool"),
        (Bool, F32 | F16 | F64 | I32) => Some("from_bool"),
        (F64, Bool) => Some("f64_to_bool"),
        (F32 | F64, I64) => Some("to_i64"),
        (F32 | F64, U64) => Some("to_u64"),
        (I64, F32 | F64) => Some("from_i64"),
        (U64, F64) => Some("from_u64"),
        (I32, I64) => Some("widen_i32"),
        (I64, I32) => Some("narrow_i64"),
        (BF16, F32) => Some("from_bf16"),
        (F32, BF16) => Some("to_bf16"),
        _ => None,
    }
}

/// The `integer.wgsl` op that converts `src` to `dst` in one step: between integer types and bool,
/// and from them to float32 (rounded once, to nearest even).
fn integer_step(src: DType, dst: DType) -> Option<u32> {
    if !integer::is_integral(src) || src == dst {
        return None;
    }
    match dst {
        DType::Bool => Some(integer::TO_BOOL),
        DType::F32 => Some(integer::TO_F32),
        d if integer::is_integral(d) => Some(integer::CAST),
        _ => None,
    }
}

/// The `complex.wgsl` op of a step between a complex type and its part's: the real part (TF's Cast
/// drops the imaginary one), or the number with a zero imaginary part.
fn complex_step(src: DType, dst: DType) -> Option<u32> {
    if complex::part_of(src) == Some(dst) {
        Some(complex::REAL)
    } else if complex::part_of(dst) == Some(src) {
        Some(complex::FROM_REAL)
    } else {
        None
    }
}

/// complex64 <-> complex128: their parts, cast as a tensor of twice as many floats.
fn is_parts_step(src: DType, dst: DType) -> bool {
    matches!((src, dst), (DType::C64, DType::C128) | (DType::C128, DType::C64))
}

fn is_step(src: DType, dst: DType) -> bool {
    integer_step(src, dst).is_some()
        || complex_step(src, dst).is_some()
        || is_parts_step(src, dst)
        || entry_for(src, dst).is_some()
}

/// The dtypes a Cast passes through, `src` first and `dst` last, one launch per step; None where no
/// route converts as TF-CPU does. float16 and bfloat16 convert through float32 (Eigen's half and
/// bfloat16 convert through float), floats to the narrow integers through int32 and to uint32
/// through int64 (C++'s conversions on x86-64 for in-range values, and the results TF-CPU's scalar
/// code gives out of range), and integers to float64 through int64.
pub fn route(src: DType, dst: DType) -> Option<Vec<DType>> {
    use DType::*;
    if is_step(src, dst) {
        return Some(vec![src, dst]);
    }
    let through = |middle: DType| {
        let mut steps = route(src, middle)?;
        steps.extend(&route(middle, dst)?[1..]);
        Some(steps)
    };
    match (src, dst) {
        (C64 | C128, _) => through(complex::part_of(src)?),
        (_, C64 | C128) => through(complex::part_of(dst)?),
        (F16 | BF16, _) | (_, F16 | BF16) => through(F32),
        (F32 | F64, I8 | U8 | I16 | U16) => through(I32),
        (F32 | F64, U32) => through(I64),
        (s, F64) if integer::is_integral(s) => through(I64),
        _ => None,
    }
}

/// Encodes `out = cast(input)` for a pair `route` converts in one step; same shapes.
pub fn launch(stream: &Stream, input: &TensorRef, out: &TensorRef) -> Result<()> {
    launch_with(stream, input, out, false)
}

/// `launch`, truncating where a float narrows to bfloat16 if `truncate` (TF's `Truncate`).
fn launch_with(stream: &Stream, input: &TensorRef, out: &TensorRef, truncate: bool) -> Result<()> {
    if input.shape != out.shape {
        return Err(Error::invalid_argument("Cast: input and output shapes differ"));
    }
    if let Some(code) = integer_step(input.dtype, out.dtype) {
        return integer::launch(stream, code, input, input, out);
    }
    if let Some(code) = complex_step(input.dtype, out.dtype) {
        return complex::launch(stream, code, input, input, out);
    }
    if is_parts_step(input.dtype, out.dtype) {
        return launch_with(stream, &complex::as_parts(input), &complex::as_parts(out), truncate);
    }
    if let Some(parts) = elementwise_parts(stream.device(), out, &[input])? {
        return parts.iter().try_for_each(|p| launch_with(stream, &p.operands[0], &p.out, truncate));
    }
    let n = shader_len(out.num_elements(), "Cast")?;
    if n == 0 {
        return Ok(());
    }
    let entry = entry_for(input.dtype, out.dtype)
        .ok_or_else(|| Error::unimplemented(format!("Cast {:?} -> {:?} on WGPU", input.dtype, out.dtype)))?;
    // Each view is typed (alias), raw bytes (bool), halves (bfloat16) or raw words (int64);
    // unused aliases are u32.
    let typed =
        |d: DType| if matches!(d, DType::Bool | DType::I64 | DType::U64 | DType::BF16) { "u32" } else { d.wgsl() };
    let unit = |d: DType| match d {
        DType::Bool => 1,
        DType::I64 | DType::U64 => 4,
        other => other.size(),
    };
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    // `W`, the type to_i32 and from_i64 compute in: f64 where a side is float64, else f32.
    let wide = if input.dtype == DType::F64 || out.dtype == DType::F64 { "f64" } else { "f32" };
    let aliases = [("S", typed(input.dtype)), ("D", typed(out.dtype)), ("W", wide)];
    let pipeline = device.pipelines.get(device, &SHADER, &PipelineSpec { entry, aliases: &aliases, constants: &[] })?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, unit(input.dtype))?;
        let (out_bind, out_off) = storage_window(core, &out_mem, unit(out.dtype))?;
        let to_bool = entry == "to_bool" || entry == "f64_to_bool";
        if to_bool && out_off % 4 != 0 {
            return Err(Error::unimplemented("bool output that is not word-aligned"));
        }
        let threads = match entry {
            _ if to_bool => n.div_ceil(4),
            // A word of two halves each, one more where the output starts mid-word.
            "to_bf16" => (n + out_off % 2).div_ceil(2),
            _ => n,
        };
        let params = Params { n, in_off, out_off, truncate: u32::from(truncate) };
        dispatch(core, encoder, "cast", &pipeline, &[in_bind, out_bind], bytemuck::bytes_of(&params), threads as u64)
    })
}
pub fn cast(ctx: &mut dyn KernelContext, def: &KernelInstance) -> Result<()> {
    let (src, dst) = (def.dtype("SrcT")?, def.dtype("DstT")?);
    let input = ctx.input(0)?;
    if input.dtype != src {
        return Err(Error::invalid_argument(format!("Cast: input is {:?}, kernel expects {src:?}", input.dtype)));
    }
    if src == dst {
        // A cast to its own type (tf.linspace makes one) is the input itself.
        let out = ctx.forward_input_or_allocate_output(&[0], 0, dst, &input.shape)?;
        if out.address != input.address && out.byte_len() > 0 {
            ctx.stream()?.memcpy_dtod(out.address, input.address, out.byte_len())?;
        }
        return Ok(());
    }
    let out = ctx.allocate_output(0, dst, &input.shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    // Older TFs' Cast has no Truncate attribute. TF truncates float32 sources only (float16,
    // float64 and integers narrowing to bfloat16 are rounded whatever it says).
    let truncate = def.attrs.bool("Truncate").unwrap_or(false) && src == DType::F32;
    let steps = route(src, dst).ok_or_else(|| Error::internal(format!("Cast {src:?} -> {dst:?}: no route")))?;
    let mut tensors = vec![input.clone()];
    for &middle in &steps[1..steps.len() - 1] {
        tensors.push(ctx.allocate_temp(middle, &input.shape)?);
    }
    tensors.push(out);
    let stream = ctx.stream()?;
    tensors.windows(2).try_for_each(|pair| launch_with(stream, &pair[0], &pair[1], truncate))
}
