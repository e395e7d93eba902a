//! Streams: ordered command encoders on the device's one queue.
//!
//! Kernels, copies and fills are encoded into the stream's open encoder, so they keep program order
//! without `Queue::write_buffer` (which would land before the next submit, out of order). Small
//! launches may instead join the encoder's batch (`Stream::batch`), one dispatch that is encoded
//! before the next command of any other kind and before every submit. Host data
//! goes through staging buffers copied inside the encoder. The encoder is submitted at sync points:
//! events, readbacks, host callbacks, blocking waits.
//!
//! Host-side work (readback delivery, host callbacks, event completion, waits on other streams) sits
//! in the stream's task queue, which the poller runs in order. While that queue is non-empty, new
//! submissions queue behind it too, so GPU work encoded after a host callback or a `wait_for_event`
//! starts only once they are done: program order holds for every kind of operation.
//!
//! Across streams, a submission goes to the queue after all work that other streams encoded before
//! it. Only one stream has an open encoder at a time: a stream that takes a command after another
//! first submits the other streams' encoders (`DeviceCore::encoding_stream`), and every command
//! buffer waits for those that any stream still holds behind host tasks. TF frees a tensor as soon
//! as the op that last reads it is *enqueued*, and the allocator hands the memory out again at
//! once; TF orders that reuse after the read on the same stream, but not always across streams (an
//! eager `tf.function` uploads its constant outputs, and a fresh function its `Const` kernels'
//! tensors, on the host-to-device stream without waiting for the compute stream). Without this rule
//! such an upload could be submitted before the compute stream's pending kernels that still read
//! the memory.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{from_panic, Error, Result};

use super::buffer_pool::size_class;
use super::device::{Device, DeviceCore};
use super::encoder::{Arena, Batch, BatchKind, Encoder, SlotWindow};
use super::event::{Event, EventStatus};
use super::pipeline::{dispatch_batch, Pipeline};
use super::trace::{self, ActivityKind};
use super::transfer::{encode_copy, encode_fill};

/// Operations encoded before the stream submits without waiting for a sync point. Submitting in
/// batches lets the device start while the host encodes the rest, and bounds what one encoder holds
/// alive (wgpu's per-dispatch usage scopes grow with the buffers a pending encoder references).
const SUBMIT_AFTER_OPS: u32 = 64;

pub type HostFn = Box<dyn FnOnce() -> Result<()> + Send>;
type AfterSubmit = Box<dyn FnOnce() + Send>;
/// Receives the bytes of a device-to-host copy, on the poller thread.
pub type HostSink = Box<dyn FnOnce(&[u8]) + Send>;

enum Task {
    /// Command buffer held back behind earlier host tasks or other streams' command buffers
    /// (`waits`); `after` runs right after the submit.
    Submit { commands: wgpu::CommandBuffer, after: Vec<AfterSubmit>, waits: SubmitAfter },
    /// Runs once all GPU work submitted before it is complete and `gate` (if any) is set.
    Host { gate: Option<Arc<AtomicBool>>, run: HostFn },
    /// Holds everything behind it until another stream's event completes.
    WaitEvent(Arc<Event>),
}

#[derive(Default)]
struct StreamState {
    encoder: Option<Encoder>,
    tasks: VecDeque<Task>,
    host_task_running: bool,
    last_submitted_seq: u64,
    /// How many command buffers this stream has finished (submitted or queued).
    finished_buffers: u64,
}

/// The part of a stream the poller sees.
pub struct StreamCore {
    id: u64,
    state: Mutex<StreamState>,
    error: Mutex<Option<Error>>,
    /// How many of this stream's command buffers have been submitted (in the order they were
    /// finished: `StreamState::finished_buffers` counts those).
    submitted_buffers: AtomicU64,
}

/// A command buffer of another stream that must be submitted first: (stream, its number).
type SubmitAfter = Vec<(Weak<StreamCore>, u64)>;

fn all_submitted(waits: &SubmitAfter) -> bool {
    waits
        .iter()
        .all(|(stream, number)| stream.upgrade().is_none_or(|s| s.submitted_buffers.load(Ordering::SeqCst) >= *number))
}

pub(super) struct Step {
    pub progressed: bool,
    pub pending: bool,
}

