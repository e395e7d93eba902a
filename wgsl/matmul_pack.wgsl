// Packs a (batched, strided) matrix into 128 x 128 f32 tiles for `matmul_tiles.wgsl`: each tile is
// 64 KiB, the size of one uniform binding, laid out row-major as 32 vec4 per row. Tiles follow each
// other row-tile-major, batch outermost; entries past the matrix edge are zero, so the tiled kernel
// needs no bounds checks in its inner loop. One invocation writes one vec4.
// `pack_im2col` packs rows `row0..row0 + rows` of an NHWC convolution's im2col matrix instead:
// row = (image, oy, ox), column = (ky, kx, channel), the layout of an HWIO filter seen as a matrix,
// so a convolution is that matrix times the filter (an implicit GEMM: the im2col matrix exists only
// as tiles, a chunk of rows at a time).
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
    row0: u32,
    batch_shape: vec4<u32>,
    batch_stride: vec4<u32>,
    // pack_im2col only: (h, w, c, ow), (kw, sh, sw, oh), (dh, dw, pad_top, pad_left).
    image: vec4<u32>,
    window: vec4<u32>,
    dilation_pad: vec4<u32>,
}

@group(0) @binding(0) var<storage, read_write> src: array<T>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> p: Params;

const TILE: u32 = 128u;
const TILE_VEC4S: u32 = 4096u;

// Where invocation `id` writes: the batch, the row and the first of four columns.
struct Slot {
    z: u32,
    row: u32,
    col0: u32,
}

fn slot(id: u32) -> Slot {
    let tiles_per_batch = p.row_tiles * p.col_tiles;
    let tile = id / TILE_VEC4S;
    let in_batch = tile % tiles_per_batch;
    let within = id % TILE_VEC4S;
    return Slot(
        tile / tiles_per_batch,
        (in_batch / p.col_tiles) * TILE + within / 32u,
        (in_batch % p.col_tiles) * TILE + (within % 32u) * 4u,
    );
}

@compute @workgroup_size(256)
fn pack_im2col(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let id = gid.x + gid.y * groups.x * 256u;
    let at = slot(id);
    if (at.z >= 1u) {
        return;
    }
    let h = p.image.x;
    let w = p.image.y;
    let c = p.image.z;
    let ow = p.image.w;
    let kw = p.window.x;
    let oh = p.window.w;
    let r = p.row0 + min(at.row, p.rows - 1u);
    let image = r / (oh * ow);
    let oy = (r / ow) % oh;
    let ox = r % ow;
    var v = vec4<f32>();
    for (var q = 0u; q < 4u; q++) {
        let col = min(at.col0 + q, p.cols - 1u);
        let ky = col / (kw * c);
        let kx = (col / c) % kw;
        let ch = col % c;
        // Signed: padding puts the window's first taps above or left of the image.
        let iy = i32(oy * p.window.y + ky * p.dilation_pad.x) - i32(p.dilation_pad.z);
        let ix = i32(ox * p.window.z + kx * p.dilation_pad.y) - i32(p.dilation_pad.w);
        let inside = iy >= 0 && iy < i32(h) && ix >= 0 && ix < i32(w);
        let y = u32(clamp(iy, 0, i32(h) - 1));
        let x = u32(clamp(ix, 0, i32(w) - 1));
        let value = f32(src[p.src_off + ((image * h + y) * w + x) * c + ch]);
        v[q] = select(0.0, value, inside && at.row < p.rows && at.col0 + q < p.cols);
    }
    dst[id] = v;
}

@compute @workgroup_size(256)
fn pack(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let id = gid.x + gid.y * groups.x * 256u;
    let at = slot(id);
    // The 2D grid may round past the last tile.
    if (at.z >= p.batches) {
        return;
    }
    var rem = at.z;
    var base = p.src_off;
    for (var d = p.batch_rank; d > 0u; d--) {
        let coord = rem % p.batch_shape[d - 1u];
        rem = rem / p.batch_shape[d - 1u];
        base += coord * p.batch_stride[d - 1u];
    }
    let row = at.row;
    let col0 = at.col0;
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
