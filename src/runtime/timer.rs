//! Timers measure the device time between two points of a stream. With `TIMESTAMP_QUERY` they read
//! GPU timestamps written by empty compute passes at those points; without it they take the host
//! clock when the stream reaches each point (all work before it complete).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

use super::device::DeviceCore;
use super::stream::Stream;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerMode {
    GpuTimestamps,
    HostClock,
}

pub struct Timer {
    mode: TimerMode,
    queries: Option<wgpu::QuerySet>,
    state: Arc<(Mutex<TimerState>, Condvar)>,
}

#[derive(Default)]
struct TimerState {
    host_start: Option<Instant>,
    elapsed_ns: Option<u64>,
}

impl Timer {
    /// The best timer this device supports.
    pub fn new(core: &DeviceCore) -> Timer {
        let mode = if core.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
            TimerMode::GpuTimestamps
        } else {
            TimerMode::HostClock
        };
        Self::with_mode(core, mode)
    }

    pub fn with_mode(core: &DeviceCore, mode: TimerMode) -> Timer {
        let queries = (mode == TimerMode::GpuTimestamps).then(|| {
            core.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("tf timer"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            })
        });
        Timer { mode, queries, state: Arc::new((Mutex::new(TimerState::default()), Condvar::new())) }
    }

    pub fn mode(&self) -> TimerMode {
        self.mode
    }

    fn reset(&self) {
        *self.state.0.lock().unwrap_or_else(|e| e.into_inner()) = TimerState::default();
    }

    fn finish(state: &(Mutex<TimerState>, Condvar), elapsed_ns: u64) {
        state.0.lock().unwrap_or_else(|e| e.into_inner()).elapsed_ns = Some(elapsed_ns);
        state.1.notify_all();
    }

    pub fn start(&self, stream: &Stream) -> Result<()> {
        self.reset();
        match &self.queries {
            Some(queries) => stream.encode(|_, encoder| {
                encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("timer start"),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: queries,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: None,
                    }),
                });
                Ok(())
            }),
            None => {
                let state = self.state.clone();
                stream.enqueue_host(
                    None,
                    Box::new(move || {
                        state.0.lock().unwrap_or_else(|e| e.into_inner()).host_start = Some(Instant::now());
                        Ok(())
                    }),
                );
                Ok(())
            }
        }
    }

    pub fn stop(&self, stream: &Stream) -> Result<()> {
        let state = self.state.clone();
        let Some(queries) = &self.queries else {
            stream.enqueue_host(
                None,
                Box::new(move || {
                    let start = state.0.lock().unwrap_or_else(|e| e.into_inner()).host_start;
                    let start =
                        start.ok_or_else(|| Error::failed_precondition("timer stopped before it was started"))?;
                    Timer::finish(&state, start.elapsed().as_nanos() as u64);
                    Ok(())
                }),
            );
            return Ok(());
        };
        let core = stream.device().core.clone();
        let resolve = core.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timer resolve"),
            size: 16,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = core.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timer readback"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        stream.encode(|_, encoder| {
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("timer stop"),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: queries,
                    beginning_of_pass_write_index: None,
                    end_of_pass_write_index: Some(1),
                }),
            });
            encoder.resolve_query_set(queries, 0..2, &resolve, 0);
            encoder.copy_buffer_to_buffer(&resolve, 0, &readback, 0, 16);
            Ok(())
        })?;
        let mapped = Arc::new(AtomicBool::new(false));
        let map_request: Box<dyn FnOnce() + Send> = {
            let (readback, mapped) = (readback.clone(), mapped.clone());
            Box::new(move || {
                readback.slice(..).map_async(wgpu::MapMode::Read, move |_| mapped.store(true, Ordering::SeqCst))
            })
        };
        stream.flush_with(vec![map_request]);
        let period = core.queue.get_timestamp_period() as f64;
        stream.enqueue_host(
            Some(mapped),
            Box::new(move || {
                let ticks: [u64; 2] = {
                    let view = readback.slice(..).get_mapped_range().map_err(|e| Error::internal(e.to_string()))?;
                    bytemuck::pod_read_unaligned(&view[..16])
                };
                readback.unmap();
                Timer::finish(&state, (ticks[1].saturating_sub(ticks[0]) as f64 * period) as u64);
                Ok(())
            }),
        );
        Ok(())
    }

    /// Elapsed nanoseconds between start and stop; waits (up to 10 s) for the stop point to be reached.
    pub fn nanoseconds(&self) -> u64 {
        let (lock, changed) = &*self.state;
        let state = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (state, _) = changed
            .wait_timeout_while(state, Duration::from_secs(10), |s| s.elapsed_ns.is_none())
            .unwrap_or_else(|e| e.into_inner());
        state.elapsed_ns.unwrap_or(0)
    }
}
