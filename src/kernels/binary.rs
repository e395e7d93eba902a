//! Broadcasting elementwise families: float binary ops (`wgsl/binary.wgsl`), comparisons into bools
//! (`wgsl/compare.wgsl`), bool logic (`wgsl/logical.wgsl`) and Select (`wgsl/select.wgsl`), all
//! sharing `wgsl/broadcast.wgsl`.

use crate::error::{Error, Result};
use crate::runtime::device::KernelProfile;
use crate::runtime::encoder::{BatchKind, SlotWindow};
use crate::runtime::memory::DeviceSlice;
use crate::runtime::pipeline::{
    dispatch, dispatch_with_texels, storage_window, vec4_window, Binding, PipelineSpec, Shader, VEC4_MIN_ELEMENTS,
};
use crate::runtime::scratch::{texels_pay_off, TEXELS_A, TEXELS_B};
use crate::runtime::{trace, Stream};
use bytemuck::Zeroable;

use super::validate::shape_string;
use super::windows::elementwise_parts;
use super::{fast_div, rank_constant, shader_len, DType, KernelContext, KernelInstance, TensorRef};

/// A shader of `file` after the shared prelude; `libraries` (such as `math.wgsl`) come first.
macro_rules! broadcast_shader {
    ($name:literal, $file:literal, $buffers:expr $(, $library:literal)*) => {
        Shader {
            name: $name,
            source: concat!(
                $(include_str!(concat!("../../wgsl/", $library)),)*
                include_str!("../../wgsl/quot.wgsl"),
                include_str!("../../wgsl/broadcast.wgsl"),
                include_str!(concat!("../../wgsl/", $file))
            ),
            storage_buffers: $buffers,
            uniform_buffers: 0,
            textures: 0,
        }
    };
}

pub const SHADER: Shader = broadcast_shader!("binary", "binary.wgsl", 3, "math.wgsl");
/// `main_batch` of `binary.wgsl`: its slots take every storage binding it declares.
/// `binary.wgsl`'s `main_vec4_texels`: its two textures bind after the parameter block.
pub const TEXELS_SHADER: Shader = Shader { name: "binary texels", textures: 2, ..SHADER };
pub const BATCH_SHADER: Shader = broadcast_shader!("binary batch", "binary.wgsl", BATCH_SLOTS as u32, "math.wgsl");
pub const COMPARE_SHADER: Shader = broadcast_shader!("compare", "compare.wgsl", 3);
pub const LOGICAL_SHADER: Shader = broadcast_shader!("logical", "logical.wgsl", 3);
pub const SELECT_SHADER: Shader = broadcast_shader!("select", "select.wgsl", 4);
/// float64 binary ops, comparisons and unary ops, computed in f64 (needs SHADER_F64). Bindings 3
/// and 4 are the operands again, read as words for their NaN bits (`launch_two`).
pub const FLOAT64_SHADER: Shader = broadcast_shader!("binary_f64", "binary_f64.wgsl", 5, "math_f64.wgsl");

/// The ops of `binary.wgsl`, by the value of its `OP` override constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add = 0,
    Mul = 1,
    Sub = 2,
    RealDiv = 3,
    DivNoNan = 4,
    FloorDiv = 5,
    FloorMod = 6,
    Maximum = 7,
    Minimum = 8,
    Pow = 9,
    SquaredDifference = 10,
    ReluGrad = 11,
    Relu6Grad = 12,
    EluGrad = 13,
    SeluGrad = 14,
    LeakyReluGrad = 15,
    SoftplusGrad = 16,
    SigmoidGrad = 17,
    TanhGrad = 18,
    RsqrtGrad = 19,
    SqrtGrad = 20,
    ReciprocalGrad = 21,
    /// ClipByValue's upper bound, `hi < x ? hi : x` (Eigen's cwiseMin: a NaN bound is ignored).
    ClipHigh = 22,
    /// ClipByValue's lower bound, `x < lo ? lo : x` (Eigen's cwiseMax).
    ClipLow = 23,
    SoftsignGrad = 24,
    Xlogy = 25,
    Xdivy = 26,
    Xlog1py = 27,
    Atan2 = 28,
    MulNoNan = 29,
    NextAfter = 30,
}

/// Activation gradients: same-shape elementwise ops of `binary.wgsl`.
pub const GRAD_OPS: [(&str, BinaryOp); 13] = [
    ("ReluGrad", BinaryOp::ReluGrad),
    ("Relu6Grad", BinaryOp::Relu6Grad),
    ("EluGrad", BinaryOp::EluGrad),
    ("SeluGrad", BinaryOp::SeluGrad),
    ("LeakyReluGrad", BinaryOp::LeakyReluGrad),
    ("SoftplusGrad", BinaryOp::SoftplusGrad),
    ("SigmoidGrad", BinaryOp::SigmoidGrad),
    ("TanhGrad", BinaryOp::TanhGrad),
    ("RsqrtGrad", BinaryOp::RsqrtGrad),
    ("SqrtGrad", BinaryOp::SqrtGrad),
    ("ReciprocalGrad", BinaryOp::ReciprocalGrad),
    ("InvGrad", BinaryOp::ReciprocalGrad),
    ("SoftsignGrad", BinaryOp::SoftsignGrad),
];

