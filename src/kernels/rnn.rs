//! CudnnRNN, CudnnRNNV2, CudnnRNNV3 and their backprops (`wgsl/rnn.wgsl`): the recurrent layers
//! Keras's `LSTM` and `GRU` call on any GPU, and what `tf.compat` paths emit.
//!
//! Each direction of each layer runs its input projection as one matmul over every time step,
//! then one step at a time: a matmul of the previous hidden state with the recurrent weights and
//! a dispatch of `forward_step` (activations, state update, output). The backprop walks the steps
//! back the same way, keeping the gate gradients of every step, and finishes with four products
//! for the weight gradients and the input gradient.
//!
//! Layouts follow cuDNN's: `params` holds, for each layer and direction in turn, the input weights
//! (one `[units, input]` matrix per gate), the recurrent weights (`[units, units]` per gate), the
//! input biases and the recurrent biases; gates in cuDNN's order (lstm `i, f, c, o`; gru `r, z, n`,
//! see [`gru_gate_order`]). `reserve_space` is ours: the states, the gate values and the inner
//! layers' outputs the backprop needs.

use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader, BINDING_LIMIT_ERROR};
use crate::runtime::Stream;

use super::slice::StridedView;
use super::{matmul, reduce, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "rnn",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/element_f32.wgsl"),
        include_str!("../../wgsl/rnn.wgsl")
    ),
    storage_buffers: 8,
    uniform_buffers: 0,
    textures: 0,
};

/// The cells in float64 (SHADER_F64), with `math_f64.wgsl`'s exp and tanh.
pub const FLOAT64_SHADER: Shader = Shader {
    name: "rnn_f64",
    source: concat!(
        include_str!("../../wgsl/math_f64.wgsl"),
        include_str!("../../wgsl/element_f64.wgsl"),
        include_str!("../../wgsl/rnn.wgsl")
    ),
    storage_buffers: 8,
    uniform_buffers: 0,
    textures: 0,
};

/// The binding of `rnn.wgsl`'s `lens` (u32 sequence lengths); every other binding holds elements.
const LENGTHS_BINDING: usize = 3;

/// Environment variable: `rzn` or `zrn`, the order of the GRU gates' weights in `params`.
pub const ENV_GRU_GATE_ORDER: &str = "TF_WGPU_GRU_GATE_ORDER";

/// The op's generation: which inputs it has and what it writes to `host_reserved`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
    V3,
}

impl Version {
    fn of(op: &str) -> Version {
        if op.ends_with("V3") {
            Version::V3
        } else if op.ends_with("V2") {
            Version::V2
        } else {
            Version::V1
        }
    }

