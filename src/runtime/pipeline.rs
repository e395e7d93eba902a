//! Compute pipelines cached by (shader, entry point, type aliases, override constants), and the one
//! small function every launch goes through: bind, upload a uniform block, dispatch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

use super::device::DeviceCore;
use super::encoder::{Arena, BindGroupKey, Encoder};
use super::memory::DeviceSlice;

/// A WGSL source file from `wgsl/`, compiled with `alias NAME = type;` lines prepended for each
/// type parameter: one source serves every dtype without copy-paste.
#[derive(Clone, Copy, Debug)]
pub struct Shader {
    pub name: &'static str,
    pub source: &'static str,
    /// Every entry point of the file sees `storage_buffers` read-write storage buffers at bindings
    /// `0..storage_buffers`, then `uniform_buffers` uniform bindings of data (64 KiB tiles), then one
    /// uniform block of parameters (an explicit layout, so that an entry point may leave a binding
    /// unused), then `textures` sampled `texture_2d<u32>` bindings (`texels`: full-size operands
    /// staged for CPU adapters).
    pub storage_buffers: u32,
    pub uniform_buffers: u32,
    pub textures: u32,
}

/// A pipeline and the bind group layout it was built with.
pub struct Pipeline {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// Everything that selects one compiled pipeline.
#[derive(Clone, Debug, Default)]
pub struct PipelineSpec<'a> {
    pub entry: &'static str,
    /// Type aliases, e.g. `[("T", "f32")]`.
    pub aliases: &'a [(&'static str, &'static str)],
    /// WGSL `override` constants; specialise instead of branching at run time.
    pub constants: &'a [(&'static str, f64)],
}

/// A layout's storage buffers, data uniforms and textures (`Shader`'s counts).
type LayoutKey = (u32, u32, u32);

#[derive(Default)]
pub struct PipelineCache {
    modules: Mutex<HashMap<String, wgpu::ShaderModule>>,
    layouts: Mutex<HashMap<LayoutKey, (wgpu::BindGroupLayout, wgpu::PipelineLayout)>>,
    /// By the hash of their `PipelineKey`: a lookup, once per launch, hashes the spec in place
    /// instead of formatting a key (formatting and its allocations cost about a microsecond).
    pipelines: Mutex<HashMap<u64, PipelineBucket>>,
}

/// The cached pipelines whose keys share one hash.
type PipelineBucket = Vec<(PipelineKey, Arc<Pipeline>)>;

/// A cached pipeline's spec, owned; override constants by their bits.
struct PipelineKey {
    shader: &'static str,
    entry: &'static str,
    aliases: Vec<(&'static str, &'static str)>,
    constants: Vec<(&'static str, u64)>,
}

impl PipelineKey {
    fn new(shader: &Shader, spec: &PipelineSpec) -> Self {
        PipelineKey {
            shader: shader.name,
            entry: spec.entry,
            aliases: spec.aliases.to_vec(),
            constants: spec.constants.iter().map(|&(name, value)| (name, value.to_bits())).collect(),
        }
    }

    fn matches(&self, shader: &Shader, spec: &PipelineSpec) -> bool {
        self.shader == shader.name
            && self.entry == spec.entry
            && self.aliases == spec.aliases
            && self.constants.len() == spec.constants.len()
            && self.constants.iter().zip(spec.constants).all(|(a, b)| a.0 == b.0 && a.1 == b.1.to_bits())
    }

    fn hash(shader: &Shader, spec: &PipelineSpec) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (shader.name, spec.entry, spec.aliases).hash(&mut hasher);
        for (name, value) in spec.constants {
            (name, value.to_bits()).hash(&mut hasher);
        }
        hasher.finish()
    }

    fn label(&self) -> String {
        let aliases: String = self.aliases.iter().map(|(n, t)| format!("{n}={t};")).collect();
        let constants: String = self.constants.iter().map(|(n, v)| format!("{n}={};", f64::from_bits(*v))).collect();
        format!("{}:{}:{aliases}:{constants}", self.shader, self.entry)
    }
}