/// TF op name → binary op.
pub const BINARY_OPS: [(&str, BinaryOp); 19] = [
    ("AddV2", BinaryOp::Add),
    ("Add", BinaryOp::Add),
    ("Mul", BinaryOp::Mul),
    ("Sub", BinaryOp::Sub),
    ("RealDiv", BinaryOp::RealDiv),
    ("Div", BinaryOp::RealDiv),
    ("DivNoNan", BinaryOp::DivNoNan),
    ("FloorDiv", BinaryOp::FloorDiv),
    ("FloorMod", BinaryOp::FloorMod),
    ("Maximum", BinaryOp::Maximum),
    ("Minimum", BinaryOp::Minimum),
    ("Pow", BinaryOp::Pow),
    ("SquaredDifference", BinaryOp::SquaredDifference),
    ("Xlogy", BinaryOp::Xlogy),
    ("Xdivy", BinaryOp::Xdivy),
    ("Xlog1py", BinaryOp::Xlog1py),
    ("Atan2", BinaryOp::Atan2),
    ("MulNoNan", BinaryOp::MulNoNan),
    ("NextAfter", BinaryOp::NextAfter),
];

/// The binary ops TF defines for float32 and float64 only (no float16 kernel on TF-CPU either).
pub const FLOAT32_ONLY_OPS: [&str; 1] = ["NextAfter"];

/// The binary ops `binary_f64.wgsl` computes in f64: all of `BINARY_OPS`.
pub const FLOAT64_OPS: [&str; 19] = [
    "AddV2",
    "Add",
    "Mul",
    "Sub",
    "RealDiv",
    "Div",
    "DivNoNan",
    "FloorDiv",
    "Maximum",
    "Minimum",
    "SquaredDifference",
    "Pow",
    "Atan2",
    "FloorMod",
    "Xlogy",
    "Xdivy",
    "Xlog1py",
    "MulNoNan",
    "NextAfter",
];

/// TF op name → `OP` of `compare.wgsl`.
pub const COMPARE_OPS: [(&str, u32); 6] =
    [("Equal", 0), ("NotEqual", 1), ("Less", 2), ("LessEqual", 3), ("Greater", 4), ("GreaterEqual", 5)];

const MAX_RANK: usize = 8;

/// NumPy/TF broadcasting of two shapes; `InvalidArgument` when they are incompatible.
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[i64], i: usize| if i + s.len() >= rank { s[i + s.len() - rank] } else { 1 };
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Ok(x),
            (1, y) => Ok(y),
            (x, 1) => Ok(x),
            _ => Err(Error::invalid_argument(format!("Incompatible shapes: {a:?} vs. {b:?}"))),
        })
        .collect()
}

/// Row-major strides of `shape` aligned to `out` (rank-padded), 0 where a dimension is broadcast.
fn broadcast_strides(shape: &[i64], out: &[i64]) -> Vec<u32> {
    let pad = out.len() - shape.len();
    let mut strides = vec![0u32; out.len()];
    let mut step = 1u64;
    for i in (0..shape.len()).rev() {
        strides[pad + i] = if shape[i] == 1 && out[pad + i] != 1 { 0 } else { step as u32 };
        step *= shape[i].max(1) as u64;
    }
    strides
}

/// The index arithmetic of one broadcasting launch: rank, shape and per-operand strides, padded to 8.
struct Layout {
    rank: u32,
    shape: [u32; MAX_RANK],
    strides: Vec<[u32; MAX_RANK]>,
}

impl Layout {
    fn new(out: &[i64], operands: &[&[i64]]) -> Result<Self> {
        let mut layout = Layout { rank: 1, shape: [1; MAX_RANK], strides: vec![[0; MAX_RANK]; operands.len()] };
        // Operands shaped like the output index it the same way: one flat dimension.
        if operands.iter().all(|s| *s == out) {
            layout.shape[0] = shape_len(out)?;
            layout.strides.iter_mut().for_each(|s| s[0] = 1);
            return Ok(layout);
        }
        let mut strides = Vec::with_capacity(operands.len());
        for shape in operands {
            if shape.len() > out.len() {
                return Err(Error::invalid_argument(format!("operand shape {shape:?} does not broadcast to {out:?}")));
            }
            strides.push(broadcast_strides(shape, out));
        }
        // Merge each dimension into the next inner one where every operand steps through the pair
        // as through one dimension (both broadcast, or contiguous): a bias add over [n, h, w, c]
        // indexes as [n * h * w, c], and fewer dimensions are fewer index splits per element.
        let mut dims: Vec<(u32, Vec<u32>)> = Vec::with_capacity(out.len());
        for (d, &size) in out.iter().enumerate() {
            if size == 1 {
                // A dimension of one element indexes nothing.
                continue;
            }
            let size = size as u32;
            let steps: Vec<u32> = strides.iter().map(|s| s[d]).collect();
            match dims.last_mut() {
                Some((outer, outer_steps)) if outer_steps.iter().zip(&steps).all(|(&o, &s)| o == s * size) => {
                    *outer *= size;
                    *outer_steps = steps;
                }
                _ => dims.push((size, steps)),
            }
        }
        // TF broadcasts any rank; what is left after merging must fit the shader's eight.
        if dims.len() > MAX_RANK {
            return Err(Error::unimplemented(format!(
                "broadcasting {out:?} needs {} dimensions after merging, beyond {MAX_RANK}",
                dims.len()
            )));
        }
        if dims.is_empty() {
            dims.push((1, vec![0; operands.len()]));
        }
        layout.rank = dims.len() as u32;
        for (d, (size, steps)) in dims.into_iter().enumerate() {
            layout.shape[d] = size;
            for (k, step) in steps.into_iter().enumerate() {
                layout.strides[k][d] = step;
            }
        }
        Ok(layout)
    }
}

