//! Scatters and gathers by index tuples (`wgsl/scatter.wgsl`): UnsortedSegmentSum, Prod, Min and
//! Max, ScatterNd, TensorScatterAdd, Sub, Min, Max and Update, GatherNd, and the launches the
//! resource variables' scatter updates share (`variables`). Arithmetic combines serve float32,
//! int32 and uint32 by the word, the 8- and 16-bit integers and floats by their lane of a word, and
//! int64, uint64 and float64 through chains (`wgsl/scatter_chain.wgsl`); updates and gathers move
//! elements of any dtype, those of int64, uint64 and float64 through the chains too (so that of
//! repeated tuples one row wins whole). Index tuples outside the output are dropped and gathers
//! give zeros for them, as on TF-GPU (TF-CPU reports them as errors instead; checking would need a
//! readback of the indices). Tensors larger than a binding are served in windows: ranges of tuples
//! against ranges of the indexed tensor's rows, each launch dropping the tuples outside its rows.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, loop_budget, storage_window, Binding, PipelineSpec, Shader};
use crate::runtime::{DeviceSlice, Stream};

use super::index::{self, DimMap};
use super::slice::contiguous_strides;
use super::windows::binding_limit;
use super::{shader_len, validate, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "scatter",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/int64.wgsl"),
        include_str!("../../wgsl/scatter_index.wgsl"),
        include_str!("../../wgsl/scatter.wgsl")
    ),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

/// Scatters of 8-byte integers (arithmetic, and assignments), through per-row chains of the updates.
pub const CHAIN_SHADER: Shader = Shader {
    name: "scatter_chain",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/int64.wgsl"),
        include_str!("../../wgsl/scatter_index.wgsl"),
        include_str!("../../wgsl/scatter_chain_int.wgsl"),
        include_str!("../../wgsl/scatter_chain.wgsl")
    ),
    storage_buffers: 4,
    uniform_buffers: 0,
    textures: 0,
};

/// Arithmetic scatters of float64 (SHADER_F64), through the same chains.
pub const CHAIN_F64_SHADER: Shader = Shader {
    name: "scatter_chain_f64",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/int64.wgsl"),
        include_str!("../../wgsl/scatter_index.wgsl"),
        include_str!("../../wgsl/scatter_chain_f64.wgsl"),
        include_str!("../../wgsl/scatter_chain.wgsl")
    ),
    ..CHAIN_SHADER
};

/// The private attribute of a TensorScatterUpdate that the Grappler rewrite of an integer
/// ResourceScatterDiv sets to "Div": the updates divide the rows they land on, each in turn (TF has
/// no TensorScatterDiv).
pub const COMBINE_ATTR: &str = "_wgpu_scatter_combine";

/// The integer dtypes whose arithmetic scatters run here (int32 only where TF-GPU keeps it in
/// device memory: the segment reductions).
pub const ARITHMETIC_INTEGERS: [DType; 7] =
    [DType::U32, DType::I8, DType::U8, DType::I16, DType::U16, DType::I64, DType::U64];

/// The most tuples one chain batch links: bounds the longest walk on adapters without a loop cap.
const MAX_CHAIN_BATCH: u64 = 1 << 16;

/// Index depths the shader takes (TF's kernels serve 0 to 7 on every device).
const MAX_DEPTH: usize = 8;

/// How a scatter combines an update with the element it lands on (`COMBINE_*` in the shader).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    Add = 0,
    Sub = 1,
    Mul = 2,
    Div = 3,
    Min = 4,
    Max = 5,
    /// Any whole-word dtype: the update replaces the element.
    Assign = 6,
}

impl Combine {
    /// The combine of a TensorScatter*, ResourceScatter* or ResourceScatterNd* op, by its suffix.
    pub fn of_op(op: &str) -> Option<Combine> {
        let name = op.trim_start_matches("TensorScatter").trim_start_matches("ResourceScatterNd");
        Some(match name.trim_start_matches("ResourceScatter") {
            "Add" | "ScatterNdNonAliasingAdd" => Combine::Add,
            "Sub" => Combine::Sub,
            "Mul" => Combine::Mul,
            "Div" => Combine::Div,
            "Min" => Combine::Min,
            "Max" => Combine::Max,
            "Update" => Combine::Assign,
            _ => return None,
        })
    }
}

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
    combine: u32,
    dims: [u32; MAX_DEPTH],
    row_strides: [u32; MAX_DEPTH],
    /// Batched scatters: index tuples per batch and output rows between batches (0: one batch).
    batch_tuples: u32,
    batch_rows: u32,
    /// The narrow entries: bytes per element and the output's elements.
    elem_bytes: u32,
    elements: u32,
    /// The chains: output rows (heads), the batch's first tuple, and the links' word offset.
    heads: u32,
    tuple_base: u32,
    links_off: u32,
    /// Windows of a tensor larger than a binding: the table's first row and rows, and the first
    /// tuple (`Window`).
    row_base: u32,
    row_count: u32,
    first_tuple: u32,
    pad: [u32; 2],
}