impl StreamCore {
    fn lock(&self) -> MutexGuard<'_, StreamState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_error(&self, error: Error) {
        log::error!("tensorflow-wgpu: stream {}: {error}", self.id);
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(error);
    }

    /// Runs the queued tasks that are ready, in order. Called by the poller thread only.
    pub(super) fn advance(&self, core: &DeviceCore) -> Step {
        let mut progressed = false;
        loop {
            let mut state = self.lock();
            let ready = match state.tasks.front() {
                None => return Step { progressed, pending: false },
                Some(Task::Submit { waits, .. }) => all_submitted(waits),
                Some(Task::Host { gate, .. }) => {
                    core.completed_seq() >= state.last_submitted_seq
                        && gate.as_ref().is_none_or(|g| g.load(Ordering::SeqCst))
                }
                Some(Task::WaitEvent(event)) => event.status() != EventStatus::Pending,
            };
            if !ready {
                return Step { progressed, pending: true };
            }
            progressed = true;
            match state.tasks.pop_front() {
                Some(Task::Submit { commands, after, .. }) => {
                    state.last_submitted_seq = core.submit(commands);
                    self.submitted_buffers.fetch_add(1, Ordering::SeqCst);
                    drop(state);
                    after.into_iter().for_each(|f| f());
                }
                Some(Task::Host { run, .. }) => {
                    state.host_task_running = true;
                    drop(state);
                    let outcome =
                        std::panic::catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|p| Err(from_panic(p)));
                    if let Err(e) = outcome {
                        self.set_error(e);
                    }
                    self.lock().host_task_running = false;
                }
                Some(Task::WaitEvent(event)) if event.status() == EventStatus::Error => {
                    self.set_error(Error::internal("a stream this stream waits on failed"));
                }
                Some(Task::WaitEvent(_)) => {}
                None => {}
            }
        }
    }

    /// Runs `f` on the open encoder (a new one where none is open), and submits once the encoder
    /// holds `SUBMIT_AFTER_OPS` operations.
    fn with_encoder<T>(&self, core: &DeviceCore, f: impl FnOnce(&mut Encoder) -> Result<T>) -> Result<T> {
        let mut encoding = core.encoding_stream();
        if *encoding != self.id {
            // The other streams' open encoders hold older commands: they go first (module doc).
            self.submit_other_streams(core);
            *encoding = self.id;
        }
        let mut state = self.lock();
        let encoder = state.encoder.get_or_insert_with(|| Encoder::for_stream(core, self.id));
        let result = f(encoder);
        let full = encoder.count_op() >= SUBMIT_AFTER_OPS;
        drop(state);
        drop(encoding);
        if full {
            self.flush_with(core, Vec::new());
        }
        result
    }

    fn encode<T>(&self, core: &DeviceCore, f: impl FnOnce(&DeviceCore, &mut Encoder) -> Result<T>) -> Result<T> {
        self.with_encoder(core, |encoder| {
            // Batched launches come before this command in program order.
            dispatch_batch(core, encoder)?;
            f(core, encoder)
        })
    }

    /// Adds a launch to the open encoder's batch of `kind` (a new batch where the open one is of
    /// another kind or full). `record` gets the slots of `buffers`.
    fn batch(
        &self,
        core: &DeviceCore,
        kind: &'static BatchKind,
        pipeline: &Arc<Pipeline>,
        buffers: &[SlotWindow],
        record: impl FnOnce(&[u32]) -> Vec<u8>,
    ) -> Result<()> {
        self.with_encoder(core, |encoder| {
            let same_kind = |b: &Batch| std::ptr::eq(b.kind, kind) && Arc::ptr_eq(&b.pipeline, pipeline);
            let mut slots = encoder.batch.as_ref().filter(|b| same_kind(b)).and_then(|b| b.slots_for(buffers));
            if slots.is_none() {
                dispatch_batch(core, encoder)?;
                let batch =
                    Batch { kind, pipeline: pipeline.clone(), buffers: Vec::new(), records: Vec::new(), count: 0 };
                slots = batch.slots_for(buffers);
                encoder.batch = Some(batch);
            }
            let (Some(slots), Some(batch)) = (slots, encoder.batch.as_mut()) else {
                return Err(Error::internal(format!("{}: a launch with more buffers than slots", kind.label)));
            };
            batch.push(buffers, &slots, record(&slots));
            Ok(())
        })
    }

    /// Writes `data` with `Queue::write_buffer` when nothing of this stream waits to be submitted,
    /// and submits right after, so the write keeps its place in the stream's order. (A queued write
    /// lands before the *next* submit of any stream, so with work of ours still unsubmitted it would
    /// jump ahead of it.) Returns false, writing nothing, when the stream is not idle.
    fn write_when_idle(&self, core: &DeviceCore, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) -> Result<bool> {
        // Held while writing: no stream may encode a command between the check and the write.
        let _encoding = core.encoding_stream();
        if !self.submit_other_streams(core).is_empty() {
            return Ok(false);
        }
        let mut state = self.lock();
        if state.encoder.is_some() || !state.tasks.is_empty() || state.host_task_running {
            return Ok(false);
        }
        let ((), error) = core.capture_errors(|| core.queue.write_buffer(buffer, offset, data));
        if let Some(e) = error {
            return Err(Error::internal(format!("host-to-device write failed: {e}")));
        }
        let empty = core.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("h2d write") });
        state.last_submitted_seq = core.submit(empty.finish());
        Ok(true)
    }

    /// Submits the open encoder now, or queues the submit behind pending host tasks, in either case
    /// after the work other streams have encoded so far (see the module's doc).
    fn flush_with(&self, core: &DeviceCore, after: Vec<AfterSubmit>) {
        if after.is_empty() && self.lock().encoder.is_none() {
            return;
        }
        let waits = self.submit_other_streams(core);
        self.flush_own(core, after, waits);
    }

    /// Submits (or queues) the open encoders of the device's other streams, each after the command
    /// buffers that any other stream, this one included, holds back behind host tasks; returns the
    /// other streams' buffers still held back.
    fn submit_other_streams(&self, core: &DeviceCore) -> SubmitAfter {
        let streams = core.live_streams();
        let held = |except: u64| -> SubmitAfter {
            streams
                .iter()
                .filter(|s| s.id != except)
                .filter_map(|s| s.last_held_buffer().map(|number| (Arc::downgrade(s), number)))
                .collect()
        };
        for other in streams.iter().filter(|s| s.id != self.id) {
            other.flush_own(core, Vec::new(), held(other.id));
        }
        held(self.id)
    }

    /// The number of this stream's last finished command buffer, where it is not submitted yet.
    fn last_held_buffer(&self) -> Option<u64> {
        let finished = self.lock().finished_buffers;
        (finished > self.submitted_buffers.load(Ordering::SeqCst)).then_some(finished)
    }

    /// Submits this stream's open encoder once `waits` are submitted, or queues it.
    fn flush_own(&self, core: &DeviceCore, mut after: Vec<AfterSubmit>, waits: SubmitAfter) {
        let mut state = self.lock();
        let mut encoder = match state.encoder.take() {
            Some(encoder) => encoder,
            None if after.is_empty() => return,
            None => Encoder::for_stream(core, self.id),
        };
        if let Err(e) = dispatch_batch(core, &mut encoder) {
            self.set_error(e);
        }
        if let Some(recorded) = encoder.take_trace(core) {
            after.push(recorded.after_submit(core));
        }
        let commands = encoder.finish();
        state.finished_buffers += 1;
        log::trace!("stream {} flush (tasks {}, waits {})", self.id, state.tasks.len(), waits.len());
        if state.tasks.is_empty() && !state.host_task_running && all_submitted(&waits) {
            state.last_submitted_seq = core.submit(commands);
            self.submitted_buffers.fetch_add(1, Ordering::SeqCst);
            drop(state);
            after.into_iter().for_each(|f| f());
        } else {
            state.tasks.push_back(Task::Submit { commands, after, waits });
            drop(state);
            core.wake_poller();
        }
    }

    fn push_task(&self, core: &DeviceCore, task: Task) {
        self.lock().tasks.push_back(task);
        core.wake_poller();
    }

    fn enqueue_host(&self, core: &DeviceCore, gate: Option<Arc<AtomicBool>>, run: HostFn) {
        self.flush_with(core, Vec::new());
        self.push_task(core, Task::Host { gate, run });
    }

    fn record_event(&self, core: &DeviceCore, event: &Arc<Event>) {
        let generation = event.arm();
        let event = event.clone();
        self.enqueue_host(
            core,
            None,
            Box::new(move || {
                event.finish(generation, EventStatus::Complete);
                Ok(())
            }),
        );
    }

    fn wait_for_event(&self, core: &DeviceCore, event: &Arc<Event>) {
        if event.status() == EventStatus::Pending {
            self.flush_with(core, Vec::new());
            self.push_task(core, Task::WaitEvent(event.clone()));
        }
    }

    fn status(&self, core: &DeviceCore) -> Result<()> {
        if let Some(e) = self.error.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Err(e);
        }
        core.device_error().map_or(Ok(()), Err)
    }

    fn block_until_done(&self, core: &DeviceCore) -> Result<()> {
        let done = Arc::new(Event::new());
        self.record_event(core, &done);
        done.wait()?;
        self.status(core)
    }
}

