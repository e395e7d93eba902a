//! NHWC spatial ops (`wgsl/conv.wgsl`): Conv2D, DepthwiseConv2dNative, MaxPool, AvgPool and
//! FusedBatchNormV3 in inference mode.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::runtime::device::KernelProfile;
use crate::runtime::memory::DeviceSlice;
use crate::runtime::pipeline::{
    check_loop_iterations, dispatch, dispatch_with_texels, loop_budget, loops_fit, nested_loop_iterations,
    storage_window, Binding, Pipeline, PipelineSpec, Shader, BINDING_LIMIT_ERROR,
};
use crate::runtime::scratch::{texels_pay_off, TEXELS_A, TEXELS_B};
use crate::runtime::{DeviceCore, Stream};

use super::batch::{self, BatchArgs};
use super::binary::BinaryOp;
use super::channel_blocks::{self, BlockArgs, BlockOutput, OutBlockOutput, NO_BLOCKS};
use super::column_tiles::{self, ColumnTile, Side};
use super::im2col::{self, Im2col};
use super::index::{self, DimMap, DimMode};
use super::layout::{self, ImageArgs};
use super::matmul_gpu;
use super::scatter::{self, Combine};
use super::windows::image_rows;
use super::windows::{self, binding_limit};
use super::{fast_div, shader_len, validate, AttrValue, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "conv",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/element_f32.wgsl"),
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/tap_passes.wgsl"),
        include_str!("../../wgsl/conv.wgsl"),
        include_str!("../../wgsl/conv_loads.wgsl")
    ),
    storage_buffers: 6,
    uniform_buffers: 0,
    textures: 0,
};
/// `conv.wgsl` in f64 (SHADER_F64), for the float64 pools and their gradients.
pub const FLOAT64_SHADER: Shader = Shader {
    name: "conv_f64",
    source: concat!(
        include_str!("../../wgsl/math_f64.wgsl"),
        include_str!("../../wgsl/element_f64.wgsl"),
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/tap_passes.wgsl"),
        include_str!("../../wgsl/conv.wgsl"),
        include_str!("../../wgsl/conv_loads.wgsl")
    ),
    storage_buffers: 6,
    uniform_buffers: 0,
    textures: 0,
};

/// `conv.wgsl` in f32 with `conv2d_grad_filter_rows` reading its input and dy from textures
/// (`conv_loads_texels.wgsl`), for CPU adapters; the textures bind after the parameter block.
pub const TEXELS_SHADER: Shader = Shader {
    name: "conv texels",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/element_f32.wgsl"),
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/tap_passes.wgsl"),
        include_str!("../../wgsl/conv.wgsl"),
        include_str!("../../wgsl/conv_loads_texels.wgsl")
    ),
    storage_buffers: 6,
    uniform_buffers: 0,
    textures: 2,
};

/// The pipeline of `conv.wgsl`'s `entry`, specialised on whether `quot` may divide through f32:
/// every index its entries split (an invocation, an element of the input, output or filter, an
/// output pixel, or a filter element of a slice) is below 2^23.
fn conv_pipeline(
    device: &DeviceCore,
    entry: &'static str,
    p: &Params,
    invocations: u64,
    dtype: DType,
) -> Result<Arc<Pipeline>> {
    let shader = if dtype == DType::F64 { &FLOAT64_SHADER } else { &SHADER };
    conv_pipeline_in(device, shader, entry, p, invocations)
}

/// `conv_pipeline` of `shader` (one of `conv.wgsl`'s).
fn conv_pipeline_in(
    device: &DeviceCore,
    shader: &Shader,
    entry: &'static str,
    p: &Params,
    invocations: u64,
) -> Result<Arc<Pipeline>> {
    let pixels = |h: u32, w: u32| u64::from(p.batch) * u64::from(h) * u64::from(w);
    let largest = [
        invocations,
        u64::from(p.n) * u64::from(p.slices.max(1)),
        pixels(p.h, p.w) * u64::from(p.c),
        pixels(p.oh, p.ow) * u64::from(p.oc),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    let mut constants = vec![fast_div(largest.min(u32::MAX.into()) as u32)];
    if entry.ends_with("_rows") {
        // The window's columns, so that the loops over taps unroll (`row_columns_fit`).
        constants.extend([("ROW_KW", p.kw), ("ROW_SW", p.sw), ("ROW_DW", p.dw)].map(|(n, v)| (n, f64::from(v))));
    }
    if entry == "depthwise_grad_input_rows" {
        constants.push(("ROW_PHASE", f64::from(p.pad_left % p.sw.max(1))));
    }
    if entry == "conv2d_grad_filter_rows" {
        constants.push(("OC_QUADS", f64::from(output_quads_per_invocation(p))));
    }
    device.pipelines.get(device, shader, &PipelineSpec { entry, aliases: &[], constants: &constants })
}

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    batch: u32,
    h: u32,
    w: u32,
    c: u32,
    oh: u32,
    ow: u32,
    oc: u32,
    kh: u32,
    kw: u32,
    sh: u32,
    sw: u32,
    dh: u32,
    dw: u32,
    pad_top: u32,
    pad_left: u32,
    fc: u32,
    in_off: u32,
    f_off: u32,
    out_off: u32,
    offset_off: u32,
    mean_off: u32,
    var_off: u32,
    epsilon: f32,
    slices: u32,
    slice_len: u32,
    /// The taps a pass runs (`row_passes`, `WindowPass`).
    pass_first: u32,
    pass_rows: u32,
    pass_first_column: u32,
    pass_columns: u32,
}

/// The largest window, stride, dilation and padded extent the kernels accept: TF reads these
/// attributes as int32, and the shaders index with i32 and u32.
const MAX_WINDOW: i64 = i32::MAX as i64;

/// TF's windowed output size and leading padding for one spatial dimension
/// (`GetWindowedOutputSizeVerbose`).
pub fn window(
    input: i64,
    kernel: i64,
    stride: i64,
    dilation: i64,
    padding: &str,
    explicit: (i64, i64),
) -> Result<(i64, i64)> {
    if stride <= 0 || dilation <= 0 || kernel <= 0 {
        return Err(Error::invalid_argument(format!(
            "strides, dilations and window sizes must be positive: stride {stride}, dilation {dilation}, window {kernel}"
        )));
    }
    if [input, kernel, stride, dilation, explicit.0, explicit.1].iter().any(|&v| v > MAX_WINDOW) {
        return Err(Error::invalid_argument(format!(
            "window, stride, dilation, padding and input sizes must fit an int32: input {input}, window {kernel}, \
             stride {stride}, dilation {dilation}, padding {explicit:?}"
        )));
    }
    let effective = (kernel - 1) * dilation + 1;
    let (out, before, after) = match padding {
        // TF's shape function refuses a window larger than a VALID input (its kernels would
        // round the negative size up to 0; TF-CPU's oneDNN one then returns garbage).
        "VALID" if input < effective => {
            return Err(Error::invalid_argument(format!(
                "Negative dimension size caused by subtracting {effective} from {input}"
            )))
        }
        "VALID" => ((input - effective + stride) / stride, 0, 0),
        "SAME" => {
            let out = (input + stride - 1) / stride;
            let total = ((out - 1) * stride + effective - input).max(0);
            (out, total / 2, total - total / 2)
        }
        "EXPLICIT" if input + explicit.0 + explicit.1 < effective => {
            return Err(Error::invalid_argument(format!(
                "Negative dimension size caused by subtracting {effective} from {}",
                input + explicit.0 + explicit.1
            )))
        }
        "EXPLICIT" => ((input + explicit.0 + explicit.1 - effective + stride) / stride, explicit.0, explicit.1),
        other => return Err(Error::invalid_argument(format!("Unknown padding type: {other}"))),
    };
    if out < 0 {
        return Err(Error::invalid_argument(format!(
            "Computed output size would be negative: {out} [input_size: {input}, effective_filter_size: {effective}, stride: {stride}]"
        )));
    }
    // Window positions and padded coordinates are i32 in the shaders.
    if effective > MAX_WINDOW || input + before + after > MAX_WINDOW || out.max(1) * stride > MAX_WINDOW {
        return Err(Error::invalid_argument(format!(
            "the padded input ({input} + {before} + {after}), the effective window ({effective}) or the output's \
             extent ({out} x stride {stride}) does not fit an int32"
        )));
    }
    Ok((out, before))
}

/// Whether the node is channels-first (NCHW), which the entry points serve through
/// `layout::channels_last`.
pub fn channels_first(kernel: &KernelInstance) -> Result<bool> {
    layout::is_channels_first(kernel.attrs.str("data_format")?)
}

/// One image in, one out: convolutions, pools, batch norm.
pub const IMAGE_IN_OUT: ImageArgs = ImageArgs { inputs: &[0], shape_inputs: &[], outputs: &[0] };
/// The same, as batches (`batch::split_batch_on_overflow`).
pub const BATCHED_IMAGE: BatchArgs = BatchArgs { inputs: &[0], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };

/// Reads a 4-element NHWC attribute list's H and W entries (strides, dilations, ksize).
fn hw(kernel: &KernelInstance, name: &str) -> Result<(i64, i64)> {
    let list = kernel.attrs.ints(name)?;
    if list.len() != 4 || list[0] != 1 || list[3] != 1 {
        return Err(Error::invalid_argument(format!(
            "{name} must have 4 elements with 1 in the batch and depth dims: {list:?}"
        )));
    }
    Ok((list[1], list[2]))
}

/// The H and W paddings of `explicit_paddings`, checked as TF's `CheckValidPadding` does. Ops
/// without the attribute (AvgPool) read as an empty list.
fn explicit_pads(kernel: &KernelInstance, padding: &str) -> Result<[(i64, i64); 2]> {
    let pads = kernel.attrs.ints("explicit_paddings").unwrap_or_default();
    if padding != "EXPLICIT" {
        if !pads.is_empty() {
            return Err(Error::invalid_argument(
                "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT",
            ));
        }
        return Ok([(0, 0), (0, 0)]);
    }
    if pads.len() != 8 {
        return Err(Error::invalid_argument(format!(
            "explicit_paddings attribute must contain 8 values, but got: {}",
            pads.len()
        )));
    }
    if pads.iter().any(|&p| p < 0) {
        return Err(Error::invalid_argument("All elements of explicit_paddings must be nonnegative"));
    }
    if pads[0] != 0 || pads[1] != 0 || pads[6] != 0 || pads[7] != 0 {
        return Err(Error::invalid_argument(
            "Nonzero explicit padding in the batch or depth dimensions is not supported",
        ));
    }
    Ok([(pads[2], pads[3]), (pads[4], pads[5])])
}

/// The loop iterations one invocation of a window kernel may run (llvmpipe counts them all, and
/// ends an invocation's loops past its cap; `nested_loop_iterations`): convolutions loop over the
/// rows of taps, each row's taps, and each tap's channels; pools over the rows of a window inside
/// the input and their taps; pool gradients over the rows of windows covering an element and
/// their windows. (Filter gradients split their pixels; the other entries do not loop over
/// windows.)
fn window_loops(entry: &str, p: &Params) -> Option<u64> {
    let (kh, kw) = (u64::from(p.kh), u64::from(p.kw));
    let window = [u64::from(p.kh.min(p.h)), u64::from(p.kw.min(p.w))];
    let covering = [covering_count(p.kh, p.sh, p.oh), covering_count(p.kw, p.sw, p.ow)];
    let trips = match entry {
        // Depthwise windows loop over their taps (the input gradient over each tap's multiplier).
        "depthwise" | "depthwise_c4" | "depthwise_grad_input_c4" | "depthwise_rows" | "depthwise_grad_input_rows" => {
            vec![kh, kw]
        }
        "depthwise_grad_input" => vec![kh, kw, u64::from(p.fc)],
        e if e.starts_with("conv2d") && !e.contains("grad_filter") => vec![kh, kw, u64::from(p.c.max(p.oc).max(p.fc))],
        "max_pool"
        | "avg_pool"
        | "max_pool_c4"
        | "avg_pool_c4"
        | "max_pool_argmax"
        | "max_pool_grad_windows"
        | "max_pool_grad_grad"
        | "max_pool_grad_argmax" => window.to_vec(),
        "max_pool_grad_routed" | "avg_pool_grad" => covering.to_vec(),
        _ => return None,
    };
    Some(nested_loop_iterations(&trips))
}

/// How the pool entries that loop over a window's rows (or over the rows of the windows covering
/// an element) split them into passes whose loops fit the cap. The shaders resume a pass from the
/// ones before (`wgsl/tap_passes.wgsl`): a pool from the maximum or sum in its output, an argmax
/// from the index it keeps, a gradient's sum added to dx,
/// MaxPoolGradGrad's first match, which an earlier row's match in a later pass replaces.
fn pass_geometry(entry: &str, p: &Params) -> Option<PassGeometry> {
    let (rows, widest) = (u64::from(p.kh.min(p.h)), u64::from(p.kw.min(p.w)));
    match entry {
        "max_pool"
        | "avg_pool"
        | "max_pool_c4"
        | "avg_pool_c4"
        | "max_pool_argmax"
        | "max_pool_grad_argmax"
        | "max_pool_grad_grad" => Some(PassGeometry { rows, widest, last_first: entry == "max_pool_grad_grad" }),
        "max_pool_grad_routed" | "avg_pool_grad" => Some(PassGeometry {
            rows: covering_count(p.kh, p.sh, p.oh),
            widest: covering_count(p.kw, p.sw, p.ow),
            last_first: false,
        }),
        _ => None,
    }
}

/// The rows of taps (or of covering windows) an entry that runs in passes loops over.
#[derive(Clone, Copy)]
pub(super) struct PassGeometry {
    pub rows: u64,
    /// The taps of the widest row.
    pub widest: u64,
    /// Whether the passes run the last rows first.
    pub last_first: bool,
}

/// The most pooling windows (size k, no dilation) over one element along a dimension of `outputs`
/// windows.
pub(super) fn covering_count(k: u32, stride: u32, outputs: u32) -> u64 {
    u64::from(k.div_ceil(stride.max(1)).min(outputs))
}

/// The loop iterations a pass keeps for its other loops (of trees and slices).
const PASS_OVERHEAD: u64 = 16;

/// One pass of a window entry past the loop cap: `rows` rows of the window (or of the windows
/// covering an element) from `first`, and of each row `columns` taps from `first_column`; a count
/// of 0 runs them all. Both count from each invocation's own first row and tap
/// (`wgsl/tap_passes.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WindowPass {
    pub first: u32,
    pub rows: u32,
    pub first_column: u32,
    pub columns: u32,
}

impl WindowPass {
    /// The one pass of an entry whose loops fit the cap.
    pub const WHOLE: WindowPass = WindowPass { first: 0, rows: 0, first_column: 0, columns: 0 };
}

fn row_passes(device: &DeviceCore, entry: &'static str, p: &Params) -> Result<Vec<WindowPass>> {
    window_passes(device, entry, window_loops(entry, p), pass_geometry(entry, p))
        .map(|passes| logged("conv", entry, passes))
}

/// `passes`, logged (debug) where they split `family`'s `entry`: tests check that the splits ran.
pub(super) fn logged(family: &str, entry: &str, passes: Vec<WindowPass>) -> Vec<WindowPass> {
    if passes.len() > 1 {
        let unit = if passes[0].columns == 0 { "rows" } else { "taps" };
        log::debug!("{family} {entry}: {} passes of {unit}", passes.len());
    }
    passes
}

