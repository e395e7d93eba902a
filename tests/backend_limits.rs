//! Every compute pipeline the plugin creates must be creatable on wgpu's Metal, DX12 and Vulkan
//! backends. A static audit with naga measures each shader's entry points against
//! `portable_floor()`; shaders above it must name the run-time guard that keeps them off such
//! devices. Then lavapipe, opened with the portable limits, creates every pipeline that fits.

use std::collections::{BTreeMap, BTreeSet};

use tensorflow_wgpu::kernels::{
    batch_norm, binary, cast, compact, complex, conv, im2col, index, integer, matmul, matmul_gpu, matmul_skinny,
    matrix, nn, random, reduce, resize, rnn, scan, scatter, slice, sort, special, unary, volume,
};
use tensorflow_wgpu::runtime::device::{portable_floor, portable_limits, requested_features, LimitsProfile};
use tensorflow_wgpu::runtime::pipeline::{specialised_source, PipelineSpec, Shader};
use tensorflow_wgpu::runtime::{instance, transfer};

type Aliases = &'static [(&'static str, &'static str)];

const F32: Aliases = &[("T", "f32")];
const F16: Aliases = &[("T", "f16")];
const FLOATS: &[Aliases] = &[F32, F16];
const NONE: &[Aliases] = &[&[]];
const CASTS: &[Aliases] = &[
    &[("S", "f32"), ("D", "i32"), ("W", "f32")],
    &[("S", "i32"), ("D", "f32"), ("W", "f32")],
    &[("S", "f32"), ("D", "u32"), ("W", "f32")],
    &[("S", "u32"), ("D", "f32"), ("W", "f32")],
    &[("S", "f32"), ("D", "f16"), ("W", "f32")],
    &[("S", "f16"), ("D", "f32"), ("W", "f32")],
    &[("S", "f64"), ("D", "f32"), ("W", "f64")],
    &[("S", "i32"), ("D", "f64"), ("W", "f64")],
];
/// The resize shader: the image's storage type `S` (words for the nearest-neighbour gathers), the
/// float output's `O` (f64 for float64 gradient sums).
const RESIZES: &[Aliases] = &[
    &[("S", "f32"), ("O", "f32")],
    &[("S", "f16"), ("O", "f32")],
    &[("S", "f64"), ("O", "f32")],
    &[("S", "u32"), ("O", "f32")],
    &[("S", "f64"), ("O", "f64")],
];
/// The direct matmul: storage type `T`, accumulator `ACC`.
const MATMULS: &[Aliases] =
    &[&[("T", "f32"), ("ACC", "f32")], &[("T", "f16"), ("ACC", "f32")], &[("T", "f64"), ("ACC", "f64")]];

