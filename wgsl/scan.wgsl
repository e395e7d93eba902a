// Cumulative sums and products along one axis of a tensor viewed as [outer, len, inner]:
//   scan_blocks: an invocation per (outer, block, inner) runs the block's `block` elements in order
//     (from the end with `reverse`), writing each running value (before its own element with
//     `exclusive`), and the block's total into `totals` [outer, blocks, inner]
//   scan_offsets: combines the offset of the blocks before each element's block (an exclusive
//     scan of the totals, already in `totals`) into the output
// `COMBINE` selects the sum (0, identity 0), the product (1, identity 1) or TF's log-sum-exp
// (2, CumulativeLogsumexp: max + log1p(exp(min - max)), identity -inf; floats only). The values
// file that comes first declares the bindings and the values: `V`, `load_input`, `load_out`,
// `store_out`, `load_total`, `store_total`, `combine` and `identity` (`scan_words.wgsl` for float32
// and integers, `scan_f64.wgsl` for float64).

override COMBINE: u32 = 0u;

struct Params {
    n: u32,
    len: u32,
    inner: u32,
    block: u32,
    blocks: u32,
    exclusive: u32,
    reverse: u32,
    // Offsets of the three views, in the values file's units.
    in_off: u32,
    out_off: u32,
    totals_off: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(3) var<uniform> p: Params;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
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
    var running: V = identity();
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

// Every element combined with its (outer, inner) column's carry in `totals` ([outer, inner]): the
// scan of the windows of a long scan before this one.
@compute @workgroup_size(256)
fn scan_carry(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let inner = i % p.inner;
    let outer = i / (p.inner * p.len);
    store_out(i, combine(load_total(outer * p.inner + inner), load_out(i)));
}