/// The passes of an entry, in the order they run, from its loop iterations and, where it runs in
/// passes, its `geometry`: one pass of every tap where its loops fit the adapter's cap, otherwise
/// passes of as many rows as fit (`passes_of_rows`). An entry past the cap that cannot run in
/// passes is refused.
pub(super) fn window_passes(
    device: &DeviceCore,
    entry: &str,
    iterations: Option<u64>,
    geometry: Option<PassGeometry>,
) -> Result<Vec<WindowPass>> {
    let Some(g) = geometry else {
        if let Some(iterations) = iterations {
            check_loop_iterations(device, iterations, entry)?;
        }
        return Ok(vec![WindowPass::WHOLE]);
    };
    // Decided from the passes' own count, so that a window that runs as one pass fits as one.
    if loops_fit(device, nested_loop_iterations(&[g.rows, g.widest]).saturating_add(PASS_OVERHEAD)) {
        return Ok(vec![WindowPass::WHOLE]);
    }
    passes_of_rows(device, entry, g)
}

/// Passes of `g.rows` rows of at most `g.widest` taps, each within the adapter's loop cap: llvmpipe
/// counts every iteration of an invocation's loops (a SIMD group's, where its invocations' loops
/// differ), each row's taps and its own exit, and the loop over rows
/// (`nested_loop_iterations`), with `PASS_OVERHEAD` kept. Rows of more taps than that run one at a
/// time, in passes of as many of their taps as fit, in row-major order.
fn passes_of_rows(device: &DeviceCore, entry: &str, g: PassGeometry) -> Result<Vec<WindowPass>> {
    // The least a pass loops: one row of one tap.
    check_loop_iterations(device, nested_loop_iterations(&[1, 1]) + PASS_OVERHEAD, entry)?;
    // Per pass: a row's taps and its exit, its pass through the rows' loop, and that loop's exit.
    let budget = loop_budget(device, PASS_OVERHEAD + 1);
    let cap = u64::from(u32::MAX) / 2;
    let mut passes: Vec<WindowPass> = if g.widest + 2 <= budget {
        let per_pass = (budget / (g.widest + 2)).clamp(1, cap);
        (0..g.rows.div_ceil(per_pass))
            .map(|pass| {
                Ok(WindowPass {
                    first: shader_len(pass * per_pass, entry)?,
                    rows: per_pass as u32,
                    ..WindowPass::WHOLE
                })
            })
            .collect::<Result<_>>()?
    } else {
        let columns = (budget - 2).clamp(1, cap);
        let mut passes = Vec::new();
        for row in 0..g.rows {
            for part in 0..g.widest.div_ceil(columns) {
                passes.push(WindowPass {
                    first: shader_len(row, entry)?,
                    rows: 1,
                    first_column: shader_len(part * columns, entry)?,
                    columns: columns as u32,
                });
            }
        }
        passes
    };
    if g.last_first {
        passes.reverse();
    }
    Ok(passes)
}

/// Whether `entry`'s loops fit the adapter's cap on one invocation's loop iterations.
fn window_fits(stream: &Stream, entry: &str, p: &Params) -> bool {
    window_loops(entry, p).is_none_or(|iterations| loops_fit(stream.device(), iterations))
}

/// A depthwise convolution's parameters and filter as the grouped convolution it is: one input
/// channel to a group, `multiplier` outputs each (the filter's [kh, kw, c, multiplier] bytes read
/// as [kh, kw, 1, c * multiplier]).
fn depthwise_as_grouped(p: &Params, filter: &TensorRef) -> (Params, TensorRef) {
    let shape = vec![i64::from(p.kh), i64::from(p.kw), 1, i64::from(p.oc)];
    (Params { fc: 1, ..*p }, TensorRef { shape, ..filter.clone() })
}

fn launch(stream: &Stream, entry: &'static str, p: Params, tensors: &[&TensorRef], out: &TensorRef) -> Result<()> {
    launch_with(stream, entry, p, tensors, out, None)
}