/// The dtypes whose arithmetic combines run in their lane of a word: the narrow integers (in 64
/// bits, int64.wgsl's arithmetic) and the 16-bit floats (in float32, rounded back each time).
fn combines_in_lanes(dtype: DType) -> bool {
    matches!(dtype, DType::I8 | DType::U8 | DType::I16 | DType::U16 | DType::F16 | DType::BF16)
}

/// The chain shader of the 8-byte dtypes whose arithmetic combines run through chains.
fn chain_shader(dtype: DType) -> Option<&'static Shader> {
    match dtype {
        DType::I64 | DType::U64 => Some(&CHAIN_SHADER),
        DType::F64 => Some(&CHAIN_F64_SHADER),
        _ => None,
    }
}

/// Words per element: arithmetic combines of whole words need float32 or a 32-bit integer, moves
/// any whole-word dtype.
fn words_per_element(dtype: DType, combine: Combine, what: &str) -> Result<u64> {
    match (combine, dtype) {
        (Combine::Assign, d) if d.size().is_multiple_of(4) => Ok(d.size() / 4),
        (_, DType::F32 | DType::I32 | DType::U32) => Ok(1),
        (_, other) => Err(Error::unimplemented(format!("{what} of {} on WGPU", other.tf_name()))),
    }
}

/// The pipeline constants that give the combines their element type (`KIND`, and int64.wgsl's
/// `WIDTH` and `SIGNED` for the integers).
fn kind_constants(dtype: DType) -> [(&'static str, f64); 3] {
    let kind = match dtype {
        DType::F32 => 0,
        DType::F16 => 2,
        DType::BF16 => 3,
        _ => 1,
    };
    let signed = matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
    [("KIND", f64::from(kind)), ("WIDTH", dtype.size() as f64), ("SIGNED", f64::from(u8::from(signed)))]
}

/// One launch's share of a scatter or gather: tuples `first_tuple..first_tuple + tuples` against
/// rows `first_row..first_row + rows` of the tensor the tuples index (the table: a scatter's
/// output, a gather's params), columns `first_column..first_column + columns` of each row. Work
/// that fits one binding is one window of everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    first_tuple: u64,
    tuples: u64,
    first_row: u64,
    rows: u64,
    first_column: u64,
    columns: u64,
}

/// The windows of `tuples` index tuples (`index_bytes` each) with rows of `columns` elements of
/// `elem_bytes`, against a table of `table_rows` such rows, each of whose shares of the indices, the
/// tuples' rows (updates, or a gather's output) and the table fits `limit` bytes. A chain's links
/// fit then too: a word per table row and per tuple, whose rows hold 8 bytes or more.
fn windows(limit: u64, tuples: u64, table_rows: u64, columns: u64, elem_bytes: u64, index_bytes: u64) -> Vec<Window> {
    let row_bytes = (columns * elem_bytes).max(1);
    let whole = Window { first_tuple: 0, tuples, first_row: 0, rows: table_rows, first_column: 0, columns };
    if tuples * row_bytes.max(index_bytes) <= limit && table_rows * row_bytes <= limit {
        return vec![whole];
    }
    let mut out = Vec::new();
    if row_bytes <= limit {
        // Ranges of tuples, each against every range of table rows.
        let per_range = (limit / row_bytes.max(index_bytes)).max(1);
        let per_window = limit / row_bytes;
        for first_tuple in (0..tuples).step_by(per_range as usize) {
            for first_row in (0..table_rows).step_by(per_window as usize) {
                let tuples = per_range.min(tuples - first_tuple);
                let rows = per_window.min(table_rows - first_row);
                out.push(Window { first_tuple, tuples, first_row, rows, ..whole });
            }
        }
        return out;
    }
    // A row larger than a binding: each tuple against each table row, in ranges of columns.
    let per_part = (limit / elem_bytes).max(1);
    for first_tuple in 0..tuples {
        for first_row in 0..table_rows {
            for first_column in (0..columns).step_by(per_part as usize) {
                let columns = per_part.min(columns - first_column);
                out.push(Window { first_tuple, tuples: 1, first_row, rows: 1, first_column, columns });
            }
        }
    }
    out
}

/// Rows `first..first + count` of `t` (rows of `row_elements`), the window's columns of them: a
/// contiguous range, as a window holds every column or one row.
fn rows_part(t: &TensorRef, row_elements: u64, first: u64, count: u64, window: &Window) -> TensorRef {
    let start = first * row_elements + window.first_column;
    TensorRef {
        address: t.address + start * t.dtype.size(),
        dtype: t.dtype,
        shape: vec![count as i64, window.columns as i64],
    }
}

