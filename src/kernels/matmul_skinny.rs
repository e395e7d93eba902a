//! Products with a small side on the CPU kernel profile (`wgsl/matmul_skinny.wgsl`): a classifier
//! head's few rows or columns (batch 1 to 16, or 10 classes), a short contraction (its weight
//! gradient, a 1x1 convolution over 24 channels). The tiled product pads such a side to 128 and
//! pays a dispatch per tile; the direct kernel gathers every operand element per lane. Here the
//! small operand is packed once into 64 KiB uniform chunks and the other streams through vec4
//! loads: one pack and one dispatch per chunk.

use crate::error::Result;
use crate::runtime::device::KernelProfile;
use crate::runtime::encoder::Encoder;
use crate::runtime::pipeline::{dispatch, dispatch_workgroups, storage_window, Binding, PipelineSpec, Shader};
use crate::runtime::{DeviceCore, Stream};

use super::matmul::Operand;
use super::{windows, DType, TensorRef};

/// `matmul_skinny.wgsl` with its loads of S and stores to D picked: element by element or as vec4s
/// (`_S4`: `cols`'s loads; `_D4`: the stores of either entry).
macro_rules! skinny_shader {
    ($name:literal, $load:literal, $store:literal) => {
        Shader {
            name: $name,
            source: concat!(
                include_str!("../../wgsl/matmul_skinny.wgsl"),
                "\nfn s_quad(kk: u32, j: u32) -> vec4<f32> { return s_quad_",
                $load,
                "(kk, j); }\nfn put_quad(r: u32, j: u32, v: vec4<f32>) { put_quad_",
                $store,
                "(r, j, v); }\nfn put_rows(r: u32, j: u32, v: vec4<f32>) { put_rows_",
                $store,
                "(r, j, v); }\n"
            ),
            storage_buffers: 2,
            uniform_buffers: 1,
            textures: 0,
        }
    };
}
pub const SHADER: Shader = skinny_shader!("matmul_skinny", "scalar", "scalar");
pub const SHADER_S4: Shader = skinny_shader!("matmul_skinny_s4", "vec4", "scalar");
pub const SHADER_D4: Shader = skinny_shader!("matmul_skinny_d4", "scalar", "vec4");
pub const SHADER_S4_D4: Shader = skinny_shader!("matmul_skinny_s4_d4", "vec4", "vec4");
pub const PACK_SHADER: Shader = Shader {
    name: "matmul_skinny_pack",
    source: include_str!("../../wgsl/matmul_skinny_pack.wgsl"),
    storage_buffers: 2,
    uniform_buffers: 0,
    textures: 0,
};

/// The packed small operand's chunk: WebGPU's default (and lavapipe's) largest uniform binding.
const CHUNK_BYTES: u64 = 64 * 1024;
const CHUNK_FLOATS: u32 = (CHUNK_BYTES / 4) as u32;
/// Rows of D one invocation computes (the packed rows are padded to blocks of this).
const BLOCK_ROWS: u32 = 8;
/// Steps of k one dispatch sums before adding to D: a running f32 sum's error grows with its
/// length (the tiled product sums 384, the direct kernel at least 512).
const MAX_CHUNK_K: u32 = 512;
/// More chunks (dispatches, and re-reads of D) than this, and the direct kernel is not much slower
/// (a contraction of 32K steps by 1 to 8 rows).
const MAX_CHUNKS: u32 = 64;
/// lavapipe's time per storage-loop iteration (`Plan::cost`) and per dispatch, on the 2-core
/// machine of the benchmarks: 4 x 2048 x 1000 (1.3M iterations, 4 chunks) took 3.5-4 ms,
/// 12544 x 24 x 144 (C transposed, 1.1M iterations, 1 chunk) 12 ms.
const LOOP_ITERATION_MS: f64 = 1.2e-5;
const DISPATCH_MS: f64 = 0.05;
/// Invocations per workgroup (`@workgroup_size` of both product entries).
const GROUP: u32 = 32;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    p: u32,
    q: u32,
    k: u32,
    row_blocks: u32,
    s_off: u32,
    s_ks: u32,
    s_qs: u32,
    d_off: u32,
    d_rs: u32,
    d_cs: u32,
    accumulate: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PackParams {
    p: u32,
    k: u32,
    off: u32,
    rs: u32,
    ks: u32,
    row_blocks: u32,
    chunk_k: u32,
    used: u32,
    chunks: u32,
}

/// A 2-D view of a tensor: `[rows, cols]` with element strides.
#[derive(Clone, Copy)]
struct View<'a> {
    tensor: &'a TensorRef,
    rows: u32,
    cols: u32,
    rs: u32,
    cs: u32,
}

/// D[p, q] = U[p, k] x S[k, q]: C itself (U = op(A)), or C transposed (U = op(B) transposed).
pub(super) struct Plan<'a> {
    u: View<'a>,
    s: View<'a>,
    /// D's strides in C: (n, 1), or (1, n) for C transposed.
    d_strides: (u32, u32),
    row_blocks: u32,
    chunk_k: u32,
    chunks: u32,
}