/// `launch` with `invocations` threads instead of one per output element (`p.n` still counts them).
fn launch_with(
    stream: &Stream,
    entry: &'static str,
    mut p: Params,
    tensors: &[&TensorRef],
    out: &TensorRef,
    invocations: Option<u64>,
) -> Result<()> {
    p.n = shader_len(out.num_elements(), entry)?;
    if p.n == 0 {
        return Ok(());
    }
    let passes = row_passes(stream.device(), entry, &p)?;
    let invocations = invocations.unwrap_or(u64::from(p.n));
    let device = stream.device();
    let mut mems: Vec<DeviceSlice> =
        tensors.iter().map(|t| device.memory.resolve(t.address, t.byte_len().max(4))).collect::<Result<_>>()?;
    // Binding order: input, weights, output, then batch_norm's extra vectors.
    mems.insert(2, device.memory.resolve(out.address, out.byte_len())?);
    let pipeline = conv_pipeline(device, entry, &p, invocations, out.dtype)?;
    // Offsets count elements of `T`; int64 operands (the argmax) are read as words.
    let mut units: Vec<u64> = tensors.iter().map(|t| if t.dtype == DType::F64 { 8 } else { 4 }).collect();
    units.insert(2, if out.dtype == DType::F64 { 8 } else { 4 });
    stream.encode(|core, encoder| {
        let mut bindings: Vec<Binding> = Vec::with_capacity(6);
        let mut offsets = Vec::with_capacity(6);
        for (mem, &unit) in mems.iter().zip(&units) {
            let (binding, off) = storage_window(core, mem, unit)?;
            bindings.push(binding);
            offsets.push(off);
        }
        // Unused trailing bindings repeat the first one.
        while bindings.len() < 6 {
            bindings.push(bindings[0]);
            offsets.push(0);
        }
        (p.in_off, p.f_off, p.out_off, p.offset_off, p.mean_off, p.var_off) =
            (offsets[0], offsets[1], offsets[2], offsets[3], offsets[4], offsets[5]);
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

fn check_4d(t: &TensorRef, what: &str) -> Result<()> {
    if t.shape.len() != 4 {
        return Err(Error::invalid_argument(format!("{what} must be 4-dimensional: {:?}", t.shape)));
    }
    Ok(())
}

/// Output shape and launch parameters of a Conv2D or DepthwiseConv2dNative node.
#[derive(Clone)]
pub struct ConvPlan {
    pub out_shape: Vec<i64>,
    depthwise: bool,
    params: Params,
}

pub fn plan(kernel: &KernelInstance, input: &TensorRef, filter: &TensorRef, depthwise: bool) -> Result<ConvPlan> {
    check_4d(input, "input")?;
    check_4d(filter, "filter")?;
    let (sh, sw) = hw(kernel, "strides")?;
    let (dh, dw) = hw(kernel, "dilations")?;
    let padding = kernel.attrs.str("padding")?;
    let [ph, pw] = explicit_pads(kernel, padding)?;
    let (batch, h, w, c) = (input.shape[0], input.shape[1], input.shape[2], input.shape[3]);
    let (kh, kw, fc, fo) = (filter.shape[0], filter.shape[1], filter.shape[2], filter.shape[3]);
    let (oc, fc_param) = if depthwise {
        if fc != c {
            return Err(Error::invalid_argument(format!("input and filter must have the same depth: {c} vs {fc}")));
        }
        if sh != sw {
            return Err(Error::invalid_argument(
                "Current implementation only supports equal length strides in the row and column dimensions.",
            ));
        }
        (validate::mul(c, fo)?, fo)
    } else {
        if fc <= 0 {
            return Err(Error::invalid_argument(format!("filter depth must be stricly positive, got {fc}")));
        }
        if c % fc != 0 || c == 0 {
            return Err(Error::invalid_argument(format!(
                "input depth must be evenly divisible by filter depth: {c} vs {fc}"
            )));
        }
        let groups = c / fc;
        if groups > 0 && fo % groups != 0 {
            return Err(Error::invalid_argument(format!(
                "output depth must be evenly divisible by number of groups: {fo} vs {groups}"
            )));
        }
        (fo, fc)
    };
    if [batch, c, oc].iter().any(|&d| d > u32::MAX as i64) {
        return Err(Error::invalid_argument(format!(
            "convolution dimensions must fit a uint32: input {:?}, filter {:?}",
            input.shape, filter.shape
        )));
    }
    let (oh, top) = window(h, kh, sh, dh, padding, ph)?;
    let (ow, left) = window(w, kw, sw, dw, padding, pw)?;
    let params = Params {
        batch: batch as u32,
        h: h as u32,
        w: w as u32,
        c: c as u32,
        oh: oh as u32,
        ow: ow as u32,
        oc: oc as u32,
        kh: kh as u32,
        kw: kw as u32,
        sh: sh as u32,
        sw: sw as u32,
        dh: dh as u32,
        dw: dw as u32,
        pad_top: top as u32,
        pad_left: left as u32,
        fc: fc_param as u32,
        ..Default::default()
    };
    Ok(ConvPlan { out_shape: vec![batch, oh, ow, oc], depthwise, params })
}

pub fn launch_conv(
    stream: &Stream,
    plan: &ConvPlan,
    input: &TensorRef,
    filter: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    if out.num_elements() == 0 {
        return Ok(());
    }
    if input.num_elements() == 0 || filter.num_elements() == 0 {
        // Sums over no terms (no input channels, or windows wholly in the padding): zeros.
        return stream.fill(out.address, out.byte_len(), 0);
    }
    let p = &plan.params;
    if !plan.depthwise && pointwise(p) {
        // A 1x1 convolution is a matmul: [batch * h * w, c] x [c, oc] on the same bytes.
        let [x, w, y] = pointwise_matrices(p, [input, filter, out]);
        return super::matmul::launch(stream, &x, &w, &y, false, false);
    }
    if !plan.depthwise && on_gemm(stream, input.dtype) {
        let (g, groups) = group_geometry(p);
        return matmul_gpu::conv(stream, &g, groups, input, filter, out);
    }
    if !plan.depthwise && p.fc == p.c && im2col::launch_conv_tiles(stream, &geometry(p), input, filter, out)? {
        return Ok(());
    }
    if !window_fits(stream, if plan.depthwise { "depthwise" } else { "conv2d" }, p) {
        // Deep or wide windows: the implicit GEMM, whose loop steps through tiles of them.
        let (p, filter) = if plan.depthwise { depthwise_as_grouped(p, filter) } else { (*p, filter.clone()) };
        let (g, groups) = group_geometry(&p);
        return matmul_gpu::conv(stream, &g, groups, input, &filter, out);
    }
    if plan.depthwise {
        if p.fc == 1 && p.c.is_multiple_of(4) && on_vec4s(stream, &[input, filter, out])? {
            // Four channels of four adjacent output pixels per invocation.
            let blocks = u64::from(p.batch) * u64::from(p.oh) * u64::from(p.ow.div_ceil(4)) * u64::from(p.c / 4);
            let entry = if row_columns_fit(p, false) { "depthwise_rows" } else { "depthwise_c4" };
            return launch_with(stream, entry, *p, &[input, filter], out, Some(blocks));
        }
        return launch(stream, "depthwise", plan.params, &[input, filter], out);
    }
    if four_channels_fit(stream, &plan.params, filter, out)? {
        let invocations = out.num_elements() / 4;
        return launch_with(stream, "conv2d_oc4", plan.params, &[input, filter], out, Some(invocations));
    }
    launch(stream, "conv2d", plan.params, &[input, filter], out)
}

/// Whether `p` is a 1x1 convolution at stride 1 without padding or groups: a matmul of the
/// [batch * h * w, c] input by the [c, oc] filter, on the same bytes (NHWC).
fn pointwise(p: &Params) -> bool {
    (p.kh, p.kw, p.sh, p.sw, p.pad_top, p.pad_left) == (1, 1, 1, 1, 0, 0) && p.fc == p.c && (p.oh, p.ow) == (p.h, p.w)
}

/// The input (or its gradient), filter (or its gradient) and output (or dy) of a `pointwise`
/// convolution as the matrices [pixels, c], [c, oc] and [pixels, oc].
fn pointwise_matrices(p: &Params, [x, filter, y]: [&TensorRef; 3]) -> [TensorRef; 3] {
    let pixels = i64::from(p.batch) * i64::from(p.h) * i64::from(p.w);
    let (c, oc) = (i64::from(p.c), i64::from(p.oc));
    let as_matrix = |t: &TensorRef, shape: [i64; 2]| TensorRef { shape: shape.to_vec(), ..t.clone() };
    [as_matrix(x, [pixels, c]), as_matrix(filter, [c, oc]), as_matrix(y, [pixels, oc])]
}

/// Conv2DBackpropFilter of a `pointwise` convolution as x^T dy, where that product takes the
/// skinny kernel (few channels: MobileNetV2's 24 -> 144 expansion is 24 x 12544 x 144, 17 ms on
/// the other routes and 14.6 here; where the product would take the tiles, the convolution routes
/// were faster: ResNet50's 64 -> 256, 24 ms against 31). Returns false elsewhere.
fn grad_filter_pointwise(
    ctx: &mut dyn KernelContext,
    p: &Params,
    x: &TensorRef,
    dy: &TensorRef,
    df: &TensorRef,
) -> Result<bool> {
    let [x, df, dy] = pointwise_matrices(p, [x, df, dy]);
    pointwise_product(ctx, p, [&x, &dy, &df], (true, false))
}

/// Conv2DBackpropInput of a `pointwise` convolution as dy filter^T, where that product takes the
/// skinny kernel. Returns false elsewhere.
fn grad_input_pointwise(
    ctx: &mut dyn KernelContext,
    p: &Params,
    dy: &TensorRef,
    filter: &TensorRef,
    dx: &TensorRef,
) -> Result<bool> {
    let [dx, filter, dy] = pointwise_matrices(p, [dx, filter, dy]);
    pointwise_product(ctx, p, [&dy, &filter, &dx], (false, true))
}

/// `out` = op(a) x op(b) for a `pointwise` gradient, where the product takes the skinny kernel.
fn pointwise_product(
    ctx: &mut dyn KernelContext,
    p: &Params,
    [a, b, out]: [&TensorRef; 3],
    (ta, tb): (bool, bool),
) -> Result<bool> {
    if !pointwise(p) || !super::matmul::takes_skinny(ctx.stream()?.device(), a, b, ta, tb) {
        return Ok(false);
    }
    super::matmul::product(ctx, a, b, out, ta, tb)?;
    Ok(true)
}

/// Whether convolutions and their gradients run as `matmul_gpu.wgsl`'s implicit GEMMs: on the GPU
/// profile, and for float64 everywhere (the direct kernels compute in f32).
fn on_gemm(stream: &Stream, dtype: DType) -> bool {
    dtype == DType::F64 || matmul_gpu::applies(stream.device())
}

/// Whether the implicit GEMM, which binds each tensor whole, takes `tensors`: where one exceeds a
/// binding (a single image: bigger batches are split before), float32 leaves it to the routes that
/// work in chunks; float64 has no other route and reports the binding limit.
fn gemm_binds(stream: &Stream, dtype: DType, tensors: &[&TensorRef]) -> bool {
    let limit = binding_limit(stream.device());
    dtype == DType::F64 || tensors.iter().all(|t| t.byte_len() <= limit)
}

/// One group's geometry (its input channels) and the number of groups.
fn group_geometry(p: &Params) -> (Im2col, u32) {
    (Im2col { c: p.fc, ..geometry(p) }, p.c / p.fc)
}

/// The implicit GEMM's view of an ungrouped convolution.
fn geometry(p: &Params) -> Im2col {
    Im2col {
        batch: p.batch,
        h: p.h,
        w: p.w,
        c: p.c,
        oh: p.oh,
        ow: p.ow,
        kh: p.kh,
        kw: p.kw,
        strides: [p.sh, p.sw],
        dilations: [p.dh, p.dw],
        pads: [p.pad_top, p.pad_left],
    }
}

/// Whether `conv2d_oc4` applies: an ungrouped convolution with a multiple of 4 output channels whose
/// filter and output windows start on a vec4.
fn four_channels_fit(stream: &Stream, p: &Params, filter: &TensorRef, out: &TensorRef) -> Result<bool> {
    Ok(p.c == p.fc && p.oc.is_multiple_of(4) && on_vec4s(stream, &[filter, out])?)
}

/// Whether a `_rows` depthwise entry takes `p`: a channel multiplier of 1, channels in vec4s
/// (`on_vec4s` checks the offsets), and a window whose taps and the columns four adjacent pixels
/// read fit the shader's register arrays (ROW_TAPS_MAX, ROW_COLUMNS_MAX). The input gradient's
/// columns (`depthwise_grad_input_rows`) are dy's, at a column stride of 1, 2 or 4.
fn row_columns_fit(p: &Params, for_input_gradient: bool) -> bool {
    p.fc == 1 && p.c.is_multiple_of(4) && row_window_fits(p, for_input_gradient)
}

/// Whether the `_rows` entries' register arrays hold `p`'s window: at most 8 taps across, and the
/// columns four adjacent pixels read (dy's for the depthwise input gradient, at a column stride of
/// 1, 2 or 4) at most 16.
fn row_window_fits(p: &Params, for_input_gradient: bool) -> bool {
    let (kw, sw, dw) = (u64::from(p.kw), u64::from(p.sw), u64::from(p.dw));
    let reach = kw.saturating_sub(1) * dw;
    let columns = if for_input_gradient {
        if ![1, 2, 4].contains(&sw) {
            return false;
        }
        (3 + u64::from(p.pad_left) % sw + reach.div_ceil(sw) * sw) / sw + 1
    } else {
        3 * sw + reach + 1
    };
    kw <= 8 && columns <= 16
}

/// Whether Conv2DBackpropFilter takes `conv2d_grad_filter_rows`: an ungrouped convolution of an
/// image with 1 to 3 channels (a first layer's gray or RGB input) to a multiple of 4 output
/// channels. The tiled product's k is then the pixels, long, and its output [oc, kh * kw * 4]
/// small: one dispatch per 384 pixels of a mostly empty tile (86 for a 3x3 convolution of 32
/// 32x32 RGB images), which cost more than this kernel's loads.
fn conv_grad_filter_rows_fit(stream: &Stream, p: &Params, dy: &TensorRef, df: &TensorRef) -> Result<bool> {
    Ok(p.fc == p.c && p.c < 4 && p.oc.is_multiple_of(4) && row_window_fits(p, false) && on_vec4s(stream, &[dy, df])?)
}

/// Whether each of `tensors` starts on a vec4 of its storage binding.
fn on_vec4s(stream: &Stream, tensors: &[&TensorRef]) -> Result<bool> {
    let device = stream.device();
    for t in tensors {
        let mem = device.memory.resolve(t.address, t.byte_len())?;
        if !storage_window(device, &mem, t.dtype.size())?.1.is_multiple_of(4) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Conv2D and DepthwiseConv2dNative.
pub fn conv(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if channels_first(kernel)? {
        return layout::channels_last(ctx, kernel, &IMAGE_IN_OUT, conv);
    }
    let output = if kernel.def.op == "DepthwiseConv2dNative" { BlockOutput::Image } else { BlockOutput::Summed };
    let blocks = BlockArgs { images: &[0], filters: &[1], output, ..NO_BLOCKS };
    channel_blocks::channel_blocks_on_overflow(ctx, kernel, &blocks, |ctx, kernel| {
        batch::split_batch_on_overflow(ctx, kernel, &BATCHED_IMAGE, conv_whole)
    })
}

/// Conv2D or DepthwiseConv2dNative (by the node's op) of a channels-last node.
pub fn conv_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let filter = ctx.input(1)?;
    let plan = plan(kernel, &input, &filter, kernel.def.op == "DepthwiseConv2dNative")?;
    let out = ctx.allocate_output(0, input.dtype, &plan.out_shape)?;
    convolve(ctx, &plan, &input, &filter, &out)
}

/// `out` = the convolution `plan` of `input` by `filter`; one image past a binding in bands of
/// output rows, each over the input rows its windows read (the top padding shifted to the band).
pub fn convolve(
    ctx: &mut dyn KernelContext,
    plan: &ConvPlan,
    input: &TensorRef,
    filter: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let p = plan.params;
    let limit = super::windows::binding_limit(ctx.stream()?.device());
    // The input as `conv_with_channels_padded` may copy it: channels to a multiple of 4.
    let padded = input.byte_len() / u64::from(p.c.max(1)) * u64::from(p.c.next_multiple_of(4));
    if p.batch != 1 || padded.max(out.byte_len()) <= limit || out.num_elements() == 0 {
        if conv_with_channels_padded(ctx, plan, input, filter, out)? {
            return Ok(());
        }
        return launch_conv(ctx.stream()?, plan, input, filter, out);
    }
    let size = input.dtype.size();
    // Input rows with their channels padded to a multiple of 4 (`conv_with_channels_padded`).
    let in_row = u64::from(p.w) * u64::from(p.c.next_multiple_of(4)) * size;
    let out_row = u64::from(p.ow) * u64::from(p.oc) * size;
    let (sh, top, h) = (i64::from(p.sh), i64::from(p.pad_top), i64::from(p.h));
    let reach = reaches(&p).0;
    let rows = fitting_rows(limit, (in_row, out_row), (reach, sh));
    if rows < 1 {
        return convolve_in_columns(ctx, plan, input, filter, out, limit);
    }
    let oh = i64::from(p.oh);
    let mut first = 0;
    while first < oh {
        let end = (first + rows).min(oh);
        let (lo, hi) = band_span((first, end), (sh, top, reach), h);
        let target = image_rows(out, first, end - first);
        if lo > hi {
            // Output rows whose windows lie wholly in the padding: sums of nothing.
            ctx.stream()?.fill(target.address, target.byte_len(), 0)?;
            first = end;
            continue;
        }
        let params =
            Params { h: (hi - lo + 1) as u32, oh: (end - first) as u32, pad_top: (top + lo - first * sh) as u32, ..p };
        let band = ConvPlan { out_shape: vec![1, end - first, p.ow.into(), p.oc.into()], params, ..plan.clone() };
        let source = image_rows(input, lo, hi - lo + 1);
        if !conv_with_channels_padded(ctx, &band, &source, filter, &target)? {
            launch_conv(ctx.stream()?, &band, &source, filter, &target)?;
        }
        first = end;
    }
    Ok(())
}

/// `convolve` of an image whose one output row, with the input rows its windows read, passes a
/// binding (a Conv1D over a long signal): tiles of output columns, whose rows then fit.
fn convolve_in_columns(
    ctx: &mut dyn KernelContext,
    plan: &ConvPlan,
    input: &TensorRef,
    filter: &TensorRef,
    out: &TensorRef,
    limit: u64,
) -> Result<()> {
    let p = plan.params;
    let size = input.dtype.size();
    // One input column of a window's rows, channels padded to a multiple of 4 as the padded route copies them.
    let in_column = reaches(&p).0 as u64 * u64::from(p.c.next_multiple_of(4)) * size;
    let tiles = window_tiles(&p, limit, (in_column, u64::from(p.oc) * size), "a convolution")?;
    column_tiles::run(ctx, &tiles, &[(input, Side::Image)], Some((out, Side::Windows)), |ctx, tile, tensors, target| {
        let target = target.ok_or_else(|| Error::internal("a convolution tile without its output"))?;
        let params = tile_params(&p, tile);
        let tile_plan = ConvPlan { out_shape: target.shape.clone(), params, ..plan.clone() };
        convolve(ctx, &tile_plan, &tensors[0], filter, target)
    })
}

/// The rows and columns one window reaches, dilated.
fn reaches(p: &Params) -> (i64, i64) {
    ((i64::from(p.kh) - 1) * i64::from(p.dh) + 1, (i64::from(p.kw) - 1) * i64::from(p.dw) + 1)
}

/// `p` for the narrower image of `tile`: its columns, its windows, its left padding.
fn tile_params(p: &Params, tile: &ColumnTile) -> Params {
    Params { w: tile.image.1 as u32, ow: tile.windows.1 as u32, pad_left: tile.pad_left as u32, ..*p }
}

/// An ungrouped convolution whose input channels are not a multiple of 4 (RGB images: 3), run with
/// the channels padded by zeros to the next multiple: the implicit GEMM then reads the input as
/// vec4s through uniform windows, where the direct kernels take 40-60x TF-CPU's time on 3
/// channels. Returns false where it does not apply (or the input is empty).
pub fn conv_with_channels_padded(
    ctx: &mut dyn KernelContext,
    plan: &ConvPlan,
    input: &TensorRef,
    filter: &TensorRef,
    out: &TensorRef,
) -> Result<bool> {
    let p = &plan.params;
    // The implicit GEMM reads any channel count as it is.
    if on_gemm(ctx.stream()?, input.dtype)
        || plan.depthwise
        || p.fc != p.c
        || p.c.is_multiple_of(4)
        || input.num_elements() == 0
        || out.num_elements() == 0
    {
        return Ok(false);
    }
    let c4 = p.c.next_multiple_of(4);
    let padded_input = with_channels(ctx, input, IMAGE_CHANNELS, c4)?;
    let padded_filter = with_channels(ctx, filter, FILTER_IN_CHANNELS, c4)?;
    let params = Params { c: c4, fc: c4, ..*p };
    let padded_plan = ConvPlan { out_shape: plan.out_shape.clone(), depthwise: false, params };
    launch_conv(ctx.stream()?, &padded_plan, &padded_input, &padded_filter, out)?;
    Ok(true)
}

/// The input-channel axes of an NHWC image and of an HWIO filter.
const IMAGE_CHANNELS: usize = 3;
const FILTER_IN_CHANNELS: usize = 2;

/// `shape` with `size` along `axis`.
fn with_size(shape: &[i64], axis: usize, size: u32) -> Vec<i64> {
    let mut shape = shape.to_vec();
    shape[axis] = i64::from(size);
    shape
}

/// A copy of `t` with `channels` along `axis`, those past its own zeros.
fn with_channels(ctx: &mut dyn KernelContext, t: &TensorRef, axis: usize, channels: u32) -> Result<TensorRef> {
    let padded = ctx.allocate_temp(t.dtype, &with_size(&t.shape, axis, channels))?;
    let mut dims = index::direct_dims(&t.shape);
    dims[axis] = DimMap { out: i64::from(channels), mode: DimMode::ConstantPad, ..dims[axis] };
    index::map(ctx.stream()?, t, &padded, &dims, None)?;
    Ok(padded)
}

/// Writes into `to` the first of `from`'s channels along `axis`, as many as `to` has.
fn first_channels(stream: &Stream, from: &TensorRef, to: &TensorRef, axis: usize) -> Result<()> {
    let mut dims = index::direct_dims(&from.shape);
    dims[axis].out = to.shape[axis];
    index::map(stream, from, to, &dims, None)
}

/// Normalises `x` into `y` per channel with population statistics (inference batch norm).
#[allow(clippy::too_many_arguments)]
pub fn launch_batch_norm(
    stream: &Stream,
    x: &TensorRef,
    scale: &TensorRef,
    offset: &TensorRef,
    mean: &TensorRef,
    variance: &TensorRef,
    epsilon: f32,
    y: &TensorRef,
) -> Result<()> {
    let c = *x.shape.last().unwrap_or(&1);
    let p = Params { c: c as u32, epsilon, ..Default::default() };
    launch(stream, "batch_norm", p, &[x, scale, offset, mean, variance], y)
}

/// Launch parameters of a pooling window over an NHWC `shape`.
fn pool_params(kernel: &KernelInstance, shape: &[i64]) -> Result<Params> {
    if shape.len() != 4 {
        return Err(Error::invalid_argument(format!("input must be 4-dimensional: {shape:?}")));
    }
    let (kh, kw) = hw(kernel, "ksize")?;
    let (sh, sw) = hw(kernel, "strides")?;
    let padding = kernel.attrs.str("padding")?;
    let [ph, pw] = explicit_pads(kernel, padding)?;
    // TF's pooling reads no window that lies wholly in the padding.
    for (pad, side, window) in [(ph.0, "Top", kh), (ph.1, "Bottom", kh), (pw.0, "Left", kw), (pw.1, "Right", kw)] {
        if pad >= window {
            return Err(Error::invalid_argument(format!(
                "{side} padding {pad} needs to be smaller than the window size {window}"
            )));
        }
    }
    let (batch, h, w, c) = (shape[0], shape[1], shape[2], shape[3]);
    if [batch, c].iter().any(|&d| d > u32::MAX as i64) {
        return Err(Error::invalid_argument(format!("pooling dimensions must fit a uint32: {shape:?}")));
    }
    let (oh, top) = window(h, kh, sh, 1, padding, ph)?;
    let (ow, left) = window(w, kw, sw, 1, padding, pw)?;
    Ok(Params {
        batch: batch as u32,
        h: h as u32,
        w: w as u32,
        c: c as u32,
        oh: oh as u32,
        ow: ow as u32,
        oc: c as u32,
        kh: kh as u32,
        kw: kw as u32,
        sh: sh as u32,
        sw: sw as u32,
        dh: 1,
        dw: 1,
        pad_top: top as u32,
        pad_left: left as u32,
        ..Default::default()
    })
}

fn pooled_shape(p: &Params) -> Vec<i64> {
    [p.batch, p.oh, p.ow, p.c].map(i64::from).to_vec()
}

/// MaxPool and AvgPool.
pub fn pool(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if channels_first(kernel)? {
        return layout::channels_last(ctx, kernel, &IMAGE_IN_OUT, pool);
    }
    layout::in_batches_of_images(ctx, kernel, (&IMAGE_IN_OUT, &BATCHED_IMAGE), pool_whole)
}

fn pool_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let p = pool_params(kernel, &input.shape)?;
    let out = ctx.allocate_output(0, input.dtype, &pooled_shape(&p))?;
    let entry = if kernel.def.op.starts_with("MaxPool") { "max_pool" } else { "avg_pool" };
    if !window_fits(ctx.stream()?, entry, &p) {
        // A window past the loop cap: pools are separable (a maximum of maxima; an average of
        // averages, as the count of a window's elements inside the image is a product), so the
        // rows' windows first, then the columns'.
        let rows_pooled = Params { kw: 1, sw: 1, pad_left: 0, ow: p.w, ..p };
        let columns_pooled = Params { h: p.oh, kh: 1, sh: 1, pad_top: 0, ..p };
        let temp = ctx.allocate_temp(input.dtype, &pooled_shape(&rows_pooled))?;
        pool_any_size(ctx, entry, rows_pooled, &input, &temp)?;
        return pool_any_size(ctx, entry, columns_pooled, &temp, &out);
    }
    pool_any_size(ctx, entry, p, &input, &out)
}

/// `launch_pool`, for one image past a binding in bands of output rows, or in tiles of output
/// columns where one output row's input rows pass it.
fn pool_any_size(
    ctx: &mut dyn KernelContext,
    entry: &'static str,
    p: Params,
    input: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let limit = binding_limit(ctx.stream()?.device());
    if p.batch != 1 || input.byte_len().max(out.byte_len()) <= limit {
        return launch_pool(ctx.stream()?, entry, p, input, out);
    }
    let size = input.dtype.size();
    if fitting_rows(limit, row_bytes(&p, size), (p.kh.into(), p.sh.into())) >= 1 {
        return pool_in_bands(ctx.stream()?, entry, p, input, out, limit);
    }
    let column = u64::from(p.c) * size;
    let tiles = window_tiles(&p, limit, (u64::from(p.kh) * column, column), "a pool")?;
    column_tiles::run(ctx, &tiles, &[(input, Side::Image)], Some((out, Side::Windows)), |ctx, tile, tensors, target| {
        let target = target.ok_or_else(|| Error::internal("a pool tile without its output"))?;
        pool_any_size(ctx, entry, tile_params(&p, tile), &tensors[0], target)
    })
}

/// MaxPool or AvgPool (`entry`): four channels per invocation (`max_pool_c4`, `avg_pool_c4`) where
/// the channels are a multiple of 4 and both tensors start on a vec4.
fn launch_pool(stream: &Stream, entry: &'static str, p: Params, input: &TensorRef, out: &TensorRef) -> Result<()> {
    // The filter slot is unused by the pools; the input stands in for it.
    if p.c.is_multiple_of(4) && on_vec4s(stream, &[input, out])? {
        let entry4 = if entry == "max_pool" { "max_pool_c4" } else { "avg_pool_c4" };
        return launch_with(stream, entry4, p, &[input, input], out, Some(out.num_elements() / 4));
    }
    launch(stream, entry, p, &[input, input], out)
}

/// Output rows a band of a windowed op holds: its `rows` x `out_row` bytes of output and the
/// (rows - 1) x `stride` + `reach` input rows of `in_row` bytes that its windows read must each fit
/// `limit`.
fn band_rows(limit: u64, (in_row, out_row): (u64, u64), (reach, stride): (i64, i64), what: &str) -> Result<i64> {
    let rows = fitting_rows(limit, (in_row, out_row), (reach, stride));
    if rows < 1 {
        return Err(Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {} bytes exceeds this adapter's max_storage_buffer_binding_size: the input rows \
             of one row of {what}",
            reach as u64 * in_row
        )));
    }
    Ok(rows)
}

/// `band_rows` where less than one row fits: then 0 or less.
fn fitting_rows(limit: u64, (in_row, out_row): (u64, u64), (reach, stride): (i64, i64)) -> i64 {
    let by_input = ((limit / in_row.max(1)) as i64 - reach).div_euclid(stride) + 1;
    by_input.min((limit / out_row.max(1)) as i64)
}

/// The tiles of output columns (`column_tiles::by_windows`) of a windowed op whose one row passes
/// a binding: each tile's output row, with its input columns of `in_column` bytes (a window's rows
/// of one column) and its output columns of `out_column` bytes, fits `limit`.
fn window_tiles(p: &Params, limit: u64, (in_column, out_column): (u64, u64), what: &str) -> Result<Vec<ColumnTile>> {
    let reach_w = reaches(p).1;
    let per_tile = fitting_rows(limit, (in_column, out_column), (reach_w, p.sw.into()));
    if per_tile < 1 {
        return Err(Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {} bytes exceeds this adapter's max_storage_buffer_binding_size: the input of \
             one window of {what}",
            reach_w as u64 * in_column
        )));
    }
    Ok(column_tiles::by_windows(p.ow.into(), per_tile, (p.sw.into(), p.pad_left.into(), reach_w), p.w.into()))
}

