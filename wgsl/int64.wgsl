// 64-bit integer arithmetic on vec2<u32> (low word, high word), shared by integer.wgsl and
// integer_reduce.wgsl (`math.wgsl` comes first): values of WIDTH bytes are sign- or
// zero-extended as SIGNED says, and every operation wraps as C++'s 64-bit integers do.

// Bytes per input element: 1, 2, 4 or 8.
override WIDTH: u32 = 4u;
override SIGNED: bool = true;

const ALL_ONES = vec2<u32>(0xffffffffu, 0xffffffffu);

// `raw`'s low WIDTH bytes as a 64-bit value.
fn extend(raw: u32) -> vec2<u32> {
    var low = raw;
    if (WIDTH < 4u) {
        let shift = (32u - WIDTH * 8u) & 31u;
        low = select((raw << shift) >> shift, bitcast<u32>(bitcast<i32>(raw << shift) >> shift), SIGNED);
    }
    if (WIDTH == 8u) {
        return vec2<u32>(low, 0u);
    }
    return vec2<u32>(low, select(0u, 0xffffffffu, SIGNED && (low & 0x80000000u) != 0u));
}

fn add64(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    let low = x.x + y.x;
    return vec2<u32>(low, x.y + y.y + select(0u, 1u, low < x.x));
}

fn sub64(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(x.x - y.x, x.y - y.y - select(0u, 1u, x.x < y.x));
}

fn mul64(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    let low = math_mul_wide(x.x, y.x);
    return vec2<u32>(low.y, low.x + x.x * y.y + x.y * y.x);
}

fn negate(x: vec2<u32>) -> vec2<u32> {
    return sub64(vec2<u32>(0u, 0u), x);
}

fn is_zero(x: vec2<u32>) -> bool {
    return x.x == 0u && x.y == 0u;
}

fn negative(x: vec2<u32>) -> bool {
    return SIGNED && (x.y & 0x80000000u) != 0u;
}

fn magnitude(x: vec2<u32>) -> vec2<u32> {
    return select(x, negate(x), negative(x));
}

fn less_unsigned(x: vec2<u32>, y: vec2<u32>) -> bool {
    return x.y < y.y || (x.y == y.y && x.x < y.x);
}

fn less(x: vec2<u32>, y: vec2<u32>) -> bool {
    if (x.y != y.y) {
        return select(x.y < y.y, bitcast<i32>(x.y) < bitcast<i32>(y.y), SIGNED);
    }
    return x.x < y.x;
}

fn shift_left(x: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return x;
    }
    if (s >= 32u) {
        return vec2<u32>(0u, x.x << ((s - 32u) & 31u));
    }
    return vec2<u32>(x.x << s, (x.y << s) | (x.x >> (32u - s)));
}

// Logical: zeros shift in.
fn shift_right_unsigned(x: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return x;
    }
    if (s >= 32u) {
        return vec2<u32>(x.y >> ((s - 32u) & 31u), 0u);
    }
    return vec2<u32>((x.x >> s) | (x.y << (32u - s)), x.y >> s);
}

// Arithmetic for negative signed values (~(~x >> s)), logical for the rest.
fn shift_right(x: vec2<u32>, s: u32) -> vec2<u32> {
    return select(shift_right_unsigned(x, s), ~shift_right_unsigned(~x, s), negative(x));
}

// Unsigned quotient (xy) and remainder (zw) of n / d, d nonzero.
fn divmod_unsigned(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
    if (n.y == 0u && d.y == 0u) {
        let q = n.x / d.x;
        return vec4<u32>(q, 0u, n.x - q * d.x, 0u);
    }
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    for (var bit = 63i; bit >= 0i; bit--) {
        let word = u32(bit) / 32u;
        let shift = u32(bit) % 32u;
        r = vec2<u32>((r.x << 1u) | ((n[word] >> shift) & 1u), (r.y << 1u) | (r.x >> 31u));
        if (!less_unsigned(r, d)) {
            r = sub64(r, d);
            q[word] |= 1u << shift;
        }
    }
    return vec4<u32>(q, r);
}

// C++'s `/` and `%` (quotient toward zero, remainder with the dividend's sign).
fn truncate_divmod(x: vec2<u32>, y: vec2<u32>) -> vec4<u32> {
    if (is_zero(y)) {
        return vec4<u32>(ALL_ONES, x);
    }
    let qr = divmod_unsigned(magnitude(x), magnitude(y));
    let q = select(qr.xy, negate(qr.xy), negative(x) != negative(y));
    return vec4<u32>(q, select(qr.zw, negate(qr.zw), negative(x)));
}

// Python's `//` and `%` (quotient toward negative infinity, remainder with the divisor's sign).
fn floor_divmod(x: vec2<u32>, y: vec2<u32>) -> vec4<u32> {
    var qr = truncate_divmod(x, y);
    if (!is_zero(y) && !is_zero(qr.zw) && negative(qr.zw) != negative(y)) {
        qr = vec4<u32>(sub64(qr.xy, vec2<u32>(1u, 0u)), add64(qr.zw, y));
    }
    return qr;
}

// x^y by squaring, wrapping. TF-CPU refuses negative exponents; here they give 1/x^-y truncated
// toward zero (0 for |x| > 1, and for x = 0).
fn power(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    if (negative(y)) {
        if (x.x == 1u && x.y == 0u) {
            return x;
        }
        if (x.x == 0xffffffffu && x.y == 0xffffffffu) {
            return select(vec2<u32>(1u, 0u), x, (y.x & 1u) != 0u);
        }
        return vec2<u32>(0u, 0u);
    }
    var result = vec2<u32>(1u, 0u);
    var base = x;
    var e = y;
    for (var bit = 0u; bit < 64u && !is_zero(e); bit++) {
        if ((e.x & 1u) != 0u) {
            result = mul64(result, base);
        }
        base = mul64(base, base);
        e = vec2<u32>((e.x >> 1u) | (e.y << 31u), e.y >> 1u);
    }
    return result;
}