/// Every `Shader` constant of the crate, by its path under the crate root, with the
/// specialisations tests/wgsl_validation.rs validates (`BATCH_SHADER`: the f32 the kernel uses).
fn shaders() -> Vec<(&'static str, &'static Shader, &'static [Aliases])> {
    vec![
        ("runtime::transfer::MEMORY_SHADER", &transfer::MEMORY_SHADER, NONE),
        ("kernels::binary::SHADER", &binary::SHADER, FLOATS),
        ("kernels::binary::BATCH_SHADER", &binary::BATCH_SHADER, &[F32]),
        ("kernels::binary::TEXELS_SHADER", &binary::TEXELS_SHADER, &[F32]),
        ("kernels::unary::TEXELS_SHADER", &unary::TEXELS_SHADER, &[F32]),
        ("kernels::index::TEXELS_SHADER", &index::TEXELS_SHADER, NONE),
        ("kernels::reduce::TEXELS_SHADER", &reduce::TEXELS_SHADER, NONE),
        ("kernels::conv::TEXELS_SHADER", &conv::TEXELS_SHADER, NONE),
        ("kernels::binary::COMPARE_SHADER", &binary::COMPARE_SHADER, FLOATS),
        ("kernels::binary::LOGICAL_SHADER", &binary::LOGICAL_SHADER, NONE),
        ("kernels::binary::SELECT_SHADER", &binary::SELECT_SHADER, NONE),
        ("kernels::integer::SHADER", &integer::SHADER, NONE),
        ("kernels::complex::SHADER", &complex::SHADER, NONE),
        ("kernels::special::SHADER", &special::SHADER, &[&[("T", "f32"), ("M", "f32")]]),
        ("kernels::special::FLOAT64_SHADER", &special::FLOAT64_SHADER, &[&[("T", "f64"), ("M", "f64")]]),
        ("kernels::sort::SHADER", &sort::SHADER, NONE),
        ("kernels::compact::SHADER", &compact::SHADER, NONE),
        ("kernels::unique::SHADER", &tensorflow_wgpu::kernels::unique::SHADER, NONE),
        ("kernels::matrix::DIAG_SHADER", &matrix::DIAG_SHADER, NONE),
        ("kernels::reduce::INTEGER_SHADER", &reduce::INTEGER_SHADER, NONE),
        ("kernels::binary::FLOAT64_SHADER", &binary::FLOAT64_SHADER, NONE),
        ("kernels::reduce::SHADER", &reduce::SHADER, NONE),
        ("kernels::reduce::F64_SHADER", &reduce::F64_SHADER, NONE),
        ("kernels::matmul::SHADER", &matmul::SHADER, MATMULS),
        ("kernels::matmul_gpu::SHADER", &matmul_gpu::SHADER, MATMULS),
        ("kernels::matmul::PACK_SHADER", &matmul::PACK_SHADER, FLOATS),
        ("kernels::matmul::TILES_SHADER", &matmul::TILES_SHADER, FLOATS),
        ("kernels::matmul_skinny::SHADER", &matmul_skinny::SHADER, NONE),
        ("kernels::matmul_skinny::SHADER_S4", &matmul_skinny::SHADER_S4, NONE),
        ("kernels::matmul_skinny::SHADER_D4", &matmul_skinny::SHADER_D4, NONE),
        ("kernels::matmul_skinny::SHADER_S4_D4", &matmul_skinny::SHADER_S4_D4, NONE),
        ("kernels::matmul_skinny::PACK_SHADER", &matmul_skinny::PACK_SHADER, NONE),
        ("kernels::matmul::TILES_SUBGROUP_SHADER", &matmul::TILES_SUBGROUP_SHADER, FLOATS),
        ("kernels::matmul::TILES_TEXELS_SHADER", &matmul::TILES_TEXELS_SHADER, FLOATS),
        ("kernels::im2col::WINDOW_SHADER", &im2col::WINDOW_SHADER, &[F32]),
        ("kernels::im2col::CONV_TILES_SHADER", &im2col::CONV_TILES_SHADER, &[F32]),
        ("kernels::im2col::CONV_TEXELS_SHADER", &im2col::CONV_TEXELS_SHADER, &[F32]),
        ("kernels::nn::SOFTMAX_SHADER", &nn::SOFTMAX_SHADER, &[&[("F", "f32")]]),
        ("kernels::nn::XENT_SHADER", &nn::XENT_SHADER, &[&[("F", "f32")]]),
        ("kernels::nn::SOFTMAX_F64_SHADER", &nn::SOFTMAX_F64_SHADER, &[&[("F", "f64")]]),
        ("kernels::nn::XENT_F64_SHADER", &nn::XENT_F64_SHADER, &[&[("F", "f64")]]),
        ("kernels::random::SHADER", &random::SHADER, NONE),
        ("kernels::random::F64_SHADER", &random::F64_SHADER, NONE),
        ("kernels::conv::SHADER", &conv::SHADER, NONE),
        ("kernels::conv::FLOAT64_SHADER", &conv::FLOAT64_SHADER, NONE),
        ("kernels::batch_norm::SHADER", &batch_norm::SHADER, NONE),
        ("kernels::scatter::SHADER", &scatter::SHADER, NONE),
        ("kernels::scatter::CHAIN_SHADER", &scatter::CHAIN_SHADER, NONE),
        ("kernels::scatter::CHAIN_F64_SHADER", &scatter::CHAIN_F64_SHADER, NONE),
        ("kernels::index::SHADER", &index::SHADER, NONE),
        ("kernels::slice::SHADER", &slice::SHADER, NONE),
        ("kernels::slice::REVERSE_SEQUENCE_SHADER", &slice::REVERSE_SEQUENCE_SHADER, NONE),
        ("kernels::rnn::SHADER", &rnn::SHADER, NONE),
        ("kernels::rnn::FLOAT64_SHADER", &rnn::FLOAT64_SHADER, NONE),
        ("kernels::resize::SHADER", &resize::SHADER, RESIZES),
        ("kernels::cast::SHADER", &cast::SHADER, CASTS),
        ("kernels::unary::SHADER", &unary::SHADER, FLOATS),
        ("kernels::unary::CLASSIFY_SHADER", &unary::CLASSIFY_SHADER, NONE),
        ("kernels::volume::SHADER", &volume::SHADER, NONE),
        ("kernels::volume::FLOAT64_SHADER", &volume::FLOAT64_SHADER, NONE),
        ("kernels::matrix::SHADER", &matrix::SHADER, NONE),
        ("kernels::scan::SHADER", &scan::SHADER, NONE),
        ("kernels::scan::FLOAT64_SHADER", &scan::FLOAT64_SHADER, NONE),
    ]
}

