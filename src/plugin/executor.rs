//! The SP_StreamExecutor callbacks: memory, streams, events, timers, copies, fills, waits and host
//! callbacks. Handles: `SP_Stream` → `Box<Stream>`, `SP_Event` → `Box<Arc<Event>>`,
//! `SP_Timer` → `Box<Timer>`, device memory → addresses of `runtime::memory`.

use std::collections::BTreeSet;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::ffi::se::*;
use crate::ffi::tf::{OwnedStatus, TF_Bool, TF_Status};
use crate::runtime::{stream::synchronize_device, Device, Event, EventStatus, Stream, Timer};

use super::platform::DeviceHandle;
use super::{null_arg, or_log, with_status};

pub fn fill(se: &mut SP_StreamExecutor) {
    se.struct_size = SP_STREAMEXECUTOR_STRUCT_SIZE;
    se.ext = std::ptr::null_mut();
    se.allocate = Some(allocate);
    se.deallocate = Some(deallocate);
    se.host_memory_allocate = Some(host_memory_allocate);
    se.host_memory_deallocate = Some(host_memory_deallocate);
    se.unified_memory_allocate = Some(unified_memory_allocate);
    se.unified_memory_deallocate = Some(unified_memory_deallocate);
    se.get_allocator_stats = Some(get_allocator_stats);
    se.device_memory_usage = Some(device_memory_usage);
    se.create_stream = Some(create_stream);
    se.destroy_stream = Some(destroy_stream);
    se.create_stream_dependency = Some(create_stream_dependency);
    se.get_stream_status = Some(get_stream_status);
    se.create_event = Some(create_event);
    se.destroy_event = Some(destroy_event);
    se.get_event_status = Some(get_event_status);
    se.record_event = Some(record_event);
    se.wait_for_event = Some(wait_for_event);
    se.create_timer = Some(create_timer);
    se.destroy_timer = Some(destroy_timer);
    se.start_timer = Some(start_timer);
    se.stop_timer = Some(stop_timer);
    se.memcpy_dtoh = Some(memcpy_dtoh);
    se.memcpy_htod = Some(memcpy_htod);
    se.memcpy_dtod = Some(memcpy_dtod);
    se.sync_memcpy_dtoh = Some(sync_memcpy_dtoh);
    se.sync_memcpy_htod = Some(sync_memcpy_htod);
    se.sync_memcpy_dtod = Some(sync_memcpy_dtod);
    se.block_host_for_event = Some(block_host_for_event);
    se.block_host_until_done = Some(block_host_until_done);
    se.synchronize_all_activity = Some(synchronize_all_activity);
    se.mem_zero = Some(mem_zero);
    se.memset = Some(memset);
    se.memset32 = Some(memset32);
    se.host_callback = Some(host_callback);
}

// --- handle conversions --------------------------------------------------------------------------

/// The handles of one kind this plugin made and has not destroyed. Every use and destroy checks
/// it, so a handle destroyed twice, used after its destroy or never made here is an error, not a
/// use of freed memory. (An address reused by a later handle of the same kind cannot be told
/// apart; TF's contract rules both mistakes out, this is defence in depth.)
struct LiveHandles {
    kind: &'static str,
    live: Mutex<BTreeSet<usize>>,
}