fn shape_len(shape: &[i64]) -> Result<u32> {
    shader_len(shape.iter().map(|&d| d.max(0) as u64).product(), "broadcast")
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct TwoOperandParams {
    n: u32,
    rank: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    _pad: [u32; 3],
    shape: [u32; MAX_RANK],
    a_strides: [u32; MAX_RANK],
    b_strides: [u32; MAX_RANK],
}

/// How a two-operand shader binds its tensors and covers its output.
#[derive(Clone, Copy)]
pub(super) struct Units {
    /// Binding unit of the inputs, in bytes: offsets are counted in these.
    pub input: u64,
    /// Binding unit of the output.
    pub output: u64,
    /// Output elements one invocation writes: more than one where it writes whole words of packed
    /// 1- or 2-byte elements (the output must then start on a word).
    pub per_thread: u64,
}

impl Units {
    /// Elements of `size` bytes in and out, one per invocation.
    pub const fn elements(size: u64) -> Self {
        Units { input: size, output: size, per_thread: 1 }
    }

    /// Inputs in units of `input` bytes into packed bools, four per invocation.
    pub(super) const fn to_bool(input: u64) -> Self {
        Units { input, output: 1, per_thread: 4 }
    }
}

/// Shared launch of the two-operand broadcasting shaders (`Params` of `n`, `rank`, the three
/// offsets and the broadcast strides): parts of tensors past a binding, the layout, the binding
/// windows, one invocation per `units.per_thread` output elements.
pub(super) fn launch_two(
    stream: &Stream,
    shader: &Shader,
    spec: PipelineSpec,
    a: &TensorRef,
    b: &TensorRef,
    out: &TensorRef,
    units: Units,
) -> Result<()> {
    if let Some(parts) = elementwise_parts(stream.device(), out, &[a, b])? {
        return parts.iter().try_for_each(|p| {
            let spec = PipelineSpec { ..spec };
            launch_two(stream, shader, spec, &p.operands[0], &p.operands[1], &p.out, units)
        });
    }
    let n = shape_len(&out.shape)?;
    if n == 0 {
        return Ok(());
    }
    let layout = Layout::new(&out.shape, &[&a.shape, &b.shape])?;
    let device = stream.device();
    let mems: Vec<DeviceSlice> =
        [a, b, out].iter().map(|t| device.memory.resolve(t.address, t.byte_len())).collect::<Result<_>>()?;
    let constants: Vec<_> = spec.constants.iter().copied().chain([fast_div(n), rank_constant(layout.rank)]).collect();
    let pipeline = device.pipelines.get(device, shader, &PipelineSpec { constants: &constants, ..spec })?;
    stream.encode(|core, encoder| {
        let (a_bind, a_off) = storage_window(core, &mems[0], units.input)?;
        let (b_bind, b_off) = storage_window(core, &mems[1], units.input)?;
        let (out_bind, out_off) = storage_window(core, &mems[2], units.output)?;
        if units.output == 1 && out_off % 4 != 0 {
            return Err(Error::unimplemented("packed output that is not word-aligned"));
        }
        let params = TwoOperandParams {
            n,
            rank: layout.rank,
            a_off,
            b_off,
            out_off,
            _pad: [0; 3],
            shape: layout.shape,
            a_strides: layout.strides[0],
            b_strides: layout.strides[1],
        };
        let threads = u64::from(n).div_ceil(units.per_thread);
        // A shader with five storage buffers reads the operands a second time, as raw words.
        let bindings = [a_bind, b_bind, out_bind, a_bind, b_bind];
        let bindings = &bindings[..shader.storage_buffers as usize];
        dispatch(core, encoder, shader.name, &pipeline, bindings, bytemuck::bytes_of(&params), threads)
    })
}

/// Encodes the float64 unary op `op` (unary.wgsl's `OP`) of `input` into `out`, same shape, through
/// `binary_f64.wgsl`'s `unary` (the broadcasting launch with both operands `input`).
pub fn launch_unary_f64(stream: &Stream, op: u32, alpha: f32, input: &TensorRef, out: &TensorRef) -> Result<()> {
    let constants = [("OP", f64::from(op)), ("ALPHA", f64::from(alpha))];
    let spec = PipelineSpec { entry: "unary", aliases: &[], constants: &constants };
    launch_two(stream, &FLOAT64_SHADER, spec, input, input, out, Units::elements(8))
}

/// Encodes `out = op(a, b)`; `out` has the broadcast shape of `a` and `b` and may alias either.
pub fn launch(stream: &Stream, op: BinaryOp, a: &TensorRef, b: &TensorRef, out: &TensorRef) -> Result<()> {
    launch_binary(stream, op, None, a, b, out)
}

/// Storage slots of `main_batch` (lavapipe allows 32 storage bindings per stage).
const BATCH_SLOTS: usize = 28;
/// Outputs up to this many elements join a batch: a batch runs in one workgroup of 8 invocations.
const BATCH_ELEMENTS: u64 = 64;
/// `BATCH_RECORDS` of `binary.wgsl`.
const BATCH_RECORDS: u32 = 32;

/// One `BatchRecord` of `binary.wgsl`: out[i] = op(a[i * a_step], b[i * b_step]) for i < n, each
/// operand a slot and an element offset.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BatchRecord {
    op: u32,
    n: u32,
    a: [u32; 3],
    b: [u32; 3],
    out: [u32; 2],
    _pad: [u32; 2],
}

