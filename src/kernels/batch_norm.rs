//! Batch normalization in training mode (`wgsl/batch_norm.wgsl`): FusedBatchNormV3 with
//! `is_training` and FusedBatchNormGradV3, channels last. The inference forward pass lives with the
//! convolutions (`conv::fused_batch_norm`), which it is fused into.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{
    aligned_vec4_window, check_loop_iterations, dispatch, dispatch_workgroups, grid, loops_fit, storage_window,
    Binding, PipelineSpec, Shader,
};
use crate::runtime::Stream;

use super::binary::{self, BinaryOp};
use super::layout::{self, ImageArgs};
use super::reduce;
use super::windows::binding_limit;
use super::{shader_len, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "batch_norm",
    source: concat!(include_str!("../../wgsl/math.wgsl"), include_str!("../../wgsl/batch_norm.wgsl")),
    storage_buffers: 8,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    rows: u32,
    c: u32,
    mode: u32,
    epsilon: f32,
    exponential_avg_factor: f32,
    offsets: [u32; 8],
    _pad: [u32; 2],
}

/// The shader's bindings, in binding order; an entry point leaves the ones it does not use empty.
#[derive(Default)]
struct Slots<'a> {
    x: Option<&'a TensorRef>,
    aux: Option<&'a TensorRef>,
    scale: Option<&'a TensorRef>,
    mean: Option<&'a TensorRef>,
    variance: Option<&'a TensorRef>,
    out_a: Option<&'a TensorRef>,
    out_b: Option<&'a TensorRef>,
    out_c: Option<&'a TensorRef>,
}

/// How an entry point is spread: one workgroup per channel, or one invocation per item.
enum Spread {
    WorkgroupPerChannel,
    Invocations(u64),
}

fn launch(stream: &Stream, entry: &'static str, mut p: Params, slots: Slots, spread: Spread) -> Result<()> {
    let device = stream.device();
    let tensors = [slots.x, slots.aux, slots.scale, slots.mean, slots.variance, slots.out_a, slots.out_b, slots.out_c];
    let first = tensors.iter().flatten().next().ok_or_else(|| Error::internal("batch norm launch without tensors"))?;
    let mems = tensors
        .iter()
        .map(|t| {
            let t = t.unwrap_or(first);
            device.memory.resolve(t.address, t.byte_len().max(4))
        })
        .collect::<Result<Vec<_>>>()?;
    if let Spread::WorkgroupPerChannel = spread {
        // The statistics' threads stride over the rows (twice for `stats`), then tree steps.
        check_loop_iterations(device, 2 * (p.rows as u64).div_ceil(256) + 16, "batch norm")?;
    }
    // Four channels per invocation where the channels and every offset fall on vec4s.
    let vec4 = match vec4_entry(entry) {
        Some(entry4) if p.c.is_multiple_of(4) => {
            let windows =
                mems.iter().map(|mem| aligned_vec4_window(device, mem, 4)).collect::<Result<Option<Vec<_>>>>()?;
            windows.map(|w| (entry4, w))
        }
        _ => None,
    };
    let (entry, lanes) = match &vec4 {
        Some((entry4, _)) => (*entry4, 4),
        None => (entry, 1),
    };
    let pipeline = device.pipelines.get(device, &SHADER, &PipelineSpec { entry, ..Default::default() })?;
    stream.encode(|core, encoder| {
        let mut bindings: Vec<Binding> = Vec::with_capacity(8);
        for (k, mem) in mems.iter().enumerate() {
            let (binding, off) = match &vec4 {
                Some((_, windows)) => (windows[k].0, windows[k].1 / 4),
                None => storage_window(core, mem, 4)?,
            };
            bindings.push(binding);
            p.offsets[k] = off;
        }
        let uniform = bytemuck::bytes_of(&p);
        match spread {
            Spread::WorkgroupPerChannel => {
                let groups = grid(core, (p.c / lanes) as u64, entry)?;
                dispatch_workgroups(core, encoder, entry, &pipeline, &bindings, uniform, groups)
            }
            // The vec4 element-wise kernels take blocks of `ROW_BLOCK` rows of four channels.
            Spread::Invocations(n) if lanes == 4 => {
                let invocations = (n / p.c as u64).div_ceil(ROW_BLOCK) * (p.c / 4) as u64;
                dispatch(core, encoder, entry, &pipeline, &bindings, uniform, invocations)
            }
            Spread::Invocations(n) => dispatch(core, encoder, entry, &pipeline, &bindings, uniform, n),
        }
    })
}

