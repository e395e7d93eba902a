//! Device activity recorded for the profiler plugin (`plugin::profiler`): every kernel dispatch,
//! copy and fill encoded while a profiling session is active, and every submit.
//!
//! With `TIMESTAMP_QUERY`, each recorded command is bracketed by GPU timestamps: a dispatch gets a
//! compute pass of its own with beginning and end writes, a copy or fill empty passes before and
//! after it (the only timestamps `TIMESTAMP_QUERY` alone allows outside passes). The encoder's
//! queries are resolved into a readback buffer at submit and read when the profile is collected.
//! GPU ticks become host time (nanoseconds since the epoch, TF's profiler clock) with one offset
//! per device: the largest that puts no command's end after the host saw its submission complete.
//! Without timestamps (or with `TF_WGPU_PROFILER_CLOCK=host`), a command spans from the host time it
//! was encoded to the host time its submission completed.
//!
//! Profiling changes how work is encoded, to keep each event one command: small launches are not
//! batched, each dispatch has its own pass, and host-to-device writes go through the encoder.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::device::DeviceCore;

/// Environment variable: `host` times events by the host clock even where GPU timestamps exist.
pub const ENV_PROFILER_CLOCK: &str = "TF_WGPU_PROFILER_CLOCK";

/// Queries per query set (two per command).
const QUERIES_PER_SET: u32 = 512;

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Kernel dispatches encoded since the process started, profiled or not (`dispatch_count`).
static DISPATCHES: AtomicU64 = AtomicU64::new(0);
static SUBMISSIONS: Mutex<Vec<Arc<SubmissionTrace>>> = Mutex::new(Vec::new());

thread_local! {
    /// The TF op whose kernel is running on this thread: "node name:op type".
    static CURRENT_OP: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// Whether a profiling session is recording.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Host time in nanoseconds since the Unix epoch (the clock of TF's profiler events).
pub fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Starts recording, dropping what an earlier session left uncollected.
pub fn start() {
    lock_submissions().clear();
    ACTIVE.store(true, Ordering::SeqCst);
}

/// Stops recording; work already recorded is still collected.
pub fn stop() {
    ACTIVE.store(false, Ordering::SeqCst);
}

/// How many kernel dispatches have been encoded so far, in this process.
pub fn dispatch_count() -> u64 {
    DISPATCHES.load(Ordering::Relaxed)
}

pub(super) fn count_dispatch() {
    DISPATCHES.fetch_add(1, Ordering::Relaxed);
}

fn lock_submissions() -> std::sync::MutexGuard<'static, Vec<Arc<SubmissionTrace>>> {
    SUBMISSIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Names the TF op running on this thread until dropped, while profiling.
pub struct OpScope {
    previous: Option<Arc<str>>,
}

impl OpScope {
    pub fn enter(tf_op: &Arc<str>) -> Option<OpScope> {
        if !active() {
            return None;
        }
        let previous = CURRENT_OP.with(|op| op.borrow_mut().replace(tf_op.clone()));
        Some(OpScope { previous })
    }
}

impl Drop for OpScope {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT_OP.with(|op| *op.borrow_mut() = previous);
    }
}

fn current_op() -> Option<Arc<str>> {
    CURRENT_OP.with(|op| op.borrow().clone())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActivityKind {
    Kernel,
    MemcpyHtoD,
    MemcpyDtoH,
    MemcpyDtoD,
    Memset,
}

impl ActivityKind {
    /// The event name TF's GPU tracer gives copies and fills (kernels are named by their launch).
    pub fn event_name(self) -> Option<&'static str> {
        match self {
            ActivityKind::Kernel => None,
            ActivityKind::MemcpyHtoD => Some("MemcpyH2D"),
            ActivityKind::MemcpyDtoH => Some("MemcpyD2H"),
            ActivityKind::MemcpyDtoD => Some("MemcpyD2D"),
            ActivityKind::Memset => Some("Memset"),
        }
    }
}

/// One recorded command.
#[derive(Clone, Debug)]
pub struct Activity {
    pub kind: ActivityKind,
    /// The launch label of a kernel, the event name of a copy.
    pub name: String,
    /// "node name:op type" of the TF op that encoded it, if a kernel of ours did.
    pub tf_op: Option<Arc<str>>,
    pub bytes: u64,
    /// The dispatch grid of a kernel.
    pub grid: [u32; 3],
    pub stream: u64,
    pub encode_ns: u64,
    /// Query set and first of its two queries, where timed by GPU timestamps.
    pub queries: Option<(usize, u32)>,
}

/// What one encoder recorded while profiling.
pub struct EncoderTrace {
    stream: u64,
    timestamps: bool,
    activities: Vec<Activity>,
    query_sets: Vec<wgpu::QuerySet>,
    /// Queries used in the last set.
    used: u32,
}

