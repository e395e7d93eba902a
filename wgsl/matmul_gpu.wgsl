// The GPU profile's matrix product: C[b] = A[b] x B[b] in workgroup-memory tiles, the design of
// tfjs-webgpu's MatMulPackedProgram and cuBLAS-style SGEMMs. A workgroup of 16 x 16 invocations
// computes a 64 x 64 tile of C; each invocation a 4 x 4 register block (rows 4 ty.., columns
// 4 tx..). Per 16-deep step of the contraction the workgroup stages a 64 x 16 slab of A and a
// 16 x 64 slab of B in workgroup memory as vec4s along M and N, each invocation staging one vec4
// of each with neighbouring invocations on neighbouring addresses (`A_ROWS_FAST`/`B_ROWS_FAST` say
// which index is contiguous in memory); then, for each of the 16 k, two vec4 reads feed 16
// multiply-adds.
//
// A is read through `load_a`, so one kernel serves three products (`A_MODE`):
//   0: A strided (row and column strides encode transposes; batch strides broadcast);
//   1: A = im2col(input) of an NHWC convolution, rows output pixels, columns filter taps
//      (ky, kx, c): the forward convolution as an implicit GEMM, no columns written out;
//   2: A = im2col(input)^T, rows taps, columns pixels: the filter gradient dW = im2col(x)^T x dy;
//   3: A = the output gradient dy gathered for each input pixel (rows) and tap (ky, kx, o)
//      (columns), zero where no output pixel reads the input pixel through that tap: the input
//      gradient dx = A x filter[ky, kx, o, c] at any stride, without spreading dy by zeros.
// A convolution's image may be a channel block of a wider one (`pixel_stride`), and C a column
// block of a wider matrix (`c_rs`): grouped convolutions run a product per group.
//
// Split-k: workgroup z = batch * splits + split sums contraction elements
// k_base + [split * k_split, (split + 1) * k_split) and, with splits > 1, writes its sum into `partials`
// (ACC), which `sum_splits` then adds up in order into C. Within a split the running sum restarts
// every `block_steps` steps and is folded into the total, so that no running sum is longer than
// about sqrt(k) terms (the error of a sum grows with its length).
// `T` is the storage type, `ACC` the accumulator's (f32 for f32 and f16, f64 for f64).
// Dispatch: (ceil(N / 64), ceil(M / 64) rows of tiles from `tile_row0`, batches x splits).

override A_MODE: u32 = 0u;
override A_ROWS_FAST: bool = false;
override B_ROWS_FAST: bool = false;

struct Params {
    m: u32,
    n: u32,
    // The end of this dispatch's part of the contraction (it starts at `k_base`).
    k_end: u32,
    batch_rank: u32,
    a_off: u32,
    b_off: u32,
    c_off: u32,
    // Add to C as stored.
    accumulate: u32,
    a_rs: u32,
    a_cs: u32,
    b_rs: u32,
    b_cs: u32,
    batch_shape: vec4<u32>,
    a_batch_stride: vec4<u32>,
    b_batch_stride: vec4<u32>,
    // Output batches, contraction splits and each split's length, the steps of a running sum
    // (see above), the first row of tiles this dispatch computes, and where its part of the
    // contraction starts (a contraction longer than llvmpipe's loop limit runs in parts).
    batches: u32,
    splits: u32,
    k_split: u32,
    block_steps: u32,
    tile_row0: u32,
    k_base: u32,
    // C's row stride (N unless C is a column block), and elements between an image's pixels.
    c_rs: u32,
    pixel_stride: u32,
    // The convolution (A_MODE 1, 2): input h, w, c and output width; window width, strides and
    // output height; dilations and the top and left padding. A_MODE 3: dy's h, w and channels and
    // the input width; window width, strides and the input height; the same.
    image: vec4<u32>,
    window: vec4<u32>,
    dilation_pad: vec4<u32>,
}

@group(0) @binding(0) var<storage, read_write> a: array<T>;
@group(0) @binding(1) var<storage, read_write> b: array<T>;
@group(0) @binding(2) var<storage, read_write> c: array<T>;
@group(0) @binding(3) var<storage, read_write> partials: array<ACC>;
@group(0) @binding(4) var<uniform> p: Params;