/// The WGSL text for `shader` specialised by `aliases` (also used by the naga validation test).
pub fn specialised_source(shader: &Shader, aliases: &[(&str, &str)]) -> String {
    let mut text = String::new();
    if aliases.iter().any(|(_, ty)| ty.contains("f16")) {
        text.push_str("enable f16;\n");
    }
    for (name, ty) in aliases {
        text.push_str(&format!("alias {name} = {ty};\n"));
    }
    text.push_str(shader.source);
    text
}

impl PipelineCache {
    fn layout(&self, core: &DeviceCore, shader: &Shader) -> (wgpu::BindGroupLayout, wgpu::PipelineLayout) {
        let (storage_buffers, uniform_buffers, textures) =
            (shader.storage_buffers, shader.uniform_buffers, shader.textures);
        let mut layouts = self.layouts.lock().unwrap_or_else(|e| e.into_inner());
        layouts
            .entry((storage_buffers, uniform_buffers, textures))
            .or_insert_with(|| {
                let storage = (0..storage_buffers).map(|binding| wgpu::BindGroupLayoutEntry {
                    binding,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Storage { read_only: false },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                });
                let uniform = |binding| wgpu::BindGroupLayoutEntry {
                    binding,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                };
                // The parameter block, last, binds at a dynamic offset into the upload arena, so
                // that launches differing only in their parameters share a bind group.
                let params = wgpu::BindGroupLayoutEntry {
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: true,
                        min_binding_size: None,
                    },
                    ..uniform(storage_buffers + uniform_buffers)
                };
                let uniforms = (storage_buffers..storage_buffers + uniform_buffers).map(uniform).chain([params]);
                let first_texture = storage_buffers + uniform_buffers + 1;
                let texels = (first_texture..first_texture + textures).map(|binding| wgpu::BindGroupLayoutEntry {
                    binding,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Uint,
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                    count: None,
                });
                let entries: Vec<_> = storage.chain(uniforms).chain(texels).collect();
                let bind_group_layout = core.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("kernel bind group layout"),
                    entries: &entries,
                });
                let pipeline_layout = core.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("kernel pipeline layout"),
                    bind_group_layouts: &[Some(&bind_group_layout)],
                    immediate_size: 0,
                });
                (bind_group_layout, pipeline_layout)
            })
            .clone()
    }

    pub fn get(&self, core: &DeviceCore, shader: &Shader, spec: &PipelineSpec) -> Result<Arc<Pipeline>> {
        let hash = PipelineKey::hash(shader, spec);
        if let Some(bucket) = self.pipelines.lock().unwrap_or_else(|e| e.into_inner()).get(&hash) {
            if let Some((_, p)) = bucket.iter().find(|(key, _)| key.matches(shader, spec)) {
                return Ok(p.clone());
            }
        }
        let owned_key = PipelineKey::new(shader, spec);
        let key = owned_key.label();
        let alias_key: String = spec.aliases.iter().map(|(n, t)| format!("{n}={t};")).collect();
        let module_key = format!("{}:{}", shader.name, alias_key);
        let module = {
            let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
            match modules.get(&module_key) {
                Some(m) => m.clone(),
                None => {
                    let source = specialised_source(shader, spec.aliases);
                    let (module, error) = core.capture_errors(|| {
                        core.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                            label: Some(shader.name),
                            source: wgpu::ShaderSource::Wgsl(source.into()),
                        })
                    });
                    if let Some(e) = error {
                        return Err(Error::internal(format!("WGSL shader {module_key} failed to compile: {e}")));
                    }
                    modules.insert(module_key.clone(), module.clone());
                    module
                }
            }
        };
        let (layout, pipeline_layout) = self.layout(core, shader);
        let (pipeline, error) = core.capture_errors(|| {
            core.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&key),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(spec.entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: spec.constants,
                    zero_initialize_workgroup_memory: false,
                },
                cache: None,
            })
        });
        if let Some(e) = error {
            return Err(Error::internal(format!("compute pipeline {key} failed: {e}")));
        }
        let pipeline = Arc::new(Pipeline { pipeline, layout });
        let mut pipelines = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = pipelines.entry(hash).or_default();
        // Two threads may have built the same pipeline; keep the first.
        match bucket.iter().find(|(key, _)| key.matches(shader, spec)) {
            Some((_, first)) => return Ok(first.clone()),
            None => bucket.push((owned_key, pipeline.clone())),
        }
        Ok(pipeline)
    }
}

