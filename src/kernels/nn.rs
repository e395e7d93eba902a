//! Neural-network ops: Softmax and LogSoftmax (`wgsl/softmax.wgsl`), and softmax cross-entropy
//! with its gradient (`wgsl/xent.wgsl`).

use crate::error::{Error, Result};
use crate::runtime::device::KernelProfile;
use crate::runtime::pipeline::{
    check_loop_iterations, dispatch_workgroups, grid, loops_fit, storage_window, PipelineSpec, Shader,
};
use crate::runtime::DeviceCore;

use super::batch::{split_batch_on_overflow, BatchArgs};
use super::binary::{self, broadcast_shapes, BinaryOp};
use super::index;
use super::reduce::{self, SERIAL_REDUCTION_MAX, SERIAL_WORKGROUP};
use super::unary::{self, UnaryOp};
use super::windows::binding_limit;
use super::{shader_len, DType, KernelContext, KernelInstance, TensorRef};

/// On the GPU profile, rows up to this long loop in one invocation, and rows up to
/// `GPU_WARP_ROW_MAX` take 32 invocations each: a GPU coalesces neighbouring invocations' loads,
/// which one invocation per row (llvmpipe's best) would scatter over as many rows.
const GPU_SERIAL_ROW_MAX: u32 = 32;
const GPU_WARP_ROW_MAX: u32 = 4096;

/// How the row kernels (`softmax.wgsl`, `xent.wgsl`) share a row of `cols` elements: its override
/// constants `LANES` (invocations per row) and `WORKGROUP`, and the workgroups for `rows` rows.
/// Short rows loop in one invocation each (no barriers, which llvmpipe runs as coroutine switches:
/// a 128 x 10 cross-entropy took 3.9 ms as 128 workgroups of 256), long ones take a workgroup and
/// a tree.
struct RowSplit {
    lanes: u32,
    workgroup: u32,
}

impl RowSplit {
    /// The split for rows of `cols`, refused where one invocation's loops (four passes over its
    /// share of the row, and the trees) would run longer than the adapter allows.
    fn for_cols(device: &DeviceCore, cols: u32, what: &str) -> Result<RowSplit> {
        let gpu = device.kernel_profile() == KernelProfile::Gpu;
        let split = if gpu && cols > GPU_SERIAL_ROW_MAX && cols <= GPU_WARP_ROW_MAX {
            RowSplit { lanes: 32, workgroup: 256 }
        } else if cols <= SERIAL_REDUCTION_MAX {
            RowSplit { lanes: 1, workgroup: SERIAL_WORKGROUP as u32 }
        } else {
            RowSplit { lanes: 256, workgroup: 256 }
        };
        check_loop_iterations(device, 4 * u64::from(cols.div_ceil(split.lanes)) + 32, what)?;
        Ok(split)
    }

    /// Whether rows of `cols` fit one workgroup's loops (`for_cols` would not refuse them).
    fn fits(device: &DeviceCore, cols: u32) -> bool {
        loops_fit(device, 4 * u64::from(cols.div_ceil(256)) + 32)
    }

    fn constants(&self) -> [(&'static str, f64); 2] {
        [("LANES", self.lanes as f64), ("WORKGROUP", self.workgroup as f64)]
    }

    fn workgroups(&self, rows: u32) -> u64 {
        (rows as u64).div_ceil((self.workgroup / self.lanes) as u64)
    }
}

pub const SOFTMAX_SHADER: Shader = Shader {
    name: "softmax",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/rows_f32.wgsl"),
        include_str!("../../wgsl/rows.wgsl"),
        include_str!("../../wgsl/softmax.wgsl")
    ),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};
/// The same template for float64 (`F = f64`), with float64 row math.
pub const SOFTMAX_F64_SHADER: Shader = Shader {
    name: "softmax_f64",
    source: concat!(
        include_str!("../../wgsl/math_f64.wgsl"),
        include_str!("../../wgsl/rows_f64.wgsl"),
        include_str!("../../wgsl/rows.wgsl"),
        include_str!("../../wgsl/softmax.wgsl")
    ),
    ..SOFTMAX_SHADER
};

