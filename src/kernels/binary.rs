//! Elementwise binary ops with broadcasting (`wgsl/binary.wgsl`).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};
use crate::runtime::Stream;

use super::{shader_len, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader =
    Shader { name: "binary", source: include_str!("../../wgsl/binary.wgsl"), storage_buffers: 3 };

/// The ops of `binary.wgsl`, by the value of its `OP` override constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add = 0,
    Mul = 1,
    Sub = 2,
}

const MAX_RANK: usize = 8;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    rank: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    _pad: [u32; 3],
    shape: [u32; MAX_RANK],
    a_strides: [u32; MAX_RANK],
    b_strides: [u32; MAX_RANK],
}

/// NumPy/TF broadcasting of two shapes; `InvalidArgument` when they are incompatible.
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[i64], i: usize| {
        if i + s.len() >= rank {
            s[i + s.len() - rank]
        } else {
            1
        }
    };
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Ok(x),
            (1, y) => Ok(y),
            (x, 1) => Ok(x),
            _ => Err(Error::invalid_argument(format!("Incompatible shapes: {a:?} vs. {b:?}"))),
        })
        .collect()
}

/// Row-major strides of `shape` aligned to `out` (rank-padded), 0 where a dimension is broadcast.
fn broadcast_strides(shape: &[i64], out: &[i64]) -> Vec<u32> {
    let pad = out.len() - shape.len();
    let mut strides = vec![0u32; out.len()];
    let mut step = 1u64;
    for i in (0..shape.len()).rev() {
        strides[pad + i] = if shape[i] == 1 && out[pad + i] != 1 { 0 } else { step as u32 };
        step *= shape[i].max(1) as u64;
    }
    strides
}

/// Encodes `out = op(a, b)` on `stream`. `out` has the broadcast shape of `a` and `b`.
pub fn launch(stream: &Stream, op: BinaryOp, a: &TensorRef, b: &TensorRef, out: &TensorRef) -> Result<()> {
    let n = shader_len(out.num_elements(), "binary op")?;
    if n == 0 {
        return Ok(());
    }
    // Equal shapes index every operand the same way: one flat dimension.
    let (shape, a_strides, b_strides) = if a.shape == b.shape {
        (vec![n as i64], vec![1], vec![1])
    } else {
        (out.shape.clone(), broadcast_strides(&a.shape, &out.shape), broadcast_strides(&b.shape, &out.shape))
    };
    if shape.len() > MAX_RANK {
        return Err(Error::unimplemented(format!("broadcasting beyond rank {MAX_RANK} is not supported")));
    }
    let device = stream.device();
    let memory = &device.memory;
    let (a_mem, b_mem, out_mem) = (
        memory.resolve(a.address, a.byte_len())?,
        memory.resolve(b.address, b.byte_len())?,
        memory.resolve(out.address, out.byte_len())?,
    );
    let dtype = out.dtype;
    let pipeline = device.pipelines.get(
        device,
        &SHADER,
        &PipelineSpec { entry: "main", aliases: &[("T", dtype.wgsl())], constants: &[("OP", op as u32 as f64)] },
    )?;
    stream.encode(|core, encoder| {
        let (a_bind, a_off) = storage_window(core, &a_mem, dtype.size())?;
        let (b_bind, b_off) = storage_window(core, &b_mem, dtype.size())?;
        let (out_bind, out_off) = storage_window(core, &out_mem, dtype.size())?;
        let mut params = Params {
            n,
            rank: shape.len() as u32,
            a_off,
            b_off,
            out_off,
            _pad: [0; 3],
            shape: [1; MAX_RANK],
            a_strides: [0; MAX_RANK],
            b_strides: [0; MAX_RANK],
        };
        for (i, &d) in shape.iter().enumerate() {
            params.shape[i] = d as u32;
            params.a_strides[i] = a_strides[i];
            params.b_strides[i] = b_strides[i];
        }
        dispatch(core, encoder, "binary", &pipeline, &[a_bind, b_bind, out_bind], bytemuck::bytes_of(&params), n as u64)
    })
}

fn compute(ctx: &mut dyn KernelContext, def: &KernelInstance, op: BinaryOp) -> Result<()> {
    let dtype = def.dtype("T")?;
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let out = ctx.forward_input_or_allocate_output(&[0, 1], 0, dtype, &shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    launch(ctx.stream()?, op, &a, &b, &out)
}

pub fn add(ctx: &mut dyn KernelContext, def: &KernelInstance) -> Result<()> {
    compute(ctx, def, BinaryOp::Add)
}

pub fn mul(ctx: &mut dyn KernelContext, def: &KernelInstance) -> Result<()> {
    compute(ctx, def, BinaryOp::Mul)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[4, 1]).unwrap(), vec![2, 4, 3]);
        assert_eq!(broadcast_shapes(&[], &[5]).unwrap(), vec![5]);
        assert_eq!(broadcast_shapes(&[0, 3], &[1, 3]).unwrap(), vec![0, 3]);
        assert_eq!(broadcast_shapes(&[2, 3], &[3, 2]).unwrap_err().code, crate::error::Code::InvalidArgument);
        assert_eq!(broadcast_strides(&[4, 1], &[2, 4, 3]), vec![0, 1, 0]);
    }
}