/// The input rows (clamped to the image's `h`) that output rows `first..end` read, windows of
/// `reach` rows starting at `row * stride - top`; empty (lo > hi) where they all lie in the padding.
fn band_span((first, end): (i64, i64), (stride, top, reach): (i64, i64, i64), h: i64) -> (i64, i64) {
    ((first * stride - top).max(0), ((end - 1) * stride - top + reach - 1).min(h - 1))
}

/// A pool of one image past a binding: bands of output rows, each over the input rows its windows
/// read.
fn pool_in_bands(
    stream: &Stream,
    entry: &'static str,
    p: Params,
    input: &TensorRef,
    out: &TensorRef,
    limit: u64,
) -> Result<()> {
    let rows = row_bytes(&p, input.dtype.size());
    in_output_bands(p, limit, rows, "a pool", |band, (lo, count), (first, out_count)| {
        launch_pool(stream, entry, band, &image_rows(input, lo, count), &image_rows(out, first, out_count))
    })
}

/// The bytes of one input row and of one output row of the windowed op `p`, in `size`-byte elements.
fn row_bytes(p: &Params, size: u64) -> (u64, u64) {
    (u64::from(p.w) * u64::from(p.c) * size, u64::from(p.ow) * u64::from(p.c) * size)
}

/// A windowed op of one image past a binding whose output rows each read a window of input rows
/// (a pool, MaxPoolGradGrad, MaxPoolWithArgmax, a gradient of windows that do not overlap): bands
/// of output rows, each over the input rows its windows read. `launch_band` gets the band's
/// parameters (the top padding shifted so that its input rows count from the first), its input
/// rows (first, count) and its output rows (first, count).
fn in_output_bands(
    p: Params,
    limit: u64,
    (in_row, out_row): (u64, u64),
    what: &str,
    mut launch_band: impl FnMut(Params, (i64, i64), (i64, i64)) -> Result<()>,
) -> Result<()> {
    let (sh, kh, top, h) = (i64::from(p.sh), i64::from(p.kh), i64::from(p.pad_top), i64::from(p.h));
    let rows = band_rows(limit, (in_row, out_row), (kh, sh), what)?;
    let oh = i64::from(p.oh);
    let mut first = 0;
    while first < oh {
        let end = (first + rows).min(oh);
        // Not empty: a pool's padding is smaller than its window.
        let (lo, hi) = band_span((first, end), (sh, top, kh), h);
        let band =
            Params { h: (hi - lo + 1) as u32, oh: (end - first) as u32, pad_top: (top + lo - first * sh) as u32, ..p };
        launch_band(band, (lo, hi - lo + 1), (first, end - first))?;
        first = end;
    }
    Ok(())
}

/// The pool gradients that gather, for each input element, from the windows covering it
/// (AvgPoolGrad; MaxPoolGrad of overlapping windows, whose `argmax` scratch, as grad's shape, holds
/// each window's maximum), on one image past a binding: bands of dx's rows, the last band first.
///
/// A band's rows `first..end` are covered by windows `oa..ob` (`windows::gather_bands`), which
/// start at input row `s <= first` (or in the padding, for the first): the band's frame counts rows
/// from `s`, so that no window it reads is cut at its top. AvgPoolGrad's frame runs to the image's
/// end, so every window keeps its count of elements inside the image; MaxPoolGrad's runs to the
/// last window's end, so every window keeps its argmax. The band writes dx's rows `s..end`: rows
/// `s..first` take only some of their windows, and the band above, run after it, writes them whole.
fn pool_grad_in_bands(
    stream: &Stream,
    p: Params,
    (x, argmax): (Option<&TensorRef>, Option<&TensorRef>),
    grad: &TensorRef,
    dx: &TensorRef,
    limit: u64,
) -> Result<()> {
    let (in_row, mut out_row) = row_bytes(&p, dx.dtype.size());
    if argmax.is_some() {
        out_row = out_row.max(u64::from(p.ow) * u64::from(p.c) * 4);
    }
    let (sh, kh, top, h, oh) =
        (i64::from(p.sh), i64::from(p.kh), i64::from(p.pad_top), i64::from(p.h), i64::from(p.oh));
    // A band of `rows` dx rows reads at most rows + 2 * kh input rows and rows + kh windows.
    let rows = (limit / in_row.max(out_row).max(1)) as i64 - 2 * kh;
    if rows < 1 {
        return Err(Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {} bytes exceeds this adapter's max_storage_buffer_binding_size: the rows of \
             one row of a pool gradient",
            (2 * kh + 1) as u64 * in_row.max(out_row)
        )));
    }
    for band in windows::gather_bands(h, rows, (kh, sh, top, oh)) {
        if let Some((first, count)) = band.zeros {
            let zeros = image_rows(dx, first, count);
            stream.fill(zeros.address, zeros.byte_len(), 0)?;
        }
        let Some((oa, ob, s)) = band.windows else { continue };
        let end = band.end;
        let windows = image_rows(grad, oa, ob - oa);
        let band = Params { oh: (ob - oa) as u32, pad_top: (top + s - oa * sh) as u32, ..p };
        let written = image_rows(dx, s, end - s);
        match (x, argmax) {
            (Some(x), Some(argmax)) => {
                let e = ((ob - 1) * sh - top + kh).max(end).min(h);
                let band = Params { h: (e - s) as u32, ..band };
                let (frame, argmax) = (image_rows(x, s, e - s), image_rows(argmax, oa, ob - oa));
                let tensors = [&frame, &windows, &argmax];
                let windows_count = Some(argmax.num_elements());
                launch_with(stream, "max_pool_grad_argmax", band, &tensors, &image_rows(dx, s, e - s), windows_count)?;
                launch(stream, "max_pool_grad_routed", band, &tensors, &written)?;
            }
            _ => {
                let band = Params { h: (h - s) as u32, ..band };
                launch(stream, "avg_pool_grad", band, &[&windows, &windows], &written)?;
            }
        }
    }
    Ok(())
}

fn check_gradient_shape(op: &str, grad: &TensorRef, expected: &[i64]) -> Result<()> {
    if grad.shape != expected {
        return Err(Error::invalid_argument(format!(
            "{op}: the gradient has shape {:?}, but the forward op's output shape is {expected:?}",
            grad.shape
        )));
    }
    Ok(())
}

/// MaxPoolWithArgmax (NHWC only): the max pool and each window's first maximum's flat index,
/// int64, counted within its image or, with `include_batch_in_index`, within the batch (TF-GPU's
/// convention, which TF-CPU follows).
pub fn max_pool_with_argmax(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    const IMAGES_AND_INDICES: BatchArgs =
        BatchArgs { inputs: &[0], shape_inputs: &[], outputs: &[0, 1], summed_outputs: &[] };
    let in_batches = |ctx: &mut dyn KernelContext, kernel: &KernelInstance| {
        batch::split_batch_on_overflow(ctx, kernel, &IMAGES_AND_INDICES, max_pool_with_argmax_whole)
    };
    let Some(failed) = layout::try_binding(ctx, kernel, &in_batches)? else { return Ok(()) };
    // One window's input past a binding (millions of channels): each channel as an image, its
    // indices counted within the image (y * w + x), then moved to the node's: times the channels,
    // plus the channel, plus the image's offset with `include_batch_in_index`.
    let mut attrs = kernel.attrs.clone();
    attrs.set("include_batch_in_index", AttrValue::Bool(false));
    let per_image = KernelInstance::new(kernel.def, attrs);
    let images = ImageArgs { inputs: &[0], shape_inputs: &[], outputs: &[0, 1] };
    let allocated = layout::channels_as_images(ctx, &per_image, &images, &in_batches, failed)?;
    let argmax = allocated.into_iter().find(|(i, _)| *i == 1).map(|(_, t)| t);
    let argmax = argmax.ok_or_else(|| Error::internal("a pool's indices were not allocated"))?;
    let input = ctx.input(0)?;
    let [batch, h, w, c] = input.shape[..] else { return Err(Error::internal("a 4-D pool input")) };
    let upload = |ctx: &mut dyn KernelContext, values: Vec<i64>, shape: &[i64]| -> Result<TensorRef> {
        let t = ctx.allocate_temp(DType::I64, shape)?;
        ctx.stream()?.memcpy_htod(t.address, bytemuck::cast_slice(&values))?;
        Ok(t)
    };
    let channels = int64_scalar(ctx, c)?;
    super::integer::launch(ctx.stream()?, super::integer::MUL, &argmax, &channels, &argmax)?;
    let channel = upload(ctx, (0..c).collect(), &[c])?;
    super::integer::launch(ctx.stream()?, super::integer::ADD, &argmax, &channel, &argmax)?;
    if kernel.attrs.bool("include_batch_in_index")? {
        let offsets = upload(ctx, (0..batch).map(|n| n * h * w * c).collect(), &[batch, 1, 1, 1])?;
        super::integer::launch(ctx.stream()?, super::integer::ADD, &argmax, &offsets, &argmax)?;
    }
    Ok(())
}

fn max_pool_with_argmax_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let mut p = pool_params(kernel, &input.shape)?;
    if input.num_elements() == 0 {
        return Err(Error::invalid_argument(format!(
            "tensor_in must not be empty ({})",
            input.shape.iter().filter(|&&d| d == 0).count()
        )));
    }
    p.fc = u32::from(kernel.attrs.bool("include_batch_in_index")?);
    let shape = pooled_shape(&p);
    let out = ctx.allocate_output(0, input.dtype, &shape)?;
    let argmax = ctx.allocate_output(1, DType::I64, &shape)?;
    max_pool_argmax_any_size(ctx, p, &input, (&out, &argmax))?;
    // A later range of the batch counts its indices from its own first image: from the batch's.
    let start = ctx.batch_start();
    if p.fc == 1 && start > 0 {
        let image = input.num_elements() as i64 / input.shape[0];
        add_to_indices(ctx, &argmax, start * image, &argmax)?;
    }
    Ok(())
}

/// MaxPoolWithArgmax of one image (or a batch) into `out` and `argmax`, the indices counted within
/// `input`'s own image; one image past a binding in bands of output rows, or in tiles of output
/// columns where one output row's input rows pass it.
fn max_pool_argmax_any_size(
    ctx: &mut dyn KernelContext,
    p: Params,
    input: &TensorRef,
    (out, argmax): (&TensorRef, &TensorRef),
) -> Result<()> {
    let limit = binding_limit(ctx.stream()?.device());
    if p.batch != 1 || [input, out, argmax].iter().all(|t| t.byte_len() <= limit) {
        return launch(ctx.stream()?, "max_pool_argmax", p, &[input, input, argmax], out);
    }
    let size = input.dtype.size();
    let (in_row, out_row) = row_bytes(&p, size);
    // The int64 indices' rows are the widest output rows.
    let out_row = out_row.max(out_row / size * 8);
    if fitting_rows(limit, (in_row, out_row), (p.kh.into(), p.sh.into())) < 1 {
        return max_pool_argmax_in_columns(ctx, p, input, (out, argmax), limit);
    }
    // Bands of output rows: each band's indices count from its first input row, then move to the
    // image's.
    let row_elements = i64::from(p.w) * i64::from(p.c);
    in_output_bands(p, limit, (in_row, out_row), "a pool", |band, (lo, count), (first, rows)| {
        let (x, out, indices) =
            (image_rows(input, lo, count), image_rows(out, first, rows), image_rows(argmax, first, rows));
        launch(ctx.stream()?, "max_pool_argmax", band, &[&x, &x, &indices], &out)?;
        if lo > 0 {
            add_to_indices(ctx, &indices, lo * row_elements, &indices)?;
        }
        Ok(())
    })
}

