//! Device memory: one wgpu buffer per TensorFlow allocation, placed in a per-device virtual address
//! space so that any address inside an allocation maps back to (buffer, offset). Freed buffers go to
//! a pool by size class and serve later allocations of that class (`buffer_pool`).
//!
//! TensorFlow does pointer arithmetic on `SP_DeviceMemoryBase.opaque` (slices, sub-buffers) and does
//! not keep `payload`, so the address itself must identify the buffer. Addresses are never
//! dereferenced by the host; a 256-byte guard gap after every allocation keeps an end pointer
//! (`base + size`) from naming the next allocation.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

use super::buffer_pool::{size_class, BufferPool};
use super::device::DeviceCore;

/// Environment variable: the device memory budget in MiB (wgpu cannot query the real VRAM size).
pub const ENV_MEMORY_LIMIT_MB: &str = "TF_WGPU_MEMORY_LIMIT_MB";
/// Environment variable: `bfc` or `pool`, the allocator TF's tensors come from (`AllocatorKind`).
pub const ENV_ALLOCATOR: &str = "TF_WGPU_ALLOCATOR";

/// Who hands out tensor memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocatorKind {
    /// TF's BFC allocator carves tensors out of regions it allocates from this map.
    Bfc,
    /// Each tensor is a buffer of this map, freed buffers pooled by size class.
    Pool,
}

impl AllocatorKind {
    pub fn from_env() -> AllocatorKind {
        match std::env::var(ENV_ALLOCATOR).as_deref().map(str::trim) {
            Ok("pool") => AllocatorKind::Pool,
            _ => AllocatorKind::Bfc,
        }
    }

    pub fn is_bfc(self) -> bool {
        self == AllocatorKind::Bfc
    }
}

const ADDRESS_ALIGN: u64 = 256;
const GUARD: u64 = 256;
const REGION_BITS: u32 = 40;
const DEFAULT_GPU_LIMIT: u64 = 4 << 30;
/// At most this much freed memory is held for reuse (and at most an eighth of the budget).
const POOL_CAPACITY: u64 = 512 << 20;

pub struct Allocation {
    pub buffer: wgpu::Buffer,
    pub base: u64,
    /// Bytes TensorFlow asked for; the buffer may be larger (its size class).
    pub size: u64,
}

impl Allocation {
    /// The bytes an address range may cover: the request, rounded to whole 4-byte words.
    fn span(&self) -> u64 {
        round_up(self.size.max(4), wgpu::COPY_BUFFER_ALIGNMENT)
    }
}

/// A byte range inside one allocation.
#[derive(Clone)]
pub struct DeviceSlice {
    pub allocation: Arc<Allocation>,
    pub offset: u64,
    pub len: u64,
}

impl DeviceSlice {
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.allocation.buffer
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    pub num_allocs: i64,
    pub bytes_in_use: i64,
    pub peak_bytes_in_use: i64,
    pub largest_alloc_size: i64,
    pub bytes_limit: i64,
}

pub struct MemoryMap {
    region_start: u64,
    region_end: u64,
    /// The budget; a logical device's `memory_limit` may lower it (`set_limit`).
    limit: AtomicU64,
    /// The budget from the environment or the adapter, before any `set_limit`.
    default_limit: u64,
    /// Under BFC, buffers of exactly the size asked (its regions, which a size class could enlarge
    /// by an eighth unseen); under the pool, of a size class.
    kind: AllocatorKind,
    max_buffer_size: u64,
    inner: Mutex<MapState>,
}

struct MapState {
    live: BTreeMap<u64, Arc<Allocation>>,
    cursor: u64,
    stats: MemoryStats,
    pool: BufferPool,
}

fn round_up(value: u64, align: u64) -> u64 {
    value.div_ceil(align) * align
}

/// Budgets set for devices before they open (`tf_wgpu_set_memory_limit`), by ordinal.
static LIMIT_OVERRIDES: Mutex<Vec<(usize, u64)>> = Mutex::new(Vec::new());

