// Batched matrix multiply C[b] = A[b] x B[b] in 16x16 tiles staged through workgroup memory.
// Row/column strides encode transposes; batch strides (0 where a batch dim broadcasts) follow the
// output batch shape (rank <= 4). Dispatch: (ceil(N/16), ceil(M/16), batch).

struct Params {
    m: u32,
    n: u32,
    k: u32,
    batch_rank: u32,
    a_off: u32,
    b_off: u32,
    c_off: u32,
    _pad: u32,
    // Element strides of A's rows and columns, and of B's.
    a_rs: u32,
    a_cs: u32,
    b_rs: u32,
    b_cs: u32,
    batch_shape: vec4<u32>,
    a_batch_stride: vec4<u32>,
    b_batch_stride: vec4<u32>,
}

@group(0) @binding(0) var<storage, read_write> a: array<T>;
@group(0) @binding(1) var<storage, read_write> b: array<T>;
@group(0) @binding(2) var<storage, read_write> c: array<T>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> tile_a: array<array<f32, 16>, 16>;
var<workgroup> tile_b: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let row = wid.y * 16u + lid.y;
    let col = wid.x * 16u + lid.x;
    // Batch offsets of A and B for this output batch index.
    var rem = wid.z;
    var a_base = p.a_off;
    var b_base = p.b_off;
    for (var d = p.batch_rank; d > 0u; d--) {
        let k = d - 1u;
        let coord = rem % p.batch_shape[k];
        rem = rem / p.batch_shape[k];
        a_base += coord * p.a_batch_stride[k];
        b_base += coord * p.b_batch_stride[k];
    }
    var acc = 0.0;
    let tiles = (p.k + 15u) / 16u;
    for (var t = 0u; t < tiles; t++) {
        let ak = t * 16u + lid.x;
        let bk = t * 16u + lid.y;
        tile_a[lid.y][lid.x] = select(0.0, f32(a[a_base + row * p.a_rs + ak * p.a_cs]), row < p.m && ak < p.k);
        tile_b[lid.y][lid.x] = select(0.0, f32(b[b_base + bk * p.b_rs + col * p.b_cs]), bk < p.k && col < p.n);
        workgroupBarrier();
        for (var i = 0u; i < 16u; i++) {
            acc += tile_a[lid.y][i] * tile_b[i][lid.x];
        }
        workgroupBarrier();
    }
    if (row < p.m && col < p.n) {
        c[p.c_off + (wid.z * p.m + row) * p.n + col] = T(acc);
    }
}