/// Rows per invocation of `normalize_vec4` and `grad_input_vec4` (`ROW_BLOCK` in the shader).
const ROW_BLOCK: u64 = 8;

/// The vec4 twin of an entry point that has one (`running` is per channel, already small).
fn vec4_entry(entry: &str) -> Option<&'static str> {
    match entry {
        "stats" => Some("stats_vec4"),
        "normalize" => Some("normalize_vec4"),
        "grad_stats" => Some("grad_stats_vec4"),
        "grad_input" => Some("grad_input_vec4"),
        _ => None,
    }
}

/// Channels-last geometry of `x`: (rows, channels), checking the per-channel operands' shapes.
pub fn geometry(x: &TensorRef, per_channel: &[(&TensorRef, &str)]) -> Result<(u32, u32)> {
    // Channels last (NHWC, NDHWC): channel-first nodes come through `layout::channels_last`.
    if x.shape.len() != 4 && x.shape.len() != 5 {
        return Err(Error::invalid_argument(format!("input must be 4 or 5-dimensional{:?}", x.shape)));
    }
    let c = x.shape[x.shape.len() - 1];
    for (t, name) in per_channel {
        if t.shape != [c] {
            return Err(Error::invalid_argument(format!("{name} must have shape [{c}], got {:?}", t.shape)));
        }
    }
    let rows = shader_len(x.num_elements() / c.max(1) as u64, "batch norm")?;
    Ok((rows, c as u32))
}

/// FusedBatchNorm (V1, V2, V3) with `is_training`: normalizes with the batch statistics and outputs the running
/// ones (y, batch_mean, batch_variance, saved mean, saved biased variance, reserve space).
pub fn forward_training(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let x = ctx.input(0)?;
    let scale = ctx.input(1)?;
    let offset = ctx.input(2)?;
    let old_mean = ctx.input(3)?;
    let old_var = ctx.input(4)?;
    let factor = kernel.attrs.float("exponential_avg_factor").unwrap_or(1.0);
    let (rows, c) = geometry(&x, &[(&scale, "scale"), (&offset, "offset")])?;
    if factor != 1.0 {
        geometry(&x, &[(&old_mean, "mean"), (&old_var, "variance")])?;
    }
    let y = ctx.allocate_output(0, x.dtype, &x.shape)?;
    let stat_shape = [c as i64];
    let batch_mean = ctx.allocate_output(1, scale.dtype, &stat_shape)?;
    let batch_var = ctx.allocate_output(2, scale.dtype, &stat_shape)?;
    let saved_mean = ctx.allocate_output(3, scale.dtype, &stat_shape)?;
    let saved_var = ctx.allocate_output(4, scale.dtype, &stat_shape)?;
    // V3's reserve space: TF-CPU's training kernel leaves a scalar here (V1 and V2 have none).
    if ctx.num_outputs() > 5 {
        let reserve = ctx.allocate_output(5, scale.dtype, &[])?;
        ctx.stream()?.fill(reserve.address, reserve.byte_len(), 0)?;
    }
    let stream = ctx.stream()?;
    if c == 0 {
        return Ok(());
    }
    if rows == 0 {
        // Statistics of nothing, as TF-CPU reports them: NaN batch statistics, zero saved ones
        // (its Eigen kernel leaves the saved ones uninitialised; its oneDNN one, the default, zeros).
        for t in [&batch_mean, &batch_var] {
            stream.fill(t.address, t.byte_len(), f32::NAN.to_bits())?;
        }
        for t in [&saved_mean, &saved_var] {
            stream.fill(t.address, t.byte_len(), 0)?;
        }
        return Ok(());
    }
    let p = Params {
        n: shader_len(x.num_elements(), "batch norm")?,
        rows,
        c,
        epsilon: kernel.attrs.float("epsilon")?,
        exponential_avg_factor: factor,
        ..Default::default()
    };
    // Rows per window of x that fits a storage binding (all of them, mostly).
    let window_rows = (binding_limit(stream.device()) / (4 * c as u64)).clamp(1, rows as u64) as u32;
    // The one-binding kernel's threads loop over the rows, twice: past llvmpipe's loop limit the
    // windowed statistics (column reductions that split their rows) serve too.
    let loops_too_long = !loops_fit(stream.device(), 2 * (rows as u64).div_ceil(256) + 16);
    if window_rows < rows || loops_too_long {
        statistics_in_windows(ctx, &x, rows, c, window_rows, &saved_mean, &saved_var)?;
    } else {
        let stats = Slots { x: Some(&x), out_a: Some(&saved_mean), out_b: Some(&saved_var), ..Default::default() };
        launch(stream, "stats", p, stats, Spread::WorkgroupPerChannel)?;
    }
    let stream = ctx.stream()?;
    for (mode, batch, old, out) in [(0, &saved_mean, &old_mean, &batch_mean), (1, &saved_var, &old_var, &batch_var)] {
        let old = if factor == 1.0 { batch } else { old };
        let slots = Slots { mean: Some(batch), aux: Some(old), out_a: Some(out), ..Default::default() };
        launch(stream, "running", Params { mode, ..p }, slots, Spread::Invocations(c as u64))?;
    }
    let mut start = 0;
    while start < rows {
        let count = window_rows.min(rows - start);
        let (x_part, y_part) = (row_window(&x, start, count, c), row_window(&y, start, count, c));
        let slots = Slots {
            x: Some(&x_part),
            aux: Some(&offset),
            scale: Some(&scale),
            mean: Some(&saved_mean),
            variance: Some(&saved_var),
            out_c: Some(&y_part),
            ..Default::default()
        };
        let n = count * c;
        launch(stream, "normalize", Params { n, rows: count, ..p }, slots, Spread::Invocations(n as u64))?;
        start += count;
    }
    Ok(())
}