/// A stream handed to TensorFlow. It keeps its device (and so the poller) alive.
pub struct Stream {
    device: Arc<Device>,
    core: Arc<StreamCore>,
}

static NEXT_STREAM_ID: AtomicU64 = AtomicU64::new(1);

impl Stream {
    pub fn new(device: Arc<Device>) -> Stream {
        let core = Arc::new(StreamCore {
            id: NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(StreamState::default()),
            error: Mutex::new(None),
            submitted_buffers: AtomicU64::new(0),
        });
        device.register_stream(&core);
        Stream { device, core }
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Encodes work into the stream's open encoder, in program order.
    pub fn encode<T>(&self, f: impl FnOnce(&DeviceCore, &mut Encoder) -> Result<T>) -> Result<T> {
        self.core.encode(&self.device, f)
    }

    /// Adds a small launch to the stream's batch of `kind` launches, which runs as one dispatch
    /// before the next command of any other kind, or at submit. `record(slots)` is the launch's
    /// record, given the slot of each of `buffers`.
    pub fn batch(
        &self,
        kind: &'static BatchKind,
        pipeline: &Arc<Pipeline>,
        buffers: &[SlotWindow],
        record: impl FnOnce(&[u32]) -> Vec<u8>,
    ) -> Result<()> {
        self.core.batch(&self.device, kind, pipeline, buffers, record)
    }

    /// Submits what has been encoded so far (or queues it behind pending host tasks).
    pub fn flush(&self) {
        self.core.flush_with(&self.device, Vec::new());
    }

    pub(super) fn flush_with(&self, after: Vec<Box<dyn FnOnce() + Send>>) {
        self.core.flush_with(&self.device, after);
    }

    /// Queues `run` to execute on the poller once everything before it on this stream is done.
    pub fn enqueue_host(&self, gate: Option<Arc<AtomicBool>>, run: HostFn) {
        self.core.enqueue_host(&self.device, gate, run);
    }

    /// Host-to-device copy. The host bytes are copied into a staging buffer before this returns.
    pub fn memcpy_htod(&self, dst: u64, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let len = data.len() as u64;
        log::trace!("stream {} htod {dst:#x} {len}", self.core.id);
        let target = self.device.memory.resolve(dst, len)?;
        // The direct route skips a staging buffer of our own (created zeroed, then copied from).
        let aligned = len.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            && target.offset.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        // (Not while profiling: the profiler times commands of the encoder.)
        if aligned
            && !trace::active()
            && self.core.write_when_idle(&self.device, target.buffer(), target.offset, data)?
        {
            return Ok(());
        }
        // Staged in the encoder's upload arena, copied in encoder order.
        self.encode(|core, encoder| {
            encoder.traced(core, ActivityKind::MemcpyHtoD, len, |encoder| {
                let staged = encoder.upload(core, Arena::Staging, data)?;
                encode_copy(core, encoder, &staged.buffer, staged.offset, target.buffer(), target.offset, len)
            })
        })
    }

    /// Device-to-host copy. `sink` receives the bytes on the poller thread, before any event recorded
    /// later on this stream completes.
    pub fn memcpy_dtoh(&self, src: u64, len: u64, sink: HostSink) -> Result<()> {
        if len == 0 {
            sink(&[]);
            return Ok(());
        }
        log::trace!("stream {} dtoh {src:#x} {len}", self.core.id);
        let source = self.device.memory.resolve(src, len)?;
        let start = source.offset / 4 * 4;
        let end = (source.offset + len).div_ceil(4) * 4;
        let class = size_class(end - start, self.device.limits.max_buffer_size);
        let pooled = self.device.readbacks.lock().unwrap_or_else(|e| e.into_inner()).take(class);
        let readback = pooled.unwrap_or_else(|| {
            self.device.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("d2h readback"),
                size: class,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        self.encode(|core, encoder| {
            encoder.traced(core, ActivityKind::MemcpyDtoH, len, |encoder| {
                encoder.copy_buffer_to_buffer(source.buffer(), start, &readback, 0, end - start);
                Ok(())
            })
        })?;
        let mapped = Arc::new(AtomicBool::new(false));
        let map_result = Arc::new(Mutex::new(None));
        let map_after_submit: Box<dyn FnOnce() + Send> = {
            let (readback, mapped, map_result) = (readback.clone(), mapped.clone(), map_result.clone());
            let wake = self.device.poller_wake();
            Box::new(move || {
                readback.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                    *map_result.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                    mapped.store(true, Ordering::SeqCst);
                    wake.notify();
                })
            })
        };
        self.flush_with(vec![map_after_submit]);
        let skew = (source.offset - start) as usize;
        let readbacks = self.device.readbacks.clone();
        self.enqueue_host(
            Some(mapped),
            Box::new(move || {
                if let Some(Err(e)) = map_result.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    return Err(Error::internal(format!("device-to-host readback failed: {e}")));
                }
                {
                    let view = readback
                        .slice(..)
                        .get_mapped_range()
                        .map_err(|e| Error::internal(format!("cannot read back: {e}")))?;
                    sink(&view[skew..skew + len as usize]);
                }
                readback.unmap();
                readbacks.lock().unwrap_or_else(|e| e.into_inner()).put(readback);
                Ok(())
            }),
        );
        Ok(())
    }

