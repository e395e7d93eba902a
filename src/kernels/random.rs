//! Random numbers (`wgsl/random.wgsl`): the stateful RandomUniform, RandomStandardNormal,
//! TruncatedNormal and RandomUniformInt, whose node keeps a Philox stream seeded by its `seed` and
//! `seed2` attributes as TF's `GuardedPhiloxRandom` does, and both generations of StatelessRandomUniform,
//! StatelessRandomNormal, StatelessTruncatedNormal, StatelessRandomUniformInt and
//! StatelessRandomUniformFullInt (the first takes a seed, V2 a key, counter and algorithm), and
//! the key/counter/algorithm ops, on TF's Philox-4x32-10 stream, so that Dropout masks and initializers draw TF-CPU's bits. The seed
//! scrambling runs on the host (it is one Philox call); the fills run one invocation per group of
//! four outputs, as TF's `FillPhiloxRandom` groups them.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, storage_window, PipelineSpec, Shader};

use super::windows::binding_limit;
use super::{shader_len, validate, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "random",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/int64.wgsl"),
        include_str!("../../wgsl/random.wgsl")
    ),
    storage_buffers: 1,
    uniform_buffers: 0,
    textures: 0,
};

/// The same with the float64 normal fills (`wgsl/random_f64.wgsl`; needs SHADER_F64).
pub const F64_SHADER: Shader = Shader {
    name: "random_f64",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/int64.wgsl"),
        include_str!("../../wgsl/math_f64.wgsl"),
        include_str!("../../wgsl/random.wgsl"),
        include_str!("../../wgsl/random_f64.wgsl")
    ),
    ..SHADER
};

const W32A: u32 = 0x9E37_79B9;
const W32B: u32 = 0xBB67_AE85;
const M4X32A: u32 = 0xD251_1F53;
const M4X32B: u32 = 0xCD9E_8D57;

/// TF's `Algorithm` values for the V2 ops.
const RNG_ALG_PHILOX: i64 = 1;
const RNG_ALG_AUTO_SELECT: i64 = 3;

/// One Philox-4x32-10 block: 10 rounds of `counter` under `key`, as `random::PhiloxRandom` runs them.
pub fn philox(mut counter: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        let p0 = u64::from(M4X32A) * u64::from(counter[0]);
        let p1 = u64::from(M4X32B) * u64::from(counter[2]);
        counter =
            [(p1 >> 32) as u32 ^ counter[1] ^ key[0], p1 as u32, (p0 >> 32) as u32 ^ counter[3] ^ key[1], p0 as u32];
        if round < 9 {
            key = [key[0].wrapping_add(W32A), key[1].wrapping_add(W32B)];
        }
    }
    counter
}

/// TF's `GenerateKey`: the Philox key and counter for a two-element seed.
pub fn key_counter_from_seed(seed0: u64, seed1: u64) -> ([u32; 2], [u32; 4]) {
    let counter = [seed0 as u32, (seed0 >> 32) as u32, seed1 as u32, (seed1 >> 32) as u32];
    let mix = philox(counter, [0x3ec8_f720, 0x0246_1e29]);
    ([mix[0], mix[1]], [0, 0, mix[2], mix[3]])
}

/// TF's `Uint32ToFloat`: 23 random mantissa bits, a float in [0, 1).
pub fn uint32_to_float(x: u32) -> f32 {
    f32::from_bits((127 << 23) | (x & 0x7f_ffff)) - 1.0
}

/// StatelessRandomGetKeyCounter: seed (int32 or int64, [2]) -> key (uint64 [1]), counter
/// (uint64 [2]), all in host memory.
pub fn get_key_counter(ctx: &mut dyn KernelContext, _kernel: &KernelInstance) -> Result<()> {
    let (seed, shape) = ctx.host_input_values(0)?;
    if shape != [2] {
        return Err(Error::invalid_argument(format!("seed must have shape [2], not {shape:?}")));
    }
    let (key, counter) = key_counter_from_seed(seed[0] as u64, seed[1] as u64);
    let words = |lo: u32, hi: u32| ((u64::from(hi) << 32) | u64::from(lo)).to_ne_bytes();
    ctx.write_host_output(0, DType::U64, &[1], &words(key[0], key[1]))?;
    let mut counter_bytes = words(counter[0], counter[1]).to_vec();
    counter_bytes.extend(words(counter[2], counter[3]));
    ctx.write_host_output(1, DType::U64, &[2], &counter_bytes)
}

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    /// 32-bit words to write.
    n: u32,
    out_off: u32,
    key: [u32; 2],
    counter: [u32; 4],
    /// Integer fills: the low bound and the range's width (64-bit, low word first).
    lo: [u32; 2],
    range: [u32; 2],
    /// Integer fills: 1 for 64-bit values (two words from each pair of samples).
    wide: u32,
    /// Integer fills: 1 for the whole range of the type (the samples' bits).
    full: u32,
    /// Uniform floats: the random mantissa bits of the output type (23, or float16's 10 and
    /// bfloat16's 7: TF draws those types' values in their own precision).
    mantissa_bits: u32,
    _pad: u32,
}

