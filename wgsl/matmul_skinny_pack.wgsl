// Packs the small operand U[p, k] of `matmul_skinny.wgsl` into chunks of 64 KiB (4096 vec4s), one
// per `chunk_k` steps of k, in the layout of the product's entry point (`DOTS`): rows padded to
// blocks of 8 and k past its end with zeros. One invocation per packed vec4 in use.

struct Params {
    p: u32,
    k: u32,
    // U[r, kk] is src[off + r * rs + kk * ks].
    off: u32,
    rs: u32,
    ks: u32,
    row_blocks: u32,
    chunk_k: u32,
    // vec4s in use per chunk: chunk_k * row_blocks * 2.
    used: u32,
    chunks: u32,
}

@group(0) @binding(0) var<storage, read_write> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> prm: Params;

// The layout of `dots` (4 steps of k per vec4) instead of `cols` (4 rows per vec4).
override DOTS: bool = false;

fn element(row: u32, kk: u32) -> f32 {
    if (row >= prm.p || kk >= prm.k) {
        return 0.0;
    }
    return src[prm.off + row * prm.rs + kk * prm.ks];
}

@compute @workgroup_size(256)
fn pack(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let id = gid.x + gid.y * groups.x * 256u;
    if (id >= prm.used * prm.chunks) {
        return;
    }
    let chunk = id / prm.used;
    let v = id % prm.used;
    var quad = vec4<f32>();
    if (DOTS) {
        let row = v % (prm.row_blocks * 8u);
        let kk = chunk * prm.chunk_k + v / (prm.row_blocks * 8u) * 4u;
        quad = vec4<f32>(element(row, kk), element(row, kk + 1u), element(row, kk + 2u), element(row, kk + 3u));
    } else {
        let row = v % (prm.row_blocks * 2u) * 4u;
        let kk = chunk * prm.chunk_k + v / (prm.row_blocks * 2u);
        quad = vec4<f32>(element(row, kk), element(row + 1u, kk), element(row + 2u, kk), element(row + 3u, kk));
    }
    dst[chunk * 4096u + v] = quad;
}
