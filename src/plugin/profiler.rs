//! `TF_InitProfiler`: TF's pluggable profiler. `tf.profiler.experimental.start/stop` (and Keras's
//! TensorBoard callback) start and stop `runtime::trace`, and `collect_data_xspace` hands TF one
//! XPlane per device, `/device:GPU:<n>` like TF's own GPU planes, which TF adds to the profile's
//! XSpace (`<logdir>/plugins/profile/<run>/<host>.xplane.pb`).
//!
//! A plane has one line per stream, "Stream #<id>", with an event per kernel dispatch (named by its
//! launch, `tf_op` stat "node:OpType" as TF's GPU tracer writes it, which the op profile groups by)
//! and per copy or fill (MemcpyH2D/D2H/D2D, Memset, with `memcpy_details` and the byte count), and
//! a line "Submits" with each command buffer from submit to completion.

use std::sync::Mutex;
use std::time::Duration;

use crate::error::Error;
use crate::ffi::profiler::{
    TF_ProfilerRegistrationParams, TP_Profiler, TP_ProfilerFns, TP_MAJOR, TP_PROFILER_FNS_STRUCT_SIZE,
    TP_PROFILER_STRUCT_SIZE,
};
use crate::ffi::tf::TF_Status;
use crate::rewrite::proto::Message;
use crate::runtime::trace::{self, ActivityKind, DeviceTrace};
use crate::runtime::{instance, stream};

use super::{null_arg, with_status, DEVICE_TYPE};

/// How long collection waits for recorded work to complete.
const COLLECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The id of each plane's line of submits (stream lines take the streams' ids, counted from 1).
const SUBMITS_LINE_ID: u64 = 1 << 40;

/// The serialized XSpace between `collect_data_xspace`'s sizing call and its copying call.
static COLLECTED: Mutex<Option<Vec<u8>>> = Mutex::new(None);

/// Registers the profiler for device type GPU.
///
/// # Safety
/// TF passes registration params whose `profiler` and `profiler_fns` point to structs it owns.
#[no_mangle]
pub unsafe extern "C" fn TF_InitProfiler(params: *mut TF_ProfilerRegistrationParams, status: *mut TF_Status) {
    with_status(status, || {
        // SAFETY: per this function's contract (null checked).
        let params = unsafe { params.as_mut() }.ok_or_else(|| null_arg("TF_ProfilerRegistrationParams"))?;
        // SAFETY: TF owns these structs and passes them for us to fill (null checked).
        let profiler = unsafe { params.profiler.as_mut() }.ok_or_else(|| null_arg("TP_Profiler"))?;
        let fns = unsafe { params.profiler_fns.as_mut() }.ok_or_else(|| null_arg("TP_ProfilerFns"))?;
        params.major_version = TP_MAJOR;
        profiler.struct_size = TP_PROFILER_STRUCT_SIZE;
        profiler.ext = std::ptr::null_mut();
        profiler.device_type = DEVICE_TYPE.as_ptr();
        fns.struct_size = TP_PROFILER_FNS_STRUCT_SIZE;
        fns.ext = std::ptr::null_mut();
        fns.start = Some(start);
        fns.stop = Some(stop);
        fns.collect_data_xspace = Some(collect_data_xspace);
        params.destroy_profiler = Some(destroy_profiler);
        params.destroy_profiler_fns = Some(destroy_profiler_fns);
        Ok(())
    })
}

unsafe extern "C" fn destroy_profiler(_profiler: *mut TP_Profiler) {}

unsafe extern "C" fn destroy_profiler_fns(_fns: *mut TP_ProfilerFns) {}

unsafe extern "C" fn start(_profiler: *const TP_Profiler, status: *mut TF_Status) {
    with_status(status, || {
        *lock_collected() = None;
        // Work encoded before the session (a batch of small launches waiting for its dispatch)
        // is submitted first: it is not the session's.
        flush_devices();
        trace::start();
        Ok(())
    })
}

unsafe extern "C" fn stop(_profiler: *const TP_Profiler, status: *mut TF_Status) {
    with_status(status, || {
        // Recorded work still in open encoders is submitted, to be timed.
        flush_devices();
        trace::stop();
        Ok(())
    })
}

fn flush_devices() {
    for ordinal in 0..instance::device_count() {
        if let Some(device) = instance::opened_device(ordinal) {
            stream::flush_device(&device);
        }
    }
}

