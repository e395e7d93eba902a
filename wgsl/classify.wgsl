// Float classification into packed bools: IsNan (OP 0), IsInf (1), IsFinite (2), of float16,
// bfloat16, float32 or float64 read as words, so that no float type (nor SHADER_F16 or SHADER_F64)
// is needed. Each invocation writes one u32 word holding four bool bytes; the output starts
// word-aligned (a fresh allocation).

override OP: u32 = 0u;
// The element's width in bits: 16, 32 or 64.
override WIDTH: u32 = 32u;
// The magnitude bits of +infinity (for 64 bits, of its high word): 0x7c00 (float16), 0x7f80
// (bfloat16), 0x7f800000 (float32), 0x7ff00000 (float64).
override INF: u32 = 0x7f800000u;

struct Params {
    n: u32,
    // The first element, in elements of WIDTH bits.
    in_off: u32,
    // Output offset in bytes (a multiple of 4).
    out_byte: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

// Element i's magnitude bits (the high word for 64 bits) and whether its low word has any bits set.
fn magnitude(i: u32) -> vec2<u32> {
    let at = p.in_off + i;
    switch WIDTH {
        case 16u: {
            return vec2<u32>((x[at / 2u] >> ((at % 2u) * 16u)) & 0x7fffu, 0u);
        }
        case 64u: {
            return vec2<u32>(x[2u * at + 1u] & 0x7fffffffu, x[2u * at]);
        }
        default: {
            return vec2<u32>(x[at] & 0x7fffffffu, 0u);
        }
    }
}

fn classify(i: u32) -> u32 {
    let m = magnitude(i);
    let all_ones_exponent = m.x >= INF;
    let zero_fraction = m.x == INF && m.y == 0u;
    switch OP {
        case 0u: { return select(0u, 1u, all_ones_exponent && !zero_fraction); }
        case 1u: { return select(0u, 1u, zero_fraction); }
        default: { return select(0u, 1u, !all_ones_exponent); }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = gid.x + gid.y * nwg.x * 256u;
    if (w * 4u >= p.n) {
        return;
    }
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let i = w * 4u + k;
        if (i < p.n) {
            word |= classify(i) << (k * 8u);
        }
    }
    y[p.out_byte / 4u + w] = word;
}
