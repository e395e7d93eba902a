//! Cast between 32-bit dtypes (`wgsl/cast.wgsl`).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};
use crate::runtime::Stream;

use super::{shader_len, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader { name: "cast", source: include_str!("../../wgsl/cast.wgsl"), storage_buffers: 2 };

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    in_off: u32,
    out_off: u32,
    _pad: u32,
}

/// Encodes `out = cast(input)`; both tensors have the same shape.
pub fn launch(stream: &Stream, input: &TensorRef, out: &TensorRef) -> Result<()> {
    if input.shape != out.shape {
        return Err(Error::invalid_argument("Cast: input and output shapes differ"));
    }
    let n = shader_len(out.num_elements(), "Cast")?;
    if n == 0 {
        return Ok(());
    }
    let device = stream.device();
    let in_mem = device.memory.resolve(input.address, input.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let pipeline = device.pipelines.get(
        device,
        &SHADER,
        &PipelineSpec { entry: "main", aliases: &[("S", input.dtype.wgsl()), ("D", out.dtype.wgsl())], constants: &[] },
    )?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, input.dtype.size())?;
        let (out_bind, out_off) = storage_window(core, &out_mem, out.dtype.size())?;
        let params = Params { n, in_off, out_off, _pad: 0 };
        dispatch(core, encoder, "cast", &pipeline, &[in_bind, out_bind], bytemuck::bytes_of(&params), n as u64)
    })
}

pub fn cast(ctx: &mut dyn KernelContext, def: &KernelInstance) -> Result<()> {
    let (src, dst) = (def.dtype("SrcT")?, def.dtype("DstT")?);
    let input = ctx.input(0)?;
    if input.dtype != src {
        return Err(Error::invalid_argument(format!("Cast: input is {:?}, kernel expects {src:?}", input.dtype)));
    }
    let out = ctx.allocate_output(0, dst, &input.shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    launch(ctx.stream()?, &input, &out)
}
