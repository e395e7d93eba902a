//! Matrix structure ops over the innermost two dimensions (`wgsl/matrix.wgsl`): MatrixBandPart,
//! which Keras's causal attention masks and `tf.linalg.band_part` call, for every dtype TF places on
//! the device (elements moved as raw bits).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};

use super::validate::{self, shape_string};
use super::windows::elementwise_parts;
use super::{shader_len, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader =
    Shader { name: "matrix", source: include_str!("../../wgsl/matrix.wgsl"), storage_buffers: 2, uniform_buffers: 0 };

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    unit: u32,
    parts: u32,
    rows: u32,
    cols: u32,
    lower: i32,
    upper: i32,
    in_off: u32,
    out_off: u32,
    base: u32,
    _pad: [u32; 2],
}

/// A band limit: a host-memory scalar, negative for "all", at most the matrix's `extent`.
fn band_limit(ctx: &mut dyn KernelContext, index: usize, what: &str, extent: i64, noun: &str) -> Result<i64> {
    let (values, shape) = ctx.host_input_values(index)?;
    if !shape.is_empty() {
        return Err(Error::invalid_argument(format!("{what} must be scalar, got shape {}", shape_string(&shape))));
    }
    let limit = validate::scalar(&values, &shape, what)?;
    if limit > extent {
        return Err(Error::invalid_argument(format!(
            "{what} must be negative or less or equal to number of {noun} ({extent}) got: {limit}"
        )));
    }
    Ok(limit)
}

/// MatrixBandPart(input, num_lower, num_upper): the input with the elements outside the band
/// zeroed.
pub fn band_part(ctx: &mut dyn KernelContext, _kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let rank = input.shape.len();
    if rank < 2 {
        return Err(Error::invalid_argument(format!(
            "input must be at least 2-dim, received shape: {}",
            shape_string(&input.shape)
        )));
    }
    let (rows, cols) = (input.shape[rank - 2], input.shape[rank - 1]);
    let lower = band_limit(ctx, 1, "num_lower", rows, "rows")?;
    let upper = band_limit(ctx, 2, "num_upper", cols, "columns")?;
    let out = ctx.allocate_output(0, input.dtype, &input.shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    shader_len((rows * cols) as u64, "MatrixBandPart")?;
    // TF's functor takes the limits as int: int64 ones wrap to their low 32 bits (i64::MIN is 0).
    let clamp = |limit: i64| (limit as i32).max(-1);
    let p = Params {
        rows: shader_len(rows as u64, "MatrixBandPart")?,
        cols: shader_len(cols as u64, "MatrixBandPart")?,
        lower: clamp(lower),
        upper: clamp(upper),
        ..Params::default()
    };
    launch(ctx, p, &input, &out)
}

fn launch(ctx: &mut dyn KernelContext, mut p: Params, input: &TensorRef, out: &TensorRef) -> Result<()> {
    let stream = ctx.stream()?;
    // Past a binding: windows of the flat tensor, each told where in its matrix it starts.
    if let Some(parts) = elementwise_parts(stream.device(), out, &[input])? {
        let (size, matrix) = (out.dtype.size(), u64::from(p.rows) * u64::from(p.cols));
        return parts.iter().try_for_each(|part| {
            let first = (part.out.address - out.address) / size;
            launch(ctx, Params { base: (first % matrix) as u32, ..p }, &part.operands[0], &part.out)
        });
    }
    let size = input.dtype.size();
    let (entry, unit) = if size >= 4 { ("band_words", 4) } else { ("band_parts", size) };
    let elements = input.num_elements();
    p.n = shader_len(if size >= 4 { elements * size / 4 } else { elements }, "MatrixBandPart")?;
    p.unit = (size / 4).max(1) as u32;
    p.parts = (4 / size.min(4)) as u32;
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let pipeline = device.pipelines.get(device, &SHADER, &PipelineSpec { entry, aliases: &[], constants: &[] })?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, unit)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, unit)?;
        (p.in_off, p.out_off) = (in_off, out_off);
        let invocations = if entry == "band_parts" {
            (u64::from(p.n) + u64::from(out_off % p.parts)).div_ceil(u64::from(p.parts))
        } else {
            u64::from(p.n)
        };
        dispatch(
            core,
            encoder,
            "matrix_band_part",
            &pipeline,
            &[in_bind, out_bind],
            bytemuck::bytes_of(&p),
            invocations,
        )
    })
}
