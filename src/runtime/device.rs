//! One TensorFlow device: a wgpu `Device`/`Queue`, its memory map, its submission log and its poller.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Code, Error, Result};

use super::buffer_pool::BufferPool;
use super::memory::MemoryMap;
use super::pipeline::PipelineCache;
use super::scratch::ScratchBuffers;
use super::stream::StreamCore;

/// At most this much unmapped readback memory is held for reuse.
const READBACK_POOL_CAPACITY: u64 = 64 << 20;

/// What the poller thread and the streams share. It never owns a `Device`, so the poller thread can
/// never be the one that drops (and joins) itself.
pub struct DeviceCore {
    pub ordinal: usize,
    pub info: wgpu::AdapterInfo,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: wgpu::Limits,
    /// The most loop iterations one shader invocation may run on this adapter, all its loops
    /// together: llvmpipe stops every loop once the invocation has run 65535 iterations (see
    /// `LLVMPIPE_MAX_LOOP_ITERATIONS`). Kernels whose loops could run longer split the work or
    /// refuse it.
    pub max_loop_iterations: u64,
    pub features: wgpu::Features,
    pub memory: MemoryMap,
    pub pipelines: PipelineCache,
    pub scratch: ScratchBuffers,
    /// Unmapped readback buffers (MAP_READ | COPY_DST) for device-to-host copies to reuse.
    pub(super) readbacks: Arc<Mutex<BufferPool>>,
    submissions: Mutex<SubmissionLog>,
    completed_seq: Arc<AtomicU64>,
    streams: Mutex<Vec<Weak<StreamCore>>>,
    /// The stream that encoded last (`encoding_stream`).
    encoding: Mutex<u64>,
    wake: Arc<PollerWake>,
    pub(super) shutdown: AtomicBool,
    device_error: Arc<Mutex<Option<String>>>,
}

#[derive(Default)]
struct SubmissionLog {
    last_seq: u64,
    /// Submissions not yet known complete, oldest first.
    in_flight: VecDeque<(u64, wgpu::SubmissionIndex)>,
}

/// Wakes the poller thread: new host tasks or submissions, and completions that wgpu reported on
/// another thread (`Queue::submit` also polls, and fires the callbacks it collects there).
#[derive(Default)]
pub struct PollerWake {
    generation: Mutex<u64>,
    condvar: Condvar,
}

impl PollerWake {
    pub fn notify(&self) {
        let mut generation = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        *generation += 1;
        self.condvar.notify_all();
    }