/// Where a fill's Philox key and counter come from.
#[derive(Clone, Copy)]
enum Source {
    /// The stateless V2 ops: key, counter and alg inputs after the shape.
    KeyCounterAlg,
    /// The stateless first generation: a two-element seed after the shape, scrambled as TF's
    /// `GenerateKey`.
    Seed,
    /// The stateful ops: the node's own stream (`KernelInstance::philox`).
    Stateful,
}

/// The kernel's kind, from its op name.
fn source_of(kernel: &KernelInstance) -> Source {
    if !kernel.def.op.starts_with("Stateless") {
        Source::Stateful
    } else if kernel.def.op.ends_with("V2") {
        Source::KeyCounterAlg
    } else {
        Source::Seed
    }
}

/// A stateful random node's Philox generator: the key and the 128-bit counter of its next run.
pub struct PhiloxStream {
    key: [u32; 2],
    counter: u128,
}

impl PhiloxStream {
    /// TF's `GuardedPhiloxRandom::Init`: `PhiloxRandom(seed, seed2)` puts `seed` in the key and
    /// `seed2` in the counter's high words; two zero seeds draw fresh random ones.
    fn new(seed: i64, seed2: i64) -> Self {
        let (seed, seed2) =
            if seed == 0 && seed2 == 0 { (fresh_seed(), fresh_seed()) } else { (seed as u64, seed2 as u64) };
        PhiloxStream { key: [seed as u32, (seed >> 32) as u32], counter: u128::from(seed2) << 64 }
    }

    /// TF's `ReserveRandomOutputs(outputs, 256)`: this run's key and counter, and the stream
    /// skipped 256 blocks per output past them (`PhiloxRandom::Skip` is a 128-bit add).
    fn reserve(&mut self, outputs: u64) -> ([u32; 2], [u32; 4]) {
        let c = self.counter;
        self.counter = c.wrapping_add(u128::from(outputs.wrapping_mul(256)));
        (self.key, [c as u32, (c >> 32) as u32, (c >> 64) as u32, (c >> 96) as u32])
    }
}

/// A seed no two nodes share: the process's hasher keys (random per process) over a counter and
/// the clock, as TF's `random::New64` draws from the OS.
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static DRAWS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(DRAWS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    hasher.finish()
}

/// The dtype a fill writes: `dtype` for most ops, `Tout` for RandomUniformInt.
fn output_dtype(kernel: &KernelInstance) -> Result<DType> {
    kernel.dtype("dtype").or_else(|_| kernel.dtype("Tout"))
}

/// StatelessRandomUniform(V2) (float32): 23 random mantissa bits per value.
pub fn uniform(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    float_fill(ctx, kernel, "fill_uniform")
}

/// StatelessRandomNormal(V2) (float32): Box-Muller pairs of the uniform stream.
pub fn normal(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    float_fill(ctx, kernel, "fill_normal")
}

/// StatelessTruncatedNormal(V2) (float32): normal values with |v| < 2, by rejection.
pub fn truncated_normal(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    float_fill(ctx, kernel, "fill_truncated_normal")
}

fn float_fill(ctx: &mut dyn KernelContext, kernel: &KernelInstance, entry: &'static str) -> Result<()> {
    let (shape, key, counter) = stream_of(ctx, kernel)?;
    let dtype = output_dtype(kernel)?;
    let out = ctx.allocate_output(0, dtype, &shape)?;
    let uniform = entry == "fill_uniform";
    match dtype {
        DType::F64 => {
            let entry = match entry {
                "fill_uniform" => "fill_uniform_f64",
                "fill_normal" => "fill_normal_f64",
                _ => "fill_truncated_normal_f64",
            };
            fill(ctx, kernel, entry, &out, key, counter, Params::default())
        }
        DType::F16 | DType::BF16 => {
            // TF's half-precision distributions: uniform values from the sample's low 10 (7) bits;
            // normal ones are the float32 values, rounded. Both exact through a float32 fill.
            let mantissa_bits = if dtype == DType::F16 { 10 } else { 7 };
            let wide = ctx.allocate_temp(DType::F32, &shape)?;
            let params = Params { mantissa_bits: if uniform { mantissa_bits } else { 23 }, ..Params::default() };
            fill(ctx, kernel, entry, &wide, key, counter, params)?;
            super::cast::launch(ctx.stream()?, &wide, &out)
        }
        _ => fill(ctx, kernel, entry, &out, key, counter, Params { mantissa_bits: 23, ..Params::default() }),
    }
}

