//! Stream compaction (`wgsl/compact.wgsl`): Where, whose output's size depends on the input's
//! values. The nonzero elements are counted per chunk, the counts scanned into offsets, and the
//! coordinates written, all on the device; the host reads back the one total it needs to allocate
//! the output (as TF-GPU does).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{check_loop_iterations, dispatch, storage_window, PipelineSpec, Shader};

use super::windows::binding_limit;
use super::{kernel, shader_len, DType, KernelContext, KernelDef, KernelInstance};

pub const SHADER: Shader = Shader {
    name: "compact",
    source: concat!(include_str!("../../wgsl/compact.wgsl"), include_str!("../../wgsl/chunk_scan.wgsl")),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

/// Elements per workgroup (`CHUNK` in the shader).
const CHUNK: u64 = 1024;
const WORKGROUP: u64 = 256;
const MAX_RANK: usize = 8;

/// The registration rows: TF-GPU's Where types and the other numeric ones TF-CPU serves. int32 is
/// left to TF core's DEVICE_DEFAULT kernel, which runs it in host memory as TF-GPU does.
pub fn register(table: &mut Vec<KernelDef>) {
    for dtype in DType::ALL {
        if dtype != DType::I32 {
            table.push(kernel("Where", super::t_of(dtype), &[], &[], where_op));
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    in_byte: u32,
    elem_bytes: u32,
    mask_even: u32,
    mask_odd: u32,
    chunk_base: u32,
    chunks: u32,
    rank: u32,
    flat_base: u32,
    out_off: u32,
    out_first: u32,
    out_words: u32,
    dims: [u32; 8],
}

/// The bits that make an element of `dtype` nonzero, in its even and odd 32-bit words (for types
/// under a word, in the element): every bit of an integer, a float's exponent (TF-CPU compares
/// float32 and float64 with subnormals as zero; its float16 and bfloat16 comparisons count them).
fn nonzero_masks(dtype: DType) -> (u32, u32) {
    match dtype {
        DType::F16 | DType::BF16 => (0x7fff, 0),
        DType::F32 | DType::C64 => (0x7f80_0000, 0x7f80_0000),
        DType::F64 | DType::C128 => (0, 0x7ff0_0000),
        DType::Bool | DType::I8 | DType::U8 => (0xff, 0),
        DType::I16 | DType::U16 => (0xffff, 0),
        _ => (u32::MAX, u32::MAX),
    }
}

/// Where: the int64 coordinates [count, rank] of the input's nonzero elements, in row-major order.
pub fn where_op(ctx: &mut dyn KernelContext, _kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let rank = input.shape.len();
    if rank == 0 || rank > MAX_RANK {
        return Err(Error::invalid_argument(format!("WhereOp: Unhandled input dimensions: {rank}")));
    }
    let n = u64::from(shader_len(input.num_elements(), "Where")?);
    if n == 0 {
        ctx.allocate_output(0, DType::I64, &[0, rank as i64])?;
        return Ok(());
    }
    let chunks = n.div_ceil(CHUNK);
    let counts = ctx.allocate_temp(DType::U32, &[chunks as i64 + 1])?;
    let stream = ctx.stream()?;
    let device = stream.device();
    check_loop_iterations(device, chunks.div_ceil(WORKGROUP), "Where")?;
    let pipeline = |entry| device.pipelines.get(device, &SHADER, &PipelineSpec { entry, ..Default::default() });
    let (count_chunks, scan_counts, write_coords) =
        (pipeline("count_chunks")?, pipeline("scan_counts")?, pipeline("write_coords")?);
    let elem_bytes = input.dtype.size();
    let mut dims = [0u32; MAX_RANK];
    for (dim, &size) in dims.iter_mut().zip(&input.shape) {
        *dim = size as u32;
    }
    let base = Params {
        elem_bytes: elem_bytes as u32,
        mask_even: nonzero_masks(input.dtype).0,
        mask_odd: nonzero_masks(input.dtype).1,
        chunks: chunks as u32,
        rank: rank as u32,
        dims,
        ..Params::default()
    };
    // The input in parts of whole chunks, each inside one binding.
    let part_elems = (binding_limit(device) / elem_bytes / CHUNK * CHUNK).max(CHUNK);
    let parts: Vec<(u64, u64)> =
        (0..n).step_by(part_elems as usize).map(|start| (start, part_elems.min(n - start))).collect();
    let counts_all = device.memory.resolve(counts.address, counts.byte_len())?;
    for &(start, len) in &parts {
        let part = device.memory.resolve(input.address + start * elem_bytes, len * elem_bytes)?;
        stream.encode(|core, encoder| {
            let (in_bind, in_byte) = storage_window(core, &part, 1)?;
            let (counts_bind, _) = storage_window(core, &counts_all, 4)?;
            let params = Params { n: len as u32, in_byte, chunk_base: (start / CHUNK) as u32, ..base };
            let binds = [in_bind, counts_bind, counts_bind];
            dispatch(
                core,
                encoder,
                "Where count",
                &count_chunks,
                &binds,
                bytemuck::bytes_of(&params),
                len.div_ceil(CHUNK) * WORKGROUP,
            )
        })?;
    }
    let first = device.memory.resolve(input.address, elem_bytes.min(input.byte_len()))?;
    stream.encode(|core, encoder| {
        let (in_bind, _) = storage_window(core, &first, 1)?;
        let (counts_bind, _) = storage_window(core, &counts_all, 4)?;
        let binds = [in_bind, counts_bind, counts_bind];
        dispatch(core, encoder, "Where scan", &scan_counts, &binds, bytemuck::bytes_of(&base), WORKGROUP)
    })?;
    let total = stream.read_now(counts.address + chunks * 4, 4)?;
    let total = u64::from(u32::from_ne_bytes([total[0], total[1], total[2], total[3]]));
    let words = total * rank as u64 * 2;
    if words > u64::from(u32::MAX) {
        return Err(Error::resource_exhausted(format!("Where: {total} coordinates of rank {rank} exceed one kernel")));
    }
    let out = ctx.allocate_output(0, DType::I64, &[total as i64, rank as i64])?;
    if total == 0 {
        return Ok(());
    }
    let stream = ctx.stream()?;
    let device = stream.device();
    // The output in windows of whole int64s, each written by a pass over every input part.
    let window_words = (binding_limit(device) / 8 * 2).max(2);
    let mut out_first = 0;
    while out_first < words {
        let out_words = window_words.min(words - out_first);
        let window = device.memory.resolve(out.address + out_first * 4, out_words * 4)?;
        for &(start, len) in &parts {
            let part = device.memory.resolve(input.address + start * elem_bytes, len * elem_bytes)?;
            stream.encode(|core, encoder| {
                let (in_bind, in_byte) = storage_window(core, &part, 1)?;
                let (counts_bind, _) = storage_window(core, &counts_all, 4)?;
                let (out_bind, out_off) = storage_window(core, &window, 4)?;
                let params = Params {
                    n: len as u32,
                    in_byte,
                    chunk_base: (start / CHUNK) as u32,
                    flat_base: start as u32,
                    out_off,
                    out_first: out_first as u32,
                    out_words: out_words as u32,
                    ..base
                };
                let binds = [in_bind, counts_bind, out_bind];
                let invocations = len.div_ceil(CHUNK) * WORKGROUP;
                dispatch(core, encoder, "Where write", &write_coords, &binds, bytemuck::bytes_of(&params), invocations)
            })?;
        }
        out_first += out_words;
    }
    Ok(())
}