/// Whether `BATCH_SHADER` (`BATCH_SLOTS` storage buffers and its uniform block) binds on a device
/// with `limits`: not under DX12's 16 storage buffers nor the portable floor's 8.
pub fn batch_fits(limits: &wgpu::Limits) -> bool {
    let buffers = BATCH_SLOTS as u32;
    limits.max_storage_buffers_per_shader_stage >= buffers
        && limits.max_buffers_and_acceleration_structures_per_shader_stage > buffers
}

static BATCH_KIND: BatchKind = BatchKind {
    label: "binary batch",
    slots: BATCH_SLOTS,
    max_records: BATCH_RECORDS,
    record_bytes: std::mem::size_of::<BatchRecord>(),
};

/// `out = op(a, b)` as a record of the stream's batch of small launches (`main_batch`), on CPU
/// adapters, where waking the compute thread pool for a dispatch costs more than a small op (an
/// eager chain of 1-element ops ran 2-4x slower once lavapipe's pool threads had spread over both
/// cores of a 2-core machine). Returns false, encoding nothing, where it does not apply: f32 only,
/// outputs of up to `BATCH_ELEMENTS` elements, each operand shaped like the output or a single
/// element, ops specialised by `OP` alone (not LeakyReluGrad's `ALPHA`).
fn launch_batched(
    stream: &Stream,
    op: BinaryOp,
    alpha: Option<f32>,
    a: &TensorRef,
    b: &TensorRef,
    out: &TensorRef,
) -> Result<bool> {
    let device = stream.device();
    let n = out.num_elements();
    if alpha.is_some() {
        return Ok(false);
    }
    let op = op as u32;
    let operand_fits = |t: &TensorRef| t.dtype == DType::F32 && (t.num_elements() == 1 || t.num_elements() == n);
    // While profiling, every launch is a dispatch of its own, named by its op.
    let fits = device.info.device_type == wgpu::DeviceType::Cpu
        && !trace::active()
        && batch_fits(&device.limits)
        && out.dtype == DType::F32
        && (1..=BATCH_ELEMENTS).contains(&n)
        && operand_fits(a)
        && operand_fits(b);
    if !fits {
        return Ok(false);
    }
    let mems: Vec<DeviceSlice> =
        [a, b, out].iter().map(|t| device.memory.resolve(t.address, t.byte_len())).collect::<Result<_>>()?;
    let (max_binding, align) =
        (device.limits.max_storage_buffer_binding_size, u64::from(device.limits.min_storage_buffer_offset_alignment));
    let windows: Option<Vec<(SlotWindow, u64)>> = mems
        .iter()
        .map(|m| {
            let window = SlotWindow::covering(m.buffer(), m.offset, m.len.max(4), max_binding, align)?;
            (m.offset.is_multiple_of(4) && window.1 / 4 <= u64::from(u32::MAX)).then_some(window)
        })
        .collect();
    let Some(windows) = windows else {
        return Ok(false);
    };
    let aliases = [("T", DType::F32.wgsl())];
    let spec = PipelineSpec { entry: "main_batch", aliases: &aliases, constants: &[] };
    let pipeline = device.pipelines.get(device, &BATCH_SHADER, &spec)?;
    let buffers: Vec<SlotWindow> = windows.iter().map(|(w, _)| w.clone()).collect();
    let step = |t: &TensorRef| u32::from(t.num_elements() == n && n > 1);
    let at = |i: usize| (windows[i].1 / 4) as u32;
    stream.batch(&BATCH_KIND, &pipeline, &buffers, |slots| {
        let record = BatchRecord {
            op,
            n: n as u32,
            a: [slots[0], at(0), step(a)],
            b: [slots[1], at(1), step(b)],
            out: [slots[2], at(2)],
            _pad: [0; 2],
        };
        bytemuck::bytes_of(&record).to_vec()
    })?;
    Ok(true)
}

/// `binary.wgsl` specialised to `op` (and LeakyReluGrad's `alpha`): a record of a batch of small
/// launches on CPU adapters, four elements at a time where the operands allow it, else the
/// broadcasting kernel.
fn launch_binary(
    stream: &Stream,
    op: BinaryOp,
    alpha: Option<f32>,
    a: &TensorRef,
    b: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    if let Some(parts) = elementwise_parts(stream.device(), out, &[a, b])? {
        return parts.iter().try_for_each(|p| launch_binary(stream, op, alpha, &p.operands[0], &p.operands[1], &p.out));
    }
    let with_alpha = [("OP", f64::from(op as u32)), ("ALPHA", f64::from(alpha.unwrap_or(0.0)))];
    let constants = if alpha.is_some() { &with_alpha[..] } else { &with_alpha[..1] };
    if out.dtype == DType::F64 {
        // NextAfter works on the bits (its own entry point), so that subnormal results survive.
        let entry = if op == BinaryOp::NextAfter { "next_after" } else { "main" };
        let spec = PipelineSpec { entry, aliases: &[], constants };
        return launch_two(stream, &FLOAT64_SHADER, spec, a, b, out, Units::elements(8));
    }
    if launch_batched(stream, op, alpha, a, b, out)? {
        return Ok(());
    }
    if launch_vec4(stream, constants, a, b, out)? {
        return Ok(());
    }
    let aliases = [("T", out.dtype.wgsl())];
    let spec = PipelineSpec { entry: "main", aliases: &aliases, constants };
    launch_two(stream, &SHADER, spec, a, b, out, Units::elements(out.dtype.size()))
}

