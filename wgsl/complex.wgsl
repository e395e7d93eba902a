// Complex numbers, stored as (real, imaginary) pairs of PART_WORDS words each (1: complex64, 2:
// complex128), with NumPy broadcasting (`math.wgsl`, `quot.wgsl` and `broadcast.wgsl` are
// prepended). Each invocation writes one output element. Offsets are in words.
//   Moves, either width: Real (OP 0), Imag (1), Conj (2), Complex(a, b) (3), Neg (4), and
//   Complex(a, 0) (5, Cast from the part's type).
//   complex64 arithmetic in f32: Add (10), Sub (11), Mul (12), Div (13, scaled as Eigen's packet
//   division), ComplexAbs (20, hypot), Angle (21, atan2(imag, real)).

override OP: u32 = 0u;
override PART_WORDS: u32 = 1u;

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

@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

const SIGN = 0x80000000u;

// The words of input element `e`'s part `part` (0 real, 1 imaginary), word `w`.
fn word_of_a(e: u32, part: u32, w: u32) -> u32 {
    return a[p.a_off + (2u * e + part) * PART_WORDS + w];
}

fn complex_a(e: u32) -> vec2<f32> {
    return vec2<f32>(bitcast<f32>(a[p.a_off + 2u * e]), bitcast<f32>(a[p.a_off + 2u * e + 1u]));
}

fn complex_b(e: u32) -> vec2<f32> {
    return vec2<f32>(bitcast<f32>(b[p.b_off + 2u * e]), bitcast<f32>(b[p.b_off + 2u * e + 1u]));
}

// x / y as Eigen's packet division (TF-CPU's): y scaled by its larger part's magnitude m, then
// x * conj(y / m) / |y / m|^2 / m.
fn divide(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
    let m = max(abs(y.x), abs(y.y));
    let c = y.x / m;
    let d = y.y / m;
    let denom = c * c + d * d;
    return vec2<f32>((x.x * c + x.y * d) / denom / m, (x.y * c - x.x * d) / denom / m);
}

fn is_inf(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) == 0x7f800000u;
}

// |x + iy| without overflow: inf wherever a part is infinite (NaN or not), as C's hypot.
fn hypot(x: f32, y: f32) -> f32 {
    let ax = abs(x);
    let ay = abs(y);
    if (is_inf(ax) || is_inf(ay)) {
        return bitcast<f32>(0x7f800000u);
    }
    if (math_is_nan(ax) || math_is_nan(ay)) {
        return math_nan();
    }
    let big = max(ax, ay);
    if (big == 0.0) {
        return 0.0;
    }
    let r = min(ax, ay) / big;
    return big * math_sqrt(1.0 + r * r);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    let at = broadcast_offsets(i, p.shape, p.a_strides, p.b_strides, p.b_strides);
    let part_out = p.out_off + i * PART_WORDS;
    let pair_out = p.out_off + 2u * i * PART_WORDS;
    switch OP {
        case 0u, 1u: {
            for (var w = 0u; w < PART_WORDS; w++) {
                out[part_out + w] = word_of_a(at.x, OP, w);
            }
        }
        case 2u, 4u: {
            for (var part = 0u; part < 2u; part++) {
                for (var w = 0u; w < PART_WORDS; w++) {
                    let flip = (part == 1u || OP == 4u) && w == PART_WORDS - 1u;
                    out[pair_out + part * PART_WORDS + w] = word_of_a(at.x, part, w) ^ select(0u, SIGN, flip);
                }
            }
        }
        case 3u, 5u: {
            for (var w = 0u; w < PART_WORDS; w++) {
                out[pair_out + w] = a[p.a_off + at.x * PART_WORDS + w];
                out[pair_out + PART_WORDS + w] = select(b[p.b_off + at.y * PART_WORDS + w], 0u, OP == 5u);
            }
        }
        case 20u, 21u: {
            let x = complex_a(at.x);
            out[part_out] = bitcast<u32>(select(hypot(x.x, x.y), math_atan2(x.y, x.x), OP == 21u));
        }
        default: {
            let x = complex_a(at.x);
            let y = complex_b(at.y);
            var r: vec2<f32>;
            switch OP {
                case 11u: { r = x - y; }
                case 12u: { r = vec2<f32>(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x); }
                case 13u: { r = divide(x, y); }
                default: { r = x + y; }
            }
            out[pair_out] = bitcast<u32>(r.x);
            out[pair_out + 1u] = bitcast<u32>(r.y);
        }
    }
}
