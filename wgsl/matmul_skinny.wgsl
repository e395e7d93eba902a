// D[p, q] (+)= U[p, k] x S[k, q] for products with a small side, on CPU adapters (llvmpipe): few rows
// or columns of C (a classifier's head, batch 1 to 16), or a short contraction (its weight
// gradient). The small operand U is packed into one 64 KiB uniform binding per chunk of k
// (`matmul_skinny_pack.wgsl`), where llvmpipe reads it with cheap branch-free loads; the other, S,
// streams from its storage binding, one vec4 per load where its layout allows (a storage load is a
// per-lane loop on llvmpipe, so a vec4 costs what a scalar does). D is C, or C transposed where
// the small operand is B (strides pick). Each invocation computes 8 rows of D (a row block) by
// 4 columns (`cols`; `EIGHT` false skips the upper 4 rows where D has at most 4), or `DOT_ROWS`
// rows by 1 column (`dots`). Dispatch: (ceil(q / 4 / 32), row blocks, 1) or
// (ceil(q / 32), ceil(p / DOT_ROWS), 1).

struct Params {
    p: u32,
    q: u32,
    // The chunk's length of k (a multiple of 4 for `dots`).
    k: u32,
    row_blocks: u32,
    // S[kk, j] is s[s_off + kk * s_ks + j * s_qs].
    s_off: u32,
    s_ks: u32,
    s_qs: u32,
    // D[r, j] is d[d_off + r * d_rs + j * d_cs].
    d_off: u32,
    d_rs: u32,
    d_cs: u32,
    // Add to D as stored (chunks of k after the first).
    accumulate: u32,
}

@group(0) @binding(0) var<storage, read_write> s: array<f32>;
@group(0) @binding(0) var<storage, read_write> s4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> d: array<f32>;
@group(0) @binding(1) var<storage, read_write> d4: array<vec4<f32>>;
// `cols`: vec4 (kk * row_blocks + rb) * 2 + h holds U[rb * 8 + 4h .. + 4, kk];
// `dots`: vec4 ((kk / 4) * row_blocks + rb) * 8 + r holds U[rb * 8 + r, kk .. kk + 4].
@group(0) @binding(2) var<uniform> u: array<vec4<f32>, 4096>;
@group(0) @binding(3) var<uniform> prm: Params;

// Rows 4..8 of each block: false where D has at most 4 rows.
override EIGHT: bool = true;

// The loads and stores `cols` makes: `matmul_skinny.rs` appends the lines that pick one of each
// pair as `s_quad` and `put_quad` (an entry point may not use two views of one binding, even in a
// branch it never takes). vec4s where S's (or D's) columns are contiguous and every vec4 lies
// inside it; else element by element, columns past q clamped (loads) or skipped (stores).
fn s_quad_vec4(kk: u32, j: u32) -> vec4<f32> {
    return s4[(prm.s_off + kk * prm.s_ks + j) / 4u];
}

fn s_quad_scalar(kk: u32, j: u32) -> vec4<f32> {
    let row = prm.s_off + kk * prm.s_ks;
    let last = prm.q - 1u;
    return vec4<f32>(
        s[row + min(j, last) * prm.s_qs],
        s[row + min(j + 1u, last) * prm.s_qs],
        s[row + min(j + 2u, last) * prm.s_qs],
        s[row + min(j + 3u, last) * prm.s_qs],
    );
}

// Row r's columns j .. j + 4, where r is a row of D.
fn put_quad_vec4(r: u32, j: u32, v: vec4<f32>) {
    if (r >= prm.p) {
        return;
    }
    let at = (prm.d_off + r * prm.d_rs + j) / 4u;
    var x = v;
    if (prm.accumulate != 0u) {
        x += d4[at];
    }
    d4[at] = x;
}

fn put_quad_scalar(r: u32, j: u32, v: vec4<f32>) {
    if (r >= prm.p) {
        return;
    }
    let at = prm.d_off + r * prm.d_rs + j * prm.d_cs;
    for (var c = 0u; c < 4u; c++) {
        if (j + c < prm.q) {
            var x = v[c];
            if (prm.accumulate != 0u) {
                x += d[at + c * prm.d_cs];
            }
            d[at + c * prm.d_cs] = x;
        }
    }
}