/// The row kernels' shader for `dtype` (float32 or float64) from the f32 and f64 variants, and its
/// `F` alias.
fn row_shader(dtype: DType, variants: [&'static Shader; 2]) -> (&'static Shader, [(&'static str, &'static str); 1]) {
    if dtype == DType::F64 {
        (variants[1], [("F", "f64")])
    } else {
        (variants[0], [("F", "f32")])
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SoftmaxParams {
    rows: u32,
    cols: u32,
    in_off: u32,
    out_off: u32,
}

/// Rows of softmax and cross-entropy inputs and outputs are independent.
const ROWS: BatchArgs = BatchArgs { inputs: &[0], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };

pub fn softmax(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if ctx.input(0)?.shape.len() >= 2 {
        return split_batch_on_overflow(ctx, kernel, &ROWS, softmax_whole);
    }
    softmax_whole(ctx, kernel)
}

fn softmax_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let logits = ctx.input(0)?;
    if logits.shape.is_empty() {
        return Err(Error::invalid_argument("logits must have >= 1 dimension, got []"));
    }
    let out = ctx.forward_input_or_allocate_output(&[0], 0, dtype, &logits.shape)?;
    let cols = *logits.shape.last().unwrap_or(&1);
    let total = logits.num_elements();
    if total == 0 {
        return Ok(());
    }
    let rows = shader_len(total / cols as u64, kernel.def.op)?;
    let op = u32::from(kernel.def.op == "LogSoftmax");
    if !RowSplit::fits(ctx.stream()?.device(), cols as u32) || row_past_binding(ctx, &logits, cols)? {
        return softmax_long_rows(ctx, op == 1, &logits, &out, i64::from(rows), cols);
    }
    let stream = ctx.stream()?;
    let device = stream.device();
    let in_mem = device.memory.resolve(logits.address, logits.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let split = RowSplit::for_cols(device, cols as u32, kernel.def.op)?;
    let [lanes, workgroup] = split.constants();
    let (shader, aliases) = row_shader(dtype, [&SOFTMAX_SHADER, &SOFTMAX_F64_SHADER]);
    let pipeline = device.pipelines.get(
        device,
        shader,
        &PipelineSpec { entry: "main", aliases: &aliases, constants: &[("OP", op as f64), lanes, workgroup] },
    )?;
    let size = dtype.size();
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, size)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, size)?;
        let params = SoftmaxParams { rows, cols: cols as u32, in_off, out_off };
        let groups = grid(core, split.workgroups(rows), "softmax")?;
        dispatch_workgroups(
            core,
            encoder,
            "softmax",
            &pipeline,
            &[in_bind, out_bind],
            bytemuck::bytes_of(&params),
            groups,
        )
    })
}

/// Whether one row of `cols` elements of `t` is larger than a storage binding (the row kernels bind
/// whole rows; the batch split takes care of many rows that fit one at a time).
fn row_past_binding(ctx: &mut dyn KernelContext, t: &TensorRef, cols: i64) -> Result<bool> {
    Ok(cols as u64 * t.dtype.size() > binding_limit(ctx.stream()?.device()))
}

/// Softmax and LogSoftmax of rows longer than one workgroup's loops may walk (llvmpipe: about 4.2M
/// elements) or larger than a storage binding: `softmax.wgsl`'s steps as launches over the whole tensor, the row reductions in
/// slices: the row maximum, x - max, exp, its compensated sum, then the quotient (LogSoftmax:
/// x - max - log(sum), the exponentials in a temporary).
fn softmax_long_rows(
    ctx: &mut dyn KernelContext,
    log: bool,
    logits: &TensorRef,
    out: &TensorRef,
    rows: i64,
    cols: i64,
) -> Result<()> {
    let x = TensorRef { shape: vec![rows, cols], ..logits.clone() };
    let y = TensorRef { shape: vec![rows, cols], ..out.clone() };
    let along_rows = [false, true];
    let row_max = ctx.allocate_temp(x.dtype, &[rows, 1])?;
    let total = ctx.allocate_temp(x.dtype, &[rows, 1])?;
    reduce::max(ctx, &x, &along_rows, &row_max)?;
    binary::launch(ctx.stream()?, BinaryOp::Sub, &x, &row_max, &y)?;
    if log {
        let exps = ctx.allocate_temp(x.dtype, &[rows, cols])?;
        unary::launch(ctx.stream()?, UnaryOp::Exp, 0.0, &y, &exps)?;
        reduce::sum(ctx, &exps, &along_rows, &total)?;
        let stream = ctx.stream()?;
        unary::launch(stream, UnaryOp::Log, 0.0, &total, &total)?;
        return binary::launch(stream, BinaryOp::Sub, &y, &total, &y);
    }
    unary::launch(ctx.stream()?, UnaryOp::Exp, 0.0, &y, &y)?;
    reduce::sum(ctx, &y, &along_rows, &total)?;
    binary::launch(ctx.stream()?, BinaryOp::RealDiv, &y, &total, &y)
}

