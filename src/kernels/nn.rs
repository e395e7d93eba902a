//! Neural-network ops: Softmax and LogSoftmax (`wgsl/softmax.wgsl`), and softmax cross-entropy
//! with its gradient (`wgsl/xent.wgsl`).

use crate::error::{Error, Result};
use crate::runtime::device::KernelProfile;
use crate::runtime::pipeline::{
    check_loop_iterations, dispatch_workgroups, grid, storage_window, PipelineSpec, Shader,
};
use crate::runtime::DeviceCore;

use super::batch::{split_batch_on_overflow, BatchArgs};
use super::binary::broadcast_shapes;
use super::index;
use super::reduce::{SERIAL_REDUCTION_MAX, SERIAL_WORKGROUP};
use super::{shader_len, DType, KernelContext, KernelInstance};

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
    let stream = ctx.stream()?;
    let device = stream.device();
    let in_mem = device.memory.resolve(logits.address, logits.byte_len())?;
    let out_mem = device.memory.resolve(out.address, out.byte_len())?;
    let op = u32::from(kernel.def.op == "LogSoftmax");
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
