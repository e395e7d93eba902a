//! A stream's open command encoder and its upload arena.
//!
//! Every dispatch needs a small uniform block of parameters, and a host-to-device copy into a busy
//! stream needs a staging copy of the host bytes. Creating a buffer for each costs more than the
//! work on small tensors, and in wgpu each live buffer also widens the usage scope that every
//! compute pass clears. So both go into arenas: buffers created mapped, filled as commands are
//! encoded, and unmapped when the encoder is finished, one per 64 KiB of uploads. Parameters and
//! staged data use separate arenas: a copy kernel binds staged bytes as storage, and one buffer
//! may not be storage and uniform in the same dispatch.
//!
//! Small launches of one kind may wait in the encoder's `Batch`, to run as one dispatch: on CPU
//! adapters a dispatch (waking the driver's thread pool) costs more than a small op.
//!
//! Consecutive dispatches share one compute pass, ended before any other command (a copy, a fill)
//! and at `finish`: wgpu records each pass into command buffers of their own, and lavapipe walks
//! every command buffer an encoder's pool ever held when the pool is reset. With a pass per
//! dispatch, a convolution's thousands of dispatches left a pool whose every later reset cost more
//! than the small ops it served (an eager op chain ran 2x slower after one).

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};

use super::device::DeviceCore;
use super::pipeline::Pipeline;
use super::trace::{self, ActivityKind, EncoderTrace, Stamps, SubmissionTrace};

/// Bytes per arena buffer. Bigger uploads get a buffer of their own.
const ARENA_BYTES: u64 = 64 * 1024;

pub struct Encoder {
    commands: wgpu::CommandEncoder,
    /// Bind groups of this encoder's dispatches by what they bind: an eager op chain binds the same
    /// few tensors over and over, and creating a bind group was the largest cost of a small launch.
    /// Kept no longer than the encoder, whose commands hold the buffers alive anyway.
    bind_groups: HashMap<BindGroupKey, wgpu::BindGroup>,
    /// The compute pass the dispatches since the last other command share.
    pass: Option<wgpu::ComputePass<'static>>,
    /// Per arena: the buffer being filled and how many of its bytes are used.
    current: [Option<(wgpu::Buffer, u64)>; 2],
    /// Arena (and dedicated upload) buffers, all still mapped until `finish`.
    filled: Vec<wgpu::Buffer>,
    ops: u32,
    /// Small launches waiting to run as one dispatch (`Stream::batch`), before any other command.
    pub batch: Option<Batch>,
    /// The stream this encoder belongs to, for the profiler's events.
    pub stream: u64,
    /// What the profiler records of this encoder's commands, once a session is active.
    trace: Option<EncoderTrace>,
    /// The open pass was made for one profiled dispatch and takes no other.
    pass_taken: bool,
    /// Copies and fills being encoded (`traced`): their own dispatches are part of them, neither
    /// counted as kernel dispatches nor recorded apart.
    transfer_depth: u32,
}

/// A kernel that runs many small launches in one dispatch: its storage bindings are slots, each a
/// window of a buffer (`SlotWindow`), and its parameter block is a 16-byte header (the record count first) followed by
/// `max_records` records of `record_bytes` each, which name their operands by slot.
pub struct BatchKind {
    pub label: &'static str,
    pub slots: usize,
    pub max_records: u32,
    pub record_bytes: usize,
}

/// What one batch slot binds: a whole buffer, or a window of one larger than a binding may be.
#[derive(Clone, PartialEq, Eq)]
pub struct SlotWindow {
    pub buffer: wgpu::Buffer,
    pub offset: u64,
    pub size: u64,
}