unsafe extern "C" fn collect_data_xspace(
    _profiler: *const TP_Profiler,
    buffer: *mut u8,
    size_in_bytes: *mut usize,
    status: *mut TF_Status,
) {
    with_status(status, || {
        // SAFETY: TF passes a writable size (null checked).
        let size = unsafe { size_in_bytes.as_mut() }.ok_or_else(|| null_arg("size_in_bytes"))?;
        let mut collected = lock_collected();
        if buffer.is_null() {
            let bytes = collected.get_or_insert_with(|| xspace(&with_every_device(trace::collect(COLLECT_TIMEOUT))));
            *size = bytes.len();
            return Ok(());
        }
        let bytes = collected.take().unwrap_or_default();
        if *size < bytes.len() {
            return Err(Error::invalid_argument(format!(
                "collect_data_xspace: a buffer of {} bytes for {} bytes of profile",
                *size,
                bytes.len()
            )));
        }
        // SAFETY: TF passes a writable buffer of `*size` bytes, at least `bytes.len()`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer, bytes.len()) };
        *size = bytes.len();
        Ok(())
    })
}

/// `traces` with an empty one for each opened device that recorded nothing: every device has a plane.
fn with_every_device(mut traces: Vec<DeviceTrace>) -> Vec<DeviceTrace> {
    for ordinal in (0..instance::device_count()).filter(|&o| instance::opened_device(o).is_some()) {
        if !traces.iter().any(|t| t.ordinal == ordinal) {
            traces.push(DeviceTrace { ordinal, ..Default::default() });
        }
    }
    traces.sort_by_key(|t| t.ordinal);
    traces
}

fn lock_collected() -> std::sync::MutexGuard<'static, Option<Vec<u8>>> {
    COLLECTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Interned names of one plane's event and stat metadata.
#[derive(Default)]
struct Names {
    events: Vec<String>,
    stats: Vec<String>,
}

impl Names {
    /// Metadata ids count from 1 (0 is "unset").
    fn intern(list: &mut Vec<String>, name: &str) -> u64 {
        let at = list.iter().position(|n| n == name).unwrap_or_else(|| {
            list.push(name.to_string());
            list.len() - 1
        });
        at as u64 + 1
    }

    fn event(&mut self, name: &str) -> u64 {
        Self::intern(&mut self.events, name)
    }

    fn stat(&mut self, name: &str) -> u64 {
        Self::intern(&mut self.stats, name)
    }
}

/// `XStat` with a string value.
fn str_stat(names: &mut Names, name: &str, value: &str) -> Vec<u8> {
    Message::default().with_varint(1, names.stat(name)).with_bytes(5, value).encode()
}

/// `XStat` with an unsigned value.
fn uint_stat(names: &mut Names, name: &str, value: u64) -> Vec<u8> {
    Message::default().with_varint(1, names.stat(name)).with_varint(3, value).encode()
}

/// `XEvent` at `start_ns..end_ns` on a line that starts at `line_ns`.
fn event(metadata_id: u64, line_ns: u64, start_ns: u64, end_ns: u64, stats: Vec<Vec<u8>>) -> Vec<u8> {
    let mut event = Message::default()
        .with_varint(1, metadata_id)
        .with_varint(2, (start_ns - line_ns) * 1000)
        .with_varint(3, (end_ns - start_ns) * 1000);
    for stat in stats {
        event = event.with_bytes(4, stat);
    }
    event.encode()
}

/// `XLine` `id` named `name` holding `events` (start, end, encoded event without its offset).
fn line(id: u64, name: &str, events: Vec<(u64, u64, u64, Vec<Vec<u8>>)>) -> Option<Vec<u8>> {
    let line_ns = events.iter().map(|e| e.1).min()?;
    let end_ns = events.iter().map(|e| e.2).max()?;
    let mut line = Message::default()
        .with_varint(1, id)
        .with_varint(10, id)
        .with_bytes(2, name)
        .with_bytes(11, name)
        .with_varint(3, line_ns)
        .with_varint(9, (end_ns - line_ns) * 1000);
    for (metadata_id, start, end, stats) in events {
        line = line.with_bytes(4, event(metadata_id, line_ns, start, end, stats));
    }
    Some(line.encode())
}

