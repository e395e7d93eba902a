//! Neural-network ops: Softmax and LogSoftmax (`wgsl/softmax.wgsl`).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch_workgroups, grid, storage_window, PipelineSpec, Shader};

use super::{shader_len, KernelContext, KernelInstance};

pub const SOFTMAX_SHADER: Shader =
    Shader { name: "softmax", source: include_str!("../../wgsl/softmax.wgsl"), storage_buffers: 2 };

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SoftmaxParams {
    rows: u32,
    cols: u32,
    in_off: u32,
    out_off: u32,
}

pub fn softmax(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let logits = ctx.input(0)?;
    if logits.shape.is_empty() {
        return Err(Error::invalid_argument("logits must have >= 1 dimension, got []"));
    }
    let out = ctx.forward_input_or_allocate_output(&[0], 0, dtype, &logits.shape)?;
    let cols = *logits.shape.last().unwrap_or(&1);
    let total = logits.num_elements();
    if total == 0 {
        return Ok(());
    }
    let rows = shader_len(total / cols as u64, kernel.def.op)?;
    let stream = ctx.stream()?;
    let device = stream.device();
    let in_mem = device.memory.resolve(logits.address, logits.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let op = u32::from(kernel.def.op == "LogSoftmax");
    let pipeline = device.pipelines.get(
        device,
        &SOFTMAX_SHADER,
        &PipelineSpec { entry: "main", aliases: &[], constants: &[("OP", op as f64)] },
    )?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, 4)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, 4)?;
        let params = SoftmaxParams { rows, cols: cols as u32, in_off, out_off };
        let groups = grid(core, rows as u64, "softmax")?;
        dispatch_workgroups(
            core,
            encoder,
            "softmax",
            &pipeline,
            &[in_bind, out_bind],
            bytemuck::bytes_of(&params),
            groups,
        )
    })
}