/// Where a recorded command writes its timestamps.
pub struct Stamps {
    pub query_set: wgpu::QuerySet,
    pub begin: u32,
    pub end: u32,
}

impl EncoderTrace {
    pub fn new(core: &DeviceCore, stream: u64) -> EncoderTrace {
        let host_clock = std::env::var(ENV_PROFILER_CLOCK).is_ok_and(|v| v.trim() == "host");
        EncoderTrace {
            stream,
            timestamps: core.features.contains(wgpu::Features::TIMESTAMP_QUERY) && !host_clock,
            activities: Vec::new(),
            query_sets: Vec::new(),
            used: 0,
        }
    }

    /// Records a command; returns where its timestamps go, if it is timed on the GPU.
    pub fn record(
        &mut self,
        core: &DeviceCore,
        kind: ActivityKind,
        name: &str,
        bytes: u64,
        grid: [u32; 3],
    ) -> Option<Stamps> {
        let queries = self.timestamps.then(|| {
            if self.query_sets.is_empty() || self.used + 2 > QUERIES_PER_SET {
                self.query_sets.push(core.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("profiler timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: QUERIES_PER_SET,
                }));
                self.used = 0;
            }
            self.used += 2;
            (self.query_sets.len() - 1, self.used - 2)
        });
        self.activities.push(Activity {
            kind,
            name: name.to_string(),
            tf_op: current_op(),
            bytes,
            grid,
            stream: self.stream,
            encode_ns: now_ns(),
            queries,
        });
        let (set, first) = queries?;
        Some(Stamps { query_set: self.query_sets[set].clone(), begin: first, end: first + 1 })
    }

    /// Encodes the resolve of every timestamp into a readback buffer (before the encoder finishes)
    /// and returns what the submit must complete.
    pub fn finish(self, core: &DeviceCore, commands: &mut wgpu::CommandEncoder) -> SubmissionTrace {
        let words = self.query_sets.len() as u64 * u64::from(QUERIES_PER_SET);
        let readback = (words > 0).then(|| {
            let size = words * 8;
            let resolve = core.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("profiler timestamp resolve"),
                size,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let readback = core.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("profiler timestamp readback"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let last = self.query_sets.len() - 1;
            for (i, set) in self.query_sets.iter().enumerate() {
                let count = if i == last { self.used } else { QUERIES_PER_SET };
                let offset = i as u64 * u64::from(QUERIES_PER_SET) * 8;
                commands.resolve_query_set(set, 0..count, &resolve, offset);
            }
            commands.copy_buffer_to_buffer(&resolve, 0, &readback, 0, size);
            readback
        });
        SubmissionTrace {
            ordinal: core.ordinal,
            device: core.device.clone(),
            stream: self.stream,
            period_ns: f64::from(core.queue.get_timestamp_period()),
            activities: self.activities,
            readback,
            marks: Mutex::new(Marks::default()),
        }
    }
}

#[derive(Default)]
struct Marks {
    submit_ns: u64,
    complete_ns: Option<u64>,
    /// The readback's map result: Some(true) once readable.
    mapped: Option<bool>,
}

/// One submitted command buffer's recorded commands.
pub struct SubmissionTrace {
    ordinal: usize,
    device: wgpu::Device,
    stream: u64,
    period_ns: f64,
    activities: Vec<Activity>,
    readback: Option<wgpu::Buffer>,
    marks: Mutex<Marks>,
}

impl SubmissionTrace {
    fn marks(&self) -> std::sync::MutexGuard<'_, Marks> {
        self.marks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What runs right after the submit: notes its time, asks for the readback and the completion
    /// time, and keeps the trace for collection.
    pub fn after_submit(self, core: &DeviceCore) -> Box<dyn FnOnce() + Send> {
        let queue = core.queue.clone();
        let wake = core.poller_wake();
        Box::new(move || {
            let trace = Arc::new(self);
            trace.marks().submit_ns = now_ns();
            if let Some(readback) = &trace.readback {
                let (mapped, wake) = (trace.clone(), wake.clone());
                readback.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                    mapped.marks().mapped = Some(r.is_ok());
                    wake.notify();
                });
            }
            let done = trace.clone();
            queue.on_submitted_work_done(move || {
                done.marks().complete_ns = Some(now_ns());
                wake.notify();
            });
            lock_submissions().push(trace);
        })
    }

    fn ready(&self) -> bool {
        let marks = self.marks();
        marks.complete_ns.is_some() && (self.readback.is_none() || marks.mapped.is_some())
    }
}

/// Each command's GPU (begin, end), in nanoseconds of the GPU's clock.
type GpuSpans = Vec<(u64, u64)>;