/// Batch mean and biased variance of x (`rows` x `c`) larger than a storage binding, a window of
/// `window_rows` rows at a time: the windowed column mean, then the mean of squared deviations
/// from it (two passes, as the one-binding kernel makes).
fn statistics_in_windows(
    ctx: &mut dyn KernelContext,
    x: &TensorRef,
    rows: u32,
    c: u32,
    window_rows: u32,
    mean: &TensorRef,
    variance: &TensorRef,
) -> Result<()> {
    let flat = TensorRef { shape: vec![rows as i64, c as i64], ..x.clone() };
    reduce::mean_over_rows(ctx, &flat, mean)?;
    let squares = ctx.allocate_temp(DType::F32, &[window_rows as i64, c as i64])?;
    let partial = ctx.allocate_temp(DType::F32, &[c as i64])?;
    let mut start = 0;
    while start < rows {
        let count = window_rows.min(rows - start);
        let part = row_window(x, start, count, c);
        let squares = TensorRef { shape: part.shape.clone(), ..squares.clone() };
        let stream = ctx.stream()?;
        binary::launch(stream, BinaryOp::SquaredDifference, &part, mean, &squares)?;
        let total = if start == 0 { variance } else { &partial };
        reduce::sum_columns(stream, &squares, total)?;
        if start > 0 {
            binary::launch(stream, BinaryOp::Add, variance, &partial, variance)?;
        }
        start += count;
    }
    let divisor = ctx.allocate_temp(DType::F32, &[])?;
    let stream = ctx.stream()?;
    stream.fill(divisor.address, 4, (rows as f32).to_bits())?;
    binary::launch(stream, BinaryOp::RealDiv, variance, &divisor, variance)
}