impl SlotWindow {
    /// The window a batch slot binds for `len` bytes at `offset` of `buffer`, and the offset inside
    /// it. Buffers within `max_binding` bytes bind whole (so that tensors in one buffer share a
    /// slot); larger ones (regions of TF's BFC allocator) in windows of `max_binding` bytes every
    /// half window, aligned to `align`: nearby tensors share one. None where `len` exceeds half a window.
    pub fn covering(
        buffer: &wgpu::Buffer,
        offset: u64,
        len: u64,
        max_binding: u64,
        align: u64,
    ) -> Option<(SlotWindow, u64)> {
        let size = buffer.size();
        if size <= max_binding {
            return Some((SlotWindow { buffer: buffer.clone(), offset: 0, size }, offset));
        }
        let step = (max_binding / 2 / align * align).max(align);
        let start = offset / step * step;
        let window = (max_binding / 4 * 4).min(size - start);
        (offset + len <= start + window && len <= step)
            .then(|| (SlotWindow { buffer: buffer.clone(), offset: start, size: window }, offset - start))
    }
}

/// The launches gathered so far for one `BatchKind`.
pub struct Batch {
    pub kind: &'static BatchKind,
    pub pipeline: Arc<Pipeline>,
    /// The window of each slot in use.
    pub buffers: Vec<SlotWindow>,
    pub records: Vec<u8>,
    pub count: u32,
}

impl Batch {
    /// The slots `buffers` would take, or None where the batch has no room for them.
    pub fn slots_for(&self, buffers: &[SlotWindow]) -> Option<Vec<u32>> {
        if self.count >= self.kind.max_records {
            return None;
        }
        let mut taken = self.buffers.len();
        let mut slots = Vec::with_capacity(buffers.len());
        for (i, buffer) in buffers.iter().enumerate() {
            let slot = match self.buffers.iter().position(|b| b == buffer) {
                Some(slot) => slot,
                // A buffer that appeared earlier in this launch takes the slot it was given.
                None => match buffers[..i].iter().position(|b| b == buffer) {
                    Some(earlier) => slots[earlier] as usize,
                    None => {
                        taken += 1;
                        taken - 1
                    }
                },
            };
            slots.push(slot as u32);
        }
        (taken <= self.kind.slots).then_some(slots)
    }

    /// Adds a launch whose record `record` names `buffers` by the `slots` from `slots_for`.
    pub fn push(&mut self, buffers: &[SlotWindow], slots: &[u32], record: Vec<u8>) {
        for (buffer, &slot) in buffers.iter().zip(slots) {
            if slot as usize == self.buffers.len() {
                self.buffers.push(buffer.clone());
            }
        }
        self.records.extend(record);
        self.count += 1;
    }

    /// The parameter block: the header, the records, and zeros up to the kernel's full block.
    pub fn block(&self) -> Vec<u8> {
        let mut block = vec![0u8; 16 + self.kind.max_records as usize * self.kind.record_bytes];
        block[..4].copy_from_slice(&self.count.to_le_bytes());
        block[16..16 + self.records.len()].copy_from_slice(&self.records);
        block
    }
}

/// What a kernel bind group binds: its layout, the (buffer, offset, size) of each binding before
/// the parameters, and the parameter block's arena buffer and size (bound at a dynamic offset).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BindGroupKey {
    pub layout: wgpu::BindGroupLayout,
    pub buffers: Vec<(wgpu::Buffer, u64, u64)>,
    pub params: (wgpu::Buffer, u64),
    pub textures: Vec<wgpu::TextureView>,
}

/// What an upload is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arena {
    /// Uniform blocks of kernel parameters.
    Params = 0,
    /// Host bytes on their way to a tensor (copy source, or storage for the unaligned-copy kernel).
    Staging = 1,
}

impl std::ops::Deref for Encoder {
    type Target = wgpu::CommandEncoder;
    fn deref(&self) -> &wgpu::CommandEncoder {
        &self.commands
    }
}

impl std::ops::DerefMut for Encoder {
    /// The command encoder itself, for commands other than dispatches: ends the open compute pass
    /// first (wgpu refuses commands on an encoder with a pass open).
    fn deref_mut(&mut self) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        self.pass_taken = false;
        &mut self.commands
    }
}

