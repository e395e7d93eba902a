//! Index-generating copies (`wgsl/index.wgsl`): Transpose, Tile, Pad, PadV2, MirrorPad, ReverseV2,
//! BroadcastTo, Fill, ConcatV2, Pack, Unpack, GatherV2, OneHot, Range. Any dtype: elements are moved
//! as whole words, or byte by byte for 1- and 2-byte dtypes.

use crate::error::{Error, Result};
use crate::runtime::device::KernelProfile;
use crate::runtime::memory::DeviceSlice;
use crate::runtime::pipeline::{
    aligned_vec4_window, dispatch, dispatch_with_texels, storage_window, Binding, PipelineSpec, Shader,
};
use crate::runtime::scratch::{texels_pay_off, TEXELS_A};
use crate::runtime::Stream;

use super::batch::{self, BatchArgs};
use super::slice::{contiguous_strides, StridedView};
use super::windows::binding_limit;
use super::{fast_div, rank_constant, shader_len, validate, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "index",
    source: concat!(include_str!("../../wgsl/quot.wgsl"), include_str!("../../wgsl/index.wgsl")),
    storage_buffers: 4,
    uniform_buffers: 0,
    textures: 0,
};

/// `index.wgsl`'s `repeat_row_texels`: its texture binds after the parameter block.
pub const TEXELS_SHADER: Shader = Shader { name: "index texels", textures: 1, ..SHADER };

const MAX_RANK: usize = 8;

/// How one output dimension reads its input dimension (`mode` constants of `index.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimMode {
    Direct = 0,
    Modulo = 1,
    ConstantPad = 2,
    Reflect = 3,
    Symmetric = 4,
    Reverse = 5,
}

/// One output dimension: its size, the input dimension it reads (size, element stride) and how.
#[derive(Clone, Copy, Debug)]
pub struct DimMap {
    pub out: i64,
    pub in_dim: i64,
    pub in_stride: i64,
    /// Subtracted from the output coordinate (pad before; 0 otherwise).
    pub offset: i64,
    pub mode: DimMode,
}

impl DimMap {
    /// An output dimension of `out` reading the input dimension of the same size, `in_stride` apart.
    pub fn direct(out: i64, in_stride: i64) -> DimMap {
        DimMap { out, in_dim: out, in_stride, offset: 0, mode: DimMode::Direct }
    }