    /// Inputs before `output` in the backprop: V3 adds `sequence_lengths` after `params`.
    fn forward_inputs(self) -> usize {
        if self == Version::V3 {
            5
        } else {
            4
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Relu,
    Tanh,
    Lstm,
    Gru,
}

impl Mode {
    fn parse(name: &str) -> Result<Mode> {
        match name {
            "rnn_relu" => Ok(Mode::Relu),
            "rnn_tanh" => Ok(Mode::Tanh),
            "lstm" => Ok(Mode::Lstm),
            "gru" => Ok(Mode::Gru),
            other => Err(Error::invalid_argument(format!("Invalid RNN mode: {other}"))),
        }
    }

    /// The shader's `MODE` constant.
    fn code(self) -> u32 {
        match self {
            Mode::Relu => 0,
            Mode::Tanh => 1,
            Mode::Lstm => 2,
            Mode::Gru => 3,
        }
    }

    fn gates(self) -> i64 {
        match self {
            Mode::Lstm => 4,
            Mode::Gru => 3,
            Mode::Relu | Mode::Tanh => 1,
        }
    }

    /// Values per unit the forward pass keeps for the backprop (`wgsl/rnn.wgsl`'s gate slots).
    fn slots(self) -> i64 {
        match self {
            Mode::Lstm | Mode::Gru => 4,
            Mode::Relu | Mode::Tanh => 0,
        }
    }
}

/// The order of the GRU gates' weights: cuDNN's `r, z, n` where TF is a CUDA build (Keras swaps its
/// `z, r, n` into it there), Keras's own `z, r, n` elsewhere (Keras passes it unchanged to
/// `CudnnRNNV3` when `tf.sysconfig.get_build_info()["is_cuda_build"]` is false, as for
/// `tensorflow-cpu`, macOS and Windows). `TF_WGPU_GRU_GATE_ORDER` overrides. Returns the slots of
/// (r, z).
pub fn gru_gate_order() -> (u32, u32) {
    static ORDER: OnceLock<(u32, u32)> = OnceLock::new();
    *ORDER.get_or_init(|| {
        let cudnn = match std::env::var(ENV_GRU_GATE_ORDER).as_deref() {
            Ok("rzn") => true,
            Ok("zrn") => false,
            other => {
                if let Ok(value) = other {
                    log::warn!("tensorflow-wgpu: {ENV_GRU_GATE_ORDER}={value:?} is neither rzn nor zrn; ignored");
                }
                crate::ffi::tf::is_cuda_build().unwrap_or_else(|| {
                    log::warn!(
                        "tensorflow-wgpu: cannot tell whether TF is a CUDA build (no build_info.py beside its \
                         library); GRU weights are read in cuDNN's r, z, n order. Set {ENV_GRU_GATE_ORDER}=zrn \
                         if Keras sends z, r, n (TF builds without CUDA)"
                    );
                    true
                })
            }
        };
        if cudnn {
            (0, 1)
        } else {
            (1, 0)
        }
    })
}

/// The node's attributes, checked.
struct Config {
    mode: Mode,
    input_mode: String,
    dirs: i64,
    dropout: f32,
    seeds: [i64; 2],
    is_training: bool,
    time_major: bool,
    /// LSTM projection size (V3's num_proj), 0 for none.
    num_proj: i64,
}

impl Config {
    fn read(kernel: &KernelInstance, version: Version, forward: bool) -> Result<Config> {
        let attrs = &kernel.attrs;
        let mode = Mode::parse(attrs.str("rnn_mode")?)?;
        let input_mode = attrs.str("input_mode")?.to_string();
        if !["linear_input", "skip_input", "auto_select"].contains(&input_mode.as_str()) {
            return Err(Error::invalid_argument(format!("Invalid RNN input mode: {input_mode}")));
        }
        let dirs = match attrs.str("direction")? {
            "unidirectional" => 1,
            "bidirectional" => 2,
            other => return Err(Error::invalid_argument(format!("Invalid RNN direction mode: {other}"))),
        };
        let (time_major, num_proj) =
            if version == Version::V3 { (attrs.bool("time_major")?, attrs.int("num_proj")?) } else { (true, 0) };
        if num_proj < 0 || (num_proj > 0 && mode != Mode::Lstm) {
            return Err(Error::invalid_argument(format!(
                "num_proj must be 0, or positive for an lstm; got {num_proj} for {}",
                attrs.str("rnn_mode")?
            )));
        }
        let is_training = !forward || attrs.bool("is_training")?;
        let dropout = attrs.float("dropout")?;
        if !(0.0..1.0).contains(&dropout) {
            return Err(Error::invalid_argument(format!("dropout must be in [0, 1), got {dropout}")));
        }
        let seeds = [attrs.int("seed")?, attrs.int("seed2")?];
        Ok(Config { mode, input_mode, dirs, dropout, seeds, is_training, time_major, num_proj })
    }
}

/// The shapes of one call, as TF's `ExtractForwardInput` checks them.
#[derive(Clone, Debug)]
struct Model {
    mode: Mode,
    dirs: i64,
    layers: i64,
    steps: i64,
    batch: i64,
    input_size: i64,
    /// Units of the gates and the cell state.
    units: i64,
    /// Units of the hidden state and the output: `units`, or the projection's size.
    hidden: i64,
    /// Whether an LSTM projects m = o * tanh(c) to h (V3's num_proj).
    proj: bool,
    /// `skip_input` (or `auto_select` with input size = units): layer 0 adds its input to every
    /// gate instead of projecting it.
    skip_input: bool,
    time_major: bool,
    /// cuDNN drops out each layer's output before the next layer reads it (training only); the
    /// masks are kept in the reserve space.
    dropout: f32,
}

/// Where one direction of one layer finds its weights (in `params`) and keeps its state (in the
/// reserve space), in elements.
#[derive(Clone, Copy, Debug)]
struct Pseudo {
    layer: i64,
    dir: i64,
    input_size: i64,
    /// Input weights `[gates * units, input_size]`; None for skip_input's first layer.
    w: Option<i64>,
    r: i64,
    bias_w: i64,
    bias_r: i64,
    /// Hidden states `[steps + 1, batch, units]` by step (step 0 is the initial state).
    hs: i64,
    /// Cell states, the same (lstm).
    cs: i64,
    /// Gate values `[steps, batch, slots * units]` by step.
    gates: i64,
    /// Projection: its weights `[hidden, units]` in params, and m `[steps, batch, units]` by step
    /// in the reserve space.
    wp: i64,
    ms: i64,
}

impl Model {
    fn new(config: &Config, input: &[i64], input_h: &[i64], input_c: &[i64]) -> Result<Model> {
        if input.len() != 3 {
            return Err(Error::invalid_argument("RNN input must be a 3-D vector."));
        }
        if input_h.len() != 3 {
            return Err(Error::invalid_argument("RNN input_h must be a 3-D vector."));
        }
        let time_major = config.time_major;
        let (steps, batch) = if time_major { (input[0], input[1]) } else { (input[1], input[0]) };
        let dirs = config.dirs;
        let layers = if time_major { input_h[0] } else { input_h[1] } / dirs;
        let hidden = input_h[2];
        let state: Vec<i64> =
            if time_major { vec![dirs * layers, batch, hidden] } else { vec![batch, dirs * layers, hidden] };
        if input_h != state.as_slice() {
            return Err(Error::invalid_argument(format!("Invalid input_h shape: {input_h:?} {state:?}")));
        }
        let proj = config.num_proj > 0;
        if config.mode == Mode::Lstm && !proj && input_c != input_h {
            return Err(Error::invalid_argument(format!(
                "input_h and input_c must have the same shape w/o projection: {input_h:?} {input_c:?}"
            )));
        }
        if proj
            && (input_c.len() != 3 || input_c[..2] != input_h[..2] || hidden > input_c[2] || config.num_proj != hidden)
        {
            return Err(Error::invalid_argument(format!(
                "Invalid input_h and input_c w/ projection size: {} {input_h:?} {input_c:?}",
                config.num_proj
            )));
        }
        let units = if proj { input_c[2] } else { hidden };
        if layers == 0 {
            return Err(Error::invalid_argument(format!("RNN needs at least one layer: input_h shape {input_h:?}")));
        }
        let input_size = input[2];
        // TF's ToRNNInputMode compares the input size with input_h's units (the projection's
        // size where there is one).
        let skip_input = match config.input_mode.as_str() {
            "skip_input" => true,
            "auto_select" => input_size == hidden,
            _ => false,
        };
        if skip_input && input_size != units {
            return Err(Error::invalid_argument(format!(
                "skip_input needs the input size ({input_size}) to equal the number of units ({units})"
            )));
        }
        let dropout = if layers > 1 { config.dropout } else { 0.0 };
        let model = Model {
            mode: config.mode,
            dirs,
            layers,
            steps,
            batch,
            input_size,
            units,
            hidden,
            proj,
            skip_input,
            time_major,
            dropout,
        };
        model.check_sizes_fit()?;
        Ok(model)
    }

    /// Refuses shapes whose params or reserve sizes would overflow the i64 arithmetic of `layout`
    /// (dimensions of empty tensors can be huge: [0, 2^40, 2^40] holds nothing).
    fn check_sizes_fit(&self) -> Result<()> {
        let product = |factors: &[i64]| factors.iter().try_fold(1i128, |acc, &f| acc.checked_mul(f as i128));
        let (t, b, h, d, l) = (self.steps, self.batch, self.units, self.dirs, self.layers);
        let g = self.mode.gates();
        let widest = self.input_size.max(d * self.hidden.min(i64::MAX / 2)).max(h);
        let sizes = [
            product(&[l, d, g, h, widest]),
            product(&[l, d, g, h, h]),
            product(&[l, d, t.saturating_add(1), b, h, 2]),
            product(&[l, d, t, b, 4, h]),
            product(&[l, t, b, d, h, 2]),
        ];
        let limit = (i64::MAX / 8) as i128;
        if sizes.iter().any(|s| s.is_none_or(|s| s > limit)) {
            return Err(Error::invalid_argument(format!(
                "RNN shapes too large: {t} steps, batch {b}, input size {}, {h} units, {l} layers",
                self.input_size
            )));
        }
        Ok(())
    }

    fn rows(&self) -> i64 {
        self.steps * self.batch
    }

    fn gate_units(&self) -> i64 {
        self.mode.gates() * self.units
    }

    /// Every (layer, direction) in params order, with its offsets, and the params and reserve
    /// sizes.
    fn layout(&self) -> (Vec<Pseudo>, i64, i64) {
        let (gh, h, hh) = (self.gate_units(), self.units, self.hidden);
        let (steps_b, proj_len) = (self.steps * self.batch, if self.proj { hh * h } else { 0 });
        let (mut params, mut reserve) = (0, 0);
        let mut pseudo = Vec::new();
        for layer in 0..self.layers {
            for dir in 0..self.dirs {
                let input_size = if layer == 0 { self.input_size } else { self.dirs * hh };
                let w = (!(self.skip_input && layer == 0)).then_some(params);
                params += w.map_or(0, |_| gh * input_size);
                let r = params;
                let wp = r + gh * hh;
                let bias_w = wp + proj_len;
                let bias_r = bias_w + gh;
                params = bias_r + gh;
                let hs = reserve;
                let cs = hs + (self.steps + 1) * self.batch * hh;
                let gates = cs + if self.mode == Mode::Lstm { (self.steps + 1) * self.batch * h } else { 0 };
                let ms = gates + steps_b * self.mode.slots() * h;
                reserve = ms + if self.proj { steps_b * h } else { 0 };
                pseudo.push(Pseudo { layer, dir, input_size, w, r, bias_w, bias_r, hs, cs, gates, wp, ms });
            }
        }
        // The outputs of every layer but the last feed the next one (and their dropout masks).
        reserve += (self.layers - 1) * self.inner_len() * if self.dropout > 0.0 { 2 } else { 1 };
        (pseudo, params, reserve)
    }

    /// Elements of one inner layer's output.
    fn inner_len(&self) -> i64 {
        self.rows() * self.dirs * self.hidden
    }

    /// Where layer `layer`'s output (the next layer's input) starts in the reserve space.
    fn inner_output(&self, layer: i64, reserve_len: i64) -> i64 {
        let masks = if self.dropout > 0.0 { (self.layers - 1) * self.inner_len() } else { 0 };
        reserve_len - masks - (self.layers - 1 - layer) * self.inner_len()
    }

    /// Where the dropout mask of layer `layer`'s output starts in the reserve space.
    fn dropout_mask(&self, layer: i64, reserve_len: i64) -> i64 {
        reserve_len - (self.layers - 1 - layer) * self.inner_len()
    }

    /// The shader constants for this mode.
    fn constants(&self) -> [(&'static str, f64); 4] {
        let (r_gate, z_gate) = gru_gate_order();
        let proj = if self.proj { 1.0 } else { 0.0 };
        [("MODE", self.mode.code() as f64), ("R_GATE", r_gate as f64), ("Z_GATE", z_gate as f64), ("PROJ", proj)]
    }

    /// Offsets of pseudo-layer `index`'s block (rows of `width`) in TF's state layout (`[L*D, B, H]` time major, else
    /// `[B, L*D, H]`): first element and row stride.
    fn state_block(&self, index: i64, width: i64) -> (u32, u32) {
        let ld = self.layers * self.dirs;
        if self.time_major {
            ((index * self.batch * width) as u32, width as u32)
        } else {
            ((index * width) as u32, (ld * width) as u32)
        }
    }

    /// The output's shape (and output_backprop's).
    fn output_shape(&self) -> Vec<i64> {
        let wide = self.dirs * self.hidden;
        if self.time_major {
            vec![self.steps, self.batch, wide]
        } else {
            vec![self.batch, self.steps, wide]
        }
    }
}

/// The per-dispatch uniform block of `wgsl/rnn.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    batch: u32,
    units: u32,
    steps: u32,
    step: u32,
    reverse: u32,
    time_major: u32,
    xw_off: u32,
    xw_row: u32,
    xw_gate: u32,
    hr_off: u32,
    bias_w_off: u32,
    bias_r_off: u32,
    h_prev_off: u32,
    h_next_off: u32,
    c_prev_off: u32,
    c_next_off: u32,
    gates_off: u32,
    gate_slots: u32,
    y_off: u32,
    y_row: u32,
    y_col: u32,
    dgi_off: u32,
    dgr_off: u32,
    dh_off: u32,
    dc_off: u32,
    rows: u32,
    cols: u32,
    src_off: u32,
    src_stride: u32,
    src2_off: u32,
    src2_stride: u32,
    dst_off: u32,
    dst_stride: u32,
    flags: u32,
    keep_threshold: u32,
    keep_scale: f32,
    seeds: [u32; 4],
    m_off: u32,
    keep_scale_mid: f32,
    keep_scale_low: f32,
    first: u32,
    base: [u32; 8],
}

/// `copy_rows` flags.
const ADD_SRC2: u32 = 1;
const ADD_DST: u32 = 2;

/// The shader's eight bindings: a, hr, wts, lens, res, out, dgr, carry.
type Bindings<'a> = [&'a TensorRef; 8];

/// The elements `start..end` of a binding's tensor that one dispatch touches, or None for all of
/// them.
type Span = Option<(i64, i64)>;

/// One dispatch of `entry` over `invocations` threads, in the elements' type (`a`'s: float32, or
/// float64). A tensor past a storage binding binds only the span of it the dispatch touches
/// (a time step's rows of a long sequence): the shader's offsets stay the tensor's, and the
/// binding's base (where the tensor starts inside the window) wraps below the window's start, as
/// the shader's u32 index arithmetic does. Tensors within a binding are bound whole.
fn launch(
    stream: &Stream,
    model: &Model,
    entry: &'static str,
    tensors: Bindings,
    mut params: Params,
    invocations: i64,
    spans: [Span; 8],
) -> Result<()> {
    if invocations <= 0 {
        return Ok(());
    }
    let device = stream.device();
    let limit = super::windows::binding_limit(device);
    let element = tensors[0].dtype.size();
    let unit = |binding: usize| if binding == LENGTHS_BINDING { 4 } else { element };
    let slices = tensors
        .iter()
        .zip(spans)
        .enumerate()
        .map(|(i, (t, span))| match span {
            Some((start, end)) if t.byte_len() > limit => {
                let len = (end - start).max(1) as u64 * unit(i);
                Ok((device.memory.resolve(t.address + start as u64 * unit(i), len)?, start as u32))
            }
            _ => Ok((device.memory.resolve(t.address, t.byte_len().max(unit(i)))?, 0)),
        })
        .collect::<Result<Vec<_>>>()?;
    let constants = model.constants();
    let shader = if tensors[0].dtype == DType::F64 { &FLOAT64_SHADER } else { &SHADER };
    let pipeline =
        device.pipelines.get(device, shader, &PipelineSpec { entry, aliases: &[], constants: &constants })?;
    stream.encode(|core, encoder| {
        let mut bindings = Vec::with_capacity(8);
        for (i, (slice, start)) in slices.iter().enumerate() {
            let (binding, first) = storage_window(core, slice, unit(i))?;
            params.base[i] = first.wrapping_sub(*start);
            bindings.push(binding);
        }
        dispatch(core, encoder, entry, &pipeline, &bindings, bytemuck::bytes_of(&params), invocations as u64)
    })
}

/// The span of rows `start..end` of a strided matrix from element `offset` on, `cols` wide.
fn rows_span(offset: u32, stride: u32, cols: i64, (start, end): (i64, i64)) -> Span {
    let (offset, stride) = (i64::from(offset), i64::from(stride));
    Some((offset + start * stride, offset + (end - 1).max(start) * stride + cols))
}

/// Ranges of `rows` rows (`cols` wide, at most `widest_stride` apart in any tensor) whose spans fit
/// `limit` elements: one range where every tensor fits a binding (`whole_fits`).
fn row_ranges(rows: i64, widest_stride: i64, cols: i64, limit: i64, whole_fits: bool) -> Result<Vec<(i64, i64)>> {
    if whole_fits || rows <= 1 {
        return Ok(vec![(0, rows)]);
    }
    if cols > limit {
        return Err(Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {cols} elements exceeds this adapter's max_storage_buffer_binding_size: one row \
             of an RNN's tensors"
        )));
    }
    let per = ((limit - cols) / widest_stride.max(1) + 1).max(1);
    Ok((0..rows).step_by(per as usize).map(|r| (r, (r + per).min(rows))).collect())
}

