//! Events: marks in a stream's program order. Recording an event flushes the stream and queues a
//! host task behind everything recorded before it; the poller completes the event when that task is
//! reached, i.e. once the GPU work of the submissions before it (tracked through
//! `Queue::on_submitted_work_done`) and the stream's earlier readbacks and callbacks are done.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventStatus {
    Pending,
    Complete,
    Error,
}

pub struct Event {
    state: Mutex<EventState>,
    changed: Condvar,
}

struct EventState {
    status: EventStatus,
    /// Bumped at every record, so that a stale completion of an earlier record is ignored.
    generation: u64,
}

impl Default for Event {
    fn default() -> Self {
        Self::new()
    }
}

impl Event {
    /// A new event counts as complete until it is recorded, like a CUDA event.
    pub fn new() -> Self {
        Self { state: Mutex::new(EventState { status: EventStatus::Complete, generation: 0 }), changed: Condvar::new() }
    }

    pub fn status(&self) -> EventStatus {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).status
    }

    /// Marks the event pending for a new record; returns the record's generation.
    pub(super) fn arm(&self) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.generation += 1;
        state.status = EventStatus::Pending;
        state.generation
    }

    pub(super) fn finish(&self, generation: u64, status: EventStatus) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.generation == generation {
            state.status = status;
            self.changed.notify_all();
        }
    }

    /// Blocks the calling thread until the event is no longer pending.
    pub fn wait(&self) -> Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut waited = Duration::ZERO;
        while state.status == EventStatus::Pending {
            let (next, _) = self.changed.wait_timeout(state, Duration::from_secs(1)).unwrap_or_else(|e| e.into_inner());
            state = next;
            waited += Duration::from_secs(1);
            if waited.as_secs().is_multiple_of(60) && state.status == EventStatus::Pending {
                log::warn!("tensorflow-wgpu: still waiting for an event after {}s", waited.as_secs());
            }
        }
        match state.status {
            EventStatus::Error => Err(Error::internal("WGPU event completed with an error on its stream")),
            _ => Ok(()),
        }
    }
}
