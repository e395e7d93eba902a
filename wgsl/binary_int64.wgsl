// int64 AddV2 (OP 0), Sub (1), Mul (2), FloorMod (3) and FloorDiv (4) with NumPy broadcasting
// (`math.wgsl` and `broadcast.wgsl` are prepended). WGSL has no 64-bit integers: each element is a
// vec2<u32> (low word, high word). Sums and products wrap as TF-CPU's do; division is bit-serial
// long division on magnitudes, with the signs applied after. (A zero divisor is undefined, as on
// TF-GPU.)

override OP: u32 = 0u;

struct Params {
    n: u32,
    rank: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    shape: array<vec4<u32>, 2>,
    a_strides: array<vec4<u32>, 2>,
    b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> a: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> b: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2<u32>>;
@group(0) @binding(3) var<uniform> p: Params;

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

fn negative(x: vec2<u32>) -> bool {
    return (x.y & 0x80000000u) != 0u;
}

fn negate(x: vec2<u32>) -> vec2<u32> {
    return sub64(vec2<u32>(0u, 0u), x);
}

fn at_least(x: vec2<u32>, y: vec2<u32>) -> bool {
    return x.y > y.y || (x.y == y.y && x.x >= y.x);
}

// Unsigned quotient (xy) and remainder (zw) of n / d.
fn divmod_unsigned(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    for (var bit = 63i; bit >= 0i; bit--) {
        let word = u32(bit) / 32u;
        let shift = u32(bit) % 32u;
        r = vec2<u32>((r.x << 1u) | ((n[word] >> shift) & 1u), (r.y << 1u) | (r.x >> 31u));
        if (at_least(r, d)) {
            r = sub64(r, d);
            q[word] |= 1u << shift;
        }
    }
    return vec4<u32>(q, r);
}

// Floor division (quotient xy) and modulo (remainder zw), rounding toward negative infinity.
fn floor_divmod(x: vec2<u32>, y: vec2<u32>) -> vec4<u32> {
    let x_neg = negative(x);
    let y_neg = negative(y);
    let qr = divmod_unsigned(select(x, negate(x), x_neg), select(y, negate(y), y_neg));
    var q = select(qr.xy, negate(qr.xy), x_neg != y_neg);
    var r = select(qr.zw, negate(qr.zw), x_neg);
    if ((r.x != 0u || r.y != 0u) && x_neg != y_neg) {
        q = sub64(q, vec2<u32>(1u, 0u));
        r = add64(r, y);
    }
    return vec4<u32>(q, r);
}

fn apply64(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    switch OP {
        case 1u: { return sub64(x, y); }
        case 2u: { return mul64(x, y); }
        case 3u: { return floor_divmod(x, y).zw; }
        case 4u: { return floor_divmod(x, y).xy; }
        default: { return add64(x, y); }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    let at = broadcast_offsets(i, p.shape, p.a_strides, p.b_strides, p.b_strides);
    let x = a[p.a_off + at.x];
    let y = b[p.b_off + at.y];
    out[p.out_off + i] = apply64(x, y);
}