/// What one compute entry point of one specialisation asks of a device.
#[derive(Debug)]
struct Entry {
    shader: &'static str,
    aliases: Aliases,
    entry: &'static str,
    workgroup_size: [u32; 3],
    workgroup_bytes: u32,
    /// The largest uniform binding's type, in bytes.
    uniform_bytes: u32,
    storage_buffers: u32,
    /// The data uniforms and the parameter block.
    uniform_buffers: u32,
    features: wgpu::Features,
}

fn parse(shader: &Shader, aliases: Aliases) -> naga::Module {
    let source = specialised_source(shader, aliases);
    naga::front::wgsl::parse_str(&source)
        .unwrap_or_else(|e| panic!("{} {aliases:?}: {}", shader.name, e.emit_to_string(&source)))
}

fn validate(module: &naga::Module, caps: naga::valid::Capabilities) -> Option<naga::valid::ModuleInfo> {
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps).validate(module).ok()
}

/// The features wgpu needs to create the module: it validates the whole module, all entry points.
fn required_features(module: &naga::Module) -> wgpu::Features {
    use naga::valid::Capabilities as C;
    let mut features = wgpu::Features::empty();
    if validate(module, C::all() - C::SHADER_FLOAT16).is_none() {
        features |= wgpu::Features::SHADER_F16;
    }
    if validate(module, C::all() - C::FLOAT64).is_none() {
        features |= wgpu::Features::SHADER_F64;
    }
    if validate(module, C::all() - C::SUBGROUP - C::SUBGROUP_BARRIER).is_none() {
        features |= wgpu::Features::SUBGROUP;
    }
    features
}

/// Whether entry point `index` binds only what pipeline.rs's layout for `shader` declares: storage
/// buffers at `0..s`, uniform data at `s..s+u`, the parameter block at `s+u`. Entry points of a
/// shared source that bind otherwise belong to another `Shader` constant.
fn matches_layout(module: &naga::Module, info: &naga::valid::ModuleInfo, index: usize, shader: &Shader) -> bool {
    let (s, u, t) = (shader.storage_buffers, shader.uniform_buffers, shader.textures);
    module.global_variables.iter().all(|(handle, var)| {
        if info.get_entry_point(index)[handle].is_empty() {
            return true;
        }
        match (&var.binding, var.space) {
            (None, _) => true,
            (Some(b), naga::AddressSpace::Storage { .. }) => b.group == 0 && b.binding < s,
            (Some(b), naga::AddressSpace::Uniform) => b.group == 0 && (s..=s + u).contains(&b.binding),
            // Sampled textures bind after the parameter block (`Shader::textures`).
            (Some(b), naga::AddressSpace::Handle) => b.group == 0 && (s + u + 1..s + u + 1 + t).contains(&b.binding),
            _ => false,
        }
    })
}

