//! Unique, UniqueWithCounts and ListDiff (`wgsl/unique.wgsl`), whose outputs' sizes depend on the
//! input's values. An open-addressing hash table of element indices, built on the device with
//! atomics, finds each element's first occurrence (Unique) or whether it is in `y` (ListDiff); the
//! selected elements are then counted per chunk, scanned and written as compact.rs writes Where's.
//! The host reads back only the number of results it needs to allocate the outputs (TF-GPU computes
//! Unique on the device too).
//!
//! Equality is TF-CPU's: bits, but float32 and float64 zeros of either sign and subnormals are one
//! value (TF-CPU runs with denormals as zero; the first seen is kept), and NaN equals nothing
//! (every NaN is its own unique value, and is never in `y`). float16 and bfloat16 compare bits, as
//! TF-CPU's hash maps of them do.
//!
//! Past a binding: the hash table's probes read `x` at any element, so an `x`, `y` or `idx` larger
//! than one storage binding (`binding_limit`, 128 MiB on lavapipe) is read back and hashed on the
//! host with the same equality, and the results written back (`unique_on_host`,
//! `list_diff_on_host`). A hash table larger than one binding is split into parts by the hash's top
//! bits, one launch each.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{check_loop_iterations, dispatch, storage_window, PipelineSpec, Shader};
use crate::runtime::{DeviceCore, Stream};

use super::windows::binding_limit;
use super::{kernel, leak, shader_len, DType, KernelContext, KernelDef, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "unique",
    source: concat!(include_str!("../../wgsl/unique.wgsl"), include_str!("../../wgsl/chunk_scan.wgsl")),
    storage_buffers: 8,
    uniform_buffers: 0,
    textures: 0,
};

/// Elements per workgroup of the counting passes (`CHUNK` in the shader).
const CHUNK: u64 = 1024;
const WORKGROUP: u64 = 256;
/// An empty table slot.
const EMPTY: u32 = u32::MAX;
/// Hash seeds to try before giving up on probes longer than the loop limit (with the table at
/// most half full, one is all it takes).
const ATTEMPTS: u32 = 4;

/// The element types served, each with int32 and int64 `out_idx`.
const TYPES: [DType; 13] = [
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
    DType::Bool,
];