    /// A dim of `out` positions that all read the input's one position (a broadcast).
    pub fn spread(out: i64) -> DimMap {
        DimMap { out, in_dim: 1, in_stride: 0, offset: 0, mode: DimMode::Direct }
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    rank: u32,
    unit: u32,
    src_off: u32,
    dst_off: u32,
    aux_off: u32,
    a: u32,
    b: u32,
    out_shape: [u32; MAX_RANK],
    in_dim: [u32; MAX_RANK],
    in_stride: [u32; MAX_RANK],
    offset: [i32; MAX_RANK],
    mode: [u32; MAX_RANK],
}

impl Params {
    fn zeroed() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

/// Whole-word elements use the `_words` entries, others the `_bytes` ones; returns (unit, bytes?).
fn element_unit(dtype: DType) -> (u32, bool) {
    let size = dtype.size();
    if size.is_multiple_of(4) {
        ((size / 4) as u32, false)
    } else {
        (size as u32, true)
    }
}

struct Launch<'a> {
    stream: &'a Stream,
    entry: &'static str,
    params: Params,
    /// Tensors bound as src, dst, aux, aux2 (None: a small zeroed stand-in).
    tensors: [Option<&'a TensorRef>; 4],
    /// Binding unit (bytes) of each tensor.
    units: [u64; 4],
    threads: u64,
    /// Override constants of the entry (`map_*`: `RANK`, `FAST_DIV`).
    constants: Vec<(&'static str, f64)>,
}

impl Launch<'_> {
    fn run(mut self) -> Result<()> {
        if self.threads == 0 {
            return Ok(());
        }
        let device = self.stream.device();
        let mems: Vec<Option<DeviceSlice>> = self
            .tensors
            .iter()
            .map(|t| t.map(|t| device.memory.resolve(t.address, t.byte_len().max(1))).transpose())
            .collect::<Result<_>>()?;
        let zeros = device.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("index fill zeros"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let pipeline = device.pipelines.get(
            device,
            &SHADER,
            &PipelineSpec { entry: self.entry, aliases: &[], constants: &self.constants },
        )?;
        self.stream.encode(|core, encoder| {
            let mut bindings: Vec<Binding> = Vec::with_capacity(4);
            let mut offsets = [0u32; 4];
            for (k, mem) in mems.iter().enumerate() {
                match mem {
                    Some(mem) => {
                        let (binding, off) = storage_window(core, mem, self.units[k])?;
                        bindings.push(binding);
                        offsets[k] = off;
                    }
                    None => bindings.push(Binding { buffer: &zeros, offset: 0, size: 16 }),
                }
            }
            self.params.src_off = offsets[0];
            self.params.dst_off = offsets[1];
            self.params.aux_off = offsets[2];
            if self.entry == "one_hot" {
                self.params.b = offsets[3];
            }
            dispatch(core, encoder, self.entry, &pipeline, &bindings, bytemuck::bytes_of(&self.params), self.threads)
        })
    }
}

/// Writes `out` (contiguous) from `input` through per-dimension index maps; padding reads `fill`
/// (element 0), or zeros when `fill` is None.
pub fn map(
    stream: &Stream,
    input: &TensorRef,
    out: &TensorRef,
    dims: &[DimMap],
    fill: Option<&TensorRef>,
) -> Result<()> {
    if out.num_elements() == 0 {
        return Ok(());
    }
    let dims = &simplified(dims);
    if dims.len() > MAX_RANK {
        return map_by_rows(stream, input, out, dims, fill);
    }
    let limit = binding_limit(stream.device());
    if input.byte_len() > limit || out.byte_len() > limit {
        let whole = MapPart { input: input.clone(), out: out.clone(), dims: dims.to_vec() };
        // Each part launches as it is found: however many there are, none is held for long.
        return split_map(limit, whole, 0, &mut |p| map_launch(stream, &p.input, &p.out, &p.dims, fill));
    }
    map_launch(stream, input, out, dims, fill)
}

/// `map` past the shader's rank: one map per index of the outermost dimensions beyond it (each of
/// one rank less).
fn map_by_rows(
    stream: &Stream,
    input: &TensorRef,
    out: &TensorRef,
    dims: &[DimMap],
    fill: Option<&TensorRef>,
) -> Result<()> {
    let size = input.dtype.size();
    let dim = dims[0];
    let out_row = out.num_elements() / dim.out.max(1) as u64;
    let inner_extent: i64 = dims[1..].iter().map(|e| (e.in_dim - 1).max(0) * e.in_stride).sum();
    for row in 0..dim.out {
        let sub_out = row_range(out, row as u64 * out_row * size, out_row as i64);
        match source_index(&dim, row) {
            // A padding row reads nothing of the input: one 1-D fill (a padding dimension of
            // size 1 would not merge away, and the row's map would come back here as wide).
            None => {
                let fill_row = DimMap {
                    out: out_row as i64,
                    in_dim: 1,
                    in_stride: 0,
                    offset: out_row as i64,
                    mode: DimMode::ConstantPad,
                };
                map(stream, &row_range(input, 0, 1), &sub_out, &[fill_row], fill)?;
            }
            Some(i) => {
                let mut sub_dims = dims.to_vec();
                sub_dims[0] = DimMap { out: 1, in_dim: 1, in_stride: 0, offset: 0, mode: DimMode::Direct };
                map(stream, &row_window(input, &dim, inner_extent, i), &sub_out, &sub_dims, fill)?;
            }
        }
    }
    Ok(())
}

/// The input elements that index `i` of `dim` reads: at most `inner_extent + 1` from its start.
fn row_window(input: &TensorRef, dim: &DimMap, inner_extent: i64, i: i64) -> TensorRef {
    let size = input.dtype.size();
    let skip = (i * dim.in_stride) as u64 * size;
    let rest = (input.byte_len().saturating_sub(skip) / size).min(inner_extent as u64 + 1);
    row_range(input, skip, rest as i64)
}

/// `dims` without the dimensions that index nothing (one output element read from index 0) and
/// with neighbours that read the input as one dimension merged: TF's ops take any rank, the
/// shader eight.
fn simplified(dims: &[DimMap]) -> Vec<DimMap> {
    let mut out: Vec<DimMap> = Vec::with_capacity(dims.len());
    for d in dims {
        if d.out == 1 && source_index(d, 0) == Some(0) {
            continue;
        }
        let plain = |d: &DimMap| d.mode == DimMode::Direct && d.offset == 0 && d.out == d.in_dim;
        match out.last_mut() {
            Some(outer) if plain(outer) && plain(d) && outer.in_stride == d.in_stride * d.in_dim => {
                *outer =
                    DimMap { out: outer.out * d.out, in_dim: outer.in_dim * d.in_dim, in_stride: d.in_stride, ..*d };
            }
            _ => out.push(*d),
        }
    }
    if out.is_empty() {
        out.push(DimMap { out: 1, in_dim: 1, in_stride: 0, offset: 0, mode: DimMode::Direct });
    }
    out
}

/// Most parts a permutation's index map splits into (each a dispatch) before `permute_any_size`
/// takes windows of a transpose instead.
const MAX_MAP_PARTS: usize = 4096;

/// A part of an index map over tensors larger than a storage binding: the output rows it writes
/// and the input window it reads, with `dims` rebased to them.
struct MapPart {
    input: TensorRef,
    out: TensorRef,
    dims: Vec<DimMap>,
}

/// Splits `part` along dimension `d` (the dimensions before it already narrowed to one index)
/// into parts whose tensors fit `limit` bytes: ranges of output rows where that keeps the input
/// window small enough, else one row at a time, splitting the next dimension. Each part goes to
/// `emit` as it is found.
fn split_map(limit: u64, part: MapPart, d: usize, emit: &mut dyn FnMut(MapPart) -> Result<()>) -> Result<()> {
    let fits = |t: &TensorRef| t.byte_len() <= limit;
    if fits(&part.input) && fits(&part.out) {
        return emit(part);
    }
    if d >= part.dims.len() {
        // Unreachable: one index of every dimension is one element in and out.
        return Err(Error::internal(format!("index map of {:?}: a part past the binding", part.out.shape)));
    }
    let size = part.input.dtype.size();
    let dim = part.dims[d];
    let out_row_bytes = part.out.byte_len() / dim.out.max(1) as u64;
    // The input rows this dimension reads can be windowed when the dimensions inside it read
    // within one of its rows (not a transpose) and it reads rows in order.
    let inner_extent: i64 = part.dims[d + 1..].iter().map(|e| (e.in_dim - 1).max(0) * e.in_stride).sum();
    let rows_in_order = dim.in_stride > 0 && inner_extent < dim.in_stride;
    // A modulo dimension (Roll, Tile) whose input is past the binding: parts that stop where the
    // rotation wraps, each a direct read of an input window.
    let modulo_window = dim.mode == DimMode::Modulo && !fits(&part.input) && rows_in_order && dim.in_dim > 0;
    let windowable = (matches!(dim.mode, DimMode::Direct | DimMode::ConstantPad | DimMode::Reverse) && rows_in_order)
        || modulo_window;
    if matches!(dim.mode, DimMode::Reflect | DimMode::Symmetric) && !fits(&part.input) && rows_in_order {
        return split_mirrored(limit, part, d, emit);
    }
    let mut per_part = (limit / out_row_bytes.max(1)) as i64;
    if !fits(&part.input) {
        per_part = if windowable { per_part.min((limit / (dim.in_stride as u64 * size)) as i64) } else { 0 };
    }
    if dim.mode == DimMode::Modulo && dim.in_dim > 1 && !modulo_window && per_part >= dim.in_dim {
        // Tiles: parts start on whole repeats of the input dimension.
        per_part -= per_part % dim.in_dim;
    }
    if per_part >= 1 && dim.out > 1 {
        let mut start = 0;
        while start < dim.out {
            let mut count = per_part.min(dim.out - start);
            let dim = if modulo_window {
                let first = (start - dim.offset).rem_euclid(dim.in_dim);
                count = count.min(dim.in_dim - first);
                DimMap { mode: DimMode::Direct, offset: start - first, ..dim }
            } else {
                dim
            };
            let mut sub = MapPart {
                input: part.input.clone(),
                out: row_range(&part.out, start as u64 * out_row_bytes, count * (out_row_bytes / size) as i64),
                dims: part.dims.clone(),
            };
            sub.dims[d].out = count;
            match dim.mode {
                // Output row s + o reads input row n - 1 - s - o: a reversal of the first n - s rows.
                DimMode::Reverse => sub.dims[d].in_dim = dim.in_dim - start,
                // The rotation from the part's first row, kept within (-n, 0].
                DimMode::Modulo => sub.dims[d].offset = -(start - dim.offset).rem_euclid(dim.in_dim.max(1)),
                _ => sub.dims[d].offset = dim.offset - start,
            }
            if !fits(&part.input) && dim.mode == DimMode::Reverse {
                // ... and, windowed, of input rows [n - s - count, n - s).
                let lo = dim.in_dim - start - count;
                let reach = (count - 1) * dim.in_stride + inner_extent + 1;
                sub.input = row_range(&part.input, (lo * dim.in_stride) as u64 * size, reach);
                sub.dims[d].in_dim = count;
            } else if !fits(&part.input) {
                // Input rows [lo, hi) hold every row the part reads (clipped: the rest is padding).
                let lo = (start - dim.offset).clamp(0, dim.in_dim);
                let hi = (start + count - dim.offset).clamp(lo, dim.in_dim);
                let reach = if hi > lo { (hi - lo - 1) * dim.in_stride + inner_extent + 1 } else { 0 };
                sub.input = row_range(&part.input, (lo * dim.in_stride) as u64 * size, reach);
                sub.dims[d].in_dim = hi - lo;
                sub.dims[d].offset = dim.offset - start + lo;
            }
            emit(sub)?;
            start += count;
        }
        return Ok(());
    }
    for row in 0..dim.out {
        let mut sub = MapPart {
            input: part.input.clone(),
            out: row_range(&part.out, row as u64 * out_row_bytes, (out_row_bytes / size) as i64),
            dims: part.dims.clone(),
        };
        sub.dims[d] = match source_index(&dim, row) {
            // A padding row: one index that reads outside its dimension (and nothing of the input).
            None => {
                sub.input = row_range(&part.input, 0, 1);
                DimMap { out: 1, in_dim: 1, in_stride: 0, offset: 1, mode: DimMode::ConstantPad }
            }
            Some(i) => {
                sub.input = row_window(&part.input, &dim, inner_extent, i);
                DimMap { out: 1, in_dim: 1, in_stride: 0, offset: 0, mode: DimMode::Direct }
            }
        };
        split_map(limit, sub, d + 1, emit)?;
    }
    Ok(())
}

/// `split_map` of a mirror-padded dimension `d` (MirrorPad's REFLECT or SYMMETRIC) over an input
/// past the binding: the output rows before the input's, its own and those after each read the
/// input's rows in one order (reversed, direct, reversed), so each range is split as a `Reverse`
/// or `Direct` dimension of its own.
fn split_mirrored(limit: u64, part: MapPart, d: usize, emit: &mut dyn FnMut(MapPart) -> Result<()>) -> Result<()> {
    let dim = part.dims[d];
    let (n, offset) = (dim.in_dim, dim.offset);
    // SYMMETRIC repeats the edge row; REFLECT does not.
    let edge = i64::from(dim.mode == DimMode::Symmetric);
    let out_row = part.out.num_elements() as i64 / dim.out.max(1);
    let size = part.out.dtype.size();
    let ranges = [(0, offset), (offset, offset + n), (offset + n, dim.out)];
    for (k, (first, end)) in ranges.into_iter().enumerate() {
        let (first, end) = (first.clamp(0, dim.out), end.clamp(0, dim.out));
        if first >= end {
            continue;
        }
        // Output row first + o reads input row `in_dim - 1 - o` (Reverse) or `o - offset` (Direct).
        let (mode, in_dim, range_offset) = match k {
            0 => (DimMode::Reverse, offset - first - edge + 1, 0),
            1 => (DimMode::Direct, n, offset - first),
            _ => (DimMode::Reverse, 2 * n - 1 + edge - (first - offset), 0),
        };
        let mut sub = MapPart {
            input: part.input.clone(),
            out: row_range(&part.out, (first * out_row) as u64 * size, (end - first) * out_row),
            dims: part.dims.clone(),
        };
        sub.dims[d] = DimMap { out: end - first, in_dim, offset: range_offset, mode, ..dim };
        split_map(limit, sub, d, emit)?;
    }
    Ok(())
}

fn too_many_parts(limit: u64, part: &MapPart) -> Error {
    Error::unimplemented(format!(
        "index map of {:?} from {} bytes: its parts within the {limit}-byte storage binding would number more \
         than {MAX_MAP_PARTS}",
        part.out.shape,
        part.input.byte_len()
    ))
}

/// The input index output coordinate `o` of `dim` reads (as `map_step` in index.wgsl), None
/// where it is padding.
fn source_index(dim: &DimMap, o: i64) -> Option<i64> {
    let n = dim.in_dim;
    let i = o - dim.offset;
    let i = match dim.mode {
        DimMode::Direct => i,
        DimMode::Modulo => i % n.max(1),
        DimMode::ConstantPad => return (0..n).contains(&i).then_some(i),
        DimMode::Reflect => {
            let i = i.abs();
            if i >= n {
                2 * n - 2 - i
            } else {
                i
            }
        }
        DimMode::Symmetric => {
            let i = if i < 0 { -i - 1 } else { i };
            if i >= n {
                2 * n - 1 - i
            } else {
                i
            }
        }
        DimMode::Reverse => n - 1 - o,
    };
    Some(i)
}

/// `count` elements of `t` from byte `skip`, as a 1-D tensor.
fn row_range(t: &TensorRef, skip: u64, count: i64) -> TensorRef {
    TensorRef { address: t.address + skip, dtype: t.dtype, shape: vec![count] }
}

/// The row `dims` repeat, in elements, where the map is one: leading dimensions that read index 0
/// of the input, then dimensions that read it whole and in order (Tile and BroadcastTo of a bias).
fn repeated_row(dims: &[DimMap]) -> Option<i64> {
    let first_whole = dims.iter().position(|d| d.in_dim != 1)?;
    // Modulo dimensions of one element read it everywhere (Tile), Direct ones of stride 0 too
    // (BroadcastTo).
    let reads_first = |d: &DimMap| match d.mode {
        DimMode::Modulo => true,
        DimMode::Direct => d.offset == 0 && (d.in_stride == 0 || d.out == 1),
        _ => false,
    };
    let leading_read_zero = dims[..first_whole].iter().all(reads_first);
    let mut row = 1;
    for d in dims[first_whole..].iter().rev() {
        let whole = matches!(d.mode, DimMode::Direct | DimMode::Modulo) && d.offset == 0 && d.out == d.in_dim;
        if !whole || d.in_stride != row {
            return None;
        }
        row *= d.in_dim;
    }
    (leading_read_zero && first_whole > 0).then_some(row)
}

/// `out` (contiguous) as `input`'s `row_bytes` repeated, by vec4s: false, encoding nothing, where
/// rows or offsets are not whole vec4s.
fn repeat_row(stream: &Stream, input: &TensorRef, out: &TensorRef, row_bytes: u64) -> Result<bool> {
    let device = stream.device();
    let out_bytes = out.byte_len();
    // Word views of the tensors: 1- and 2-byte dtypes may start between words (the map's bytes
    // entry serves those).
    let on_words = input.address.is_multiple_of(4) && out.address.is_multiple_of(4);
    if !on_words || row_bytes == 0 || !row_bytes.is_multiple_of(16) || !out_bytes.is_multiple_of(16) {
        return Ok(false);
    }
    let (Ok(out_vec4s), Ok(row_vec4s)) = (u32::try_from(out_bytes / 16), u32::try_from(row_bytes / 16)) else {
        return Ok(false);
    };
    let src = device.memory.resolve(input.address, row_bytes)?;
    let dst = device.memory.resolve(out.address, out_bytes)?;
    let texels = device.kernel_profile() == KernelProfile::Cpu && texels_pay_off(u64::from(out_vec4s), row_bytes / 16);
    let constants = [fast_div(out_vec4s)];
    let spec = |entry| PipelineSpec { entry, aliases: &[], constants: &constants };
    let vec4_pipeline = device.pipelines.get(device, &SHADER, &spec("repeat_row_vec4"))?;
    let texel_pipeline = if texels {
        device.pipelines.get(device, &TEXELS_SHADER, &spec("repeat_row_texels"))?
    } else {
        vec4_pipeline.clone()
    };
    stream.encode(|core, encoder| {
        let (Some((src_binding, src_first)), Some((dst_binding, dst_first))) =
            (aligned_vec4_window(core, &src, 4)?, aligned_vec4_window(core, &dst, 4)?)
        else {
            return Ok(false);
        };
        let (src_off, dst_off) = (src_first / 4, dst_first / 4);
        let start = src_binding.offset + u64::from(src_off) * 16;
        // A texture copy starts on a texel.
        let texels = texels && start.is_multiple_of(16);
        let pipeline = if texels { &texel_pipeline } else { &vec4_pipeline };
        let params = Params { n: out_vec4s, src_off, dst_off, a: row_vec4s, ..Params::zeroed() };
        let bindings = [src_binding, dst_binding, src_binding, src_binding];
        let params = bytemuck::bytes_of(&params);
        let invocations = u64::from(out_vec4s);
        if texels {
            let view = core.scratch.texels(core, encoder, TEXELS_A, src_binding.buffer, start, row_bytes / 16)?;
            dispatch_with_texels(
                core,
                encoder,
                "repeat_row_texels",
                pipeline,
                &bindings,
                &[&view],
                params,
                invocations,
            )?;
        } else {
            dispatch(core, encoder, "repeat_row_vec4", pipeline, &bindings, params, invocations)?;
        }
        Ok(true)
    })
}

/// `map` of tensors that fit a storage binding.
fn map_launch(
    stream: &Stream,
    input: &TensorRef,
    out: &TensorRef,
    dims: &[DimMap],
    fill: Option<&TensorRef>,
) -> Result<()> {
    let count = shader_len(out.num_elements(), "index map")?;
    if count == 0 {
        return Ok(());
    }
    if fill.is_none() {
        if let Some(row) = repeated_row(dims) {
            if repeat_row(stream, input, out, row as u64 * out.dtype.size())? {
                return Ok(());
            }
        }
    }
    let (unit, bytes) = element_unit(out.dtype);
    let mut params = Params::zeroed();
    params.rank = dims.len() as u32;
    params.unit = unit;
    params.n = count * unit;
    // Dimensions past the rank (the pipeline handles a rank bucket): size 1, read directly.
    params.out_shape = [1; MAX_RANK];
    params.in_dim = [1; MAX_RANK];
    for (k, d) in dims.iter().enumerate() {
        params.out_shape[k] = d.out as u32;
        params.in_dim[k] = d.in_dim as u32;
        params.in_stride[k] = d.in_stride as u32;
        params.offset[k] = d.offset as i32;
        params.mode[k] = d.mode as u32;
    }
    let unit_bytes = if bytes { 1 } else { 4 };
    let threads = if bytes { (params.n as u64).div_ceil(4) + 1 } else { params.n as u64 };
    let input = (input.num_elements() > 0).then_some(input);
    Launch {
        stream,
        entry: if bytes { "map_bytes" } else { "map_words" },
        params,
        tensors: [input, Some(out), fill, None],
        units: [unit_bytes; 4],
        threads,
        constants: vec![rank_constant(dims.len() as u32), fast_div(count), ("MODES", f64::from(modes_constant(dims)))],
    }
    .run()
}

/// `index.wgsl`'s `MODES`: each dimension's mode in 3 bits, dimension k at bits 3k..3k + 2.
fn modes_constant(dims: &[DimMap]) -> u32 {
    dims.iter().enumerate().fold(0, |modes, (k, d)| modes | (d.mode as u32) << (3 * k))
}

/// Copies contiguous `input` (`rows` rows of `row` elements) into `out` at element `at`, with rows
/// `pitch` elements apart: one input of a ConcatV2 or Pack.
fn copy_rows(
    stream: &Stream,
    input: &TensorRef,
    out: &TensorRef,
    at: i64,
    rows: i64,
    row: i64,
    pitch: i64,
) -> Result<()> {
    if rows == 0 || row == 0 {
        return Ok(());
    }
    let size = out.dtype.size() as i64;
    let limit = binding_limit(stream.device()) as i64 / size;
    let region = (rows - 1) * pitch + row;
    if rows * row <= limit && region <= limit {
        return copy_rows_within(stream, input, out, at, rows, row, pitch);
    }
    // Too big for one binding: ranges of rows whose input and output windows fit, or pieces of
    // one row at a time.
    let per_part = if row > limit { 0 } else { ((limit - row) / pitch.max(1) + 1).min(limit / row) };
    if per_part >= 1 {
        let mut start = 0;
        while start < rows {
            let count = per_part.min(rows - start);
            let part = row_range(input, (start * row * size) as u64, count * row);
            copy_rows_within(stream, &part, out, at + start * pitch, count, row, pitch)?;
            start += count;
        }
        return Ok(());
    }
    let piece = limit - limit % 4;
    for r in 0..rows {
        let mut j = 0;
        while j < row {
            let width = piece.min(row - j);
            let part = row_range(input, ((r * row + j) * size) as u64, width);
            copy_rows_within(stream, &part, out, at + r * pitch + j, 1, width, width)?;
            j += width;
        }
    }
    Ok(())
}

/// `copy_rows` of an input and output region that fit a storage binding.
fn copy_rows_within(
    stream: &Stream,
    input: &TensorRef,
    out: &TensorRef,
    at: i64,
    rows: i64,
    row: i64,
    pitch: i64,
) -> Result<()> {
    let (unit, bytes) = element_unit(out.dtype);
    let mut params = Params::zeroed();
    params.a = rows as u32;
    params.b = (row * unit as i64) as u32;
    params.rank = (pitch * unit as i64) as u32;
    let region = TensorRef {
        address: out.address + (at * out.dtype.size() as i64) as u64,
        dtype: out.dtype,
        shape: vec![(rows - 1) * pitch + row],
    };
    let (entry, threads) = if bytes {
        params.n = ((rows - 1) * pitch + row) as u32 * unit;
        ("rows_bytes", (params.n as u64).div_ceil(4) + 1)
    } else {
        params.n = (rows * row) as u32 * unit;
        ("rows_words", params.n as u64)
    };
    let unit_bytes = if bytes { 1 } else { 4 };
    let tensors = [Some(input), Some(&region), None, None];
    Launch { stream, entry, params, tensors, units: [unit_bytes; 4], threads, constants: Vec::new() }.run()
}

pub fn direct_dims(shape: &[i64]) -> Vec<DimMap> {
    let strides = contiguous_strides(shape);
    shape
        .iter()
        .zip(strides)
        .map(|(&d, s)| DimMap { out: d, in_dim: d, in_stride: s, offset: 0, mode: DimMode::Direct })
        .collect()
}

/// Transpose, and ConjugateTranspose (complex numbers conjugated in the output).
pub fn transpose(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let input = ctx.input(0)?;
    let (perm, perm_shape) = ctx.host_input_values(1)?;
    if perm_shape.len() != 1 {
        return Err(Error::invalid_argument(format!("perm must be rank 1, got shape {perm_shape:?}")));
    }
    let rank = input.shape.len();
    let mut seen = vec![false; rank];
    if perm.len() != rank
        || perm.iter().any(|&p| p < 0 || p as usize >= rank || std::mem::replace(&mut seen[p as usize], true))
    {
        return Err(Error::invalid_argument(format!("transpose expects a permutation of 0..{rank}, got {perm:?}")));
    }
    let perm: Vec<usize> = perm.iter().map(|&p| p as usize).collect();
    let out = ctx.allocate_output(0, dtype, &permuted_shape(&input.shape, &perm))?;
    permute_any_size(ctx, &input, &out, &perm)?;
    if kernel.def.op == "ConjugateTranspose" && matches!(dtype, DType::C64 | DType::C128) && out.num_elements() > 0 {
        super::complex::launch(ctx.stream()?, super::complex::CONJ, &out, &out, &out)?;
    }
    Ok(())
}

/// `shape` with its dimensions in the order `perm` names them.
pub fn permuted_shape(shape: &[i64], perm: &[usize]) -> Vec<i64> {
    perm.iter().map(|&p| shape[p]).collect()
}

/// The index map of `input` transposed by `perm`.
fn permutation_dims(input: &TensorRef, perm: &[usize]) -> Vec<DimMap> {
    let strides = contiguous_strides(&input.shape);
    perm.iter()
        .map(|&p| {
            let d = input.shape[p];
            DimMap { out: d, in_dim: d, in_stride: strides[p], offset: 0, mode: DimMode::Direct }
        })
        .collect()
}

/// `permute` of tensors of any size: where the index map's parts would be too many (a transpose
/// that moves both the outermost and the innermost dimension of a tensor past the binding, such
/// as a big matrix's), windows of the input's outermost dimension, each transposed into a
/// temporary and copied into its pitched rows of `out` (`permute_in_windows`).
pub fn permute_any_size(ctx: &mut dyn KernelContext, input: &TensorRef, out: &TensorRef, perm: &[usize]) -> Result<()> {
    map_permutation(ctx, input, out, &permutation_dims(input, perm), 0, &mut Vec::new())
}

/// `map` of a permutation (`dims` read every element of dense `input` once, `Direct`), falling
/// back to `permute_in_windows` where the parts of `split_map` would be too many.
/// `temps` holds `permute_in_windows`'s temporaries by nesting `depth`, reused across windows.
fn map_permutation(
    ctx: &mut dyn KernelContext,
    input: &TensorRef,
    out: &TensorRef,
    dims: &[DimMap],
    depth: usize,
    temps: &mut Vec<TensorRef>,
) -> Result<()> {
    if out.num_elements() == 0 {
        return Ok(());
    }
    let dims = simplified(dims);
    let stream = ctx.stream()?;
    let limit = binding_limit(stream.device());
    if dims.len() > MAX_RANK || (input.byte_len() <= limit && out.byte_len() <= limit) {
        return map(stream, input, out, &dims, None);
    }
    let mut parts = Vec::new();
    let whole = MapPart { input: input.clone(), out: out.clone(), dims: dims.clone() };
    let mut collect = |part: MapPart| {
        if parts.len() >= MAX_MAP_PARTS {
            return Err(too_many_parts(limit, &part));
        }
        parts.push(part);
        Ok(())
    };
    if split_map(limit, whole, 0, &mut collect).is_ok() {
        return parts.iter().try_for_each(|p| map_launch(stream, &p.input, &p.out, &p.dims, None));
    }
    permute_in_windows(ctx, input, out, &dims, depth, temps)
}

/// A permutation of a tensor past the binding in windows of the input's outermost dimension (the
/// map dimension of the largest input stride): each window transposed into a temporary (of at
/// most a binding, or one index of that dimension, itself permuted in windows), then copied into
/// `out`, where it is `outer` rows of `count * inner` elements, `out[p] * inner` apart.
fn permute_in_windows(
    ctx: &mut dyn KernelContext,
    input: &TensorRef,
    out: &TensorRef,
    dims: &[DimMap],
    depth: usize,
    temps: &mut Vec<TensorRef>,
) -> Result<()> {
    let size = input.dtype.size();
    let limit = binding_limit(ctx.stream()?.device()) / size;
    let p = (0..dims.len()).max_by_key(|&k| dims[k].in_stride).unwrap_or(0);
    let (n, slice) = (dims[p].in_dim, dims[p].in_stride.max(1));
    let outer: i64 = dims[..p].iter().map(|d| d.out).product();
    let inner: i64 = dims[p + 1..].iter().map(|d| d.out).product();
    let per_window = (limit as i64 / slice).clamp(1, n.max(1));
    // One temporary per nesting depth, taken by the windows in turn (launches run in order).
    let needed = per_window * slice;
    if temps.len() <= depth {
        temps.push(ctx.allocate_temp(input.dtype, &[needed])?);
    } else if temps[depth].byte_len() < needed as u64 * size {
        temps[depth] = ctx.allocate_temp(input.dtype, &[needed])?;
    }
    let temp = TensorRef { dtype: input.dtype, ..temps[depth].clone() };
    let mut start = 0;
    while start < n {
        let count = per_window.min(n - start);
        let window = row_range(input, (start * slice) as u64 * size, count * slice);
        let transposed = row_range(&temp, 0, count * slice);
        let mut window_dims = dims.to_vec();
        (window_dims[p].out, window_dims[p].in_dim) = (count, count);
        map_permutation(ctx, &window, &transposed, &window_dims, depth + 1, temps)?;
        copy_rows(ctx.stream()?, &transposed, out, start * inner, outer, count * inner, n * inner)?;
        start += count;
    }
    Ok(())
}

/// SpaceToDepth and DepthToSpace: a reshape, a transpose and a reshape. Each `block_size` x
/// `block_size` patch of pixels becomes one pixel's channels, ordered (row in block, column in
/// block, channel), in NHWC and NCHW alike (TF-GPU's convention; TF-CPU serves NHWC only).
/// NCHW_VECT_C is TF's 4 x qint8 layout, which no kernel here serves.
pub fn space_depth(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let b = kernel.attrs.int("block_size")?;
    if b <= 1 {
        return Err(Error::invalid_argument(format!("Block size should be > 1, but was: {b}")));
    }
    let nchw = match kernel.attrs.str("data_format")? {
        "NHWC" => false,
        "NCHW" => true,
        "NCHW_VECT_C" => return Err(Error::invalid_argument("qint8 should be used with data_format NCHW_VECT_C.")),
        other => return Err(Error::invalid_argument(format!("Invalid data format: {other}"))),
    };
    let input = ctx.input(0)?;
    if input.shape.len() != 4 {
        let rank = input.shape.len();
        return Err(Error::invalid_argument(if kernel.def.op == "SpaceToDepth" {
            format!("Input rank should be 4 instead of {rank}")
        } else {
            format!("Input rank should be: 4 instead of: {rank}")
        }));
    }
    let (n, c, h, w) = if nchw {
        (input.shape[0], input.shape[1], input.shape[2], input.shape[3])
    } else {
        (input.shape[0], input.shape[3], input.shape[1], input.shape[2])
    };
    let (view, perm, out_nhwc): (Vec<i64>, [usize; 6], [i64; 4]) = if kernel.def.op == "SpaceToDepth" {
        if h % b != 0 || w % b != 0 {
            return Err(Error::invalid_argument(format!(
                "Image width {w} and height {h} should be divisible by block_size: {b}"
            )));
        }
        let out = [n, h / b, w / b, validate::mul(validate::mul(c, b)?, b)?];
        if nchw {
            // [N, C, H/b, bh, W/b, bw] -> [N, bh, bw, C, H/b, W/b]
            (vec![n, c, h / b, b, w / b, b], [0, 3, 5, 1, 2, 4], out)
        } else {
            // [N, H/b, bh, W/b, bw, C] -> [N, H/b, W/b, bh, bw, C]
            (vec![n, h / b, b, w / b, b, c], [0, 1, 3, 2, 4, 5], out)
        }
    } else {
        let square = validate::mul(b, b)?;
        if c % square != 0 {
            return Err(Error::invalid_argument(format!("Input depth dimension {c} should be divisible by: {square}")));
        }
        let depth = c / square;
        let out = [n, validate::mul(h, b)?, validate::mul(w, b)?, depth];
        if nchw {
            // [N, bh, bw, C', H, W] -> [N, C', H, bh, W, bw]
            (vec![n, b, b, depth, h, w], [0, 3, 4, 1, 5, 2], out)
        } else {
            // [N, H, W, bh, bw, C'] -> [N, H, bh, W, bw, C']
            (vec![n, h, w, b, b, depth], [0, 1, 3, 2, 4, 5], out)
        }
    };
    let [on, oh, ow, oc] = out_nhwc;
    let out_shape = if nchw { vec![on, oc, oh, ow] } else { out_nhwc.to_vec() };
    let out = ctx.allocate_output(0, dtype, &out_shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let source = TensorRef { shape: view, ..input };
    let target = TensorRef { shape: permuted_shape(&source.shape, &perm), ..out };
    permute_any_size(ctx, &source, &target, &perm)
}

/// TF's most block dimensions that are not merged away (kMaxSpaceToBatchBlockDims).
const MAX_SPACE_BATCH_BLOCK_DIMS: usize = 4;

/// SpaceToBatchND and BatchToSpaceND: zero padding (or cropping) of the block dimensions around
/// one transpose, with the block offsets outermost in the batch (offset-major, batch-minor), as in
/// TF. Checks and messages follow TF's spacetobatch_op.cc and batchtospace_op.cc.
pub fn space_batch(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let to_batch = kernel.def.op == "SpaceToBatchND";
    let input = ctx.input(0)?;
    let (block, block_shape) = ctx.host_input_values(1)?;
    let (pads, pads_shape) = ctx.host_input_values(2)?;
    let (pads_name, pads_noun) = if to_batch { ("paddings", "Paddings") } else { ("crops", "Crops") };
    if block_shape.len() != 1 {
        return Err(Error::invalid_argument(format!("block_shape rank should be 1 instead of {}", block_shape.len())));
    }
    let m = block.len();
    if input.shape.len() < 1 + m {
        return Err(Error::invalid_argument(format!(
            "input rank should be >= {} instead of {}",
            1 + m,
            input.shape.len()
        )));
    }
    if pads_shape != [m as i64, 2] {
        return Err(Error::invalid_argument(format!(
            "{pads_name} should have shape [{m}, 2] instead of {pads_shape:?}"
        )));
    }
    let mut product = 1i64;
    for (k, &b) in block.iter().enumerate() {
        if b < 1 {
            return Err(Error::invalid_argument(format!(
                "All values in block_shape must be positive, got value, {b} at index {k}."
            )));
        }
        product = validate::mul(product, b)?;
    }
    if pads.iter().any(|&p| p < 0) {
        return Err(Error::invalid_argument(format!("{pads_noun} must be non-negative")));
    }
    // TF merges leading and trailing block dimensions of block 1 and no padding away, then allows
    // four; so do we (the same domain as TF-CPU and TF-GPU).
    let trivial = |k: usize| block[k] == 1 && pads[2 * k] == 0 && pads[2 * k + 1] == 0;
    let prefix = (0..m).take_while(|&k| trivial(k)).count();
    let suffix = (prefix..m).rev().take_while(|&k| trivial(k)).count();
    let internal = m - prefix - suffix;
    if internal > MAX_SPACE_BATCH_BLOCK_DIMS {
        return Err(Error::invalid_argument(format!(
            "Maximum number of non-combined block dimensions is {internal} but must not exceed \
             {MAX_SPACE_BATCH_BLOCK_DIMS}"
        )));
    }
    let batch = input.shape[0];
    let spatial = input.shape[1..=m].to_vec();
    let depth_dims = input.shape[1 + m..].to_vec();
    let depth: i64 = depth_dims.iter().product();
    if to_batch {
        let mut padded = Vec::with_capacity(m);
        for k in 0..m {
            let size = validate::add(validate::add(spatial[k], pads[2 * k])?, pads[2 * k + 1])?;
            if size % block[k] != 0 {
                return Err(Error::invalid_argument(format!(
                    "padded_shape[{k}]={size} is not divisible by block_shape[{k}]={}",
                    block[k]
                )));
            }
            padded.push(size);
        }
        let mut out_shape = vec![validate::mul(batch, product)?];
        out_shape.extend(padded.iter().zip(&block).map(|(&p, &b)| p / b));
        out_shape.extend_from_slice(&depth_dims);
        let out = ctx.allocate_output(0, dtype, &out_shape)?;
        if out.num_elements() == 0 {
            return Ok(());
        }
        let source = if pads.iter().all(|&p| p == 0) {
            input
        } else {
            let mut padded_shape = input.shape.clone();
            padded_shape[1..=m].copy_from_slice(&padded);
            let temp = ctx.allocate_temp(dtype, &padded_shape)?;
            let mut dims = direct_dims(&input.shape);
            for k in 0..m {
                let d = &mut dims[1 + k];
                d.out = padded[k];
                d.offset = pads[2 * k];
                d.mode = DimMode::ConstantPad;
            }
            map(ctx.stream()?, &input, &temp, &dims, None)?;
            temp
        };
        // [B, q1, b1, ..., qm, bm, depth] -> [b1, ..., bm, B, q1, ..., qm, depth]
        let mut view = vec![batch];
        for k in 0..m {
            view.extend([padded[k] / block[k], block[k]]);
        }
        view.push(depth);
        let mut perm: Vec<usize> = (0..m).map(|k| 2 + 2 * k).collect();
        perm.push(0);
        perm.extend((0..m).map(|k| 1 + 2 * k));
        perm.push(1 + 2 * m);
        let source = TensorRef { shape: view, ..source };
        let target = TensorRef { shape: permuted_shape(&source.shape, &perm), ..out };
        permute_any_size(ctx, &source, &target, &perm)
    } else {
        if batch % product != 0 {
            return Err(Error::invalid_argument(format!(
                "Input batch dimension ({batch}) is not divisible by product of block sizes ({product})"
            )));
        }
        let out_batch = batch / product;
        let mut full = Vec::with_capacity(m);
        let mut cropped = Vec::with_capacity(m);
        for k in 0..m {
            let size = validate::mul(spatial[k], block[k])?;
            let left = size - validate::add(pads[2 * k], pads[2 * k + 1])?;
            if left < 0 {
                return Err(Error::invalid_argument(format!("cropped_shape[{k}]={left} must be non-negative")));
            }
            full.push(size);
            cropped.push(left);
        }
        let mut out_shape = vec![out_batch];
        out_shape.extend_from_slice(&cropped);
        out_shape.extend_from_slice(&depth_dims);
        let out = ctx.allocate_output(0, dtype, &out_shape)?;
        if out.num_elements() == 0 {
            return Ok(());
        }
        // [b1, ..., bm, B, s1, ..., sm, depth] -> [B, s1, b1, ..., sm, bm, depth]
        let mut view = block.clone();
        view.push(out_batch);
        view.extend_from_slice(&spatial);
        view.push(depth);
        let mut perm = vec![m];
        for k in 0..m {
            perm.extend([m + 1 + k, k]);
        }
        perm.push(2 * m + 1);
        let source = TensorRef { shape: view, ..input };
        let uncropped_view = permuted_shape(&source.shape, &perm);
        if pads.iter().all(|&p| p == 0) {
            let target = TensorRef { shape: uncropped_view, ..out };
            return permute_any_size(ctx, &source, &target, &perm);
        }
        let mut uncropped_shape = vec![out_batch];
        uncropped_shape.extend_from_slice(&full);
        uncropped_shape.push(depth);
        let temp = ctx.allocate_temp(dtype, &uncropped_shape)?;
        permute_any_size(ctx, &source, &TensorRef { shape: uncropped_view, ..temp.clone() }, &perm)?;
        let mut dims = direct_dims(&uncropped_shape);
        for k in 0..m {
            dims[1 + k].out = cropped[k];
            dims[1 + k].offset = -pads[2 * k];
        }
        let target = TensorRef { shape: dims.iter().map(|d| d.out).collect(), ..out };
        map(ctx.stream()?, &temp, &target, &dims, None)
    }
}

pub fn tile(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let input = ctx.input(0)?;
    let (multiples, multiples_shape) = ctx.host_input_values(1)?;
    if multiples_shape.len() != 1 {
        return Err(Error::invalid_argument(format!(
            "Expected multiples to be 1-D, but got shape {multiples_shape:?}"
        )));
    }
    if multiples.len() != input.shape.len() {
        return Err(Error::invalid_argument(format!(
            "Expected multiples argument to be a vector of length {} but got length {}",
            input.shape.len(),
            multiples.len()
        )));
    }
    let mut dims = direct_dims(&input.shape);
    for (d, &m) in dims.iter_mut().zip(&multiples) {
        if m < 0 {
            return Err(Error::invalid_argument(format!("Expected multiples[i] >= 0, but got {m}")));
        }
        d.out = validate::mul(d.out, m)?;
        d.mode = DimMode::Modulo;
    }
    let out_shape: Vec<i64> = dims.iter().map(|d| d.out).collect();
    let out = ctx.allocate_output(0, dtype, &out_shape)?;
    map(ctx.stream()?, &input, &out, &dims, None)
}

/// MirrorPadGrad: the padded gradient folded back onto the input, one padded dimension at a time
/// (each a pass of `resize::axis_sum` in float32, or float64 for doubles: every input index gathers
/// itself and its mirror images in the paddings), as TF's kernel does.
pub fn mirror_pad_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    // Past a binding, a range of the leading dimension at a time where it has no padding.
    let (paddings, _) = ctx.host_input_values(1)?;
    let unpadded_leading = paddings.len() >= 2 && paddings[..2] == [0, 0];
    batch::split_batch_if(ctx, kernel, unpadded_leading.then_some(&batch::INPUT_0_OUTPUT_0), mirror_pad_grad_whole)
}

fn mirror_pad_grad_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    // REFLECT mirrors about the edge element, SYMMETRIC about the edge itself.
    let offset = match kernel.attrs.str("mode")? {
        "SYMMETRIC" => 0,
        "REFLECT" => 1,
        _ => return Err(Error::invalid_argument("mode must be either REFLECT or SYMMETRIC.")),
    };
    let input = ctx.input(0)?;
    let rank = input.shape.len();
    if rank > 5 {
        return Err(Error::unimplemented(format!("inputs rank not in [0,5]: {rank}")));
    }
    let (paddings, shape) = ctx.host_input_values(1)?;
    if shape.len() != 2 || shape[1] != 2 {
        return Err(Error::invalid_argument(format!(
            "paddings must be a matrix with 2 columns: {}",
            validate::shape_string(&shape)
        )));
    }
    if shape[0] != rank as i64 {
        return Err(Error::invalid_argument(format!(
            "The first dimension of paddings must be the rank of inputs{} {}",
            validate::shape_string(&shape),
            validate::shape_string(&input.shape)
        )));
    }
    let mut out_shape = Vec::with_capacity(rank);
    for d in 0..rank {
        let (before, after) = (paddings[2 * d], paddings[2 * d + 1]);
        if before < 0 || after < 0 {
            return Err(Error::invalid_argument(format!("Paddings must be non-negative: {before}, {after}")));
        }
        let total = validate::add(before, after)?;
        if total >= input.shape[d] {
            return Err(Error::invalid_argument(format!(
                "Total paddings must be less than the input dimension size: {total} was not less than {}",
                input.shape[d]
            )));
        }
        let size = input.shape[d] - total;
        if offset == 0 && (before > size || after > size) {
            return Err(Error::invalid_argument(format!(
                "paddings must be no greater than the output dimension size: {before}, {after} greater than {size}"
            )));
        }
        if offset == 1 && (before >= size || after >= size) {
            return Err(Error::invalid_argument(format!(
                "paddings must be less than the output dimension size: {before}, {after} not less than {size}"
            )));
        }
        out_shape.push(size);
    }
    let out = ctx.allocate_output(0, input.dtype, &out_shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    if out_shape == input.shape {
        return ctx.stream()?.memcpy_dtod(out.address, input.address, input.byte_len());
    }
    // The padded dimensions, folded one after another: [outer, padded axis, inner] each time.
    let padded: Vec<usize> = (0..rank).filter(|&d| out_shape[d] != input.shape[d]).collect();
    let mut current = input.clone();
    for (k, &d) in padded.iter().enumerate() {
        let (before, size) = (paddings[2 * d], out_shape[d]);
        let terms: Vec<(u32, u32, f32)> = (0..current.shape[d])
            .map(|p| {
                let source = if p < before {
                    before - p - 1 + offset
                } else if p < before + size {
                    p - before
                } else {
                    size - 1 - (p - before - size) - offset
                };
                (source as u32, p as u32, 1.0)
            })
            .collect();
        let sources = super::resize::Sources::new(size as usize, &terms);
        let mut shape = current.shape.clone();
        shape[d] = size;
        let target = if k + 1 == padded.len() { out.clone() } else { ctx.allocate_temp(out.dtype, &shape)? };
        let outer: i64 = current.shape[..d].iter().product();
        let inner: i64 = current.shape[d + 1..].iter().product();
        super::resize::axis_sum(ctx, &current, &target, (outer, current.shape[d], inner), &sources)?;
        current = target;
    }
    Ok(())
}

/// Pad, PadV2 and MirrorPad.
pub fn pad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let input = ctx.input(0)?;
    let (paddings, shape) = ctx.host_input_values(1)?;
    let rank = input.shape.len();
    if shape != [rank as i64, 2] {
        return Err(Error::invalid_argument(format!("paddings must be a matrix with 2 columns: {shape:?}")));
    }
    let mode = match kernel.def.op {
        "MirrorPad" => match kernel.attrs.str("mode")? {
            "REFLECT" => DimMode::Reflect,
            "SYMMETRIC" => DimMode::Symmetric,
            other => return Err(Error::invalid_argument(format!("Unknown padding mode: {other}"))),
        },
        _ => DimMode::ConstantPad,
    };
    let mut dims = direct_dims(&input.shape);
    for (k, d) in dims.iter_mut().enumerate() {
        let (before, after) = (paddings[2 * k], paddings[2 * k + 1]);
        let limit = match mode {
            DimMode::Reflect => d.in_dim - 1,
            DimMode::Symmetric => d.in_dim,
            _ => i64::MAX,
        };
        if before < 0 || after < 0 || before > limit || after > limit {
            return Err(Error::invalid_argument(format!(
                "paddings must be non-negative and fit the mode: {paddings:?}"
            )));
        }
        d.out = validate::add(validate::add(d.in_dim, before)?, after)?;
        d.offset = before;
        d.mode = mode;
    }
    let fill = if kernel.def.op == "PadV2" { Some(ctx.input(2)?) } else { None };
    if let Some(value) = fill.as_ref().filter(|v| !v.shape.is_empty()) {
        return Err(Error::invalid_argument(format!(
            "constant_values must be a scalar. Shape of constant_values: {:?}",
            value.shape
        )));
    }
    let out_shape: Vec<i64> = dims.iter().map(|d| d.out).collect();
    let out = ctx.allocate_output(0, dtype, &out_shape)?;
    map(ctx.stream()?, &input, &out, &dims, fill.as_ref())
}

/// ReverseV2(tensor, axis): axes by number. Reverse(tensor, dims): one bool per dimension.
pub fn reverse(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let input = ctx.input(0)?;
    let (mut axes, axes_shape) = ctx.host_input_values(1)?;
    if input.shape.is_empty() {
        // TF returns a scalar unchanged, whatever the axes.
        let out = ctx.allocate_output(0, dtype, &[])?;
        return ctx.stream()?.memcpy_dtod(out.address, input.address, input.byte_len());
    }
    if axes_shape.len() != 1 {
        return Err(Error::invalid_argument(format!("'dims' must be 1-dimension, not {}", axes_shape.len())));
    }
    if kernel.def.op == "Reverse" {
        if input.shape[0] == 0 {
            return Err(Error::invalid_argument("Invalid input first dimension. Found 0."));
        }
        if axes.len() != input.shape.len() {
            return Err(Error::invalid_argument(format!(
                "'dims' must have the same number of values as 'input' has dimensions. 'input' has {}'dims' has {} values",
                input.shape.len(),
                axes.len()
            )));
        }
        axes = (0..axes.len() as i64).filter(|&a| axes[a as usize] != 0).collect();
    }
    let mut dims = direct_dims(&input.shape);
    for &a in &axes {
        let d = &mut dims[validate::axis(a, input.shape.len(), "'axis'")?];
        if d.mode == DimMode::Reverse {
            return Err(Error::invalid_argument(format!("axis {a} specified more than once.")));
        }
        d.mode = DimMode::Reverse;
    }
    let out = ctx.allocate_output(0, dtype, &input.shape)?;
    map(ctx.stream()?, &input, &out, &dims, None)
}

/// Roll(input, shift, axis): each named axis rotated by its shifts (summed where an axis repeats),
/// output[(i + shift) mod n] = input[i], as a modulo index map.
pub fn roll(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let input = ctx.input(0)?;
    let (shifts, shift_shape) = ctx.host_input_values(1)?;
    let (axes, axis_shape) = ctx.host_input_values(2)?;
    if input.shape.is_empty() {
        return Err(Error::invalid_argument("input must be 1-D or higher"));
    }
    if shift_shape.len() > 1 {
        return Err(Error::invalid_argument(format!(
            "shift must be a scalar or a 1-D vector. Found: {}",
            validate::shape_string(&shift_shape)
        )));
    }
    if axis_shape.len() > 1 {
        return Err(Error::invalid_argument(format!(
            "axis must be a scalar or a 1-D vector. Found: {}",
            validate::shape_string(&axis_shape)
        )));
    }
    if shifts.len() != axes.len() {
        return Err(Error::invalid_argument(format!(
            "shift and axis must have the same size; got {} and {}",
            shifts.len(),
            axes.len()
        )));
    }
    let rank = input.shape.len();
    let mut total = vec![0i64; rank];
    for (&shift, &axis) in shifts.iter().zip(&axes) {
        let a = if axis < 0 { axis + rank as i64 } else { axis };
        if !(0..rank as i64).contains(&a) {
            return Err(Error::invalid_argument(format!("axis {axis} is out of range")));
        }
        let n = input.shape[a as usize].max(1);
        total[a as usize] = (total[a as usize] + shift.rem_euclid(n)).rem_euclid(n);
    }
    let mut dims = direct_dims(&input.shape);
    for (d, &s) in dims.iter_mut().zip(&total) {
        if s != 0 {
            // Output index o reads (o + n - s) mod n.
            d.mode = DimMode::Modulo;
            d.offset = s - d.in_dim;
        }
    }
    let out = ctx.allocate_output(0, dtype, &input.shape)?;
    map(ctx.stream()?, &input, &out, &dims, None)
}

/// Cross(a, b): cross products of the 3-vectors along the last axis, as
/// `roll(a, -1) * roll(b, 1) - roll(a, 1) * roll(b, -1)` (TF's order: a1 b2 - a2 b1, ...).
pub fn cross(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    use super::binary::{launch, BinaryOp};
    let dtype = kernel.dtype("T")?;
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    if a.shape != b.shape {
        return Err(Error::invalid_argument(format!(
            "Both inputs must be of same shape: {} vs. {}",
            validate::shape_string(&a.shape),
            validate::shape_string(&b.shape)
        )));
    }
    if a.shape.last() != Some(&3) {
        return Err(Error::failed_precondition("Cross-products are only defined for 3-element vectors."));
    }
    let out = ctx.allocate_output(0, dtype, &a.shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    // The vectors rotated by one component, forwards (y, z, x) and backwards (z, x, y).
    let mut rotated = |t: &TensorRef, offset: i64| -> Result<TensorRef> {
        let mut dims = direct_dims(&t.shape);
        if let Some(last) = dims.last_mut() {
            (last.mode, last.offset) = (DimMode::Modulo, offset);
        }
        let r = ctx.allocate_temp(dtype, &t.shape)?;
        map(ctx.stream()?, t, &r, &dims, None)?;
        Ok(r)
    };
    let (a_yzx, a_zxy) = (rotated(&a, -1)?, rotated(&a, -2)?);
    let (b_yzx, b_zxy) = (rotated(&b, -1)?, rotated(&b, -2)?);
    let stream = ctx.stream()?;
    launch(stream, BinaryOp::Mul, &a_yzx, &b_zxy, &a_yzx)?;
    launch(stream, BinaryOp::Mul, &a_zxy, &b_yzx, &a_zxy)?;
    launch(stream, BinaryOp::Sub, &a_yzx, &a_zxy, &out)
}

pub fn broadcast_to(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let input = ctx.input(0)?;
    let (shape, shape_shape) = ctx.host_input_values(1)?;
    if shape_shape.len() != 1 {
        return Err(Error::invalid_argument(format!("Shape must be a 1-D tensor, got shape {shape_shape:?}")));
    }
    if shape.len() < input.shape.len() {
        return Err(Error::invalid_argument(format!(
            "Rank of input ({}) must be no greater than rank of output shape ({})",
            input.shape.len(),
            shape.len()
        )));
    }
    let dims = broadcast_dims(&input.shape, &shape)?;
    let out = ctx.allocate_output(0, dtype, &shape)?;
    map(ctx.stream()?, &input, &out, &dims, None)
}

/// The index map that broadcasts a tensor of `from` to `shape` (numpy's rules).
pub fn broadcast_dims(from: &[i64], shape: &[i64]) -> Result<Vec<DimMap>> {
    let refuse = || {
        Error::invalid_argument(format!("Unable to broadcast tensor of shape {from:?} to tensor of shape {shape:?}"))
    };
    let pad = shape.len().checked_sub(from.len()).ok_or_else(refuse)?;
    let padded: Vec<i64> = std::iter::repeat_n(1, pad).chain(from.iter().copied()).collect();
    let strides = contiguous_strides(&padded);
    let mut dims = Vec::with_capacity(shape.len());
    for (k, (&want, &have)) in shape.iter().zip(&padded).enumerate() {
        if have != want && have != 1 {
            return Err(refuse());
        }
        let stride = if have == 1 { 0 } else { strides[k] };
        dims.push(DimMap { out: want, in_dim: have, in_stride: stride, offset: 0, mode: DimMode::Direct });
    }
    Ok(dims)
}

pub fn fill(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let (shape, dims_shape) = ctx.host_input_values(0)?;
    if dims_shape.len() != 1 {
        return Err(Error::invalid_argument(format!("dims must represent a vector, got shape {dims_shape:?}")));
    }
    let value = ctx.input(1)?;
    if !value.shape.is_empty() {
        return Err(Error::invalid_argument(format!("value must be a scalar, got shape {:?}", value.shape)));
    }
    if shape.iter().any(|&d| d < 0) {
        return Err(Error::invalid_argument(format!("dims must be non-negative: {shape:?}")));
    }
    let dims: Vec<DimMap> = shape.iter().map(|&d| DimMap::spread(d)).collect();
    let out = ctx.allocate_output(0, dtype, &shape)?;
    map(ctx.stream()?, &value, &out, &dims, None)
}

/// Copies each input into its slot of `out` along `axis` (ConcatV2; Pack with `stacked`).
fn concat_into(stream: &Stream, inputs: &[TensorRef], out: &TensorRef, axis: usize) -> Result<()> {
    let outer: i64 = out.shape[..axis].iter().product();
    let inner: i64 = out.shape[axis + 1..].iter().product();
    let pitch = out.shape[axis] * inner;
    let mut at = 0;
    for input in inputs {
        let row = input.num_elements() as i64 / outer.max(1);
        copy_rows(stream, input, out, at, outer, row, pitch)?;
        at += row;
    }
    Ok(())
}

/// ConcatV2(values..., axis) and Concat(concat_dim, values...).
pub fn concat(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let n = ctx.num_inputs() - 1;
    let (axis_at, first_value) = if kernel.def.op == "Concat" { (0, 1) } else { (n, 0) };
    let (axis, axis_shape) = ctx.host_input_values(axis_at)?;
    let axis = validate::scalar(&axis, &axis_shape, "concat_dim")?;
    let inputs: Vec<TensorRef> = (first_value..first_value + n).map(|i| ctx.input(i)).collect::<Result<_>>()?;
    let first = inputs.first().ok_or_else(|| Error::invalid_argument("ConcatV2 needs inputs"))?;
    let rank = first.shape.len();
    let axis = validate::axis(axis, rank, "ConcatOp : Expected concatenating dimensions")?;
    let mut shape = first.shape.clone();
    shape[axis] = 0;
    for t in &inputs {
        let same_elsewhere = t.shape.len() == rank
            && t.shape.iter().zip(&first.shape).enumerate().all(|(d, (a, b))| d == axis || a == b);
        if !same_elsewhere {
            return Err(Error::invalid_argument(format!(
                "ConcatOp : Dimension mismatch: shape[0] = {:?} vs. shape = {:?}",
                first.shape, t.shape
            )));
        }
        shape[axis] = validate::add(shape[axis], t.shape[axis])?;
    }
    let out = ctx.allocate_output(0, dtype, &shape)?;
    concat_into(ctx.stream()?, &inputs, &out, axis)
}

pub fn pack(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let inputs: Vec<TensorRef> = (0..ctx.num_inputs()).map(|i| ctx.input(i)).collect::<Result<_>>()?;
    let first = inputs.first().ok_or_else(|| Error::invalid_argument("Pack needs inputs"))?.clone();
    if let Some(t) = inputs.iter().find(|t| t.shape != first.shape) {
        return Err(Error::invalid_argument(format!(
            "Shapes of all inputs must match: values[0].shape = {:?} != values[i].shape = {:?}",
            first.shape, t.shape
        )));
    }
    let axis = validate::axis(kernel.attrs.int("axis")?, first.shape.len() + 1, "axis")?;
    let mut shape = first.shape.clone();
    shape.insert(axis, inputs.len() as i64);
    let out = ctx.allocate_output(0, dtype, &shape)?;
    concat_into(ctx.stream()?, &inputs, &out, axis)
}

pub fn unpack(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let axis = validate::axis(kernel.attrs.int("axis")?, input.shape.len(), "axis")?;
    let num = kernel.attrs.int("num")?;
    if input.shape[axis] != num {
        return Err(Error::invalid_argument(format!(
            "Input shape axis {axis} must equal {num}, got shape {:?}",
            input.shape
        )));
    }
    let strides = contiguous_strides(&input.shape);
    let mut shape = input.shape.clone();
    shape.remove(axis);
    let mut view_strides = strides.clone();
    view_strides.remove(axis);
    for i in 0..num as usize {
        let out = ctx.allocate_output(i, input.dtype, &shape)?;
        let view = StridedView { base: i as i64 * strides[axis], shape: shape.clone(), strides: view_strides.clone() };
        super::slice::launch(ctx.stream()?, &input, &view, &out)?;
    }
    Ok(())
}

/// GatherV2(params, indices, axis), and Gather(params, indices) along the first axis.
pub fn gather(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let params = ctx.input(0)?;
    let indices = ctx.input(1)?;
    if kernel.def.op == "Gather" {
        return gather_into(ctx, &params, &indices, 0, 0);
    }
    // Past a binding, a range of the leading dimension at a time where params (and, with
    // batch_dims, the indices) share it with the output; axis 0 has table windows of its own.
    const PARAMS_AND_INDICES: BatchArgs =
        BatchArgs { inputs: &[0, 1], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };
    let (axis, axis_shape) = ctx.host_input_values(2)?;
    let axis = validate::scalar(&axis, &axis_shape, "axis")?;
    let axis = if axis < 0 { axis + params.shape.len() as i64 } else { axis };
    let batch_dims = kernel.attrs.int("batch_dims")?;
    let batch_dims = if batch_dims < 0 { batch_dims + indices.shape.len() as i64 } else { batch_dims };
    let args = match (batch_dims > 0, axis > 0) {
        (true, _) => Some(&PARAMS_AND_INDICES),
        (false, true) => Some(&batch::INPUT_0_OUTPUT_0),
        _ => None,
    };
    batch::split_batch_if(ctx, kernel, args, gather_v2_whole)
}

fn gather_v2_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let params = ctx.input(0)?;
    let indices = ctx.input(1)?;
    let (axis, axis_shape) = ctx.host_input_values(2)?;
    let axis = validate::scalar(&axis, &axis_shape, "axis")?;
    gather_into(ctx, &params, &indices, axis, kernel.attrs.int("batch_dims")?)
}

/// Output 0 = the slices of `params` along `axis` that `indices` pick, per batch of the leading
/// `batch_dims` dimensions (GatherV2, ResourceGather). Out-of-range indices give zeros, as on
/// TF-GPU.
pub fn gather_into(
    ctx: &mut dyn KernelContext,
    params: &TensorRef,
    indices: &TensorRef,
    axis: i64,
    batch_dims: i64,
) -> Result<()> {
    let dtype = params.dtype;
    if params.shape.is_empty() {
        return Err(Error::invalid_argument("params must be at least 1 dimensional"));
    }
    let axis = validate::axis(axis, params.shape.len(), "axis")?;
    let index_rank = indices.shape.len() as i64;
    let batch_dims = if batch_dims < 0 { batch_dims + index_rank } else { batch_dims };
    if batch_dims < 0 || batch_dims > index_rank {
        return Err(Error::invalid_argument(format!(
            "Expected batch_dims in the range [{}, {index_rank}], but got {batch_dims}",
            -index_rank
        )));
    }
    let batch_dims = batch_dims as usize;
    if batch_dims > axis {
        return Err(Error::invalid_argument(format!(
            "batch_dims ({batch_dims}) must be less than or equal to axis ({axis})."
        )));
    }
    if params.shape[..batch_dims] != indices.shape[..batch_dims] {
        return Err(Error::invalid_argument(format!(
            "params.shape[..{batch_dims}] = {:?} must equal indices.shape[..{batch_dims}] = {:?}",
            &params.shape[..batch_dims],
            &indices.shape[..batch_dims]
        )));
    }
    let batch: i64 = params.shape[..batch_dims].iter().product();
    let outer: i64 = params.shape[batch_dims..axis].iter().product();
    let inner: i64 = params.shape[axis + 1..].iter().product();
    let count: i64 = indices.shape[batch_dims..].iter().product();
    let mut shape: Vec<i64> = params.shape[..axis].to_vec();
    shape.extend(&indices.shape[batch_dims..]);
    shape.extend(&params.shape[axis + 1..]);
    let out = ctx.allocate_output(0, dtype, &shape)?;
    let total = shader_len(out.num_elements(), "GatherV2")?;
    if total == 0 {
        return Ok(());
    }
    let (unit, bytes) = element_unit(dtype);
    let mut p = Params::zeroed();
    p.unit = unit;
    p.n = total * unit;
    p.a = u32::from(indices.dtype == DType::I64);
    p.out_shape[..4].copy_from_slice(&[outer as u32, count as u32, inner as u32, batch as u32]);
    p.in_dim[0] = params.shape[axis] as u32;
    let entry = if bytes { "gather_bytes" } else { "gather_words" };
    let unit_bytes = if bytes { 1 } else { 4 };
    let stream = ctx.stream()?;
    let launch = |params: Option<&TensorRef>, out: &TensorRef, indices: &TensorRef, p: Params| {
        let threads = if bytes { (p.n as u64).div_ceil(4) + 1 } else { p.n as u64 };
        let tensors = [params, Some(out), Some(indices), None];
        Launch {
            stream,
            entry,
            params: p,
            tensors,
            units: [unit_bytes, unit_bytes, 4, 4],
            threads,
            constants: Vec::new(),
        }
        .run()
    };
    let limit = binding_limit(stream.device());
    if (params.byte_len() > limit || out.byte_len() > limit) && batch == 1 && outer == 1 && params.num_elements() > 0 {
        // A table larger than a binding (an embedding): one pass per window of its rows, each
        // writing the outputs whose index falls in it; outputs too, in ranges of indices.
        let row_bytes = (inner as u64 * dtype.size()).max(1);
        let rows = (limit / row_bytes).max(1) as i64;
        let axis_dim = params.shape[axis];
        let index_bytes = indices.dtype.size();
        // Output and index ranges that fit; output rows on whole words for byte-sized elements.
        let mut per_part = (limit / row_bytes.max(index_bytes)).max(1) as i64;
        if dtype.size() < 4 && per_part >= 4 {
            per_part -= per_part % 4;
        }
        let mut first = 0;
        while first < count {
            let picks = per_part.min(count - first);
            let out_part = row_range(&out, first as u64 * row_bytes, picks * inner);
            let index_part = row_range(indices, first as u64 * index_bytes, picks);
            let mut q = p;
            q.out_shape[1] = picks as u32;
            q.n = (picks * inner) as u32 * unit;
            let mut lo = 0;
            while lo < axis_dim {
                let count = rows.min(axis_dim - lo);
                let window = row_range(params, lo as u64 * row_bytes, count * inner.max(1));
                (q.in_dim[1], q.in_dim[2]) = (lo as u32, count as u32);
                launch(Some(&window), &out_part, &index_part, q)?;
                lo += count;
            }
            first += picks;
        }
        return Ok(());
    }
    launch((params.num_elements() > 0).then_some(params), &out, indices, p)
}

/// OneHot; past a binding, a range of the indices' leading dimension at a time where it leads the
/// output too (the depth axis not first), else the select route in windows.
pub fn one_hot(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let leads = kernel.attrs.int("axis")? != 0 && !ctx.input(0)?.shape.is_empty();
    batch::split_batch_if(ctx, kernel, leads.then_some(&batch::INPUT_0_OUTPUT_0), one_hot_whole)
}

fn one_hot_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let indices = ctx.input(0)?;
    let (depth, depth_shape) = ctx.host_input_values(1)?;
    let on = ctx.input(2)?;
    let off = ctx.input(3)?;
    let depth = validate::scalar(&depth, &depth_shape, "depth")?;
    if depth < 0 {
        return Err(Error::invalid_argument(format!("depth must be non-negative, got: {depth}")));
    }
    for (value, name) in [(&on, "on_value"), (&off, "off_value")] {
        if !value.shape.is_empty() {
            return Err(Error::invalid_argument(format!("{name} must be a scalar, but got: {:?}", value.shape)));
        }
    }
    let rank = indices.shape.len();
    let axis = match kernel.attrs.int("axis")? {
        -1 => rank,
        a if a >= 0 && a <= rank as i64 => a as usize,
        a => {
            return Err(Error::invalid_argument(format!(
                "Expected axis to be -1 or between [0, {}).  But received: {a}",
                rank + 1
            )))
        }
    };
    let outer: i64 = indices.shape[..axis].iter().product();
    let inner: i64 = indices.shape[axis..].iter().product();
    let mut shape = indices.shape.clone();
    shape.insert(axis, depth);
    let out = ctx.allocate_output(0, dtype, &shape)?;
    let total = shader_len(out.num_elements(), "OneHot")?;
    // The select route runs in windows: an output past a binding that `one_hot` cannot split by the
    // indices' leading dimension (the depth axis first, or scalar indices) takes it too.
    let unsplittable = axis == 0 || rank == 0;
    let past_binding = unsplittable && out.byte_len() > binding_limit(ctx.stream()?.device());
    if past_binding || !matches!(dtype, DType::F32 | DType::F64 | DType::I64) {
        return one_hot_by_select(ctx, &indices, depth, [outer, inner], &on, &off, &out);
    }
    let (unit, _) = element_unit(dtype);
    let mut p = Params::zeroed();
    p.unit = unit;
    p.n = total * unit;
    p.a = u32::from(indices.dtype == DType::I64);
    p.out_shape[..3].copy_from_slice(&[outer as u32, depth as u32, inner as u32]);
    Launch {
        stream: ctx.stream()?,
        entry: "one_hot",
        params: p,
        tensors: [Some(&on), Some(&out), Some(&indices), Some(&off)],
        units: [4; 4],
        threads: p.n as u64,
        constants: Vec::new(),
    }
    .run()
}

/// LinSpace's `num` values in the float type `T` (`index` converts a position to it).
fn spaced<T>(start: T, stop: T, num: i64, index: impl Fn(i64) -> T) -> Vec<T>
where
    T: Copy
        + std::ops::Add<Output = T>
        + std::ops::Sub<Output = T>
        + std::ops::Mul<Output = T>
        + std::ops::Div<Output = T>,
{
    let step = (stop - start) / index(num - 1);
    (0..num)
        .map(|i| match i {
            0 => start,
            i if i == num - 1 => stop,
            i => start + step * index(i),
        })
        .collect()
}

/// OneHot of any dtype as `Select(indices == iota, on, off)`: the [outer, 1, inner] indices compared
/// with [1, depth, 1] positions (an index outside [0, depth) matches none, as TF's), then each
/// element picked from the scalars.
fn one_hot_by_select(
    ctx: &mut dyn KernelContext,
    indices: &TensorRef,
    depth: i64,
    [outer, inner]: [i64; 2],
    on: &TensorRef,
    off: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    if out.num_elements() == 0 {
        return Ok(());
    }
    let positions = ctx.allocate_temp(indices.dtype, &[1, depth, 1])?;
    let mask = ctx.allocate_temp(DType::Bool, &[outer, depth, inner])?;
    let stream = ctx.stream()?;
    let bytes: Vec<u8> = if indices.dtype == DType::I64 {
        (0..depth).flat_map(|i| i.to_le_bytes()).collect()
    } else {
        (0..depth).flat_map(|i| (i as i32).to_le_bytes()).collect()
    };
    stream.memcpy_htod(positions.address, &bytes)?;
    let columns = TensorRef { shape: vec![outer, 1, inner], ..indices.clone() };
    super::integer::launch(stream, super::integer::EQUAL, &columns, &positions, &mask)?;
    let flat = TensorRef { shape: vec![outer, depth, inner], ..out.clone() };
    super::binary::launch_select(stream, &mask, on, off, &flat)
}

/// LinSpace(start, stop, num): `num` evenly spaced values from start to stop, computed on the host
/// in the output's type as TF's kernel computes them (`start`, then `start + step * i`, the last
/// one `stop`) and uploaded.
pub fn lin_space(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let mut scalar = |i: usize, name: &str| -> Result<f64> {
        let shape = ctx.input(i)?.shape;
        if !shape.is_empty() {
            return Err(Error::invalid_argument(format!(
                "{name} must be a scalar, not shape {}",
                validate::shape_string(&shape)
            )));
        }
        Ok(ctx.host_input_floats(i)?.first().copied().unwrap_or(0.0))
    };
    let (start, stop) = (scalar(0, "start")?, scalar(1, "stop")?);
    let shape = ctx.input(2)?.shape;
    if !shape.is_empty() {
        return Err(Error::invalid_argument(format!(
            "num must be a scalar, not shape {}",
            validate::shape_string(&shape)
        )));
    }
    let (num, _) = ctx.host_input_values(2)?;
    let num = num.first().copied().unwrap_or(0);
    if num <= 0 {
        return Err(Error::invalid_argument(format!("Requires num > 0: {num}")));
    }
    let out = ctx.allocate_output(0, dtype, &[num])?;
    let bytes: Vec<u8> = match dtype {
        DType::F32 => bytemuck::cast_slice(&spaced(start as f32, stop as f32, num, |i| i as f32)).to_vec(),
        DType::F64 => bytemuck::cast_slice(&spaced(start, stop, num, |i| i as f64)).to_vec(),
        other => return Err(Error::internal(format!("LinSpace of {other:?}"))),
    };
    ctx.stream()?.memcpy_htod(out.address, &bytes)
}

/// Range(start, limit, delta): float32 on the device; int64 and float64 computed on the host (as
/// TF's functor computes them, `start + i * delta`) and uploaded.
pub fn range(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    match kernel.dtype("Tidx")? {
        DType::I64 => {
            let mut read = |i: usize, name: &str| -> Result<i64> {
                let (v, shape) = ctx.host_input_values(i)?;
                validate::scalar(&v, &shape, name)
            };
            let (start, limit, delta) = (read(0, "start")?, read(1, "limit")?, read(2, "delta")?);
            check_range_order(start as f64, limit as f64, delta as f64, &[start, limit, delta].map(|v| v.to_string()))?;
            // TF's integer size: |limit - start| / |delta| rounded up.
            let span = (i128::from(limit) - i128::from(start)).unsigned_abs();
            let step = i128::from(delta).unsigned_abs();
            let size = i64::try_from(span.div_ceil(step))
                .map_err(|_| Error::invalid_argument("Requires the range's size to fit int64"))?;
            upload_range(ctx, DType::I64, size, |i| start.wrapping_add((i as i64).wrapping_mul(delta)).to_le_bytes())
        }
        DType::F64 => {
            let mut read = |i: usize, name: &str| -> Result<f64> {
                match ctx.host_input_floats(i)?.as_slice() {
                    [v] => Ok(*v),
                    other => {
                        Err(Error::invalid_argument(format!("{name} must be a scalar, not {} values", other.len())))
                    }
                }
            };
            let (start, limit, delta) = (read(0, "start")?, read(1, "limit")?, read(2, "delta")?);
            check_range_order(start, limit, delta, &[start, limit, delta].map(|v| v.to_string()))?;
            let size = ((limit - start) / delta).abs().ceil();
            if !(0.0..9.2e18).contains(&size) {
                return Err(Error::invalid_argument(format!(
                    "Requires ((limit - start) / delta) <= {}: start {start}, limit {limit}, delta {delta}",
                    i64::MAX
                )));
            }
            upload_range(ctx, DType::F64, size as i64, |i| (start + i as f64 * delta).to_le_bytes())
        }
        _ => range_f32(ctx),
    }
}

/// TF's checks of a range's direction (`shown`: start, limit and delta as TF prints them).
fn check_range_order(start: f64, limit: f64, delta: f64, shown: &[String; 3]) -> Result<()> {
    let [s, l, d] = shown;
    if delta == 0.0 {
        return Err(Error::invalid_argument(format!("Requires delta != 0: {d}")));
    }
    if delta > 0.0 && start > limit {
        return Err(Error::invalid_argument(format!("Requires start <= limit when delta > 0: {s}/{l}")));
    }
    if delta < 0.0 && start < limit {
        return Err(Error::invalid_argument(format!("Requires start >= limit when delta < 0: {s}/{l}")));
    }
    Ok(())
}

/// Allocates a range's output of `size` 8-byte values and uploads `value(i)`, a few MiB at a time.
fn upload_range(ctx: &mut dyn KernelContext, dtype: DType, size: i64, value: impl Fn(u64) -> [u8; 8]) -> Result<()> {
    const CHUNK: u64 = 1 << 21;
    let out = ctx.allocate_output(0, dtype, &[size])?;
    let stream = ctx.stream()?;
    let mut start = 0u64;
    while start < size as u64 {
        let end = (start + CHUNK).min(size as u64);
        let bytes: Vec<u8> = (start..end).flat_map(&value).collect();
        stream.memcpy_htod(out.address + start * 8, &bytes)?;
        start = end;
    }
    Ok(())
}

fn range_f32(ctx: &mut dyn KernelContext) -> Result<()> {
    let read = |ctx: &mut dyn KernelContext, i: usize, name: &str| -> Result<f32> {
        match ctx.host_input_floats(i)?.as_slice() {
            [v] => Ok(*v as f32),
            other => Err(Error::invalid_argument(format!("{name} must be a scalar, not {} values", other.len()))),
        }
    };
    let (start, limit, delta) = (read(ctx, 0, "start")?, read(ctx, 1, "limit")?, read(ctx, 2, "delta")?);
    if delta == 0.0 {
        return Err(Error::invalid_argument(format!("Requires delta != 0: {delta}")));
    }
    if delta > 0.0 && start > limit {
        return Err(Error::invalid_argument(format!("Requires start <= limit when delta > 0: {start}/{limit}")));
    }
    if delta < 0.0 && start < limit {
        return Err(Error::invalid_argument(format!("Requires start >= limit when delta < 0: {start}/{limit}")));
    }
    // In the range's own type, as TF sizes it; NaN and sizes past int64 are errors.
    let size = ((limit - start) / delta).abs().ceil();
    if !(0.0..9.2e18).contains(&size) {
        return Err(Error::invalid_argument(format!(
            "Requires ((limit - start) / delta) <= {}: start {start}, limit {limit}, delta {delta}",
            i64::MAX
        )));
    }
    let size = size as i64;
    let out = ctx.allocate_output(0, DType::F32, &[size])?;
    shader_len(size as u64, "Range")?;
    let stream = ctx.stream()?;
    // Windows of a range longer than a binding, each told its first value's index.
    let per_window = (binding_limit(stream.device()) / 4) as i64;
    let mut first = 0;
    while first < size {
        let count = per_window.min(size - first);
        let mut p = Params::zeroed();
        (p.n, p.a, p.b) = (count as u32, start.to_bits(), delta.to_bits());
        p.in_dim[0] = first as u32;
        Launch {
            stream,
            entry: "range_f32",
            params: p,
            tensors: [None, Some(&super::windows::rows(&out, first, count)), None, None],
            units: [4; 4],
            threads: p.n as u64,
            constants: Vec::new(),
        }
        .run()?;
        first += count;
    }
    Ok(())
}
