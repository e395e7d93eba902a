// Cast. `S` and `D` are aliased per (SrcT, DstT), `W` (the type to_i32 and the int64 steps compute in)
// to f64 where either is float64, else f32. Float to int truncates toward zero. Entry points:
//   main:       between f32, f16, f64, i32 and u32 (float -> int32 excepted)
//   to_i32:     f32/f16/f64 -> int32; NaN and values outside int32 give INT32_MIN, as TF-CPU's
//               static_cast does (x86's cvttss2si "integer indefinite")
//   to_bool:    S -> bool (x != 0), packed four per word
//   from_bool:  bool -> D
//   to_i64:     f32/f64 -> int64 (two words, two's complement; NaN and values outside int64 give
//               INT64_MIN, as for int32)
//   to_u64:     f32/f64 -> uint64 (values from 2^63 keep their bits; the rest as to_i64)
//   from_i64:   int64 -> f32/f64
//   from_u64:   uint64 -> f64
//   f64_to_bool: f64 -> bool (x != 0), packed four per word
//   widen_i32:  int32 -> int64 (sign-extended)
//   narrow_i64: int64 -> int32 (the low word, wrapping as C++'s static_cast does)
//   from_bf16:  bfloat16 -> f32 (exact: the high half of the float's bits)
//   to_bf16:    f32 -> bfloat16, rounded to nearest even as Eigen's bfloat16 rounds, or truncated
//               with `truncate` (NaN to the quiet NaN of its sign either way); an invocation per output word, halves outside the output
//               kept (`out_off` in halves)
// The raw-word views (`input_words`, `out_words`) alias the typed ones; each entry point uses one.

struct Params {
    n: u32,
    // Offsets in elements of the typed views, or in bytes / words for the raw ones.
    in_off: u32,
    out_off: u32,
    // to_bf16: 1 truncates instead of rounding (Cast's Truncate).
    truncate: u32,
}

@group(0) @binding(0) var<storage, read_write> input: array<S>;
@group(0) @binding(0) var<storage, read_write> input_words: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<D>;
@group(0) @binding(1) var<storage, read_write> out_words: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    out[p.out_off + i] = D(input[p.in_off + i]);
}

@compute @workgroup_size(256)
fn to_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let v = W(input[p.in_off + i]);
    let in_range = v >= -2147483648.0 && v < 2147483648.0;
    out[p.out_off + i] = select(D(bitcast<i32>(0x80000000u)), D(v), in_range);
}

@compute @workgroup_size(256)
fn to_bool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg);
    if (w * 4u >= p.n) {
        return;
    }
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let i = w * 4u + k;
        // By the bits: NaN is true (x != 0), which a compiler assuming no NaNs may not keep.
        if (i < p.n && (bitcast<u32>(f32(input[p.in_off + i])) & 0x7fffffffu) != 0u) {
            word |= 1u << (k * 8u);
        }
    }
    // The output is a fresh allocation: word-aligned (out_off is in bytes).
    out_words[p.out_off / 4u + w] = word;
}

@compute @workgroup_size(256)
fn from_bool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let at = p.in_off + i;
    let byte = (input_words[at >> 2u] >> ((at & 3u) * 8u)) & 0xffu;
    out[p.out_off + i] = D(select(0.0, 1.0, byte != 0u));
}

// The two's complement words of trunc(v); outside int64 (NaN too) INT64_MIN, as for int32. With
// `unsigned`, values in [2^63, 2^64) keep their own bits (C++'s float to uint64).
fn int64_words(v: W, unsigned: bool) -> vec2<u32> {
    let two63 = W(9223372036854775808.0);
    var x = v;
    var top = 0u;
    if (unsigned && v >= two63 && v < 2.0 * two63) {
        x = v - two63;
        top = 0x80000000u;
    }
    if (!(x >= -two63 && x < two63)) {
        return vec2<u32>(0u, 0x80000000u);
    }
    // floor, not trunc: llvmpipe's f64 trunc can be wrong (math_f64.wgsl's m64_trunc).
    let magnitude = floor(abs(x));
    let hi = floor(magnitude / 4294967296.0);
    var lo_word = u32(magnitude - hi * 4294967296.0);
    var hi_word = u32(hi);
    if (x < 0.0) {
        // Two's complement negation of the 64-bit magnitude.
        lo_word = ~lo_word + 1u;
        hi_word = ~hi_word + select(0u, 1u, lo_word == 0u);
    }
    return vec2<u32>(lo_word, hi_word | top);
}

