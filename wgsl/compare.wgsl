// Comparisons with broadcasting into packed bools (`broadcast.wgsl` is prepended): each invocation
// writes one u32 word of four bool bytes. NaN compares unequal to everything, as in IEEE.

override OP: u32 = 0u;
// ApproximateEqual's bound on |x - y| (OP 6).
override TOLERANCE: f32 = 0.0;

struct Params {
    n: u32,
    rank: u32,
    a_off: u32,
    b_off: u32,
    // Output offset in bytes (a multiple of 4).
    out_byte: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    shape: array<vec4<u32>, 2>,
    a_strides: array<vec4<u32>, 2>,
    b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> a: array<T>;
@group(0) @binding(1) var<storage, read_write> b: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

fn compare(x: f32, y: f32) -> bool {
    if (is_nan_f32(x) || is_nan_f32(y)) {
        return OP == 1u;
    }
    switch OP {
        case 0u: { return x == y; }
        case 1u: { return x != y; }
        case 2u: { return x < y; }
        case 3u: { return x <= y; }
        case 4u: { return x > y; }
        // The difference in T, as TF's functor computes it (a difference equal to the bound counts).
        case 6u: { return abs(f32(T(x - y))) <= TOLERANCE; }
        default: { return x >= y; }
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
            let at = broadcast_offsets(i, p.shape, p.a_strides, p.b_strides, p.b_strides);
            word |= select(0u, 1u, compare(f32(a[p.a_off + at.x]), f32(b[p.b_off + at.y]))) << (k * 8u);
        }
    }
    out[p.out_byte / 4u + w] = word;
}