/// How `main_vec4` reads an operand.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Vec4Operand {
    /// Shaped like the output.
    Full,
    /// One element, repeated.
    Scalar,
    /// The output's trailing dimensions (a multiple of 4 elements), repeated: a bias.
    Row,
}

/// Whether `shape`, without its leading 1s, is the trailing dimensions of `out`: it repeats as a row.
fn is_trailing_row(shape: &[i64], out: &[i64]) -> bool {
    let inner: &[i64] = &shape[shape.iter().take_while(|&&d| d == 1).count()..];
    out.ends_with(inner)
}

/// `out = op(a, b)` through `main_vec4` for the elements up to a multiple of 4, then `main` for the
/// rest. Returns false, encoding nothing, where it does not apply: broadcasting other than by a
/// scalar or a row, outputs under `VEC4_MIN_ELEMENTS`, offsets off a vec4, or dtypes other than
/// f32/f16.
fn launch_vec4(
    stream: &Stream,
    constants: &[(&'static str, f64)],
    a: &TensorRef,
    b: &TensorRef,
    out: &TensorRef,
) -> Result<bool> {
    if !matches!(out.dtype, DType::F32 | DType::F16) || a.dtype != out.dtype || b.dtype != out.dtype {
        return Ok(false);
    }
    let n = shape_len(&out.shape)?;
    let kind = |t: &TensorRef| match t.num_elements() {
        _ if t.shape == out.shape => Some(Vec4Operand::Full),
        1 => Some(Vec4Operand::Scalar),
        len if len % 4 == 0 && is_trailing_row(&t.shape, &out.shape) => Some(Vec4Operand::Row),
        _ => None,
    };
    use Vec4Operand::{Full, Row, Scalar};
    // (SCALAR, ROW) of `main_vec4`.
    let (scalar, row) = match (kind(a), kind(b)) {
        _ if n < VEC4_MIN_ELEMENTS => return Ok(false),
        (Some(Full), Some(Full)) => (0, 0),
        (Some(Scalar), Some(Full)) => (1, 0),
        (Some(Full), Some(Scalar)) => (2, 0),
        (Some(Row), Some(Full)) => (0, 1),
        (Some(Full), Some(Row)) => (0, 2),
        _ => return Ok(false),
    };
    // A row's length in vec4s; rows are whole vec4s, so are the outputs they repeat along.
    let row_vec4s = match row {
        1 => a.num_elements() / 4,
        2 => b.num_elements() / 4,
        _ => 0,
    };
    let kinds = [kind(a), kind(b), Some(Vec4Operand::Full)].map(|k| k.unwrap_or(Vec4Operand::Full));
    let device = stream.device();
    let size = out.dtype.size();
    let mems: Vec<DeviceSlice> =
        [a, b, out].iter().map(|t| device.memory.resolve(t.address, t.byte_len())).collect::<Result<_>>()?;
    let mut windows = Vec::with_capacity(3);
    for (mem, kind) in mems.iter().zip(kinds) {
        match vec4_window(device, mem, size)? {
            // A scalar is read as one lane of its vec4; the others must start on one.
            Some(window) if kind == Vec4Operand::Scalar || window.1 % 4 == 0 => windows.push(window),
            _ => return Ok(false),
        }
    }
    let aliases = [("T", out.dtype.wgsl())];
    let mut vec4_constants = constants.to_vec();
    vec4_constants.extend([("SCALAR", f64::from(scalar)), ("ROW", f64::from(row)), fast_div(n / 4)]);
    let bindings = [windows[0].0, windows[1].0, windows[2].0];
    let [a_off, b_off, out_off] = [windows[0].1, windows[1].1, windows[2].1];
    let body = n / 4 * 4;
    // On CPU adapters, f32 operands go through textures: a scalar as the texel that holds it,
    // rows and full-size operands where they start on a texel. (Binding offsets are multiples of 16.)
    let texel_copy = |i: usize, off: u32| -> Option<(u64, u64)> {
        let start = bindings[i].offset + u64::from(off) * 4;
        match kinds[i] {
            Scalar => Some((bindings[i].offset + u64::from(off / 4) * 16, 1)),
            Row if start % 16 == 0 => Some((start, row_vec4s)),
            Full if start % 16 == 0 => Some((start, u64::from(body / 4))),
            _ => None,
        }
    };
    let copies = if device.kernel_profile() == KernelProfile::Cpu
        && out.dtype == DType::F32
        && texels_pay_off(u64::from(body / 4), u64::from(body / 4))
    {
        [texel_copy(0, a_off), texel_copy(1, b_off)]
    } else {
        [None, None]
    };
    let texel_operands = u32::from(copies[0].is_some()) | u32::from(copies[1].is_some()) << 1;
    let (shader, entry) =
        if texel_operands != 0 { (&TEXELS_SHADER, "main_vec4_texels") } else { (&SHADER, "main_vec4") };
    vec4_constants.push(("TEXELS", f64::from(texel_operands)));
    let vec4 =
        device.pipelines.get(device, shader, &PipelineSpec { entry, aliases: &aliases, constants: &vec4_constants })?;
    // The tail indexes one flat dimension.
    let tail_constants: Vec<_> = constants.iter().copied().chain([rank_constant(1)]).collect();
    let tail = device.pipelines.get(
        device,
        &SHADER,
        &PipelineSpec { entry: "main", aliases: &aliases, constants: &tail_constants },
    )?;
    stream.encode(|core, encoder| {
        let mut params = TwoOperandParams { n: body, rank: 1, a_off, b_off, out_off, ..Zeroable::zeroed() };
        params.shape[0] = row_vec4s as u32;
        let label = "binary vec4";
        let vec4s = u64::from(body / 4);
        if texel_operands == 0 {
            dispatch(core, encoder, label, &vec4, &bindings, bytemuck::bytes_of(&params), vec4s)?;
        } else {
            let mut views = Vec::with_capacity(2);
            for (i, role) in [TEXELS_A, TEXELS_B].into_iter().enumerate() {
                if let Some((start, texels)) = copies[i] {
                    views.push(core.scratch.texels(core, encoder, role, bindings[i].buffer, start, texels)?);
                }
            }
            // An operand read from storage leaves its texture binding to the other's copy.
            let texels = [&views[0], views.last().unwrap_or(&views[0])];
            let label = "binary vec4 texels";
            dispatch_with_texels(core, encoder, label, &vec4, &bindings, &texels, bytemuck::bytes_of(&params), vec4s)?;
        }
        let rest = n - body;
        if rest > 0 {
            // One flat dimension: full operands step through it, the scalar stays put. (Outputs with
            // a row operand are whole vec4s: no tail.)
            let stride = |k: Vec4Operand| u32::from(k == Full);
            let (a_stride, b_stride) = (stride(kinds[0]), stride(kinds[1]));
            let mut params = TwoOperandParams {
                n: rest,
                rank: 1,
                a_off: a_off + a_stride * body,
                b_off: b_off + b_stride * body,
                out_off: out_off + body,
                ..Zeroable::zeroed()
            };
            params.shape[0] = rest;
            (params.a_strides[0], params.b_strides[0]) = (a_stride, b_stride);
            dispatch(core, encoder, "binary", &tail, &bindings, bytemuck::bytes_of(&params), u64::from(rest))?;
        }
        Ok(true)
    })
}

fn op_by_name<T: Copy>(table: &[(&str, T)], op: &str) -> Result<T> {
    table.iter().find(|(n, _)| *n == op).map(|(_, v)| *v).ok_or_else(|| Error::internal(format!("unknown op {op}")))
}

pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = op_by_name(&BINARY_OPS, kernel.def.op)?;
    let dtype = kernel.dtype("T")?;
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let out = ctx.forward_input_or_allocate_output(&[0, 1], 0, dtype, &shape)?;
    launch(ctx.stream()?, op, &a, &b, &out)
}

/// Activation gradients: both inputs and the output have one shape (TF does not broadcast them).
pub fn grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = op_by_name(&GRAD_OPS, kernel.def.op)?;
    let dtype = kernel.dtype("T")?;
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    if a.shape != b.shape {
        return Err(Error::invalid_argument(format!(
            "{}: inputs must have the same shape: {:?} vs. {:?}",
            kernel.def.op, a.shape, b.shape
        )));
    }
    let alpha = if op == BinaryOp::LeakyReluGrad { kernel.attrs.float("alpha")? } else { 0.0 };
    let out = ctx.forward_input_or_allocate_output(&[0, 1], 0, dtype, &a.shape)?;
    launch_binary(ctx.stream()?, op, Some(alpha), &a, &b, &out)
}

