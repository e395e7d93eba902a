//! 3-D windows over NDHWC tensors (`wgsl/volume.wgsl`): Conv3D and its gradients as column matrices
//! times the filter (`matmul`), the input gradient as the transposed convolution (the gradient read
//! as if dilated by the strides, the filter flipped), and MaxPool3D/AvgPool3D with their gradients
//! directly. Channels-first nodes (NCDHW) run through `layout::channels_last`; float16 through
//! `half::via_f32`; float64 convolutions in f64.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{
    dispatch, loops_fit, nested_loop_iterations, storage_window, PipelineSpec, Shader, BINDING_LIMIT_ERROR,
};
use crate::runtime::Stream;

use super::batch::{self, BatchArgs};
use super::binary::{self, BinaryOp};
use super::channel_blocks::{self, BlockArgs, BlockOutput, OutBlockOutput, NO_BLOCKS};
use super::column_tiles::{self, ColumnTile, Side};
use super::conv::{self, window, PassGeometry, WindowPass, BATCHED_IMAGE, IMAGE_IN_OUT};
use super::index::{self, DimMap, DimMode};
use super::layout::{self, ImageArgs};
use super::validate::shape_string;
use super::windows::image_rows;
use super::{matmul, shader_len, validate, windows, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "volume",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/element_f32.wgsl"),
        include_str!("../../wgsl/tap_passes.wgsl"),
        include_str!("../../wgsl/volume.wgsl")
    ),
    storage_buffers: 4,
    uniform_buffers: 0,
    textures: 0,
};
/// `volume.wgsl` in f64 (SHADER_F64), for float64 convolutions.
pub const FLOAT64_SHADER: Shader = Shader {
    name: "volume_f64",
    source: concat!(
        include_str!("../../wgsl/math_f64.wgsl"),
        include_str!("../../wgsl/element_f64.wgsl"),
        include_str!("../../wgsl/tap_passes.wgsl"),
        include_str!("../../wgsl/volume.wgsl")
    ),
    storage_buffers: 4,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    batch: u32,
    c: u32,
    row_begin: u32,
    d: u32,
    h: u32,
    w: u32,
    in_off: u32,
    od: u32,
    oh: u32,
    ow: u32,
    out_off: u32,
    kd: u32,
    kh: u32,
    kw: u32,
    aux_off: u32,
    sd: u32,
    sh: u32,
    sw: u32,
    aux2_off: u32,
    dd: u32,
    dh: u32,
    dw: u32,
    /// The pass over lines (z, y) of a window or of covering windows (`line_passes`,
    /// `conv::WindowPass`): `pass_rows` from `pass_first`, and of each line `pass_columns` from
    /// `pass_first_column`; 0: all of them.
    pass_first: u32,
    pd: i32,
    ph: i32,
    pw: i32,
    pass_rows: u32,
    lhs_d: u32,
    lhs_h: u32,
    lhs_w: u32,
    pass_first_column: u32,
    pass_columns: u32,
}

/// Bytes of column matrix one launch of `columns` fills (rows are chunked to stay below).
const COLUMN_CHUNK_BYTES: u64 = 64 << 20;

/// The geometry of a 3-D window op: input [batch, d, h, w, c], windows `k` with `strides`,
/// `dilations` and leading paddings `pads`, output [batch, out..., c or out channels].
#[derive(Clone, Copy, Debug)]
struct Geometry {
    batch: i64,
    c: i64,
    input: [i64; 3],
    out: [i64; 3],
    k: [i64; 3],
    strides: [i64; 3],
    dilations: [i64; 3],
    pads: [i64; 3],
}

impl Geometry {
    fn params(&self) -> Result<Params> {
        let u = |v: i64, what: &str| {
            u32::try_from(v).map_err(|_| Error::invalid_argument(format!("{what} {v} does not fit a uint32")))
        };
        let i = |v: i64| {
            i32::try_from(v).map_err(|_| Error::invalid_argument(format!("padding {v} does not fit an int32")))
        };
        Ok(Params {
            batch: u(self.batch, "batch")?,
            c: u(self.c, "depth")?,
            d: u(self.input[0], "input size")?,
            h: u(self.input[1], "input size")?,
            w: u(self.input[2], "input size")?,
            od: u(self.out[0], "output size")?,
            oh: u(self.out[1], "output size")?,
            ow: u(self.out[2], "output size")?,
            kd: u(self.k[0], "window")?,
            kh: u(self.k[1], "window")?,
            kw: u(self.k[2], "window")?,
            sd: u(self.strides[0], "stride")?,
            sh: u(self.strides[1], "stride")?,
            sw: u(self.strides[2], "stride")?,
            dd: u(self.dilations[0], "dilation")?,
            dh: u(self.dilations[1], "dilation")?,
            dw: u(self.dilations[2], "dilation")?,
            pd: i(self.pads[0])?,
            ph: i(self.pads[1])?,
            pw: i(self.pads[2])?,
            lhs_d: 1,
            lhs_h: 1,
            lhs_w: 1,
            ..Params::default()
        })
    }

    fn output_shape(&self, channels: i64) -> Vec<i64> {
        vec![self.batch, self.out[0], self.out[1], self.out[2], channels]
    }

    /// Output pixels (rows of the column matrix) and taps of `channels` (its columns).
    fn rows(&self) -> i64 {
        self.batch * self.out.iter().product::<i64>()
    }
}

fn channels_first(kernel: &KernelInstance) -> Result<bool> {
    layout::is_channels_first(kernel.attrs.str("data_format")?)
}

/// The D, H and W entries of a 5-element NDHWC attribute list (strides, dilations, ksize), whose
/// batch and channel entries must be 1.
fn spatial(kernel: &KernelInstance, name: &str) -> Result<[i64; 3]> {
    let list = kernel.attrs.ints(name)?;
    if list.len() != 5 {
        return Err(Error::invalid_argument(format!("{name} must have 5 elements, not {}", list.len())));
    }
    if list[0] != 1 || list[4] != 1 {
        return Err(Error::invalid_argument(format!("{name} in the batch and depth dimensions must be 1: {list:?}")));
    }
    Ok([list[1], list[2], list[3]])
}

fn check_5d(t: &TensorRef, what: &str) -> Result<()> {
    if t.shape.len() != 5 {
        return Err(Error::invalid_argument(format!("{what} must be 5-dimensional{}", shape_string(&t.shape))));
    }
    Ok(())
}

/// The D, H and W (before, after) paddings of `explicit_paddings` (the generic Conv op's; Conv3D
/// and the pools have no such attribute), checked as TF checks them.
fn explicit_pads(kernel: &KernelInstance, padding: &str) -> Result<[(i64, i64); 3]> {
    let pads = kernel.attrs.ints("explicit_paddings").unwrap_or_default();
    if padding != "EXPLICIT" {
        if !pads.is_empty() {
            return Err(Error::invalid_argument(
                "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT",
            ));
        }
        return Ok([(0, 0); 3]);
    }
    if pads.len() != 10 {
        return Err(Error::invalid_argument(format!(
            "explicit_paddings attribute must contain 10 values, but got: {}",
            pads.len()
        )));
    }
    if pads.iter().any(|&p| p < 0) {
        return Err(Error::invalid_argument("All elements of explicit_paddings must be nonnegative"));
    }
    if pads[0] != 0 || pads[1] != 0 || pads[8] != 0 || pads[9] != 0 {
        return Err(Error::invalid_argument(
            "Nonzero explicit padding in the batch or depth dimensions is not supported",
        ));
    }
    Ok([(pads[2], pads[3]), (pads[4], pads[5]), (pads[6], pads[7])])
}

