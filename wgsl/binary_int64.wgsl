// int64 AddV2 (OP 0) and Sub (OP 1) with NumPy broadcasting (`broadcast.wgsl` is prepended). WGSL
// has no 64-bit integers: each element is a vec2<u32> (low word, high word), and the carry or
// borrow of the low words moves into the high ones, so results wrap as TF-CPU's do.

override OP: u32 = 0u;

struct Params {
    n: u32,
    rank: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    shape: array<vec4<u32>, 2>,
    a_strides: array<vec4<u32>, 2>,
    b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> a: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> b: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2<u32>>;
@group(0) @binding(3) var<uniform> p: Params;

fn add64(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    let low = x.x + y.x;
    return vec2<u32>(low, x.y + y.y + select(0u, 1u, low < x.x));
}

fn sub64(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(x.x - y.x, x.y - y.y - select(0u, 1u, x.x < y.x));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    let at = broadcast_offsets(i, p.rank, p.shape, p.a_strides, p.b_strides, p.b_strides);
    let x = a[p.a_off + at.x];
    let y = b[p.b_off + at.y];
    out[p.out_off + i] = select(add64(x, y), sub64(x, y), OP == 1u);
}
