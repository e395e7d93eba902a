// Index-generating copies: every output element reads one input element chosen by index
// arithmetic, or a fill value. Buffers are u32 words; elements are `unit` words (whole-word dtypes,
// `*_words` entries) or `unit` bytes (1- and 2-byte dtypes, `*_bytes` entries, where each invocation
// owns one destination word and rewrites only the bytes it must).
//
// map_*:        Transpose, Tile, Pad, PadV2, MirrorPad, ReverseV2, BroadcastTo, Fill (per-dim modes)
// rows_*:       ConcatV2 and Pack: contiguous input rows into a pitched region of the output
// gather_*:     GatherV2 (axis, no batch dims); out-of-range indices give zeros, as on TF-GPU
// repeat_row_*: Tile and BroadcastTo that repeat one row (the input) along the output, by vec4s
// one_hot:      OneHot for whole-word dtypes
// range_f32:    Range for float32

struct Params {
    // Destination units (words or bytes) to produce.
    n: u32,
    rank: u32,
    // Words (or bytes) per element.
    unit: u32,
    // Window offsets, in words (words entries) or bytes (bytes entries).
    src_off: u32,
    dst_off: u32,
    aux_off: u32,
    // Entry-specific scalars (see each entry).
    a: u32,
    b: u32,
    out_shape: array<vec4<u32>, 2>,
    in_dim: array<vec4<u32>, 2>,
    in_stride: array<vec4<u32>, 2>,
    offset: array<vec4<i32>, 2>,
    mode: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
// Fill value (map) or indices (gather, one_hot).
@group(0) @binding(2) var<storage, read_write> aux: array<u32>;
// off_value (one_hot).
@group(0) @binding(3) var<storage, read_write> aux2: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

const DIRECT: u32 = 0u;
const MODULO: u32 = 1u;
const CONSTANT_PAD: u32 = 2u;
const REFLECT: u32 = 3u;
const SYMMETRIC: u32 = 4u;
const REVERSE: u32 = 5u;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn get_u(v: array<vec4<u32>, 2>, k: u32) -> u32 {
    return v[k / 4u][k % 4u];
}

// One dimension of `map_source`: peels the output coordinate off `rem` and adds the source
// offset; false where the coordinate is padding.
fn map_step(rem: ptr<function, u32>, at: ptr<function, i32>, size: u32, in_dim: u32, offset: i32, mode: u32, stride: u32) -> bool {
    let split = quot_rem(*rem, size);
    let o = i32(split.y);
    *rem = split.x;
    let dim = i32(in_dim);
    var i = o - offset;
    switch mode {
        // An offset of -k (0 <= k < dim) starts k elements in (Roll): unsigned, as o + k may pass
        // i32 for dimensions past 2^30.
        case MODULO: { i = i32((u32(o) + u32(-offset)) % u32(dim)); }
        case CONSTANT_PAD: {
            if (i < 0 || i >= dim) { return false; }
        }
        case REFLECT: {
            if (i < 0) { i = -i; }
            if (i >= dim) { i = 2 * dim - 2 - i; }
        }
        case SYMMETRIC: {
            if (i < 0) { i = -i - 1; }
            if (i >= dim) { i = 2 * dim - 1 - i; }
        }
        case REVERSE: { i = dim - 1 - o; }
        default: {}
    }
    *at += i * i32(stride);
    return true;
}

// The rank the pipeline handles (1, 2, 4 or 8), dimensions past the real rank padded by the host
// with size 1 and stride 0 (see broadcast.wgsl's RANK).
override RANK: u32 = 8u;

// Each dimension's mode, 3 bits a dimension (dimension k at bits 3k..3k + 2), fixed per pipeline:
// llvmpipe runs every case of a switch on a uniform value under lane masks, and a constant mode
// leaves one case (a Transpose ran about twice as fast). `p.mode` holds the same modes.
override MODES: u32 = 0u;

fn mode_of(k: u32) -> u32 {
    return (MODES >> (3u * k)) & 7u;
}

// Source element of output element `e`, or -1 where the output is padding. Dimensions innermost
// first, each at a constant index: llvmpipe keeps an array indexed by a variable in memory, per
// lane (see broadcast.wgsl).
fn map_source(e: u32) -> i32 {
    var rem = e;
    var at = 0i;
    var inside = true;
    let rank = RANK;
    if (rank > 7u) { inside = map_step(&rem, &at, p.out_shape[1].w, p.in_dim[1].w, p.offset[1].w, mode_of(7u), p.in_stride[1].w) && inside; }
    if (rank > 6u) { inside = map_step(&rem, &at, p.out_shape[1].z, p.in_dim[1].z, p.offset[1].z, mode_of(6u), p.in_stride[1].z) && inside; }
    if (rank > 5u) { inside = map_step(&rem, &at, p.out_shape[1].y, p.in_dim[1].y, p.offset[1].y, mode_of(5u), p.in_stride[1].y) && inside; }
    if (rank > 4u) { inside = map_step(&rem, &at, p.out_shape[1].x, p.in_dim[1].x, p.offset[1].x, mode_of(4u), p.in_stride[1].x) && inside; }
    if (rank > 3u) { inside = map_step(&rem, &at, p.out_shape[0].w, p.in_dim[0].w, p.offset[0].w, mode_of(3u), p.in_stride[0].w) && inside; }
    if (rank > 2u) { inside = map_step(&rem, &at, p.out_shape[0].z, p.in_dim[0].z, p.offset[0].z, mode_of(2u), p.in_stride[0].z) && inside; }
    if (rank > 1u) { inside = map_step(&rem, &at, p.out_shape[0].y, p.in_dim[0].y, p.offset[0].y, mode_of(1u), p.in_stride[0].y) && inside; }
    if (rank > 0u) { inside = map_step(&rem, &at, p.out_shape[0].x, p.in_dim[0].x, p.offset[0].x, mode_of(0u), p.in_stride[0].x) && inside; }
    return select(-1, at, inside);
}

@compute @workgroup_size(256)
fn map_words(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg);
    if (w >= p.n) {
        return;
    }
    let s = map_source(w / p.unit);
    if (s < 0) {
        dst[p.dst_off + w] = aux[p.aux_off + w % p.unit];
    } else {
        dst[p.dst_off + w] = src[p.src_off + u32(s) * p.unit + w % p.unit];
    }
}