/// The windows of a pool or convolution over `input` [batch, d, h, w, c] with window `k`.
fn geometry(kernel: &KernelInstance, input: &[i64], k: [i64; 3], dilated: bool) -> Result<Geometry> {
    if input.len() != 5 {
        return Err(Error::invalid_argument(format!("input must be 5-dimensional{}", shape_string(input))));
    }
    let strides = spatial(kernel, "strides")?;
    let dilations = if dilated { spatial(kernel, "dilations")? } else { [1; 3] };
    let padding = kernel.attrs.str("padding")?;
    let explicit = explicit_pads(kernel, padding)?;
    let mut out = [0; 3];
    let mut pads = [0; 3];
    for axis in 0..3 {
        (out[axis], pads[axis]) =
            window(input[axis + 1], k[axis], strides[axis], dilations[axis], padding, explicit[axis])?;
    }
    Ok(Geometry {
        batch: input[0],
        c: input[4],
        input: [input[1], input[2], input[3]],
        out,
        k,
        strides,
        dilations,
        pads,
    })
}

/// The loop iterations one invocation of a window entry may run (llvmpipe counts them all, and ends
/// an invocation's loops past its cap; `nested_loop_iterations`): every window entry loops over
/// lines (z, y) and their elements (`pass_geometry`).
fn window_loops(entry: &str, p: &Params) -> Option<u64> {
    pass_geometry(entry, p).map(|g| nested_loop_iterations(&[g.rows, g.widest]))
}

/// The lines (z, y) the window entries loop over, in passes where they pass the loop cap
/// (`conv::window_passes`): of a window inside the input for the pools and
/// `max_pool_grad_grad`, the latter's last lines first (a match in an earlier line replaces
/// a later one's); of the windows covering an element for the gradients, whose passes add their
/// sums.
fn pass_geometry(entry: &str, p: &Params) -> Option<PassGeometry> {
    let inside = |k: u32, size: u32| u64::from(k.min(size));
    let covering = conv::covering_count;
    match entry {
        "max_pool" | "avg_pool" | "max_pool_grad_grad" => Some(PassGeometry {
            rows: inside(p.kd, p.d) * inside(p.kh, p.h),
            widest: inside(p.kw, p.w),
            last_first: entry == "max_pool_grad_grad",
        }),
        "max_pool_grad" | "avg_pool_grad" => Some(PassGeometry {
            rows: covering(p.kd, p.sd, p.od) * covering(p.kh, p.sh, p.oh),
            widest: covering(p.kw, p.sw, p.ow),
            last_first: false,
        }),
        _ => None,
    }
}

fn window_fits(stream: &Stream, entry: &str, p: &Params) -> bool {
    window_loops(entry, p).is_none_or(|iterations| loops_fit(stream.device(), iterations))
}

/// Encodes `entry` over `invocations`, binding `tensors` as (input, out, aux, aux2); missing ones
/// repeat the input.
fn launch(stream: &Stream, entry: &'static str, mut p: Params, tensors: &[&TensorRef], invocations: u64) -> Result<()> {
    p.n = shader_len(invocations, entry)?;
    if p.n == 0 {
        return Ok(());
    }
    let passes = line_passes(stream, entry, &p)?;
    let device = stream.device();
    let mems =
        tensors.iter().map(|t| device.memory.resolve(t.address, t.byte_len().max(4))).collect::<Result<Vec<_>>>()?;
    let dtype = tensors[0].dtype;
    let shader = if dtype == DType::F64 { &FLOAT64_SHADER } else { &SHADER };
    let pipeline = device.pipelines.get(device, shader, &PipelineSpec { entry, aliases: &[], constants: &[] })?;
    stream.encode(|core, encoder| {
        let mut bindings = Vec::with_capacity(4);
        let mut offsets = Vec::with_capacity(4);
        for mem in &mems {
            let (binding, offset) = storage_window(core, mem, dtype.size())?;
            bindings.push(binding);
            offsets.push(offset);
        }
        while bindings.len() < 4 {
            bindings.push(bindings[0]);
            offsets.push(0);
        }
        (p.in_off, p.out_off, p.aux_off, p.aux2_off) = (offsets[0], offsets[1], offsets[2], offsets[3]);
        for pass in &passes {
            let pass = Params {
                pass_first: pass.first,
                pass_rows: pass.rows,
                pass_first_column: pass.first_column,
                pass_columns: pass.columns,
                ..p
            };
            dispatch(core, encoder, entry, &pipeline, &bindings, bytemuck::bytes_of(&pass), invocations)?;
        }
        Ok(())
    })
}

/// The passes of `entry`, in the order they run.
fn line_passes(stream: &Stream, entry: &'static str, p: &Params) -> Result<Vec<WindowPass>> {
    conv::window_passes(stream.device(), entry, window_loops(entry, p), pass_geometry(entry, p))
        .map(|passes| conv::logged("volume", entry, passes))
}

/// For each chunk of the column matrix of `input` under `p` (rows `[start, start + count)`),
/// calls `f(ctx, columns, start, count)`. The chunks' buffer is `buffer`'s, made on first use:
/// the bands of one volume share it (a kernel's temporaries live until it ends).
fn for_column_chunks(
    ctx: &mut dyn KernelContext,
    p: Params,
    input: &TensorRef,
    rows: i64,
    buffer: &mut Option<TensorRef>,
    mut f: impl FnMut(&mut dyn KernelContext, &TensorRef, i64, i64) -> Result<()>,
) -> Result<()> {
    let taps = i64::from(p.kd) * i64::from(p.kh) * i64::from(p.kw) * i64::from(p.c);
    let chunk = (column_chunk_bytes(ctx)? as i64 / (input.dtype.size() as i64 * taps.max(1))).clamp(1, rows.max(1));
    let columns = match buffer {
        Some(columns) if columns.shape[0] >= chunk => columns.clone(),
        _ => buffer.insert(ctx.allocate_temp(input.dtype, &[chunk, taps])?).clone(),
    };
    let chunk = chunk.min(columns.shape[0]);
    let mut start = 0;
    while start < rows {
        let count = chunk.min(rows - start);
        let part = windows::rows(&columns, 0, count);
        let params = Params { row_begin: shader_len(start as u64, "Conv3D")?, ..p };
        launch(ctx.stream()?, "columns", params, &[input, &part], (count * taps) as u64)?;
        f(ctx, &part, start, count)?;
        start += count;
    }
    Ok(())
}

/// The most bytes of column matrix made at a time: a chunk is bound whole by the product.
fn column_chunk_bytes(ctx: &mut dyn KernelContext) -> Result<u64> {
    Ok(COLUMN_CHUNK_BYTES.min(windows::binding_limit(ctx.stream()?.device())))
}

/// Whether a 3-D window op runs in bands of planes: one volume, with a tensor past a binding.
fn needs_bands(stream: &Stream, batch: i64, tensors: &[&TensorRef]) -> bool {
    let limit = windows::binding_limit(stream.device());
    batch == 1 && tensors.iter().any(|t| t.byte_len() > limit)
}