/// Sets device `ordinal`'s budget, for a device opened later (an open one: `MemoryMap::set_limit`).
pub fn set_limit_override(ordinal: usize, bytes: u64) {
    let mut overrides = LIMIT_OVERRIDES.lock().unwrap_or_else(|e| e.into_inner());
    overrides.retain(|(o, _)| *o != ordinal);
    overrides.push((ordinal, bytes));
}

/// Drops device `ordinal`'s budget override: a device opened later gets the default budget.
pub fn clear_limit_override(ordinal: usize) {
    LIMIT_OVERRIDES.lock().unwrap_or_else(|e| e.into_inner()).retain(|(o, _)| *o != ordinal);
}

fn limit_override(ordinal: usize) -> Option<u64> {
    let overrides = LIMIT_OVERRIDES.lock().unwrap_or_else(|e| e.into_inner());
    overrides.iter().find(|(o, _)| *o == ordinal).map(|(_, bytes)| *bytes)
}

fn default_limit(info: &wgpu::AdapterInfo) -> u64 {
    if let Some(mb) = std::env::var(ENV_MEMORY_LIMIT_MB).ok().and_then(|v| v.trim().parse::<u64>().ok()) {
        return mb << 20;
    }
    if info.device_type == wgpu::DeviceType::Cpu {
        // A software adapter allocates from system RAM: allow half of it.
        if let Some(bytes) = crate::ffi::loader::physical_memory_bytes() {
            return bytes / 2;
        }
    }
    DEFAULT_GPU_LIMIT
}

impl MemoryMap {
    pub fn new(ordinal: usize, info: &wgpu::AdapterInfo, limits: &wgpu::Limits) -> Self {
        let region_start = (ordinal as u64 + 1) << REGION_BITS;
        let default = default_limit(info);
        let limit = limit_override(ordinal).unwrap_or(default);
        Self {
            region_start,
            region_end: region_start + (1 << REGION_BITS) - (1 << 20),
            limit: AtomicU64::new(limit),
            default_limit: default,
            kind: AllocatorKind::from_env(),
            max_buffer_size: limits.max_buffer_size,
            inner: Mutex::new(MapState {
                live: BTreeMap::new(),
                cursor: region_start,
                stats: MemoryStats { bytes_limit: limit as i64, ..Default::default() },
                pool: BufferPool::new(POOL_CAPACITY.min(limit / 8)),
            }),
        }
    }

    /// Who hands out tensor memory on this device (fixed when the process registers the plugin).
    pub fn kind(&self) -> AllocatorKind {
        self.kind
    }

    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    /// Changes the budget for allocations from now on; None restores the default.
    pub fn set_limit(&self, bytes: Option<u64>) {
        let bytes = bytes.unwrap_or(self.default_limit);
        self.limit.store(bytes, Ordering::Relaxed);
        self.lock().stats.bytes_limit = bytes as i64;
    }