pub fn register(table: &mut Vec<KernelDef>) {
    for dtype in TYPES {
        for index in [DType::I32, DType::I64] {
            let constraints = leak(vec![("T", dtype), ("out_idx", index)]);
            table.push(kernel("Unique", constraints, &[], &[], unique));
            table.push(kernel("UniqueWithCounts", constraints, &[], &[], unique));
            // TF-CPU, the reference, has no bool ListDiff (nor has TF-GPU any ListDiff).
            if dtype != DType::Bool {
                table.push(kernel("ListDiff", constraints, &[], &[], list_diff));
            }
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    src_byte: u32,
    keys_byte: u32,
    elem_bytes: u32,
    kind: u32,
    seed: u32,
    table_off: u32,
    table_mask: u32,
    parts: u32,
    part: u32,
    part_shift: u32,
    probe_limit: u32,
    record: u32,
    mode: u32,
    chunks: u32,
    idx_wide: u32,
    with_count: u32,
    slots_off: u32,
    counts_off: u32,
    out_off: u32,
    idx_off: u32,
    count_off: u32,
    _pad: [u32; 2],
}

/// How the shader compares elements of `dtype` (`kind` in the shader).
fn kind_of(dtype: DType) -> u32 {
    match dtype {
        DType::F16 => 1,
        DType::BF16 => 2,
        DType::F32 => 3,
        DType::F64 => 4,
        _ => 0,
    }
}

/// A byte range a launch binds.
#[derive(Clone, Copy)]
struct Region {
    address: u64,
    len: u64,
}

impl Region {
    fn of(t: &TensorRef) -> Region {
        Region { address: t.address, len: t.byte_len().max(1) }
    }
}

/// The bindings of one launch, in the shader's order.
#[derive(Clone, Copy)]
struct Binds {
    src: Region,
    keys: Region,
    table: Region,
    slots: Region,
    counts: Region,
    out: Region,
    idx: Region,
    count: Region,
}

/// Encodes `entry` over `invocations`, with each binding's offset filled into `params`.
fn launch(stream: &Stream, entry: &'static str, mut params: Params, binds: Binds, invocations: u64) -> Result<()> {
    let device = stream.device();
    let pipeline = device.pipelines.get(device, &SHADER, &PipelineSpec { entry, ..Default::default() })?;
    let regions = [binds.src, binds.keys, binds.table, binds.slots, binds.counts, binds.out, binds.idx, binds.count];
    let slices = regions.iter().map(|r| device.memory.resolve(r.address, r.len)).collect::<Result<Vec<_>>>()?;
    stream.encode(|core, encoder| {
        let mut bindings = Vec::with_capacity(slices.len());
        let mut offsets = [0u32; 8];
        for (k, slice) in slices.iter().enumerate() {
            // The elements by bytes (they may be under a word), the rest by words.
            let (binding, offset) = storage_window(core, slice, if k < 2 { 1 } else { 4 })?;
            bindings.push(binding);
            offsets[k] = offset;
        }
        [params.src_byte, params.keys_byte, params.table_off, params.slots_off, params.counts_off] =
            [offsets[0], offsets[1], offsets[2], offsets[3], offsets[4]];
        [params.out_off, params.idx_off, params.count_off] = [offsets[5], offsets[6], offsets[7]];
        dispatch(core, encoder, entry, &pipeline, &bindings, bytemuck::bytes_of(&params), invocations)
    })
}

/// Whether every tensor of `bytes` fits one storage binding.
fn all_fit(core: &DeviceCore, bytes: &[u64]) -> bool {
    let limit = binding_limit(core);
    bytes.iter().all(|&b| b <= limit)
}

/// An element's identity under TF-CPU's equality (see the module's notes): its bits, with float
/// zeros and subnormals one value; None for a NaN, equal to nothing.
fn host_key(bytes: &[u8], dtype: DType) -> Option<u64> {
    let mut word = [0u8; 8];
    word[..bytes.len()].copy_from_slice(bytes);
    let bits = u64::from_le_bytes(word);
    // (exponent bits, mantissa bits, whether zeros and subnormals merge): the shader's `is_nan`
    // and `key_of`.
    let (exponent, mantissa, merge_zeros) = match dtype {
        DType::F16 => (0x7c00, 0x03ff, false),
        DType::BF16 => (0x7f80, 0x007f, false),
        DType::F32 => (0x7f80_0000, 0x007f_ffff, true),
        DType::F64 => (0x7ff0_0000_0000_0000, 0x000f_ffff_ffff_ffff, true),
        _ => return Some(bits),
    };
    match bits & exponent {
        0 if merge_zeros => Some(0),
        e if e == exponent && bits & mantissa != 0 => None,
        _ => Some(bits),
    }
}

/// Index values as `dtype` (int32 or int64) bytes.
fn index_bytes(values: &[u64], dtype: DType) -> Vec<u8> {
    if dtype == DType::I64 {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    } else {
        values.iter().flat_map(|&v| (v as u32).to_le_bytes()).collect()
    }
}

/// Unique and UniqueWithCounts of an `x` past a binding, on the host.
fn unique_on_host(ctx: &mut dyn KernelContext, x: &TensorRef, index: DType, with_count: bool) -> Result<()> {
    let size = x.dtype.size() as usize;
    let bytes = ctx.stream()?.read_now(x.address, x.byte_len())?;
    let mut first_of: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    let (mut y, mut idx, mut counts) = (Vec::new(), Vec::with_capacity(x.num_elements() as usize), Vec::new());
    for element in bytes.chunks_exact(size) {
        let slot = match host_key(element, x.dtype) {
            Some(key) => *first_of.entry(key).or_insert_with(|| {
                y.extend_from_slice(element);
                counts.push(0);
                counts.len() as u64 - 1
            }),
            None => {
                y.extend_from_slice(element);
                counts.push(0);
                counts.len() as u64 - 1
            }
        };
        counts[slot as usize] += 1;
        idx.push(slot);
    }
    let total = counts.len() as i64;
    let out = ctx.allocate_output(0, x.dtype, &[total])?;
    let positions = ctx.allocate_output(1, index, &[idx.len() as i64])?;
    let count = if with_count { Some(ctx.allocate_output(2, index, &[total])?) } else { None };
    let stream = ctx.stream()?;
    stream.memcpy_htod(out.address, &y)?;
    stream.memcpy_htod(positions.address, &index_bytes(&idx, index))?;
    if let Some(count) = count {
        stream.memcpy_htod(count.address, &index_bytes(&counts, index))?;
    }
    Ok(())
}

/// ListDiff of an `x` or `y` past a binding, on the host.
fn list_diff_on_host(ctx: &mut dyn KernelContext, x: &TensorRef, y: &TensorRef, index: DType) -> Result<()> {
    let size = x.dtype.size() as usize;
    let stream = ctx.stream()?;
    let xs = stream.read_now(x.address, x.byte_len())?;
    let ys = if y.num_elements() > 0 { stream.read_now(y.address, y.byte_len())? } else { Vec::new() };
    let in_y: std::collections::HashSet<u64> = ys.chunks_exact(size).filter_map(|e| host_key(e, y.dtype)).collect();
    let (mut out, mut idx) = (Vec::new(), Vec::new());
    for (i, element) in xs.chunks_exact(size).enumerate() {
        if !host_key(element, x.dtype).is_some_and(|key| in_y.contains(&key)) {
            out.extend_from_slice(element);
            idx.push(i as u64);
        }
    }
    let kept = ctx.allocate_output(0, x.dtype, &[idx.len() as i64])?;
    let positions = ctx.allocate_output(1, index, &[idx.len() as i64])?;
    let stream = ctx.stream()?;
    stream.memcpy_htod(kept.address, &out)?;
    stream.memcpy_htod(positions.address, &index_bytes(&idx, index))
}

/// The hash table for `len` elements of `dtype`: at least twice as many slots as distinct values
/// (so at most half full), in parts of at most one binding each.
struct Table {
    parts: Vec<TensorRef>,
    part_slots: u64,
    probe_limit: u32,
}

impl Table {
    fn new(ctx: &mut dyn KernelContext, dtype: DType, len: u64) -> Result<Table> {
        let core: &DeviceCore = ctx.stream()?.device();
        // Types under a word have few values, whatever the length.
        let distinct = match dtype.size() {
            1 => len.min(1 << 8),
            2 => len.min(1 << 16),
            _ => len,
        };
        let slots = (2 * distinct).next_power_of_two().max(4);
        let largest = 1u64 << (63 - (binding_limit(core) / 4).leading_zeros());
        let part_slots = slots.min(largest);
        let probe_limit = part_slots.min(core.max_loop_iterations).min(u64::from(u32::MAX)) as u32;
        let count = slots / part_slots;
        let parts = (0..count).map(|_| ctx.allocate_temp(DType::U32, &[part_slots as i64])).collect::<Result<_>>()?;
        Ok(Table { parts, part_slots, probe_limit })
    }

    /// The shader's parameters for attempt `attempt` (its hash seed).
    fn params(&self, dtype: DType, attempt: u32, chunks: u64, index: DType) -> Params {
        let parts = self.parts.len() as u32;
        Params {
            elem_bytes: dtype.size() as u32,
            kind: kind_of(dtype),
            seed: attempt.wrapping_mul(0x9e37_79b9) ^ 0x5bd1_e995,
            table_mask: (self.part_slots - 1) as u32,
            parts,
            part_shift: 32 - parts.trailing_zeros(),
            probe_limit: self.probe_limit,
            chunks: chunks as u32,
            idx_wide: u32::from(index == DType::I64),
            ..Params::default()
        }
    }

    fn region(&self, part: usize) -> Region {
        Region::of(&self.parts[part])
    }

    /// Empties every part.
    fn clear(&self, stream: &Stream) -> Result<()> {
        for part in &self.parts {
            stream.fill(part.address, part.byte_len(), EMPTY)?;
        }
        Ok(())
    }
}

/// Counts and scans the selected elements of `binds.src` (`slots[i] == i`); returns their number,
/// or None where a probe ran past the loop limit (the flag after the total).
fn count_selected(stream: &Stream, params: Params, binds: Binds, counts: &TensorRef) -> Result<Option<u64>> {
    let chunks = u64::from(params.chunks);
    launch(stream, "count_chunks", params, binds, chunks * WORKGROUP)?;
    launch(stream, "scan_counts", params, binds, WORKGROUP)?;
    let read = stream.read_now(counts.address + chunks * 4, 8)?;
    let word = |k: usize| u32::from_ne_bytes([read[k], read[k + 1], read[k + 2], read[k + 3]]);
    Ok((word(4) == 0).then_some(u64::from(word(0))))
}

/// A pass's scratch: the hash table for `keys_len` keys, a slot per each of the `n` source
/// elements, the per-chunk counts, and the bindings (`src` the elements placed, `keys` those the
/// table holds; the outputs, bound later, stand in as the counts until then).
struct Scratch {
    table: Table,
    chunks: u64,
    counts: TensorRef,
    binds: Binds,
}

impl Scratch {
    fn new(
        ctx: &mut dyn KernelContext,
        dtype: DType,
        n: u64,
        keys_len: u64,
        src: Region,
        keys: Region,
    ) -> Result<Scratch> {
        let table = Table::new(ctx, dtype, keys_len)?;
        let slots = Region::of(&ctx.allocate_temp(DType::U32, &[n as i64])?);
        let chunks = n.div_ceil(CHUNK);
        let counts = ctx.allocate_temp(DType::U32, &[chunks as i64 + 2])?;
        let c = Region::of(&counts);
        let binds = Binds { src, keys, table: table.region(0), slots, counts: c, out: c, idx: c, count: c };
        Ok(Scratch { table, chunks, counts, binds })
    }
}

fn no_probe_fits(op: &str, table: &Table) -> Error {
    Error::internal(format!(
        "{op}: hash probes ran past {} slots with {ATTEMPTS} seeds (the table is at most half full)",
        table.probe_limit
    ))
}

/// Unique(x) -> y, idx and UniqueWithCounts(x) -> y, idx, count.
pub fn unique(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = kernel.def.op;
    let input = ctx.input(0)?;
    if input.shape.len() != 1 {
        return Err(Error::invalid_argument("unique expects a 1D vector."));
    }
    let index = kernel.dtype("out_idx")?;
    let with_count = op == "UniqueWithCounts";
    let n = input.num_elements();
    if n == 0 {
        ctx.allocate_output(0, input.dtype, &[0])?;
        ctx.allocate_output(1, index, &[0])?;
        if with_count {
            ctx.allocate_output(2, index, &[0])?;
        }
        return Ok(());
    }
    let n32 = shader_len(n, op)?;
    {
        let core: &DeviceCore = ctx.stream()?.device();
        if !all_fit(core, &[input.byte_len(), n * index.size(), 4 * n]) {
            return unique_on_host(ctx, &input, index, with_count);
        }
        check_loop_iterations(core, n.div_ceil(CHUNK).div_ceil(WORKGROUP), op)?;
    }
    let x = Region::of(&input);
    let Scratch { table, chunks, counts, mut binds } = Scratch::new(ctx, input.dtype, n, n, x, x)?;
    let mut found = None;
    for attempt in 0..ATTEMPTS {
        let stream = ctx.stream()?;
        let params = Params { n: n32, record: 1, ..table.params(input.dtype, attempt, chunks, index) };
        table.clear(stream)?;
        stream.fill(counts.address, counts.byte_len(), 0)?;
        for entry in ["insert", "resolve"] {
            for part in 0..table.parts.len() {
                let binds = Binds { table: table.region(part), ..binds };
                launch(stream, entry, Params { part: part as u32, ..params }, binds, n)?;
            }
        }
        found = count_selected(stream, params, binds, &counts)?;
        if found.is_some() {
            break;
        }
    }
    let total = found.ok_or_else(|| no_probe_fits(op, &table))?;
    let y = ctx.allocate_output(0, input.dtype, &[total as i64])?;
    let idx = ctx.allocate_output(1, index, &[n as i64])?;
    let count = if with_count { Some(ctx.allocate_output(2, index, &[total as i64])?) } else { None };
    let stream = ctx.stream()?;
    if input.dtype.size() < 4 {
        // Or-ed into by the shader.
        stream.fill(y.address, y.byte_len().div_ceil(4) * 4, 0)?;
    }
    binds.out = Region::of(&y);
    binds.idx = Region::of(&idx);
    if let Some(count) = &count {
        stream.fill(count.address, count.byte_len(), 0)?;
        binds.count = Region::of(count);
    }
    let params = Params { n: n32, with_count: u32::from(with_count), ..table.params(input.dtype, 0, chunks, index) };
    launch(stream, "write_selected", params, binds, chunks * WORKGROUP)?;
    launch(stream, "write_rest", params, binds, n)
}

/// ListDiff(x, y) -> out, idx: the elements of x not in y, in order, and their positions in x.
pub fn list_diff(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let op = kernel.def.op;
    let x = ctx.input(0)?;
    let y = ctx.input(1)?;
    if x.shape.len() != 1 {
        return Err(Error::invalid_argument("x should be a 1D vector."));
    }
    if y.shape.len() != 1 {
        return Err(Error::invalid_argument("y should be a 1D vector."));
    }
    let index = kernel.dtype("out_idx")?;
    let (nx, ny) = (x.num_elements(), y.num_elements());
    if nx == 0 {
        ctx.allocate_output(0, x.dtype, &[0])?;
        ctx.allocate_output(1, index, &[0])?;
        return Ok(());
    }
    let (nx32, ny32) = (shader_len(nx, op)?, shader_len(ny, op)?);
    {
        let core: &DeviceCore = ctx.stream()?.device();
        if !all_fit(core, &[x.byte_len(), y.byte_len(), nx * index.size(), 4 * nx]) {
            return list_diff_on_host(ctx, &x, &y, index);
        }
        check_loop_iterations(core, nx.div_ceil(CHUNK).div_ceil(WORKGROUP), op)?;
    }
    let xr = Region::of(&x);
    // An empty y is never read (its table stays empty).
    let yr = if ny > 0 { Region::of(&y) } else { xr };
    let Scratch { table, chunks, counts, mut binds } = Scratch::new(ctx, x.dtype, nx, ny, xr, yr)?;
    let mut found = None;
    for attempt in 0..ATTEMPTS {
        let stream = ctx.stream()?;
        let params = Params { n: nx32, mode: 1, ..table.params(x.dtype, attempt, chunks, index) };
        table.clear(stream)?;
        stream.fill(counts.address, counts.byte_len(), 0)?;
        for part in 0..table.parts.len() {
            let binds = Binds { table: table.region(part), ..binds };
            let params = Params { part: part as u32, ..params };
            if ny > 0 {
                launch(stream, "insert", Params { n: ny32, ..params }, Binds { src: yr, ..binds }, ny)?;
            }
            launch(stream, "lookup", params, binds, nx)?;
        }
        found = count_selected(stream, params, binds, &counts)?;
        if found.is_some() {
            break;
        }
    }
    let total = found.ok_or_else(|| no_probe_fits(op, &table))?;
    let out = ctx.allocate_output(0, x.dtype, &[total as i64])?;
    let idx = ctx.allocate_output(1, index, &[total as i64])?;
    if total == 0 {
        return Ok(());
    }
    let stream = ctx.stream()?;
    if x.dtype.size() < 4 {
        stream.fill(out.address, out.byte_len().div_ceil(4) * 4, 0)?;
    }
    binds.out = Region::of(&out);
    binds.idx = Region::of(&idx);
    let params = Params { n: nx32, mode: 1, ..table.params(x.dtype, 0, chunks, index) };
    launch(stream, "write_selected", params, binds, chunks * WORKGROUP)
}
