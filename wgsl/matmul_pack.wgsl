// Packs a (batched, strided) matrix into 128 x 128 f32 tiles for `matmul_tiles.wgsl`: each tile is
// 64 KiB, the size of one uniform binding, laid out row-major as 32 vec4 per row. Tiles follow each
// other row-tile-major, batch outermost; entries past the matrix edge are zero, so the tiled kernel
// needs no bounds checks in its inner loop. One invocation writes one vec4 (`pack_columns_vec4`: a 4 x 4
// block).
// `pack_im2col` packs rows `row0..row0 + rows` of an NHWC convolution's im2col matrix instead:
// row = (image, oy, ox), column = (ky, kx, channel), the layout of an HWIO filter seen as a matrix,
// so a convolution is that matrix times the filter (an implicit GEMM: the im2col matrix exists only
// as tiles, a chunk of rows at a time). `pack_im2col_vec4` is the same for f32 inputs with a multiple
// of 4 channels starting on a vec4: one invocation per (row, filter tap) copies the tap's channels
// as vec4s, so the index math is done once per tap, not per element (on llvmpipe it cost more than
// the loads). `pack_im2col_window` is that again, reading the input through a 64 KiB uniform window
// that holds the input rows of a few output rows, one dispatch per window: on llvmpipe a uniform
// load is a gather, cheaper than a storage load (a per-lane loop).
// Dispatch: `pack`, `pack_vec4` and `pack_im2col`, batch * row_tiles * col_tiles * 4096 invocations;
// the per-tap packers, dispatch_rows * (kh * kw + 1); a 2D grid of 256-wide workgroups.

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
    // pack_im2col_window only: the rows of the chunk this dispatch packs (the last dispatch of the
    // last chunk runs on to the end of its tile).
    dispatch_row: u32,
    dispatch_rows: u32,
    batch_shape: vec4<u32>,
    batch_stride: vec4<u32>,
    // pack_im2col only: (h, w, c, ow), (kw, sh, sw, oh), (dh, dw, pad_top, pad_left).
    image: vec4<u32>,
    window: vec4<u32>,
    dilation_pad: vec4<u32>,
}

