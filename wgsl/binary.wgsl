// Elementwise binary ops with NumPy broadcasting. `T` is aliased per dtype; `OP` is an override
// constant, so each op is its own specialised pipeline with no run-time branch on the op.
// Shapes are padded to rank 8; a stride of 0 repeats a broadcast dimension.

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

@group(0) @binding(0) var<storage, read_write> a: array<T>;
@group(0) @binding(1) var<storage, read_write> b: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;
@group(0) @binding(3) var<uniform> p: Params;

fn apply(x: T, y: T) -> T {
    switch OP {
        case 0u: { return x + y; }
        case 1u: { return x * y; }
        case 2u: { return x - y; }
        default: { return x; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    var rem = i;
    var ai = 0u;
    var bi = 0u;
    for (var d = p.rank; d > 0u; d--) {
        let k = d - 1u;
        let size = p.shape[k / 4u][k % 4u];
        let coord = rem % size;
        rem = rem / size;
        ai += coord * p.a_strides[k / 4u][k % 4u];
        bi += coord * p.b_strides[k / 4u][k % 4u];
    }
    out[p.out_off + i] = apply(a[p.a_off + ai], b[p.b_off + bi]);
}