const TILE: u32 = 64u;
const DEPTH: u32 = 16u;
// A slab's k-rows are 16 vec4s, the vec4 holding rows 4q..4q+3 (or columns) of k-row kk stored
// at kk * 16 + (q ^ kk): without the swizzle the staging stores of a k-fast operand would land 64
// words apart, all in one memory bank (with it 8 banks serve 16 stores), and padding the rows
// instead would take float64's two slabs past WebGPU's 16 KiB of workgroup memory.
fn slot(kk: u32, q: u32) -> u32 {
    return kk * 16u + (q ^ kk);
}

var<workgroup> a_tile: array<vec4<ACC>, 256>;
var<workgroup> b_tile: array<vec4<ACC>, 256>;

// Element (pixel, tap) of the convolution's im2col matrix: zero in the padding.
// `i` as mixed-radix digits: (i % inner, (i / inner) % middle, i / inner / middle).
fn split3(i: u32, inner: u32, middle: u32) -> vec3<u32> {
    let rest = i / inner;
    return vec3<u32>(i - rest * inner, rest % middle, rest / middle);
}

// A filter tap as (channel, kx, ky), and a pixel of the output (im2col) or input (gather_dy) as
// (x, y, image): the same digits in A_MODE 1-3, `set_geometry` putting the sizes in place.
fn tap_digits(tap: u32) -> vec3<u32> {
    return split3(tap, p.image.z, p.window.x);
}

fn pixel_digits(pixel: u32) -> vec3<u32> {
    return split3(pixel, p.image.w, p.window.w);
}

fn im2col(base: u32, pixel: u32, tap: u32) -> ACC {
    let t = tap_digits(tap);
    let o = pixel_digits(pixel);
    let iy = i32(o.y * p.window.y + t.z * p.dilation_pad.x) - i32(p.dilation_pad.z);
    let ix = i32(o.x * p.window.z + t.y * p.dilation_pad.y) - i32(p.dilation_pad.w);
    if (iy < 0 || ix < 0 || u32(iy) >= p.image.x || u32(ix) >= p.image.y) {
        return ACC(0.0);
    }
    return ACC(a[base + ((o.z * p.image.x + u32(iy)) * p.image.y + u32(ix)) * p.pixel_stride + t.x]);
}

// Element (input pixel, tap (ky, kx, o)) of the input gradient's A: dy at the output pixel that
// reads the input pixel through the tap, zero where none does (the stride skips it, or it lies
// past dy's edge).
fn gather_dy(base: u32, pixel: u32, tap: u32) -> ACC {
    let t = tap_digits(tap);
    let i = pixel_digits(pixel);
    let ty = i32(i.y + p.dilation_pad.z) - i32(t.z * p.dilation_pad.x);
    let tx = i32(i.x + p.dilation_pad.w) - i32(t.y * p.dilation_pad.y);
    if (ty < 0 || tx < 0 || u32(ty) % p.window.y != 0u || u32(tx) % p.window.z != 0u) {
        return ACC(0.0);
    }
    let oy = u32(ty) / p.window.y;
    let ox = u32(tx) / p.window.z;
    if (oy >= p.image.x || ox >= p.image.y) {
        return ACC(0.0);
    }
    return ACC(a[base + ((i.z * p.image.x + oy) * p.image.y + ox) * p.pixel_stride + t.x]);
}

fn load_a(base: u32, row: u32, col: u32) -> ACC {
    switch A_MODE {
        case 1u: { return im2col(base, row, col); }
        case 2u: { return im2col(base, col, row); }
        case 3u: { return gather_dy(base, row, col); }
        default: { return ACC(a[base + row * p.a_rs + col * p.a_cs]); }
    }
}