/// `max_pool_argmax_any_size` in tiles of output columns. A tile's indices count its own image,
/// (row * tile_width + column) * c + channel; the image's are (row * w + first + column) * c +
/// channel: index + (index / (tile_width * c)) * (w - tile_width) * c + first * c.
fn max_pool_argmax_in_columns(
    ctx: &mut dyn KernelContext,
    p: Params,
    input: &TensorRef,
    (out, argmax): (&TensorRef, &TensorRef),
    limit: u64,
) -> Result<()> {
    let column = u64::from(p.c) * input.dtype.size();
    let index_column = u64::from(p.c) * 8;
    let tiles = window_tiles(&p, limit, (u64::from(p.kh) * column, column.max(index_column)), "a pool")?;
    let widest = tiles.iter().map(|t| t.windows.1).max().unwrap_or(1).max(1);
    let pooled = ctx.allocate_temp(out.dtype, &column_tiles::narrowed(out, widest).shape)?;
    let indices = ctx.allocate_temp(DType::I64, &column_tiles::narrowed(argmax, widest).shape)?;
    let rows = ctx.allocate_temp(DType::I64, &indices.shape)?;
    let (w, c) = (i64::from(p.w), i64::from(p.c));
    column_tiles::run(ctx, &tiles, &[(input, Side::Image)], None, |ctx, tile, tensors, _| {
        let count = tile.windows.1;
        let (pooled, indices, rows) = (
            column_tiles::narrowed(&pooled, count),
            column_tiles::narrowed(&indices, count),
            column_tiles::narrowed(&rows, count),
        );
        max_pool_argmax_any_size(ctx, tile_params(&p, tile), &tensors[0], (&pooled, &indices))?;
        let (first, tile_width) = tile.image;
        let tile_row = int64_scalar(ctx, tile_width * c)?;
        let row_gap = int64_scalar(ctx, (w - tile_width) * c)?;
        let stream = ctx.stream()?;
        super::integer::launch(stream, super::integer::TRUNCATE_DIV, &indices, &tile_row, &rows)?;
        super::integer::launch(stream, super::integer::MUL, &rows, &row_gap, &rows)?;
        super::integer::launch(stream, super::integer::ADD, &indices, &rows, &indices)?;
        add_to_indices(ctx, &indices, first * c, &indices)?;
        column_tiles::copy_columns(ctx, (&pooled, 0), (out, tile.windows.0), count)?;
        column_tiles::copy_columns(ctx, (&indices, 0), (argmax, tile.windows.0), count)
    })
}

/// An int64 scalar on the device.
fn int64_scalar(ctx: &mut dyn KernelContext, value: i64) -> Result<TensorRef> {
    let scalar = ctx.allocate_temp(DType::I64, &[])?;
    ctx.stream()?.memcpy_htod(scalar.address, &value.to_le_bytes())?;
    Ok(scalar)
}

/// `out` = the int64 `indices` + `offset`.
fn add_to_indices(ctx: &mut dyn KernelContext, indices: &TensorRef, offset: i64, out: &TensorRef) -> Result<()> {
    let shift = int64_scalar(ctx, offset)?;
    super::integer::launch(ctx.stream()?, super::integer::ADD, indices, &shift, out)
}

/// MaxPoolGradWithArgmax: each gradient element added to the input element its argmax names
/// (within its image, or within the batch with `include_batch_in_index`); indices outside the
/// input are dropped, as scatters drop them.
pub fn max_pool_grad_with_argmax(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    const IMAGES: BatchArgs = BatchArgs { inputs: &[0, 1, 2], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };
    batch::split_batch_on_overflow(ctx, kernel, &IMAGES, max_pool_grad_with_argmax_whole)
}

fn max_pool_grad_with_argmax_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let input = ctx.input(0)?;
    let grad = ctx.input(1)?;
    let argmax = ctx.input(2)?;
    let p = pool_params(kernel, &input.shape)?;
    let pooled = pooled_shape(&p);
    check_gradient_shape(kernel.def.op, &grad, &pooled)?;
    if argmax.shape != pooled {
        return Err(Error::invalid_argument(format!(
            "Expected argmax shape to be {}, but got {}",
            validate::shape_string(&pooled),
            validate::shape_string(&argmax.shape)
        )));
    }
    let out = ctx.allocate_output(0, grad.dtype, &input.shape)?;
    let flat = |t: &TensorRef| TensorRef { shape: vec![t.num_elements() as i64], ..t.clone() };
    // Indices count within each image (then offset by the image's start, so that one outside its
    // image adds where it points, as TF's kernels add it), or within the whole batch.
    let mut indices = argmax.clone();
    if !kernel.attrs.bool("include_batch_in_index")? && input.shape[0] > 1 {
        let images = input.shape[0];
        let per_image = input.num_elements() as i64 / images;
        let starts = ctx.allocate_temp(DType::I64, &[images, 1, 1, 1])?;
        indices = ctx.allocate_temp(DType::I64, &argmax.shape)?;
        let stream = ctx.stream()?;
        let bytes: Vec<u8> = (0..images).flat_map(|b| (b * per_image).to_le_bytes()).collect();
        stream.memcpy_htod(starts.address, &bytes)?;
        super::integer::launch(stream, super::integer::ADD, &argmax, &starts, &indices)?;
    } else if kernel.attrs.bool("include_batch_in_index")? && ctx.batch_start() > 0 {
        // A later range of the batch (the input past a binding): indices count from the batch's
        // first image, the range's output from its own. Indices into other ranges' images drop.
        let image = input.num_elements() as i64 / input.shape[0];
        indices = ctx.allocate_temp(DType::I64, &argmax.shape)?;
        let shift = -ctx.batch_start() * image;
        add_to_indices(ctx, &argmax, shift, &indices)?;
    }
    let stream = ctx.stream()?;
    stream.fill(out.address, out.byte_len(), 0)?;
    // Indices outside the whole tensor are dropped (TF-GPU would write past it; TF-CPU aborts).
    scatter::scatter(stream, Combine::Add, &flat(&indices), &[out.num_elements() as i64], &flat(&grad), &flat(&out))
}

/// MaxPoolGradGrad (and V2 through `pool_v2`): the gradient of MaxPoolGrad with respect to its
/// `grad`, shaped like the pool's output: each window takes the second-order gradient at its first
/// element equal to orig_output, as TF's kernels pick it.
pub fn max_pool_grad_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let images = ImageArgs { inputs: &[0, 1, 2], shape_inputs: &[], outputs: &[0] };
    if channels_first(kernel)? {
        return layout::channels_last(ctx, kernel, &images, max_pool_grad_grad);
    }
    const IMAGES: BatchArgs = BatchArgs { inputs: &[0, 1, 2], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };
    layout::in_batches_of_images(ctx, kernel, (&images, &IMAGES), max_pool_grad_grad_whole)
}

fn max_pool_grad_grad_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let x = ctx.input(0)?;
    let y = ctx.input(1)?;
    let grad = ctx.input(2)?;
    let p = pool_params(kernel, &x.shape)?;
    let pooled = pooled_shape(&p);
    check_gradient_shape(kernel.def.op, &y, &pooled)?;
    if grad.shape != x.shape {
        return Err(Error::invalid_argument(format!(
            "{}: the gradient has shape {}, but orig_input has shape {}",
            kernel.def.op,
            validate::shape_string(&grad.shape),
            validate::shape_string(&x.shape)
        )));
    }
    let out = ctx.allocate_output(0, grad.dtype, &pooled)?;
    max_pool_grad_grad_any_size(ctx, p, (&x, &y, &grad), &out)
}

/// MaxPoolGradGrad of (x, y, grad) into `out`; one image past a binding in bands of output rows,
/// or in tiles of output columns where one output row's input rows pass it.
fn max_pool_grad_grad_any_size(
    ctx: &mut dyn KernelContext,
    p: Params,
    (x, y, grad): (&TensorRef, &TensorRef, &TensorRef),
    out: &TensorRef,
) -> Result<()> {
    let limit = binding_limit(ctx.stream()?.device());
    if p.batch != 1 || [x, y, grad, out].iter().all(|t| t.byte_len() <= limit) {
        return launch(ctx.stream()?, "max_pool_grad_grad", p, &[x, grad, y], out);
    }
    let size = x.dtype.size();
    let rows = row_bytes(&p, size);
    if fitting_rows(limit, rows, (p.kh.into(), p.sh.into())) < 1 {
        let column = u64::from(p.c) * size;
        let tiles = window_tiles(&p, limit, (u64::from(p.kh) * column, column), "a pool gradient")?;
        let inputs = [(x, Side::Image), (y, Side::Windows), (grad, Side::Image)];
        return column_tiles::run(ctx, &tiles, &inputs, Some((out, Side::Windows)), |ctx, tile, t, target| {
            let target = target.ok_or_else(|| Error::internal("a pool gradient tile without its output"))?;
            max_pool_grad_grad_any_size(ctx, tile_params(&p, tile), (&t[0], &t[1], &t[2]), target)
        });
    }
    let stream = ctx.stream()?;
    in_output_bands(p, limit, rows, "a pool gradient", |band, (lo, count), (first, out_count)| {
        let (x, grad) = (image_rows(x, lo, count), image_rows(grad, lo, count));
        let (y, out) = (image_rows(y, first, out_count), image_rows(out, first, out_count));
        launch(stream, "max_pool_grad_grad", band, &[&x, &grad, &y], &out)
    })
}

/// MaxPoolV2, MaxPoolGradV2 and MaxPoolGradGradV2: their V1 kernels, with `ksize` and `strides`
/// read from the node's last two inputs (host-memory int32 vectors) instead of its attributes.
pub fn pool_v2(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let n = ctx.num_inputs();
    if n < 2 {
        return Err(Error::internal(format!("{}: {n} inputs", kernel.def.op)));
    }
    let mut attrs = kernel.attrs.clone();
    for (name, index) in [("ksize", n - 2), ("strides", n - 1)] {
        let (values, shape) = ctx.host_input_values(index)?;
        if shape.len() != 1 {
            return Err(Error::invalid_argument(format!(
                "{name} must be a vector, not a tensor of shape {}",
                validate::shape_string(&shape)
            )));
        }
        attrs.set(name, AttrValue::IntList(values));
    }
    let instance = KernelInstance::new(kernel.def, attrs);
    match kernel.def.op {
        "MaxPoolV2" => pool(ctx, &instance),
        "MaxPoolGradGradV2" => max_pool_grad_grad(ctx, &instance),
        _ => pool_grad(ctx, &instance),
    }
}

/// MaxPoolGrad (orig_input, orig_output, grad), MaxPoolGradV2 (the same, then ksize and strides)
/// and AvgPoolGrad (orig_input_shape, grad).
pub fn pool_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = kernel.def.op;
    let max = op.starts_with("MaxPoolGrad");
    // MaxPoolGrad(orig_input, orig_output, grad); AvgPoolGrad(orig_input_shape, grad).
    let images = if max {
        ImageArgs { inputs: &[0, 1, 2], shape_inputs: &[], outputs: &[0] }
    } else {
        ImageArgs { inputs: &[1], shape_inputs: &[0], outputs: &[0] }
    };
    if channels_first(kernel)? {
        return layout::channels_last(ctx, kernel, &images, pool_grad);
    }
    let batched = if max {
        BatchArgs { inputs: &[0, 1, 2], shape_inputs: &[], outputs: &[0], summed_outputs: &[] }
    } else {
        BatchArgs { inputs: &[1], shape_inputs: &[0], outputs: &[0], summed_outputs: &[] }
    };
    layout::in_batches_of_images(ctx, kernel, (&images, &batched), pool_grad_whole)
}

fn pool_grad_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = kernel.def.op;
    let max = op.starts_with("MaxPoolGrad");
    let (input, grad) = if max { (Some(ctx.input(0)?), ctx.input(2)?) } else { (None, ctx.input(1)?) };
    let shape = match &input {
        Some(t) => t.shape.clone(),
        None => ctx.host_input_values(0)?.0,
    };
    let p = pool_params(kernel, &shape)?;
    check_gradient_shape(op, &grad, &pooled_shape(&p))?;
    let dx = ctx.allocate_output(0, grad.dtype, &shape)?;
    pool_grad_any_size(ctx, p, input.as_ref(), &grad, &dx)
}

/// MaxPoolGrad (`input`: the forward op's) or AvgPoolGrad (None) of `grad` into `dx`; one image
/// past a binding in bands of dx's rows, or in tiles of its columns where one row's windows pass it.
fn pool_grad_any_size(
    ctx: &mut dyn KernelContext,
    p: Params,
    input: Option<&TensorRef>,
    grad: &TensorRef,
    dx: &TensorRef,
) -> Result<()> {
    let limit = binding_limit(ctx.stream()?.device());
    if p.batch == 1 && [input, Some(grad), Some(dx)].iter().flatten().any(|t| t.byte_len() > limit) {
        // The most a band of one row holds: 2 * kh + 1 rows of the image or of the windows (argmax
        // words included).
        let widest = u64::from(p.w.max(p.ow)) * u64::from(p.c) * dx.dtype.size().max(4);
        if (2 * u64::from(p.kh) + 1) * widest > limit {
            return pool_grad_in_columns(ctx, p, input, grad, dx, limit);
        }
    }
    // Windows past the loop cap take the argmax route too, whose argmax runs in passes of rows.
    let overlapping =
        input.is_some() && (p.sh < p.kh || p.sw < p.kw || !window_fits(ctx.stream()?, "max_pool_grad_windows", &p));
    let argmax = if overlapping { Some(ctx.allocate_temp(DType::I32, &grad.shape)?) } else { None };
    let stream = ctx.stream()?;
    let tensors = [input, Some(grad), argmax.as_ref(), Some(dx)];
    if p.batch == 1 && tensors.iter().flatten().any(|t| t.byte_len() > limit) {
        return match (input, &argmax) {
            (Some(x), None) => {
                // Windows that do not overlap write disjoint input rows.
                stream.fill(dx.address, dx.byte_len(), 0)?;
                let (in_row, out_row) = row_bytes(&p, dx.dtype.size());
                in_output_bands(
                    p,
                    limit,
                    (in_row, out_row),
                    "a pool gradient",
                    |band, (lo, count), (first, windows)| {
                        let (x, grad) = (image_rows(x, lo, count), image_rows(grad, first, windows));
                        let elements = Some(grad.num_elements());
                        launch_with(
                            stream,
                            "max_pool_grad_windows",
                            band,
                            &[&x, &grad],
                            &image_rows(dx, lo, count),
                            elements,
                        )
                    },
                )
            }
            _ => pool_grad_in_bands(stream, p, (input, argmax.as_ref()), grad, dx, limit),
        };
    }
    match (input, &argmax) {
        // Windows that do not overlap: zero dx, then one invocation per window.
        (Some(x), None) => {
            stream.fill(dx.address, dx.byte_len(), 0)?;
            launch_with(stream, "max_pool_grad_windows", p, &[x, grad], dx, Some(grad.num_elements()))
        }
        // Overlapping windows: each window's argmax once, then each element's covering windows.
        (Some(x), Some(argmax)) => {
            launch_with(stream, "max_pool_grad_argmax", p, &[x, grad, argmax], dx, Some(grad.num_elements()))?;
            launch(stream, "max_pool_grad_routed", p, &[x, grad, argmax], dx)
        }
        (None, _) => launch(stream, "avg_pool_grad", p, &[grad, grad], dx),
    }
}