/// The compute entry points of `shader` specialised by `aliases` that its layout serves, with
/// override constants at their defaults (the largest workgroups the kernels pick: softmax and xent
/// take `WORKGROUP` 64 or 256, the default).
fn audit(label: &'static str, shader: &Shader, aliases: Aliases) -> Vec<Entry> {
    let module = parse(shader, aliases);
    let features = required_features(&module);
    let info = validate(&module, naga::valid::Capabilities::all())
        .unwrap_or_else(|| panic!("{label} {aliases:?} does not validate"));
    let (module, info) = naga::back::pipeline_constants::process_overrides(&module, &info, None, &Default::default())
        .unwrap_or_else(|e| panic!("{label} {aliases:?}: override constants: {e:?}"));
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("type layouts");
    let bytes_of = |index: usize, space: naga::AddressSpace| {
        module
            .global_variables
            .iter()
            .filter(|(handle, var)| var.space == space && !info.get_entry_point(index)[*handle].is_empty())
            .map(|(_, var)| layouter[var.ty].size)
            .collect::<Vec<u32>>()
    };
    module
        .entry_points
        .iter()
        .enumerate()
        .filter(|(index, ep)| ep.stage == naga::ShaderStage::Compute && matches_layout(&module, &info, *index, shader))
        .map(|(index, ep)| Entry {
            shader: label,
            aliases,
            entry: Box::leak(ep.name.clone().into_boxed_str()),
            workgroup_size: ep.workgroup_size,
            workgroup_bytes: bytes_of(index, naga::AddressSpace::WorkGroup).iter().sum(),
            uniform_bytes: bytes_of(index, naga::AddressSpace::Uniform).into_iter().max().unwrap_or(0),
            storage_buffers: shader.storage_buffers,
            uniform_buffers: shader.uniform_buffers + 1,
            features,
        })
        .collect()
}

/// Why `entry` cannot be created (or bound) on a device with `limits` and `features`; empty
/// where it can.
fn misfits(entry: &Entry, limits: &wgpu::Limits, features: wgpu::Features) -> Vec<String> {
    let [x, y, z] = entry.workgroup_size;
    let buffers = entry.storage_buffers + entry.uniform_buffers;
    let checks = [
        (entry.storage_buffers, limits.max_storage_buffers_per_shader_stage, "storage buffers"),
        (entry.uniform_buffers, limits.max_uniform_buffers_per_shader_stage, "uniform buffers"),
        (buffers, limits.max_buffers_and_acceleration_structures_per_shader_stage, "buffers (Metal's shared slots)"),
        (buffers, limits.max_bindings_per_bind_group, "bindings per bind group"),
        (1, limits.max_bind_groups, "bind groups"),
        (1, limits.max_dynamic_uniform_buffers_per_pipeline_layout, "dynamic uniform buffers"),
        (x, limits.max_compute_workgroup_size_x, "workgroup size x"),
        (y, limits.max_compute_workgroup_size_y, "workgroup size y"),
        (z, limits.max_compute_workgroup_size_z, "workgroup size z"),
        (x * y * z, limits.max_compute_invocations_per_workgroup, "invocations per workgroup"),
        (entry.workgroup_bytes, limits.max_compute_workgroup_storage_size, "workgroup bytes"),
    ];
    let mut out: Vec<String> =
        checks.iter().filter(|(n, max, _)| n > max).map(|(n, max, what)| format!("{what}: {n} > {max}")).collect();
    if u64::from(entry.uniform_bytes) > limits.max_uniform_buffer_binding_size {
        out.push(format!(
            "uniform binding of {} bytes > {}",
            entry.uniform_bytes, limits.max_uniform_buffer_binding_size
        ));
    }
    // One misfit per missing feature, so that each is matched to its own guard.
    let missing = entry.features - features;
    for (name, feature) in [
        ("SHADER_F16", wgpu::Features::SHADER_F16),
        ("SHADER_F64", wgpu::Features::SHADER_F64),
        ("SUBGROUP", wgpu::Features::SUBGROUP),
    ] {
        if missing.contains(feature) {
            out.push(format!("needs {name}"));
        }
    }
    out
}

fn portable_features() -> wgpu::Features {
    requested_features(wgpu::Features::all(), LimitsProfile::Portable)
}

fn all_entries() -> Vec<Entry> {
    shaders()
        .into_iter()
        .flat_map(|(label, shader, specs)| specs.iter().flat_map(move |&aliases| audit(label, shader, aliases)))
        .collect()
}

/// What a run-time guard covers: one shader's every misfit, or every float16 (float64)
/// specialisation's need of SHADER_F16 (SHADER_F64).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Shader(&'static str),
    Float16,
    Float64,
}

/// A run-time check that keeps a shader above the floor off devices that cannot create it: called
/// with a device's limits, its adapter's features and the profile it was opened with.
struct Guard {
    scope: Scope,
    /// The misfits (their leading words, as `misfits` writes them) the guard checks; any other
    /// misfit of the same shader is unguarded.
    covers: &'static [&'static str],
    name: &'static str,
    allows: fn(&wgpu::Limits, wgpu::Features, LimitsProfile) -> bool,
}