/// Along one axis of a window op: windows `stride` apart of `k` taps `dilation` apart over an input
/// of `size` elements dilated by `lhs` (a transposed convolution's) and padded by `pad` before it.
#[derive(Clone, Copy)]
struct Axis {
    stride: i64,
    k: i64,
    dilation: i64,
    lhs: i64,
    size: i64,
    pad: i64,
}

impl Axis {
    /// The input elements that outputs `first..first + count` read (first, count) and their
    /// padding counted from the first of them; None where they all lie in the padding.
    fn band(&self, first: i64, count: i64) -> Option<((i64, i64), i64)> {
        let Axis { stride, k, dilation, lhs, size, pad } = *self;
        // The windows' first and last taps, on the input dilated by `lhs`.
        let (start, last) = (first * stride - pad, (first + count - 1) * stride - pad + (k - 1) * dilation);
        let lo = if start <= 0 { 0 } else { (start + lhs - 1) / lhs };
        let hi = last.div_euclid(lhs).min(size - 1);
        (hi >= lo).then(|| ((lo, hi - lo + 1), pad + lo * lhs - first * stride))
    }

    /// The most outputs a band may hold where `inputs` input elements fit: `count` outputs read at
    /// most ((count - 1) * stride + (k - 1) * dilation) / lhs + 2 of them.
    fn outputs_within(&self, inputs: i64) -> i64 {
        ((inputs - 2).saturating_mul(self.lhs) - (self.k - 1).saturating_mul(self.dilation)).div_euclid(self.stride) + 1
    }

    /// The most input elements one output reads.
    fn inputs_of_one(&self) -> i64 {
        (self.k - 1) * self.dilation / self.lhs + 2
    }
}

fn depth_axis(p: &Params) -> Axis {
    let [stride, k, dilation, lhs, size] = [p.sd, p.kd, p.dd, p.lhs_d, p.d].map(i64::from);
    Axis { stride, k, dilation, lhs, size, pad: p.pd.into() }
}

fn height_axis(p: &Params) -> Axis {
    let [stride, k, dilation, lhs, size] = [p.sh, p.kh, p.dh, p.lhs_h, p.h].map(i64::from);
    Axis { stride, k, dilation, lhs, size, pad: p.ph.into() }
}

/// The output planes `first..first + count` of the 3-D window op `p` (one volume) as an op of its
/// own: its parameters, whose depth padding counts from the first input plane its windows read,
/// and those input planes (first, count); None where they all lie in the padding.
fn output_band(p: &Params, first: i64, count: i64) -> Option<(Params, (i64, i64))> {
    let ((lo, planes), pd) = depth_axis(p).band(first, count)?;
    Some((Params { d: planes as u32, od: count as u32, pd: pd as i32, ..*p }, (lo, planes)))
}

/// The most output planes of `p` a band may hold where its output planes and the input planes it
/// reads each fit `limit` (`in_plane` and `out_plane` bytes a plane); below 1 where none fits.
fn planes_per_band(p: &Params, (in_plane, out_plane): (u64, u64), limit: u64) -> i64 {
    let by_input = depth_axis(p).outputs_within((limit / in_plane.max(1)) as i64);
    by_input.min((limit / out_plane.max(1)) as i64)
}

/// Bands of output planes of the 3-D window op `p` on one volume, each with the input planes it
/// reads, such that both fit `limit` (`in_plane` and `out_plane` bytes a plane): calls
/// `f(ctx, band, input planes, output planes)`, in order, with None for a band of padding only.
fn for_output_bands(
    ctx: &mut dyn KernelContext,
    p: &Params,
    (in_plane, out_plane): (u64, u64),
    mut f: impl FnMut(&mut dyn KernelContext, Option<(Params, (i64, i64))>, (i64, i64)) -> Result<()>,
) -> Result<()> {
    let limit = windows::binding_limit(ctx.stream()?.device());
    let count = planes_per_band(p, (in_plane, out_plane), limit);
    if count < 1 {
        return Err(Error::internal("a band of output planes that passes a binding (row tiles serve it)"));
    }
    let mut first = 0;
    while first < i64::from(p.od) {
        let planes = count.min(i64::from(p.od) - first);
        f(ctx, output_band(p, first, planes), (first, planes))?;
        first += planes;
    }
    Ok(())
}

/// The axis a volume's tiles cut: its rows (H) or, where one row with the rows its windows read
/// passes a binding, its columns (W), each tile of columns then cut into rows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TileAxis {
    Rows,
    Columns,
}

fn width_axis(p: &Params) -> Axis {
    let [stride, k, dilation, lhs, size] = [p.sw, p.kw, p.dw, p.lhs_w, p.w].map(i64::from);
    Axis { stride, k, dilation, lhs, size, pad: p.pw.into() }
}

/// Tiles of at most `per_tile` of `outputs` outputs along `axis`, each over the inputs its windows
/// read (a forward op, a filter gradient, a transposed convolution).
fn tiles_by_windows(axis: Axis, outputs: i64, per_tile: i64) -> Vec<ColumnTile> {
    (0..outputs)
        .step_by(per_tile.max(1) as usize)
        .map(|first| {
            let count = per_tile.min(outputs - first);
            let ((lo, read), pad) = axis.band(first, count).unwrap_or(((0, 0), 0));
            ColumnTile { image: (lo, read), windows: (first, count), written: (0, read), pad_left: pad }
        })
        .collect()
}

/// Tiles of the 3-D window op `p` on one volume whose output plane, with the input planes it
/// reads, passes a binding (`in_row` and `out_row` bytes a row of a plane): the widest tiles of
/// output rows whose plane and the input planes it reads fit, or else the widest tiles of output
/// columns whose volumes such tiles of rows serve.
fn volume_tiles(
    p: &Params,
    (in_row, out_row): (u64, u64),
    limit: u64,
    what: &str,
) -> Result<(TileAxis, Vec<ColumnTile>)> {
    let row_tiles = |p: &Params, (in_row, out_row): (u64, u64)| {
        let fits = |tile: &ColumnTile| {
            let planes = (tile.image.1.max(1) as u64 * in_row, tile.windows.1 as u64 * out_row);
            planes_per_band(&tile_params(p, TileAxis::Rows, tile), planes, limit) >= 1
        };
        column_tiles::widest_fitting(p.oh.into(), |per| tiles_by_windows(height_axis(p), p.oh.into(), per), fits)
    };
    if let Some(tiles) = row_tiles(p, (in_row, out_row)) {
        return Ok((TileAxis::Rows, tiles));
    }
    let (in_column, out_column) = (in_row / u64::from(p.w.max(1)), out_row / u64::from(p.ow.max(1)));
    let fits = |tile: &ColumnTile| {
        let rows = (tile.image.1.max(1) as u64 * in_column, tile.windows.1 as u64 * out_column);
        row_tiles(&tile_params(p, TileAxis::Columns, tile), rows).is_some()
    };
    let columns = |per| tiles_by_windows(width_axis(p), p.ow.into(), per);
    let tiles = column_tiles::widest_fitting(p.ow.into(), columns, fits).ok_or_else(|| {
        let one = out_column + in_column * (depth_axis(p).inputs_of_one() * height_axis(p).inputs_of_one()) as u64;
        Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {} bytes exceeds this adapter's max_storage_buffer_binding_size: one output \
             column of {what} and the input columns it reads",
            one * width_axis(p).inputs_of_one() as u64
        ))
    })?;
    Ok((TileAxis::Columns, tiles))
}