/// A pool gradient of an image whose one row of windows passes a binding: tiles of dx's columns,
/// each over every column of the windows reaching into it (`column_tiles::by_image` with whole
/// windows, which an argmax and a count inside the image need), writing its own. dx starts as
/// zeros for the columns no window covers (strides past the window).
fn pool_grad_in_columns(
    ctx: &mut dyn KernelContext,
    p: Params,
    input: Option<&TensorRef>,
    grad: &TensorRef,
    dx: &TensorRef,
    limit: u64,
) -> Result<()> {
    let column = u64::from(p.c) * dx.dtype.size().max(4) * (2 * u64::from(p.kh) + 1);
    let geometry = (i64::from(p.sw), i64::from(p.pad_left), i64::from(p.kw));
    let tiles = column_tiles::widest_fitting(
        p.w.into(),
        |per_tile| column_tiles::by_image(p.w.into(), per_tile, geometry, p.ow.into(), true),
        |tile| tile.image.1.max(tile.windows.1).max(0) as u64 * column <= limit,
    )
    .ok_or_else(|| {
        Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {} bytes exceeds this adapter's max_storage_buffer_binding_size: the rows of \
             one window of a pool gradient",
            u64::from(p.kw) * column
        ))
    })?;
    ctx.stream()?.fill(dx.address, dx.byte_len(), 0)?;
    let mut inputs = vec![(grad, Side::Windows)];
    inputs.extend(input.map(|x| (x, Side::Image)));
    column_tiles::run(ctx, &tiles, &inputs, Some((dx, Side::Image)), |ctx, tile, tensors, target| {
        let target = target.ok_or_else(|| Error::internal("a pool gradient tile without its output"))?;
        pool_grad_any_size(ctx, tile_params(&p, tile), tensors.get(1), &tensors[0], target)
    })
}

/// Conv2DBackpropInput, Conv2DBackpropFilter and their DepthwiseConv2dNative twins. The sizes of
/// the gradient they produce come as a host-memory input, or for Conv2DBackpropInputV2 as the
/// shape of its first input (the forward op's input, whose values are not read).
pub fn conv_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let for_filter = kernel.def.op.ends_with("Filter");
    let sized_by_input = kernel.def.op == "Conv2DBackpropInputV2";
    if channels_first(kernel)? {
        // BackpropInput(input_sizes, filter, out_backprop); BackpropFilter(input, filter_sizes,
        // out_backprop); BackpropInputV2(input, filter, out_backprop).
        let images = if for_filter {
            ImageArgs { inputs: &[0, 2], shape_inputs: &[], outputs: &[] }
        } else if sized_by_input {
            ImageArgs { inputs: &[0, 2], shape_inputs: &[], outputs: &[0] }
        } else {
            ImageArgs { inputs: &[2], shape_inputs: &[0], outputs: &[0] }
        };
        return layout::channels_last(ctx, kernel, &images, conv_grad);
    }
    let blocks = match (kernel.def.op.starts_with("Depthwise"), for_filter, sized_by_input) {
        (false, true, _) => {
            BlockArgs { images: &[0], filter_sizes: &[1], output: BlockOutput::Filter, out_images: &[2], ..NO_BLOCKS }
        }
        (false, false, true) => BlockArgs {
            images: &[0],
            filters: &[1],
            output: BlockOutput::Image,
            out_images: &[2],
            out_output: OutBlockOutput::Summed,
            ..NO_BLOCKS
        },
        (false, false, false) => BlockArgs {
            filters: &[1],
            image_sizes: &[0],
            output: BlockOutput::Image,
            out_images: &[2],
            out_output: OutBlockOutput::Summed,
            ..NO_BLOCKS
        },
        (true, true, _) => BlockArgs {
            images: &[0],
            multiplied_images: &[2],
            filter_sizes: &[1],
            output: BlockOutput::Filter,
            out_images: &[2],
            ..NO_BLOCKS
        },
        (true, false, _) => BlockArgs {
            multiplied_images: &[2],
            filters: &[1],
            image_sizes: &[0],
            output: BlockOutput::Image,
            out_images: &[2],
            out_output: OutBlockOutput::Summed,
            ..NO_BLOCKS
        },
    };
    channel_blocks::channel_blocks_on_overflow(ctx, kernel, &blocks, |ctx, kernel| {
        let for_filter = kernel.def.op.ends_with("Filter");
        let batched = if for_filter {
            BatchArgs { inputs: &[0, 2], shape_inputs: &[], outputs: &[], summed_outputs: &[0] }
        } else if kernel.def.op == "Conv2DBackpropInputV2" {
            BatchArgs { inputs: &[0, 2], shape_inputs: &[], outputs: &[0], summed_outputs: &[] }
        } else {
            BatchArgs { inputs: &[2], shape_inputs: &[0], outputs: &[0], summed_outputs: &[] }
        };
        batch::split_batch_on_overflow(ctx, kernel, &batched, conv_grad_whole)
    })
}

fn conv_grad_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = kernel.def.op;
    let depthwise = op.starts_with("Depthwise");
    let for_filter = op.ends_with("Filter");
    let dy = ctx.input(2)?;
    let sized_by_input = op == "Conv2DBackpropInputV2";
    let (mut sizes, sizes_shape) = if sized_by_input {
        let shape = ctx.input(0)?.shape;
        (shape.clone(), vec![shape.len() as i64])
    } else {
        ctx.host_input_values(if for_filter { 1 } else { 0 })?
    };
    let known = ctx.input(if for_filter { 0 } else { 1 })?;
    let what = if for_filter { "filter_sizes" } else { "input_sizes" };
    if sizes_shape.len() != 1 {
        return Err(Error::invalid_argument(format!("{op}: {what} input must be 1-dim, not {}", sizes_shape.len())));
    }
    // TF also takes the input's spatial size alone: batch from dy, depth from the filter.
    if !for_filter && !sized_by_input && sizes.len() == 2 && dy.shape.len() == 4 && known.shape.len() == 4 {
        sizes = vec![dy.shape[0], sizes[0], sizes[1], known.shape[2]];
    }
    let sized = TensorRef { shape: sizes.clone(), ..known.clone() };
    let (input, filter) = if for_filter { (&known, &sized) } else { (&sized, &known) };
    let plan = plan(kernel, input, filter, depthwise)?;
    check_gradient_shape(op, &dy, &plan.out_shape)?;
    let out = ctx.allocate_output(0, dy.dtype, &sizes)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    if known.num_elements() == 0 || dy.num_elements() == 0 {
        // A gradient summed over no terms.
        return ctx.stream()?.fill(out.address, out.byte_len(), 0);
    }
    grad_any_size(ctx, &plan.params, depthwise, for_filter, (&known, &dy, &out))
}

/// `grad_of`, in bands of rows (or tiles of columns) where one image passes a binding.
fn grad_any_size(
    ctx: &mut dyn KernelContext,
    p: &Params,
    depthwise: bool,
    for_filter: bool,
    (known, dy, out): (&TensorRef, &TensorRef, &TensorRef),
) -> Result<()> {
    let limit = super::windows::binding_limit(ctx.stream()?.device());
    // The image side (x, or dx) as the channel-padding routes may copy it: channels to a multiple of 4.
    let image_bytes = if for_filter { known.byte_len() } else { out.byte_len() };
    let padded = image_bytes / u64::from(p.c.max(1)) * u64::from(p.c.next_multiple_of(4));
    if p.batch == 1 && padded.max(known.byte_len()).max(dy.byte_len()).max(out.byte_len()) > limit {
        return grad_in_bands(ctx, p, depthwise, for_filter, (known, dy, out), limit);
    }
    grad_of(ctx, p, depthwise, for_filter, (known, dy, out))
}

/// The filter gradient of an image whose one dy row, with the input rows its windows read, passes
/// a binding: tiles of dy's columns (and the input columns their windows read), each tile's
/// gradient added up.
fn grad_filter_in_columns(
    ctx: &mut dyn KernelContext,
    p: &Params,
    depthwise: bool,
    (x, dy, out): (&TensorRef, &TensorRef, &TensorRef),
    limit: u64,
) -> Result<()> {
    let size = dy.dtype.size();
    let in_column = reaches(p).0 as u64 * u64::from(p.c.next_multiple_of(4)) * size;
    let tiles = window_tiles(p, limit, (in_column, u64::from(p.oc) * size), "a filter gradient")?;
    let mut partial: Option<TensorRef> = None;
    let mut summed = false;
    column_tiles::run(ctx, &tiles, &[(x, Side::Image), (dy, Side::Windows)], None, |ctx, tile, tensors, _| {
        let target = match (&partial, summed) {
            (_, false) => out.clone(),
            (Some(t), true) => t.clone(),
            (None, true) => partial.insert(ctx.allocate_temp(out.dtype, &out.shape)?).clone(),
        };
        grad_any_size(ctx, &tile_params(p, tile), depthwise, true, (&tensors[0], &tensors[1], &target))?;
        if summed {
            super::binary::launch(ctx.stream()?, BinaryOp::Add, out, &target, out)?;
        }
        summed = true;
        Ok(())
    })?;
    if !summed {
        ctx.stream()?.fill(out.address, out.byte_len(), 0)?;
    }
    Ok(())
}

/// dx rows a band of a convolution's input gradient may hold: its dy rows (those whose windows
/// reach its rows), its dx rows and its input rows (channels padded) each fit `limit`.
fn input_gradient_rows(limit: u64, (dy_row, out_row, in_row): (u64, u64, u64), (reach, stride): (i64, i64)) -> i64 {
    let by_dy = (((limit / dy_row.max(1)) as i64 - 1) * stride - reach + 2).max(0);
    by_dy.min((limit / out_row.max(1)) as i64).min((limit / in_row.max(1)) as i64)
}

/// The input gradient of an image whose one dx row, with the dy rows reaching it, passes a
/// binding: tiles of dx's columns, each from the dy columns whose windows reach into it.
fn grad_input_in_columns(
    ctx: &mut dyn KernelContext,
    p: &Params,
    depthwise: bool,
    (filter, dy, dx): (&TensorRef, &TensorRef, &TensorRef),
    limit: u64,
) -> Result<()> {
    let size = dy.dtype.size();
    let (reach_h, reach_w) = reaches(p);
    let geometry = (i64::from(p.sw), i64::from(p.pad_left), reach_w);
    let tiles = column_tiles::widest_fitting(
        p.w.into(),
        |per_tile| column_tiles::by_image(p.w.into(), per_tile, geometry, p.ow.into(), false),
        |tile| {
            let (columns, windows) = (tile.image.1.max(0) as u64, tile.windows.1.max(0) as u64);
            let pixel = |channels: u32| u64::from(channels) * size;
            let rows = (windows * pixel(p.oc), columns * pixel(p.c), columns * pixel(p.c.next_multiple_of(4)));
            input_gradient_rows(limit, rows, (reach_h, p.sh.into())) >= 1
        },
    )
    .ok_or_else(|| {
        Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {} bytes exceeds this adapter's max_storage_buffer_binding_size: the dy of \
             one column of an input gradient",
            (reach_h * reach_w) as u64 * u64::from(p.oc) * size
        ))
    })?;
    column_tiles::run(ctx, &tiles, &[(dy, Side::Windows)], Some((dx, Side::Image)), |ctx, tile, tensors, target| {
        let target = target.ok_or_else(|| Error::internal("an input gradient tile without its output"))?;
        grad_any_size(ctx, &tile_params(p, tile), depthwise, false, (filter, &tensors[0], target))
    })
}

/// A convolution gradient of one image past a binding, in bands. The filter's: bands of dy's rows
/// (and the input rows their windows read), each band's gradient added up. The input's: bands of
/// dx's rows, each from the dy rows whose windows reach into it. Each band's top padding is
/// shifted so that its rows count from its first.
fn grad_in_bands(
    ctx: &mut dyn KernelContext,
    p: &Params,
    depthwise: bool,
    for_filter: bool,
    (known, dy, out): (&TensorRef, &TensorRef, &TensorRef),
    limit: u64,
) -> Result<()> {
    let size = dy.dtype.size();
    let (sh, top, h, oh) = (i64::from(p.sh), i64::from(p.pad_top), i64::from(p.h), i64::from(p.oh));
    let reach = reaches(p).0;
    // The input side with its channels padded to a multiple of 4 (the padded routes copy it).
    let in_row = u64::from(p.w) * u64::from(p.c.next_multiple_of(4)) * size;
    let dy_row = u64::from(p.ow) * u64::from(p.oc) * size;
    if for_filter {
        let x = known;
        let rows = fitting_rows(limit, (in_row, dy_row), (reach, sh));
        if rows < 1 {
            return grad_filter_in_columns(ctx, p, depthwise, (x, dy, out), limit);
        }
        let mut partial: Option<TensorRef> = None;
        let mut first = 0;
        while first < oh {
            let end = (first + rows).min(oh);
            let (lo, hi) = band_span((first, end), (sh, top, reach), h);
            if lo <= hi {
                let band = Params {
                    h: (hi - lo + 1) as u32,
                    oh: (end - first) as u32,
                    pad_top: (top + lo - first * sh) as u32,
                    ..*p
                };
                let (xs, dys) = (image_rows(x, lo, hi - lo + 1), image_rows(dy, first, end - first));
                let target = match &partial {
                    None => out.clone(),
                    Some(t) => t.clone(),
                };
                grad_of(ctx, &band, depthwise, true, (&xs, &dys, &target))?;
                match &partial {
                    None => partial = Some(ctx.allocate_temp(out.dtype, &out.shape)?),
                    Some(t) => super::binary::launch(ctx.stream()?, BinaryOp::Add, out, t, out)?,
                }
            }
            first = end;
        }
        if partial.is_none() {
            ctx.stream()?.fill(out.address, out.byte_len(), 0)?;
        }
        return Ok(());
    }
    // dx rows x0..x1 take dy rows o0..=o1: those whose windows (rows o * stride - top .. + reach) meet them.
    let out_row = u64::from(p.w) * u64::from(p.c) * size;
    let rows = input_gradient_rows(limit, (dy_row, out_row, in_row), (reach, sh));
    if rows < 1 {
        return grad_input_in_columns(ctx, p, depthwise, (known, dy, out), limit);
    }
    let mut x0 = 0;
    while x0 < h {
        let x1 = (x0 + rows).min(h);
        let target = image_rows(out, x0, x1 - x0);
        // The first dy row whose window reaches x0, kept at or before the one starting there
        // (so that the band's top padding stays non-negative; a row in between adds nothing).
        let reaching = (x0 + top - reach + 1).div_euclid(sh) + i64::from((x0 + top - reach + 1).rem_euclid(sh) != 0);
        let o0 = reaching.min((x0 + top).div_euclid(sh)).max(0);
        let o1 = (x1 - 1 + top).div_euclid(sh).min(oh - 1);
        if o0 > o1 {
            ctx.stream()?.fill(target.address, target.byte_len(), 0)?;
        } else {
            let band =
                Params { h: (x1 - x0) as u32, oh: (o1 - o0 + 1) as u32, pad_top: (top + x0 - o0 * sh) as u32, ..*p };
            let dys = image_rows(dy, o0, o1 - o0 + 1);
            grad_of(ctx, &band, depthwise, false, (known, &dys, &target))?;
        }
        x0 = x1;
    }
    Ok(())
}