/// `tensor[offset..]` (in elements) viewed as a matrix of `shape`.
fn view(tensor: &TensorRef, offset: i64, shape: &[i64]) -> TensorRef {
    TensorRef {
        address: tensor.address + offset as u64 * tensor.dtype.size(),
        dtype: tensor.dtype,
        shape: shape.to_vec(),
    }
}

/// `dst[rows, cols] (+)= src (+ src2)`, strided: see `copy_rows` in the shader.
#[allow(clippy::too_many_arguments)]
fn copy_rows(
    stream: &Stream,
    model: &Model,
    (src, src_off, src_stride): (&TensorRef, u32, u32),
    src2: Option<(&TensorRef, u32, u32)>,
    (dst, dst_off, dst_stride): (&TensorRef, u32, u32),
    rows: i64,
    cols: i64,
    accumulate: bool,
) -> Result<()> {
    let (src2_tensor, src2_off, src2_stride) = src2.unwrap_or((src, 0, 0));
    let flags = if src2.is_some() { ADD_SRC2 } else { 0 } | if accumulate { ADD_DST } else { 0 };
    let limit = super::windows::binding_limit(stream.device());
    let whole_fits = [src, src2_tensor, dst].iter().all(|t| t.byte_len() <= limit);
    let widest = i64::from(src_stride.max(src2_stride).max(dst_stride));
    let limit_elements = (limit / src.dtype.size()) as i64;
    if !whole_fits && cols > limit_elements {
        // One row past a binding (the input gradient of tens of millions of features): ranges of
        // its columns, each copied as rows of its own.
        for first in (0..cols).step_by(limit_elements as usize) {
            let (count, shift) = ((cols - first).min(limit_elements), first as u32);
            let src2 = src2.map(|(t, offset, stride)| (t, offset + shift, stride));
            let (src, dst) = ((src, src_off + shift, src_stride), (dst, dst_off + shift, dst_stride));
            copy_rows(stream, model, src, src2, dst, rows, count, accumulate)?;
        }
        return Ok(());
    }
    for (first, end) in row_ranges(rows, widest, cols, limit_elements, whole_fits)? {
        let at = |offset: u32, stride: u32| offset + first as u32 * stride;
        let params = Params {
            rows: (end - first) as u32,
            cols: cols as u32,
            src_off: at(src_off, src_stride),
            src_stride,
            src2_off: at(src2_off, src2_stride),
            src2_stride,
            dst_off: at(dst_off, dst_stride),
            dst_stride,
            flags,
            ..Default::default()
        };
        let span = |offset, stride| rows_span(offset, stride, cols, (0, end - first));
        let mut spans = [span(params.src_off, src_stride); 8];
        spans[1] = span(params.src2_off, src2_stride);
        spans[5] = span(params.dst_off, dst_stride);
        let tensors = [src, src2_tensor, src, src, src, dst, src, src];
        launch(stream, model, "copy_rows", tensors, params, (end - first) * cols, spans)?;
    }
    Ok(())
}

/// The `sequence_lengths` host input (V3), checked; None for V1/V2, whose sequences are all full.
fn read_lengths(ctx: &mut dyn KernelContext, version: Version, model: &Model) -> Result<Option<Vec<u32>>> {
    if version != Version::V3 {
        return Ok(None);
    }
    let (values, shape) = ctx.host_input_values(4)?;
    if shape != [model.batch] {
        return Err(Error::invalid_argument(format!(
            "sequence_lengths must be a vector of the batch size {}, got shape {shape:?}",
            model.batch
        )));
    }
    let lengths = values
        .iter()
        .map(|&len| {
            if (0..=model.steps).contains(&len) {
                Ok(len as u32)
            } else {
                Err(Error::invalid_argument(format!(
                    "sequence_lengths must be within [0, {}] (the maximum sequence length), got {len}",
                    model.steps
                )))
            }
        })
        .collect::<Result<_>>()?;
    Ok(Some(lengths))
}