// Stages vec4 `e` (of 256) of the k-step at `k0` into each slab: rows (or columns) 4q..4q+3 of
// k-row kk, so that no two invocations write parts of one vec4. Neighbouring invocations take
// neighbouring q where the operand's rows (columns) are contiguous in memory, else neighbouring k.
fn stage(e: u32, bases: vec2<u32>, row0: u32, col0: u32, k0: u32, k_end: u32) {
    var q = e / DEPTH;
    var kk = e % DEPTH;
    if (A_ROWS_FAST) {
        q = e % DEPTH;
        kk = e / DEPTH;
    }
    var value = vec4<ACC>(0.0);
    if (k0 + kk < k_end) {
        for (var i = 0u; i < 4u; i++) {
            let r = row0 + 4u * q + i;
            if (r < p.m) {
                value[i] = load_a(bases.x, r, k0 + kk);
            }
        }
    }
    a_tile[slot(kk, q)] = value;
    q = e % DEPTH;
    kk = e / DEPTH;
    if (B_ROWS_FAST) {
        q = e / DEPTH;
        kk = e % DEPTH;
    }
    value = vec4<ACC>(0.0);
    if (k0 + kk < k_end) {
        for (var j = 0u; j < 4u; j++) {
            let col = col0 + 4u * q + j;
            if (col < p.n) {
                value[j] = ACC(b[bases.y + (k0 + kk) * p.b_rs + col * p.b_cs]);
            }
        }
    }
    b_tile[slot(kk, q)] = value;
}

// The loops over the register block are written out: llvmpipe counts every loop iteration
// against its per-invocation limit (DeviceCore::max_loop_iterations), and a k-step then costs
// DEPTH + 9 of them (the staging loops of 4 included).
@compute @workgroup_size(16, 16)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) flat: u32,
) {
    let batch = wid.z / p.splits;
    let split = wid.z - batch * p.splits;
    let bases = batch_bases(batch);
    let row0 = (p.tile_row0 + wid.y) * TILE;
    let col0 = wid.x * TILE;
    let k_begin = p.k_base + split * p.k_split;
    let k_end = min(k_begin + p.k_split, p.k_end);
    var total: array<vec4<ACC>, 4>;
    var acc: array<vec4<ACC>, 4>;
    var steps = 0u;
    for (var k0 = k_begin; k0 < k_end; k0 += DEPTH) {
        stage(flat, bases, row0, col0, k0, k_end);
        workgroupBarrier();
        for (var kk = 0u; kk < DEPTH; kk++) {
            let av = a_tile[slot(kk, lid.y)];
            let bv = b_tile[slot(kk, lid.x)];
            acc[0] = fma(vec4<ACC>(av.x), bv, acc[0]);
            acc[1] = fma(vec4<ACC>(av.y), bv, acc[1]);
            acc[2] = fma(vec4<ACC>(av.z), bv, acc[2]);
            acc[3] = fma(vec4<ACC>(av.w), bv, acc[3]);
        }
        workgroupBarrier();
        steps++;
        if (steps == p.block_steps) {
            steps = 0u;
            total[0] += acc[0];
            total[1] += acc[1];
            total[2] += acc[2];
            total[3] += acc[3];
            acc[0] = vec4<ACC>(0.0);
            acc[1] = vec4<ACC>(0.0);
            acc[2] = vec4<ACC>(0.0);
            acc[3] = vec4<ACC>(0.0);
        }
    }
    for (var i = 0u; i < 4u; i++) {
        let row = row0 + 4u * lid.y + i;
        let sum = total[i] + acc[i];
        for (var j = 0u; j < 4u; j++) {
            let col = col0 + 4u * lid.x + j;
            if (row < p.m && col < p.n) {
                if (p.splits > 1u) {
                    partials[split * p.m * p.n * p.batches + (batch * p.m + row) * p.n + col] = sum[j];
                } else {
                    let at = p.c_off + (batch * p.m + row) * p.c_rs + col;
                    c[at] = T(sum[j] + select(ACC(0.0), ACC(c[at]), p.accumulate != 0u));
                }
            }
        }
    }
}

// C = the splits' partial sums, added in order (plus C as stored where `accumulate`): one
// invocation per element of C, `p.batches` batches of M x N.
@compute @workgroup_size(256)
fn sum_splits(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let at = gid.x + gid.y * nwg.x * 256u;
    let elements = p.m * p.n * p.batches;
    if (at >= elements) {
        return;
    }
    let to = p.c_off + (at / p.n) * p.c_rs + at % p.n;
    var sum = select(ACC(0.0), ACC(c[to]), p.accumulate != 0u);
    for (var s = 0u; s < p.splits; s++) {
        sum += partials[s * elements + at];
    }
    c[to] = T(sum);
}
