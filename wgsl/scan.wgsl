// Cumulative sums and products along one axis of a tensor viewed as [outer, len, inner]:
//   scan_blocks: an invocation per (outer, block, inner) runs the block's `block` elements in order
//     (from the end with `reverse`), writing each running value (before its own element with
//     `exclusive`), and the block's total into `totals` [outer, blocks, inner]
//   scan_offsets: combines the offset of the blocks before each element's block (an exclusive
//     scan of the totals, already in `totals`) into the output
// `COMBINE` selects the sum (0, identity 0), the product (1, identity 1) or TF's log-sum-exp
// (2, CumulativeLogsumexp: max + log1p(exp(min - max)), identity -inf; float32 only). `KIND` is
// the element type: float32 (0), a 32-bit integer (1) or a 64-bit one (2, two words, low first);
// integers wrap, as TF's do, so signed and unsigned share the bits. Values travel as word pairs
// (`math.wgsl` and `int64.wgsl` come first).

override COMBINE: u32 = 0u;
override KIND: u32 = 0u;

struct Params {
    n: u32,
    len: u32,
    inner: u32,
    block: u32,
    blocks: u32,
    exclusive: u32,
    reverse: u32,
    // Word offsets of the three views.
    in_off: u32,
    out_off: u32,
    totals_off: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read_write> totals: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn wide() -> bool {
    return KIND == 2u;
}

fn load_input(e: u32) -> vec2<u32> {
    if (wide()) {
        return vec2<u32>(input[p.in_off + 2u * e], input[p.in_off + 2u * e + 1u]);
    }
    return vec2<u32>(input[p.in_off + e], 0u);
}

fn load_out(e: u32) -> vec2<u32> {
    if (wide()) {
        return vec2<u32>(out[p.out_off + 2u * e], out[p.out_off + 2u * e + 1u]);
    }
    return vec2<u32>(out[p.out_off + e], 0u);
}

fn store_out(e: u32, v: vec2<u32>) {
    if (wide()) {
        out[p.out_off + 2u * e] = v.x;
        out[p.out_off + 2u * e + 1u] = v.y;
    } else {
        out[p.out_off + e] = v.x;
    }
}

fn load_total(e: u32) -> vec2<u32> {
    if (wide()) {
        return vec2<u32>(totals[p.totals_off + 2u * e], totals[p.totals_off + 2u * e + 1u]);
    }
    return vec2<u32>(totals[p.totals_off + e], 0u);
}

fn store_total(e: u32, v: vec2<u32>) {
    if (wide()) {
        totals[p.totals_off + 2u * e] = v.x;
        totals[p.totals_off + 2u * e + 1u] = v.y;
    } else {
        totals[p.totals_off + e] = v.x;
    }
}

// TF's LogSumExp(a, b): Eigen's mini/maxi (a NaN b gives a), then max + log1p(exp(min - max)),
// or the max itself where it is -inf.
fn log_sum_exp(a: f32, b: f32) -> f32 {
    let low = select(a, b, b < a);
    let high = select(a, b, a < b);
    if (high < -3.4028234663852886e38) {
        return high;
    }
    return math_log1p(math_exp(low - high)) + high;
}

fn combine_f32(a: f32, b: f32) -> f32 {
    switch COMBINE {
        case 1u: { return a * b; }
        case 2u: { return log_sum_exp(a, b); }
        default: { return a + b; }
    }
}

fn combine(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (KIND == 0u) {
        return vec2<u32>(bitcast<u32>(combine_f32(bitcast<f32>(a.x), bitcast<f32>(b.x))), 0u);
    }
    if (KIND == 1u) {
        return vec2<u32>(select(a.x + b.x, a.x * b.x, COMBINE == 1u), 0u);
    }
    if (COMBINE == 1u) {
        return mul64(a, b);
    }
    return add64(a, b);
}

fn identity() -> vec2<u32> {
    if (KIND == 0u) {
        switch COMBINE {
            case 1u: { return vec2<u32>(bitcast<u32>(1.0), 0u); }
            case 2u: { return vec2<u32>(bitcast<u32>(-math_inf()), 0u); }
            default: { return vec2<u32>(0u, 0u); }
        }
    }
    return vec2<u32>(select(0u, 1u, COMBINE == 1u), 0u);
}

@compute @workgroup_size(256)
fn scan_blocks(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let inner = i % p.inner;
    let b = (i / p.inner) % p.blocks;
    let outer = i / (p.inner * p.blocks);
    let first = b * p.block;
    let count = min(p.block, p.len - first);
    var running = identity();
    for (var k = 0u; k < count; k++) {
        // Blocks and their elements run from the axis's end with `reverse`.
        let at = select(first + k, p.len - 1u - (first + k), p.reverse != 0u);
        let index = (outer * p.len + at) * p.inner + inner;
        let v = load_input(index);
        if (p.exclusive != 0u) {
            store_out(index, running);
            running = combine(running, v);
        } else {
            running = combine(running, v);
            store_out(index, running);
        }
    }
    store_total(i, running);
}

@compute @workgroup_size(256)
fn scan_offsets(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let inner = i % p.inner;
    let at = (i / p.inner) % p.len;
    let outer = i / (p.inner * p.len);
    // The element's position counted from where the scan starts.
    let step = select(at, p.len - 1u - at, p.reverse != 0u);
    let b = step / p.block;
    if (b == 0u) {
        return;
    }
    let offset = load_total((outer * p.blocks + b) * p.inner + inner);
    store_out(i, combine(offset, load_out(i)));
}