/// `p` for the volume of `tile` along `axis`: its inputs, its outputs, its leading padding.
fn tile_params(p: &Params, axis: TileAxis, tile: &ColumnTile) -> Params {
    let (size, out, pad) = (tile.image.1 as u32, tile.windows.1 as u32, tile.pad_left as i32);
    match axis {
        TileAxis::Rows => Params { h: size, oh: out, ph: pad, ..*p },
        TileAxis::Columns => Params { w: size, ow: out, pw: pad, ..*p },
    }
}

/// Runs a 3-D window op of one volume tile by tile (`column_tiles::run` on the volumes seen as
/// [1, d, h, w * c] for tiles of rows, whose rows a plane holds contiguously, or as
/// [1, d * h, w, c] for tiles of columns): `run_tile` gets the tile's parameters and volumes.
fn in_volume_tiles(
    ctx: &mut dyn KernelContext,
    p: &Params,
    (axis, tiles): (TileAxis, &[ColumnTile]),
    inputs: &[(&TensorRef, Side)],
    out: Option<(&TensorRef, Side)>,
    mut run_tile: impl FnMut(&mut dyn KernelContext, Params, &[TensorRef], Option<&TensorRef>) -> Result<()>,
) -> Result<()> {
    let view = |t: &TensorRef| {
        let [_, d, h, w, c] = t.shape[..] else { return t.clone() };
        let shape = if axis == TileAxis::Rows { vec![1, d, h, w * c] } else { vec![1, d * h, w, c] };
        TensorRef { shape, ..t.clone() }
    };
    let as_volume = |tile_view: &TensorRef, like: &TensorRef| {
        let mut shape = like.shape.clone();
        shape[if axis == TileAxis::Rows { 2 } else { 3 }] = tile_view.shape[2];
        TensorRef { shape, ..tile_view.clone() }
    };
    let flat: Vec<TensorRef> = inputs.iter().map(|(t, _)| view(t)).collect();
    let flat_inputs: Vec<(&TensorRef, Side)> = flat.iter().zip(inputs).map(|(f, &(_, side))| (f, side)).collect();
    let flat_out = out.map(|(t, side)| (view(t), side));
    column_tiles::run(
        ctx,
        tiles,
        &flat_inputs,
        flat_out.as_ref().map(|(t, side)| (t, *side)),
        |ctx, tile, views, target| {
            let volumes: Vec<TensorRef> = views.iter().zip(inputs).map(|(v, (t, _))| as_volume(v, t)).collect();
            let target = target.zip(out).map(|(v, (t, _))| as_volume(v, t));
            run_tile(ctx, tile_params(p, axis, tile), &volumes, target.as_ref())
        },
    )
}

/// The volume `t` as rows of its last dimension (a convolution's output rows, [pixels, channels]).
fn as_rows(t: &TensorRef) -> TensorRef {
    TensorRef { shape: vec![t.shape[..4].iter().product(), t.shape[4]], ..t.clone() }
}

/// The bytes of one row of a plane of the volume `t`.
fn row_bytes(t: &TensorRef) -> u64 {
    plane_bytes(t) / t.shape[2].max(1) as u64
}

/// `out` [rows, oc] = the column matrix of `input` under `p` times `filter` [taps, oc].
fn convolve(
    ctx: &mut dyn KernelContext,
    p: Params,
    input: &TensorRef,
    filter: &TensorRef,
    out: &TensorRef,
    buffer: &mut Option<TensorRef>,
) -> Result<()> {
    let rows = out.shape[0];
    for_column_chunks(ctx, p, input, rows, buffer, |ctx, columns, start, count| {
        matmul::product(ctx, columns, filter, &windows::rows(out, start, count), false, false)
    })
}

/// Conv3D: input [N, D, H, W, C], filter [KD, KH, KW, C, OC].
pub fn conv3d(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if channels_first(kernel)? {
        return layout::channels_last(ctx, kernel, &IMAGE_IN_OUT, conv3d);
    }
    let blocks = BlockArgs { images: &[0], filters: &[1], output: BlockOutput::Summed, ..NO_BLOCKS };
    channel_blocks::channel_blocks_on_overflow(ctx, kernel, &blocks, |ctx, kernel| {
        batch::split_batch_on_overflow(ctx, kernel, &BATCHED_IMAGE, conv3d_whole)
    })
}

fn conv3d_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let filter = ctx.input(1)?;
    let g = conv_geometry(kernel, &input.shape, &filter.shape)?;
    let oc = filter.shape[4];
    let out = ctx.allocate_output(0, input.dtype, &g.output_shape(oc))?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let taps = filter.shape[..4].iter().product::<i64>();
    if taps == 0 {
        return ctx.stream()?.fill(out.address, out.byte_len(), 0);
    }
    let flat_filter = TensorRef { shape: vec![taps, oc], ..filter };
    convolve_volume(ctx, g.params()?, (&input, &flat_filter), &out, &mut None)
}

/// `convolve` into `out` (a volume), in bands of output planes where one volume passes a binding,
/// and in tiles (`volume_tiles`) where one plane's band does.
fn convolve_volume(
    ctx: &mut dyn KernelContext,
    p: Params,
    (input, filter): (&TensorRef, &TensorRef),
    out: &TensorRef,
    columns: &mut Option<TensorRef>,
) -> Result<()> {
    let flat_out = as_rows(out);
    let stream = ctx.stream()?;
    if !needs_bands(stream, input.shape[0], &[input, out]) {
        return convolve(ctx, p, input, filter, &flat_out, columns);
    }
    let limit = windows::binding_limit(stream.device());
    if planes_per_band(&p, (plane_bytes(input), plane_bytes(out)), limit) < 1 {
        let (axis, tiles) = volume_tiles(&p, (row_bytes(input), row_bytes(out)), limit, "a 3-D convolution")?;
        let (inputs, target) = ([(input, Side::Image)], Some((out, Side::Windows)));
        return in_volume_tiles(ctx, &p, (axis, &tiles), &inputs, target, |ctx, tile, volumes, target| {
            let target = target.ok_or_else(|| Error::internal("a convolution tile without its output"))?;
            convolve_volume(ctx, tile, (&volumes[0], filter), target, columns)
        });
    }
    let pixels = i64::from(p.oh) * i64::from(p.ow);
    for_output_bands(ctx, &p, (plane_bytes(input), plane_bytes(out)), |ctx, band, (first, count)| {
        let rows = windows::rows(&flat_out, first * pixels, count * pixels);
        match band {
            Some((band, (lo, planes_read))) => {
                convolve(ctx, band, &image_rows(input, lo, planes_read), filter, &rows, columns)
            }
            None => ctx.stream()?.fill(rows.address, rows.byte_len(), 0),
        }
    })
}

/// The bytes of one plane (along dimension 1) of `t`.
fn plane_bytes(t: &TensorRef) -> u64 {
    t.byte_len() / t.shape[1].max(1) as u64
}