/// A storage binding: an aligned window of a buffer.
#[derive(Clone, Copy)]
pub struct Binding<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u64,
    pub size: u64,
}

/// The start of `storage_window`'s error for a tensor larger than one binding (kernels that can
/// split their work recognise it: `kernels::batch`).
pub const BINDING_LIMIT_ERROR: &str = "tensor window of";

/// Binds the smallest aligned window that covers `slice`. Returns the binding and the index, in
/// units of `element_size`, of the slice's first element inside the window: storage-binding offsets
/// must be multiples of `min_storage_buffer_offset_alignment`, element offsets need not be.
pub fn storage_window<'a>(core: &DeviceCore, slice: &'a DeviceSlice, element_size: u64) -> Result<(Binding<'a>, u32)> {
    let align = core.limits.min_storage_buffer_offset_alignment as u64;
    let start = slice.offset / align * align;
    let end = (slice.offset + slice.len.max(1)).div_ceil(4) * 4;
    let end = end.min(slice.buffer().size()).max(start + 4);
    let size = end - start;
    if size > core.limits.max_storage_buffer_binding_size {
        return Err(Error::unimplemented(format!(
            "{BINDING_LIMIT_ERROR} {size} bytes exceeds this adapter's max_storage_buffer_binding_size ({})",
            core.limits.max_storage_buffer_binding_size
        )));
    }
    let skew = slice.offset - start;
    if !skew.is_multiple_of(element_size) {
        return Err(Error::invalid_argument(format!(
            "device address offset {} is not aligned to the element size {element_size}",
            slice.offset
        )));
    }
    Ok((Binding { buffer: slice.buffer(), offset: start, size }, (skew / element_size) as u32))
}

/// The loop iterations one invocation may spend on its main loop, `overhead` kept for its other
/// loops (trees, slices), at least 1.
pub fn loop_budget(core: &DeviceCore, overhead: u64) -> u64 {
    core.max_loop_iterations.saturating_sub(overhead).max(1)
}

/// The iterations llvmpipe counts for nested loops of `trips` iterations each, outermost first:
/// every pass through a loop's end, the last one (whose test exits) included, so a loop of n
/// iterations costs n + 1 each time it runs.
pub fn nested_loop_iterations(trips: &[u64]) -> u64 {
    trips.iter().rev().fold(0, |inner: u64, &trip| trip.saturating_mul(inner.saturating_add(1)).saturating_add(1))
}

/// Whether `iterations` loop iterations fit in one invocation: the adapter's
/// `max_loop_iterations` (llvmpipe cuts longer loops short silently).
pub fn loops_fit(core: &DeviceCore, iterations: u64) -> bool {
    iterations <= core.max_loop_iterations
}

/// What `check_loop_iterations` refusals say (see `is_loop_limit`).
const LOOP_LIMIT_ERROR: &str = "loop iterations per invocation exceed the";

/// Refuses work whose loops would run more than the adapter's `max_loop_iterations` in one
/// invocation (llvmpipe cuts them short silently).
pub fn check_loop_iterations(core: &DeviceCore, iterations: u64, what: &str) -> Result<()> {
    if !loops_fit(core, iterations) {
        return Err(Error::unimplemented(format!(
            "{what}: {iterations} {LOOP_LIMIT_ERROR} {} this adapter runs (llvmpipe ends longer loops early)",
            core.max_loop_iterations
        )));
    }
    Ok(())
}

/// Whether `e` is a `check_loop_iterations` refusal.
pub fn is_loop_limit(e: &Error) -> bool {
    e.code == crate::error::Code::Unimplemented && e.message.contains(LOOP_LIMIT_ERROR)
}

