// Index tuples and combines shared by scatter.wgsl and scatter_chain.wgsl (`math.wgsl` and
// `int64.wgsl` come first; each file declares the bindings `indices`, `rows`, `out` and `p`).
// Row r of the updates goes to the output row its index tuple names (`depth` indices, int32 or
// int64, into the leading output dims); rows whose indices fall outside the output are dropped.
// `KIND` is the element type the arithmetic combines work in: float32 0, 1 for the integers of
// int64.wgsl's WIDTH bytes and SIGNED (every width, in 64 bits), float16 2 and bfloat16 3 (lanes,
// combined in float32); integers wrap as C++'s do.

override KIND: u32 = 0u;

const COMBINE_ADD: u32 = 0u;
const COMBINE_SUB: u32 = 1u;
const COMBINE_MUL: u32 = 2u;
const COMBINE_DIV: u32 = 3u;
const COMBINE_MIN: u32 = 4u;
const COMBINE_MAX: u32 = 5u;
const COMBINE_ASSIGN: u32 = 6u;

struct Params {
    // Words to process, the updates' (scatters) or the output's (gathers); elements for the
    // narrow scatters and the chains (tuples for chain_link).
    n: u32,
    // Words (narrow entries and chains: elements) per row; a row is what one index tuple names.
    row_len: u32,
    depth: u32,
    // 1 for int32 indices, 2 for int64 (little-endian word pairs).
    index_words: u32,
    idx_off: u32,
    upd_off: u32,
    out_off: u32,
    combine: u32,
    // The leading dims the index tuples address, and their strides in rows.
    dims: array<vec4<u32>, 2>,
    row_strides: array<vec4<u32>, 2>,
    // Batched scatters (DenseBincount of a matrix): tuple t addresses batch t / batch_tuples, whose
    // rows start batch_rows after the previous batch's; 0 for one batch.
    batch_tuples: u32,
    batch_rows: u32,
    // gather_narrow, scatter_narrow: bytes per element (1 or 2) and the output's elements.
    elem_bytes: u32,
    elements: u32,
    // scatter_chain.wgsl: the output rows (chain heads, then each tuple's link, in `links`), the
    // first tuple of this batch, and the links' word offset.
    heads: u32,
    tuple_base: u32,
    links_off: u32,
    // A tensor larger than a binding is served in windows: this launch sees rows `row_base` to
    // `row_base + row_count` of the tensor the tuples index (a scatter's output, a gather's params),
    // and its tuples start at tuple `first_tuple` of the whole (for the batches).
    row_base: u32,
    row_count: u32,
    first_tuple: u32,
    pad0: u32,
    pad1: u32,
}

// What `target_row` gives a tuple outside the dims, and one inside them but outside this launch's
// window of rows (which another launch serves).
const OUTSIDE_DIMS: u32 = 0xffffffffu;
const OUTSIDE_WINDOW: u32 = 0xfffffffeu;

fn at(v: array<vec4<u32>, 2>, k: u32) -> u32 {
    return v[k / 4u][k % 4u];
}

// The row index tuple `row` names, counted from the window's first row; OUTSIDE_DIMS when the
// tuple falls outside the dims, OUTSIDE_WINDOW when outside the window.
fn target_row(row: u32) -> u32 {
    var found = 0u;
    for (var k = 0u; k < p.depth; k++) {
        let w = p.idx_off + (row * p.depth + k) * p.index_words;
        let lo = indices[w];
        // Negative or too large: an int32 with its sign bit, an int64 with any high bit.
        var outside = lo >= at(p.dims, k);
        if (p.index_words == 2u) {
            outside = outside || indices[w + 1u] != 0u;
        }
        if (outside) {
            return OUTSIDE_DIMS;
        }
        found += lo * at(p.row_strides, k);
    }
    if (p.batch_tuples != 0u) {
        found += (p.first_tuple + row) / p.batch_tuples * p.batch_rows;
    }
    // (Rows before the window wrap around to large values.)
    let local = found - p.row_base;
    return select(OUTSIDE_WINDOW, local, local < p.row_count);
}

fn combined(old: f32, v: f32) -> f32 {
    switch p.combine {
        case COMBINE_SUB: { return old - v; }
        case COMBINE_MUL: { return old * v; }
        case COMBINE_DIV: { return old / v; }
        // TF-CPU's cwiseMin/cwiseMax(old, v): the update only where it compares smaller/larger.
        case COMBINE_MIN: { return select(old, v, v < old); }
        case COMBINE_MAX: { return select(old, v, old < v); }
        default: { return old + v; }
    }
}

// The combine of 64-bit values (vec2<u32>, int64.wgsl's SIGNED): a zero divisor gives a quotient
// with every bit set, as integer.wgsl's Div does.
fn combined_int(old: vec2<u32>, v: vec2<u32>) -> vec2<u32> {
    switch p.combine {
        case COMBINE_SUB: { return sub64(old, v); }
        case COMBINE_MUL: { return mul64(old, v); }
        case COMBINE_DIV: { return truncate_divmod(old, v).xy; }
        case COMBINE_MIN: { return select(old, v, less(v, old)); }
        case COMBINE_MAX: { return select(old, v, less(old, v)); }
        default: { return add64(old, v); }
    }
}

// The combine of an element's word `old` with the update's `v`, in the element's type (int32 and
// uint32 in 64 bits, sign- or zero-extended, like every integer width).
fn combined_word(old: u32, v: u32) -> u32 {
    if (KIND == 1u) {
        return combined_int(extend(old), extend(v)).x;
    }
    return bitcast<u32>(combined(bitcast<f32>(old), bitcast<f32>(v)));
}

// float32 to binary16 bits, rounded to nearest even (NaN stays NaN; from 65520 up, infinity).
fn f16_bits(x: f32) -> u32 {
    let bits = bitcast<u32>(x);
    let sign = (bits >> 16u) & 0x8000u;
    let magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {
        return sign | 0x7e00u;
    }
    if (magnitude >= 0x477ff000u) {
        return sign | 0x7c00u;
    }
    if (magnitude >= 0x38800000u) {
        // Normal: rebias the exponent (127 - 15), then round away the low 13 mantissa bits.
        let rebiased = magnitude - 0x38000000u;
        return sign | ((rebiased + 0xfffu + ((rebiased >> 13u) & 1u)) >> 13u);
    }
    // Subnormal (or zero): units of 2^-24, exact in float32; round() ties to even.
    return sign | u32(round(bitcast<f32>(magnitude) * 16777216.0));
}

// float32 to bfloat16 bits, rounded to nearest even as Eigen's bfloat16 rounds.
fn bf16_bits(x: f32) -> u32 {
    let bits = bitcast<u32>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return select(0x7fc0u, 0xffc0u, (bits & 0x80000000u) != 0u);
    }
    return (bits + 0x7fffu + ((bits >> 16u) & 1u)) >> 16u;
}

// The combine of a 1- or 2-byte element `old` with the update's `v` (raw bits, in the low lane):
// float16 (KIND 2) and bfloat16 (KIND 3) in float32, rounded back once; integers in 64 bits.
fn combined_lane(old: u32, v: u32) -> u32 {
    if (KIND == 2u) {
        return f16_bits(combined(unpack2x16float(old).x, unpack2x16float(v).x));
    }
    if (KIND == 3u) {
        return bf16_bits(combined(bitcast<f32>(old << 16u), bitcast<f32>(v << 16u)));
    }
    return combined_int(extend(old), extend(v)).x;
}

fn word_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}