/// Uploads the sequence lengths for the shaders (every sequence full length without them). Called
/// once there is work, so that the batch size is that of real tensors.
fn upload_lengths(ctx: &mut dyn KernelContext, model: &Model, lengths: Option<Vec<u32>>) -> Result<TensorRef> {
    let lengths = lengths.unwrap_or_else(|| vec![model.steps as u32; model.batch as usize]);
    let tensor = ctx.allocate_temp(DType::I32, &[model.batch.max(1)])?;
    ctx.stream()?.memcpy_htod(tensor.address, bytemuck::cast_slice(&lengths))?;
    Ok(tensor)
}

/// Whether the shapes leave anything to compute (the shaders index with u32).
fn check_sizes(model: &Model, op: &str, tensors: &[&TensorRef]) -> Result<()> {
    let too_big = tensors.iter().any(|t| t.num_elements() >= u32::MAX as u64)
        || model.rows() * model.dirs * model.units.max(model.input_size).max(model.hidden) >= u32::MAX as i64;
    if too_big {
        return Err(Error::unimplemented(format!("{op}: tensors past 2^32 elements are not supported on WGPU")));
    }
    Ok(())
}

/// Each training call with dropout draws new masks: the call's number feeds the random bits.
static DROPOUT_CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The `dropout_forward` / `dropout_backward` block for inner layer `layer`.
fn dropout_params(model: &Model, config: &Config, layer: i64, reserve_len: i64, call: u32) -> Params {
    let p = model.dropout as f64;
    // 1 / (1 - p) as three float32 parts whose sum is the float64 value (each remainder is exact).
    let scale = 1.0 / (1.0 - p);
    let high = scale as f32;
    let mid = (scale - f64::from(high)) as f32;
    Params {
        rows: model.rows() as u32,
        cols: (model.dirs * model.hidden) as u32,
        src_off: model.inner_output(layer, reserve_len) as u32,
        dst_off: model.dropout_mask(layer, reserve_len) as u32,
        keep_threshold: (p * 4294967296.0).min(u32::MAX as f64) as u32,
        keep_scale: high,
        keep_scale_mid: mid,
        keep_scale_low: (scale - f64::from(high) - f64::from(mid)) as f32,
        seeds: [config.seeds[0] as u32, config.seeds[1] as u32, call, layer as u32],
        ..Default::default()
    }
}

/// What the forward and backward kernels read and check first: the op, its attributes, the four
/// leading inputs, the model they describe with its layout, and the sequence lengths.
struct Call {
    op: &'static str,
    version: Version,
    config: Config,
    input: TensorRef,
    input_h: TensorRef,
    input_c: TensorRef,
    params: TensorRef,
    model: Model,
    pseudo: Vec<Pseudo>,
    reserve_len: i64,
    lengths: Option<Vec<u32>>,
}

impl Call {
    fn read(ctx: &mut dyn KernelContext, kernel: &KernelInstance, forward: bool) -> Result<Call> {
        let op = kernel.def.op;
        let version = Version::of(op);
        let config = Config::read(kernel, version, forward)?;
        let (input, input_h, input_c, params) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?, ctx.input(3)?);
        let model = Model::new(&config, &input.shape, &input_h.shape, &input_c.shape)?;
        let (pseudo, params_len, reserve_len) = model.layout();
        if params.num_elements() as i64 != params_len || params.shape.len() != 1 {
            return Err(Error::invalid_argument(format!(
                "params must be a vector of {params_len} elements for this model, got shape {:?}",
                params.shape
            )));
        }
        let lengths = read_lengths(ctx, version, &model)?;
        Ok(Call { op, version, config, input, input_h, input_c, params, model, pseudo, reserve_len, lengths })
    }
}

type Compute = fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>;

/// Runs the forward pass or the backprop (`compute`) whole, or, where a tensor that grows with the
/// batch passes a storage binding (the input, the output, the reserve space, the per-step
/// temporaries), a range of the batch at a time: each range's slices of the batch-carrying inputs
/// (copied out where the batch is not the leading dimension), its own outputs (copied into place
/// after), its block of the reserve space (which grows linearly with the batch, so a range's block
/// starts at `start` times one batch element's share, the same in both passes) and, for the
/// backprop, its params gradient added to the others.
fn in_batch_ranges(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    forward: bool,
    compute: Compute,
) -> Result<()> {
    let call = Call::read(ctx, kernel, forward)?;
    let model = &call.model;
    let limit = super::windows::binding_limit(ctx.stream()?.device());
    let one = Model { batch: 1, ..model.clone() };
    let (_, _, reserve_one) = one.layout();
    // Elements of the largest tensor a batch element adds to, and its share of the reserve.
    let widest = [
        model.steps * model.input_size,
        model.steps * model.dirs * model.hidden,
        reserve_one,
        model.steps * model.gate_units(),
        model.steps * model.input_size.max(model.dirs * model.hidden),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    let per_element = widest as u64 * call.params.dtype.size();
    if model.batch <= 1 || per_element * model.batch as u64 <= limit {
        return compute(ctx, kernel);
    }
    let count = (limit / per_element.max(1)).max(1) as i64;
    let first = call.version.forward_inputs();
    if !forward {
        // Checked whole here: each range sees only its block of it.
        let reserve = ctx.input(first + 6)?;
        if reserve.num_elements() as i64 != call.reserve_len {
            return Err(Error::invalid_argument(format!(
                "reserve_space has {} elements; a training {} forward pass of these shapes makes {}",
                reserve.num_elements(),
                call.op,
                call.reserve_len
            )));
        }
    }
    // The tensors that carry the batch: input, input_h and input_c (a cell state only for lstm);
    // the backprop's output, output_h, output_c and their gradients too.
    let lstm = model.mode == Mode::Lstm;
    let forward_batched = [0, 1].into_iter().chain(lstm.then_some(2));
    let (sliced_inputs, reserve_input): (Vec<usize>, Option<usize>) = if forward {
        (forward_batched.collect(), None)
    } else {
        let backprop = [0, 1, 3, 4].into_iter().chain(if lstm { vec![2, 5] } else { vec![] }).map(|k| first + k);
        (forward_batched.chain(backprop).collect(), Some(first + 6))
    };
    let sliced_outputs: Vec<usize> = [0, 1].into_iter().chain(lstm.then_some(2)).collect();
    let mut shared = Shared::default();
    let mut start = 0;
    while start < model.batch {
        let mut range = BatchRange {
            inner: &mut *ctx,
            start,
            count: count.min(model.batch - start),
            batch: model.batch,
            axis: if model.time_major { 1 } else { 0 },
            sliced_inputs: &sliced_inputs,
            sliced_outputs: &sliced_outputs,
            reserve: (reserve_input, forward.then_some(3), reserve_one),
            lengths_input: (call.version == Version::V3).then_some(4),
            summed_output: (!forward).then_some(3),
            shared: &mut shared,
            inputs: Vec::new(),
            scatters: Vec::new(),
            sums: Vec::new(),
        };
        compute(&mut range, kernel)?;
        range.finish()?;
        start += count;
    }
    Ok(())
}

/// What the ranges of one node share: its outputs, allocated once, and whether its host output
/// was written.
#[derive(Default)]
struct Shared {
    outputs: Vec<(usize, TensorRef)>,
    host_output_written: bool,
}

/// One range of the batch, `start..start + count` of `batch`, as the kernel context the forward
/// pass or the backprop runs in (see `in_batch_ranges`).
struct BatchRange<'a> {
    inner: &'a mut dyn KernelContext,
    start: i64,
    count: i64,
    batch: i64,
    /// The batch's dimension in the 3-D inputs and outputs (1 time-major, else 0).
    axis: usize,
    sliced_inputs: &'a [usize],
    sliced_outputs: &'a [usize],
    /// The reserve space's input (backprop) and output (forward) indices, and its elements per
    /// batch element.
    reserve: (Option<usize>, Option<usize>, i64),
    lengths_input: Option<usize>,
    summed_output: Option<usize>,
    shared: &'a mut Shared,
    /// This range's inputs, sliced on first use.
    inputs: Vec<(usize, TensorRef)>,
    /// Outputs written to a temporary, then copied into the range's slice of the node's.
    scatters: Vec<(TensorRef, TensorRef)>,
    /// params gradients of later ranges, added to the first's.
    sums: Vec<(TensorRef, TensorRef)>,
}