    fn generation(&self) -> u64 {
        *self.generation.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps until notified after `seen_generation`, or until `timeout` passes.
    fn wait(&self, seen_generation: u64, timeout: Duration) {
        let generation = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        if *generation == seen_generation {
            let _ = self.condvar.wait_timeout(generation, timeout);
        }
    }
}

/// A device handed to TensorFlow. Dropping it stops and joins the poller thread.
pub struct Device {
    pub core: Arc<DeviceCore>,
    poller: Option<JoinHandle<()>>,
}

impl std::ops::Deref for Device {
    type Target = DeviceCore;
    fn deref(&self) -> &DeviceCore {
        &self.core
    }
}

/// Mesa's llvmpipe (lavapipe) guards against endless loops with one counter per shader invocation,
/// shared by all its loops and never reset: after 65535 iterations in all, every loop exits at its
/// next test, silently (gallivm's `LP_MAX_TGSI_LOOP_ITERATIONS`). A sum of 2^24 ones, 65536
/// iterations per thread, gave 131070. tests/math_library.rs measures it on the adapter.
pub const LLVMPIPE_MAX_LOOP_ITERATIONS: u64 = 65535;

pub fn is_llvmpipe(info: &wgpu::AdapterInfo) -> bool {
    info.name.contains("llvmpipe") || info.driver.contains("llvmpipe")
}

/// `limits` with `max_storage_buffer_binding_size` lowered to `TF_WGPU_MAX_BINDING_BYTES` where
/// that is set (a multiple of 256, at least 4096): tests exercise the kernels' windows over large
/// tensors with small ones.
fn with_binding_cap(mut limits: wgpu::Limits) -> wgpu::Limits {
    let cap = std::env::var("TF_WGPU_MAX_BINDING_BYTES").ok().and_then(|v| v.trim().parse::<u64>().ok());
    match cap {
        Some(cap) if cap >= 4096 && cap.is_multiple_of(256) => {
            limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(cap);
        }
        Some(cap) => {
            log::warn!("tensorflow-wgpu: TF_WGPU_MAX_BINDING_BYTES={cap} ignored (a multiple of 256, at least 4096)")
        }
        None => {}
    }
    limits
}

/// Environment variable: `1` opens every device with `portable_limits` and without SUBGROUP and
/// SHADER_F16, so that a run here shows what a Metal, DX12 or Vulkan GPU with the fewest resources
/// would refuse (the kernels' guards and non-subgroup fallbacks run; float16 kernels do not register).
pub const ENV_PORTABLE_LIMITS: &str = "TF_WGPU_PORTABLE_LIMITS";
/// See `Device::open_with`.
pub const ENV_NO_LOOP_LIMIT: &str = "TF_WGPU_NO_LOOP_LIMIT";
/// Environment variable: a loop limit (at least `MIN_LOOP_LIMIT`) to plan loops under, below the
/// adapter's own: small tests reach the kernels' splits of long loops, on any adapter.
pub const ENV_LOOP_LIMIT: &str = "TF_WGPU_LOOP_LIMIT";
/// The lowest `TF_WGPU_LOOP_LIMIT`: a pass of one tap in every loop the split kernels keep.
/// The limit applies to every kernel, so matmul and convolution budgets shrink with it too:
/// values this low suit pool-only tests.
pub const MIN_LOOP_LIMIT: u64 = 64;

/// The loop limit kernels plan under: llvmpipe's, lowered to `TF_WGPU_LOOP_LIMIT` where that is
/// set. `TF_WGPU_NO_LOOP_LIMIT=1` plans loops as for a GPU (no limit) on llvmpipe too: a test knob
/// for the GPU paths of kernels that split long loops, safe for small work only there.
fn planned_loop_limit(info: &wgpu::AdapterInfo) -> u64 {
    let unlimited = std::env::var(ENV_NO_LOOP_LIMIT).as_deref() == Ok("1");
    let adapter = if is_llvmpipe(info) && !unlimited { LLVMPIPE_MAX_LOOP_ITERATIONS } else { u64::MAX };
    match std::env::var(ENV_LOOP_LIMIT).ok().map(|v| v.trim().parse::<u64>()) {
        None => adapter,
        Some(Ok(limit)) if limit >= MIN_LOOP_LIMIT => adapter.min(limit),
        Some(_) => {
            log::warn!("tensorflow-wgpu: {ENV_LOOP_LIMIT} ignored (a whole number, at least {MIN_LOOP_LIMIT})");
            adapter
        }
    }
}

/// Environment variable: `gpu` or `cpu` forces one kernel profile on every adapter, so that both
/// run (and are tested) on lavapipe. By default CPU adapters take the CPU profile (kernels shaped
/// for llvmpipe: uniform tiles, few barriers) and every other adapter the GPU profile (workgroup
/// tiles of 256 invocations in workgroup memory).
pub const ENV_KERNELS: &str = "TF_WGPU_KERNELS";

/// Which family of kernels a device runs where both exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelProfile {
    Gpu,
    Cpu,
}

impl KernelProfile {
    /// `TF_WGPU_KERNELS` if set, else by the adapter's type.
    pub fn for_adapter(info: &wgpu::AdapterInfo) -> KernelProfile {
        static FORCED: std::sync::OnceLock<Option<KernelProfile>> = std::sync::OnceLock::new();
        let forced = FORCED.get_or_init(|| match std::env::var(ENV_KERNELS).as_deref().map(str::trim) {
            Ok("gpu") => Some(KernelProfile::Gpu),
            Ok("cpu") => Some(KernelProfile::Cpu),
            Ok("") | Err(_) => None,
            Ok(other) => {
                log::warn!("tensorflow-wgpu: {ENV_KERNELS}={other} ignored (gpu or cpu)");
                None
            }
        });
        match forced {
            Some(profile) => *profile,
            None if info.device_type == wgpu::DeviceType::Cpu => KernelProfile::Cpu,
            None => KernelProfile::Gpu,
        }
    }
}