/// StatelessRandomUniformInt(V2): `minval + bits % (maxval - minval)`, as TF's
/// `UniformDistribution` for int32 (one sample a value) and int64 (two), in wrapping arithmetic.
pub fn uniform_int(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = output_dtype(kernel)?;
    let bounds = match source_of(kernel) {
        Source::KeyCounterAlg => 4,
        Source::Seed => 2,
        Source::Stateful => 1,
    };
    // (RandomUniformInt checks its bounds' shapes whatever the output's size, the stateless ops
    // only for a non-empty output.)
    let check_bounds = |ctx: &mut dyn KernelContext| -> Result<(i64, i64)> {
        let (lo, lo_shape) = ctx.host_input_values(bounds)?;
        let (hi, hi_shape) = ctx.host_input_values(bounds + 1)?;
        for (what, dims) in [("minval", &lo_shape), ("maxval", &hi_shape)] {
            if !dims.is_empty() {
                return Err(Error::invalid_argument(format!(
                    "{what} must be 0-D, got shape {}",
                    validate::shape_string(dims)
                )));
            }
        }
        Ok((lo[0], hi[0]))
    };
    if let Source::Stateful = source_of(kernel) {
        // Every check comes before the node's stream advances.
        let (lo, hi) = check_bounds(ctx)?;
        let (shape, _) = ctx.host_input_values(0)?;
        if validate::num_elements(&shape).unwrap_or(0) > 0 {
            range_params(dtype, lo, hi, source_of(kernel))?;
        }
    }
    let (shape, key, counter) = stream_of(ctx, kernel)?;
    let params = if validate::num_elements(&shape)? > 0 {
        let (lo, hi) = check_bounds(ctx)?;
        range_params(dtype, lo, hi, source_of(kernel))?
    } else {
        Params::default()
    };
    let out = ctx.allocate_output(0, dtype, &shape)?;
    fill(ctx, kernel, "fill_uniform_int", &out, key, counter, params)
}

/// An integer fill's bounds, `minval < maxval` checked as TF checks it.
fn range_params(dtype: DType, lo: i64, hi: i64, source: Source) -> Result<Params> {
    let below = match dtype {
        DType::U32 | DType::U64 => (lo as u64) < (hi as u64),
        _ => lo < hi,
    };
    if !below {
        let show = |v: i64| if dtype == DType::U64 { (v as u64).to_string() } else { v.to_string() };
        // (The stateful op words it differently.)
        let joint = if let Source::Stateful = source { ", got" } else { ":" };
        return Err(Error::invalid_argument(format!("Need minval < maxval{joint} {} >= {}", show(lo), show(hi))));
    }
    let range = (hi as u64).wrapping_sub(lo as u64);
    Ok(Params {
        wide: u32::from(dtype.size() == 8),
        lo: [lo as u64 as u32, (lo as u64 >> 32) as u32],
        range: [range as u32, (range >> 32) as u32],
        ..Params::default()
    })
}

/// StatelessRandomUniformFullInt(V2): every bit pattern of the type, from the samples' bits.
pub fn uniform_full_int(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = output_dtype(kernel)?;
    let (shape, key, counter) = stream_of(ctx, kernel)?;
    let params = Params { wide: u32::from(dtype.size() == 8), full: 1, ..Params::default() };
    let out = ctx.allocate_output(0, dtype, &shape)?;
    fill(ctx, kernel, "fill_uniform_int", &out, key, counter, params)
}

/// StatelessRandomGetAlg: the algorithm TF picks on GPUs (and CPUs), Philox, in host memory.
pub fn get_alg(ctx: &mut dyn KernelContext, _kernel: &KernelInstance) -> Result<()> {
    ctx.write_host_output(0, DType::I32, &[], &(RNG_ALG_PHILOX as i32).to_ne_bytes())
}

/// StatelessRandomGetKeyCounterAlg: StatelessRandomGetKeyCounter's outputs and Philox's id.
pub fn get_key_counter_alg(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    get_key_counter(ctx, kernel)?;
    ctx.write_host_output(2, DType::I32, &[], &(RNG_ALG_PHILOX as i32).to_ne_bytes())
}

