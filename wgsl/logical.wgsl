// Bool ops on packed bytes with broadcasting (`broadcast.wgsl` is prepended): LogicalAnd (OP 0),
// LogicalOr (1), LogicalNot (2, `b` unused). Each invocation writes one word of four results.
// Inputs may start at any byte; offsets are in bytes.

override OP: u32 = 0u;

struct Params {
    n: u32,
    rank: u32,
    a_byte: u32,
    b_byte: u32,
    out_byte: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    shape: array<vec4<u32>, 2>,
    a_strides: array<vec4<u32>, 2>,
    b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

fn byte_of_a(i: u32) -> u32 {
    return read_byte(a[i >> 2u], i);
}

fn byte_of_b(i: u32) -> u32 {
    return read_byte(b[i >> 2u], i);
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
            let x = byte_of_a(p.a_byte + at.x) != 0u;
            var r = false;
            switch OP {
                case 0u: { r = x && byte_of_b(p.b_byte + at.y) != 0u; }
                case 1u: { r = x || byte_of_b(p.b_byte + at.y) != 0u; }
                default: { r = !x; }
            }
            word |= select(0u, 1u, r) << (k * 8u);
        }
    }
    out[p.out_byte / 4u + w] = word;
}