/// Runs `launch` on each window of a scatter of `rows` (the updates, one row per tuple) into
/// `out`, or of a gather (`gathers`) of `rows` (the params) into `out` (one row per tuple), with the
/// window's indices, rows and output.
#[allow(clippy::too_many_arguments)]
fn for_each_window(
    stream: &Stream,
    gathers: bool,
    indices: &TensorRef,
    depth: usize,
    rows: &TensorRef,
    out: &TensorRef,
    tuples: u64,
    launch: &mut dyn FnMut(&Window, &TensorRef, &TensorRef, &TensorRef) -> Result<()>,
) -> Result<()> {
    let (table, per_tuple) = if gathers { (rows, out) } else { (out, rows) };
    let columns = per_tuple.num_elements() / tuples;
    let table_rows = table.num_elements() / columns;
    let index_bytes = depth as u64 * indices.dtype.size();
    // Rows and tuples count in 32 bits in the shader: refused before any window writes.
    shader_len(table_rows, "scatter rows")?;
    shader_len(tuples, "scatter tuples")?;
    let limit = binding_limit(stream.device());
    for window in windows(limit, tuples, table_rows, columns, rows.dtype.size(), index_bytes) {
        let index_part = TensorRef {
            address: indices.address + window.first_tuple * index_bytes,
            dtype: indices.dtype,
            shape: vec![window.tuples as i64, depth as i64],
        };
        let tuple_part = rows_part(per_tuple, columns, window.first_tuple, window.tuples, &window);
        let table_part = rows_part(table, columns, window.first_row, window.rows, &window);
        let (rows_part, out_part) = if gathers { (table_part, tuple_part) } else { (tuple_part, table_part) };
        launch(&window, &index_part, &rows_part, &out_part)?;
    }
    Ok(())
}

/// The parameters of a launch of `entry` over `words` words (elements of a narrow or chained
/// dtype), `row_words` to a row of `rows`, the scattered or gathered tensor, in `window`.
#[allow(clippy::too_many_arguments)]
fn params(
    entry: &str,
    combine: Combine,
    indices: &TensorRef,
    dims: &[i64],
    rows: &TensorRef,
    out: &TensorRef,
    words: u64,
    row_words: u64,
    [batch_tuples, batch_rows]: [u32; 2],
    window: &Window,
) -> Result<Params> {
    let mut p: Params = bytemuck::Zeroable::zeroed();
    (p.batch_tuples, p.batch_rows) = (batch_tuples, batch_rows);
    p.first_tuple = shader_len(window.first_tuple, entry)?;
    p.row_base = shader_len(window.first_row, entry)?;
    p.row_count = shader_len(window.rows, entry)?;
    // 1- and 2-byte elements: `rows` is addressed in bytes.
    if rows.dtype.size() < 4 {
        p.elem_bytes = rows.dtype.size() as u32;
        p.elements = shader_len(out.num_elements(), entry)?;
    }
    p.n = shader_len(words, entry)?;
    p.row_len = shader_len(row_words, entry)?;
    p.depth = dims.len() as u32;
    p.combine = combine as u32;
    p.index_words = match indices.dtype {
        DType::I32 => 1,
        DType::I64 => 2,
        other => return Err(Error::invalid_argument(format!("indices must be int32 or int64, not {other:?}"))),
    };
    for (k, (&dim, stride)) in dims.iter().zip(contiguous_strides(dims)).enumerate() {
        p.dims[k] = shader_len(dim as u64, entry)?;
        p.row_strides[k] = shader_len(stride as u64, entry)?;
    }
    Ok(p)
}

/// The device memory of a launch's indices, rows and output. An empty index tensor binds the rows
/// instead (never read: depth 0 or no rows).
fn operands(stream: &Stream, indices: &TensorRef, rows: &TensorRef, out: &TensorRef) -> Result<[DeviceSlice; 3]> {
    let memory = &stream.device().memory;
    let idx = if indices.num_elements() > 0 { indices } else { rows };
    Ok([
        memory.resolve(idx.address, idx.byte_len().max(4))?,
        memory.resolve(rows.address, rows.byte_len())?,
        memory.resolve(out.address, out.byte_len())?,
    ])
}