@group(0) @binding(0) var<storage, read_write> src: array<T>;
// The same binding seen as vec4s, for pack_im2col_vec4 only (f32, window offset a multiple of 4).
@group(0) @binding(0) var<storage, read_write> src4: array<vec4<f32>>;
// pack_im2col_window's own layout (the `matmul_pack_window` shader): the tiles, then a 64 KiB
// uniform window of the input.
@group(0) @binding(0) var<storage, read_write> window_dst: array<vec4<f32>>;
@group(0) @binding(1) var<uniform> window: array<vec4<f32>, 4096>;
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
    let in_batch = rem(tile, tiles_per_batch);
    let within = id % TILE_VEC4S;
    let row_tile = quot(in_batch, p.col_tiles);
    return Slot(
        quot(tile, tiles_per_batch),
        row_tile * TILE + within / 32u,
        (in_batch - row_tile * p.col_tiles) * TILE + (within % 32u) * 4u,
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
    let image = quot(r, oh * ow);
    let oy = rem(quot(r, ow), oh);
    let ox = rem(r, ow);
    var v = vec4<f32>();
    for (var q = 0u; q < 4u; q++) {
        let col = min(at.col0 + q, p.cols - 1u);
        let ky = quot(col, kw * c);
        let kx = rem(quot(col, c), kw);
        let ch = rem(col, c);
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

// One invocation of the per-tap packers: a (row, filter tap) of the chunk, or a row's zero columns.
struct TapSlot {
    // The row within the chunk, and where that row starts in the packed tiles.
    chunk_row: u32,
    row_at: u32,
    // The tap (kh * kw: the row's zero columns past cols, up to the last tile's edge).
    tap: u32,
    zeros: bool,
    // The input element of the tap's first channel (clamped into the image), and whether the tap
    // lies inside the image and the row inside the matrix (else the tap packs zeros).
    first: u32,
    valid: bool,
}

// Invocation `id` of a dispatch over rows dispatch_row..dispatch_row + dispatch_rows: kh * kw + 1
// invocations a row. Rows past the matrix (the last tile's padding) read its last row.
fn tap_slot(id: u32) -> TapSlot {
    let h = p.image.x;
    let w = p.image.y;
    let c = p.image.z;
    let ow = p.image.w;
    let kw = p.window.x;
    let oh = p.window.w;
    let taps = quot(p.cols, c);
    let local = quot(id, taps + 1u);
    let tap = id - local * (taps + 1u);
    let chunk_row = p.dispatch_row + local;
    let r = p.row0 + min(chunk_row, p.rows - 1u);
    let image = quot(r, oh * ow);
    let oy = rem(quot(r, ow), oh);
    let ox = rem(r, ow);
    let ky = quot(tap, kw);
    let kx = tap - ky * kw;
    // Signed: padding puts the window's first taps above or left of the image.
    let iy = i32(oy * p.window.y + ky * p.dilation_pad.x) - i32(p.dilation_pad.z);
    let ix = i32(ox * p.window.z + kx * p.dilation_pad.y) - i32(p.dilation_pad.w);
    let y = u32(clamp(iy, 0, i32(h) - 1));
    let x = u32(clamp(ix, 0, i32(w) - 1));
    return TapSlot(
        chunk_row,
        (chunk_row / TILE) * p.col_tiles * TILE_VEC4S + (chunk_row % TILE) * 32u,
        tap,
        tap == taps,
        ((image * h + y) * w + x) * c,
        iy >= 0 && iy < i32(h) && ix >= 0 && ix < i32(w) && chunk_row < p.rows,
    );
}

// Where column `col` (a multiple of 4) of a packed row starting at `row_at` lies.
fn column_at(row_at: u32, col: u32) -> u32 {
    return row_at + (col / TILE) * TILE_VEC4S + (col % TILE) / 4u;
}

@compute @workgroup_size(256)
fn pack_im2col_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let id = gid.x + gid.y * groups.x * 256u;
    if (id >= p.dispatch_rows * (quot(p.cols, p.image.z) + 1u)) {
        return;
    }
    let at = tap_slot(id);
    if (at.zeros) {
        for (var col = p.cols; col < p.col_tiles * TILE; col += 4u) {
            dst[column_at(at.row_at, col)] = vec4<f32>();
        }
        return;
    }
    let c = p.image.z;
    let first = (at.first + p.src_off) / 4u;
    for (var v = 0u; v < c / 4u; v++) {
        dst[column_at(at.row_at, at.tap * c + v * 4u)] = select(vec4<f32>(), src4[first + v], at.valid);
    }
}

@compute @workgroup_size(256)
fn pack_im2col_window(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let id = gid.x + gid.y * groups.x * 256u;
    if (id >= p.dispatch_rows * (quot(p.cols, p.image.z) + 1u)) {
        return;
    }
    let at = tap_slot(id);
    if (at.zeros) {
        for (var col = p.cols; col < p.col_tiles * TILE; col += 4u) {
            window_dst[column_at(at.row_at, col)] = vec4<f32>();
        }
        return;
    }
    let c = p.image.z;
    // src_off: where the input starts in the window, in elements (wrapping: it may start before).
    let first = (at.first + p.src_off) / 4u;
    for (var v = 0u; v < c / 4u; v++) {
        window_dst[column_at(at.row_at, at.tap * c + v * 4u)] = select(vec4<f32>(), window[first + v], at.valid);
    }
}

// The element offset of batch `z`'s matrix.
fn batch_base(z: u32) -> u32 {
    var left = z;
    var base = p.src_off;
    for (var d = p.batch_rank; d > 0u; d--) {
        let next = quot(left, p.batch_shape[d - 1u]);
        let coord = left - next * p.batch_shape[d - 1u];
        left = next;
        base += coord * p.batch_stride[d - 1u];
    }
    return base;
}

@compute @workgroup_size(256)
fn pack(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let id = gid.x + gid.y * groups.x * 256u;
    let at = slot(id);
    // The 2D grid may round past the last tile.
    if (at.z >= p.batches) {
        return;
    }
    // A tile's padding loads nothing (k = 24 pads 104 of a tile's 128 columns).
    var v = vec4<f32>();
    if (at.row < p.rows && at.col0 < p.cols) {
        let base = batch_base(at.z) + at.row * p.rs;
        // Clamped loads, then zeros selected past the last column.
        for (var q = 0u; q < 4u; q++) {
            let c = min(at.col0 + q, p.cols - 1u);
            v[q] = select(0.0, f32(src[base + c * p.cs]), at.col0 + q < p.cols);
        }
    }
    dst[id] = v;
}

// `pack` for f32 rows of contiguous vec4s (column stride 1; the row stride, every batch stride, the
// offset and the columns multiples of 4): one vec4 load per vec4 of a tile where `pack` loads four
// scalars. On llvmpipe each storage load is a loop over the lanes, so loads are the packer's cost.
@compute @workgroup_size(256)
fn pack_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let id = gid.x + gid.y * groups.x * 256u;
    let at = slot(id);
    if (at.z >= p.batches) {
        return;
    }
    var v = vec4<f32>();
    if (at.row < p.rows && at.col0 < p.cols) {
        v = src4[(batch_base(at.z) + at.row * p.rs + at.col0) / 4u];
    }
    dst[id] = v;
}

// `pack` for f32 matrices whose columns are contiguous vec4s (a transposed operand: row stride 1;
// the column stride, every batch stride, the offset and the rows multiples of 4): one invocation
// per 4 x 4 block of a tile loads its four columns as vec4s and stores its four rows, 4 loads
// where `pack` makes 16. Dispatch: tiles * 1024 invocations.
@compute @workgroup_size(256)
fn pack_columns_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let id = gid.x + gid.y * groups.x * 256u;
    let tiles_per_batch = p.row_tiles * p.col_tiles;
    let tile = id / 1024u;
    let z = quot(tile, tiles_per_batch);
    if (z >= p.batches) {
        return;
    }
    let in_batch = tile - z * tiles_per_batch;
    let row_tile = quot(in_batch, p.col_tiles);
    let block = id % 1024u;
    let row0 = row_tile * TILE + (block / 32u) * 4u;
    let col0 = (in_batch - row_tile * p.col_tiles) * TILE + (block % 32u) * 4u;
    var columns: array<vec4<f32>, 4>;
    if (row0 < p.rows) {
        let base = batch_base(z) + row0;
        for (var q = 0u; q < 4u; q++) {
            if (col0 + q < p.cols) {
                columns[q] = src4[(base + (col0 + q) * p.cs) / 4u];
            }
        }
    }
    let first = tile * TILE_VEC4S + (block / 32u) * 128u + block % 32u;
    for (var i = 0u; i < 4u; i++) {
        dst[first + i * 32u] = vec4<f32>(columns[0][i], columns[1][i], columns[2][i], columns[3][i]);
    }
}
