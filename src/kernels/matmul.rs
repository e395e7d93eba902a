//! MatMul, BatchMatMulV2/V3 (`wgsl/matmul.wgsl`) and Einsum built on them.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch_workgroups, storage_window, PipelineSpec, Shader};
use crate::runtime::Stream;

use super::binary::broadcast_shapes;
use super::slice::contiguous_strides;
use super::{KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader =
    Shader { name: "matmul", source: include_str!("../../wgsl/matmul.wgsl"), storage_buffers: 3 };

const MAX_BATCH_RANK: usize = 4;
/// The block of C each workgroup computes (`wgsl/matmul.wgsl`: 16 invocations of ROWS x COLS).
const COLUMNS_PER_GROUP: u32 = 16 * 16;
const ROWS_PER_GROUP: u32 = 16;
/// The block of C a workgroup of the `small` variant computes (8 x 8 invocations of 4 x 4).
const SMALL_BLOCK: u32 = 32;

/// Whether the `small` variant fits the output better: below a full 16 x 256 block, most of the
/// register-blocked kernel's invocations would compute clamped, discarded columns.
fn small_output(m: u32, n: u32) -> bool {
    n < COLUMNS_PER_GROUP || m < ROWS_PER_GROUP
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    n: u32,
    k: u32,
    batch_rank: u32,
    a_off: u32,
    b_off: u32,
    c_off: u32,
    _pad: u32,
    a_rs: u32,
    a_cs: u32,
    b_rs: u32,
    b_cs: u32,
    batch_shape: [u32; 4],
    a_batch_stride: [u32; 4],
    b_batch_stride: [u32; 4],
}

/// `out[..., M, N] = op(a)[..., M, K] x op(b)[..., K, N]`, op = transpose where asked, with the
/// batch dimensions broadcast. Returns the output shape for `a` and `b` shapes.
pub fn output_shape(a: &[i64], b: &[i64], transpose_a: bool, transpose_b: bool) -> Result<Vec<i64>> {
    if a.len() < 2 || b.len() < 2 {
        return Err(Error::invalid_argument(format!("In[0] and In[1] must be at least rank 2: {a:?}, {b:?}")));
    }
    let (ar, br) = (a.len(), b.len());
    let (m, ka) = if transpose_a { (a[ar - 1], a[ar - 2]) } else { (a[ar - 2], a[ar - 1]) };
    let (kb, n) = if transpose_b { (b[br - 1], b[br - 2]) } else { (b[br - 2], b[br - 1]) };
    if ka != kb {
        return Err(Error::invalid_argument(format!(
            "Matrix size-incompatible: In[0]: {a:?}, In[1]: {b:?} (contracting dimensions {ka} vs {kb})"
        )));
    }
    let mut shape = broadcast_shapes(&a[..ar - 2], &b[..br - 2])?;
    shape.extend([m, n]);
    Ok(shape)
}

/// Encodes the batched product into `out` (contiguous, shape from `output_shape`).
pub fn launch(
    stream: &Stream,
    a: &TensorRef,
    b: &TensorRef,
    out: &TensorRef,
    transpose_a: bool,
    transpose_b: bool,
) -> Result<()> {
    let shape = output_shape(&a.shape, &b.shape, transpose_a, transpose_b)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let rank = shape.len();
    let (m, n) = (shape[rank - 2], shape[rank - 1]);
    let k = if transpose_a { a.shape[a.shape.len() - 2] } else { a.shape[a.shape.len() - 1] };
    if k == 0 {
        return stream.fill(out.address, out.byte_len(), 0);
    }
    let batch: Vec<i64> = shape[..rank - 2].iter().copied().filter(|&d| d != 1).collect();
    // Batch strides of an operand along the output batch dims (0 where it broadcasts).
    let batch_strides = |t: &TensorRef| -> Vec<i64> {
        let strides = contiguous_strides(&t.shape);
        let t_batch = &t.shape[..t.shape.len() - 2];
        let pad = (rank - 2) - t_batch.len();
        (0..rank - 2)
            .filter(|&d| shape[d] != 1)
            .map(|d| if d < pad || t_batch[d - pad] == 1 { 0 } else { strides[d - pad] })
            .collect()
    };
    if batch.len() > MAX_BATCH_RANK {
        return Err(Error::unimplemented(format!("matmul with more than {MAX_BATCH_RANK} broadcast batch dims")));
    }
    let batch_count: i64 = batch.iter().product();
    let mut p: Params = bytemuck::Zeroable::zeroed();
    p.m = m as u32;
    p.n = n as u32;
    p.k = k as u32;
    p.batch_rank = batch.len() as u32;
    let (a_cols, b_cols) = (a.shape[a.shape.len() - 1] as u32, b.shape[b.shape.len() - 1] as u32);
    (p.a_rs, p.a_cs) = if transpose_a { (1, a_cols) } else { (a_cols, 1) };
    (p.b_rs, p.b_cs) = if transpose_b { (1, b_cols) } else { (b_cols, 1) };
    for (d, ((&size, sa), sb)) in batch.iter().zip(batch_strides(a)).zip(batch_strides(b)).enumerate() {
        p.batch_shape[d] = size as u32;
        p.a_batch_stride[d] = sa as u32;
        p.b_batch_stride[d] = sb as u32;
    }
    let device = stream.device();
    let mems = [a, b, out].map(|t| device.memory.resolve(t.address, t.byte_len()));
    let [a_mem, b_mem, c_mem] = mems;
    let (a_mem, b_mem, c_mem) = (a_mem?, b_mem?, c_mem?);
    let aliases = [("T", out.dtype.wgsl())];
    let (m, n) = (m as u32, n as u32);
    let (entry, groups) = if small_output(m, n) {
        ("small", [n.div_ceil(SMALL_BLOCK), m.div_ceil(SMALL_BLOCK), batch_count as u32])
    } else {
        ("main", [n.div_ceil(COLUMNS_PER_GROUP), m.div_ceil(ROWS_PER_GROUP), batch_count as u32])
    };
    let pipeline = device.pipelines.get(device, &SHADER, &PipelineSpec { entry, aliases: &aliases, constants: &[] })?;
    let size = out.dtype.size();
    stream.encode(|core, encoder| {
        let (a_bind, a_off) = storage_window(core, &a_mem, size)?;
        let (b_bind, b_off) = storage_window(core, &b_mem, size)?;
        let (c_bind, c_off) = storage_window(core, &c_mem, size)?;
        (p.a_off, p.b_off, p.c_off) = (a_off, b_off, c_off);
        dispatch_workgroups(
            core,
            encoder,
            "matmul",
            &pipeline,
            &[a_bind, b_bind, c_bind],
            bytemuck::bytes_of(&p),
            groups,
        )
    })
}

/// MatMul (transpose_a/transpose_b) and BatchMatMulV2/V3 (adj_x/adj_y).
pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    let (ta, tb) = if kernel.def.op == "MatMul" {
        (kernel.attrs.bool("transpose_a")?, kernel.attrs.bool("transpose_b")?)
    } else {
        (kernel.attrs.bool("adj_x")?, kernel.attrs.bool("adj_y")?)
    };
    if kernel.def.op == "MatMul" && (a.shape.len() != 2 || b.shape.len() != 2) {
        return Err(Error::invalid_argument(format!("In[0] and In[1] must be matrices: {:?}, {:?}", a.shape, b.shape)));
    }
    let shape = output_shape(&a.shape, &b.shape, ta, tb)?;
    let out = ctx.allocate_output(0, a.dtype, &shape)?;
    launch(ctx.stream()?, &a, &b, &out, ta, tb)
}