impl Plan<'_> {
    /// Whether `dots` reads S (S's k contiguous, vec4s along it), for S at element offset `s_off`
    /// in its binding.
    fn dots(&self, s_off: u32) -> bool {
        self.s.rs == 1 && self.s.cs.is_multiple_of(4) && self.u.cols.is_multiple_of(4) && s_off.is_multiple_of(4)
    }

    /// Whether `cols` loads S as vec4s: its columns contiguous, every vec4 inside a row.
    fn s_vec4(&self, s_off: u32) -> bool {
        let q = self.s.cols;
        self.s.cs == 1 && self.s.rs.is_multiple_of(4) && s_off.is_multiple_of(4) && q.is_multiple_of(4)
    }

    /// Whether the entry (`dots` or `cols`) stores D as vec4s: 4 rows of a column where D's rows
    /// are contiguous, or 4 columns of a row where its columns are.
    fn d_vec4(&self, dots: bool, d_off: u32) -> bool {
        let (p, q, (rs, cs)) = (self.u.rows, self.s.cols, self.d_strides);
        let (along, across, length) = if dots { (rs, cs, p) } else { (cs, rs, q) };
        along == 1 && across.is_multiple_of(4) && d_off.is_multiple_of(4) && length.is_multiple_of(4)
    }

    /// Rows of D one `dots` invocation computes (the shader's `DOT_ROWS`).
    fn dot_rows(&self) -> u32 {
        match self.u.rows {
            0..=4 => 4,
            5..=8 => 8,
            _ => 16,
        }
    }

    /// The grid of each product dispatch: an invocation per column of D and `dot_rows` rows
    /// (`dots`), or per four columns and 8 rows (`cols`).
    fn groups(&self, dots: bool) -> [u32; 3] {
        if dots {
            [self.s.cols.div_ceil(GROUP), self.u.rows.div_ceil(self.dot_rows()), 1]
        } else {
            [self.s.cols.div_ceil(4).div_ceil(GROUP), self.row_blocks, 1]
        }
    }

    /// The plan's time on lavapipe, to weigh against the tiled product's.
    pub(super) fn estimated_ms(&self) -> f64 {
        self.cost() as f64 * LOOP_ITERATION_MS + f64::from(self.chunks) * DISPATCH_MS
    }

    /// Storage loads of S and stores of D, and the packer's, in per-lane loop iterations (a vec4
    /// counts as one), for S and D at aligned offsets.
    fn cost(&self) -> u64 {
        let (k, q) = (u64::from(self.s.rows), u64::from(self.s.cols));
        let vec4 = |on: bool| if on { 4 } else { 1 };
        let dots = self.dots(0);
        let (row_groups, s_vec4) =
            if dots { (self.u.rows.div_ceil(self.dot_rows()), 4) } else { (self.row_blocks, vec4(self.s_vec4(0))) };
        let loads = u64::from(row_groups) * k * q / s_vec4;
        // Each chunk after the first reads D back.
        let stores = u64::from(2 * self.chunks - 1) * u64::from(self.u.rows) * q / vec4(self.d_vec4(dots, 0));
        // The packer loads U element by element and stores vec4s of padded rows.
        let packing = u64::from(self.u.rows) * k + u64::from(self.row_blocks * BLOCK_ROWS / 4) * k;
        loads + stores + packing
    }
}

/// The cheaper of the two plans for C = op(A) x op(B) on this device (C, or C transposed), where
/// its small operand packs into at most `MAX_CHUNKS` chunks; `None` where neither does, or off the
/// CPU kernel profile, for batches and for types other than float32.
pub(super) fn plan<'a>(
    core: &DeviceCore,
    dtype: DType,
    batches: u64,
    a: &Operand<'a>,
    b: &Operand<'a>,
) -> Option<Plan<'a>> {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    // The CPU kernel profile's (CPU adapters', or forced by TF_WGPU_KERNELS=cpu).
    let cpu = core.kernel_profile() == KernelProfile::Cpu;
    let uniforms_fit = core.limits.max_uniform_buffer_binding_size >= CHUNK_BYTES;
    if !cpu || !uniforms_fit || dtype != DType::F32 || batches != 1 {
        return None;
    }
    let op_a = View { tensor: a.tensor, rows: m, cols: k, rs: a.rs, cs: a.cs };
    let op_b = View { tensor: b.tensor, rows: k, cols: n, rs: b.rs, cs: b.cs };
    let transposed = |v: View<'a>| View { rows: v.cols, cols: v.rows, rs: v.cs, cs: v.rs, ..v };
    let candidates = [(op_a, op_b, (n, 1)), (transposed(op_b), transposed(op_a), (1, n))];
    let max_groups = core.limits.max_compute_workgroups_per_dimension;
    candidates
        .into_iter()
        .filter_map(|(u, s, d_strides)| chunked(u, s, d_strides))
        .filter(|plan| plan.groups(plan.dots(0)).iter().chain(&plan.groups(false)).all(|&g| g <= max_groups))
        .filter(|plan| u64::from(plan.chunks) * CHUNK_BYTES <= windows::binding_limit(core))
        .min_by(|x, y| x.estimated_ms().total_cmp(&y.estimated_ms()))
}