/// One launch of `entry` over `words` words, with `rows` the scattered or gathered tensor.
#[allow(clippy::too_many_arguments)]
fn launch(
    stream: &Stream,
    entry: &'static str,
    combine: Combine,
    indices: &TensorRef,
    dims: &[i64],
    rows: &TensorRef,
    out: &TensorRef,
    words: u64,
    row_words: u64,
    batch: [u32; 2],
    window: &Window,
) -> Result<()> {
    let mut p = params(entry, combine, indices, dims, rows, out, words, row_words, batch, window)?;
    // 1- and 2-byte elements: the rows and the output are addressed in bytes.
    let narrow = rows.dtype.size() < 4;
    let [idx_mem, rows_mem, out_mem] = operands(stream, indices, rows, out)?;
    // (Moves share one pipeline whatever their dtype.)
    let constants = kind_constants(if combine == Combine::Assign { DType::F32 } else { rows.dtype });
    let device = stream.device();
    let pipeline =
        device.pipelines.get(device, &SHADER, &PipelineSpec { entry, aliases: &[], constants: &constants })?;
    stream.encode(|core, encoder| {
        let (idx_bind, idx_off) = storage_window(core, &idx_mem, 4)?;
        let (rows_bind, rows_off) = storage_window(core, &rows_mem, if narrow { 1 } else { 4 })?;
        let (out_bind, out_off) = storage_window(core, &out_mem, if narrow { 1 } else { 4 })?;
        (p.idx_off, p.upd_off, p.out_off) = (idx_off, rows_off, out_off);
        let mut invocations = words;
        if entry == "gather_narrow" {
            // A window may start and end mid-word: the words it overlaps.
            invocations = (u64::from(out_off % 4) + out.byte_len()).div_ceil(4);
            p.n = shader_len(invocations, entry)?;
        }
        let bindings = [idx_bind, rows_bind, out_bind];
        dispatch(core, encoder, entry, &pipeline, &bindings, bytemuck::bytes_of(&p), invocations)
    })
}

/// The scatter of 8-byte `updates` (the window's tuples) into `out` (its table rows): each batch of
/// tuples resets the heads of the rows it lands on, links the updates of each output row into a
/// chain, then one update per row walks its chain (an assignment writes the head's row). On
/// adapters that cap loops, a batch holds no more tuples than a chain may walk.
#[allow(clippy::too_many_arguments)]
fn launch_chain(
    stream: &Stream,
    shader: &'static Shader,
    combine: Combine,
    indices: &TensorRef,
    dims: &[i64],
    updates: &TensorRef,
    out: &TensorRef,
    batches: [u32; 2],
    window: &Window,
) -> Result<()> {
    let (tuples, row_elements) = (window.tuples, window.columns);
    let mut p = params("scatter chain", combine, indices, dims, updates, out, tuples, row_elements, batches, window)?;
    p.heads = shader_len(window.rows, "scatter chain")?;
    // A word per table row of the window and per tuple: `windows` keeps them within a binding.
    let links_bytes = u64::from(shader_len(window.rows + tuples, "scatter chain")?) * 4;
    let [idx_mem, rows_mem, out_mem] = operands(stream, indices, updates, out)?;
    let constants = kind_constants(updates.dtype);
    let device = stream.device();
    let pipeline =
        |entry| device.pipelines.get(device, shader, &PipelineSpec { entry, aliases: &[], constants: &constants });
    let (reset, link, apply) = (pipeline("chain_reset")?, pipeline("chain_link")?, pipeline("chain_apply")?);
    stream.encode(|core, encoder| {
        // llvmpipe counts two iterations per step of the chain's loop (measured: a chain of
        // 32,768 stopped one short), and a step of a 64-bit division runs divmod_unsigned's
        // 64-step loop besides.
        let step = if combine == Combine::Div { 2 * 66 } else { 2 };
        // (On a GPU too, a batch keeps one invocation's walk bounded, away from watchdogs.)
        let batch = (loop_budget(core, 2 * MAX_DEPTH as u64) / step).clamp(1, MAX_CHAIN_BATCH);
        let (idx_bind, idx_off) = storage_window(core, &idx_mem, 4)?;
        let (rows_bind, rows_off) = storage_window(core, &rows_mem, 8)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, 8)?;
        (p.idx_off, p.upd_off, p.out_off) = (idx_off, rows_off, out_off);
        let links = core.scratch.get(core, "scatter chain links", links_bytes)?;
        let bindings = [idx_bind, rows_bind, out_bind, Binding { buffer: &links, offset: 0, size: links_bytes }];
        for base in (0..tuples).step_by(batch.min(tuples) as usize) {
            let count = batch.min(tuples - base);
            p.tuple_base = base as u32;
            p.n = count as u32;
            // Only the heads this batch lands on: clearing every output row's would cost the table's
            // size (an embedding's rows) per launch rather than the update's.
            dispatch(core, encoder, "chain_reset", &reset, &bindings, bytemuck::bytes_of(&p), count)?;
            dispatch(core, encoder, "chain_link", &link, &bindings, bytemuck::bytes_of(&p), count)?;
            p.n = shader_len(count * row_elements, "scatter chain")?;
            dispatch(core, encoder, "chain_apply", &apply, &bindings, bytemuck::bytes_of(&p), count * row_elements)?;
        }
        Ok(())
    })
}

/// Combines the rows of `updates` into `out`, each into the row that its index tuple in `indices`
/// names within the leading output dims `dims`.
pub(super) fn scatter(
    stream: &Stream,
    combine: Combine,
    indices: &TensorRef,
    dims: &[i64],
    updates: &TensorRef,
    out: &TensorRef,
) -> Result<()> {
    scatter_in_batches(stream, combine, indices, dims, updates, out, [0, 0])
}

