// Scatter-add (float32) for UnsortedSegmentSum, ScatterNd and TensorScatterAdd: one invocation per
// update element. Update row r goes to the output row its index tuple names (`depth` indices,
// int32 or int64, into the leading output dims); rows whose indices fall outside the output are
// dropped, as TF-GPU drops them. Sums land through a compare-exchange loop on the float's bits, so
// the order of additions, and with it the rounding, varies from run to run.

struct Params {
    n: u32,
    row_len: u32,
    depth: u32,
    // 1 for int32 indices, 2 for int64 (little-endian word pairs).
    index_words: u32,
    idx_off: u32,
    upd_off: u32,
    out_off: u32,
    _pad: u32,
    // The leading output dims the index tuples address, and their strides in rows.
    dims: array<vec4<u32>, 2>,
    row_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> indices: array<u32>;
@group(0) @binding(1) var<storage, read_write> updates: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> p: Params;

fn at(v: array<vec4<u32>, 2>, k: u32) -> u32 {
    return v[k / 4u][k % 4u];
}

fn add_f32(i: u32, v: f32) {
    var old = atomicLoad(&out[i]);
    loop {
        let swap = atomicCompareExchangeWeak(&out[i], old, bitcast<u32>(bitcast<f32>(old) + v));
        if (swap.exchanged) {
            break;
        }
        old = swap.old_value;
    }
}

@compute @workgroup_size(256)
fn scatter_add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 256u;
    if (e >= p.n) {
        return;
    }
    let row = e / p.row_len;
    var target_row = 0u;
    for (var k = 0u; k < p.depth; k++) {
        let w = p.idx_off + (row * p.depth + k) * p.index_words;
        let lo = indices[w];
        // Negative or too large: an int32 with its sign bit, an int64 with any high bit.
        var outside = lo >= at(p.dims, k);
        if (p.index_words == 2u) {
            outside = outside || indices[w + 1u] != 0u;
        }
        if (outside) {
            return;
        }
        target_row += lo * at(p.row_strides, k);
    }
    add_f32(p.out_off + target_row * p.row_len + e % p.row_len, updates[p.upd_off + e]);
}