pub const XENT_SHADER: Shader = Shader {
    name: "xent",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/rows_f32.wgsl"),
        include_str!("../../wgsl/rows.wgsl"),
        include_str!("../../wgsl/xent.wgsl")
    ),
    storage_buffers: 5,
    uniform_buffers: 0,
    textures: 0,
};
/// The same template for float64.
pub const XENT_F64_SHADER: Shader = Shader {
    name: "xent_f64",
    source: concat!(
        include_str!("../../wgsl/math_f64.wgsl"),
        include_str!("../../wgsl/rows_f64.wgsl"),
        include_str!("../../wgsl/rows.wgsl"),
        include_str!("../../wgsl/xent.wgsl")
    ),
    ..XENT_SHADER
};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct XentParams {
    rows: u32,
    cols: u32,
    f_off: u32,
    labels_off: u32,
    loss_off: u32,
    back_off: u32,
    label_words: u32,
    _pad: u32,
}

/// SparseSoftmaxCrossEntropyWithLogits (int32/int64 class labels) and SoftmaxCrossEntropyWithLogits
/// (dense label rows): per-row loss and its gradient with respect to the logits.
pub fn cross_entropy(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    const LOGIT_ROWS: BatchArgs =
        BatchArgs { inputs: &[0, 1], shape_inputs: &[], outputs: &[0, 1], summed_outputs: &[] };
    split_batch_on_overflow(ctx, kernel, &LOGIT_ROWS, cross_entropy_whole)
}