/// The forward geometry of a 3-D convolution, with TF's checks of the input and filter.
fn conv_geometry(kernel: &KernelInstance, input: &[i64], filter: &[i64]) -> Result<Geometry> {
    if input.len() != 5 {
        return Err(Error::invalid_argument(format!("input must be 5-dimensional{}", shape_string(input))));
    }
    if filter.len() != 5 {
        return Err(Error::invalid_argument(format!("filter must be 5-dimensional{}", shape_string(filter))));
    }
    if input[4] != filter[3] {
        return Err(Error::invalid_argument(format!(
            "Input depth must be equal to filter depth: {} vs {} (grouped 3-D convolutions are not supported)",
            input[4], filter[3]
        )));
    }
    let g = geometry(kernel, input, [filter[0], filter[1], filter[2]], true)?;
    validate::num_elements(&g.output_shape(filter[4]))?;
    Ok(g)
}

/// Conv3DBackpropInputV2 (input_sizes, filter, out_backprop).
pub fn conv3d_grad_input(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if channels_first(kernel)? {
        let images = ImageArgs { inputs: &[2], shape_inputs: &[0], outputs: &[0] };
        return layout::channels_last(ctx, kernel, &images, conv3d_grad_input);
    }
    let blocks = BlockArgs {
        filters: &[1],
        image_sizes: &[0],
        output: BlockOutput::Image,
        out_images: &[2],
        out_output: OutBlockOutput::Summed,
        ..NO_BLOCKS
    };
    channel_blocks::channel_blocks_on_overflow(ctx, kernel, &blocks, |ctx, kernel| {
        let images = BatchArgs { inputs: &[2], shape_inputs: &[0], outputs: &[0], summed_outputs: &[] };
        batch::split_batch_on_overflow(ctx, kernel, &images, conv3d_grad_input_whole)
    })
}

fn conv3d_grad_input_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let sizes = shape_input(ctx, 0, "input_sizes")?;
    let filter = ctx.input(1)?;
    let dy = ctx.input(2)?;
    let g = conv_geometry(kernel, &sizes, &filter.shape)?;
    check_gradient(&dy, &g.output_shape(filter.shape[4]))?;
    let dx = ctx.allocate_output(0, dy.dtype, &sizes)?;
    if dx.num_elements() == 0 {
        return Ok(());
    }
    let (c, oc) = (filter.shape[3], filter.shape[4]);
    let taps = filter.shape[..3].iter().product::<i64>() * oc;
    if taps == 0 || dy.num_elements() == 0 {
        return ctx.stream()?.fill(dx.address, dx.byte_len(), 0);
    }
    // dx is the convolution of dy, dilated by the strides and padded by (effective window - 1 -
    // leading padding), with the filter flipped in space and its channels swapped.
    let [kd, kh, kw] = [filter.shape[0], filter.shape[1], filter.shape[2]];
    let flipped = ctx.allocate_temp(filter.dtype, &[kd, kh, kw, oc, c])?;
    let reversed =
        |out: i64, stride: i64| DimMap { out, in_dim: out, in_stride: stride, offset: 0, mode: DimMode::Reverse };
    let direct =
        |out: i64, stride: i64| DimMap { out, in_dim: out, in_stride: stride, offset: 0, mode: DimMode::Direct };
    let dims =
        [reversed(kd, kh * kw * c * oc), reversed(kh, kw * c * oc), reversed(kw, c * oc), direct(oc, 1), direct(c, oc)];
    index::map(ctx.stream()?, &filter, &flipped, &dims, None)?;
    let mut p = Geometry { c: oc, input: g.out, out: g.input, strides: [1; 3], ..g }.params()?;
    let back_pad = |axis: usize| -> Result<i32> {
        let effective = (g.k[axis] - 1) * g.dilations[axis] + 1;
        i32::try_from(effective - 1 - g.pads[axis])
            .map_err(|_| Error::invalid_argument("padding does not fit an int32"))
    };
    (p.pd, p.ph, p.pw) = (back_pad(0)?, back_pad(1)?, back_pad(2)?);
    // `window` has checked that the strides fit an int32.
    let [sd, sh, sw] = g.strides.map(|s| s as u32);
    (p.lhs_d, p.lhs_h, p.lhs_w) = (sd, sh, sw);
    let flat_filter = TensorRef { shape: vec![taps, c], ..flipped };
    convolve_volume(ctx, p, (&dy, &flat_filter), &dx, &mut None)
}

/// Conv3DBackpropFilterV2 (input, filter_sizes, out_backprop): the column matrix of the input,
/// transposed, times the gradient, summed over chunks of its rows.
pub fn conv3d_grad_filter(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if channels_first(kernel)? {
        let images = ImageArgs { inputs: &[0, 2], shape_inputs: &[], outputs: &[] };
        return layout::channels_last(ctx, kernel, &images, conv3d_grad_filter);
    }
    let blocks =
        BlockArgs { images: &[0], filter_sizes: &[1], output: BlockOutput::Filter, out_images: &[2], ..NO_BLOCKS };
    channel_blocks::channel_blocks_on_overflow(ctx, kernel, &blocks, |ctx, kernel| {
        let images = BatchArgs { inputs: &[0, 2], shape_inputs: &[], outputs: &[], summed_outputs: &[0] };
        batch::split_batch_on_overflow(ctx, kernel, &images, conv3d_grad_filter_whole)
    })
}

fn conv3d_grad_filter_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let sizes = shape_input(ctx, 1, "filter_sizes")?;
    let dy = ctx.input(2)?;
    let g = conv_geometry(kernel, &input.shape, &sizes)?;
    let oc = sizes[4];
    check_gradient(&dy, &g.output_shape(oc))?;
    let df = ctx.allocate_output(0, dy.dtype, &sizes)?;
    if df.num_elements() == 0 {
        return Ok(());
    }
    let rows = g.rows();
    if rows == 0 || input.num_elements() == 0 {
        return ctx.stream()?.fill(df.address, df.byte_len(), 0);
    }
    let taps = sizes[..4].iter().product::<i64>();
    let flat_df = TensorRef { shape: vec![taps, oc], ..df };
    let flat_dy = TensorRef { shape: vec![rows, oc], ..dy };
    let banded = needs_bands(ctx.stream()?, g.batch, &[&input, &dy]);
    let partial = if banded || rows * taps * dy.dtype.size() as i64 > column_chunk_bytes(ctx)? as i64 {
        Some(ctx.allocate_temp(dy.dtype, &[taps, oc])?)
    } else {
        None
    };
    let mut scratch = GradFilterScratch { partial, columns: None };
    let p = g.params()?;
    if !banded {
        return sum_grad_filter(ctx, p, (&input, &flat_dy), &flat_df, &mut scratch, false);
    }
    ctx.stream()?.fill(df.address, df.byte_len(), 0)?;
    add_grad_filter_of_volume(ctx, p, (&input, &dy), &flat_df, &mut scratch)
}