/// A convolution gradient under `p`: the filter's from the input (`known`) and dy, or the input's
/// from the filter (`known`) and dy.
fn grad_of(
    ctx: &mut dyn KernelContext,
    p: &Params,
    depthwise: bool,
    for_filter: bool,
    (known, dy, out): (&TensorRef, &TensorRef, &TensorRef),
) -> Result<()> {
    let (known, dy) = (known.clone(), dy.clone());
    // The gradients as implicit GEMMs (grouped too), convolutions and matmuls, each where it
    // applies, in order of preference; else the direct kernels.
    let as_products: &[GradRoute] = if for_filter {
        &[
            grad_filter_gemm,
            grad_filter_pointwise,
            grad_filter_rows,
            grad_filter_with_channels_padded,
            grad_filter_tiles,
            grad_filter_as_matmul,
        ]
    } else {
        &[
            grad_input_gemm,
            grad_input_pointwise,
            grad_input_with_channels_padded,
            grad_input_by_columns,
            grad_input_as_conv,
        ]
    };
    let (first, second) = if for_filter { (&known, &dy) } else { (&dy, &known) };
    if !depthwise {
        for route in as_products {
            if route(ctx, p, first, second, out)? {
                return Ok(());
            }
        }
    }
    if for_filter {
        return launch_grad_filter(ctx.stream()?, *p, depthwise, false, &known, &dy, out);
    }
    let stream = ctx.stream()?;
    let entry = if depthwise { "depthwise_grad_input" } else { "conv2d_grad_input" };
    if !window_fits(stream, entry, p) {
        // Deep or wide windows: the implicit GEMM, whose loop steps through tiles of them.
        let (p, filter) = if depthwise { depthwise_as_grouped(p, &known) } else { (*p, known.clone()) };
        return launch_grad_input_gemm(ctx, &p, &dy, &filter, out);
    }
    if depthwise && p.fc == 1 && p.c.is_multiple_of(4) && on_vec4s(stream, &[&dy, &known, out])? {
        if row_columns_fit(p, true) {
            // Four channels of four adjacent dx pixels per invocation.
            let blocks = u64::from(p.batch) * u64::from(p.h) * u64::from(p.w.div_ceil(4)) * u64::from(p.c / 4);
            return launch_with(stream, "depthwise_grad_input_rows", *p, &[&dy, &known], out, Some(blocks));
        }
        let invocations = Some(out.num_elements() / 4);
        return launch_with(stream, "depthwise_grad_input_c4", *p, &[&dy, &known], out, invocations);
    }
    launch(stream, entry, *p, &[&dy, &known], out)
}

/// A way to compute a convolution gradient: (ctx, params, x or dy, dy or filter, gradient) for the
/// filter's and the input's; false where it does not apply.
type GradRoute = fn(&mut dyn KernelContext, &Params, &TensorRef, &TensorRef, &TensorRef) -> Result<bool>;

/// Conv2DBackpropInput onto channels that are not a multiple of 4 (an RGB input's gradient:
/// saliency maps, adversarial examples): the filter padded with zero input channels to the next
/// multiple of 4, the padded input's gradient by `grad_input_by_columns` or `grad_input_as_conv`
/// (whose vec4 kernels need such channels), then its real channels. Returns false where neither
/// applies.
fn grad_input_with_channels_padded(
    ctx: &mut dyn KernelContext,
    p: &Params,
    dy: &TensorRef,
    filter: &TensorRef,
    dx: &TensorRef,
) -> Result<bool> {
    if p.fc != p.c || p.c.is_multiple_of(4) {
        return Ok(false);
    }
    let c4 = p.c.next_multiple_of(4);
    let padded_dx = ctx.allocate_temp(dx.dtype, &with_size(&dx.shape, IMAGE_CHANNELS, c4))?;
    let padded_filter = with_channels(ctx, filter, FILTER_IN_CHANNELS, c4)?;
    let padded = Params { c: c4, fc: c4, ..*p };
    if !grad_input_by_columns(ctx, &padded, dy, &padded_filter, &padded_dx)?
        && !grad_input_as_conv(ctx, &padded, dy, &padded_filter, &padded_dx)?
    {
        return Ok(false);
    }
    first_channels(ctx.stream()?, &padded_dx, dx, IMAGE_CHANNELS)?;
    Ok(true)
}

/// Elements of im2col columns one step of `grad_input_by_columns` writes, at most.
const GRAD_INPUT_COLUMNS_BYTES: u64 = 64 << 20;

/// Conv2DBackpropInput of a strided convolution, or one onto few channels: the im2col columns dy x filter^T, a matmul,
/// summed back onto the input (`conv.wgsl`'s `col2im_c4`), a chunk of whole images at a time.
/// Returns false where it does not apply: stride 1 onto 16 channels or more, grouped convolutions,
/// input channels not a multiple of 4, and an image whose columns do not fit a chunk.
fn grad_input_by_columns(
    ctx: &mut dyn KernelContext,
    p: &Params,
    dy: &TensorRef,
    filter: &TensorRef,
    dx: &TensorRef,
) -> Result<bool> {
    // At stride 1 the forward convolution does the same work without the columns, unless it has
    // few output channels (the input's), where its kernels are slow.
    let stride_one = (p.sh, p.sw) == (1, 1);
    if (stride_one && p.c >= 16) || p.fc != p.c || !p.c.is_multiple_of(4) || !on_vec4s(ctx.stream()?, &[dx])? {
        return Ok(false);
    }
    let [batch, h, w, c, oh, ow, oc, kh, kw] = [p.batch, p.h, p.w, p.c, p.oh, p.ow, p.oc, p.kh, p.kw].map(i64::from);
    let row = kh * kw * c;
    let elem = dy.dtype.size() as i64;
    let budget = GRAD_INPUT_COLUMNS_BYTES.min(binding_limit(ctx.stream()?.device())) as i64 / elem;
    let per_image = (oh * ow * row).max(h * w * c).max(oh * ow * oc);
    if per_image > budget {
        return Ok(false);
    }
    let images = (budget / per_image).min(batch);
    let columns = ctx.allocate_temp(dy.dtype, &[images * oh * ow, row])?;
    let stream = ctx.stream()?;
    let filter_matrix = TensorRef { shape: vec![row, oc], ..filter.clone() };
    for n0 in (0..batch).step_by(images as usize) {
        let n = images.min(batch - n0);
        let dy_rows = TensorRef {
            address: dy.address + (n0 * oh * ow * oc * elem) as u64,
            dtype: dy.dtype,
            shape: vec![n * oh * ow, oc],
        };
        let chunk_columns = TensorRef { shape: vec![n * oh * ow, row], ..columns.clone() };
        super::matmul::launch(stream, &dy_rows, &filter_matrix, &chunk_columns, false, true)?;
        let dx_rows = windows::rows(dx, n0, n);
        if !on_vec4s(stream, &[&chunk_columns, &dx_rows])? {
            return Err(Error::internal("col2im's columns or gradient lost their vec4 alignment"));
        }
        let chunk = Params { batch: n as u32, ..*p };
        let invocations = dx_rows.num_elements() / 4;
        launch_with(stream, "col2im_c4", chunk, &[&chunk_columns, &chunk_columns], &dx_rows, Some(invocations))?;
    }
    Ok(true)
}

/// Conv2DBackpropInput as the forward convolution it is: the output gradient, spread out by the
/// strides (zeros between), convolved at stride 1 with the filter turned half a turn and its
/// channels swapped, padded by the window's span less the forward padding. That runs on the
/// implicit GEMM (`launch_conv`) instead of `conv2d_grad_input`'s one sum per input element,
/// hundreds of times slower. Returns false where it does not apply: grouped convolutions, and
/// forward padding wider than the window's span (the convolution would need negative padding).
fn grad_input_as_conv(
    ctx: &mut dyn KernelContext,
    p: &Params,
    dy: &TensorRef,
    filter: &TensorRef,
    dx: &TensorRef,
) -> Result<bool> {
    let span = |k: u32, d: u32| i64::from(k - 1) * i64::from(d);
    let (pad_top, pad_left) = (span(p.kh, p.dh) - i64::from(p.pad_top), span(p.kw, p.dw) - i64::from(p.pad_left));
    if p.fc != p.c || pad_top < 0 || pad_left < 0 {
        return Ok(false);
    }
    let (kh, kw, c, oc) = (i64::from(p.kh), i64::from(p.kw), i64::from(p.c), i64::from(p.oc));
    let (spread_h, spread_w) = ((p.oh - 1) * p.sh + 1, (p.ow - 1) * p.sw + 1);
    // One image's spread gradient must fit a binding (more images split the batch on overflow).
    let spread_image = u64::from(spread_h) * u64::from(spread_w) * u64::from(p.oc) * dy.dtype.size();
    if spread_image > binding_limit(ctx.stream()?.device()) {
        return Ok(false);
    }
    // turned[ky, kx, o, i] = filter[kh - 1 - ky, kw - 1 - kx, i, o].
    let turned = ctx.allocate_temp(filter.dtype, &[kh, kw, oc, c])?;
    let dims = [
        DimMap { out: kh, in_dim: kh, in_stride: kw * c * oc, offset: 0, mode: DimMode::Reverse },
        DimMap { out: kw, in_dim: kw, in_stride: c * oc, offset: 0, mode: DimMode::Reverse },
        DimMap { out: oc, in_dim: oc, in_stride: 1, offset: 0, mode: DimMode::Direct },
        DimMap { out: c, in_dim: c, in_stride: oc, offset: 0, mode: DimMode::Direct },
    ];
    let spread = if (p.sh, p.sw) == (1, 1) {
        dy.clone()
    } else {
        let shape = [i64::from(p.batch), i64::from(spread_h), i64::from(spread_w), oc];
        ctx.allocate_temp(dy.dtype, &shape)?
    };
    let stream = ctx.stream()?;
    index::map(stream, filter, &turned, &dims, None)?;
    if (p.sh, p.sw) != (1, 1) {
        let spread_params = Params { h: spread_h, w: spread_w, c: p.oc, ..*p };
        launch(stream, "spread_by_strides", spread_params, &[dy, dy], &spread)?;
    }
    let params = Params {
        h: spread_h,
        w: spread_w,
        c: p.oc,
        oh: p.h,
        ow: p.w,
        oc: p.c,
        fc: p.oc,
        sh: 1,
        sw: 1,
        pad_top: pad_top as u32,
        pad_left: pad_left as u32,
        ..*p
    };
    let plan = ConvPlan { out_shape: dx.shape.clone(), depthwise: false, params };
    launch_conv(stream, &plan, &spread, &turned, dx)?;
    Ok(true)
}

/// Conv2DBackpropFilter as implicit GEMMs (`on_gemm`): dW = im2col(x)^T x dy, a product per
/// group (`matmul_gpu::conv_grad_filter`). Returns false elsewhere.
fn grad_filter_gemm(
    ctx: &mut dyn KernelContext,
    p: &Params,
    x: &TensorRef,
    dy: &TensorRef,
    df: &TensorRef,
) -> Result<bool> {
    let stream = ctx.stream()?;
    if !on_gemm(stream, df.dtype) || !gemm_binds(stream, df.dtype, &[x, dy, df]) {
        return Ok(false);
    }
    let (g, groups) = group_geometry(p);
    matmul_gpu::conv_grad_filter(stream, &g, groups, x, dy, df)?;
    Ok(true)
}

/// Conv2DBackpropInput as implicit GEMMs (`on_gemm`): dy gathered through each tap at any stride,
/// times the filter with its output channels before its input channels, a product per group
/// (`matmul_gpu::conv_grad_input`). Returns false elsewhere.
fn grad_input_gemm(
    ctx: &mut dyn KernelContext,
    p: &Params,
    dy: &TensorRef,
    filter: &TensorRef,
    dx: &TensorRef,
) -> Result<bool> {
    if !on_gemm(ctx.stream()?, dx.dtype) || !gemm_binds(ctx.stream()?, dx.dtype, &[dy, filter, dx]) {
        return Ok(false);
    }
    launch_grad_input_gemm(ctx, p, dy, filter, dx)?;
    Ok(true)
}

/// Conv2DBackpropInput as implicit GEMMs, one per group (`matmul_gpu::conv_grad_input`).
fn launch_grad_input_gemm(
    ctx: &mut dyn KernelContext,
    p: &Params,
    dy: &TensorRef,
    filter: &TensorRef,
    dx: &TensorRef,
) -> Result<()> {
    let (g, groups) = group_geometry(p);
    let (kh, kw, fc, oc) = (i64::from(p.kh), i64::from(p.kw), i64::from(p.fc), i64::from(p.oc));
    let group_oc = oc / i64::from(groups);
    // grouped[g, ky, kx, o, i] = filter[ky, kx, i, g * group_oc + o].
    let grouped = ctx.allocate_temp(filter.dtype, &[i64::from(groups), kh, kw, group_oc, fc])?;
    let direct = DimMap::direct;
    let dims = [
        direct(i64::from(groups), group_oc),
        direct(kh, kw * fc * oc),
        direct(kw, fc * oc),
        direct(group_oc, 1),
        direct(fc, oc),
    ];
    let stream = ctx.stream()?;
    index::map(stream, filter, &grouped, &dims, None)?;
    matmul_gpu::conv_grad_input(stream, &g, groups, dy, &grouped, dx)
}

/// Conv2DBackpropFilter on the tiled product of CPU adapters (`im2col::launch_grad_filter_tiles`),
/// which packs the im2col rows as it goes: the gradient's transpose, then transposed into place.
/// Returns false where that kernel does not apply (grouped convolutions, GPUs, small products).
fn grad_filter_tiles(
    ctx: &mut dyn KernelContext,
    p: &Params,
    x: &TensorRef,
    dy: &TensorRef,
    df: &TensorRef,
) -> Result<bool> {
    if p.fc != p.c {
        return Ok(false);
    }
    let taps = i64::from(p.kh) * i64::from(p.kw) * i64::from(p.c);
    let transposed = ctx.allocate_temp(df.dtype, &[i64::from(p.oc), taps])?;
    if !im2col::launch_grad_filter_tiles(ctx.stream()?, &geometry(p), x, dy, &transposed)? {
        return Ok(false);
    }
    let out = TensorRef { shape: vec![taps, i64::from(p.oc)], ..df.clone() };
    index::permute_any_size(ctx, &transposed, &out, &[1, 0])?;
    Ok(true)
}

/// Output-channel quads one invocation of `conv2d_grad_filter_rows` sums (`OC_QUADS`): up to 4, each
/// input column it loads then feeds 16 output channels, not 4. On lavapipe the loads are the cost:
/// the ResNet50 stem's filter gradient took 112 ms with one quad, 88 with four.
fn output_quads_per_invocation(p: &Params) -> u32 {
    [4, 2, 1].into_iter().find(|&q| (p.oc / 4).is_multiple_of(q)).unwrap_or(1)
}

/// Conv2DBackpropFilter by `conv2d_grad_filter_rows` where `conv_grad_filter_rows_fit`.
fn grad_filter_rows(
    ctx: &mut dyn KernelContext,
    p: &Params,
    x: &TensorRef,
    dy: &TensorRef,
    df: &TensorRef,
) -> Result<bool> {
    let stream = ctx.stream()?;
    if !conv_grad_filter_rows_fit(stream, p, dy, df)? {
        return Ok(false);
    }
    launch_grad_filter(stream, *p, false, true, x, dy, df)?;
    Ok(true)
}