fn chunked<'a>(u: View<'a>, s: View<'a>, d_strides: (u32, u32)) -> Option<Plan<'a>> {
    // Past this many rows not even 4 steps of k fit a chunk.
    if u.rows == 0 || u.rows > CHUNK_FLOATS / 4 {
        return None;
    }
    let row_blocks = u.rows.div_ceil(BLOCK_ROWS);
    let chunk_k = (CHUNK_FLOATS / (row_blocks * BLOCK_ROWS)).min(MAX_CHUNK_K) / 4 * 4;
    if chunk_k == 0 {
        return None;
    }
    let chunks = u.cols.div_ceil(chunk_k);
    (chunks <= MAX_CHUNKS).then_some(Plan { u, s, d_strides, row_blocks, chunk_k, chunks })
}

/// Encodes the product into `out` (C, contiguous): the pack, then one dispatch per chunk of k. One
/// `encode` call for all of it: the packed operand lives in device-wide scratch.
pub(super) fn launch(stream: &Stream, plan: &Plan, out: &TensorRef) -> Result<()> {
    let Plan { u, s, d_strides, row_blocks, chunk_k, chunks } = *plan;
    let (p, k, q) = (u.rows, u.cols, s.cols);
    let device = stream.device();
    let s_mem = device.memory.resolve(s.tensor.address, s.tensor.byte_len())?;
    let d_mem = device.memory.resolve(out.address, out.byte_len())?;
    stream.encode(|core, encoder| {
        let (s_bind, s_off) = storage_window(core, &s_mem, 4)?;
        let (d_bind, d_off) = storage_window(core, &d_mem, 4)?;
        // `dots` reads S along k as vec4s; `cols` along q, as vec4s or element by element.
        let dots = plan.dots(s_off);
        let (s_vec4, d_vec4) = (plan.s_vec4(s_off), plan.d_vec4(dots, d_off));
        let packed = pack(core, encoder, u, (row_blocks, chunk_k, chunks), dots)?;
        let constants = [("EIGHT", if p > 4 { 1.0 } else { 0.0 }), ("DOT_ROWS", f64::from(plan.dot_rows()))];
        let entry = if dots { "dots" } else { "cols" };
        let shader = match (s_vec4 && !dots, d_vec4) {
            (false, false) => &SHADER,
            (true, false) => &SHADER_S4,
            (false, true) => &SHADER_D4,
            (true, true) => &SHADER_S4_D4,
        };
        log::trace!("tensorflow-wgpu: {} {entry}: D {p} x {q}, k {k} in {chunks} chunks", shader.name);
        let spec = PipelineSpec { entry, aliases: &[], constants: &constants };
        let pipeline = core.pipelines.get(core, shader, &spec)?;
        let groups = plan.groups(dots);
        for chunk in 0..chunks {
            let k0 = chunk * chunk_k;
            let params = Params {
                p,
                q,
                k: chunk_k.min(k - k0),
                row_blocks,
                s_off: s_off + k0 * s.rs,
                s_ks: s.rs,
                s_qs: s.cs,
                d_off,
                d_rs: d_strides.0,
                d_cs: d_strides.1,
                accumulate: u32::from(chunk > 0),
            };
            let chunk_binding = Binding { buffer: &packed, offset: u64::from(chunk) * CHUNK_BYTES, size: CHUNK_BYTES };
            let bindings = [s_bind, d_bind, chunk_binding];
            dispatch_workgroups(
                core,
                encoder,
                "matmul skinny",
                &pipeline,
                &bindings,
                bytemuck::bytes_of(&params),
                groups,
            )?;
        }
        Ok(())
    })
}

/// Packs U into `chunks` uniform chunks of `chunk_k` steps of k each, laid out for `dots` or
/// `cols`; returns the scratch buffer.
fn pack(
    core: &DeviceCore,
    encoder: &mut Encoder,
    u: View,
    (row_blocks, chunk_k, chunks): (u32, u32, u32),
    dots: bool,
) -> Result<wgpu::Buffer> {
    let scratch = core.scratch.get(core, "matmul skinny packed operand", u64::from(chunks) * CHUNK_BYTES)?;
    let u_mem = core.memory.resolve(u.tensor.address, u.tensor.byte_len())?;
    let (u_bind, off) = storage_window(core, &u_mem, 4)?;
    let used = chunk_k * row_blocks * BLOCK_ROWS / 4;
    let params = PackParams { p: u.rows, k: u.cols, off, rs: u.rs, ks: u.cs, row_blocks, chunk_k, used, chunks };
    let constants = [("DOTS", if dots { 1.0 } else { 0.0 })];
    let pipeline =
        core.pipelines.get(core, &PACK_SHADER, &PipelineSpec { entry: "pack", aliases: &[], constants: &constants })?;
    let dst = Binding { buffer: &scratch, offset: 0, size: u64::from(chunks) * CHUNK_BYTES };
    let invocations = u64::from(used) * u64::from(chunks);
    dispatch(core, encoder, "matmul skinny pack", &pipeline, &[u_bind, dst], bytemuck::bytes_of(&params), invocations)?;
    Ok(scratch)
}