fn cross_entropy_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = kernel.def.op;
    let sparse = op == "SparseSoftmaxCrossEntropyWithLogits";
    let mut features = ctx.input(0)?;
    let mut labels = ctx.input(1)?;
    if !sparse && labels.shape != features.shape {
        // TF broadcasts dense labels and logits to one 2-D shape.
        let shape = broadcast_shapes(&features.shape, &labels.shape)?;
        if shape.len() != 2 {
            return Err(Error::invalid_argument(format!(
                "logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional, got {:?} and {:?}",
                features.shape, labels.shape
            )));
        }
        for t in [&mut features, &mut labels] {
            if t.shape != shape {
                let full = ctx.allocate_temp(t.dtype, &shape)?;
                index::map(ctx.stream()?, t, &full, &index::broadcast_dims(&t.shape, &shape)?, None)?;
                *t = full;
            }
        }
    }
    if features.shape.len() != 2 {
        return Err(Error::invalid_argument(format!("logits must be 2-D, but got shape {:?}", features.shape)));
    }
    let (rows, cols) = (features.shape[0], features.shape[1]);
    if sparse && labels.shape != [rows] {
        return Err(Error::invalid_argument(format!(
            "logits and labels must have the same first dimension, got logits shape {:?} and labels shape {:?}",
            features.shape, labels.shape
        )));
    }
    // TF's sparse kernel needs a class even for an empty batch; its dense one only for rows.
    if cols == 0 && (sparse || rows > 0) {
        return Err(Error::invalid_argument("Must have at least one class, but got logits with 0 columns"));
    }
    let loss = ctx.allocate_output(0, features.dtype, &[rows])?;
    let backprop = ctx.allocate_output(1, features.dtype, &features.shape)?;
    if rows == 0 {
        return Ok(());
    }
    if !RowSplit::fits(ctx.stream()?.device(), cols as u32) || row_past_binding(ctx, &features, cols)? {
        let rows = RowsOf { features: &features, labels: &labels, loss: &loss, backprop: &backprop };
        return cross_entropy_long_rows(ctx, sparse, rows);
    }
    let label_words = if labels.dtype == DType::I64 { 2 } else { 1 };
    let rows = shader_len(rows as u64, op)?;
    let stream = ctx.stream()?;
    let device = stream.device();
    let mems = [&features, &labels, &loss, &backprop].map(|t| device.memory.resolve(t.address, t.byte_len()));
    let [f_mem, l_mem, loss_mem, back_mem] = mems;
    let (f_mem, l_mem, loss_mem, back_mem) = (f_mem?, l_mem?, loss_mem?, back_mem?);
    let entry = if sparse { "sparse" } else { "dense" };
    let split = RowSplit::for_cols(device, cols as u32, op)?;
    let (shader, aliases) = row_shader(features.dtype, [&XENT_SHADER, &XENT_F64_SHADER]);
    let pipeline = device.pipelines.get(
        device,
        shader,
        &PipelineSpec { entry, aliases: &aliases, constants: &split.constants() },
    )?;
    let size = features.dtype.size();
    // Sparse labels are read as words, dense ones as elements of the features' type.
    let label_size = if sparse { 4 } else { size };
    stream.encode(|core, encoder| {
        let (f_bind, f_off) = storage_window(core, &f_mem, size)?;
        let (l_bind, labels_off) = storage_window(core, &l_mem, label_size)?;
        let (loss_bind, loss_off) = storage_window(core, &loss_mem, size)?;
        let (back_bind, back_off) = storage_window(core, &back_mem, size)?;
        let params =
            XentParams { rows, cols: cols as u32, f_off, labels_off, loss_off, back_off, label_words, _pad: 0 };
        let groups = grid(core, split.workgroups(rows), entry)?;
        dispatch_workgroups(
            core,
            encoder,
            entry,
            &pipeline,
            // Binding 4, dense labels as F, is read by `dense` alone (sparse labels may be narrower).
            &[f_bind, l_bind, loss_bind, back_bind, if sparse { f_bind } else { l_bind }],
            bytemuck::bytes_of(&params),
            groups,
        )
    })
}

/// A cross-entropy's tensors: `features` [rows, cols], `labels` (class indices [rows], or dense
/// [rows, cols]), and the outputs `loss` [rows] and `backprop` [rows, cols].
struct RowsOf<'a> {
    features: &'a TensorRef,
    labels: &'a TensorRef,
    loss: &'a TensorRef,
    backprop: &'a TensorRef,
}

