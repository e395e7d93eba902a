// Cumulative sums and products along one axis of a float32 tensor viewed as [outer, len, inner]:
//   scan_blocks: an invocation per (outer, block, inner) runs the block's `block` elements in order
//     (from the end with `reverse`), writing each running value (before its own element with
//     `exclusive`), and the block's total into `totals` [outer, blocks, inner]
//   scan_offsets: combines the offset of the blocks before each element's block (an exclusive
//     scan of the totals, already in `totals`) into the output
// `COMBINE` selects the sum (0, identity 0), the product (1, identity 1) or TF's log-sum-exp
// (2, CumulativeLogsumexp: max + log1p(exp(min - max)), identity -inf; `math.wgsl` comes first).

override COMBINE: u32 = 0u;

struct Params {
    n: u32,
    len: u32,
    inner: u32,
    block: u32,
    blocks: u32,
    exclusive: u32,
    reverse: u32,
    in_off: u32,
    out_off: u32,
    totals_off: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> totals: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
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

fn combine(a: f32, b: f32) -> f32 {
    switch COMBINE {
        case 1u: { return a * b; }
        case 2u: { return log_sum_exp(a, b); }
        default: { return a + b; }
    }
}

fn identity() -> f32 {
    switch COMBINE {
        case 1u: { return 1.0; }
        case 2u: { return -math_inf(); }
        default: { return 0.0; }
    }
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
        let v = input[p.in_off + index];
        if (p.exclusive != 0u) {
            out[p.out_off + index] = running;
            running = combine(running, v);
        } else {
            running = combine(running, v);
            out[p.out_off + index] = running;
        }
    }
    totals[p.totals_off + i] = running;
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
    let offset = totals[p.totals_off + (outer * p.blocks + b) * p.inner + inner];
    out[p.out_off + i] = combine(offset, out[p.out_off + i]);
}