impl BatchRange<'_> {
    /// Whether `t` carries the batch along `axis` (3-D; a GRU's `input_c` need not).
    fn batched(&self, shape: &[i64], range: bool) -> bool {
        shape.len() == 3 && shape[self.axis] == if range { self.count } else { self.batch }
    }

    /// The view of this range's slice of the whole 3-D `t`.
    fn slice_view(&self, shape: &[i64]) -> StridedView {
        let strides = super::slice::contiguous_strides(shape);
        let mut sliced = shape.to_vec();
        sliced[self.axis] = self.count;
        StridedView { base: self.start * strides[self.axis], shape: sliced, strides }
    }

    /// The node's output `index` of `shape`, allocated by the first range that asks.
    fn whole_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        if let Some((_, t)) = self.shared.outputs.iter().find(|(i, _)| *i == index) {
            return Ok(t.clone());
        }
        let t = self.inner.allocate_output(index, dtype, shape)?;
        self.shared.outputs.push((index, t.clone()));
        Ok(t)
    }

    fn finish(self) -> Result<()> {
        let views: Vec<StridedView> = self.scatters.iter().map(|(_, whole)| self.slice_view(&whole.shape)).collect();
        let stream = self.inner.stream()?;
        for ((part, whole), view) in self.scatters.iter().zip(&views) {
            super::slice::launch_scatter(stream, part, view, whole)?;
        }
        for (part, total) in &self.sums {
            super::binary::launch(stream, super::binary::BinaryOp::Add, total, part, total)?;
        }
        Ok(())
    }
}

impl KernelContext for BatchRange<'_> {
    pass_through_to_inner!(all_but_host_output);

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        if let Some((_, t)) = self.inputs.iter().find(|(i, _)| *i == index) {
            return Ok(t.clone());
        }
        let whole = self.inner.input(index)?;
        let (reserve_input, _, reserve_one) = self.reserve;
        let t = if reserve_input == Some(index) {
            let element = whole.dtype.size();
            let address = whole.address + (self.start * reserve_one) as u64 * element;
            TensorRef { address, dtype: whole.dtype, shape: vec![self.count * reserve_one] }
        } else if self.sliced_inputs.contains(&index) && self.batched(&whole.shape, false) {
            let view = self.slice_view(&whole.shape);
            let part = self.inner.allocate_temp(whole.dtype, &view.shape)?;
            super::slice::launch(self.inner.stream()?, &whole, &view, &part)?;
            part
        } else {
            whole
        };
        self.inputs.push((index, t.clone()));
        Ok(t)
    }

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        let (values, shape) = self.inner.host_input_values(index)?;
        if self.lengths_input == Some(index) && shape == [self.batch] {
            let range = values[self.start as usize..(self.start + self.count) as usize].to_vec();
            return Ok((range, vec![self.count]));
        }
        Ok((values, shape))
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let (_, reserve_output, reserve_one) = self.reserve;
        if reserve_output == Some(index) && shape.len() == 1 {
            let whole = self.whole_output(index, dtype, &[self.batch * reserve_one])?;
            let address = whole.address + (self.start * reserve_one) as u64 * dtype.size();
            return Ok(TensorRef { address, dtype, shape: shape.to_vec() });
        }
        if self.sliced_outputs.contains(&index) && self.batched(shape, true) {
            let mut whole_shape = shape.to_vec();
            whole_shape[self.axis] = self.batch;
            let whole = self.whole_output(index, dtype, &whole_shape)?;
            let part = self.inner.allocate_temp(dtype, shape)?;
            self.scatters.push((part.clone(), whole));
            return Ok(part);
        }
        if self.start == 0 {
            return self.whole_output(index, dtype, shape);
        }
        let part = self.inner.allocate_temp(dtype, shape)?;
        if self.summed_output == Some(index) {
            let total = self.whole_output(index, dtype, shape)?;
            self.sums.push((part.clone(), total));
        }
        Ok(part)
    }

    pass_through_to_inner!(no_forwarding);

    fn write_host_output(&mut self, index: usize, dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<()> {
        if self.shared.host_output_written {
            return Ok(());
        }
        self.shared.host_output_written = true;
        self.inner.write_host_output(index, dtype, shape, bytes)
    }
}

/// CudnnRNN, CudnnRNNV2, CudnnRNNV3.
pub fn forward(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    in_batch_ranges(ctx, kernel, true, forward_whole)
}