/// Which limits and features `Device::open_with` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LimitsProfile {
    /// Everything the adapter offers.
    #[default]
    Adapter,
    /// `portable_limits`, no SUBGROUP or SHADER_F16.
    Portable,
}

impl LimitsProfile {
    /// `Portable` where `TF_WGPU_PORTABLE_LIMITS=1`.
    pub fn from_env() -> LimitsProfile {
        match std::env::var(ENV_PORTABLE_LIMITS).as_deref().map(str::trim) {
            Ok("1") => LimitsProfile::Portable,
            Ok("" | "0") | Err(_) => LimitsProfile::Adapter,
            Ok(other) => {
                log::warn!("tensorflow-wgpu: {ENV_PORTABLE_LIMITS}={other} ignored (1 or 0)");
                LimitsProfile::Adapter
            }
        }
    }
}

/// What `adapter` offers that the kernels may use: its features, less SHADER_F64 off Vulkan. The
/// float64 kernels need f64 sqrt, floor, ceil, round and ldexp, which SPIR-V's GLSL.std.450 has
/// and HLSL (DX12) lacks for doubles; Metal has no f64 at all.
pub fn offered_features(adapter: &wgpu::Adapter) -> wgpu::Features {
    let mut features = adapter.features();
    if adapter.get_info().backend != wgpu::Backend::Vulkan {
        features.remove(wgpu::Features::SHADER_F64);
    }
    features
}

/// The features a device opened with `profile` asks of an adapter offering `adapter`.
/// SUBGROUP: the tiled matmul and convolution for CPU adapters share rows across a subgroup.
/// SHADER_F64: float64 kernels compute in f64 (on Vulkan: `offered_features`).
pub fn requested_features(adapter: wgpu::Features, profile: LimitsProfile) -> wgpu::Features {
    let wanted = match profile {
        LimitsProfile::Adapter => {
            wgpu::Features::TIMESTAMP_QUERY
                | wgpu::Features::SHADER_F16
                | wgpu::Features::SHADER_F64
                | wgpu::Features::SUBGROUP
        }
        // dx12/adapter.rs: SUBGROUP needs shader model 6.0, SHADER_F16 6.2 and native 16-bit ops;
        // Vulkan GPUs such as the GTX 1050 lack float16, and Metal float64.
        LimitsProfile::Portable => wgpu::Features::TIMESTAMP_QUERY,
    };
    adapter & wanted
}

