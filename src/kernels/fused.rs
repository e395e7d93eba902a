//! The fused ops Grappler's remapper creates for `GPU` devices: `_FusedConv2D` and `_FusedMatMul`,
//! run as the matching sequence of our own launches (conv or matmul, then bias or batch norm, then
//! the activation), all in stream order.

use crate::error::{Error, Result};
use crate::runtime::Stream;

use super::binary::{self, BinaryOp};
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

/// Adds `bias` along the last dimension of `out`, in place.
fn add_bias(stream: &Stream, out: &TensorRef, bias: &TensorRef) -> Result<()> {
    if bias.shape.len() != 1 || Some(&bias.shape[0]) != out.shape.last() {
        return Err(Error::invalid_argument(format!(
            "bias {:?} does not match the output {:?}",
            bias.shape, out.shape
        )));
    }
    binary::launch(stream, BinaryOp::Add, out, bias, out)
}

fn args(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<Vec<TensorRef>> {
    let count = kernel.attrs.int("num_args")? as usize;
    (2..2 + count).map(|i| ctx.input(i)).collect()
}

fn finish(stream: &Stream, out: &TensorRef, rest: &[String], kernel: &KernelInstance) -> Result<()> {
    match rest {
        [] => Ok(()),
        [name] => {
            let op = activation(name)?;
            let alpha = if op == UnaryOp::LeakyRelu { kernel.attrs.float("leakyrelu_alpha")? } else { 0.0 };
            unary::launch(stream, op, alpha, out, out)
        }
        _ => Err(Error::unimplemented(format!("fused ops {rest:?} on WGPU"))),
    }
}

pub fn conv2d(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let filter = ctx.input(1)?;
    let fused_ops = kernel.attrs.strs("fused_ops")?;
    let extra = args(ctx, kernel)?;
    let plan = conv::plan(kernel, &input, &filter, false)?;
    let out = ctx.allocate_output(0, input.dtype, &plan.out_shape)?;
    let stream = ctx.stream()?;
    conv::launch_conv(stream, &plan, &input, &filter, &out)?;
    match (fused_ops.first().map(String::as_str), extra.as_slice()) {
        (Some("BiasAdd"), [bias]) => add_bias(stream, &out, bias)?,
        (Some("FusedBatchNorm"), [scale, offset, mean, variance]) => {
            let epsilon = kernel.attrs.float("epsilon")?;
            conv::launch_batch_norm(stream, &out, scale, offset, mean, variance, epsilon, &out)?
        }
        _ => return Err(Error::unimplemented(format!("_FusedConv2D with fused_ops {fused_ops:?} on WGPU"))),
    }
    finish(stream, &out, &fused_ops[1..], kernel)
}

pub fn matmul(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    let fused_ops = kernel.attrs.strs("fused_ops")?;
    let extra = args(ctx, kernel)?;
    let (ta, tb) = (kernel.attrs.bool("transpose_a")?, kernel.attrs.bool("transpose_b")?);
    let shape = matmul::output_shape(&a.shape, &b.shape, ta, tb)?;
    let out = ctx.allocate_output(0, a.dtype, &shape)?;
    let stream = ctx.stream()?;
    matmul::launch(stream, &a, &b, &out, ta, tb)?;
    match (fused_ops.first().map(String::as_str), extra.as_slice()) {
        (Some("BiasAdd"), [bias]) => add_bias(stream, &out, bias)?,
        _ => return Err(Error::unimplemented(format!("_FusedMatMul with fused_ops {fused_ops:?} on WGPU"))),
    }
    finish(stream, &out, &fused_ops[1..], kernel)
}