// Rows r .. r + 4 of D's column j (those inside D): `dots`'s stores, as one vec4 where D's rows
// are contiguous (C transposed) and p and the offsets are multiples of 4.
fn put_rows_vec4(r: u32, j: u32, v: vec4<f32>) {
    if (r >= prm.p) {
        return;
    }
    let at = (prm.d_off + r + j * prm.d_cs) / 4u;
    var x = v;
    if (prm.accumulate != 0u) {
        x += d4[at];
    }
    d4[at] = x;
}

fn put_rows_scalar(r: u32, j: u32, v: vec4<f32>) {
    for (var c = 0u; c < 4u; c++) {
        if (r + c < prm.p) {
            let at = prm.d_off + (r + c) * prm.d_rs + j * prm.d_cs;
            var x = v[c];
            if (prm.accumulate != 0u) {
                x += d[at];
            }
            d[at] = x;
        }
    }
}

@compute @workgroup_size(32)
fn cols(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x * 4u;
    let rb = gid.y;
    if (j >= prm.q) {
        return;
    }
    var acc0 = vec4<f32>();
    var acc1 = vec4<f32>();
    var acc2 = vec4<f32>();
    var acc3 = vec4<f32>();
    var acc4 = vec4<f32>();
    var acc5 = vec4<f32>();
    var acc6 = vec4<f32>();
    var acc7 = vec4<f32>();
    for (var kk = 0u; kk < prm.k; kk++) {
        let b = s_quad(kk, j);
        let at = (kk * prm.row_blocks + rb) * 2u;
        let lo = u[at];
        acc0 += lo.x * b;
        acc1 += lo.y * b;
        acc2 += lo.z * b;
        acc3 += lo.w * b;
        if (EIGHT) {
            let hi = u[at + 1u];
            acc4 += hi.x * b;
            acc5 += hi.y * b;
            acc6 += hi.z * b;
            acc7 += hi.w * b;
        }
    }
    let r0 = rb * 8u;
    put_quad(r0, j, acc0);
    put_quad(r0 + 1u, j, acc1);
    put_quad(r0 + 2u, j, acc2);
    put_quad(r0 + 3u, j, acc3);
    if (EIGHT) {
        put_quad(r0 + 4u, j, acc4);
        put_quad(r0 + 5u, j, acc5);
        put_quad(r0 + 6u, j, acc6);
        put_quad(r0 + 7u, j, acc7);
    }
}

// Rows of D one `dots` invocation computes: 4, 8 or 16 (D has at most 4 rows, at most 8, more).
override DOT_ROWS: u32 = 16u;

// S's k contiguous: each invocation reads its column of S as vec4s along k, and each row's vec4 of
// U for the same four steps; `dot` keeps one running sum per row (four FMAs, as llvmpipe lays a
// vec4 out as four vectors of lanes), so 16 rows fit in registers.
@compute @workgroup_size(32)
fn dots(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let r0 = gid.y * DOT_ROWS;
    if (j >= prm.q) {
        return;
    }
    let column = (prm.s_off + j * prm.s_qs) / 4u;
    var acc0 = vec4<f32>();
    var acc1 = vec4<f32>();
    var acc2 = vec4<f32>();
    var acc3 = vec4<f32>();
    for (var k4 = 0u; k4 < prm.k / 4u; k4++) {
        let b = s4[column + k4];
        // The packed vec4s of one step of four run through the rows in order (8 per row block).
        let at = k4 * prm.row_blocks * 8u + r0;
        acc0.x += dot(u[at], b);
        acc0.y += dot(u[at + 1u], b);
        acc0.z += dot(u[at + 2u], b);
        acc0.w += dot(u[at + 3u], b);
        if (DOT_ROWS > 4u) {
            acc1.x += dot(u[at + 4u], b);
            acc1.y += dot(u[at + 5u], b);
            acc1.z += dot(u[at + 6u], b);
            acc1.w += dot(u[at + 7u], b);
        }
        if (DOT_ROWS > 8u) {
            acc2.x += dot(u[at + 8u], b);
            acc2.y += dot(u[at + 9u], b);
            acc2.z += dot(u[at + 10u], b);
            acc2.w += dot(u[at + 11u], b);
            acc3.x += dot(u[at + 12u], b);
            acc3.y += dot(u[at + 13u], b);
            acc3.z += dot(u[at + 14u], b);
            acc3.w += dot(u[at + 15u], b);
        }
    }
    put_rows(r0, j, acc0);
    if (DOT_ROWS > 4u) {
        put_rows(r0 + 4u, j, acc1);
    }
    if (DOT_ROWS > 8u) {
        put_rows(r0 + 8u, j, acc2);
        put_rows(r0 + 12u, j, acc3);
    }
}