const GUARDS: &[Guard] = &[
    Guard {
        scope: Scope::Shader("kernels::binary::BATCH_SHADER"),
        covers: &["storage buffers", "buffers (Metal's shared slots)"],
        name: "binary::batch_fits (launch_batched)",
        allows: |limits, _, _| binary::batch_fits(limits),
    },
    Guard {
        scope: Scope::Shader("kernels::matmul::TILES_SUBGROUP_SHADER"),
        covers: &["needs SUBGROUP"],
        name: "matmul::subgroup_tiles_fit (tile_kernel picks TILES_SHADER)",
        allows: |_, features, profile| matmul::subgroup_tiles_fit(requested_features(features, profile), 8),
    },
    Guard {
        scope: Scope::Shader("kernels::matmul::TILES_TEXELS_SHADER"),
        covers: &["needs SUBGROUP"],
        name: "matmul::subgroup_tiles_fit (texel_products_apply needs the subgroup kernel)",
        allows: |_, features, profile| matmul::subgroup_tiles_fit(requested_features(features, profile), 8),
    },
    Guard {
        scope: Scope::Shader("kernels::im2col::CONV_TILES_SHADER"),
        covers: &["needs SUBGROUP"],
        name: "matmul::subgroup_tiles_fit (launch_conv_windows declines)",
        allows: |_, features, profile| matmul::subgroup_tiles_fit(requested_features(features, profile), 8),
    },
    Guard {
        scope: Scope::Shader("kernels::im2col::CONV_TEXELS_SHADER"),
        covers: &["needs SUBGROUP"],
        name: "matmul::subgroup_tiles_fit (launch_conv_windows declines)",
        allows: |_, features, profile| matmul::subgroup_tiles_fit(requested_features(features, profile), 8),
    },
    Guard {
        scope: Scope::Float16,
        covers: &["needs SHADER_F16"],
        name: "requested_features, which instance::all_adapters_support and so build_table's float16 \
               registration follow",
        allows: |_, features, profile| requested_features(features, profile).contains(wgpu::Features::SHADER_F16),
    },
    Guard {
        scope: Scope::Float64,
        covers: &["needs SHADER_F64"],
        name: "requested_features, which instance::all_adapters_support and so build_table's float64 \
               registration follow",
        allows: |_, features, profile| requested_features(features, profile).contains(wgpu::Features::SHADER_F64),
    },
];

fn guarded(entry: &Entry, misfit: &str) -> Option<&'static Guard> {
    GUARDS.iter().find(|g| {
        let in_scope = match g.scope {
            Scope::Shader(name) => name == entry.shader,
            Scope::Float16 | Scope::Float64 => true,
        };
        in_scope && g.covers.iter().any(|kind| misfit.starts_with(kind))
    })
}

#[test]
fn every_shader_constant_is_audited() {
    let mut declared = BTreeSet::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for item in std::fs::read_dir(&dir).unwrap() {
            let path = item.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let module = path.strip_prefix(&root).unwrap().with_extension("");
            let mut module: Vec<_> = module.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            if module.last().is_some_and(|m| m == "mod" || m == "lib") {
                module.pop();
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let Some((head, _)) = line.split_once(": Shader =") else { continue };
                // Any visibility: a constant the test cannot reach fails the comparison below.
                let Some((_, name)) = head.rsplit_once("const ") else { continue };
                declared.insert(format!("{}::{name}", module.join("::")));
            }
        }
    }
    let audited: BTreeSet<String> = shaders().iter().map(|(label, ..)| label.to_string()).collect();
    assert_eq!(declared, audited, "audit every Shader constant (and make it pub)");

    // Each compute entry point of each source is served by some constant's layout.
    let mut served: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for entry in all_entries() {
        let source = shaders().into_iter().find(|(label, ..)| *label == entry.shader).unwrap().1.source;
        served.entry(source).or_default().insert(entry.entry);
    }
    for (label, shader, specs) in shaders() {
        let module = parse(shader, specs[0]);
        for ep in module.entry_points.iter().filter(|ep| ep.stage == naga::ShaderStage::Compute) {
            assert!(
                served.get(shader.source).is_some_and(|s| s.contains(ep.name.as_str())),
                "{label}: entry point {} binds outside every layout of its source",
                ep.name
            );
        }
    }
}

