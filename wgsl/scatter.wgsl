// Scatters and gathers by index tuples, for UnsortedSegmentSum/Prod/Min/Max, ScatterNd, the
// TensorScatter ops, GatherNd and the resource variables' scatter updates (scatter_index.wgsl
// comes first). One invocation per 32-bit word of the updates (scatters) or of the output
// (gathers), or per 1- or 2-byte update element. Gathers give zeros for tuples outside the
// output, as TF-GPU does. Arithmetic combines land through a compare-exchange loop on the
// element's word, so the order in which duplicate indices combine, and with it a float's
// rounding, varies from run to run; `assign` stores words of any whole-word dtype (with
// duplicates, one wins). 8-byte arithmetic runs in scatter_chain.wgsl.

@group(0) @binding(0) var<storage, read_write> indices: array<u32>;
// The updates of a scatter, the params of a gather.
@group(0) @binding(1) var<storage, read_write> rows: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> p: Params;


@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = word_index(gid, nwg);
    if (e >= p.n) {
        return;
    }
    let row = target_row(e / p.row_len);
    if (row >= OUTSIDE_WINDOW) {
        return;
    }
    let i = p.out_off + row * p.row_len + e % p.row_len;
    let update = rows[p.upd_off + e];
    if (p.combine == COMBINE_ASSIGN) {
        atomicStore(&out[i], update);
        return;
    }
    var old = atomicLoad(&out[i]);
    loop {
        let new_bits = combined_word(old, update);
        if (new_bits == old) {
            break;
        }
        let swap = atomicCompareExchangeWeak(&out[i], old, new_bits);
        if (swap.exchanged) {
            break;
        }
        old = swap.old_value;
    }
}

@compute @workgroup_size(256)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = word_index(gid, nwg);
    if (e >= p.n) {
        return;
    }
    let row = target_row(e / p.row_len);
    if (row == OUTSIDE_WINDOW) {
        return;
    }
    var word = 0u;
    if (row != OUTSIDE_DIMS) {
        word = rows[p.upd_off + row * p.row_len + e % p.row_len];
    }
    atomicStore(&out[p.out_off + e], word);
}

// The 1- or 2-byte element at byte `at` of `rows`.
fn narrow_at(at: u32) -> u32 {
    let mask = (1u << (p.elem_bytes * 8u)) - 1u;
    return (rows[at / 4u] >> ((at % 4u) * 8u)) & mask;
}

// GatherNd of 1- and 2-byte elements: one invocation per word the output overlaps (`out_off`
// counts bytes, as `upd_off` does), which gathers the elements it holds one by one (no two
// invocations share a word); lanes outside the output, or whose tuple another window serves, keep
// their bits. `row_len` counts elements.
@compute @workgroup_size(256)
fn gather_narrow(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = word_index(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let w = p.out_off / 4u + i;
    let mask = (1u << (p.elem_bytes * 8u)) - 1u;
    var word = atomicLoad(&out[w]);
    for (var lane = 0u; lane < 4u; lane += p.elem_bytes) {
        let at = w * 4u + lane;
        if (at < p.out_off) {
            continue;
        }
        let e = (at - p.out_off) / p.elem_bytes;
        if (e >= p.elements) {
            break;
        }
        let row = target_row(e / p.row_len);
        if (row == OUTSIDE_WINDOW) {
            continue;
        }
        var v = 0u;
        if (row != OUTSIDE_DIMS) {
            v = narrow_at(p.upd_off + (row * p.row_len + e % p.row_len) * p.elem_bytes);
        }
        word = (word & ~(mask << (lane * 8u))) | (v << (lane * 8u));
    }
    atomicStore(&out[w], word);
}

// Scatters of 1- and 2-byte elements (`out_off` counts bytes): one invocation per update element,
// which swaps its lane of the output word in, combined with the lane's value (KIND 1 to 3) or in place of it (assign:
// with duplicates, one update wins).
@compute @workgroup_size(256)
fn scatter_narrow(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = word_index(gid, nwg);
    if (e >= p.n) {
        return;
    }
    let row = target_row(e / p.row_len);
    if (row >= OUTSIDE_WINDOW) {
        return;
    }
    let v = narrow_at(p.upd_off + e * p.elem_bytes);
    let at = p.out_off + (row * p.row_len + e % p.row_len) * p.elem_bytes;
    let shift = (at % 4u) * 8u;
    let lanes = ((1u << (p.elem_bytes * 8u)) - 1u) << shift;
    let i = at / 4u;
    let mask = lanes >> shift;
    var old = atomicLoad(&out[i]);
    loop {
        var lane = v;
        if (p.combine != COMBINE_ASSIGN) {
            lane = combined_lane((old >> shift) & mask, v) & mask;
        }
        let new_word = (old & ~lanes) | (lane << shift);
        if (new_word == old) {
            break;
        }
        let swap = atomicCompareExchangeWeak(&out[i], old, new_word);
        if (swap.exchanged) {
            break;
        }
        old = swap.old_value;
    }
}