// Tile and BroadcastTo whose input repeats whole along the output (a bias-like row): `p.n` vec4s
// of output from a row of `p.a` vec4s; offsets in vec4s. `repeat_row_texels` reads the row from a
// texture (4096 texels a row) on CPU adapters, where llvmpipe loads storage lane by lane.
@group(0) @binding(0) var<storage, read_write> src4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst4: array<vec4<u32>>;
@group(0) @binding(5) var row_texels: texture_2d<u32>;

@compute @workgroup_size(256)
fn repeat_row_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    dst4[p.dst_off + i] = src4[p.src_off + rem(i, p.a)];
}

@compute @workgroup_size(256)
fn repeat_row_texels(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let j = rem(i, p.a);
    dst4[p.dst_off + i] = textureLoad(row_texels, vec2<u32>(j & 4095u, j >> 12u), 0);
}

fn byte_at(word: u32, i: u32) -> u32 {
    return (word >> ((i & 3u) * 8u)) & 0xffu;
}

fn put_byte(value: u32, b: u32, byte: u32) -> u32 {
    return (value & ~(0xffu << (b * 8u))) | (byte << (b * 8u));
}

@compute @workgroup_size(256)
fn map_bytes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = linear_id(gid, nwg);
    if (k >= (p.dst_off + p.n + 3u) / 4u - p.dst_off / 4u) {
        return;
    }
    let word = p.dst_off / 4u + k;
    var value = dst[word];
    for (var b = 0u; b < 4u; b++) {
        let addr = word * 4u + b;
        if (addr >= p.dst_off && addr < p.dst_off + p.n) {
            let out_byte = addr - p.dst_off;
            let s = map_source(out_byte / p.unit);
            var byte: u32;
            if (s < 0) {
                let f = p.aux_off + out_byte % p.unit;
                byte = byte_at(aux[f >> 2u], f);
            } else {
                let at = p.src_off + u32(s) * p.unit + out_byte % p.unit;
                byte = byte_at(src[at >> 2u], at);
            }
            value = put_byte(value, b, byte);
        }
    }
    dst[word] = value;
}

// rows: the input is `a` rows of `b` units, written at the destination with a pitch of `p.rank` units
// (the field is reused: rows entries have no rank).
@compute @workgroup_size(256)
fn rows_words(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let row = i / p.b;
    let col = i % p.b;
    dst[p.dst_off + row * p.rank + col] = src[p.src_off + i];
}

@compute @workgroup_size(256)
fn rows_bytes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // `p.n` is the byte length of the destination region: (a - 1) * pitch + b.
    let k = linear_id(gid, nwg);
    if (k >= (p.dst_off + p.n + 3u) / 4u - p.dst_off / 4u) {
        return;
    }
    let word = p.dst_off / 4u + k;
    var value = dst[word];
    for (var b = 0u; b < 4u; b++) {
        let addr = word * 4u + b;
        if (addr >= p.dst_off && addr < p.dst_off + p.n) {
            let rel = addr - p.dst_off;
            let row = rel / p.rank;
            let col = rel % p.rank;
            if (col < p.b) {
                let at = p.src_off + row * p.b + col;
                value = put_byte(value, b, byte_at(src[at >> 2u], at));
            }
        }
    }
    dst[word] = value;
}