fn forward_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let Call { op, version, config, input, input_h, input_c, params, model, pseudo, reserve_len, lengths } =
        Call::read(ctx, kernel, true)?;
    // float32 (float16 through half::via_f32) or float64, in every tensor and temporary.
    let dtype = params.dtype;
    let dropout_call = (config.is_training && model.dropout > 0.0)
        .then(|| DROPOUT_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let (t, b, h, hh) = (model.steps, model.batch, model.units, model.hidden);
    let output = ctx.allocate_output(0, dtype, &model.output_shape())?;
    let output_h = ctx.allocate_output(1, dtype, &input_h.shape)?;
    let c_shape: &[i64] = if model.mode == Mode::Lstm { &input_c.shape } else { &[] };
    let output_c = ctx.allocate_output(2, dtype, c_shape)?;
    let reserve = if config.is_training {
        ctx.allocate_output(3, dtype, &[reserve_len])?
    } else {
        ctx.allocate_output(3, dtype, &[])?;
        ctx.allocate_temp(dtype, &[reserve_len.max(1)])?
    };
    match version {
        Version::V1 => {}
        Version::V2 if config.is_training => ctx.write_host_output(4, DType::I8, &[2], &[0, 0])?,
        Version::V2 | Version::V3 => ctx.write_host_output(4, DType::I8, &[], &[0])?,
    }
    check_sizes(&model, op, &[&input, &params, &reserve, &output])?;
    let stream = ctx.stream()?;
    stream.fill(output.address, output.byte_len(), 0)?;
    stream.fill(output_c.address, output_c.byte_len(), 0)?;
    if b * h * hh == 0 {
        // Nothing recurs: the states pass through.
        stream.memcpy_dtod(output_h.address, input_h.address, input_h.byte_len())?;
        if model.mode == Mode::Lstm {
            stream.memcpy_dtod(output_c.address, input_c.address, input_c.byte_len())?;
        }
        return Ok(());
    }
    stream.fill(reserve.address, reserve.byte_len(), 0)?;
    let host_lengths = lengths.clone().unwrap_or_else(|| vec![t as u32; b as usize]);
    let lengths = upload_lengths(ctx, &model, lengths)?;
    let gh = model.gate_units();
    let xw = ctx.allocate_temp(dtype, &[model.rows().max(1), gh])?;
    let hr = ctx.allocate_temp(dtype, &[b, gh])?;
    let projected = ctx.allocate_temp(dtype, &[b, hh])?;
    let staged = StepStates::new(ctx, &model, &reserve)?;
    let limit = super::windows::binding_limit(ctx.stream()?.device());
    let (h_elems, c_elems) = (b * hh, b * h);
    for p in &pseudo {
        let index = p.layer * model.dirs + p.dir;
        let (layer_in, layer_in_off) =
            if p.layer == 0 { (&input, 0) } else { (&reserve, model.inner_output(p.layer - 1, reserve_len)) };
        let (layer_out, layer_out_off) = if p.layer == model.layers - 1 {
            (&output, 0)
        } else {
            (&reserve, model.inner_output(p.layer, reserve_len))
        };
        // The input projection of every step at once (any size), or the input itself (skip_input).
        let (xw_tensor, xw_off, xw_row, xw_gate) = match p.w {
            Some(w) if t > 0 => {
                let x = view(layer_in, layer_in_off, &[model.rows(), p.input_size]);
                let out = view(&xw, 0, &[model.rows(), gh]);
                matmul::product(ctx, &x, &view(&params, w, &[gh, p.input_size]), &out, false, true)?;
                (&xw, 0, gh as u32, h as u32)
            }
            Some(_) => (&xw, 0, gh as u32, h as u32),
            None => (layer_in, layer_in_off as u32, p.input_size as u32, 0),
        };
        let stream = ctx.stream()?;
        let (h_off, h_stride) = model.state_block(index, hh);
        let (c_off, c_stride) = model.state_block(index, h);
        copy_rows(stream, &model, (&input_h, h_off, h_stride), None, (&reserve, p.hs as u32, hh as u32), b, hh, false)?;
        if model.mode == Mode::Lstm {
            copy_rows(
                stream,
                &model,
                (&input_c, c_off, c_stride),
                None,
                (&reserve, p.cs as u32, h as u32),
                b,
                h,
                false,
            )?;
        }
        let y_row = (model.dirs * hh) as u32;
        // Only a tensor past a binding needs its step's rows (spans of tensors within one are
        // ignored): the host skips working them out otherwise.
        let windowed = [xw_tensor, layer_out].iter().any(|t| t.byte_len() > limit);
        for step in 0..t {
            let at = model.step_slices(p, step);
            let recurrent = view(&params, p.r, &[gh, hh]);
            matmul::product(ctx, &view(&reserve, at.h_prev, &[b, hh]), &recurrent, &hr, false, true)?;
            let stream = ctx.stream()?;
            // A reserve space past a binding: the step's slices in and out of a buffer of their
            // own (all of them in: a sequence past its end leaves its gates and m as the reserve
            // space has them, zero).
            let (res, slot) = match &staged {
                Some(states) => (&states.buffer, states.load(stream, &model, &reserve, &at)?),
                None => (&reserve, at),
            };
            let block = Params {
                batch: b as u32,
                units: h as u32,
                steps: t as u32,
                step: step as u32,
                reverse: p.dir as u32,
                time_major: model.time_major as u32,
                xw_off,
                xw_row,
                xw_gate,
                bias_w_off: p.bias_w as u32,
                bias_r_off: p.bias_r as u32,
                h_prev_off: slot.h_prev as u32,
                h_next_off: slot.h_next as u32,
                c_prev_off: slot.c_prev as u32,
                c_next_off: slot.c_next as u32,
                gates_off: slot.gates as u32,
                gate_slots: model.mode.slots() as u32,
                y_off: layer_out_off as u32,
                y_row,
                y_col: (p.dir * hh) as u32,
                m_off: slot.m as u32,
                ..Default::default()
            };
            // The step's rows of the input projection and of the output, and the biases.
            let rows = if windowed { step_rows(&model, &host_lengths, step, p.dir == 1) } else { None };
            let mut spans = [None; 8];
            spans[0] = row_span(xw_off, xw_row, rows);
            spans[2] = Some((p.bias_w, p.bias_r + gh));
            spans[5] = row_span(layer_out_off as u32, y_row, rows);
            let bindings = [xw_tensor, &hr, &params, &lengths, res, layer_out, &hr, &hr];
            launch(stream, &model, "forward_step", bindings, block, b * h, spans)?;
            if model.proj {
                let m = view(res, slot.m, &[b, h]);
                matmul::product(ctx, &m, &view(&params, p.wp, &[hh, h]), &projected, false, true)?;
                let stream = ctx.stream()?;
                let bindings = [&projected, &projected, &params, &lengths, res, layer_out, &hr, &hr];
                let block = Params { units: hh as u32, ..block };
                launch(stream, &model, "project_step", bindings, block, b * hh, spans)?;
            }
            if let Some(states) = &staged {
                states.store(ctx.stream()?, &model, &reserve, &at)?;
            }
        }
        let stream = ctx.stream()?;
        let last = (p.hs + t * h_elems) as u32;
        copy_rows(stream, &model, (&reserve, last, hh as u32), None, (&output_h, h_off, h_stride), b, hh, false)?;
        if model.mode == Mode::Lstm {
            let last = (p.cs + t * c_elems) as u32;
            copy_rows(stream, &model, (&reserve, last, h as u32), None, (&output_c, c_off, c_stride), b, h, false)?;
        }
        if let (Some(call), true) = (dropout_call, p.dir == model.dirs - 1 && p.layer < model.layers - 1) {
            let block = dropout_params(&model, &config, p.layer, reserve_len, call);
            dropout(stream, &model, "dropout_forward", block, &reserve, &reserve)?;
        }
    }
    Ok(())
}

/// Where one time step of one pseudo-layer keeps its states and gate values, in elements of the
/// reserve space (or of a `StepStates` buffer).
#[derive(Clone, Copy, Debug)]
struct StepSlices {
    h_prev: i64,
    h_next: i64,
    c_prev: i64,
    c_next: i64,
    gates: i64,
    m: i64,
}

impl Model {
    /// Step `step`'s slices of pseudo-layer `p`'s block of the reserve space.
    fn step_slices(&self, p: &Pseudo, step: i64) -> StepSlices {
        let (h_elems, c_elems) = (self.batch * self.hidden, self.batch * self.units);
        let (h_prev, c_prev) = (p.hs + step * h_elems, p.cs + step * c_elems);
        StepSlices {
            h_prev,
            h_next: h_prev + h_elems,
            c_prev,
            c_next: c_prev + c_elems,
            gates: p.gates + step * self.batch * self.mode.slots() * self.units,
            m: p.ms + step * c_elems,
        }
    }
}

/// A buffer for one time step's states and gates where the reserve space passes a storage
/// binding (a long sequence of one batch element): each step's slices are copied in, the step's
/// kernels bind this buffer in the reserve space's place, and what they wrote is copied back.
struct StepStates {
    buffer: TensorRef,
    slices: StepSlices,
}

impl StepStates {
    fn new(ctx: &mut dyn KernelContext, model: &Model, reserve: &TensorRef) -> Result<Option<StepStates>> {
        if reserve.byte_len() <= super::windows::binding_limit(ctx.stream()?.device()) {
            return Ok(None);
        }
        let (h_elems, c_elems) = (model.batch * model.hidden, model.batch * model.units);
        let gates = 2 * (h_elems + c_elems);
        let m = gates + model.batch * model.mode.slots() * model.units;
        let slices =
            StepSlices { h_prev: 0, h_next: h_elems, c_prev: 2 * h_elems, c_next: 2 * h_elems + c_elems, gates, m };
        let buffer = ctx.allocate_temp(reserve.dtype, &[m + c_elems])?;
        Ok(Some(StepStates { buffer, slices }))
    }

    /// The slices of a step that `at` names in the reserve space, with their places in this buffer
    /// and their lengths: what the forward pass reads (`h_prev`, `c_prev`), then what it writes.
    fn pairs(&self, model: &Model, at: &StepSlices) -> [(i64, i64, i64); 6] {
        let (h_elems, c_elems) = (model.batch * model.hidden, model.batch * model.units);
        let lstm = if model.mode == Mode::Lstm { c_elems } else { 0 };
        let gates = model.batch * model.mode.slots() * model.units;
        let m = if model.proj { c_elems } else { 0 };
        let s = &self.slices;
        [
            (at.h_prev, s.h_prev, h_elems),
            (at.c_prev, s.c_prev, lstm),
            (at.h_next, s.h_next, h_elems),
            (at.c_next, s.c_next, lstm),
            (at.gates, s.gates, gates),
            (at.m, s.m, m),
        ]
    }

    /// Copies step `at`'s slices in; returns where they are in this buffer.
    fn load(&self, stream: &Stream, model: &Model, reserve: &TensorRef, at: &StepSlices) -> Result<StepSlices> {
        let size = reserve.dtype.size();
        for &(from, to, len) in &self.pairs(model, at) {
            stream.memcpy_dtod(
                self.buffer.address + to as u64 * size,
                reserve.address + from as u64 * size,
                len as u64 * size,
            )?;
        }
        Ok(self.slices)
    }

    /// Copies what a forward step wrote (next states, gates, m) back to its slices `at`.
    fn store(&self, stream: &Stream, model: &Model, reserve: &TensorRef, at: &StepSlices) -> Result<()> {
        let size = reserve.dtype.size();
        for &(to, from, len) in &self.pairs(model, at)[2..] {
            stream.memcpy_dtod(
                reserve.address + to as u64 * size,
                self.buffer.address + from as u64 * size,
                len as u64 * size,
            )?;
        }
        Ok(())
    }
}