    pub fn stats(&self) -> MemoryStats {
        self.lock().stats
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MapState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates `size` bytes and returns the device address of the first byte.
    pub fn allocate(&self, core: &DeviceCore, size: u64) -> Result<u64> {
        if size > self.max_buffer_size {
            return Err(Error::resource_exhausted(format!(
                "WGPU allocation of {size} bytes exceeds the adapter's max_buffer_size of {} bytes",
                self.max_buffer_size
            )));
        }
        let (in_use, limit) = (self.stats().bytes_in_use as u64, self.limit());
        if in_use.saturating_add(size) > limit {
            return Err(Error::resource_exhausted(format!(
                "WGPU out of memory: {size} bytes requested, {in_use} of {limit} bytes in use (set {ENV_MEMORY_LIMIT_MB})"
            )));
        }
        let class = if self.kind.is_bfc() {
            round_up(size.max(4), wgpu::COPY_BUFFER_ALIGNMENT)
        } else {
            size_class(size, self.max_buffer_size)
        };
        let pooled = self.lock().pool.take(class);
        let buffer = match pooled {
            Some(buffer) => buffer,
            None => self.create_buffer(core, class)?,
        };
        let mut state = self.lock();
        let span = round_up(buffer.size(), ADDRESS_ALIGN) + GUARD;
        let base = self.reserve(&state, span)?;
        state.cursor = base + span;
        state.live.insert(base, Arc::new(Allocation { buffer, base, size }));
        let stats = &mut state.stats;
        stats.num_allocs += 1;
        stats.bytes_in_use += size as i64;
        stats.peak_bytes_in_use = stats.peak_bytes_in_use.max(stats.bytes_in_use);
        stats.largest_alloc_size = stats.largest_alloc_size.max(size as i64);
        Ok(base)
    }

    /// A new buffer of `size` bytes. When the device is out of memory, the pool's buffers are
    /// released and the allocation tried once more.
    fn create_buffer(&self, core: &DeviceCore, size: u64) -> Result<wgpu::Buffer> {
        let create = || {
            core.capture_errors(|| {
                core.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("tf tensor"),
                    size,
                    // UNIFORM: kernels for CPU adapters read operands through uniform windows.
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::UNIFORM
                        | wgpu::BufferUsages::COPY_SRC
                        | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
        };
        let (buffer, error) = create();
        let Some(first_error) = error else { return Ok(buffer) };
        let released = {
            let mut state = self.lock();
            let held = state.pool.bytes();
            state.pool.clear();
            held
        };
        if released > 0 {
            if let (buffer, None) = create() {
                return Ok(buffer);
            }
        }
        Err(Error::resource_exhausted(format!("WGPU could not allocate {size} bytes: {first_error}")))
    }

    /// Finds a free address range of `span` bytes, from the cursor onwards, wrapping once.
    fn reserve(&self, state: &MapState, span: u64) -> Result<u64> {
        let end_of = |base: u64, alloc: &Allocation| base + round_up(alloc.buffer.size(), ADDRESS_ALIGN) + GUARD;
        for start in [state.cursor, self.region_start] {
            let mut candidate = start;
            if let Some((&base, alloc)) = state.live.range(..start).next_back() {
                candidate = candidate.max(end_of(base, alloc));
            }
            for (&base, alloc) in state.live.range(candidate..) {
                if candidate + span <= base {
                    break;
                }
                candidate = end_of(base, alloc);
            }
            if candidate + span <= self.region_end {
                return Ok(candidate);
            }
        }
        Err(Error::resource_exhausted("WGPU device address space exhausted"))
    }

    /// Frees the allocation that starts at `base`, keeping its buffer for reuse. Work already
    /// encoded keeps using the buffer; TF orders any reuse after it (see `buffer_pool`).
    pub fn free(&self, base: u64) -> Result<()> {
        let mut state = self.lock();
        match state.live.remove(&base) {
            Some(alloc) => {
                state.stats.bytes_in_use -= alloc.size as i64;
                // A slice resolved on another thread may still hold the allocation; then it is
                // simply dropped later.
                if let Ok(alloc) = Arc::try_unwrap(alloc) {
                    state.pool.put(alloc.buffer);
                }
                Ok(())
            }
            None => Err(Error::invalid_argument(format!("deallocate of unknown WGPU address {base:#x}"))),
        }
    }

    /// Maps `[address, address + len)` to its allocation; the whole range must lie inside it.
    pub fn resolve(&self, address: u64, len: u64) -> Result<DeviceSlice> {
        let state = self.lock();
        let found = state.live.range(..=address).next_back();
        match found {
            Some((&base, alloc)) if address - base + len <= alloc.span() => {
                Ok(DeviceSlice { allocation: alloc.clone(), offset: address - base, len })
            }
            _ => Err(Error::invalid_argument(format!(
                "WGPU address range {address:#x}+{len} is not inside a live allocation of device {}",
                (self.region_start >> REGION_BITS) - 1
            ))),
        }
    }

    pub fn live_allocations(&self) -> usize {
        self.lock().live.len()
    }

    /// Bytes of freed buffers held for reuse.
    pub fn pooled_bytes(&self) -> u64 {
        self.lock().pool.bytes()
    }
}