/// `df` += the filter gradient of one volume past a binding: the sum over bands of dy's planes,
/// each over the input planes its windows read (over tiles, `volume_tiles`, where one plane's band
/// passes a binding).
fn add_grad_filter_of_volume(
    ctx: &mut dyn KernelContext,
    p: Params,
    (input, dy): (&TensorRef, &TensorRef),
    df: &TensorRef,
    scratch: &mut GradFilterScratch,
) -> Result<()> {
    let limit = windows::binding_limit(ctx.stream()?.device());
    if planes_per_band(&p, (plane_bytes(input), plane_bytes(dy)), limit) < 1 {
        let (axis, tiles) = volume_tiles(&p, (row_bytes(input), row_bytes(dy)), limit, "a 3-D filter gradient")?;
        let inputs = [(input, Side::Image), (dy, Side::Windows)];
        return in_volume_tiles(ctx, &p, (axis, &tiles), &inputs, None, |ctx, tile, volumes, _| {
            add_grad_filter_of_volume(ctx, tile, (&volumes[0], &volumes[1]), df, scratch)
        });
    }
    let flat_dy = as_rows(dy);
    let pixels = i64::from(p.oh) * i64::from(p.ow);
    for_output_bands(ctx, &p, (plane_bytes(input), plane_bytes(dy)), |ctx, band, (first, count)| {
        let Some((band, (lo, planes_read))) = band else { return Ok(()) };
        let dy_rows = windows::rows(&flat_dy, first * pixels, count * pixels);
        sum_grad_filter(ctx, band, (&image_rows(input, lo, planes_read), &dy_rows), df, scratch, true)
    })
}

/// The filter gradient's temporaries: the partial product added to `df` where there are several,
/// and the column matrix's chunk (`for_column_chunks`).
struct GradFilterScratch {
    partial: Option<TensorRef>,
    columns: Option<TensorRef>,
}

/// `df` (+)= the column matrix of `input` under `p`, transposed, times `dy` [rows, oc]: chunks of
/// rows after the first (or every chunk, with `accumulate`) add through the scratch's partial.
fn sum_grad_filter(
    ctx: &mut dyn KernelContext,
    p: Params,
    (input, dy): (&TensorRef, &TensorRef),
    df: &TensorRef,
    scratch: &mut GradFilterScratch,
    accumulate: bool,
) -> Result<()> {
    let partial = scratch.partial.clone();
    for_column_chunks(ctx, p, input, dy.shape[0], &mut scratch.columns, |ctx, columns, start, count| {
        let dy_rows = windows::rows(dy, start, count);
        match &partial {
            Some(sum) if start > 0 || accumulate => {
                matmul::product(ctx, columns, &dy_rows, sum, true, false)?;
                binary::launch(ctx.stream()?, BinaryOp::Add, df, sum, df)
            }
            _ => matmul::product(ctx, columns, &dy_rows, df, true, false),
        }
    })
}

/// A host-memory shape input of 5 non-negative sizes.
fn shape_input(ctx: &mut dyn KernelContext, index: usize, what: &str) -> Result<Vec<i64>> {
    let (sizes, shape) = ctx.host_input_values(index)?;
    if shape.len() != 1 || sizes.len() != 5 {
        return Err(Error::invalid_argument(format!(
            "{what} must be a vector of 5 sizes, not a tensor of shape {}",
            shape_string(&shape)
        )));
    }
    validate::num_elements(&sizes)?;
    Ok(sizes)
}

fn check_gradient(grad: &TensorRef, expected: &[i64]) -> Result<()> {
    if grad.shape != expected {
        return Err(Error::invalid_argument(format!(
            "the gradient has shape {}, but the forward op's output has shape {}",
            shape_string(&grad.shape),
            shape_string(expected)
        )));
    }
    Ok(())
}

/// MaxPool3D and AvgPool3D.
pub fn pool3d(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if channels_first(kernel)? {
        return layout::channels_last(ctx, kernel, &IMAGE_IN_OUT, pool3d);
    }
    layout::in_batches_of_images(ctx, kernel, (&IMAGE_IN_OUT, &BATCHED_IMAGE), pool3d_whole)
}

fn pool3d_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    check_5d(&input, "tensor_in")?;
    let g = geometry(kernel, &input.shape, spatial(kernel, "ksize")?, false)?;
    let out = ctx.allocate_output(0, input.dtype, &g.output_shape(g.c))?;
    let entry = if kernel.def.op == "MaxPool3D" { "max_pool" } else { "avg_pool" };
    if !window_fits(ctx.stream()?, entry, &g.params()?) {
        // A window past the loop cap: pools are separable (a maximum of maxima; an average of
        // averages, as the count of a window's elements inside the input is a product), so one
        // axis at a time.
        let mut source = input.clone();
        let mut along = Geometry { out: g.input, k: [1; 3], strides: [1; 3], pads: [0; 3], ..g };
        for axis in 0..3 {
            (along.out[axis], along.k[axis], along.strides[axis], along.pads[axis]) =
                (g.out[axis], g.k[axis], g.strides[axis], g.pads[axis]);
            let pooled =
                if axis == 2 { out.clone() } else { ctx.allocate_temp(input.dtype, &along.output_shape(g.c))? };
            pool3d_any_size(ctx, entry, along.params()?, &source, &pooled)?;
            // The next axis pools this one's output.
            along.input[axis] = g.out[axis];
            (along.k[axis], along.strides[axis], along.pads[axis]) = (1, 1, 0);
            source = pooled;
        }
        return Ok(());
    }
    pool3d_any_size(ctx, entry, g.params()?, &input, &out)
}

/// MaxPool3D or AvgPool3D (`entry`) of `p` from `input` into `out`; one volume past a binding in
/// bands of output planes, and in tiles (`volume_tiles`) where one plane's band passes a binding.
fn pool3d_any_size(
    ctx: &mut dyn KernelContext,
    entry: &'static str,
    p: Params,
    input: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let stream = ctx.stream()?;
    if !needs_bands(stream, i64::from(p.batch), &[input, out]) {
        return launch(stream, entry, p, &[input, out], out.num_elements());
    }
    let limit = windows::binding_limit(stream.device());
    if planes_per_band(&p, (plane_bytes(input), plane_bytes(out)), limit) < 1 {
        let (axis, tiles) = volume_tiles(&p, (row_bytes(input), row_bytes(out)), limit, "a 3-D pool")?;
        let (inputs, target) = ([(input, Side::Image)], Some((out, Side::Windows)));
        return in_volume_tiles(ctx, &p, (axis, &tiles), &inputs, target, |ctx, tile, volumes, target| {
            let target = target.ok_or_else(|| Error::internal("a pool tile without its output"))?;
            pool3d_any_size(ctx, entry, tile, &volumes[0], target)
        });
    }
    for_output_bands(ctx, &p, (plane_bytes(input), plane_bytes(out)), |ctx, band, (first, count)| {
        // Not None: a pool's padding is smaller than its window.
        let (band, (lo, planes_read)) = band.ok_or_else(|| Error::internal("a pool window of padding only"))?;
        let out = image_rows(out, first, count);
        launch(ctx.stream()?, entry, band, &[&image_rows(input, lo, planes_read), &out], out.num_elements())
    })
}

/// MaxPool3DGrad (orig_input, orig_output, grad), AvgPool3DGrad (orig_input_shape, grad) and
/// MaxPool3DGradGrad (orig_input, orig_output, grad shaped like the input).
pub fn pool3d_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = kernel.def.op;
    let average = op == "AvgPool3DGrad";
    let images = if average {
        ImageArgs { inputs: &[1], shape_inputs: &[0], outputs: &[0] }
    } else {
        ImageArgs { inputs: &[0, 1, 2], shape_inputs: &[], outputs: &[0] }
    };
    if channels_first(kernel)? {
        return layout::channels_last(ctx, kernel, &images, pool3d_grad);
    }
    let batched = if average {
        BatchArgs { inputs: &[1], shape_inputs: &[0], outputs: &[0], summed_outputs: &[] }
    } else {
        BatchArgs { inputs: &[0, 1, 2], shape_inputs: &[], outputs: &[0], summed_outputs: &[] }
    };
    layout::in_batches_of_images(ctx, kernel, (&images, &batched), pool3d_grad_whole)
}