/// `scatter`, in `[batch_tuples, batch_rows]` batches: tuple t lands in batch t / batch_tuples,
/// whose output rows start batch_rows after the previous batch's ([0, 0]: one batch).
#[allow(clippy::too_many_arguments)]
fn scatter_in_batches(
    stream: &Stream,
    combine: Combine,
    indices: &TensorRef,
    dims: &[i64],
    updates: &TensorRef,
    out: &TensorRef,
    batch: [u32; 2],
) -> Result<()> {
    let tuples = if dims.is_empty() { 1 } else { indices.num_elements() / dims.len() as u64 };
    if updates.num_elements() == 0 || tuples == 0 || out.num_elements() == 0 {
        return Ok(());
    }
    let windows = |launch| for_each_window(stream, false, indices, dims.len(), updates, out, tuples, launch);
    if updates.dtype.size() < 4 && (combine == Combine::Assign || combines_in_lanes(updates.dtype)) {
        return windows(&mut |w, indices, updates, out| {
            let elements = w.tuples * w.columns;
            launch(stream, "scatter_narrow", combine, indices, dims, updates, out, elements, w.columns, batch, w)
        });
    }
    // 8-byte assignments too: of repeated index tuples, one row wins whole (the word scatter
    // below could mix two rows' words in one element).
    if let Some(shader) = chain_shader(updates.dtype) {
        return windows(&mut |w, indices, updates, out| {
            launch_chain(stream, shader, combine, indices, dims, updates, out, batch, w)
        });
    }
    let per_element = words_per_element(updates.dtype, combine, "scatter")?;
    windows(&mut |w, indices, updates, out| {
        let (words, row_words) = (w.tuples * w.columns * per_element, w.columns * per_element);
        launch(stream, "scatter", combine, indices, dims, updates, out, words, row_words, batch, w)
    })
}

/// Fills `out` with the rows of `params` that the index tuples in `indices` name within its leading
/// dims `dims`, zeros for tuples outside them.
pub(super) fn gather(
    stream: &Stream,
    params: &TensorRef,
    indices: &TensorRef,
    dims: &[i64],
    out: &TensorRef,
) -> Result<()> {
    if out.num_elements() == 0 {
        return Ok(());
    }
    let row_elements = params.shape[dims.len()..].iter().product::<i64>() as u64;
    let tuples = out.num_elements() / row_elements;
    let windows = |launch| for_each_window(stream, true, indices, dims.len(), params, out, tuples, launch);
    if params.dtype.size() < 4 {
        return windows(&mut |w, indices, params, out| {
            // (`launch` counts the words the output overlaps.)
            let assign = Combine::Assign;
            launch(stream, "gather_narrow", assign, indices, dims, params, out, 0, w.columns, [0, 0], w)
        });
    }
    let per_element = words_per_element(params.dtype, Combine::Assign, "gather")?;
    windows(&mut |w, indices, params, out| {
        let (words, row_words) = (w.tuples * w.columns * per_element, w.columns * per_element);
        launch(stream, "gather", Combine::Assign, indices, dims, params, out, words, row_words, [0, 0], w)
    })
}

/// The bytes of the value an empty segment holds: 0 for a sum, 1 for a product, the type's
/// greatest value for Min and its lowest for Max. (A float16 or bfloat16 node, `declared`, runs
/// here in float32: its own type's extremes, which round exactly, not float32's, which would
/// round to infinity.)
fn segment_identity(combine: Combine, dtype: DType, declared: DType) -> Vec<u8> {
    let float_greatest = match declared {
        DType::F16 => 65504.0,
        DType::BF16 => f32::from_bits(0x7f7f_0000),
        _ => f32::MAX,
    };
    let greatest = combine == Combine::Min;
    match (combine, dtype) {
        (Combine::Add, _) => vec![0; dtype.size() as usize],
        (Combine::Mul, DType::F32) => 1f32.to_le_bytes().to_vec(),
        (Combine::Mul, DType::F64) => 1f64.to_le_bytes().to_vec(),
        (_, DType::F64) => (if greatest { f64::MAX } else { f64::MIN }).to_le_bytes().to_vec(),
        (Combine::Mul, _) => {
            let mut one = vec![0; dtype.size() as usize];
            one[0] = 1;
            one
        }
        (_, DType::F32) => (if greatest { float_greatest } else { -float_greatest }).to_le_bytes().to_vec(),
        (_, DType::I8) => (if greatest { i8::MAX } else { i8::MIN }).to_le_bytes().to_vec(),
        (_, DType::I16) => (if greatest { i16::MAX } else { i16::MIN }).to_le_bytes().to_vec(),
        (_, DType::I32) => (if greatest { i32::MAX } else { i32::MIN }).to_le_bytes().to_vec(),
        (_, DType::I64) => (if greatest { i64::MAX } else { i64::MIN }).to_le_bytes().to_vec(),
        // The unsigned types: all ones, or zero.
        _ => vec![if greatest { 0xff } else { 0 }; dtype.size() as usize],
    }
}