/// Conv2DBackpropFilter of an input whose channels are not a multiple of 4 (RGB: 3), as
/// `conv_with_channels_padded` runs the forward convolution: the input padded with zero channels
/// to the next multiple of 4, the gradient of the padded filter on the tiled product, then its
/// real channels. Returns false where the tiled product does not take it.
fn grad_filter_with_channels_padded(
    ctx: &mut dyn KernelContext,
    p: &Params,
    x: &TensorRef,
    dy: &TensorRef,
    df: &TensorRef,
) -> Result<bool> {
    if p.fc != p.c || p.c.is_multiple_of(4) {
        return Ok(false);
    }
    let c4 = p.c.next_multiple_of(4);
    let padded_df = ctx.allocate_temp(df.dtype, &with_size(&df.shape, FILTER_IN_CHANNELS, c4))?;
    let padded_x = with_channels(ctx, x, IMAGE_CHANNELS, c4)?;
    if !grad_filter_tiles(ctx, &Params { c: c4, fc: c4, ..*p }, &padded_x, dy, &padded_df)? {
        return Ok(false);
    }
    first_channels(ctx.stream()?, &padded_df, df, FILTER_IN_CHANNELS)?;
    Ok(true)
}

/// Elements of the im2col rows (and of the input and output gradient they come from) one step of
/// `grad_filter_as_matmul` binds, at most.
const GRAD_FILTER_CHUNK_BYTES: u64 = 64 << 20;

/// Conv2DBackpropFilter as the matmul it is: the gradient, as a [kh * kw * c, oc] matrix, is
/// im2col(x)^T x dy, summed over chunks of whole images (or of an image's output rows) whose
/// im2col rows are written out by an index map. Returns false where it does not apply: grouped
/// convolutions, and an output row whose im2col row does not fit a chunk.
fn grad_filter_as_matmul(
    ctx: &mut dyn KernelContext,
    p: &Params,
    x: &TensorRef,
    dy: &TensorRef,
    df: &TensorRef,
) -> Result<bool> {
    if p.fc != p.c {
        return Ok(false);
    }
    let [batch, h, w, c, oh, ow, oc, kh, kw, sh, sw, dh, dw, top, left] =
        [p.batch, p.h, p.w, p.c, p.oh, p.ow, p.oc, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.pad_top, p.pad_left]
            .map(i64::from);
    // The rows and columns the windows reach, from the first (padding) one.
    let (reach_h, reach_w) = ((oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1);
    let padded = top > 0 || left > 0 || reach_h > h || reach_w > w;
    let (hp, wp) = if padded { (reach_h, reach_w) } else { (h, w) };
    let taps = kh * kw * c;
    let elem = x.dtype.size() as i64;
    let device = ctx.stream()?.device();
    let budget = GRAD_FILTER_CHUNK_BYTES.min(binding_limit(device)) as i64 / elem;
    // The matmul's contraction (a chunk's pixels) is one loop of the direct kernel.
    let most_pixels = loop_budget(device, 64) as i64;
    // Elements a chunk of `rows` output rows binds: its im2col rows, the input they read, its dy.
    let chunk_size =
        |rows: i64| (rows * ow * taps).max(((rows - 1) * sh + (kh - 1) * dh + 1) * wp * c).max(rows * ow * oc);
    let per_image = (oh * ow * taps).max(hp * wp * c).max(oh * ow * oc);
    let (images, rows) = if per_image <= budget && oh * ow <= most_pixels {
        ((budget / per_image).min(most_pixels / (oh * ow)), oh)
    } else {
        let fits = |r: i64| chunk_size(r) <= budget && r * ow <= most_pixels;
        let rows = (1..=oh).take_while(|&r| fits(r)).last().unwrap_or(0);
        if rows == 0 {
            return Ok(false);
        }
        (1, rows)
    };
    let images = images.min(batch);
    // A 1x1 window at stride 1 reads x as it is.
    let x_is_im2col = (kh, kw, sh, sw) == (1, 1, 1, 1) && !padded;
    let padded_x = if padded { Some(ctx.allocate_temp(x.dtype, &[batch, hp, wp, c])?) } else { None };
    let im2col = if x_is_im2col { None } else { Some(ctx.allocate_temp(x.dtype, &[images * rows * ow, taps])?) };
    let chunks = (batch + images - 1) / images * ((oh + rows - 1) / rows);
    let partial = if chunks > 1 { Some(ctx.allocate_temp(df.dtype, &[taps, oc])?) } else { None };
    let stream = ctx.stream()?;
    let source = match &padded_x {
        Some(padded_x) => {
            let dims = [
                DimMap { out: batch, in_dim: batch, in_stride: h * w * c, offset: 0, mode: DimMode::Direct },
                DimMap { out: hp, in_dim: h, in_stride: w * c, offset: top, mode: DimMode::ConstantPad },
                DimMap { out: wp, in_dim: w, in_stride: c, offset: left, mode: DimMode::ConstantPad },
                DimMap { out: c, in_dim: c, in_stride: 1, offset: 0, mode: DimMode::Direct },
            ];
            index::map(stream, x, padded_x, &dims, None)?;
            padded_x
        }
        None => x,
    };
    let df_matrix = TensorRef { shape: vec![taps, oc], ..df.clone() };
    let mut first_chunk = true;
    for n0 in (0..batch).step_by(images as usize) {
        for oy0 in (0..oh).step_by(rows as usize) {
            let (n, r) = (images.min(batch - n0), rows.min(oh - oy0));
            let pixels = n * r * ow;
            let first_pixel = (n0 * oh + oy0) * ow;
            let a = match &im2col {
                None => TensorRef {
                    address: x.address + (first_pixel * c * elem) as u64,
                    dtype: x.dtype,
                    shape: vec![pixels, taps],
                },
                Some(im2col) => {
                    let start = (n0 * hp * wp + oy0 * sh * wp) * c;
                    let reach =
                        ((n - 1) * hp * wp + ((r - 1) * sh + (kh - 1) * dh) * wp + (ow - 1) * sw + (kw - 1) * dw + 1)
                            * c;
                    let view = TensorRef {
                        address: source.address + (start * elem) as u64,
                        dtype: source.dtype,
                        shape: vec![reach],
                    };
                    let direct = DimMap::direct;
                    let dims = [
                        direct(n, hp * wp * c),
                        direct(r, sh * wp * c),
                        direct(ow, sw * c),
                        direct(kh, dh * wp * c),
                        direct(kw, dw * c),
                        direct(c, 1),
                    ];
                    let a = TensorRef { shape: vec![pixels, taps], ..im2col.clone() };
                    index::map(stream, &view, &a, &dims, None)?;
                    a
                }
            };
            let b = TensorRef {
                address: dy.address + (first_pixel * oc * elem) as u64,
                dtype: dy.dtype,
                shape: vec![pixels, oc],
            };
            match (&partial, first_chunk) {
                (Some(partial), false) => {
                    super::matmul::launch(stream, &a, &b, partial, true, false)?;
                    super::binary::launch(stream, BinaryOp::Add, &df_matrix, partial, &df_matrix)?;
                }
                _ => super::matmul::launch(stream, &a, &b, &df_matrix, true, false)?,
            }
            first_chunk = false;
        }
    }
    Ok(true)
}

/// Output pixels one invocation of `conv2d_grad_filter` sums.
const GRAD_FILTER_SLICE: u32 = 512;
/// The most scratch memory the partial sums may take.
const GRAD_FILTER_PARTIAL_BYTES: u64 = 64 << 20;

/// Conv2DBackpropFilter and DepthwiseConv2dNativeBackpropFilter: split over slices of the output
/// pixels into scratch partial sums, then summed, when there is more than one slice; else one
/// invocation per filter element. Four output channels per invocation (`conv2d_grad_filter_oc4`)
/// where they fit a vec4; `conv2d_grad_filter_rows` where the caller found that it fits
/// (`conv_rows`, from `grad_filter_rows`). A slice's loop stays within the adapter's loop limit.
fn launch_grad_filter(
    stream: &Stream,
    mut p: Params,
    depthwise: bool,
    conv_rows: bool,
    x: &TensorRef,
    dy: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let n = shader_len(out.num_elements(), "conv2d_grad_filter")?;
    let channels_in_vec4s = depthwise && p.fc == 1 && p.c.is_multiple_of(4) && on_vec4s(stream, &[x, dy, out])?;
    // The rows entries walk quads of four adjacent pixels of a row, the others single pixels.
    let rows = channels_in_vec4s && row_columns_fit(&p, false) || conv_rows;
    let (pixels, slice_pixels) = if rows {
        (u64::from(p.batch) * u64::from(p.oh) * u64::from(p.ow.div_ceil(4)), GRAD_FILTER_SLICE / 4)
    } else {
        (u64::from(p.batch) * u64::from(p.oh) * u64::from(p.ow), GRAD_FILTER_SLICE)
    };
    let unit = out.dtype.size();
    let cap = GRAD_FILTER_PARTIAL_BYTES / unit / u64::from(n.max(1));
    let device = stream.device();
    let longest = loop_budget(device, 16);
    let slices = pixels.div_ceil(u64::from(slice_pixels)).min(cap).max(pixels.div_ceil(longest));
    p.slices = shader_len(slices.max(1), "conv2d_grad_filter")?;
    p.slice_len = shader_len(pixels.div_ceil(slices.max(1)), "conv2d_grad_filter")?;
    check_loop_iterations(device, u64::from(p.slice_len), "convolution filter gradient")?;
    // `four_channels_fit` checks the vec4 views of binding 1 (here dy) and the output.
    let (entry, per_invocation) = if conv_rows {
        // One invocation per filter row, input channel and output channel quad.
        ("conv2d_grad_filter_rows", 4 * p.kw * output_quads_per_invocation(&p))
    } else if rows {
        // One invocation per filter row and channel quad: the row's kw taps of four channels.
        ("depthwise_grad_filter_rows", 4 * p.kw)
    } else if channels_in_vec4s {
        ("depthwise_grad_filter_c4", 4)
    } else if depthwise {
        ("depthwise_grad_filter", 1)
    } else if four_channels_fit(stream, &p, dy, out)? {
        ("conv2d_grad_filter_oc4", 4)
    } else {
        ("conv2d_grad_filter", 1)
    };
    if n == 0 || slices <= 1 {
        return launch_with(stream, entry, p, &[x, dy], out, Some(u64::from(n / per_invocation)));
    }
    p.n = n;
    let partial_bytes = slices * u64::from(n) * unit;
    let scratch = device.scratch.get(device, "conv2d grad filter partials", partial_bytes)?;
    let [x_mem, dy_mem, out_mem] = [x, dy, out].map(|t| device.memory.resolve(t.address, t.byte_len().max(4)));
    let (x_mem, dy_mem, out_mem) = (x_mem?, dy_mem?, out_mem?);
    let threads = u64::from(n / per_invocation) * slices;
    let pipeline_of = |entry| conv_pipeline(device, entry, &p, threads, out.dtype);
    let (partial, sum) = (pipeline_of(entry)?, pipeline_of("conv2d_grad_filter_sum")?);
    // On CPU adapters the f32 rows kernel reads x and dy from textures where both start on a texel.
    let texels = entry == "conv2d_grad_filter_rows"
        && out.dtype == DType::F32
        && device.kernel_profile() == KernelProfile::Cpu
        && texels_pay_off(dy.byte_len() / 16, dy.byte_len() / 16)
        && texels_pay_off(dy.byte_len() / 16, x.byte_len() / 16)
        && x.byte_len().is_multiple_of(16);
    let texel_partial = match texels {
        true => Some(conv_pipeline_in(device, &TEXELS_SHADER, entry, &p, threads)?),
        false => None,
    };
    stream.encode(|core, encoder| {
        let (x_bind, x_off) = storage_window(core, &x_mem, unit)?;
        let (dy_bind, dy_off) = storage_window(core, &dy_mem, unit)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, unit)?;
        let partials = Binding { buffer: &scratch, offset: 0, size: partial_bytes };
        (p.in_off, p.f_off, p.out_off) = (x_off, dy_off, 0);
        let bindings = [x_bind, dy_bind, partials, x_bind, x_bind, x_bind];
        let starts = [x_bind.offset + u64::from(x_off) * unit, dy_bind.offset + u64::from(dy_off) * unit];
        match &texel_partial {
            Some(texel_partial) if starts.iter().all(|s| s.is_multiple_of(16)) => {
                let scratch = &core.scratch;
                let x_view = scratch.texels(core, encoder, TEXELS_A, x_bind.buffer, starts[0], x.byte_len() / 16)?;
                let dy_view = scratch.texels(core, encoder, TEXELS_B, dy_bind.buffer, starts[1], dy.byte_len() / 16)?;
                let (label, params) = ("conv2d_grad_filter_rows texels", bytemuck::bytes_of(&p));
                let views = [&x_view, &dy_view];
                dispatch_with_texels(core, encoder, label, texel_partial, &bindings, &views, params, threads)?;
            }
            _ => dispatch(core, encoder, entry, &partial, &bindings, bytemuck::bytes_of(&p), threads)?,
        }
        (p.out_off, p.offset_off) = (out_off, 0);
        let bindings = [x_bind, dy_bind, out_bind, partials, x_bind, x_bind];
        dispatch(core, encoder, "conv2d_grad_filter_sum", &sum, &bindings, bytemuck::bytes_of(&p), u64::from(n))
    })
}

/// FusedBatchNorm, V2 and V3; with is_training = false: normalise with the given mean and variance.
pub fn fused_batch_norm(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if channels_first(kernel)? {
        return layout::channels_last(ctx, kernel, &IMAGE_IN_OUT, fused_batch_norm);
    }
    if kernel.attrs.bool("is_training")? {
        return super::batch_norm::forward_training(ctx, kernel);
    }
    batch::split_batch_on_overflow(ctx, kernel, &BATCHED_IMAGE, batch_norm_inference)
}

/// FusedBatchNormV3 with is_training = false.
fn batch_norm_inference(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let x = ctx.input(0)?;
    let [scale, offset, mean, variance] = [1, 2, 3, 4].map(|i| ctx.input(i));
    let (scale, offset, mean, variance) = (scale?, offset?, mean?, variance?);
    super::batch_norm::geometry(
        &x,
        &[(&scale, "scale"), (&offset, "offset"), (&mean, "mean"), (&variance, "variance")],
    )?;
    let y = ctx.allocate_output(0, x.dtype, &x.shape)?;
    let epsilon = kernel.attrs.float("epsilon")?;
    launch_batch_norm(ctx.stream()?, &x, &scale, &offset, &mean, &variance, epsilon, &y)?;
    // In inference mode TF passes the population statistics through, but reports NaN batch
    // statistics for an empty input (as in training).
    for (index, source) in [(1, &mean), (2, &variance), (3, &mean), (4, &variance)] {
        let out = ctx.allocate_output(index, source.dtype, &source.shape)?;
        if index <= 2 && x.num_elements() == 0 {
            ctx.stream()?.fill(out.address, out.byte_len(), f32::NAN.to_bits())?;
        } else {
            ctx.stream()?.memcpy_dtod(out.address, source.address, source.byte_len())?;
        }
    }
    if ctx.num_outputs() > 5 {
        ctx.allocate_output(5, x.dtype, &[0])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn windows_follow_tf() {
        assert_eq!(window(7, 3, 2, 1, "VALID", (0, 0)).unwrap(), (3, 0));
        assert_eq!(window(7, 3, 2, 1, "SAME", (0, 0)).unwrap(), (4, 1));
        assert_eq!(window(5, 3, 1, 2, "SAME", (0, 0)).unwrap(), (5, 2));
        assert_eq!(window(5, 3, 1, 1, "EXPLICIT", (2, 1)).unwrap(), (6, 2));
        assert!(window(2, 5, 1, 1, "VALID", (0, 0)).is_err());
    }
}