/// FusedBatchNormGrad (V1, V2, V3; V3's reserve_space_3 is not read): x, scale and offset gradients from y's, given the statistics the forward
/// pass used (batch statistics in training mode, population ones otherwise).
pub fn grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if layout::is_channels_first(kernel.attrs.str("data_format")?)? {
        // (y_backprop, x, ...) -> (x_backprop, ...).
        let images = ImageArgs { inputs: &[0, 1], shape_inputs: &[], outputs: &[0] };
        return layout::channels_last(ctx, kernel, &images, grad);
    }
    let dy = ctx.input(0)?;
    let x = ctx.input(1)?;
    let scale = ctx.input(2)?;
    let mean = ctx.input(3)?;
    let variance = ctx.input(4)?;
    let (rows, c) = geometry(&x, &[(&scale, "scale"), (&mean, "reserve_space_1"), (&variance, "reserve_space_2")])?;
    if dy.shape != x.shape {
        return Err(Error::invalid_argument(format!(
            "x and y_backprop must have the same shape: {:?} vs {:?}",
            x.shape, dy.shape
        )));
    }
    let dx = ctx.allocate_output(0, x.dtype, &x.shape)?;
    let scale_grad = ctx.allocate_output(1, scale.dtype, &[c as i64])?;
    let offset_grad = ctx.allocate_output(2, scale.dtype, &[c as i64])?;
    ctx.allocate_output(3, scale.dtype, &[0])?;
    ctx.allocate_output(4, scale.dtype, &[0])?;
    let stream = ctx.stream()?;
    if c == 0 {
        return Ok(());
    }
    if rows == 0 {
        stream.fill(scale_grad.address, scale_grad.byte_len(), 0)?;
        return stream.fill(offset_grad.address, offset_grad.byte_len(), 0);
    }
    let p = Params {
        n: shader_len(x.num_elements(), "batch norm")?,
        rows,
        c,
        mode: u32::from(kernel.attrs.bool("is_training")?),
        epsilon: kernel.attrs.float("epsilon")?,
        ..Default::default()
    };
    // Windows of rows that fit a storage binding and whose statistics loops stay under llvmpipe's
    // limit (`launch` allows each thread two strides over the rows); all rows, mostly.
    let by_binding = binding_limit(stream.device()) / (4 * c as u64);
    let by_loops = (stream.device().max_loop_iterations.saturating_sub(16) / 2).saturating_mul(256);
    let window_rows = by_binding.min(by_loops).clamp(1, rows as u64) as u32;
    let partials = if window_rows < rows {
        let [a, b] = [0, 1].map(|_| ctx.allocate_temp(DType::F32, &[c as i64]));
        Some((a?, b?))
    } else {
        None
    };
    let stream = ctx.stream()?;
    // The gradients' sums add up over the windows: offset's is sum(dy), scale's sum(dy * x_hat).
    let mut start = 0;
    while start < rows {
        let count = window_rows.min(rows - start);
        let (x_part, dy_part) = (row_window(&x, start, count, c), row_window(&dy, start, count, c));
        let (sum_a, sum_b) = match &partials {
            Some((a, b)) if start > 0 => (a, b),
            _ => (&offset_grad, &scale_grad),
        };
        let slots = Slots {
            x: Some(&x_part),
            aux: Some(&dy_part),
            mean: Some(&mean),
            variance: Some(&variance),
            out_a: Some(sum_a),
            out_b: Some(sum_b),
            ..Default::default()
        };
        launch(stream, "grad_stats", Params { n: count * c, rows: count, ..p }, slots, Spread::WorkgroupPerChannel)?;
        if start > 0 {
            binary::launch(stream, BinaryOp::Add, &offset_grad, sum_a, &offset_grad)?;
            binary::launch(stream, BinaryOp::Add, &scale_grad, sum_b, &scale_grad)?;
        }
        start += count;
    }
    let mut start = 0;
    while start < rows {
        let count = window_rows.min(rows - start);
        let (x_part, dy_part) = (row_window(&x, start, count, c), row_window(&dy, start, count, c));
        let dx_part = row_window(&dx, start, count, c);
        let slots = Slots {
            x: Some(&x_part),
            aux: Some(&dy_part),
            scale: Some(&scale),
            mean: Some(&mean),
            variance: Some(&variance),
            out_a: Some(&offset_grad),
            out_b: Some(&scale_grad),
            out_c: Some(&dx_part),
        };
        // `rows` stays the whole count: the means of the sums divide by it.
        let n = count * c;
        launch(stream, "grad_input", Params { n, ..p }, slots, Spread::Invocations(n as u64))?;
        start += count;
    }
    Ok(())
}

/// Rows `start..start + count` of a `[rows, c]` float32 view of `t`.
fn row_window(t: &TensorRef, start: u32, count: u32, c: u32) -> TensorRef {
    TensorRef { address: t.address + start as u64 * c as u64 * 4, dtype: t.dtype, shape: vec![count as i64, c as i64] }
}
