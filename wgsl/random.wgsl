// StatelessRandomUniformV2 (float32) on Philox-4x32-10, as TF's FillPhiloxRandom: invocation g runs
// one Philox block on counter + g and writes outputs 4g..4g+3, each 23 random mantissa bits as a
// float in [0, 1).

struct Params {
    n: u32,
    out_off: u32,
    key: vec2<u32>,
    counter: vec4<u32>,
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

// The high and low words of the 64-bit product a * b, from 16-bit halves.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let lo_lo = a_lo * b_lo;
    let hi_lo = a_hi * b_lo;
    let lo_hi = a_lo * b_hi;
    let hi_hi = a_hi * b_hi;
    let middle = (lo_lo >> 16u) + (hi_lo & 0xffffu) + (lo_hi & 0xffffu);
    let high = hi_hi + (hi_lo >> 16u) + (lo_hi >> 16u) + (middle >> 16u);
    return vec2<u32>(high, a * b);
}

fn philox(start: vec4<u32>, first_key: vec2<u32>) -> vec4<u32> {
    var c = start;
    var k = first_key;
    for (var round = 0u; round < 10u; round++) {
        let p0 = mul_wide(0xD2511F53u, c.x);
        let p1 = mul_wide(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
        k += vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

// counter + g, with the carry through all four words.
fn skip(counter: vec4<u32>, g: u32) -> vec4<u32> {
    var c = counter;
    c.x = counter.x + g;
    if (c.x < g) {
        c.y += 1u;
        if (c.y == 0u) {
            c.z += 1u;
            if (c.z == 0u) {
                c.w += 1u;
            }
        }
    }
    return c;
}

@compute @workgroup_size(256)
fn fill_uniform(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = gid.x + gid.y * nwg.x * 256u;
    if (g * 4u >= p.n) {
        return;
    }
    let bits = philox(skip(p.counter, g), p.key);
    for (var j = 0u; j < 4u; j++) {
        let i = g * 4u + j;
        if (i < p.n) {
            out[p.out_off + i] = bitcast<f32>((127u << 23u) | (bits[j] & 0x7fffffu)) - 1.0;
        }
    }
}