/// The cross-entropies of rows longer than one workgroup's loops may walk, or past a binding: `xent.wgsl`'s steps as
/// launches over the whole tensor, the row reductions in slices. With shifted = f - max and
/// lse = log(sum(exp(shifted))): loss = sum_j p_j * (lse - shifted_j) and backprop =
/// exp(shifted) / sum - p. Sparse labels pick their column by a select (0 * inf would be NaN), and
/// a label outside the row makes its row NaN, as TF-GPU's kernel does: both outputs are scaled by
/// hits / hits, 1 where the label hit a column and 0 / 0 where it did not.
fn cross_entropy_long_rows(ctx: &mut dyn KernelContext, sparse: bool, t: RowsOf) -> Result<()> {
    let (rows, cols) = (t.features.shape[0], t.features.shape[1]);
    if sparse && rows > 1 {
        // A row at a time: the label mask is bool, and a row of it that starts off a word (cols not
        // a multiple of 4) could not be written where the mask's launch splits into rows.
        let size = t.features.dtype.size();
        let row_of = |x: &TensorRef, r: i64, len: i64| TensorRef {
            address: x.address + (r * len) as u64 * x.dtype.size(),
            dtype: x.dtype,
            shape: vec![1, len],
        };
        for r in 0..rows {
            let (features, backprop) = (row_of(t.features, r, cols), row_of(t.backprop, r, cols));
            let labels = TensorRef { shape: vec![1], ..row_of(t.labels, r, 1) };
            let loss = TensorRef { address: t.loss.address + r as u64 * size, dtype: t.loss.dtype, shape: vec![1] };
            let one = RowsOf { features: &features, labels: &labels, loss: &loss, backprop: &backprop };
            cross_entropy_long_rows(ctx, true, one)?;
        }
        return Ok(());
    }
    let dtype = t.features.dtype;
    let along_rows = [false, true];
    let row_stat = |ctx: &mut dyn KernelContext| ctx.allocate_temp(dtype, &[rows, 1]);
    let (row_max, lse) = (row_stat(ctx)?, row_stat(ctx)?);
    let exps = ctx.allocate_temp(dtype, &[rows, cols])?;
    let terms = ctx.allocate_temp(dtype, &[rows, cols])?;
    // shifted (in `backprop` until the end), its exponentials and their row sums.
    reduce::max(ctx, t.features, &along_rows, &row_max)?;
    binary::launch(ctx.stream()?, BinaryOp::Sub, t.features, &row_max, t.backprop)?;
    unary::launch(ctx.stream()?, UnaryOp::Exp, 0.0, t.backprop, &exps)?;
    reduce::sum(ctx, &exps, &along_rows, &lse)?;
    let stream = ctx.stream()?;
    binary::launch(stream, BinaryOp::RealDiv, &exps, &lse, &exps)?;
    unary::launch(stream, UnaryOp::Log, 0.0, &lse, &lse)?;
    binary::launch(stream, BinaryOp::Sub, &lse, t.backprop, &terms)?;
    if !sparse {
        binary::launch(stream, BinaryOp::Mul, t.labels, &terms, &terms)?;
        reduce::sum(ctx, &terms, &along_rows, t.loss)?;
        return binary::launch(ctx.stream()?, BinaryOp::Sub, &exps, t.labels, t.backprop);
    }
    // The label's column: labels [rows, 1] == 0..cols.
    let hit = ctx.allocate_temp(DType::Bool, &[rows, cols])?;
    let positions = ctx.allocate_temp(t.labels.dtype, &[1, cols])?;
    let (zero, one) = (ctx.allocate_temp(dtype, &[])?, ctx.allocate_temp(dtype, &[])?);
    let stream = ctx.stream()?;
    let bytes: Vec<u8> = if t.labels.dtype == DType::I64 {
        (0..cols).flat_map(|i| i.to_le_bytes()).collect()
    } else {
        (0..cols).flat_map(|i| (i as i32).to_le_bytes()).collect()
    };
    stream.memcpy_htod(positions.address, &bytes)?;
    for (scalar, value) in [(&zero, 0.0f64), (&one, 1.0)] {
        match dtype {
            DType::F64 => stream.memcpy_htod(scalar.address, &value.to_le_bytes())?,
            _ => stream.memcpy_htod(scalar.address, &(value as f32).to_le_bytes())?,
        }
    }
    let label_column = TensorRef { shape: vec![rows, 1], ..t.labels.clone() };
    super::integer::launch(stream, super::integer::EQUAL, &label_column, &positions, &hit)?;
    binary::launch_select(stream, &hit, &terms, &zero, &terms)?;
    reduce::sum(ctx, &terms, &along_rows, t.loss)?;
    // The one-hot rows (in `terms`), their sums, and hits / hits.
    let stream = ctx.stream()?;
    binary::launch_select(stream, &hit, &one, &zero, &terms)?;
    let scale = row_stat(ctx)?;
    reduce::sum(ctx, &terms, &along_rows, &scale)?;
    let stream = ctx.stream()?;
    binary::launch(stream, BinaryOp::RealDiv, &scale, &scale, &scale)?;
    binary::launch(stream, BinaryOp::Sub, &exps, &terms, t.backprop)?;
    binary::launch(stream, BinaryOp::Mul, t.backprop, &scale, t.backprop)?;
    let per_row = TensorRef { shape: vec![rows], ..scale };
    binary::launch(stream, BinaryOp::Mul, t.loss, &per_row, t.loss)
}