/// BiasAdd and BiasAddV1: `value + bias` along the channel dimension (NHWC: the last one).
pub fn bias_add(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let value = ctx.input(0)?;
    let mut bias = ctx.input(1)?;
    // BiasAddV1, the first generation, has no data_format: channels last.
    let format = if kernel.def.op == "BiasAddV1" { "NHWC" } else { kernel.attrs.str("data_format")? };
    if value.shape.len() < 2 {
        return Err(Error::invalid_argument(format!("Input tensor must be at least 2D: {:?}", value.shape)));
    }
    let channel_dim = match format {
        "NHWC" => value.shape.len() - 1,
        "NCHW" => 1,
        other => return Err(Error::invalid_argument(format!("Unknown data_format {other}"))),
    };
    if bias.shape.len() != 1 || bias.shape[0] != value.shape[channel_dim] {
        return Err(Error::invalid_argument(format!(
            "Must provide as many biases as the channel dimension of the input tensor: {:?} vs. {:?}",
            bias.shape, value.shape
        )));
    }
    // The bias, viewed with trailing 1s after the channel dimension, broadcasts over the rest.
    bias.shape.extend(std::iter::repeat_n(1, value.shape.len() - 1 - channel_dim));
    let out = ctx.forward_input_or_allocate_output(&[0], 0, dtype, &value.shape)?;
    launch(ctx.stream()?, BinaryOp::Add, &value, &bias, &out)
}

