// Float classification into packed bools: IsNan (OP 0), IsInf (1), IsFinite (2). Each invocation
// writes one u32 word holding four bool bytes; the output starts word-aligned (a fresh allocation).

override OP: u32 = 0u;

struct Params {
    n: u32,
    in_off: u32,
    // Output offset in bytes (a multiple of 4).
    out_byte: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

fn classify(v: f32) -> u32 {
    let magnitude = bitcast<u32>(v) & 0x7fffffffu;
    switch OP {
        case 0u: { return select(0u, 1u, magnitude > 0x7f800000u); }
        case 1u: { return select(0u, 1u, magnitude == 0x7f800000u); }
        default: { return select(0u, 1u, magnitude < 0x7f800000u); }
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
            word |= classify(x[p.in_off + i]) << (k * 8u);
        }
    }
    y[p.out_byte / 4u + w] = word;
}