/// `storage_window` widened to whole vec4s of `element_size` elements, for shaders that view the
/// binding as `array<vec4<T>>`. None where the widened window would leave the buffer or exceed the
/// binding limit. (Reading past the tensor is harmless; callers write only whole vec4s inside it.)
pub fn vec4_window<'a>(
    core: &DeviceCore,
    slice: &'a DeviceSlice,
    element_size: u64,
) -> Result<Option<(Binding<'a>, u32)>> {
    let (mut binding, first) = storage_window(core, slice, element_size)?;
    let vec_bytes = 4 * element_size;
    binding.size = binding.size.div_ceil(vec_bytes) * vec_bytes;
    let fits = binding.offset + binding.size <= slice.buffer().size()
        && binding.size <= core.limits.max_storage_buffer_binding_size;
    Ok(fits.then_some((binding, first)))
}

/// `vec4_window` where the slice also starts on a vec4 of its binding (its element offset a
/// multiple of 4), as kernels that index the binding in vec4s need; None otherwise.
pub fn aligned_vec4_window<'a>(
    core: &DeviceCore,
    slice: &'a DeviceSlice,
    element_size: u64,
) -> Result<Option<(Binding<'a>, u32)>> {
    Ok(vec4_window(core, slice, element_size)?.filter(|&(_, first)| first.is_multiple_of(4)))
}

/// Outputs smaller than this keep one dispatch of their scalar kernel: the vec4 kernels need a
/// second dispatch for the last elements.
pub const VEC4_MIN_ELEMENTS: u32 = 4096;

pub const WORKGROUP_SIZE: u32 = 256;

/// A 2D grid of `groups` workgroups within `max_compute_workgroups_per_dimension`; shaders compute
/// their linear workgroup as `wid.x + wid.y * num_workgroups.x`.
pub fn grid(core: &DeviceCore, groups: u64, label: &str) -> Result<[u32; 3]> {
    let max_dim = core.limits.max_compute_workgroups_per_dimension as u64;
    let x = groups.clamp(1, max_dim);
    let y = groups.div_ceil(x);
    if y > max_dim {
        return Err(Error::unimplemented(format!("{label}: {groups} workgroups exceed the dispatch grid")));
    }
    Ok([x as u32, y as u32, 1])
}

/// Encodes one dispatch of `invocations` threads (workgroups of `WORKGROUP_SIZE`), spread over a 2D
/// grid when they exceed `max_compute_workgroups_per_dimension`. Shaders compute their linear id as
/// `gid.x + gid.y * num_workgroups.x * WORKGROUP_SIZE`. Storage bindings come first, then the uniform.
pub fn dispatch(
    core: &DeviceCore,
    encoder: &mut Encoder,
    label: &str,
    pipeline: &Pipeline,
    storage: &[Binding],
    uniform: &[u8],
    invocations: u64,
) -> Result<()> {
    dispatch_with_texels(core, encoder, label, pipeline, storage, &[], uniform, invocations)
}

/// Encodes one dispatch of an explicit workgroup grid.
pub fn dispatch_workgroups(
    core: &DeviceCore,
    encoder: &mut Encoder,
    label: &str,
    pipeline: &Pipeline,
    storage: &[Binding],
    uniform: &[u8],
    groups: [u32; 3],
) -> Result<()> {
    dispatch_workgroups_with_texels(core, encoder, label, pipeline, storage, &[], uniform, groups)
}

/// `dispatch` for a shader with `textures` (`Shader::textures`): `texels` bind after the
/// parameter block, in order.
#[allow(clippy::too_many_arguments)]
pub fn dispatch_with_texels(
    core: &DeviceCore,
    encoder: &mut Encoder,
    label: &str,
    pipeline: &Pipeline,
    storage: &[Binding],
    texels: &[&wgpu::TextureView],
    uniform: &[u8],
    invocations: u64,
) -> Result<()> {
    if invocations == 0 {
        return Ok(());
    }
    let groups = grid(core, invocations.div_ceil(WORKGROUP_SIZE as u64), label)?;
    dispatch_workgroups_with_texels(core, encoder, label, pipeline, storage, texels, uniform, groups)
}

