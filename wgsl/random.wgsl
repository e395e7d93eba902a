// Random fills on Philox-4x32-10, grouped as TF's FillPhiloxRandom groups them (float16 and
// bfloat16 values are written as float32 and rounded after, exactly).
//   fill_uniform (RandomUniform and the stateless ones): invocation g runs one Philox block on
//     counter + g and writes outputs 4g..4g+3, each `mantissa_bits` random bits as a float in [0, 1).
//   fill_uniform_f64: the same block as two doubles of 52 random mantissa bits each.
//   fill_normal (StatelessRandomNormalV2): the same block, as two Box-Muller pairs.
//   fill_truncated_normal (StatelessTruncatedNormalV2): group g owns the 256 blocks from
//     counter + 256 g and draws Box-Muller pairs from them one sample at a time, keeping values with
//     |v| < 2 until it has four (TF's variable-sample FillPhiloxRandomTask).

//   fill_uniform_int (StatelessRandomUniformInt, StatelessRandomUniformFullInt): lo + bits % range
//     in wrapping arithmetic (or the bits themselves), one sample per 32-bit value and two per
//     64-bit one (low word first), as TF's integer UniformDistribution.
// `n` counts 32-bit words; float values are stored as their bits.

struct Params {
    n: u32,
    out_off: u32,
    key: vec2<u32>,
    counter: vec4<u32>,
    lo: vec2<u32>,
    range: vec2<u32>,
    wide: u32,
    full: u32,
    mantissa_bits: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> p: Params;

fn philox(start: vec4<u32>, first_key: vec2<u32>) -> vec4<u32> {
    var c = start;
    var k = first_key;
    for (var round = 0u; round < 10u; round++) {
        let p0 = math_mul_wide(0xD2511F53u, c.x);
        let p1 = math_mul_wide(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
        k += vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

// counter + (hi << 32 | lo), as TF's PhiloxRandom::Skip carries it.
fn skip64(counter: vec4<u32>, lo: u32, hi_in: u32) -> vec4<u32> {
    var c = counter;
    var hi = hi_in;
    c.x += lo;
    if (c.x < lo) {
        hi += 1u;
    }
    c.y += hi;
    if (c.y < hi) {
        c.z += 1u;
        if (c.z == 0u) {
            c.w += 1u;
        }
    }
    return c;
}

fn uint32_to_float(x: u32) -> f32 {
    return bitcast<f32>((127u << 23u) | (x & 0x7fffffu)) - 1.0;
}

// TF's BoxMullerFloat.
fn box_muller(x0: u32, x1: u32) -> vec2<f32> {
    let u1 = max(uint32_to_float(x0), 1.0e-7);
    let v1 = 6.2831853071795864 * uint32_to_float(x1);
    let u2 = math_sqrt(-2.0 * math_log(u1));
    return vec2<f32>(math_sin(v1), math_cos(v1)) * u2;
}

fn group_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn fill_normal(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = group_id(gid, nwg);
    if (g * 4u >= p.n) {
        return;
    }
    let bits = philox(skip64(p.counter, g, 0u), p.key);
    let values = array<vec2<f32>, 2>(box_muller(bits.x, bits.y), box_muller(bits.z, bits.w));
    for (var j = 0u; j < 4u; j++) {
        let i = g * 4u + j;
        if (i < p.n) {
            out[p.out_off + i] = bitcast<u32>(values[j / 2u][j % 2u]);
        }
    }
}

// Group g's draws start 256 Philox blocks (its reserved samples) after group g - 1's.
const BLOCKS_PER_GROUP: u32 = 256u;

@compute @workgroup_size(256)
fn fill_truncated_normal(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = group_id(gid, nwg);
    if (g * 4u >= p.n) {
        return;
    }
    var block = skip64(p.counter, g * BLOCKS_PER_GROUP, g >> 24u);
    var bits = vec4<u32>();
    var used = 4u;
    var kept = 0u;
    // Each of the 256 blocks yields two pairs; the chance of needing them all is nil, and the bound
    // keeps a broken generator from hanging the device.
    for (var pair = 0u; pair < 2u * BLOCKS_PER_GROUP && kept < 4u; pair++) {
        if (used == 4u) {
            bits = philox(block, p.key);
            block = skip64(block, 1u, 0u);
            used = 0u;
        }
        let f = box_muller(bits[used], bits[used + 1u]);
        used += 2u;
        for (var k = 0u; k < 2u; k++) {
            if (kept < 4u && abs(f[k]) < 2.0) {
                let i = g * 4u + kept;
                if (i < p.n) {
                    out[p.out_off + i] = bitcast<u32>(f[k]);
                }
                kept += 1u;
            }
        }
    }
}

// TF's Uint16ToHalf / Uint16ToGfloat16 / Uint32ToFloat: the sample's low `mantissa_bits` bits as
// a float in [0, 1), exact in float32.
fn uniform_float(x: u32) -> f32 {
    let bits = x & ((1u << p.mantissa_bits) - 1u);
    return bitcast<f32>((127u << 23u) | (bits << (23u - p.mantissa_bits))) - 1.0;
}

// TF's Uint64ToDouble: 52 random mantissa bits (20 from `x0`, 32 from `x1`) as a double in [0, 1),
// its bits built with integer operations (the value is man * 2^-52, normalised).
fn uint64_to_double(x0: u32, x1: u32) -> vec2<u32> {
    let man = vec2<u32>(x1, x0 & 0xfffffu);
    if (man.x == 0u && man.y == 0u) {
        return vec2<u32>(0u, 0u);
    }
    let top = select(firstLeadingBit(man.x), 32u + firstLeadingBit(man.y), man.y != 0u);
    let normal = shift_left(man, 52u - top);
    return vec2<u32>(normal.x, ((971u + top) << 20u) | (normal.y & 0xfffffu));
}

@compute @workgroup_size(256)
fn fill_uniform_f64(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = group_id(gid, nwg);
    if (g * 4u >= p.n) {
        return;
    }
    let bits = philox(skip64(p.counter, g, 0u), p.key);
    let words = array<vec2<u32>, 2>(uint64_to_double(bits.x, bits.y), uint64_to_double(bits.z, bits.w));
    for (var j = 0u; j < 4u; j++) {
        let i = g * 4u + j;
        if (i < p.n) {
            out[p.out_off + i] = words[j / 2u][j % 2u];
        }
    }
}

@compute @workgroup_size(256)
fn fill_uniform(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = group_id(gid, nwg);
    if (g * 4u >= p.n) {
        return;
    }
    let bits = philox(skip64(p.counter, g, 0u), p.key);
    for (var j = 0u; j < 4u; j++) {
        let i = g * 4u + j;
        if (i < p.n) {
            out[p.out_off + i] = bitcast<u32>(uniform_float(bits[j]));
        }
    }
}

@compute @workgroup_size(256)
fn fill_uniform_int(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = group_id(gid, nwg);
    if (g * 4u >= p.n) {
        return;
    }
    let bits = philox(skip64(p.counter, g, 0u), p.key);
    var words = bits;
    if (p.full == 0u) {
        if (p.wide == 0u) {
            words = p.lo.x + bits % p.range.x;
        } else {
            for (var k = 0u; k < 2u; k++) {
                let v = vec2<u32>(bits[2u * k], bits[2u * k + 1u]);
                let value = add64(p.lo, divmod_unsigned(v, p.range).zw);
                words[2u * k] = value.x;
                words[2u * k + 1u] = value.y;
            }
        }
    }
    for (var j = 0u; j < 4u; j++) {
        let i = g * 4u + j;
        if (i < p.n) {
            out[p.out_off + i] = words[j];
        }
    }
}