/// Fills `out` with copies of one element, `bytes`: a word pattern where the element repeats
/// within a word, else the element uploaded once and spread.
fn fill_element(ctx: &mut dyn KernelContext, out: &TensorRef, bytes: &[u8]) -> Result<()> {
    if bytes.len() <= 4 {
        let word: Vec<u8> = bytes.iter().copied().cycle().take(4).collect();
        let pattern = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        return ctx.stream()?.fill(out.address, out.byte_len(), pattern);
    }
    let one = ctx.allocate_temp(out.dtype, &[])?;
    let stream = ctx.stream()?;
    stream.memcpy_htod(one.address, bytes)?;
    let spread: Vec<DimMap> = out.shape.iter().map(|&d| DimMap::spread(d)).collect();
    index::map(stream, &one, out, &spread, None)
}

/// UnsortedSegmentSum, Prod, Min and Max: `data` rows combined into `num_segments` rows by
/// `segment_ids`; empty segments hold the combine's identity (Min: the type's greatest value, Max: the
/// lowest, as TF). Negative and too large ids are dropped.
pub fn unsorted_segment_reduce(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let data = ctx.input(0)?;
    let combine = match kernel.def.op {
        "UnsortedSegmentSum" => Combine::Add,
        "UnsortedSegmentProd" => Combine::Mul,
        "UnsortedSegmentMin" => Combine::Min,
        "UnsortedSegmentMax" => Combine::Max,
        op => return Err(Error::internal(format!("{op} is not a segment reduction"))),
    };
    let identity = segment_identity(combine, data.dtype, ctx.expected_output_dtype(0)?);
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
    fill_element(ctx, &out, &identity)?;
    let stream = ctx.stream()?;
    // Each id is a depth-1 tuple; with scalar ids the whole of `data` is one row.
    scatter(stream, combine, &ids, &[segments], &data, &out)
}

/// Bincount(arr, size, weights) and DenseBincount(input, size, weights; binary_output): the weight
/// (1 where `weights` is empty) of each value summed into its bin, or with `binary_output` 1 for
/// each bin a value falls in; a matrix input counts each row into its own row of bins. Values
/// outside [0, size) are dropped, as TF-GPU's kernels drop them (TF-CPU refuses negative ones).
pub fn bincount(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let values = ctx.input(0)?;
    let (size, size_shape) = ctx.host_input_values(1)?;
    if !size_shape.is_empty() {
        return Err(Error::invalid_argument(format!("Shape must be rank 0 but is rank {}", size_shape.len())));
    }
    let size = size[0];
    if size < 0 {
        return Err(Error::invalid_argument(format!("size ({size}) must be non-negative")));
    }
    let weights = ctx.input(2)?;
    let dtype = kernel.dtype("T")?;
    let dense = kernel.def.op == "DenseBincount";
    let binary = dense && kernel.attrs.bool("binary_output")?;
    if dense && values.shape.len() > 2 {
        return Err(Error::invalid_argument(format!(
            "Shape must be at most rank 2 but is rank {}",
            values.shape.len()
        )));
    }
    if weights.num_elements() > 0 {
        let same = if dense { weights.shape == values.shape } else { weights.num_elements() == values.num_elements() };
        if !same {
            return Err(Error::invalid_argument(if dense {
                format!(
                    "`weights` must be the same shape as `arr` or a length-0 `Tensor`, in which case it acts as all \
                     weights equal to 1. Received {}",
                    validate::shape_string(&weights.shape)
                )
            } else {
                "Input indices and weights must have the same size.".to_string()
            }));
        }
    }
    // A matrix counts row by row: batches of one row's values into one row of bins.
    let (rows, shape) = match (dense, values.shape.as_slice()) {
        (true, &[rows, _]) => (rows, vec![rows, size]),
        _ => (1, vec![size]),
    };
    let out = ctx.allocate_output(0, dtype, &shape)?;
    let stream = ctx.stream()?;
    stream.fill(out.address, out.byte_len(), 0)?;
    if out.num_elements() == 0 || values.num_elements() == 0 {
        return Ok(());
    }
    let updates = if weights.num_elements() == 0 || binary {
        let ones = ctx.allocate_temp(dtype, &values.shape)?;
        let one = if dtype == DType::F32 { 1f32.to_bits() } else { 1 };
        ctx.stream()?.fill(ones.address, ones.byte_len(), one)?;
        ones
    } else {
        weights
    };
    let combine = if binary { Combine::Max } else { Combine::Add };
    let per_row = (values.num_elements() / rows as u64) as u32;
    let batch = if rows > 1 { [per_row, shader_len(size as u64, "Bincount")?] } else { [0, 0] };
    scatter_in_batches(ctx.stream()?, combine, &values, &[size], &updates, &out, batch)
}

