// The parameters and index math of the reductions, shared by reduce.wgsl and reduce_f64.wgsl
// (`quot.wgsl` comes first).

override OP: u32 = 0u;
// The ranks the pipeline handles (1, 2, 4 or 8; the host pads shapes with 1s): constants, so that
// `offset_of` runs only their steps (llvmpipe runs both sides of a branch on `p.kept_rank`).
override KEPT_RANK: u32 = 8u;
override RED_RANK: u32 = 8u;

struct Params {
    kept_rank: u32,
    red_rank: u32,
    // Reduced elements per output.
    count: u32,
    in_off: u32,
    // Output offset in words (reduce_f32, arg_f32) or bytes (reduce_bool).
    out_off: u32,
    outputs: u32,
    out_words: u32,
    // arg_f32/arg_f64: the whole axis's index of the bound window's first reduced row.
    index_base: u32,
    kept_shape: array<vec4<u32>, 2>,
    kept_stride: array<vec4<u32>, 2>,
    red_shape: array<vec4<u32>, 2>,
    red_stride: array<vec4<u32>, 2>,
    // reduce_f32 and reduce_columns: the reduced elements (rows) this launch combines, how many
    // each slice takes, the slices per output, and 1 where it writes raw partial results (one per
    // slice) rather than finished ones. `count` stays the divisor of Mean.
    rows: u32,
    rows_per_slice: u32,
    slices: u32,
    partial: u32,
}

fn dim_at(v: array<vec4<u32>, 2>, k: u32) -> u32 {
    return v[k / 4u][k % 4u];
}

fn offset_step(rem: ptr<function, u32>, at: ptr<function, u32>, size: u32, stride: u32) {
    let split = quot_rem(*rem, size);
    *at += split.y * stride;
    *rem = split.x;
}

// Dimensions innermost first, each at a constant index: llvmpipe keeps an array indexed by a
// variable in memory, per lane (see broadcast.wgsl).
fn offset_of(index: u32, rank: u32, shape: array<vec4<u32>, 2>, stride: array<vec4<u32>, 2>) -> u32 {
    var rem = index;
    var at = 0u;
    if (rank > 7u) { offset_step(&rem, &at, shape[1].w, stride[1].w); }
    if (rank > 6u) { offset_step(&rem, &at, shape[1].z, stride[1].z); }
    if (rank > 5u) { offset_step(&rem, &at, shape[1].y, stride[1].y); }
    if (rank > 4u) { offset_step(&rem, &at, shape[1].x, stride[1].x); }
    if (rank > 3u) { offset_step(&rem, &at, shape[0].w, stride[0].w); }
    if (rank > 2u) { offset_step(&rem, &at, shape[0].z, stride[0].z); }
    if (rank > 1u) { offset_step(&rem, &at, shape[0].y, stride[0].y); }
    if (rank > 0u) { offset_step(&rem, &at, shape[0].x, stride[0].x); }
    return at;
}

fn output_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}