/// A recorded command placed on the host clock.
#[derive(Clone, Debug)]
pub struct DeviceEvent {
    pub activity: Activity,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A submitted command buffer, from submit to completion.
#[derive(Clone, Debug)]
pub struct SubmitSpan {
    pub stream: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub commands: usize,
}

/// One device's collected activity.
#[derive(Default, Debug)]
pub struct DeviceTrace {
    pub ordinal: usize,
    pub events: Vec<DeviceEvent>,
    pub submits: Vec<SubmitSpan>,
    /// Whether the events carry GPU timestamps (else host encode and completion times).
    pub gpu_timestamps: bool,
}

/// Takes everything recorded since `start`, waiting up to `timeout` for submitted work to finish
/// (work that has not by then is left out). Devices by ordinal.
pub fn collect(timeout: Duration) -> Vec<DeviceTrace> {
    let submissions = std::mem::take(&mut *lock_submissions());
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline && !submissions.iter().all(|s| s.ready()) {
        // A callback registered after its submission retired waits for the device's next poll, and
        // the poller polls only while work is in flight.
        for submission in submissions.iter().filter(|s| !s.ready()) {
            let _ = submission.device.poll(wgpu::PollType::Poll);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut devices: Vec<DeviceTrace> = Vec::new();
    // Per submission: its commands' GPU (begin, end) in nanoseconds, where it has them.
    let timed: Vec<(Arc<SubmissionTrace>, Option<GpuSpans>)> = submissions
        .into_iter()
        .filter(|s| s.ready())
        .map(|s| {
            let spans = s.gpu_spans();
            (s, spans)
        })
        .collect();
    // Per device: the offset that takes GPU nanoseconds to host nanoseconds (see the module doc),
    // in integers: host times near 2^60 ns have a 256 ns step as f64.
    let mut offsets: Vec<(usize, i128)> = Vec::new();
    for (submission, spans) in &timed {
        let Some(spans) = spans else { continue };
        let Some(end) = spans.iter().map(|s| s.1).max() else { continue };
        let complete = i128::from(submission.marks().complete_ns.unwrap_or(0));
        let offset = complete - i128::from(end);
        match offsets.iter_mut().find(|(o, _)| *o == submission.ordinal) {
            Some((_, least)) => *least = (*least).min(offset),
            None => offsets.push((submission.ordinal, offset)),
        }
    }
    for (submission, spans) in timed {
        let device = match devices.iter().position(|d| d.ordinal == submission.ordinal) {
            Some(at) => &mut devices[at],
            None => {
                devices.push(DeviceTrace { ordinal: submission.ordinal, ..Default::default() });
                devices.last_mut().expect("just pushed")
            }
        };
        let (submit_ns, complete_ns) = {
            let marks = submission.marks();
            (marks.submit_ns, marks.complete_ns.unwrap_or(marks.submit_ns))
        };
        device.submits.push(SubmitSpan {
            stream: submission.stream,
            start_ns: submit_ns,
            end_ns: complete_ns.max(submit_ns),
            commands: submission.activities.len(),
        });
        let offset = offsets.iter().find(|(o, _)| *o == submission.ordinal).map(|(_, offset)| *offset);
        for (i, activity) in submission.activities.iter().enumerate() {
            let (start_ns, end_ns) = match (&spans, offset, activity.queries) {
                (Some(spans), Some(offset), Some(_)) => {
                    device.gpu_timestamps = true;
                    let (begin, end) = spans[i];
                    let host = |gpu: u64| u64::try_from((i128::from(gpu) + offset).max(0)).unwrap_or(0);
                    (host(begin), host(end))
                }
                _ => (activity.encode_ns, complete_ns),
            };
            device.events.push(DeviceEvent { activity: activity.clone(), start_ns, end_ns: end_ns.max(start_ns) });
        }
    }
    devices.sort_by_key(|d| d.ordinal);
    devices
}

impl SubmissionTrace {
    /// Each command's GPU (begin, end) in nanoseconds, from the readback.
    fn gpu_spans(&self) -> Option<GpuSpans> {
        let readback = self.readback.as_ref()?;
        if self.marks().mapped != Some(true) {
            return None;
        }
        let ticks: Vec<u64> = {
            let view = readback.slice(..).get_mapped_range().ok()?;
            view.chunks_exact(8).map(|word| u64::from_le_bytes(word.try_into().unwrap_or_default())).collect()
        };
        readback.unmap();
        self.activities
            .iter()
            .map(|a| {
                let (set, first) = a.queries?;
                let at = set * QUERIES_PER_SET as usize + first as usize;
                let (begin, end) = (*ticks.get(at)?, *ticks.get(at + 1)?);
                let ns = |ticks: u64| (ticks as f64 * self.period_ns).round() as u64;
                Some((ns(begin), ns(end.max(begin))))
            })
            .collect()
    }
}
