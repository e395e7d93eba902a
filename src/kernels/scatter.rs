//! Scatter-adds (`wgsl/scatter.wgsl`), the gradients of gathers: UnsortedSegmentSum, ScatterNd and
//! TensorScatterAdd (float32). Index tuples outside the output are dropped, as TF-GPU drops them
//! (TF-CPU reports them as errors instead; checking would need a readback of the indices).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};
use crate::runtime::Stream;

use super::slice::contiguous_strides;
use super::{shader_len, validate, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader =
    Shader { name: "scatter", source: include_str!("../../wgsl/scatter.wgsl"), storage_buffers: 3, uniform_buffers: 0 };

const MAX_DEPTH: usize = 8;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    row_len: u32,
    depth: u32,
    index_words: u32,
    idx_off: u32,
    upd_off: u32,
    out_off: u32,
    _pad: u32,
    dims: [u32; MAX_DEPTH],
    row_strides: [u32; MAX_DEPTH],
}

/// Adds the `rows` rows of `updates` into `out`, each at the row that its index tuple in `indices`
/// names within the leading output dims `dims`.
pub(super) fn scatter_add(
    stream: &Stream,
    indices: &TensorRef,
    dims: &[i64],
    updates: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let n = shader_len(updates.num_elements(), "scatter")?;
    let rows = indices.num_elements() / dims.len() as u64;
    if n == 0 || rows == 0 || out.num_elements() == 0 {
        return Ok(());
    }
    let mut p: Params = bytemuck::Zeroable::zeroed();
    p.n = n;
    p.row_len = shader_len(updates.num_elements() / rows, "scatter")?;
    p.depth = dims.len() as u32;
    p.index_words = match indices.dtype {
        DType::I32 => 1,
        DType::I64 => 2,
        other => return Err(Error::invalid_argument(format!("indices must be int32 or int64, not {other:?}"))),
    };
    for (k, (&dim, stride)) in dims.iter().zip(contiguous_strides(dims)).enumerate() {
        p.dims[k] = shader_len(dim as u64, "scatter")?;
        p.row_strides[k] = stride as u32;
    }
    let device = stream.device();
    let idx_mem = device.memory.resolve(indices.address, indices.byte_len())?;
    let upd_mem = device.memory.resolve(updates.address, updates.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let pipeline =
        device.pipelines.get(device, &SHADER, &PipelineSpec { entry: "scatter_add", ..Default::default() })?;
    stream.encode(|core, encoder| {
        let (idx_bind, idx_off) = storage_window(core, &idx_mem, 4)?;
        let (upd_bind, upd_off) = storage_window(core, &upd_mem, 4)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, 4)?;
        (p.idx_off, p.upd_off, p.out_off) = (idx_off, upd_off, out_off);
        dispatch(
            core,
            encoder,
            "scatter_add",
            &pipeline,
            &[idx_bind, upd_bind, out_bind],
            bytemuck::bytes_of(&p),
            n as u64,
        )
    })
}

/// UnsortedSegmentSum: `data` rows summed into `num_segments` rows by `segment_ids`.
pub fn unsorted_segment_sum(ctx: &mut dyn KernelContext, _kernel: &KernelInstance) -> Result<()> {
    let data = ctx.input(0)?;
    let ids = ctx.input(1)?;
    let (num_segments, num_segments_shape) = ctx.host_input_values(2)?;
    let segments = validate::scalar(&num_segments, &num_segments_shape, "num_segments")?;
    if segments < 0 {
        return Err(Error::invalid_argument(format!("num_segments must be non-negative, got {segments}")));
    }
    if !data.shape.starts_with(&ids.shape) {
        return Err(Error::invalid_argument(format!(
            "data.shape = {:?} does not start with segment_ids.shape = {:?}",
            data.shape, ids.shape
        )));
    }
    let mut shape = vec![segments];
    shape.extend_from_slice(&data.shape[ids.shape.len()..]);
    let out = ctx.allocate_output(0, data.dtype, &shape)?;
    let stream = ctx.stream()?;
    stream.fill(out.address, out.byte_len(), 0)?;
    // Each id is a depth-1 tuple; with scalar ids the whole of `data` is one row.
    scatter_add(stream, &ids, &[segments], &data, &out)
}