/// The first and last rows of the sequence layout that step `step` (of the reverse direction,
/// `reverse`) reaches over the batch, as the shader's `row_of(time_of(b), b)`; None where every
/// sequence has ended.
fn step_rows(model: &Model, lengths: &[u32], step: i64, reverse: bool) -> Option<(i64, i64)> {
    let rows = lengths.iter().enumerate().filter(|&(_, &len)| step < i64::from(len)).map(|(b, &len)| {
        let t = if reverse { i64::from(len) - 1 - step } else { step };
        if model.time_major {
            t * model.batch + b as i64
        } else {
            b as i64 * model.steps + t
        }
    });
    rows.fold(None, |range, row| Some(range.map_or((row, row), |(lo, hi): (i64, i64)| (lo.min(row), hi.max(row)))))
}

/// The span of `rows` (first and last) of a matrix of rows `row` wide from element `offset`; one
/// element where there are none.
fn row_span(offset: u32, row: u32, rows: Option<(i64, i64)>) -> Span {
    match rows {
        Some((first, last)) => rows_span(offset, row, i64::from(row), (first, last + 1)),
        None => Some((i64::from(offset), i64::from(offset) + 1)),
    }
}

/// `dropout_forward` or `dropout_backward` over a layer's output (`block`'s rows x cols): in
/// ranges of elements that fit a binding where the tensors do not, the mask (`res`, from
/// `src_off` or `dst_off`) and the output (`out`) each bound as the range's window.
fn dropout(
    stream: &Stream,
    model: &Model,
    entry: &'static str,
    block: Params,
    res: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let total = i64::from(block.rows) * i64::from(block.cols);
    let limit = super::windows::binding_limit(stream.device());
    let range =
        if res.byte_len() <= limit && out.byte_len() <= limit { total } else { (limit / res.dtype.size()) as i64 };
    // forward: the mask at dst_off (res), the output at src_off (out); backward the other way.
    let (mask_off, out_off) =
        if entry == "dropout_forward" { (block.dst_off, block.src_off) } else { (block.src_off, block.dst_off) };
    let mut first = 0;
    while first < total {
        let count = range.min(total - first);
        // (The other bindings read nothing: an element each.)
        let mut spans = [Some((0, 1)); 8];
        spans[4] = Some((i64::from(mask_off) + first, i64::from(mask_off) + first + count));
        spans[5] = Some((i64::from(out_off) + first, i64::from(out_off) + first + count));
        let bindings = [res, res, res, res, res, out, res, res];
        let block = Params { first: first as u32, ..block };
        launch(stream, model, entry, bindings, block, count, spans)?;
        first += count;
    }
    Ok(())
}

/// `out` = the column sums of `grads` [rows, cols], over ranges of rows that fit a binding where
/// `grads` does not: the first range into `out`, each later one into `partial`, then added.
fn sum_columns_in_ranges(stream: &Stream, grads: &TensorRef, out: &TensorRef, partial: &TensorRef) -> Result<()> {
    let (rows, cols) = (grads.shape[0], grads.shape[1]);
    let limit = super::windows::binding_limit(stream.device());
    let per = if grads.byte_len() <= limit {
        rows
    } else {
        (limit / (cols.max(1) as u64 * grads.dtype.size())).max(1) as i64
    };
    let mut first = 0;
    while first < rows.max(1) {
        let count = per.min(rows - first);
        let part = view(grads, first * cols, &[count, cols]);
        if first == 0 {
            reduce::sum_columns(stream, &part, out)?;
        } else {
            reduce::sum_columns(stream, &part, partial)?;
            super::binary::launch(stream, super::binary::BinaryOp::Add, out, partial, out)?;
        }
        first += count.max(1);
    }
    Ok(())
}

/// CudnnRNNBackprop, CudnnRNNBackpropV2, CudnnRNNBackpropV3.
pub fn backward(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    in_batch_ranges(ctx, kernel, false, backward_whole)
}

