// Integer elementwise ops on every width TF stores (int8 to uint64, and bool as an unsigned byte),
// with NumPy broadcasting (`math.wgsl`, `int64.wgsl`, `quot.wgsl` and `broadcast.wgsl` are
// prepended).
//
// Each value is widened to 64 bits (vec2<u32>: low word, high word), sign- or zero-extended as
// SIGNED says, computed there, and stored truncated to OUT_WIDTH bytes: C++'s wrap-around of the
// narrower types is what the truncation leaves. Inputs may start at any byte of a word (offsets
// are in bytes); each invocation writes whole output words, PER elements of them, so no two
// invocations share a word.
//
// OP: binary 0-15; unary 20-29 and 36 (`b` is bound to `a` and unused); comparisons 30-35 (bool
// output). A zero divisor gives a quotient with every bit set and the dividend as remainder
// (TF-CPU refuses it; TF-GPU's is undefined).

override OP: u32 = 0u;
// Bytes per output element: 1, 2, 4 or 8.
override OUT_WIDTH: u32 = 4u;

struct Params {
    n: u32,
    rank: u32,
    a_byte: u32,
    b_byte: u32,
    out_byte: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    shape: array<vec4<u32>, 2>,
    a_strides: array<vec4<u32>, 2>,
    b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

fn load_a(e: u32) -> vec2<u32> {
    let at = p.a_byte + e * WIDTH;
    if (WIDTH == 8u) {
        return vec2<u32>(a[at >> 2u], a[(at >> 2u) + 1u]);
    }
    return extend(a[at >> 2u] >> ((at & 3u) * 8u));
}

fn load_b(e: u32) -> vec2<u32> {
    let at = p.b_byte + e * WIDTH;
    if (WIDTH == 8u) {
        return vec2<u32>(b[at >> 2u], b[(at >> 2u) + 1u]);
    }
    return extend(b[at >> 2u] >> ((at & 3u) * 8u));
}

// TF's shift amount: negative ones shift by 0, those past the width by the width less one.
fn shift_amount(y: vec2<u32>) -> u32 {
    if (negative(y)) {
        return 0u;
    }
    let top = WIDTH * 8u - 1u;
    return select(min(y.x, top), top, y.y != 0u);
}

fn truth(c: bool) -> vec2<u32> {
    return vec2<u32>(select(0u, 1u, c), 0u);
}

// The bits of the float32 nearest to x (ties to even), in the low word.
fn to_f32_bits(x: vec2<u32>) -> vec2<u32> {
    let m = magnitude(x);
    var value: f32;
    if (m.y == 0u && m.x < 0x1000000u) {
        value = f32(m.x);
    } else {
        let top = select(31u - countLeadingZeros(m.x), 63u - countLeadingZeros(m.y), m.y != 0u);
        let shift = top - 23u;
        var mantissa = shift_right_unsigned(m, shift).x;
        let rest = sub64(m, shift_left(vec2<u32>(mantissa, 0u), shift));
        let half = shift_left(vec2<u32>(1u, 0u), shift - 1u);
        if (less_unsigned(half, rest) || (all(rest == half) && (mantissa & 1u) != 0u)) {
            mantissa += 1u;
        }
        value = ldexp(f32(mantissa), i32(shift));
    }
    return vec2<u32>(bitcast<u32>(select(value, -value, negative(x))), 0u);
}

fn apply(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    switch OP {
        case 0u: { return add64(x, y); }
        case 1u: { return sub64(x, y); }
        case 2u: { return mul64(x, y); }
        case 3u: { return truncate_divmod(x, y).xy; }
        case 4u: { return floor_divmod(x, y).xy; }
        case 5u: { return truncate_divmod(x, y).zw; }
        case 6u: { return floor_divmod(x, y).zw; }
        case 7u: { return select(x, y, less(x, y)); }
        case 8u: { return select(x, y, less(y, x)); }
        case 9u: {
            let d = sub64(x, y);
            return mul64(d, d);
        }
        case 10u: { return power(x, y); }
        case 11u: { return x & y; }
        case 12u: { return x | y; }
        case 13u: { return x ^ y; }
        case 14u: { return shift_left(x, shift_amount(y)); }
        case 15u: { return shift_right(x, shift_amount(y)); }
        case 20u: { return magnitude(x); }
        case 21u: { return negate(x); }
        case 22u: { return select(truth(!is_zero(x)), ALL_ONES, negative(x)); }
        case 23u: { return mul64(x, x); }
        case 24u: { return ~x; }
        case 25u: {
            let low = select(x.x & ((1u << ((WIDTH * 8u) & 31u)) - 1u), x.x, WIDTH >= 4u);
            return vec2<u32>(countOneBits(low) + select(0u, countOneBits(x.y), WIDTH == 8u), 0u);
        }
        case 26u: { return vec2<u32>(0u, 0u); }
        case 27u: { return vec2<u32>(1u, 0u); }
        case 28u: { return x; }
        case 29u: { return truth(!is_zero(x)); }
        case 30u: { return truth(all(x == y)); }
        case 31u: { return truth(any(x != y)); }
        case 32u: { return truth(less(x, y)); }
        case 33u: { return truth(!less(y, x)); }
        case 34u: { return truth(less(y, x)); }
        case 35u: { return truth(!less(x, y)); }
        default: { return to_f32_bits(x); }
    }
}

fn result(i: u32) -> vec2<u32> {
    let at = broadcast_offsets(i, p.shape, p.a_strides, p.b_strides, p.b_strides);
    return apply(load_a(at.x), load_b(at.y));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 256u;
    let base = p.out_byte >> 2u;
    if (OUT_WIDTH == 8u) {
        if (t < p.n) {
            let r = result(t);
            out[base + 2u * t] = r.x;
            out[base + 2u * t + 1u] = r.y;
        }
        return;
    }
    let per = 4u / OUT_WIDTH;
    if (t * per >= p.n) {
        return;
    }
    let bits = OUT_WIDTH * 8u;
    let mask = select((1u << (bits & 31u)) - 1u, 0xffffffffu, bits == 32u);
    var word = 0u;
    var written = 0u;
    for (var k = 0u; k < per; k++) {
        let i = t * per + k;
        if (i < p.n) {
            word |= (result(i).x & mask) << ((k * bits) & 31u);
            written |= mask << ((k * bits) & 31u);
        }
    }
    // The last word may hold bytes past the tensor: keep them.
    out[base + t] = (out[base + t] & ~written) | word;
}