/// Checks ScatterNd-style operands: `indices` [..., K], `updates` = indices[:-1] + shape[K:].
fn check_scatter_nd(indices: &TensorRef, updates: &TensorRef, shape: &[i64]) -> Result<usize> {
    let depth = *indices.shape.last().ok_or_else(|| Error::invalid_argument("indices must be at least 1-D"))?;
    // TF's kernels serve depths 1 to 7 on every device.
    if !(1..MAX_DEPTH as i64).contains(&depth) {
        return Err(Error::invalid_argument(format!(
            "Only indices.shape[-1] values between 1 and 7 are currently supported.  Requested rank: {depth}"
        )));
    }
    let depth = depth as usize;
    if depth > shape.len() {
        return Err(Error::invalid_argument(format!(
            "index depth {depth} is larger than the output rank {}",
            shape.len()
        )));
    }
    let mut want = indices.shape[..indices.shape.len() - 1].to_vec();
    want.extend_from_slice(&shape[depth..]);
    if updates.shape != want {
        return Err(Error::invalid_argument(format!(
            "updates must have shape {want:?} for indices {:?} into {shape:?}, got {:?}",
            indices.shape, updates.shape
        )));
    }
    if validate::num_elements(shape)? == 0 && updates.num_elements() > 0 {
        return Err(Error::invalid_argument("Indices and updates specified for empty output"));
    }
    Ok(depth)
}

/// The `bad_indices_policy` of newer TFs: "" and "DEFAULT" (TF-GPU's answer: drop them) and
/// "IGNORE" run; "ERROR" would need the indices read back before the launch.
fn check_bad_indices_policy(kernel: &KernelInstance) -> Result<()> {
    match kernel.attrs.str("bad_indices_policy").unwrap_or("") {
        "" | "DEFAULT" | "IGNORE" => Ok(()),
        "ERROR" => Err(Error::invalid_argument(
            "bad_indices_policy ERROR is not supported on WGPU: out-of-range indices are dropped, as on TF-GPU",
        )),
        other => Err(Error::invalid_argument(format!("Unknown bad indices handling attribute: {other}"))),
    }
}

/// ScatterNd: zeros of `shape` with `updates` added at `indices`.
pub fn scatter_nd(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    check_bad_indices_policy(kernel)?;
    let indices = ctx.input(0)?;
    let updates = ctx.input(1)?;
    let (shape, shape_shape) = ctx.host_input_values(2)?;
    if shape_shape.len() != 1 {
        return Err(Error::invalid_argument(format!("Shape must be a vector, got shape {shape_shape:?}")));
    }
    validate::num_elements(&shape)?;
    let depth = check_scatter_nd(&indices, &updates, &shape)?;
    let out = ctx.allocate_output(0, updates.dtype, &shape)?;
    let stream = ctx.stream()?;
    stream.fill(out.address, out.byte_len(), 0)?;
    scatter_add(stream, &indices, &shape[..depth], &updates, &out)
}

/// TensorScatterAdd: `tensor` with `updates` added at `indices`.
pub fn tensor_scatter_add(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    check_bad_indices_policy(kernel)?;
    let tensor = ctx.input(0)?;
    let indices = ctx.input(1)?;
    let updates = ctx.input(2)?;
    let depth = check_scatter_nd(&indices, &updates, &tensor.shape)?;
    let out = ctx.allocate_output(0, tensor.dtype, &tensor.shape)?;
    let stream = ctx.stream()?;
    if out.num_elements() > 0 {
        stream.memcpy_dtod(out.address, tensor.address, tensor.byte_len())?;
    }
    scatter_add(stream, &indices, &tensor.shape[..depth], &updates, &out)
}