/// The output shape and the Philox key and counter of a fill, checked as TF checks them.
fn stream_of(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<(Vec<i64>, [u32; 2], [u32; 4])> {
    let (shape, shape_shape) = ctx.host_input_values(0)?;
    if shape_shape.len() != 1 {
        return Err(Error::invalid_argument(format!(
            "shape must be a vector of {{int32,int64}}, got shape {shape_shape:?}"
        )));
    }
    let outputs = validate::num_elements(&shape)?;
    if let Source::Stateful = source_of(kernel) {
        let mut stream =
            kernel.philox.lock().map_err(|_| Error::internal("a random node's stream lock is poisoned"))?;
        let stream = stream.get_or_insert_with(|| {
            PhiloxStream::new(kernel.attrs.int("seed").unwrap_or(0), kernel.attrs.int("seed2").unwrap_or(0))
        });
        let (key, counter) = stream.reserve(outputs as u64);
        return Ok((shape, key, counter));
    }
    if let Source::Seed = source_of(kernel) {
        let (seed, seed_shape) = ctx.host_input_values(1)?;
        if seed_shape != [2] {
            return Err(Error::invalid_argument(format!(
                "seed must have shape [2], not {}",
                validate::shape_string(&seed_shape)
            )));
        }
        let (key, counter) = key_counter_from_seed(seed[0] as u64, seed[1] as u64);
        return Ok((shape, key, counter));
    }
    let (key, key_shape) = ctx.host_input_values(1)?;
    let (counter, counter_shape) = ctx.host_input_values(2)?;
    let (alg, alg_shape) = ctx.host_input_values(3)?;
    if key_shape != [1] {
        return Err(Error::invalid_argument(format!("key must have shape [1], not {key_shape:?}")));
    }
    if counter_shape.len() != 1 || counter.is_empty() {
        return Err(Error::invalid_argument(format!(
            "counter must be a vector with length at least 1; got shape: {counter_shape:?}"
        )));
    }
    match validate::scalar(&alg, &alg_shape, "alg")? {
        RNG_ALG_PHILOX | RNG_ALG_AUTO_SELECT => {}
        other => return Err(Error::invalid_argument(format!("Unsupported algorithm id: {other}"))),
    }
    if counter.len() < 2 {
        return Err(Error::invalid_argument(format!(
            "The size of the counter must be at least 2 for Philox, got {}",
            counter.len()
        )));
    }
    let split = |v: i64| [v as u64 as u32, (v as u64 >> 32) as u32];
    let [k0, k1] = split(key[0]);
    let ([c0, c1], [c2, c3]) = (split(counter[0]), split(counter[1]));
    Ok((shape, [k0, k1], [c0, c1, c2, c3]))
}

/// Fills `out` from the Philox stream at `key`/`counter`, a group of four 32-bit words per block.
fn fill(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    entry: &'static str,
    out: &TensorRef,
    key: [u32; 2],
    counter: [u32; 4],
    params: Params,
) -> Result<()> {
    let n = shader_len(out.byte_len() / 4, kernel.def.op)?;
    if n == 0 {
        return Ok(());
    }
    let stream = ctx.stream()?;
    let device = stream.device();
    let shader = if entry.ends_with("normal_f64") { &F64_SHADER } else { &SHADER };
    let pipeline = device.pipelines.get(device, shader, &PipelineSpec { entry, ..Default::default() })?;
    // Outputs larger than a storage binding fill in parts of whole groups of 4 words, each part's
    // counter advanced past the groups before it (as the shader's skip64 would), so the values are
    // those of one launch.
    let [c0, c1, c2, c3] = counter;
    let counter = u128::from(c0) | u128::from(c1) << 32 | u128::from(c2) << 64 | u128::from(c3) << 96;
    // (TF reserves 256 samples per output for the truncated fills: groups of four floats take
    // 256 blocks, groups of two doubles 128.)
    let blocks_per_group: u128 = match entry {
        "fill_truncated_normal" => 256,
        "fill_truncated_normal_f64" => 128,
        _ => 1,
    };
    let per_part = (binding_limit(device) / 4 / 4 * 4).max(4) as u32;
    let mut start = 0u32;
    while start < n {
        let count = per_part.min(n - start);
        let part = device.memory.resolve(out.address + start as u64 * 4, count as u64 * 4)?;
        let c = counter.wrapping_add(u128::from(start / 4) * blocks_per_group);
        let words = [c as u32, (c >> 32) as u32, (c >> 64) as u32, (c >> 96) as u32];
        stream.encode(|core, encoder| {
            let (out_bind, out_off) = storage_window(core, &part, 4)?;
            let params = Params { n: count, out_off, key, counter: words, ..params };
            let groups = count.div_ceil(4) as u64;
            dispatch(core, encoder, entry, &pipeline, &[out_bind], bytemuck::bytes_of(&params), groups)
        })?;
        start += count;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn philox_matches_the_published_known_answers() {
        // Random123's kat_vectors for philox4x32_10.
        assert_eq!(philox([0; 4], [0; 2]), [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
        assert_eq!(philox([u32::MAX; 4], [u32::MAX; 2]), [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]);
        assert_eq!(
            philox([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn uniform_floats_use_23_mantissa_bits() {
        assert_eq!(uint32_to_float(0), 0.0);
        assert_eq!(uint32_to_float(u32::MAX), 1.0 - f32::EPSILON);
    }
}