/// AddN: the sum of N same-shaped inputs, accumulated in the output.
pub fn add_n(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let inputs: Vec<TensorRef> = (0..ctx.num_inputs()).map(|i| ctx.input(i)).collect::<Result<_>>()?;
    let first = inputs.first().ok_or_else(|| Error::invalid_argument("AddN needs at least one input"))?.clone();
    if let Some(t) = inputs.iter().find(|t| t.shape != first.shape) {
        return Err(Error::invalid_argument(format!(
            "Inputs to operation AddN must have the same size and shape.  Input 0: {:?} != input: {:?}",
            first.shape, t.shape
        )));
    }
    let candidates: Vec<usize> = (0..inputs.len()).collect();
    let out = ctx.forward_input_or_allocate_output(&candidates, 0, dtype, &first.shape)?;
    let stream = ctx.stream()?;
    if inputs.len() == 1 {
        if out.address != first.address {
            stream.memcpy_dtod(out.address, first.address, first.byte_len())?;
        }
        return Ok(());
    }
    // If the output took over input k, start from it so no input is overwritten before it is read.
    let start = inputs.iter().position(|t| t.address == out.address).unwrap_or(0);
    let other = if start == 0 { 1 } else { 0 };
    launch(stream, BinaryOp::Add, &inputs[start], &inputs[other], &out)?;
    for (i, t) in inputs.iter().enumerate() {
        if i != start && i != other {
            launch(stream, BinaryOp::Add, &out, t, &out)?;
        }
    }
    Ok(())
}

/// ClipByValue: `min(max(t, clip_value_min), clip_value_max)`, both bounds broadcasting to `t`.
pub fn clip_by_value(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let t = ctx.input(0)?;
    let lo = ctx.input(1)?;
    let hi = ctx.input(2)?;
    for bound in [&lo, &hi] {
        if !(bound.shape.is_empty() || bound.shape == t.shape) {
            return Err(Error::invalid_argument(format!(
                "clip_value_min and clip_value_max must be either scalars or have the same shape as the input: {:?} vs {:?}",
                bound.shape, t.shape
            )));
        }
    }
    let out = ctx.forward_input_or_allocate_output(&[0], 0, dtype, &t.shape)?;
    let stream = ctx.stream()?;
    // TF-CPU's order: the upper bound, then the lower.
    launch(stream, BinaryOp::ClipHigh, &t, &hi, &out)?;
    launch(stream, BinaryOp::ClipLow, &out, &lo, &out)
}

/// Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual: bool output.
pub fn compare(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    if super::integer::answer_incompatible_equality(ctx, kernel, &a, &b)? {
        return Ok(());
    }
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let out = ctx.allocate_output(0, DType::Bool, &shape)?;
    launch_compare(ctx.stream()?, kernel.def.op, dtype, &a, &b, &out)
}

/// `out = a <op> b` (bool), `op` one of `COMPARE_OPS` by name, broadcasting.
pub fn launch_compare(
    stream: &Stream,
    op: &str,
    dtype: DType,
    a: &TensorRef,
    b: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    let op = op_by_name(&COMPARE_OPS, op)?;
    if dtype == DType::F64 {
        let spec = PipelineSpec { entry: "compare_main", aliases: &[], constants: &[("OP", op as f64)] };
        return launch_two(stream, &FLOAT64_SHADER, spec, a, b, out, Units::to_bool(8));
    }
    let aliases = [("T", dtype.wgsl())];
    let spec = PipelineSpec { entry: "main", aliases: &aliases, constants: &[("OP", op as f64)] };
    launch_two(stream, &COMPARE_SHADER, spec, a, b, out, Units::to_bool(dtype.size()))
}

/// ApproximateEqual: `|x - y| <= tolerance`, elementwise over same-shaped operands (bool output).
pub fn approximate_equal(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    if a.shape != b.shape {
        return Err(Error::invalid_argument(format!(
            "x and y must be of the same shape. x shape: {} y shape: {}",
            shape_string(&a.shape),
            shape_string(&b.shape)
        )));
    }
    let tolerance = f64::from(kernel.attrs.float("tolerance")?);
    let out = ctx.allocate_output(0, DType::Bool, &a.shape)?;
    let constants = [("OP", 6.0), ("TOLERANCE", tolerance)];
    if dtype == DType::F64 {
        let spec = PipelineSpec { entry: "compare_main", aliases: &[], constants: &constants };
        return launch_two(ctx.stream()?, &FLOAT64_SHADER, spec, &a, &b, &out, Units::to_bool(8));
    }
    let aliases = [("T", dtype.wgsl())];
    let spec = PipelineSpec { entry: "main", aliases: &aliases, constants: &constants };
    launch_two(ctx.stream()?, &COMPARE_SHADER, spec, &a, &b, &out, Units::to_bool(dtype.size()))
}

