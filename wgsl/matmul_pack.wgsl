// Packs a (batched, strided) matrix into 128 x 128 f32 tiles for `matmul_tiles.wgsl`: each tile is
// 64 KiB, the size of one uniform binding, laid out row-major as 32 vec4 per row. Tiles follow each
// other row-tile-major, batch outermost; entries past the matrix edge are zero, so the tiled kernel
// needs no bounds checks in its inner loop. One invocation writes one vec4.
// Dispatch: batch * row_tiles * col_tiles * 4096 invocations, 2D grid of 256-wide workgroups.

struct Params {
    rows: u32,
    cols: u32,
    // Element strides of the source's rows and columns (transposes are strides).
    rs: u32,
    cs: u32,
    src_off: u32,
    row_tiles: u32,
    col_tiles: u32,
    batch_rank: u32,
    batches: u32,
    batch_shape: vec4<u32>,
    batch_stride: vec4<u32>,
}

@group(0) @binding(0) var<storage, read_write> src: array<T>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> p: Params;

const TILE: u32 = 128u;
const TILE_VEC4S: u32 = 4096u;

@compute @workgroup_size(256)
fn pack(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let id = gid.x + gid.y * groups.x * 256u;
    let tiles_per_batch = p.row_tiles * p.col_tiles;
    let tile = id / TILE_VEC4S;
    let z = tile / tiles_per_batch;
    // The 2D grid may round past the last tile.
    if (z >= p.batches) {
        return;
    }
    var rem = z;
    var base = p.src_off;
    for (var d = p.batch_rank; d > 0u; d--) {
        let coord = rem % p.batch_shape[d - 1u];
        rem = rem / p.batch_shape[d - 1u];
        base += coord * p.batch_stride[d - 1u];
    }
    let in_batch = tile % tiles_per_batch;
    let within = id % TILE_VEC4S;
    let row = (in_batch / p.col_tiles) * TILE + within / 32u;
    let col0 = (in_batch % p.col_tiles) * TILE + (within % 32u) * 4u;
    // Clamped loads, then zeros selected past the edge: no divergent branch around the loads.
    let r = min(row, p.rows - 1u);
    var v = vec4<f32>();
    for (var q = 0u; q < 4u; q++) {
        let c = min(col0 + q, p.cols - 1u);
        let x = f32(src[base + r * p.rs + c * p.cs]);
        v[q] = select(0.0, x, row < p.rows && col0 + q < p.cols);
    }
    dst[id] = v;
}
