// Scatters of 8-byte elements (scatter_index.wgsl, then the element type's file, come first:
// scatter_chain_int.wgsl or scatter_chain_f64.wgsl, which give the alias `V` and `chain_combine`).
// No atomic holds 64 bits, so the updates that land on one output row are chained instead:
// `chain_reset` empties the lists of the rows a batch lands on, `chain_link` pushes each tuple onto
// its target row's list (one atomic exchange), then
// `chain_apply` lets the update that ended up at a list's head walk the list and combine every
// update into the row, one invocation per column, the element's only writer. Integer combines do
// not depend on their order; float64 ones round in the chain's order, which varies from run to
// run as the atomics' order does. An assignment writes the head's row only, so that of repeated
// tuples one row wins whole, never a mix of two rows' words. Each launch takes the tuples from
// `tuple_base` on, as many as `n` covers: on adapters whose loops are capped (llvmpipe), the Rust
// side bounds a chain by launching the tuples in batches. Offsets count elements.

@group(0) @binding(0) var<storage, read_write> indices: array<u32>;
@group(0) @binding(1) var<storage, read_write> rows: array<V>;
@group(0) @binding(2) var<storage, read_write> out: array<V>;
// Per output row, 1 + the tuple at the head of its chain (0: none), then per tuple 1 + the next
// tuple in its row's chain (0: the end).
@group(0) @binding(3) var<storage, read_write> links: array<atomic<u32>>;
@group(0) @binding(4) var<uniform> p: Params;

// One invocation per tuple of the batch (`n` tuples): its row's list emptied (every tuple of the
// row writes the same 0) before `chain_link` runs.
@compute @workgroup_size(256)
fn chain_reset(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = word_index(gid, nwg);
    if (t >= p.n) {
        return;
    }
    let row = target_row(p.tuple_base + t);
    if (row < OUTSIDE_WINDOW) {
        atomicStore(&links[p.links_off + row], 0u);
    }
}

// One invocation per tuple of the batch (`n` tuples).
@compute @workgroup_size(256)
fn chain_link(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = word_index(gid, nwg);
    if (t >= p.n) {
        return;
    }
    let tuple = p.tuple_base + t;
    let row = target_row(tuple);
    if (row >= OUTSIDE_WINDOW) {
        return;
    }
    let previous = atomicExchange(&links[p.links_off + row], tuple + 1u);
    atomicStore(&links[p.links_off + p.heads + tuple], previous);
}

// One invocation per element of the batch's updates (`n` elements, `row_len` per tuple).
@compute @workgroup_size(256)
fn chain_apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = word_index(gid, nwg);
    if (e >= p.n) {
        return;
    }
    let tuple = p.tuple_base + e / p.row_len;
    let column = e % p.row_len;
    let row = target_row(tuple);
    if (row >= OUTSIDE_WINDOW || atomicLoad(&links[p.links_off + row]) != tuple + 1u) {
        return;
    }
    let o = p.out_off + row * p.row_len + column;
    if (p.combine == COMBINE_ASSIGN) {
        // Assignments where tuples repeat: the head's row replaces the output row whole.
        out[o] = rows[p.upd_off + tuple * p.row_len + column];
        return;
    }
    var value = out[o];
    var link = tuple + 1u;
    loop {
        value = chain_combine(value, rows[p.upd_off + (link - 1u) * p.row_len + column]);
        link = atomicLoad(&links[p.links_off + p.heads + link - 1u]);
        if (link == 0u) {
            break;
        }
    }
    out[o] = value;
}