/// `dispatch_workgroups` with `texels` (see `dispatch_with_texels`).
#[allow(clippy::too_many_arguments)]
pub fn dispatch_workgroups_with_texels(
    core: &DeviceCore,
    encoder: &mut Encoder,
    label: &str,
    pipeline: &Pipeline,
    storage: &[Binding],
    texels: &[&wgpu::TextureView],
    uniform: &[u8],
    groups: [u32; 3],
) -> Result<()> {
    if groups.contains(&0) {
        return Ok(());
    }
    log::trace!("tensorflow-wgpu: dispatch {label} {groups:?}");
    let max_dim = core.limits.max_compute_workgroups_per_dimension;
    if groups.iter().any(|&g| g > max_dim) {
        return Err(Error::unimplemented(format!("{label}: grid {groups:?} exceeds the adapter's dispatch limit")));
    }
    let params = encoder.upload(core, Arena::Params, uniform)?;
    let key = BindGroupKey {
        layout: pipeline.layout.clone(),
        buffers: storage.iter().map(|b| (b.buffer.clone(), b.offset, b.size)).collect(),
        params: (params.buffer.clone(), params.size),
        textures: texels.iter().map(|&view| view.clone()).collect(),
    };
    let bind_group = encoder.bind_group(key, |key| {
        let mut entries: Vec<wgpu::BindGroupEntry> = key
            .buffers
            .iter()
            .enumerate()
            .map(|(i, (buffer, offset, size))| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: *offset,
                    size: wgpu::BufferSize::new(*size),
                }),
            })
            .collect();
        entries.push(wgpu::BindGroupEntry {
            binding: storage.len() as u32,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &key.params.0,
                offset: 0,
                size: wgpu::BufferSize::new(key.params.1),
            }),
        });
        // Callers pass a shader's data uniforms among `storage`, so this is the layout's
        // `storage_buffers + uniform_buffers + 1`.
        let first_texture = storage.len() as u32 + 1;
        entries.extend(key.textures.iter().zip(first_texture..).map(|(view, binding)| wgpu::BindGroupEntry {
            binding,
            resource: wgpu::BindingResource::TextureView(view),
        }));
        core.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout: &pipeline.layout,
            entries: &entries,
        })
    });
    let offset = u32::try_from(params.offset).map_err(|_| Error::internal("parameter offset past 4 GiB"))?;
    let pass = encoder.kernel_pass(core, label, groups);
    pass.set_pipeline(&pipeline.pipeline);
    pass.set_bind_group(0, &bind_group, &[offset]);
    pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
    Ok(())
}

/// Encodes the encoder's batch of small launches, if it has one, as one dispatch of one workgroup
/// (see `BatchKind`). Slots the batch did not fill repeat its first window.
pub fn dispatch_batch(core: &DeviceCore, encoder: &mut Encoder) -> Result<()> {
    let Some(batch) = encoder.batch.take() else {
        return Ok(());
    };
    let Some(first) = batch.buffers.first() else {
        return Ok(());
    };
    let bindings: Vec<Binding> = (0..batch.kind.slots)
        .map(|slot| {
            let window = batch.buffers.get(slot).unwrap_or(first);
            Binding { buffer: &window.buffer, offset: window.offset, size: window.size }
        })
        .collect();
    dispatch_workgroups(core, encoder, batch.kind.label, &batch.pipeline, &bindings, &batch.block(), [1, 1, 1])
}

#[cfg(test)]
mod tests {
    use super::nested_loop_iterations;

    #[test]
    fn nested_loops_count_every_exit() {
        assert_eq!(nested_loop_iterations(&[]), 0);
        assert_eq!(nested_loop_iterations(&[5]), 6);
        // A 255 x 256 window: 255 rows of 256 taps and an exit each, the rows' 255 passes and exit.
        assert_eq!(nested_loop_iterations(&[255, 256]), 65_791);
        assert_eq!(nested_loop_iterations(&[2, 3, 4]), 2 * (3 * (4 + 2) + 2) + 1);
        assert_eq!(nested_loop_iterations(&[u64::MAX, 2]), u64::MAX);
    }
}
