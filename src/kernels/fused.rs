//! The fused ops Grappler's remapper creates for `GPU` devices: `_FusedConv2D` and `_FusedMatMul`,
//! run as the matching sequence of our own launches (conv or matmul, then bias or batch norm, then
//! the activation), all in stream order.

use crate::error::{Error, Result};
use crate::runtime::Stream;

use super::binary::{self, BinaryOp};
use super::channel_blocks::{self, BlockArgs, BlockOutput, NO_BLOCKS};
use super::unary::{self, UnaryOp};
use super::{conv, matmul, KernelContext, KernelInstance, TensorRef};

fn activation(name: &str) -> Result<UnaryOp> {
    Ok(match name {
        "Relu" => UnaryOp::Relu,
        "Relu6" => UnaryOp::Relu6,
        "Elu" => UnaryOp::Elu,
        "LeakyRelu" => UnaryOp::LeakyRelu,
        "Tanh" => UnaryOp::Tanh,
        "Sigmoid" => UnaryOp::Sigmoid,
        "GeluExact" => UnaryOp::GeluExact,
        "GeluApproximate" => UnaryOp::GeluApproximate,
        other => return Err(Error::unimplemented(format!("fused activation {other} on WGPU"))),
    })
}

fn args(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<Vec<TensorRef>> {
    let count = kernel.attrs.int("num_args")?;
    if count < 0 || count as usize + 2 > ctx.num_inputs() {
        return Err(Error::invalid_argument(format!("num_args {count} does not match the node's inputs")));
    }
    (2..2 + count as usize).map(|i| ctx.input(i)).collect()
}

/// The fused steps after the product, checked before anything is allocated: a bias (or batch
/// normalisation, `batch_norm`) over the `channels` of the last dimension, then at most one
/// activation.
struct Fused<'a> {
    extra: &'a [TensorRef],
    activation: Option<(UnaryOp, f32)>,
}

fn check_fused<'a>(
    kernel: &KernelInstance,
    fused_ops: &[String],
    extra: &'a [TensorRef],
    channels: i64,
    batch_norm: bool,
) -> Result<Fused<'a>> {
    let op = kernel.def.op;
    let (first, rest) =
        fused_ops.split_first().ok_or_else(|| Error::invalid_argument(format!("{op}: no fused_ops")))?;
    let arity = match first.as_str() {
        "BiasAdd" => 1,
        "FusedBatchNorm" if batch_norm => 4,
        _ => return Err(Error::unimplemented(format!("{op} with fused_ops {fused_ops:?} on WGPU"))),
    };
    if extra.len() != arity {
        return Err(Error::invalid_argument(format!("{op}: {first} takes {arity} arguments, got {}", extra.len())));
    }
    if let Some(t) = extra.iter().find(|t| t.shape != [channels]) {
        return Err(Error::invalid_argument(format!(
            "{op}: {first} arguments must have shape [{channels}], got {:?}",
            t.shape
        )));
    }
    let activation = match rest {
        [] => None,
        [name] => {
            let op = activation(name)?;
            let alpha = if op == UnaryOp::LeakyRelu { kernel.attrs.float("leakyrelu_alpha")? } else { 0.0 };
            Some((op, alpha))
        }
        _ => return Err(Error::unimplemented(format!("fused ops {rest:?} on WGPU"))),
    };
    Ok(Fused { extra, activation })
}

impl Fused<'_> {
    fn apply(&self, stream: &Stream, kernel: &KernelInstance, out: &TensorRef) -> Result<()> {
        match self.extra {
            [bias] => binary::launch(stream, BinaryOp::Add, out, bias, out)?,
            [scale, offset, mean, variance] => {
                let epsilon = kernel.attrs.float("epsilon")?;
                conv::launch_batch_norm(stream, out, scale, offset, mean, variance, epsilon, out)?
            }
            _ => return Err(Error::internal("fused arguments were not checked")),
        }
        match self.activation {
            Some((op, alpha)) => unary::launch(stream, op, alpha, out, out),
            None => Ok(()),
        }
    }
}

pub fn conv2d(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if conv::channels_first(kernel)? {
        return super::layout::channels_last(ctx, kernel, &conv::IMAGE_IN_OUT, conv2d);
    }
    let in_batches = |ctx: &mut dyn KernelContext, kernel: &KernelInstance| {
        super::batch::split_batch_on_overflow(ctx, kernel, &conv::BATCHED_IMAGE, conv2d_whole)
    };
    let Some(failed) = super::layout::try_binding(ctx, kernel, &in_batches)? else { return Ok(()) };
    // One window's input past a binding (millions of channels): the convolution on blocks of
    // input channels, then the fused steps on the whole sum.
    let convolve = |ctx: &mut dyn KernelContext, kernel: &KernelInstance| {
        super::batch::split_batch_on_overflow(ctx, kernel, &conv::BATCHED_IMAGE, conv::conv_whole)
    };
    let blocks = BlockArgs { images: &[0], filters: &[1], output: BlockOutput::Summed, ..NO_BLOCKS };
    let allocated = channel_blocks::in_channel_blocks(ctx, kernel, &blocks, &convolve, failed)?;
    let out = allocated.into_iter().find(|(i, _)| *i == 0).map(|(_, t)| t);
    let out = out.ok_or_else(|| Error::internal("a blocked convolution without its output"))?;
    let fused_ops = kernel.attrs.strs("fused_ops")?;
    let extra = args(ctx, kernel)?;
    let fused = check_fused(kernel, &fused_ops, &extra, out.shape[3], true)?;
    fused.apply(ctx.stream()?, kernel, &out)
}

fn conv2d_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let filter = ctx.input(1)?;
    let fused_ops = kernel.attrs.strs("fused_ops")?;
    let extra = args(ctx, kernel)?;
    let plan = conv::plan(kernel, &input, &filter, false)?;
    let fused = check_fused(kernel, &fused_ops, &extra, plan.out_shape[3], true)?;
    let out = ctx.allocate_output(0, input.dtype, &plan.out_shape)?;
    conv::convolve(ctx, &plan, &input, &filter, &out)?;
    fused.apply(ctx.stream()?, kernel, &out)
}

pub fn matmul(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    let fused_ops = kernel.attrs.strs("fused_ops")?;
    let extra = args(ctx, kernel)?;
    let (ta, tb) = (kernel.attrs.bool("transpose_a")?, kernel.attrs.bool("transpose_b")?);
    if a.shape.len() != 2 || b.shape.len() != 2 {
        return Err(Error::invalid_argument(format!(
            "_FusedMatMul takes matrices, got shapes {:?} and {:?}",
            a.shape, b.shape
        )));
    }
    let shape = matmul::output_shape(&a.shape, &b.shape, ta, tb)?;
    let fused = check_fused(kernel, &fused_ops, &extra, shape[1], false)?;
    let out = ctx.allocate_output(0, a.dtype, &shape)?;
    matmul::product(ctx, &a, &b, &out, ta, tb)?;
    fused.apply(ctx.stream()?, kernel, &out)
}
