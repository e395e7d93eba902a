//! The device runtime: wgpu devices, memory, streams, events, the poller and timers.
//! Nothing here knows about TensorFlow's C structs.

pub mod buffer_pool;
pub mod device;
pub mod encoder;
pub mod event;
pub mod instance;
pub mod memory;
pub mod pipeline;
pub mod poller;
pub mod scratch;
pub mod stream;
pub mod timer;
pub mod trace;
pub mod transfer;

pub use device::{Device, DeviceCore};
pub use event::{Event, EventStatus};
pub use memory::{DeviceSlice, MemoryStats};
pub use stream::Stream;
pub use timer::{Timer, TimerMode};