/// SegmentSum, SegmentProd, SegmentMax, SegmentMin and SegmentMean over sorted `segment_ids`:
/// one output row per id up to the last one, which is read back for the output's shape (as TF-GPU
/// does; like it, the ids are not checked for order, and negative ones are dropped). Empty segments
/// hold 0 (1 for a product), the counts of a mean's rows divide its sums.
pub fn segment_reduce(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let (combine, identity) = match kernel.def.op {
        "SegmentSum" | "SegmentMean" => (Combine::Add, 0.0),
        "SegmentProd" => (Combine::Mul, 1.0),
        "SegmentMin" => (Combine::Min, f64::INFINITY),
        "SegmentMax" => (Combine::Max, f64::NEG_INFINITY),
        op => return Err(Error::internal(format!("{op} is not a segment reduction"))),
    };
    let data = ctx.input(0)?;
    // float32 or float64 bytes of a value.
    let float = |value: f64| match data.dtype {
        DType::F64 => value.to_le_bytes().to_vec(),
        _ => (value as f32).to_le_bytes().to_vec(),
    };
    let ids = ctx.input(1)?;
    if ids.shape.len() != 1 {
        return Err(Error::invalid_argument("segment_ids should be a vector."));
    }
    if data.shape.first() != Some(&ids.shape[0]) {
        return Err(Error::invalid_argument("segment_ids should be the same size as dimension 0 of input."));
    }
    let count = ids.shape[0];
    let rows = if count == 0 {
        0
    } else {
        let size = ids.dtype.size();
        let last = ctx.stream()?.read_now(ids.address + (count as u64 - 1) * size, size)?;
        let last = match ids.dtype {
            DType::I32 => i64::from(i32::from_ne_bytes(last[..4].try_into().unwrap_or_default())),
            _ => i64::from_ne_bytes(last[..8].try_into().unwrap_or_default()),
        };
        let rows = last.wrapping_add(1);
        if rows <= 0 {
            return Err(Error::invalid_argument("segment ids must be >= 0"));
        }
        rows
    };
    let mut shape = vec![rows];
    shape.extend_from_slice(&data.shape[1..]);
    validate::num_elements(&shape)?;
    let out = ctx.allocate_output(0, data.dtype, &shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let needs_counts = matches!(kernel.def.op, "SegmentMean" | "SegmentMax" | "SegmentMin");
    let counts = if needs_counts {
        let ones = ctx.allocate_temp(data.dtype, &[count])?;
        let counts = ctx.allocate_temp(data.dtype, &[rows])?;
        fill_element(ctx, &ones, &float(1.0))?;
        let stream = ctx.stream()?;
        stream.fill(counts.address, counts.byte_len(), 0)?;
        scatter(stream, Combine::Add, &ids, &[rows], &ones, &counts)?;
        Some(counts)
    } else {
        None
    };
    fill_element(ctx, &out, &float(identity))?;
    let stream = ctx.stream()?;
    scatter(stream, combine, &ids, &[rows], &data, &out)?;
    if let Some(mut counts) = counts {
        use super::binary::{launch, BinaryOp};
        // The counts along the rows of the output, broadcast over each row.
        let flat = counts.clone();
        counts.shape.extend(std::iter::repeat_n(1, shape.len() - 1));
        if kernel.def.op == "SegmentMean" {
            launch(stream, BinaryOp::DivNoNan, &out, &counts, &out)?;
        } else {
            // 1 for rows with members, 0 for empty ones: their extremes become 0 (x / 1 is x).
            launch(stream, BinaryOp::DivNoNan, &flat, &flat, &flat)?;
            launch(stream, BinaryOp::DivNoNan, &out, &counts, &out)?;
        }
    }
    Ok(())
}

/// Checks ScatterNd-style operands: `indices` [..., K], `updates` = indices[:-1] + shape[K:].
pub(super) fn check_scatter_nd(indices: &TensorRef, updates: &TensorRef, shape: &[i64]) -> Result<usize> {
    let depth = *indices.shape.last().ok_or_else(|| Error::invalid_argument("indices must be at least 1-D"))?;
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

/// The `bad_indices_policy` of newer TFs: "" and "DEFAULT" (TF-GPU's answer: drop them, gather
/// zeros) and "IGNORE" run; "ERROR" would need the indices read back before the launch.
pub(super) fn check_bad_indices_policy(kernel: &KernelInstance) -> Result<()> {
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
    scatter(stream, Combine::Add, &indices, &shape[..depth], &updates, &out)
}

/// TensorScatterAdd, Sub, Min, Max and Update: `tensor` with `updates` combined in at `indices`;
/// ScatterNdNonAliasingAdd (`input` for `tensor`) adds as TensorScatterAdd.
pub fn tensor_scatter(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    check_bad_indices_policy(kernel)?;
    let mut combine =
        Combine::of_op(kernel.def.op).ok_or_else(|| Error::internal(format!("{} is not a scatter", kernel.def.op)))?;
    if combine == Combine::Assign && kernel.attrs.str(COMBINE_ATTR).unwrap_or("") == "Div" {
        combine = Combine::Div;
    }
    let tensor = ctx.input(0)?;
    let indices = ctx.input(1)?;
    let updates = ctx.input(2)?;
    let depth = check_scatter_nd(&indices, &updates, &tensor.shape)?;
    let out = ctx.allocate_output(0, tensor.dtype, &tensor.shape)?;
    let stream = ctx.stream()?;
    if out.num_elements() > 0 {
        stream.memcpy_dtod(out.address, tensor.address, tensor.byte_len())?;
    }
    scatter(stream, combine, &indices, &tensor.shape[..depth], &updates, &out)
}

/// The output shape of GatherNd(params, indices), checked: indices[:-1] + params[K:].
pub(super) fn gather_nd_shape(params: &TensorRef, indices: &TensorRef) -> Result<(usize, Vec<i64>)> {
    if params.shape.is_empty() {
        return Err(Error::invalid_argument("params must be at least a vector"));
    }
    let depth = *indices.shape.last().ok_or_else(|| Error::invalid_argument("indices must be at least a vector"))?;
    if depth as usize > params.shape.len() {
        return Err(Error::invalid_argument(format!(
            "index innermost dimension length must be <= params rank; saw: {depth} vs. {}",
            params.shape.len()
        )));
    }
    if !(0..MAX_DEPTH as i64).contains(&depth) {
        return Err(Error::invalid_argument(format!(
            "Only indices.shape[-1] values between 0 and 7 are currently supported.  Requested rank: {depth}"
        )));
    }
    let depth = depth as usize;
    let mut shape = indices.shape[..indices.shape.len() - 1].to_vec();
    shape.extend_from_slice(&params.shape[depth..]);
    let tuples = validate::num_elements(&indices.shape[..indices.shape.len() - 1])?;
    if params.num_elements() == 0 && tuples > 0 {
        return Err(Error::invalid_argument(format!(
            "Requested more than 0 entries, but params is empty.  Params shape: {:?}",
            params.shape
        )));
    }
    Ok((depth, shape))
}

/// GatherNd: the slices of `params` that the index tuples in `indices` name.
pub fn gather_nd(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    check_bad_indices_policy(kernel)?;
    let params = ctx.input(0)?;
    let indices = ctx.input(1)?;
    let (depth, shape) = gather_nd_shape(&params, &indices)?;
    let out = ctx.allocate_output(0, params.dtype, &shape)?;
    gather(ctx.stream()?, &params, &indices, &params.shape[..depth], &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (tuple, table row, column) in exactly one window, each window's share within the limit.
    fn check_cover(limit: u64, tuples: u64, table_rows: u64, columns: u64, elem_bytes: u64, index_bytes: u64) {
        let found = windows(limit, tuples, table_rows, columns, elem_bytes, index_bytes);
        let mut seen = vec![0u32; (tuples * table_rows * columns) as usize];
        for w in &found {
            let row_bytes = w.columns * elem_bytes;
            assert!(w.rows * row_bytes <= limit && w.tuples * row_bytes <= limit, "{w:?}");
            assert!(w.tuples * index_bytes <= limit, "{w:?}");
            // The chains' links, for the 8-byte elements.
            assert!(elem_bytes < 8 || (w.rows + w.tuples) * 4 <= limit, "{w:?}");
            assert!(w.rows == 1 && w.tuples == 1 || w.columns == columns, "{w:?} is not contiguous");
            let ends = [w.first_tuple + w.tuples, w.first_row + w.rows, w.first_column + w.columns];
            assert!(ends[0] <= tuples && ends[1] <= table_rows && ends[2] <= columns, "{w:?} runs past the work");
            for t in w.first_tuple..w.first_tuple + w.tuples {
                for r in w.first_row..w.first_row + w.rows {
                    for c in w.first_column..w.first_column + w.columns {
                        seen[((t * table_rows + r) * columns + c) as usize] += 1;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{limit} {tuples} {table_rows} {columns} {elem_bytes}: {found:?}");
    }

    #[test]
    fn windows_cover_each_pairing_once_within_the_limit() {
        check_cover(1 << 20, 7, 9, 5, 4, 8);
        for elem_bytes in [1, 2, 4, 8] {
            // Ranges of tuples against ranges of rows.
            check_cover(256, 40, 33, 3, elem_bytes, 8);
            // Indices larger than the rows.
            check_cover(256, 50, 10, 1, elem_bytes, 28);
            // Rows larger than the limit: ranges of columns.
            check_cover(64, 3, 2, 70, elem_bytes, 4);
        }
    }

    #[test]
    fn work_that_fits_is_one_window() {
        let one = windows(1 << 20, 300, 1000, 64, 4, 4);
        assert_eq!(
            one,
            vec![Window { first_tuple: 0, tuples: 300, first_row: 0, rows: 1000, first_column: 0, columns: 64 }]
        );
    }
}