fn pool3d_grad_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = kernel.def.op;
    let average = op == "AvgPool3DGrad";
    let ksize = spatial(kernel, "ksize")?;
    if average {
        let shape = shape_input(ctx, 0, "orig_input_shape")?;
        let dy = ctx.input(1)?;
        let g = geometry(kernel, &shape, ksize, false)?;
        check_gradient(&dy, &g.output_shape(g.c))?;
        let dx = ctx.allocate_output(0, dy.dtype, &shape)?;
        return pool_grad_any_size(ctx, g.params()?, (None, &dy, None), &dx);
    }
    let x = ctx.input(0)?;
    let y = ctx.input(1)?;
    let grad = ctx.input(2)?;
    for (t, what) in [(&x, "tensor_in"), (&y, "tensor_out"), (&grad, "out_backprop")] {
        check_5d(t, what)?;
    }
    let g = geometry(kernel, &x.shape, ksize, false)?;
    let pooled = g.output_shape(g.c);
    if y.shape != pooled {
        return Err(Error::invalid_argument(format!(
            "tensor_out has shape {}, but the pool's output has shape {}",
            shape_string(&y.shape),
            shape_string(&pooled)
        )));
    }
    if op == "MaxPool3DGrad" {
        check_gradient(&grad, &pooled)?;
        let dx = ctx.allocate_output(0, grad.dtype, &x.shape)?;
        return pool_grad_any_size(ctx, g.params()?, (Some(&x), &grad, Some(&y)), &dx);
    }
    // TF's kernels read the first element of each; an empty one is refused.
    for (t, what) in [(&x, "tensor_in"), (&y, "tensor_out"), (&grad, "out_grad_backprop")] {
        if t.num_elements() == 0 {
            return Err(Error::invalid_argument(format!("received empty tensor {what}: {}", shape_string(&t.shape))));
        }
    }
    if grad.shape != x.shape {
        return Err(Error::invalid_argument(format!(
            "tensor_in and out_grad_backprop must have the same shape: {} vs {}",
            shape_string(&x.shape),
            shape_string(&grad.shape)
        )));
    }
    let out = ctx.allocate_output(0, grad.dtype, &pooled)?;
    max_pool_grad_grad_any_size(ctx, g.params()?, (&x, &grad, &y), &out)
}

/// MaxPool3DGradGrad of `p` (x and grad on the input's side, the pool's output y on the
/// output's); one volume past a binding in bands of output planes, and in tiles (`volume_tiles`)
/// where one plane's band passes a binding.
fn max_pool_grad_grad_any_size(
    ctx: &mut dyn KernelContext,
    p: Params,
    (x, grad, y): (&TensorRef, &TensorRef, &TensorRef),
    out: &TensorRef,
) -> Result<()> {
    let stream = ctx.stream()?;
    if !needs_bands(stream, i64::from(p.batch), &[x, y, grad, out]) {
        return launch(stream, "max_pool_grad_grad", p, &[x, out, grad, y], out.num_elements());
    }
    let limit = windows::binding_limit(stream.device());
    if planes_per_band(&p, (plane_bytes(x), plane_bytes(out)), limit) < 1 {
        let (axis, tiles) = volume_tiles(&p, (row_bytes(x), row_bytes(out)), limit, "a 3-D pool")?;
        let inputs = [(x, Side::Image), (grad, Side::Image), (y, Side::Windows)];
        return in_volume_tiles(
            ctx,
            &p,
            (axis, &tiles),
            &inputs,
            Some((out, Side::Windows)),
            |ctx, tile, volumes, target| {
                let target = target.ok_or_else(|| Error::internal("a pool tile without its output"))?;
                max_pool_grad_grad_any_size(ctx, tile, (&volumes[0], &volumes[1], &volumes[2]), target)
            },
        );
    }
    for_output_bands(ctx, &p, (plane_bytes(x), plane_bytes(out)), |ctx, band, (first, count)| {
        let (band, (lo, planes_read)) = band.ok_or_else(|| Error::internal("a pool window of padding only"))?;
        let (x, grad) = (image_rows(x, lo, planes_read), image_rows(grad, lo, planes_read));
        let (y, out) = (image_rows(y, first, count), image_rows(out, first, count));
        launch(ctx.stream()?, "max_pool_grad_grad", band, &[&x, &out, &grad, &y], out.num_elements())
    })
}

/// MaxPool3DGrad (`x` and the pool's output `y` given) or AvgPool3DGrad of `p` into `dx`; one
/// volume past a binding in bands of dx's planes (`pool_grad_in_bands`), and in tiles of dx's
/// rows (or columns, each cut into rows) where one plane's band passes a binding: each tile sees
/// every row of the windows reaching into it (a window's maximum and its count inside the volume
/// need them all) and writes its own.
fn pool_grad_any_size(
    ctx: &mut dyn KernelContext,
    p: Params,
    (x, grad, y): (Option<&TensorRef>, &TensorRef, Option<&TensorRef>),
    dx: &TensorRef,
) -> Result<()> {
    let stream = ctx.stream()?;
    let entry = if x.is_some() { "max_pool_grad" } else { "avg_pool_grad" };
    let tensors: Vec<&TensorRef> = match (x, y) {
        (Some(x), Some(y)) => vec![x, dx, grad, y],
        _ => vec![grad, dx],
    };
    if !needs_bands(stream, i64::from(p.batch), &tensors) {
        return launch(stream, entry, p, &tensors, dx.num_elements());
    }
    let limit = windows::binding_limit(stream.device());
    let kd = i64::from(p.kd);
    let planes_fit = |dx_plane: u64, grad_plane: u64| (limit / dx_plane.max(grad_plane).max(1)) as i64 - kd >= 1;
    if planes_fit(plane_bytes(dx), plane_bytes(grad)) {
        return pool_grad_in_bands(stream, p, (x, grad, y), dx);
    }
    // Tiles of rows whose planes' bands fit, or else tiles of columns whose volumes such tiles of
    // rows serve; each sees every row (column) of the windows reaching into it.
    let row_tiles = |p: &Params, (dx_row, grad_row): (u64, u64)| {
        let [h, sh, kh, oh] = [p.h, p.sh, p.kh, p.oh].map(i64::from);
        let tiles_of = |per_tile| column_tiles::by_image(h, per_tile, (sh, p.ph.into(), kh), oh, true);
        let fits = |tile: &ColumnTile| planes_fit(tile.image.1 as u64 * dx_row, tile.windows.1 as u64 * grad_row);
        column_tiles::widest_fitting(h, tiles_of, fits)
    };
    let rows = (row_bytes(dx), row_bytes(grad));
    let tiles = match row_tiles(&p, rows) {
        Some(tiles) => Some((TileAxis::Rows, tiles)),
        None => {
            let [w, sw, kw, ow] = [p.w, p.sw, p.kw, p.ow].map(i64::from);
            let columns = (rows.0 / w.max(1) as u64, rows.1 / ow.max(1) as u64);
            let tiles_of = |per_tile| column_tiles::by_image(w, per_tile, (sw, p.pw.into(), kw), ow, true);
            let fits = |tile: &ColumnTile| {
                let tile_rows = (tile.image.1 as u64 * columns.0, tile.windows.1 as u64 * columns.1);
                row_tiles(&tile_params(&p, TileAxis::Columns, tile), tile_rows).is_some()
            };
            column_tiles::widest_fitting(w, tiles_of, fits).map(|tiles| (TileAxis::Columns, tiles))
        }
    };
    let (axis, tiles) = tiles.ok_or_else(|| {
        Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {} bytes exceeds this adapter's max_storage_buffer_binding_size: the columns of \
             one column of a 3-D pool gradient",
            [p.kd, p.kh, p.kw].iter().map(|&k| u64::from(k) + 1).product::<u64>()
                * (rows.0 / u64::from(p.w.max(1))).max(rows.1 / u64::from(p.ow.max(1)))
        ))
    })?;
    // Rows no window covers (strides past the window) are in no tile's written rows.
    stream.fill(dx.address, dx.byte_len(), 0)?;
    let mut inputs = vec![(grad, Side::Windows)];
    if let (Some(x), Some(y)) = (x, y) {
        inputs = vec![(x, Side::Image), (grad, Side::Windows), (y, Side::Windows)];
    }
    in_volume_tiles(ctx, &p, (axis, &tiles), &inputs, Some((dx, Side::Image)), |ctx, tile, volumes, target| {
        let target = target.ok_or_else(|| Error::internal("a pool gradient tile without its output"))?;
        match volumes {
            [x, grad, y] => pool_grad_any_size(ctx, tile, (Some(x), grad, Some(y)), target),
            [grad] => pool_grad_any_size(ctx, tile, (None, grad, None), target),
            _ => Err(Error::internal("a pool gradient tile of other inputs")),
        }
    })
}