fn plane(device: &DeviceTrace) -> Vec<u8> {
    let mut names = Names::default();
    let mut streams: Vec<u64> = device.events.iter().map(|e| e.activity.stream).collect();
    streams.sort_unstable();
    streams.dedup();
    let mut lines = Vec::new();
    for stream in streams {
        let events = device
            .events
            .iter()
            .filter(|e| e.activity.stream == stream)
            .map(|e| {
                let a = &e.activity;
                let mut stats = Vec::new();
                if let Some(tf_op) = &a.tf_op {
                    stats.push(str_stat(&mut names, "tf_op", tf_op));
                }
                match a.kind {
                    ActivityKind::Kernel => {
                        let [x, y, z] = a.grid;
                        stats.push(str_stat(&mut names, "grid", &format!("{x},{y},{z}")));
                    }
                    kind => {
                        let what = match kind {
                            ActivityKind::MemcpyHtoD => "HtoD",
                            ActivityKind::MemcpyDtoH => "DtoH",
                            ActivityKind::MemcpyDtoD => "DtoD",
                            _ => "Memset",
                        };
                        stats.push(str_stat(&mut names, "memcpy_details", &format!("kind:{what} size:{}", a.bytes)));
                        stats.push(uint_stat(&mut names, "bytes_transferred", a.bytes));
                    }
                }
                (names.event(&a.name), e.start_ns, e.end_ns, stats)
            })
            .collect();
        lines.extend(line(stream, &format!("Stream #{stream}"), events));
    }
    let submits = device
        .submits
        .iter()
        .map(|s| {
            let stats = vec![
                uint_stat(&mut names, "stream_id", s.stream),
                uint_stat(&mut names, "commands", s.commands as u64),
            ];
            (names.event("Submit"), s.start_ns, s.end_ns, stats)
        })
        .collect();
    lines.extend(line(SUBMITS_LINE_ID, "Submits", submits));

    let clock = if device.gpu_timestamps { "gpu timestamps" } else { "host encode and completion times" };
    let adapter = instance::adapter_info(device.ordinal).map(|i| i.name).unwrap_or_default();
    let plane_stats = [str_stat(&mut names, "device_name", &adapter), str_stat(&mut names, "event_clock", clock)];
    let mut plane = Message::default()
        .with_varint(1, device.ordinal as u64 + 1)
        .with_bytes(2, format!("/device:GPU:{}", device.ordinal));
    for line in lines {
        plane = plane.with_bytes(3, line);
    }
    for (i, name) in names.events.iter().enumerate() {
        let id = i as u64 + 1;
        let metadata = Message::default().with_varint(1, id).with_bytes(2, name.as_str()).encode();
        plane = plane.with_bytes(4, Message::default().with_varint(1, id).with_bytes(2, metadata).encode());
    }
    for (i, name) in names.stats.iter().enumerate() {
        let id = i as u64 + 1;
        let metadata = Message::default().with_varint(1, id).with_bytes(2, name.as_str()).encode();
        plane = plane.with_bytes(5, Message::default().with_varint(1, id).with_bytes(2, metadata).encode());
    }
    for stat in plane_stats {
        plane = plane.with_bytes(6, stat);
    }
    plane.encode()
}

/// The serialized `XSpace` of `devices` (tsl/profiler/protobuf/xplane.proto).
fn xspace(devices: &[DeviceTrace]) -> Vec<u8> {
    let mut space = Message::default();
    for device in devices {
        space = space.with_bytes(1, plane(device));
    }
    space.encode()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::trace::{Activity, DeviceEvent, SubmitSpan};

    #[test]
    fn a_plane_names_its_events_and_stats_once() {
        let activity = |kind, name: &str| Activity {
            kind,
            name: name.into(),
            tf_op: Some("dense/MatMul:MatMul".into()),
            bytes: 64,
            grid: [2, 1, 1],
            stream: 3,
            encode_ns: 0,
            queries: None,
        };
        let events = [
            (ActivityKind::Kernel, "matmul"),
            (ActivityKind::MemcpyHtoD, "MemcpyH2D"),
            (ActivityKind::Kernel, "matmul"),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (kind, name))| DeviceEvent {
            activity: activity(kind, name),
            start_ns: 1000 + i as u64,
            end_ns: 1001 + i as u64,
        })
        .collect();
        let submits = vec![SubmitSpan { stream: 3, start_ns: 900, end_ns: 1100, commands: 3 }];
        let device = DeviceTrace { ordinal: 0, events, submits, gpu_timestamps: true };
        let bytes = xspace(&[device]);
        let space = Message::parse(&bytes).expect("parses");
        let planes: Vec<_> = space.bytes(1).collect();
        assert_eq!(planes.len(), 1);
        let plane = Message::parse(planes[0]).expect("plane parses");
        assert_eq!(plane.string(2), "/device:GPU:0");
        // Event names: matmul, MemcpyH2D, Submit; each once.
        assert_eq!(plane.bytes(4).count(), 3);
        let lines: Vec<Message> = plane.bytes(3).map(|l| Message::parse(l).expect("line parses")).collect();
        assert_eq!(lines.iter().map(|l| l.string(2)).collect::<Vec<_>>(), ["Stream #3", "Submits"]);
        let events: Vec<Message> = lines[0].bytes(4).map(|e| Message::parse(e).expect("event parses")).collect();
        assert_eq!(events.iter().map(|e| e.varint(1)).collect::<Vec<_>>(), [Some(1), Some(2), Some(1)]);
        assert_eq!(events.iter().map(|e| e.varint(2)).collect::<Vec<_>>(), [Some(0), Some(1000), Some(2000)]);
        assert!(events.iter().all(|e| e.varint(3) == Some(1000)));
    }
}