    pub fn memcpy_dtod(&self, dst: u64, src: u64, len: u64) -> Result<()> {
        log::trace!("stream {} dtod {dst:#x} <- {src:#x} {len}", self.core.id);
        if len == 0 {
            return Ok(());
        }
        let source = self.device.memory.resolve(src, len)?;
        let target = self.device.memory.resolve(dst, len)?;
        self.encode(|core, encoder| {
            encode_copy(core, encoder, source.buffer(), source.offset, target.buffer(), target.offset, len)
        })
    }

    /// Fills `len` bytes at `dst` with the little-endian bytes of `pattern`, repeated.
    pub fn fill(&self, dst: u64, len: u64, pattern: u32) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let target = self.device.memory.resolve(dst, len)?;
        self.encode(|core, encoder| encode_fill(core, encoder, target.buffer(), target.offset, len, pattern))
    }

    pub fn record_event(&self, event: &Arc<Event>) {
        self.core.record_event(&self.device, event);
    }

    /// Makes everything enqueued on this stream from now on wait for `event`.
    pub fn wait_for_event(&self, event: &Arc<Event>) {
        self.core.wait_for_event(&self.device, event);
    }

    /// Makes everything enqueued on this stream from now on wait for all work enqueued on `other`.
    pub fn wait_for_stream(&self, other: &Stream) {
        let marker = Arc::new(Event::new());
        other.record_event(&marker);
        self.wait_for_event(&marker);
    }

    /// Runs `callback` on the poller thread in stream order; an error it returns becomes the
    /// stream's status.
    pub fn host_callback(&self, callback: HostFn) {
        self.enqueue_host(None, callback);
    }

    /// `len` bytes at device address `src`, read back now: what the stream enqueued before them is
    /// done when this returns. For the ops whose output shape depends on device data (TF-GPU
    /// reads such a count back the same way), so a stall, not a pattern for hot paths.
    pub fn read_now(&self, src: u64, len: u64) -> Result<Vec<u8>> {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let sink_bytes = bytes.clone();
        self.memcpy_dtoh(
            src,
            len,
            Box::new(move |view| *sink_bytes.lock().unwrap_or_else(|e| e.into_inner()) = view.to_vec()),
        )?;
        self.block_until_done()?;
        let read = std::mem::take(&mut *bytes.lock().unwrap_or_else(|e| e.into_inner()));
        if read.len() as u64 != len {
            return Err(Error::internal(format!("read back {} of {len} bytes", read.len())));
        }
        Ok(read)
    }

    /// Blocks until everything enqueued so far has completed; returns the stream status.
    pub fn block_until_done(&self) -> Result<()> {
        self.core.block_until_done(&self.device)
    }

    /// The first error of this stream's host tasks, else the device's first error.
    pub fn status(&self) -> Result<()> {
        self.core.status(&self.device)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // TF destroys streams after synchronising; finishing queued work keeps callbacks from being lost.
        if let Err(e) = self.core.block_until_done(&self.device) {
            log::debug!("tensorflow-wgpu: stream {} closed with error: {e}", self.core.id);
        }
    }
}

/// Submits every live stream's open encoder (work a profiling session recorded must reach the
/// queue to be timed).
pub fn flush_device(device: &Device) {
    for stream in device.live_streams() {
        stream.flush_with(device, Vec::new());
    }
}

/// Waits for every live stream of `device`. Every submission comes from a stream, so this covers
/// the whole queue. (Only the poller thread calls `Device::poll`, and only with untimed waits: see
/// `poller::step` for the wgpu-core 30 assertion that a timed wait can trip.)
pub fn synchronize_device(device: &Device) -> Result<()> {
    let mut first_error = None;
    for stream in device.live_streams() {
        if let Err(e) = stream.block_until_done(device) {
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => device.device_error().map_or(Ok(()), Err),
    }
}