#[test]
fn static_audit_against_the_portable_floor() {
    let floor = portable_floor();
    let features = portable_features();
    let entries = all_entries();
    println!(
        "shader | aliases | entry | storage | uniform+params | workgroup | invocations | workgroup bytes | \
         largest uniform | features"
    );
    for e in &entries {
        let [x, y, z] = e.workgroup_size;
        println!(
            "{} | {:?} | {} | {} | {} | {x}x{y}x{z} | {} | {} | {} | {:?}",
            e.shader,
            e.aliases,
            e.entry,
            e.storage_buffers,
            e.uniform_buffers,
            x * y * z,
            e.workgroup_bytes,
            e.uniform_bytes,
            e.features
        );
    }
    let mut unguarded = Vec::new();
    let mut used = BTreeSet::new();
    for e in &entries {
        for misfit in misfits(e, &floor, features) {
            match guarded(e, &misfit) {
                Some(guard) => {
                    used.insert(guard.name);
                }
                None => unguarded.push(format!("{} {:?} {}: {misfit}", e.shader, e.aliases, e.entry)),
            }
        }
    }
    assert!(unguarded.is_empty(), "above the portable floor with no run-time guard:\n{}", unguarded.join("\n"));
    for guard in GUARDS {
        assert!(used.contains(guard.name), "{}: guards nothing above the floor; drop it", guard.name);
        assert!(
            !(guard.allows)(&floor, wgpu::Features::all(), LimitsProfile::Portable),
            "{} lets its shader run at the portable floor",
            guard.name
        );
        assert!(
            (guard.allows)(&wgpu::Limits::unlimited(), wgpu::Features::all(), LimitsProfile::Adapter),
            "{} refuses even an unlimited adapter",
            guard.name
        );
    }
}

/// A made-up shader with `storage` storage buffers, workgroups of `size` and `shared` f32s of
/// workgroup memory.
fn made_up(storage: u32, size: u32, shared: u32) -> Vec<Entry> {
    let mut source = String::new();
    for b in 0..storage {
        source.push_str(&format!("@group(0) @binding({b}) var<storage, read_write> s{b}: array<f32>;\n"));
    }
    source.push_str(&format!("@group(0) @binding({storage}) var<uniform> p: vec4<u32>;\n"));
    source.push_str(&format!("var<workgroup> shared_mem: array<f32, {shared}>;\n"));
    source.push_str(&format!("@compute @workgroup_size({size})\n"));
    source.push_str("fn main(@builtin(local_invocation_index) i: u32) {\n    shared_mem[i] = f32(p.x);\n");
    for b in 0..storage {
        source.push_str(&format!("    s{b}[i] = shared_mem[i];\n"));
    }
    source.push_str("}\n");
    let shader: &'static Shader = Box::leak(Box::new(Shader {
        name: "made up",
        source: Box::leak(source.into_boxed_str()),
        storage_buffers: storage,
        uniform_buffers: 0,
        textures: 0,
    }));
    audit("made up", shader, &[])
}

#[test]
fn audit_rejects_shaders_above_the_floor() {
    let (floor, features) = (portable_floor(), portable_features());
    let check = |storage, size, shared| {
        let entries = made_up(storage, size, shared);
        assert_eq!(entries.len(), 1);
        misfits(&entries[0], &floor, features)
    };
    assert_eq!(check(8, 256, 4096), Vec::<String>::new(), "at the floor");
    assert_eq!(check(9, 64, 64), ["storage buffers: 9 > 8"]);
    assert_eq!(check(1, 512, 512), ["workgroup size x: 512 > 256", "invocations per workgroup: 512 > 256"]);
    assert_eq!(check(1, 64, 4097), ["workgroup bytes: 16388 > 16384"]);
}

#[test]
fn floor_lowers_the_adapter_and_drops_subgroups_and_f16() {
    let floor = portable_floor();
    assert_eq!(floor.max_storage_buffers_per_shader_stage, 8);
    assert_eq!(floor.max_uniform_buffers_per_shader_stage, 12);
    assert_eq!(floor.max_compute_workgroup_storage_size, 16 << 10);
    // Never above what the adapter offers.
    let small = wgpu::Limits { max_storage_buffers_per_shader_stage: 4, ..wgpu::Limits::default() };
    assert_eq!(portable_limits(&small).max_storage_buffers_per_shader_stage, 4);
    let features = portable_features();
    assert!(!features.intersects(wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16));
    let all = requested_features(wgpu::Features::all(), LimitsProfile::Adapter);
    assert!(all.contains(wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16));
}