/// `adapter` lowered, field by field, to the smallest value wgpu-hal 30 reports for any Metal
/// (macOS), DX12 (resource binding tier 2 or better) or Vulkan (desktop) GPU, for every limit a
/// compute pipeline or its dispatch meets. Vulkan's spec minima are lower than any such GPU in some
/// places; there the WebGPU default (`wgpu::Limits::defaults()`), which every one of them meets,
/// is taken. Alignments are raised to the largest any backend asks. Paths are in wgpu-hal 30's src/.
pub fn portable_limits(adapter: &wgpu::Limits) -> wgpu::Limits {
    let mut l = adapter.clone();
    // Vulkan maxBoundDescriptorSets: spec minimum and WebGPU default 4; metal and dx12: 8 (the
    // hal's MAX_BIND_GROUPS, dx12/adapter.rs max_bind_groups). The kernels use one.
    l.max_bind_groups = l.max_bind_groups.min(4);
    // vulkan/adapter.rs: 1000.max(maxPerSetDescriptors); metal and dx12: u32::MAX.
    l.max_bindings_per_bind_group = l.max_bindings_per_bind_group.min(1000);
    // vulkan/adapter.rs maxPerStageDescriptorStorageBuffers: spec minimum 4, WebGPU default 8;
    // dx12/adapter.rs tier 2: 64 UAVs across stages / 2 stages / 2 (buffers, textures) = 16;
    // metal/adapter.rs: MAX_BUFFERS - 2 = 29, shared with uniform buffers.
    l.max_storage_buffers_per_shader_stage = l.max_storage_buffers_per_shader_stage.min(8);
    // vulkan/adapter.rs maxPerStageDescriptorUniformBuffers: spec minimum and WebGPU default 12;
    // dx12/adapter.rs tier 1-2: 14 CBVs per stage; metal: 29, shared with storage buffers.
    l.max_uniform_buffers_per_shader_stage = l.max_uniform_buffers_per_shader_stage.min(12);
    // metal/adapter.rs: MAX_BUFFERS (31) less one buffer for immediates and one for buffer sizes,
    // for storage and uniform buffers together (dx12, vulkan: u32::MAX).
    l.max_buffers_and_acceleration_structures_per_shader_stage =
        l.max_buffers_and_acceleration_structures_per_shader_stage.min(29);
    // dx12/adapter.rs: 8 and 4, the root signature's 64 DWORDs; Vulkan's spec minima are 8 and 4.
    l.max_dynamic_uniform_buffers_per_pipeline_layout = l.max_dynamic_uniform_buffers_per_pipeline_layout.min(8);
    l.max_dynamic_storage_buffers_per_pipeline_layout = l.max_dynamic_storage_buffers_per_pipeline_layout.min(4);
    // dx12/adapter.rs: D3D12_REQ_CONSTANT_BUFFER_ELEMENT_COUNT (4096) x 16 bytes; vulkan
    // maxUniformBufferRange: spec minimum 16 KiB, WebGPU default and NVIDIA 64 KiB; metal: max_buffer_size.
    l.max_uniform_buffer_binding_size = l.max_uniform_buffer_binding_size.min(64 << 10);
    // vulkan/adapter.rs maxStorageBufferRange: spec minimum 2^27 (lavapipe reports it); dx12:
    // MAX_I32_BINDING_SIZE (2^31 - 1); metal: max_buffer_size.
    l.max_storage_buffer_binding_size = l.max_storage_buffer_binding_size.min(128 << 20);
    // metal/adapter.rs: maxBufferLength, at least 1 GiB on Macs (1 << 30 before macOS 10.14);
    // vulkan maxMemoryAllocationSize: spec minimum 2^30; dx12: i32::MAX.
    l.max_buffer_size = l.max_buffer_size.min(1 << 30);
    // vulkan maxComputeSharedMemorySize: spec minimum and WebGPU default 16 KiB; metal/adapter.rs
    // (macOS) and dx12/adapter.rs: 32 KiB.
    l.max_compute_workgroup_storage_size = l.max_compute_workgroup_storage_size.min(16 << 10);
    // vulkan maxComputeWorkGroupInvocations and Size: spec minima 128 and 128 x 128 x 64, WebGPU
    // defaults 256 and 256 x 256 x 64; metal/adapter.rs (macOS): 1024 each; dx12: D3D12_CS_THREAD_
    // GROUP_MAX_THREADS_PER_GROUP 1024, D3D12_CS_THREAD_GROUP_MAX_X/Y/Z 1024 x 1024 x 64.
    l.max_compute_invocations_per_workgroup = l.max_compute_invocations_per_workgroup.min(256);
    l.max_compute_workgroup_size_x = l.max_compute_workgroup_size_x.min(256);
    l.max_compute_workgroup_size_y = l.max_compute_workgroup_size_y.min(256);
    l.max_compute_workgroup_size_z = l.max_compute_workgroup_size_z.min(64);
    // 65535 on all three: metal/adapter.rs, D3D12_CS_DISPATCH_MAX_THREAD_GROUPS_PER_DIMENSION,
    // Vulkan's spec minimum maxComputeWorkGroupCount.
    l.max_compute_workgroups_per_dimension = l.max_compute_workgroups_per_dimension.min(65535);
    // Vulkan allows minUniform/StorageBufferOffsetAlignment up to 256; dx12: 256 (constant buffers)
    // and 16; metal: 32 (storage). Kernels bind windows at these alignments.
    l.min_uniform_buffer_offset_alignment = l.min_uniform_buffer_offset_alignment.max(256);
    l.min_storage_buffer_offset_alignment = l.min_storage_buffer_offset_alignment.max(256);
    l
}