/// MaxPool3DGrad (`x` and the pool's output `y` given) or AvgPool3DGrad of one volume past a
/// binding: bands of dx's planes, the last band first. Each element gathers from the windows that
/// cover it, so a band's planes `first..end` read windows `oa..ob`, which start at input plane
/// `s <= first` (or in the padding): the band counts planes from `s`, so that every window keeps
/// its count of elements inside the volume, and writes dx's planes `s..end`. Planes `s..first`
/// take only some of their windows; the band above, run after it, writes them whole.
fn pool_grad_in_bands(
    stream: &Stream,
    p: Params,
    (x, grad, y): (Option<&TensorRef>, &TensorRef, Option<&TensorRef>),
    dx: &TensorRef,
) -> Result<()> {
    let limit = windows::binding_limit(stream.device());
    let [sd, kd, d, od] = [p.sd, p.kd, p.d, p.od].map(i64::from);
    let pd = i64::from(p.pd);
    // A band of `planes` dx planes spans at most planes + kd frame planes and planes + kd windows
    // (`pool_grad_any_size` has checked that one plane does).
    let planes_per_band = (limit / plane_bytes(dx).max(plane_bytes(grad)).max(1)) as i64 - kd;
    for band in windows::gather_bands(d, planes_per_band, (kd, sd, pd, od)) {
        if let Some((first, count)) = band.zeros {
            let zeros = image_rows(dx, first, count);
            stream.fill(zeros.address, zeros.byte_len(), 0)?;
        }
        let Some((oa, ob, s)) = band.windows else { continue };
        let end = band.end;
        let band = Params { d: (d - s) as u32, od: (ob - oa) as u32, pd: (pd + s - oa * sd) as i32, ..p };
        let written = image_rows(dx, s, end - s);
        let covering = image_rows(grad, oa, ob - oa);
        match (x, y) {
            (Some(x), Some(y)) => {
                let tensors = [&image_rows(x, s, end - s), &written, &covering, &image_rows(y, oa, ob - oa)];
                launch(stream, "max_pool_grad", band, &tensors, written.num_elements())?;
            }
            _ => launch(stream, "avg_pool_grad", band, &[&covering, &written], written.num_elements())?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_band_of_outputs_reads_the_inputs_of_its_windows() {
        // Windows of 3 at stride 2, one element of padding before 10 inputs: 5 outputs.
        let axis = Axis { stride: 2, k: 3, dilation: 1, lhs: 1, size: 10, pad: 1 };
        // Outputs 0, 1 read -1..3: inputs 0..3, padding 1 kept.
        assert_eq!(axis.band(0, 2), Some(((0, 4), 1)));
        // Outputs 2..4 read 3..9.
        assert_eq!(axis.band(2, 3), Some(((3, 7), 0)));
        // The input of a transposed convolution dilated by 2 (1 zero between its elements): the
        // windows of outputs 3, 4 read dilated positions 3..6, which hold inputs 2 (at 4) and 3
        // (at 6); the band's padding puts position 3 one before input 2.
        let dilated = Axis { stride: 1, k: 3, dilation: 1, lhs: 2, size: 5, pad: 0 };
        assert_eq!(dilated.band(3, 2), Some(((2, 2), 1)));
        // Windows in the padding only.
        let padded = Axis { stride: 1, k: 2, dilation: 1, lhs: 1, size: 3, pad: 4 };
        assert_eq!(padded.band(0, 2), None);
        // One output reads at most (k - 1) * dilation / lhs + 2 inputs; 6 inputs hold 2 outputs.
        assert_eq!(axis.inputs_of_one(), 4);
        assert_eq!(axis.outputs_within(6), 2);
    }

    #[test]
    fn row_tiles_are_the_widest_whose_planes_fit() {
        let p = Geometry {
            batch: 1,
            c: 4,
            input: [4, 18, 9],
            out: [4, 9, 9],
            k: [3; 3],
            strides: [1, 2, 1],
            dilations: [1; 3],
            pads: [1; 3],
        }
        .params()
        .unwrap();
        let row = 9 * 4 * 4;
        // A binding of 40 rows: a band of one output plane reads up to 4 planes (up to 10 rows
        // each), so a tile reads at most 10 rows; r output rows at stride 2 read 2r + 1. From 9
        // rows, halving: tiles of 4 output rows.
        let (axis, tiles) = volume_tiles(&p, (row, row), 40 * row, "a test").unwrap();
        assert_eq!(axis, TileAxis::Rows);
        assert_eq!(tiles.iter().map(|t| t.windows).collect::<Vec<_>>(), [(0, 4), (4, 4), (8, 1)]);
        assert_eq!(tiles[1].image, (7, 9));
        let covered: i64 = tiles.iter().map(|t| t.windows.1).sum();
        assert_eq!(covered, 9);
        for tile in &tiles {
            let tp = tile_params(&p, TileAxis::Rows, tile);
            assert!(planes_per_band(&tp, (tile.image.1 as u64 * row, tile.windows.1 as u64 * row), 40 * row) >= 1);
        }
        // Not even one output row's planes fit: tiles of columns, each cut into rows.
        let (axis, tiles) = volume_tiles(&p, (row, row), 10 * row, "a test").unwrap();
        assert_eq!(axis, TileAxis::Columns);
        assert!(tiles.len() > 1 && tiles.iter().map(|t| t.windows.1).sum::<i64>() == 9);
        // Not one output column's: refused, saying so.
        let err = volume_tiles(&p, (row, row), row / 4, "a test").unwrap_err();
        assert!(err.to_string().contains("one output column of a test"), "{err}");
    }
}