/// LogicalAnd, LogicalOr (broadcasting) and LogicalNot.
pub fn logical(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let (op, a, b) = match kernel.def.op {
        "LogicalNot" => {
            let a = ctx.input(0)?;
            (2u32, a.clone(), a)
        }
        name => (if name == "LogicalAnd" { 0 } else { 1 }, ctx.input(0)?, ctx.input(1)?),
    };
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let out = ctx.allocate_output(0, DType::Bool, &shape)?;
    let spec = PipelineSpec { entry: "main", aliases: &[], constants: &[("OP", op as f64)] };
    launch_two(ctx.stream()?, &LOGICAL_SHADER, spec, &a, &b, &out, Units::to_bool(1))
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SelectParams {
    n: u32,
    rank: u32,
    cond_byte: u32,
    t_off: u32,
    e_off: u32,
    out_off: u32,
    _pad: [u32; 2],
    shape: [u32; MAX_RANK],
    cond_strides: [u32; MAX_RANK],
    t_strides: [u32; MAX_RANK],
    e_strides: [u32; MAX_RANK],
}

/// Select (v1: `cond` matches `t` or is a vector over its first dimension) and SelectV2 (broadcasting).
pub fn select(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let mut cond = ctx.input(0)?;
    let t = ctx.input(1)?;
    let e = ctx.input(2)?;
    let shape = if kernel.def.op == "SelectV2" {
        broadcast_shapes(&broadcast_shapes(&cond.shape, &t.shape)?, &e.shape)?
    } else {
        if t.shape != e.shape {
            return Err(Error::invalid_argument(format!(
                "'then' and 'else' must have the same size.  but received: {:?} vs. {:?}",
                t.shape, e.shape
            )));
        }
        if cond.shape.len() == 1 && t.shape.len() > 1 && cond.shape[0] == t.shape[0] {
            cond.shape.extend(std::iter::repeat_n(1, t.shape.len() - 1));
        } else if cond.shape != t.shape && !cond.shape.is_empty() {
            return Err(Error::invalid_argument(format!(
                "'cond' and 'then' must have the same shape or 'cond' must be a vector: {:?} vs {:?}",
                cond.shape, t.shape
            )));
        }
        t.shape.clone()
    };
    let out = ctx.allocate_output(0, dtype, &shape)?;
    launch_select(ctx.stream()?, &cond, &t, &e, &out)
}

/// `out = cond ? t : e` with broadcasting (`cond`'s shape already aligned for Select v1).
pub fn launch_select(stream: &Stream, cond: &TensorRef, t: &TensorRef, e: &TensorRef, out: &TensorRef) -> Result<()> {
    if let Some(parts) = elementwise_parts(stream.device(), out, &[cond, t, e])? {
        return parts
            .iter()
            .try_for_each(|p| launch_select(stream, &p.operands[0], &p.operands[1], &p.operands[2], &p.out));
    }
    let shape = out.shape.clone();
    let n = shape_len(&shape)?;
    if n == 0 {
        return Ok(());
    }
    let size = out.dtype.size();
    // Whole words per element, or one word of several elements (`main_packed`).
    let (entry, unit, constant, threads) = if size >= 4 {
        ("main", 4, ("WORDS", (size / 4) as f64), u64::from(n) * size / 4)
    } else {
        ("main_packed", 1, ("BYTES", size as f64), u64::from(n).div_ceil(4 / size))
    };
    let layout = Layout::new(&shape, &[&cond.shape, &t.shape, &e.shape])?;
    let device = stream.device();
    let mems: Vec<DeviceSlice> =
        [cond, t, e, out].iter().map(|x| device.memory.resolve(x.address, x.byte_len())).collect::<Result<_>>()?;
    let pipeline = device.pipelines.get(
        device,
        &SELECT_SHADER,
        &PipelineSpec { entry, aliases: &[], constants: &[constant, fast_div(n), rank_constant(layout.rank)] },
    )?;
    stream.encode(|core, encoder| {
        let (c_bind, cond_byte) = storage_window(core, &mems[0], 1)?;
        let (t_bind, t_off) = storage_window(core, &mems[1], unit)?;
        let (e_bind, e_off) = storage_window(core, &mems[2], unit)?;
        let (o_bind, out_off) = storage_window(core, &mems[3], unit)?;
        if unit == 1 && out_off % 4 != 0 {
            return Err(Error::internal("select: an output that does not start on a word"));
        }
        let params = SelectParams {
            n,
            rank: layout.rank,
            cond_byte,
            t_off,
            e_off,
            out_off,
            _pad: [0; 2],
            shape: layout.shape,
            cond_strides: layout.strides[0],
            t_strides: layout.strides[1],
            e_strides: layout.strides[2],
        };
        let bindings: [Binding; 4] = [c_bind, t_bind, e_bind, o_bind];
        dispatch(core, encoder, "select", &pipeline, &bindings, bytemuck::bytes_of(&params), threads)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[4, 1]).unwrap(), vec![2, 4, 3]);
        assert_eq!(broadcast_shapes(&[], &[5]).unwrap(), vec![5]);
        assert_eq!(broadcast_shapes(&[0, 3], &[1, 3]).unwrap(), vec![0, 3]);
        assert_eq!(broadcast_shapes(&[2, 3], &[3, 2]).unwrap_err().code, crate::error::Code::InvalidArgument);
        assert_eq!(broadcast_strides(&[4, 1], &[2, 4, 3]), vec![0, 1, 0]);
    }
}