/// `portable_limits` of an adapter without limits: the floor itself in every field it lowers.
pub fn portable_floor() -> wgpu::Limits {
    portable_limits(&wgpu::Limits::unlimited())
}

impl Device {
    /// Opens the device with the limits and features `TF_WGPU_PORTABLE_LIMITS` selects.
    pub fn open(ordinal: usize, adapter: &wgpu::Adapter) -> Result<Device> {
        Device::open_with(ordinal, adapter, LimitsProfile::from_env())
    }

    /// Opens the device with the limits and features of `profile`.
    pub fn open_with(ordinal: usize, adapter: &wgpu::Adapter, profile: LimitsProfile) -> Result<Device> {
        let info = adapter.get_info();
        // Ask for everything the adapter offers (big buffers and bindings matter for tensors), or
        // for what every backend offers under `LimitsProfile::Portable`.
        let limits = match profile {
            LimitsProfile::Adapter => adapter.limits(),
            LimitsProfile::Portable => portable_limits(&adapter.limits()),
        };
        let features = requested_features(offered_features(adapter), profile);
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("tensorflow-wgpu device"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| Error::new(Code::Unavailable, format!("cannot open WGPU device {}: {e}", info.name)))?;

        let device_error = Arc::new(Mutex::new(None::<String>));
        {
            let slot = device_error.clone();
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                let message = describe(&e);
                log::error!("tensorflow-wgpu: device error: {message}");
                let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(message);
            }));
            let slot = device_error.clone();
            device.set_device_lost_callback(move |reason, message| {
                if reason != wgpu::DeviceLostReason::Destroyed {
                    log::error!("tensorflow-wgpu: device lost: {message}");
                    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                    slot.get_or_insert_with(|| format!("device lost: {message}"));
                }
            });
        }

        let limits = with_binding_cap(limits);
        let memory = MemoryMap::new(ordinal, &info, &limits);
        let max_loop_iterations = planned_loop_limit(&info);
        let core = Arc::new(DeviceCore {
            ordinal,
            info,
            device,
            queue,
            limits,
            max_loop_iterations,
            features,
            memory,
            pipelines: PipelineCache::default(),
            scratch: ScratchBuffers::default(),
            readbacks: Arc::new(Mutex::new(BufferPool::new(READBACK_POOL_CAPACITY))),
            submissions: Mutex::new(SubmissionLog::default()),
            completed_seq: Arc::new(AtomicU64::new(0)),
            streams: Mutex::new(Vec::new()),
            encoding: Mutex::new(0),
            wake: Arc::default(),
            shutdown: AtomicBool::new(false),
            device_error,
        });
        let poller = super::poller::spawn(core.clone())?;
        Ok(Device { core, poller: Some(poller) })
    }

    /// Whether the poller thread is still running (tests check shutdown with it).
    pub fn poller_running(&self) -> bool {
        self.poller.as_ref().is_some_and(|h| !h.is_finished())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.core.shutdown.store(true, Ordering::SeqCst);
        self.core.wake_poller();
        if let Some(handle) = self.poller.take() {
            if handle.join().is_err() {
                log::error!("tensorflow-wgpu: poller thread panicked");
            }
        }
    }
}

impl DeviceCore {
    /// The kernel profile this device runs (`KernelProfile::for_adapter`).
    pub fn kernel_profile(&self) -> KernelProfile {
        KernelProfile::for_adapter(&self.info)
    }

