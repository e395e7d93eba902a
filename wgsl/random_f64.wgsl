// float64 normal fills (math_f64.wgsl and random.wgsl prepended; needs SHADER_F64), TF's
// NormalDistribution and TruncatedNormalDistribution of double: one Box-Muller pair from the four
// words of a Philox block.
//   fill_normal_f64: invocation g writes outputs 2g, 2g + 1 from block counter + g.
//   fill_truncated_normal_f64: group g owns the 128 blocks from counter + 128 g (TF's 256 samples
//     reserved per output, for groups of two) and keeps values with |v| < 2 until it has two.
// `n` counts 32-bit words, as in random.wgsl; `out_off` is even.

@group(0) @binding(0) var<storage, read_write> out_f64: array<f64>;

// TF's Uint64ToDouble: 52 random mantissa bits (20 from `x0`, 32 from `x1`) as man * 2^-52, exact.
fn uniform_double(x0: u32, x1: u32) -> f64 {
    return f64(x0 & 0xfffffu) * 9.5367431640625e-7 + f64(x1) * 2.220446049250313080847263336181640625e-16;
}

// TF's BoxMullerDouble.
fn box_muller_double(bits: vec4<u32>) -> vec2<f64> {
    var u1 = uniform_double(bits.x, bits.y);
    if (u1 < 1.0e-7) {
        u1 = 1.0e-7;
    }
    let v1 = 6.283185307179586 * uniform_double(bits.z, bits.w);
    let u2 = sqrt(-2.0 * m64_log(u1));
    return vec2<f64>(m64_sin(v1), m64_cos(v1)) * u2;
}

// Stores output pair element `j` of group `g` if it lies within the `n` words.
fn store_double(g: u32, j: u32, value: f64) {
    if (g * 4u + 2u * j < p.n) {
        out_f64[p.out_off / 2u + 2u * g + j] = value;
    }
}

@compute @workgroup_size(256)
fn fill_normal_f64(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = group_id(gid, nwg);
    if (g * 4u >= p.n) {
        return;
    }
    let d = box_muller_double(philox(skip64(p.counter, g, 0u), p.key));
    store_double(g, 0u, d.x);
    store_double(g, 1u, d.y);
}

const BLOCKS_PER_DOUBLE_GROUP: u32 = 128u;

@compute @workgroup_size(256)
fn fill_truncated_normal_f64(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = group_id(gid, nwg);
    if (g * 4u >= p.n) {
        return;
    }
    var block = skip64(p.counter, g * BLOCKS_PER_DOUBLE_GROUP, g >> 25u);
    var kept = 0u;
    // The bound keeps a broken generator from hanging the device; 128 blocks never run out.
    for (var i = 0u; i < BLOCKS_PER_DOUBLE_GROUP && kept < 2u; i++) {
        let d = box_muller_double(philox(block, p.key));
        block = skip64(block, 1u, 0u);
        for (var k = 0u; k < 2u; k++) {
            if (kept < 2u && abs(d[k]) < 2.0) {
                store_double(g, kept, d[k]);
                kept += 1u;
            }
        }
    }
}