@compute @workgroup_size(256)
fn to_i64(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let words = int64_words(W(input[p.in_off + i]), false);
    out_words[p.out_off + 2u * i] = words.x;
    out_words[p.out_off + 2u * i + 1u] = words.y;
}

@compute @workgroup_size(256)
fn to_u64(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let words = int64_words(W(input[p.in_off + i]), true);
    out_words[p.out_off + 2u * i] = words.x;
    out_words[p.out_off + 2u * i + 1u] = words.y;
}

// int64 (or, with `unsigned`, uint64) words to D, rounded once in W.
fn from_words(lo_word: u32, hi_word: u32, unsigned: bool) -> D {
    var lo = lo_word;
    var hi = hi_word;
    let negative = !unsigned && (hi & 0x80000000u) != 0u;
    if (negative) {
        lo = ~lo + 1u;
        hi = ~hi + select(0u, 1u, lo == 0u);
    }
    // In f64 (W) one rounding: both words and the scaling are exact.
    let magnitude = W(hi) * 4294967296.0 + W(lo);
    return D(select(magnitude, -magnitude, negative));
}

@compute @workgroup_size(256)
fn from_i64(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    out[p.out_off + i] = from_words(input_words[p.in_off + 2u * i], input_words[p.in_off + 2u * i + 1u], false);
}

@compute @workgroup_size(256)
fn from_u64(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    out[p.out_off + i] = from_words(input_words[p.in_off + 2u * i], input_words[p.in_off + 2u * i + 1u], true);
}

// float64 -> bool by the bits of each value's two words (NaN is true).
@compute @workgroup_size(256)
fn f64_to_bool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg);
    if (w * 4u >= p.n) {
        return;
    }
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let i = w * 4u + k;
        let at = 2u * (p.in_off + i);
        if (i < p.n && ((input_words[at + 1u] & 0x7fffffffu) | input_words[at]) != 0u) {
            word |= 1u << (k * 8u);
        }
    }
    out_words[p.out_off / 4u + w] = word;
}

@compute @workgroup_size(256)
fn widen_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let v = i32(input[p.in_off + i]);
    out_words[p.out_off + 2u * i] = bitcast<u32>(v);
    out_words[p.out_off + 2u * i + 1u] = select(0u, 0xffffffffu, v < 0);
}

@compute @workgroup_size(256)
fn narrow_i64(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    out[p.out_off + i] = D(bitcast<i32>(input_words[p.in_off + 2u * i]));
}

@compute @workgroup_size(256)
fn from_bf16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let at = p.in_off + i;
    let half = (input_words[at >> 1u] >> ((at & 1u) * 16u)) & 0xffffu;
    out[p.out_off + i] = D(bitcast<f32>(half << 16u));
}

fn bf16_bits(x: f32) -> u32 {
    let bits = bitcast<u32>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return select(0x7fc0u, 0xffc0u, (bits & 0x80000000u) != 0u);
    }
    if (p.truncate != 0u) {
        return bits >> 16u;
    }
    return (bits + 0x7fffu + ((bits >> 16u) & 1u)) >> 16u;
}

@compute @workgroup_size(256)
fn to_bf16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg);
    let lead = p.out_off % 2u;
    if (2u * w >= p.n + lead) {
        return;
    }
    let at = p.out_off / 2u + w;
    var word = out_words[at];
    for (var half = 0u; half < 2u; half++) {
        let slot = 2u * w + half;
        if (slot >= lead && slot - lead < p.n) {
            let shift = 16u * half;
            word = (word & ~(0xffffu << shift)) | (bf16_bits(f32(input[p.in_off + slot - lead])) << shift);
        }
    }
    out_words[at] = word;
}
