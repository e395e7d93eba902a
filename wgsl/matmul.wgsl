// Batched matrix multiply C[b] = A[b] x B[b], register-blocked, without workgroup memory or
// barriers. Each of a workgroup's 16 invocations computes a ROWS x COLS block of C; per step of K it loads ROWS values
// of A and COLS of B and does ROWS * COLS multiply-adds. On lavapipe every storage or workgroup
// load is a per-lane scalar loop (Mesa 22.3's llvmpipe), so loads, not FMAs, bound a matmul there:
// the block size sets the FMAs per load. Real GPUs also want this register blocking.
// Row/column strides encode transposes; batch strides (0 where a batch dim broadcasts) follow the
// output batch shape (rank <= 4). Rows and columns past the edge are clamped for loads and not
// stored. Dispatch: (ceil(N / (16 * COLS)), ceil(M / ROWS), batch).
// `small` is the variant for small outputs, where a 16 x 256 block per workgroup would leave most
// invocations idle: 8 x 8 invocations of 4 x 4 blocks, 32 x 32 of C per workgroup. Dispatch:
// (ceil(N / 32), ceil(M / 32), batch).
// `T` is the storage type and `ACC` the accumulator's: f32 for f32 and f16, f64 for f64.

struct Params {
    m: u32,
    n: u32,
    k: u32,
    batch_rank: u32,
    a_off: u32,
    b_off: u32,
    c_off: u32,
    // Add to C as stored: a contraction longer than the adapter's loop limit runs in parts.
    accumulate: u32,
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

const ROWS: u32 = 16u;
const COLS: u32 = 16u;
const SMALL: u32 = 4u;

@compute @workgroup_size(8, 8)
fn small(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let col0 = (wid.x * 8u + lid.x) * SMALL;
    let row0 = (wid.y * 8u + lid.y) * SMALL;
    if (col0 >= p.n || row0 >= p.m) {
        return;
    }
    let bases = batch_bases(wid.z);
    var a_at: array<u32, SMALL>;
    var b_at: array<u32, SMALL>;
    for (var j = 0u; j < SMALL; j++) {
        a_at[j] = bases.x + min(row0 + j, p.m - 1u) * p.a_rs;
        b_at[j] = bases.y + min(col0 + j, p.n - 1u) * p.b_cs;
    }
    var acc: array<vec4<ACC>, SMALL>;
    for (var k = 0u; k < p.k; k++) {
        let bk = vec4<ACC>(
            ACC(b[b_at[0] + k * p.b_rs]),
            ACC(b[b_at[1] + k * p.b_rs]),
            ACC(b[b_at[2] + k * p.b_rs]),
            ACC(b[b_at[3] + k * p.b_rs]),
        );
        for (var r = 0u; r < SMALL; r++) {
            acc[r] += ACC(a[a_at[r] + k * p.a_cs]) * bk;
        }
    }
    let out = p.c_off + (wid.z * p.m + row0) * p.n + col0;
    let rows = min(SMALL, p.m - row0);
    let cols = min(SMALL, p.n - col0);
    for (var r = 0u; r < rows; r++) {
        for (var j = 0u; j < cols; j++) {
            c[out + r * p.n + j] = T(acc[r][j] + select(0.0, ACC(c[out + r * p.n + j]), p.accumulate != 0u));
        }
    }
}

@compute @workgroup_size(16)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let col0 = (wid.x * 16u + lid.x) * COLS;
    let row0 = wid.y * ROWS;
    let bases = batch_bases(wid.z);
    let a_base = bases.x;
    let b_base = bases.y;
    var a_at: array<u32, ROWS>;
    for (var r = 0u; r < ROWS; r++) {
        a_at[r] = a_base + min(row0 + r, p.m - 1u) * p.a_rs;
    }
    var b_at: array<u32, COLS>;
    for (var j = 0u; j < COLS; j++) {
        b_at[j] = b_base + min(col0 + j, p.n - 1u) * p.b_cs;
    }
    var acc: array<array<ACC, COLS>, ROWS>;
    for (var k = 0u; k < p.k; k++) {
        var bk: array<ACC, COLS>;
        for (var j = 0u; j < COLS; j++) {
            bk[j] = ACC(b[b_at[j] + k * p.b_rs]);
        }
        for (var r = 0u; r < ROWS; r++) {
            let ak = ACC(a[a_at[r] + k * p.a_cs]);
            for (var j = 0u; j < COLS; j++) {
                acc[r][j] += ak * bk[j];
            }
        }
    }
    if (col0 >= p.n) {
        return;
    }
    let out = p.c_off + (wid.z * p.m + row0) * p.n + col0;
    let rows = min(ROWS, p.m - row0);
    let cols = min(COLS, p.n - col0);
    for (var r = 0u; r < rows; r++) {
        for (var j = 0u; j < cols; j++) {
            c[out + r * p.n + j] = T(acc[r][j] + select(0.0, ACC(c[out + r * p.n + j]), p.accumulate != 0u));
        }
    }
}