fn backward_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let Call { op, version, config, input, input_h, input_c, params, model, pseudo, reserve_len, lengths } =
        Call::read(ctx, kernel, false)?;
    let dtype = params.dtype;
    let first = version.forward_inputs();
    // output, output_h and output_c are not read (the reserve space holds the states), but TF's
    // kernel checks their shapes.
    let c_shape: &[i64] = if model.mode == Mode::Lstm { &input_c.shape } else { &[] };
    let out_shape = model.output_shape();
    for (offset, name, want) in
        [(0, "output", &out_shape[..]), (1, "output_h", &input_h.shape[..]), (2, "output_c", c_shape)]
    {
        let got = ctx.input(first + offset)?;
        if (name != "output_c" || model.mode == Mode::Lstm) && got.shape != want {
            return Err(Error::invalid_argument(format!("Invalid {name} shape: {:?} {want:?}", got.shape)));
        }
    }
    let dy = ctx.input(first + 3)?;
    let dh_last = ctx.input(first + 4)?;
    let dc_last = ctx.input(first + 5)?;
    let reserve = ctx.input(first + 6)?;
    let (t, b, h, hh) = (model.steps, model.batch, model.units, model.hidden);
    if dy.shape != out_shape || dh_last.shape != input_h.shape {
        return Err(Error::invalid_argument(format!(
            "output_backprop {:?} and output_h_backprop {:?} must have the output's shape {out_shape:?} and \
             input_h's {:?}",
            dy.shape, dh_last.shape, input_h.shape
        )));
    }
    if model.mode == Mode::Lstm && dc_last.shape != input_c.shape {
        return Err(Error::invalid_argument(format!(
            "output_c_backprop {:?} must have input_c's shape {:?}",
            dc_last.shape, input_c.shape
        )));
    }
    if reserve.num_elements() as i64 != reserve_len {
        return Err(Error::invalid_argument(format!(
            "reserve_space has {} elements; a training {op} forward pass of these shapes makes {reserve_len}",
            reserve.num_elements()
        )));
    }
    let dx = ctx.allocate_output(0, dtype, &input.shape)?;
    let dh0 = ctx.allocate_output(1, dtype, &input_h.shape)?;
    let dc0 = ctx.allocate_output(2, dtype, &input_c.shape)?;
    let dparams = ctx.allocate_output(3, dtype, &params.shape)?;
    check_sizes(&model, op, &[&input, &params, &reserve, &dy])?;
    let stream = ctx.stream()?;
    for out in [&dx, &dh0, &dc0, &dparams] {
        stream.fill(out.address, out.byte_len(), 0)?;
    }
    if b * h * hh == 0 {
        // Nothing recurs: the state gradients pass through.
        stream.memcpy_dtod(dh0.address, dh_last.address, dh_last.byte_len())?;
        if model.mode == Mode::Lstm {
            stream.memcpy_dtod(dc0.address, dc_last.address, dc_last.byte_len())?;
        }
        return Ok(());
    }
    let host_lengths = lengths.clone().unwrap_or_else(|| vec![t as u32; b as usize]);
    let lengths = upload_lengths(ctx, &model, lengths)?;
    let gh = model.gate_units();
    let rows = model.rows();
    let dgi = ctx.allocate_temp(dtype, &[rows.max(1), gh])?;
    let dgr = ctx.allocate_temp(dtype, &[rows.max(1), gh])?;
    // dh (hidden units) then dc (cell units) carried between steps.
    let carry = ctx.allocate_temp(dtype, &[b * (hh + h)])?;
    let dh_rec = ctx.allocate_temp(dtype, &[b, hh])?;
    // Projection: each step's dh (for Wp's gradient) and dm = dh Wp.
    let (dhs, dm) = if model.proj {
        (ctx.allocate_temp(dtype, &[rows.max(1), hh])?, ctx.allocate_temp(dtype, &[b, h])?)
    } else {
        (dh_rec.clone(), dh_rec.clone())
    };
    let wide = model.dirs * hh;
    let inner = if model.layers > 1 { 2 } else { 0 };
    // The gradient of each inner layer's output, filled by the layer above (two, alternating).
    let inner_grads = (0..inner).map(|_| ctx.allocate_temp(dtype, &[rows.max(1), wide])).collect::<Result<Vec<_>>>()?;
    let dx_part = ctx.allocate_temp(dtype, &[rows.max(1), model.input_size.max(wide)])?;
    let staged = StepStates::new(ctx, &model, &reserve)?;
    let bias_partial = ctx.allocate_temp(dtype, &[gh])?;
    let limit = super::windows::binding_limit(ctx.stream()?.device());
    let h_elems = b * hh;
    let dc_off = h_elems as u32;
    for p in pseudo.iter().rev() {
        let stream = ctx.stream()?;
        let index = p.layer * model.dirs + p.dir;
        let layer_dy = if p.layer == model.layers - 1 { &dy } else { &inner_grads[(p.layer % 2) as usize] };
        let (layer_in, layer_in_off) =
            if p.layer == 0 { (&input, 0) } else { (&reserve, model.inner_output(p.layer - 1, reserve_len)) };
        let layer_dx = if p.layer == 0 { &dx } else { &inner_grads[((p.layer - 1) % 2) as usize] };
        let (h_off, h_stride) = model.state_block(index, hh);
        let (c_off, c_stride) = model.state_block(index, h);
        stream.fill(dgi.address, dgi.byte_len(), 0)?;
        stream.fill(carry.address, carry.byte_len(), 0)?;
        stream.fill(dh_rec.address, dh_rec.byte_len(), 0)?;
        copy_rows(stream, &model, (&dh_last, h_off, h_stride), None, (&carry, 0, hh as u32), b, hh, false)?;
        if model.mode == Mode::Lstm {
            copy_rows(stream, &model, (&dc_last, c_off, c_stride), None, (&carry, dc_off, h as u32), b, h, false)?;
        }
        // As in the forward pass: the step's rows only where a tensor passes a binding.
        let windowed = [layer_dy, &dgi].iter().any(|t| t.byte_len() > limit);
        for step in (0..t).rev() {
            let stream = ctx.stream()?;
            let at = model.step_slices(p, step);
            // A reserve space past a binding: the step's states and gates in a buffer of their own.
            let (res, slot) = match &staged {
                Some(states) => (&states.buffer, states.load(stream, &model, &reserve, &at)?),
                None => (&reserve, at),
            };
            let dgr_off = step * b * gh;
            let block = Params {
                batch: b as u32,
                units: h as u32,
                steps: t as u32,
                step: step as u32,
                reverse: p.dir as u32,
                time_major: model.time_major as u32,
                h_prev_off: slot.h_prev as u32,
                h_next_off: slot.h_next as u32,
                c_prev_off: slot.c_prev as u32,
                c_next_off: slot.c_next as u32,
                gates_off: slot.gates as u32,
                gate_slots: model.mode.slots() as u32,
                y_off: 0,
                y_row: wide as u32,
                y_col: (p.dir * hh) as u32,
                dgr_off: dgr_off as u32,
                dc_off,
                ..Default::default()
            };
            // The step's rows of the output gradient and of the gate gradients by input row, and
            // its block of the gate gradients by step (the weights are not read).
            let reached = if windowed { step_rows(&model, &host_lengths, step, p.dir == 1) } else { None };
            let mut spans = [None; 8];
            spans[0] = row_span(0, wide as u32, reached);
            spans[2] = Some((p.bias_w, p.bias_w + 1));
            spans[5] = row_span(0, gh as u32, reached);
            spans[6] = Some((dgr_off, dgr_off + b * gh));
            let step_dh = if model.proj {
                // dh of this step, then dm = dh Wp for the cell.
                let dhs_off = step * h_elems;
                let proj_block = Params { units: hh as u32, dgr_off: dhs_off as u32, ..block };
                let bindings = [layer_dy, &dh_rec, &params, &lengths, res, &dgi, &dhs, &carry];
                let proj_spans =
                    [spans[0], None, spans[2], None, None, Some((0, 1)), Some((dhs_off, dhs_off + h_elems)), None];
                launch(stream, &model, "proj_back", bindings, proj_block, b * hh, proj_spans)?;
                let projection = view(&params, p.wp, &[hh, h]);
                matmul::product(ctx, &view(&dhs, dhs_off, &[b, hh]), &projection, &dm, false, false)?;
                &dm
            } else {
                &dh_rec
            };
            let bindings = [layer_dy, step_dh, &params, &lengths, res, &dgi, &dgr, &carry];
            launch(ctx.stream()?, &model, "backward_step", bindings, block, b * h, spans)?;
            let recurrent = view(&params, p.r, &[gh, hh]);
            matmul::product(ctx, &view(&dgr, dgr_off, &[b, gh]), &recurrent, &dh_rec, false, false)?;
        }
        let stream = ctx.stream()?;
        let sum = Some((&dh_rec, 0, hh as u32));
        copy_rows(stream, &model, (&carry, 0, hh as u32), sum, (&dh0, h_off, h_stride), b, hh, false)?;
        if model.mode == Mode::Lstm {
            copy_rows(stream, &model, (&carry, dc_off, h as u32), None, (&dc0, c_off, c_stride), b, h, false)?;
        }
        if t == 0 {
            continue;
        }
        // Weight and bias gradients (products of any size).
        let hs_prev = view(&reserve, p.hs, &[rows, hh]);
        let (dgi_m, dgr_m) = (view(&dgi, 0, &[rows, gh]), view(&dgr, 0, &[rows, gh]));
        matmul::product(ctx, &dgr_m, &hs_prev, &view(&dparams, p.r, &[gh, hh]), true, false)?;
        if model.proj {
            let ms = view(&reserve, p.ms, &[rows, h]);
            matmul::product(ctx, &view(&dhs, 0, &[rows, hh]), &ms, &view(&dparams, p.wp, &[hh, h]), true, false)?;
        }
        // Bias gradients: column sums (compensated, and split over slices of rows so that no
        // invocation loops past the adapter's limit), over ranges of rows that fit a binding.
        for (grads, bias) in [(&dgi, p.bias_w), (&dgr, p.bias_r)] {
            sum_columns_in_ranges(
                ctx.stream()?,
                &view(grads, 0, &[rows, gh]),
                &view(&dparams, bias, &[gh]),
                &bias_partial,
            )?;
        }
        // The input gradient, summed over the directions (the last direction runs first and writes).
        let accumulate = p.dir < model.dirs - 1;
        match p.w {
            Some(w) => {
                let x = view(layer_in, layer_in_off, &[rows, p.input_size]);
                matmul::product(ctx, &dgi_m, &x, &view(&dparams, w, &[gh, p.input_size]), true, false)?;
                let weights = view(&params, w, &[gh, p.input_size]);
                if accumulate {
                    matmul::product(ctx, &dgi_m, &weights, &view(&dx_part, 0, &[rows, p.input_size]), false, false)?;
                    let (cols, stride) = (p.input_size, p.input_size as u32);
                    let stream = ctx.stream()?;
                    copy_rows(stream, &model, (&dx_part, 0, stride), None, (layer_dx, 0, stride), rows, cols, true)?;
                } else {
                    matmul::product(ctx, &dgi_m, &weights, &view(layer_dx, 0, &[rows, p.input_size]), false, false)?;
                }
            }
            None => {
                let stream = ctx.stream()?;
                let whole_fits = dgi.byte_len() <= limit && layer_dx.byte_len() <= limit;
                let stride = p.input_size.max(gh);
                for (first, end) in row_ranges(rows, stride, stride, (limit / dtype.size()) as i64, whole_fits)? {
                    let sums = Params {
                        rows: (end - first) as u32,
                        units: h as u32,
                        src_off: (first * gh) as u32,
                        src_stride: gh as u32,
                        dst_off: (first * p.input_size) as u32,
                        dst_stride: p.input_size as u32,
                        flags: if accumulate { ADD_DST } else { 0 },
                        ..Default::default()
                    };
                    let mut spans = [Some((0, 1)); 8];
                    spans[0] = rows_span(sums.src_off, gh as u32, gh, (0, end - first));
                    spans[5] = rows_span(sums.dst_off, p.input_size as u32, p.input_size, (0, end - first));
                    let bindings = [&dgi, &dgi, &dgi, &dgi, &dgi, layer_dx, &dgi, &dgi];
                    launch(stream, &model, "gate_sums", bindings, sums, (end - first) * h, spans)?;
                }
            }
        }
        // The layer below's output went through dropout before this layer read it.
        if model.dropout > 0.0 && p.dir == 0 && p.layer > 0 {
            let mask = model.dropout_mask(p.layer - 1, reserve_len) as u32;
            let block =
                Params { src_off: mask, dst_off: 0, ..dropout_params(&model, &config, p.layer - 1, reserve_len, 0) };
            dropout(ctx.stream()?, &model, "dropout_backward", block, &reserve, layer_dx)?;
        }
    }
    Ok(())
}