// gather: params viewed as [batch, outer, axis_dim, inner] elements, indices as [batch, count], out
// as [batch, outer, count, inner] (batch 1 without batch_dims). out_shape[0..3] = (outer, count,
// inner, batch); in_dim[0] = axis_dim; `a` = 1 for int64 indices.
fn gather_source(e: u32) -> i32 {
    let outer = get_u(p.out_shape, 0u);
    let inner = get_u(p.out_shape, 2u);
    let count = get_u(p.out_shape, 1u);
    let j = e % inner;
    let c = (e / inner) % count;
    let o = (e / (inner * count)) % outer;
    let batch = e / (inner * count * outer);
    let at = batch * count + c;
    var index: i32;
    if (p.a == 1u) {
        let lo = aux[p.aux_off + 2u * at];
        let hi = aux[p.aux_off + 2u * at + 1u];
        let sign_extended = select(0u, 0xffffffffu, (lo & 0x80000000u) != 0u);
        index = select(-1, i32(lo), hi == sign_extended);
    } else {
        index = i32(aux[p.aux_off + at]);
    }
    let axis_dim = i32(get_u(p.in_dim, 0u));
    if (index < 0 || index >= axis_dim) {
        return -1;
    }
    // A window of params rows [in_dim[1], in_dim[1] + in_dim[2]) (params larger than a binding,
    // gathered a window at a time): rows outside it are another pass's, -2.
    let window_rows = i32(get_u(p.in_dim, 2u));
    if (window_rows > 0) {
        let local = index - i32(get_u(p.in_dim, 1u));
        if (local < 0 || local >= window_rows) {
            return -2;
        }
        return local * i32(inner) + i32(j);
    }
    return (i32(batch * outer + o) * axis_dim + index) * i32(inner) + i32(j);
}

@compute @workgroup_size(256)
fn gather_words(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg);
    if (w >= p.n) {
        return;
    }
    let s = gather_source(w / p.unit);
    if (s == -2) {
        return;
    }
    dst[p.dst_off + w] = select(0u, src[p.src_off + u32(max(s, 0)) * p.unit + w % p.unit], s >= 0);
}

@compute @workgroup_size(256)
fn gather_bytes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = linear_id(gid, nwg);
    if (k >= (p.dst_off + p.n + 3u) / 4u - p.dst_off / 4u) {
        return;
    }
    let word = p.dst_off / 4u + k;
    var value = dst[word];
    for (var b = 0u; b < 4u; b++) {
        let addr = word * 4u + b;
        if (addr >= p.dst_off && addr < p.dst_off + p.n) {
            let out_byte = addr - p.dst_off;
            let s = gather_source(out_byte / p.unit);
            var byte = 0u;
            if (s >= 0) {
                let at = p.src_off + u32(s) * p.unit + out_byte % p.unit;
                byte = byte_at(src[at >> 2u], at);
            }
            if (s != -2) {
                value = put_byte(value, b, byte);
            }
        }
    }
    dst[word] = value;
}

// one_hot: out as [outer, depth, inner] elements of `unit` words; indices (aux) as [outer, inner];
// src holds on_value (at src_off) and aux2 off_value (at word `b`); `a` = 1 for int64 indices.
@compute @workgroup_size(256)
fn one_hot(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg);
    if (w >= p.n) {
        return;
    }
    let e = w / p.unit;
    let inner = get_u(p.out_shape, 2u);
    let depth = get_u(p.out_shape, 1u);
    let j = e % inner;
    let d = (e / inner) % depth;
    let o = e / (inner * depth);
    let slot = o * inner + j;
    var index: i32;
    if (p.a == 1u) {
        let lo = aux[p.aux_off + 2u * slot];
        let hi = aux[p.aux_off + 2u * slot + 1u];
        index = select(-1, i32(lo), hi == select(0u, 0xffffffffu, (lo & 0x80000000u) != 0u));
    } else {
        index = i32(aux[p.aux_off + slot]);
    }
    let on = src[p.src_off + w % p.unit];
    let off = aux2[p.b + w % p.unit];
    dst[p.dst_off + w] = select(off, on, index == i32(d));
}

// range_f32: out[i] = start + i * delta, with start and delta as f32 bits in `a` and `b`.
@compute @workgroup_size(256)
fn range_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    // in_dim[0].x: the index of this window's first value in the whole range.
    dst[p.dst_off + i] = bitcast<u32>(bitcast<f32>(p.a) + f32(p.in_dim[0].x + i) * bitcast<f32>(p.b));
}