/// Uploaded bytes: a window of an arena buffer.
pub struct Upload {
    pub buffer: wgpu::Buffer,
    pub offset: u64,
    pub size: u64,
}

impl Encoder {
    pub fn new(core: &DeviceCore, label: &str) -> Self {
        let commands = core.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        Encoder {
            commands,
            bind_groups: HashMap::new(),
            pass: None,
            current: [None, None],
            filled: Vec::new(),
            ops: 0,
            batch: None,
            stream: 0,
            trace: None,
            pass_taken: false,
            transfer_depth: 0,
        }
    }

    /// Records a command with the profiler, unless no session is active or a copy or fill is being
    /// encoded (its inner commands are part of it). None where nothing was recorded; else where the
    /// command's timestamps go (None: it is timed by the host clock).
    fn record(
        &mut self,
        core: &DeviceCore,
        kind: ActivityKind,
        name: &str,
        bytes: u64,
        grid: [u32; 3],
    ) -> Option<Option<Stamps>> {
        if self.transfer_depth > 0 {
            return None;
        }
        if self.trace.is_none() && trace::active() {
            self.trace = Some(EncoderTrace::new(core, self.stream));
        }
        Some(self.trace.as_mut()?.record(core, kind, name, bytes, grid))
    }

    /// The compute pass for one dispatch of `grid` labelled `label`: the open pass, or while
    /// profiling a pass of its own that writes timestamps around it.
    pub fn kernel_pass(&mut self, core: &DeviceCore, label: &str, grid: [u32; 3]) -> &mut wgpu::ComputePass<'static> {
        if self.transfer_depth == 0 {
            trace::count_dispatch();
        }
        if let Some(stamps) = self.record(core, ActivityKind::Kernel, label, 0, grid) {
            self.pass = None;
            let descriptor = wgpu::ComputePassDescriptor {
                label: Some(label),
                timestamp_writes: stamps.as_ref().map(|s| wgpu::ComputePassTimestampWrites {
                    query_set: &s.query_set,
                    beginning_of_pass_write_index: Some(s.begin),
                    end_of_pass_write_index: Some(s.end),
                }),
            };
            self.pass_taken = true;
            return self.pass.insert(self.commands.begin_compute_pass(&descriptor).forget_lifetime());
        }
        self.compute_pass()
    }

    /// Encodes `body` (a copy or fill of `bytes`) as one profiled command while a session is
    /// active: timestamps in empty passes before and after it.
    pub fn traced<T>(
        &mut self,
        core: &DeviceCore,
        kind: ActivityKind,
        bytes: u64,
        body: impl FnOnce(&mut Encoder) -> Result<T>,
    ) -> Result<T> {
        let name = kind.event_name().unwrap_or("command");
        let stamps = self.record(core, kind, name, bytes, [0; 3]).flatten();
        let mark = |encoder: &mut Encoder, begin: Option<u32>, end: Option<u32>, set: &wgpu::QuerySet| {
            encoder.pass = None;
            encoder.commands.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(name),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: begin,
                    end_of_pass_write_index: end,
                }),
            });
        };
        if let Some(s) = &stamps {
            mark(self, Some(s.begin), None, &s.query_set);
        }
        self.transfer_depth += 1;
        let result = body(self);
        self.transfer_depth -= 1;
        if let Some(s) = &stamps {
            mark(self, None, Some(s.end), &s.query_set);
        }
        result
    }

    /// Encodes the resolve of the profiler's timestamps, if this encoder recorded any, and returns
    /// what its submit completes. Call right before `finish`.
    pub fn take_trace(&mut self, core: &DeviceCore) -> Option<SubmissionTrace> {
        let recorded = self.trace.take()?;
        self.pass = None;
        Some(recorded.finish(core, &mut self.commands))
    }

    /// A stream's encoder.
    pub fn for_stream(core: &DeviceCore, stream: u64) -> Self {
        Encoder { stream, ..Self::new(core, "tf stream") }
    }

    /// The bind group for `key`: one made earlier in this encoder, or `create(&key)`.
    pub fn bind_group(
        &mut self,
        key: BindGroupKey,
        create: impl FnOnce(&BindGroupKey) -> wgpu::BindGroup,
    ) -> wgpu::BindGroup {
        if let Some(group) = self.bind_groups.get(&key) {
            return group.clone();
        }
        let group = create(&key);
        self.bind_groups.insert(key, group.clone());
        group
    }

    /// The compute pass for the next dispatch: the open one, or a new one.
    pub fn compute_pass(&mut self) -> &mut wgpu::ComputePass<'static> {
        if std::mem::take(&mut self.pass_taken) {
            self.pass = None;
        }
        let commands = &mut self.commands;
        self.pass.get_or_insert_with(|| {
            let descriptor =
                wgpu::ComputePassDescriptor { label: Some("tensorflow-wgpu kernels"), timestamp_writes: None };
            commands.begin_compute_pass(&descriptor).forget_lifetime()
        })
    }

    /// Copies `data` into the arena at an offset aligned for a uniform binding (and for copies);
    /// commands of this encoder may bind or copy from it. The window is padded to 16 bytes.
    pub fn upload(&mut self, core: &DeviceCore, arena: Arena, data: &[u8]) -> Result<Upload> {
        let align = (core.limits.min_uniform_buffer_offset_alignment as u64).max(wgpu::MAP_ALIGNMENT);
        let size = (data.len() as u64).max(16).div_ceil(16) * 16;
        if size > ARENA_BYTES / 4 {
            let buffer = Self::mapped_buffer(core, "upload", size)?;
            Self::write(&buffer, 0, size, data)?;
            self.filled.push(buffer.clone());
            return Ok(Upload { buffer, offset: 0, size });
        }
        let fits = |used: u64| used.next_multiple_of(align) + size <= ARENA_BYTES;
        let current = &mut self.current[arena as usize];
        if !current.as_ref().is_some_and(|(_, used)| fits(*used)) {
            if let Some((full, _)) = current.take() {
                self.filled.push(full);
            }
            let label = if arena == Arena::Params { "params arena" } else { "staging arena" };
            *current = Some((Self::mapped_buffer(core, label, ARENA_BYTES)?, 0));
        }
        let Some((buffer, used)) = current.as_mut() else {
            return Err(Error::internal("upload arena missing"));
        };
        let offset = used.next_multiple_of(align);
        Self::write(buffer, offset, size, data)?;
        *used = offset + size;
        Ok(Upload { buffer: buffer.clone(), offset, size })
    }

    /// Counts one more operation encoded; returns the count.
    pub fn count_op(&mut self) -> u32 {
        self.ops += 1;
        self.ops
    }

    /// Unmaps the arenas (their contents are final) and finishes the command buffer.
    pub fn finish(mut self) -> wgpu::CommandBuffer {
        self.pass = None;
        self.filled.extend(self.current.iter_mut().filter_map(|c| c.take()).map(|(buffer, _)| buffer));
        for buffer in &self.filled {
            buffer.unmap();
        }
        self.commands.finish()
    }

    fn mapped_buffer(core: &DeviceCore, label: &str, size: u64) -> Result<wgpu::Buffer> {
        let (buffer, error) = core.capture_errors(|| {
            core.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            })
        });
        match error {
            Some(e) => Err(Error::resource_exhausted(format!("cannot allocate {size} bytes of upload space: {e}"))),
            None => Ok(buffer),
        }
    }

    /// Writes `data` at the start of the window `offset..offset + size` (mapped ranges must be
    /// 8-aligned and a multiple of 4 long, `data` need not be).
    fn write(buffer: &wgpu::Buffer, offset: u64, size: u64, data: &[u8]) -> Result<()> {
        let mut view = buffer
            .slice(offset..offset + size)
            .get_mapped_range_mut()
            .map_err(|e| Error::internal(format!("cannot write upload arena: {e}")))?;
        view.slice(..data.len()).copy_from_slice(data);
        Ok(())
    }
}
