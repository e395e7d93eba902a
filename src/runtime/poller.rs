//! One poller thread per device. It drives `Device::poll`, which completes submissions and buffer
//! mappings, and then advances every stream's queue of host tasks in order: deferred submissions,
//! readbacks, host callbacks and event completions. It exits when its `Device` is dropped.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Error, Result};

use super::device::DeviceCore;

pub fn spawn(core: Arc<DeviceCore>) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("wgpu-poller-{}", core.ordinal))
        .spawn(move || run(core))
        .map_err(|e| Error::internal(format!("cannot start the WGPU poller thread: {e}")))
}

fn run(core: Arc<DeviceCore>) {
    log::debug!("tensorflow-wgpu: poller {} started", core.ordinal);
    loop {
        // A panic must not end the thread: every stream of the device would wait forever.
        match std::panic::catch_unwind(AssertUnwindSafe(|| step(&core))) {
            Ok(true) => continue,
            Ok(false) => break,
            Err(p) => log::error!("tensorflow-wgpu: poller {}: {}", core.ordinal, crate::error::from_panic(p)),
        }
    }
    let _ = core.device.poll(wgpu::PollType::wait_indefinitely());
    log::debug!("tensorflow-wgpu: poller {} stopped", core.ordinal);
}

/// One round: advance the streams, then wait for the GPU or for new work. False once shut down.
fn step(core: &DeviceCore) -> bool {
    let generation = core.wake_generation();
    let mut progressed = false;
    let mut pending = false;
    for stream in core.live_streams() {
        let step = stream.advance(core);
        progressed |= step.progressed;
        pending |= step.pending;
    }
    if core.shutdown.load(Ordering::SeqCst) && !pending {
        return false;
    }
    if progressed {
        return true;
    }
    match core.oldest_in_flight() {
        Some(index) => {
            // Wait for the oldest unfinished submission, with no timeout. A wait that times out
            // races with the poll inside `Queue::submit` on TF's threads: wgpu-core 30.0 then trips
            // an assertion ("If the queue is empty, the current submission index ... should be at
            // least the wait submission index"), and the panic drops the map callbacks it had
            // collected, so a readback would wait forever (fixed upstream in gfx-rs/wgpu#9958).
            // Submissions on the one queue complete in order, so no host task is ready before the
            // oldest submission is done, unless it needs no GPU work at all.
            let _ = core.device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None });
        }
        None if pending => {
            // Waiting on a mapping or on another stream's event.
            let _ = core.device.poll(wgpu::PollType::Poll);
            core.wait_for_wake(generation, Duration::from_micros(200));
        }
        None => core.wait_for_wake(generation, Duration::from_millis(50)),
    }
    true
}