impl LiveHandles {
    const fn new(kind: &'static str) -> Self {
        Self { kind, live: Mutex::new(BTreeSet::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<usize>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add<T>(&self, handle: *mut T) -> *mut T {
        self.lock().insert(handle as usize);
        handle
    }

    fn check<T>(&self, handle: *const T) -> Result<()> {
        if handle.is_null() {
            return Err(null_arg(self.kind));
        }
        if !self.lock().contains(&(handle as usize)) {
            return Err(self.unknown());
        }
        Ok(())
    }

    /// Forgets `handle`; an error if it is not live (destroyed already, or not ours).
    fn remove<T>(&self, handle: *const T) -> Result<()> {
        if self.lock().remove(&(handle as usize)) {
            Ok(())
        } else {
            Err(self.unknown())
        }
    }

    fn unknown(&self) -> Error {
        Error::invalid_argument(format!(
            "tensorflow-wgpu: {} was destroyed already or not made by this plugin",
            self.kind
        ))
    }
}

static STREAMS: LiveHandles = LiveHandles::new("SP_Stream");
static EVENTS: LiveHandles = LiveHandles::new("SP_Event");
static TIMERS: LiveHandles = LiveHandles::new("SP_Timer");

fn device<'a>(device: *const SP_Device) -> Result<&'a Arc<Device>> {
    // SAFETY: TF passes the SP_Device we filled in `create_device`; its handle is a DeviceHandle.
    let sp = unsafe { device.as_ref() }.ok_or_else(|| null_arg("SP_Device"))?;
    let handle =
        unsafe { (sp.device_handle as *const DeviceHandle).as_ref() }.ok_or_else(|| null_arg("device_handle"))?;
    Ok(&handle.device)
}

fn stream<'a>(stream: SP_Stream) -> Result<&'a Stream> {
    STREAMS.check(stream)?;
    // SAFETY: a live SP_Stream is a `Box<Stream>` pointer made by `create_stream`.
    unsafe { (stream as *const Stream).as_ref() }.ok_or_else(|| null_arg("SP_Stream"))
}

fn event<'a>(event: SP_Event) -> Result<&'a Arc<Event>> {
    EVENTS.check(event)?;
    // SAFETY: a live SP_Event is a `Box<Arc<Event>>` pointer made by `create_event`.
    unsafe { (event as *const Arc<Event>).as_ref() }.ok_or_else(|| null_arg("SP_Event"))
}

fn timer<'a>(timer: SP_Timer) -> Result<&'a Timer> {
    TIMERS.check(timer)?;
    // SAFETY: a live SP_Timer is a `Box<Timer>` pointer made by `create_timer`.
    unsafe { (timer as *const Timer).as_ref() }.ok_or_else(|| null_arg("SP_Timer"))
}

/// The device address a `SP_DeviceMemoryBase` names.
fn address(mem: *const SP_DeviceMemoryBase) -> Result<u64> {
    // SAFETY: TF passes a live SP_DeviceMemoryBase (null checked).
    let mem = unsafe { mem.as_ref() }.ok_or_else(|| null_arg("SP_DeviceMemoryBase"))?;
    Ok(mem.opaque as u64)
}

fn host_slice<'a>(ptr: *const c_void, size: u64) -> Result<&'a [u8]> {
    if size == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(null_arg("host source"));
    }
    // SAFETY: TF guarantees `size` readable bytes at `ptr` for the duration of the call.
    Ok(unsafe { std::slice::from_raw_parts(ptr as *const u8, size as usize) })
}

/// A host destination pointer that may move to the poller thread.
#[derive(Clone, Copy)]
struct HostDst(usize);

impl HostDst {
    fn write(self, bytes: &[u8]) {
        // SAFETY: TF keeps `bytes.len()` writable bytes at the destination until the stream passes
        // this copy (it waits on an event or the stream before reading them).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.0 as *mut u8, bytes.len()) }
    }
}

/// The sink that writes a device-to-host copy into TF's host buffer.
fn host_sink(host_dst: *mut c_void, size: u64) -> Result<crate::runtime::stream::HostSink> {
    if host_dst.is_null() && size > 0 {
        return Err(null_arg("host destination"));
    }
    let dst = HostDst(host_dst as usize);
    Ok(Box::new(move |bytes| dst.write(bytes)))
}

// --- memory ----------------------------------------------------------------------------------------

unsafe extern "C" fn allocate(dev: *const SP_Device, size: u64, memory_space: i64, mem: *mut SP_DeviceMemoryBase) {
    or_log("allocate", (), || {
        // SAFETY: TF passes the SP_DeviceMemoryBase to fill (null checked).
        let out = unsafe { mem.as_mut() }.ok_or_else(|| null_arg("SP_DeviceMemoryBase"))?;
        out.struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
        out.ext = std::ptr::null_mut();
        out.opaque = std::ptr::null_mut();
        out.size = 0;
        out.payload = 0;
        if memory_space != 0 {
            return Err(Error::unimplemented(format!("memory space {memory_space} is not supported")));
        }
        let device = device(dev)?;
        match device.memory.allocate(device, size) {
            Ok(address) => {
                out.opaque = address as *mut c_void;
                out.size = size;
            }
            // A null allocation is how TF learns of ResourceExhausted. TF's BFC allocator probes
            // with regions that may not fit and reports real failures itself.
            Err(e) if device.memory.kind().is_bfc() => log::debug!("tensorflow-wgpu: {e}"),
            Err(e) => log::warn!("tensorflow-wgpu: {e}"),
        }
        Ok(())
    })
}

unsafe extern "C" fn deallocate(dev: *const SP_Device, mem: *mut SP_DeviceMemoryBase) {
    or_log("deallocate", (), || {
        let address = address(mem)?;
        if address != 0 {
            device(dev)?.memory.free(address)?;
        }
        Ok(())
    })
}

const HOST_ALIGNMENT: usize = 64;

/// The layout of a host buffer of `size` bytes: a header of HOST_ALIGNMENT bytes that records the
/// size (TF frees host memory by pointer alone, and `std::alloc` needs the layout back), then the
/// buffer, aligned.
fn host_layout(size: usize) -> Option<std::alloc::Layout> {
    std::alloc::Layout::from_size_align(size.checked_add(HOST_ALIGNMENT)?, HOST_ALIGNMENT).ok()
}

unsafe extern "C" fn host_memory_allocate(_dev: *const SP_Device, size: u64) -> *mut c_void {
    // Plain aligned host memory: wgpu has no pinned host memory to offer.
    let Some(layout) = usize::try_from(size).ok().and_then(host_layout) else {
        log::warn!("tensorflow-wgpu: host allocation of {size} bytes is too large");
        return std::ptr::null_mut();
    };
    // SAFETY: the layout's size is at least HOST_ALIGNMENT, never zero.
    let base = unsafe { std::alloc::alloc(layout) };
    if base.is_null() {
        log::warn!("tensorflow-wgpu: host allocation of {size} bytes failed");
        return std::ptr::null_mut();
    }
    // SAFETY: `base` is valid for layout.size() >= HOST_ALIGNMENT bytes and aligned for usize; the
    // buffer starts HOST_ALIGNMENT bytes in, inside the same allocation.
    unsafe {
        base.cast::<usize>().write(size as usize);
        base.add(HOST_ALIGNMENT).cast()
    }
}

unsafe extern "C" fn host_memory_deallocate(_dev: *const SP_Device, mem: *mut c_void) {
    if mem.is_null() {
        return;
    }
    // SAFETY: `mem` came from `host_memory_allocate`, so its header, which holds the size it was
    // allocated with, starts HOST_ALIGNMENT bytes before it.
    unsafe {
        let base = mem.cast::<u8>().sub(HOST_ALIGNMENT);
        if let Some(layout) = host_layout(base.cast::<usize>().read()) {
            std::alloc::dealloc(base, layout);
        }
    }
}

unsafe extern "C" fn unified_memory_allocate(_dev: *const SP_Device, _bytes: u64) -> *mut c_void {
    // The platform says supports_unified_memory = false; wgpu has no unified memory.
    log::warn!("tensorflow-wgpu: unified memory is not supported");
    std::ptr::null_mut()
}

unsafe extern "C" fn unified_memory_deallocate(_dev: *const SP_Device, _location: *mut c_void) {}

unsafe extern "C" fn get_allocator_stats(dev: *const SP_Device, stats: *mut SP_AllocatorStats) -> TF_Bool {
    or_log("get_allocator_stats", 0, || {
        // SAFETY: TF passes the stats struct to fill (null checked).
        let out = unsafe { stats.as_mut() }.ok_or_else(|| null_arg("SP_AllocatorStats"))?;
        if out.struct_size != 0 && out.struct_size < SP_ALLOCATORSTATS_STRUCT_SIZE {
            return Err(Error::failed_precondition("SP_AllocatorStats is older than this plugin"));
        }
        let device = device(dev)?;
        let s = device.memory.stats();
        *out = SP_AllocatorStats {
            struct_size: SP_ALLOCATORSTATS_STRUCT_SIZE,
            num_allocs: s.num_allocs,
            bytes_in_use: s.bytes_in_use,
            peak_bytes_in_use: s.peak_bytes_in_use,
            largest_alloc_size: s.largest_alloc_size,
            has_bytes_limit: 1,
            bytes_limit: s.bytes_limit,
            bytes_reserved: s.bytes_in_use,
            peak_bytes_reserved: s.peak_bytes_in_use,
            has_bytes_reservable_limit: 0,
            bytes_reservable_limit: 0,
            largest_free_block_bytes: (s.bytes_limit - s.bytes_in_use).max(0),
        };
        Ok(1)
    })
}

/// The free memory from which TF's pluggable-device factory leaves `budget` bytes after its
/// `MinSystemMemory`: 255 MiB below 2 GiB of free memory, else the larger of 300 MiB and 6%.
fn with_system_margin(budget: i64) -> i64 {
    const SMALL_MARGIN: i64 = 255 << 20;
    const LARGE_MARGIN: i64 = 300 << 20;
    let small = budget.saturating_add(SMALL_MARGIN);
    if small < 1 << 31 {
        return small;
    }
    let large = budget.saturating_add(LARGE_MARGIN);
    if (large as f64) * 0.06 <= LARGE_MARGIN as f64 {
        return large;
    }
    (budget as f64 / 0.94).ceil() as i64
}

unsafe extern "C" fn device_memory_usage(dev: *const SP_Device, free: *mut i64, total: *mut i64) -> TF_Bool {
    or_log("device_memory_usage", 0, || {
        let device = device(dev)?;
        let s = device.memory.stats();
        // SAFETY: TF passes two writable int64s (null checked).
        let (free, total) = unsafe { (free.as_mut(), total.as_mut()) };
        let (free, total) = free.zip(total).ok_or_else(|| null_arg("free/total"))?;
        // The budget is what TF may use (the allocator enforces it): report it with the margin TF
        // keeps back from free memory for other users of a GPU, so that TF's allocator gets it all.
        *free = with_system_margin((s.bytes_limit - s.bytes_in_use).max(0));
        *total = (*free).max(s.bytes_limit);
        Ok(1)
    })
}

// --- streams -------------------------------------------------------------------------------------

unsafe extern "C" fn create_stream(dev: *const SP_Device, out: *mut SP_Stream, status: *mut TF_Status) {
    with_status(status, || {
        // SAFETY: TF passes where to store the handle (null checked).
        let out = unsafe { out.as_mut() }.ok_or_else(|| null_arg("SP_Stream*"))?;
        *out = STREAMS.add(Box::into_raw(Box::new(Stream::new(device(dev)?.clone())))) as SP_Stream;
        Ok(())
    })
}

unsafe extern "C" fn destroy_stream(_dev: *const SP_Device, handle: SP_Stream) {
    or_log("destroy_stream", (), || {
        if !handle.is_null() {
            STREAMS.remove(handle)?;
            // SAFETY: the handle was live, so it is a `Box<Stream>` from `create_stream`, and
            // `remove` lets each handle through once.
            drop(unsafe { Box::from_raw(handle as *mut Stream) });
        }
        Ok(())
    })
}

unsafe extern "C" fn create_stream_dependency(
    _dev: *const SP_Device,
    dependent: SP_Stream,
    other: SP_Stream,
    status: *mut TF_Status,
) {
    with_status(status, || {
        stream(dependent)?.wait_for_stream(stream(other)?);
        Ok(())
    })
}

unsafe extern "C" fn get_stream_status(_dev: *const SP_Device, handle: SP_Stream, status: *mut TF_Status) {
    with_status(status, || stream(handle)?.status())
}

// --- events --------------------------------------------------------------------------------------

unsafe extern "C" fn create_event(_dev: *const SP_Device, out: *mut SP_Event, status: *mut TF_Status) {
    with_status(status, || {
        // SAFETY: TF passes where to store the handle (null checked).
        let out = unsafe { out.as_mut() }.ok_or_else(|| null_arg("SP_Event*"))?;
        *out = EVENTS.add(Box::into_raw(Box::new(Arc::new(Event::new())))) as SP_Event;
        Ok(())
    })
}

unsafe extern "C" fn destroy_event(_dev: *const SP_Device, handle: SP_Event) {
    or_log("destroy_event", (), || {
        if !handle.is_null() {
            EVENTS.remove(handle)?;
            // SAFETY: the handle was live, so it is a `Box<Arc<Event>>` from `create_event`, and
            // `remove` lets each handle through once.
            drop(unsafe { Box::from_raw(handle as *mut Arc<Event>) });
        }
        Ok(())
    })
}

unsafe extern "C" fn get_event_status(_dev: *const SP_Device, handle: SP_Event) -> SE_EventStatus {
    or_log("get_event_status", SE_EventStatus::SE_EVENT_ERROR, || {
        Ok(match event(handle)?.status() {
            EventStatus::Pending => SE_EventStatus::SE_EVENT_PENDING,
            EventStatus::Complete => SE_EventStatus::SE_EVENT_COMPLETE,
            EventStatus::Error => SE_EventStatus::SE_EVENT_ERROR,
        })
    })
}

unsafe extern "C" fn record_event(_dev: *const SP_Device, s: SP_Stream, e: SP_Event, status: *mut TF_Status) {
    with_status(status, || {
        stream(s)?.record_event(event(e)?);
        Ok(())
    })
}

unsafe extern "C" fn wait_for_event(_dev: *const SP_Device, s: SP_Stream, e: SP_Event, status: *mut TF_Status) {
    with_status(status, || {
        stream(s)?.wait_for_event(event(e)?);
        Ok(())
    })
}

unsafe extern "C" fn block_host_for_event(_dev: *const SP_Device, e: SP_Event, status: *mut TF_Status) {
    with_status(status, || event(e)?.wait())
}

unsafe extern "C" fn block_host_until_done(_dev: *const SP_Device, s: SP_Stream, status: *mut TF_Status) {
    with_status(status, || stream(s)?.block_until_done())
}

unsafe extern "C" fn synchronize_all_activity(dev: *const SP_Device, status: *mut TF_Status) {
    with_status(status, || synchronize_device(device(dev)?))
}

// --- timers --------------------------------------------------------------------------------------

unsafe extern "C" fn create_timer(dev: *const SP_Device, out: *mut SP_Timer, status: *mut TF_Status) {
    with_status(status, || {
        // SAFETY: TF passes where to store the handle (null checked).
        let out = unsafe { out.as_mut() }.ok_or_else(|| null_arg("SP_Timer*"))?;
        *out = TIMERS.add(Box::into_raw(Box::new(Timer::new(device(dev)?)))) as SP_Timer;
        Ok(())
    })
}

unsafe extern "C" fn destroy_timer(_dev: *const SP_Device, handle: SP_Timer) {
    or_log("destroy_timer", (), || {
        if !handle.is_null() {
            TIMERS.remove(handle)?;
            // SAFETY: the handle was live, so it is a `Box<Timer>` from `create_timer`, and
            // `remove` lets each handle through once.
            drop(unsafe { Box::from_raw(handle as *mut Timer) });
        }
        Ok(())
    })
}

unsafe extern "C" fn start_timer(_dev: *const SP_Device, s: SP_Stream, t: SP_Timer, status: *mut TF_Status) {
    with_status(status, || timer(t)?.start(stream(s)?))
}

unsafe extern "C" fn stop_timer(_dev: *const SP_Device, s: SP_Stream, t: SP_Timer, status: *mut TF_Status) {
    with_status(status, || timer(t)?.stop(stream(s)?))
}

pub unsafe extern "C" fn timer_nanoseconds(t: SP_Timer) -> u64 {
    or_log("timer nanoseconds", 0, || Ok(timer(t)?.nanoseconds()))
}

// --- copies and fills ----------------------------------------------------------------------------

unsafe extern "C" fn memcpy_dtoh(
    _dev: *const SP_Device,
    s: SP_Stream,
    host_dst: *mut c_void,
    device_src: *const SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    with_status(status, || stream(s)?.memcpy_dtoh(address(device_src)?, size, host_sink(host_dst, size)?))
}

unsafe extern "C" fn memcpy_htod(
    _dev: *const SP_Device,
    s: SP_Stream,
    device_dst: *mut SP_DeviceMemoryBase,
    host_src: *const c_void,
    size: u64,
    status: *mut TF_Status,
) {
    with_status(status, || stream(s)?.memcpy_htod(address(device_dst)?, host_slice(host_src, size)?))
}

unsafe extern "C" fn memcpy_dtod(
    _dev: *const SP_Device,
    s: SP_Stream,
    device_dst: *mut SP_DeviceMemoryBase,
    device_src: *const SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    with_status(status, || stream(s)?.memcpy_dtod(address(device_dst)?, address(device_src)?, size))
}

/// Runs `op` on a private stream of `dev` and waits for it.
fn synchronously(dev: *const SP_Device, op: impl FnOnce(&Stream) -> Result<()>) -> Result<()> {
    let stream = Stream::new(device(dev)?.clone());
    op(&stream)?;
    stream.block_until_done()
}

unsafe extern "C" fn sync_memcpy_dtoh(
    dev: *const SP_Device,
    host_dst: *mut c_void,
    device_src: *const SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    with_status(status, || {
        let (src, sink) = (address(device_src)?, host_sink(host_dst, size)?);
        synchronously(dev, |s| s.memcpy_dtoh(src, size, sink))
    })
}

unsafe extern "C" fn sync_memcpy_htod(
    dev: *const SP_Device,
    device_dst: *mut SP_DeviceMemoryBase,
    host_src: *const c_void,
    size: u64,
    status: *mut TF_Status,
) {
    with_status(status, || {
        let dst = address(device_dst)?;
        let data = host_slice(host_src, size)?;
        synchronously(dev, |s| s.memcpy_htod(dst, data))
    })
}

unsafe extern "C" fn sync_memcpy_dtod(
    dev: *const SP_Device,
    device_dst: *mut SP_DeviceMemoryBase,
    device_src: *const SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    with_status(status, || {
        let (dst, src) = (address(device_dst)?, address(device_src)?);
        synchronously(dev, |s| s.memcpy_dtod(dst, src, size))
    })
}

unsafe extern "C" fn mem_zero(
    _dev: *const SP_Device,
    s: SP_Stream,
    location: *mut SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    with_status(status, || stream(s)?.fill(address(location)?, size, 0))
}

unsafe extern "C" fn memset(
    _dev: *const SP_Device,
    s: SP_Stream,
    location: *mut SP_DeviceMemoryBase,
    pattern: u8,
    size: u64,
    status: *mut TF_Status,
) {
    with_status(status, || stream(s)?.fill(address(location)?, size, u32::from(pattern) * 0x0101_0101))
}

unsafe extern "C" fn memset32(
    _dev: *const SP_Device,
    s: SP_Stream,
    location: *mut SP_DeviceMemoryBase,
    pattern: u32,
    size: u64,
    status: *mut TF_Status,
) {
    with_status(status, || stream(s)?.fill(address(location)?, size, pattern))
}

/// A C callback and its argument, run on the poller thread.
struct CCallback {
    callback: unsafe extern "C" fn(*mut c_void, *mut TF_Status),
    arg: usize,
}

impl CCallback {
    fn run(self) -> Result<()> {
        let status = OwnedStatus::new();
        // SAFETY: TF's callback and argument, called exactly once as `host_callback` promises.
        unsafe { (self.callback)(self.arg as *mut c_void, status.as_ptr()) };
        status.result()
    }
}

unsafe extern "C" fn host_callback(
    _dev: *const SP_Device,
    s: SP_Stream,
    callback_fn: SE_StatusCallbackFn,
    callback_arg: *mut c_void,
) -> TF_Bool {
    or_log("host_callback", 0, || {
        let callback = callback_fn.ok_or_else(|| null_arg("host callback"))?;
        let job = CCallback { callback, arg: callback_arg as usize };
        stream(s)?.host_callback(Box::new(move || job.run()));
        Ok(1)
    })
}