#[test]
fn lavapipe_creates_every_fitting_pipeline_under_the_portable_limits() {
    let device = instance::open_private_device_with(0, LimitsProfile::Portable).expect("a WGPU adapter");
    // What wgpu enforces on this device: the floor, or less where lavapipe offers less.
    let actual = device.device.limits();
    let floor = portable_floor();
    assert!(actual.max_storage_buffers_per_shader_stage <= floor.max_storage_buffers_per_shader_stage);
    assert!(actual.max_uniform_buffers_per_shader_stage <= floor.max_uniform_buffers_per_shader_stage);
    assert!(actual.max_compute_workgroup_storage_size <= floor.max_compute_workgroup_storage_size);
    assert!(actual.max_compute_invocations_per_workgroup <= floor.max_compute_invocations_per_workgroup);
    assert!(!device.features.intersects(wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16));

    let (mut created, mut refused) = (0, 0);
    for entry in all_entries() {
        let shader = shaders().into_iter().find(|(label, ..)| *label == entry.shader).unwrap().1;
        let spec = PipelineSpec { entry: entry.entry, aliases: entry.aliases, constants: &[] };
        // pipeline.rs scopes the module and pipeline; this scope catches the bind group layout.
        let (result, error) = device.capture_errors(|| device.pipelines.get(&device, shader, &spec));
        let fits = misfits(&entry, &actual, device.features).is_empty();
        let what = format!("{} {:?} {}", entry.shader, entry.aliases, entry.entry);
        if fits {
            assert!(result.is_ok() && error.is_none(), "{what}: {:?} {error:?}", result.err());
            created += 1;
        } else {
            // The device enforces what the audit found: this creation must fail.
            assert!(result.is_err() || error.is_some(), "{what} was created above the portable limits");
            refused += 1;
        }
    }
    println!("{created} pipelines created, {refused} refused as the audit predicted");
    assert!(created > 100 && refused > 0);
    assert!(device.device_error().is_none(), "{:?}", device.device_error());
}

/// DX12 and Metal get HLSL and MSL from naga: every entry point that fits translates, at the
/// lowest versions wgpu-hal's backends use (shader model 5.1, MSL 2.0 for macOS 10.13). lavapipe
/// above checks the SPIR-V path.
#[test]
fn every_fitting_entry_point_translates_to_hlsl_and_msl() {
    let (floor, features) = (portable_floor(), portable_features());
    let mut translated = 0;
    for (label, shader, specs) in shaders() {
        for &aliases in specs {
            let module = parse(shader, aliases);
            let info = validate(&module, naga::valid::Capabilities::all()).unwrap();
            for entry in audit(label, shader, aliases).iter().filter(|e| misfits(e, &floor, features).is_empty()) {
                let what = format!("{label} {aliases:?} {}", entry.entry);
                let stage = (naga::ShaderStage::Compute, entry.entry);
                let (module, info) =
                    naga::back::pipeline_constants::process_overrides(&module, &info, Some(stage), &Default::default())
                        .unwrap_or_else(|e| panic!("{what}: override constants: {e:?}"));
                let entry_point = Some((stage.0, entry.entry.to_string()));

                let options = naga::back::hlsl::Options {
                    shader_model: naga::back::hlsl::ShaderModel::V5_1,
                    ..Default::default()
                };
                let pipeline = naga::back::hlsl::PipelineOptions { entry_point: entry_point.clone() };
                let mut hlsl = String::new();
                naga::back::hlsl::Writer::new(&mut hlsl, &options, &pipeline)
                    .write(&module, &info, None)
                    .unwrap_or_else(|e| panic!("{what}: HLSL: {e}"));

                let options = naga::back::msl::Options { lang_version: (2, 0), ..Default::default() };
                let pipeline = naga::back::msl::PipelineOptions { entry_point, ..Default::default() };
                let mut msl = String::new();
                naga::back::msl::Writer::new(&mut msl)
                    .write(&module, &info, &options, &pipeline)
                    .unwrap_or_else(|e| panic!("{what}: MSL: {e}"));
                translated += 1;
            }
        }
    }
    assert!(translated > 100, "{translated}");
}