    /// Submits one command buffer; returns its sequence number (1, 2, ... in submission order).
    pub fn submit(&self, commands: wgpu::CommandBuffer) -> u64 {
        let mut log = self.submissions.lock().unwrap_or_else(|e| e.into_inner());
        let index = self.queue.submit(Some(commands));
        log::trace!("tensorflow-wgpu: submit {seq}", seq = log.last_seq + 1);
        log.last_seq += 1;
        let seq = log.last_seq;
        let (completed, wake) = (self.completed_seq.clone(), self.wake.clone());
        // Registered under the lock so callbacks are registered in sequence order.
        self.queue.on_submitted_work_done(move || {
            completed.fetch_max(seq, Ordering::SeqCst);
            wake.notify();
        });
        log.in_flight.push_back((seq, index));
        drop(log);
        self.wake_poller();
        seq
    }

    /// Highest sequence number whose GPU work is known complete.
    pub fn completed_seq(&self) -> u64 {
        self.completed_seq.load(Ordering::SeqCst)
    }

    /// The oldest submission not yet known complete (drops the completed ones from the log).
    pub(super) fn oldest_in_flight(&self) -> Option<wgpu::SubmissionIndex> {
        let done = self.completed_seq();
        let mut log = self.submissions.lock().unwrap_or_else(|e| e.into_inner());
        while log.in_flight.front().is_some_and(|(seq, _)| *seq <= done) {
            log.in_flight.pop_front();
        }
        log.in_flight.front().map(|(_, index)| index.clone())
    }

    pub(super) fn register_stream(&self, stream: &Arc<StreamCore>) {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams.retain(|s| s.strong_count() > 0);
        streams.push(Arc::downgrade(stream));
    }

    /// The id of the stream that encoded last, locked while a stream encodes. Commands must reach
    /// the queue in the order they were encoded, across streams: TF frees a tensor once its last
    /// reader is encoded and may hand the memory at once to a command of another stream (a
    /// constant's upload on the host-to-device stream, which TF does not order after the compute
    /// stream). So only one stream holds an open encoder: one that encodes after another first
    /// submits the others' encoders.
    pub(super) fn encoding_stream(&self) -> MutexGuard<'_, u64> {
        self.encoding.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The streams still alive on this device.
    pub(super) fn live_streams(&self) -> Vec<Arc<StreamCore>> {
        let streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams.iter().filter_map(Weak::upgrade).collect()
    }

    pub(super) fn wake_poller(&self) {
        self.wake.notify();
    }

    /// For callbacks that wgpu may run on any thread.
    pub(super) fn poller_wake(&self) -> Arc<PollerWake> {
        self.wake.clone()
    }

    /// Sleeps until woken or `timeout` passes.
    pub(super) fn wait_for_wake(&self, seen_generation: u64, timeout: Duration) {
        self.wake.wait(seen_generation, timeout);
    }

    pub(super) fn wake_generation(&self) -> u64 {
        self.wake.generation()
    }

    /// The first error wgpu reported on this device (validation, out of memory, device lost).
    pub fn device_error(&self) -> Option<Error> {
        let slot = self.device_error.lock().unwrap_or_else(|e| e.into_inner());
        slot.as_ref().map(|m| Error::internal(format!("WGPU device error: {m}")))
    }

    /// Runs `f` inside wgpu error scopes and returns the first out-of-memory or validation error.
    pub fn capture_errors<T>(&self, f: impl FnOnce() -> T) -> (T, Option<wgpu::Error>) {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let validation_error = pollster::block_on(validation.pop());
        let oom_error = pollster::block_on(oom.pop());
        (value, oom_error.or(validation_error))
    }
}

/// A wgpu error with its causes: wgpu's `Display` alone says only "Validation Error".
pub fn describe(error: &wgpu::Error) -> String {
    match error {
        wgpu::Error::Validation { description, .. } => format!("validation error: {description}"),
        wgpu::Error::OutOfMemory { .. } => "out of memory".to_string(),
        other => format!("{other:?}"),
    }
}
