// Shared by the row kernels (prepended to softmax.wgsl and xent.wgsl). `LANES` invocations share a
// row: 256 (a workgroup per row, with workgroup-memory trees) for long rows, 1 (an invocation per
// row looping over it, no barriers) for short ones, where a 256-thread tree would mostly wait and
// llvmpipe's barriers are costly; on the GPU profile 32 (eight rows a workgroup, each read by 32
// neighbouring invocations) for rows of medium length.

// `F` is the row's float type; rows_f32.wgsl or rows_f64.wgsl (prepended) supply its math: RowSum,
// row_sum_add/row_sum_value, row_exp, row_log, row_neg_inf and row_nan.

override LANES: u32 = 256u;
override WORKGROUP: u32 = 256u;

var<workgroup> scratch: array<F, 256>;

// The row and lane of invocation `lid` of workgroup `wid`. LANES divides WORKGROUP; no product
// that could pass 2^32 for a large grid.
fn row_and_lane(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> vec2<u32> {
    return vec2<u32>((wid.x + wid.y * nwg.x) * (WORKGROUP / LANES) + lid / LANES, lid % LANES);
}

// The maximum (OP_MAX) or sum (OP_SUM) of `value` over the LANES invocations of a row: those of
// workgroup slots lid - lid % LANES onwards (a workgroup holds WORKGROUP / LANES rows).
const OP_MAX: u32 = 0u;
const OP_SUM: u32 = 1u;
fn row_reduce(lid: u32, value: F, op: u32) -> F {
    if (LANES == 1u) {
        return value;
    }
    let lane = lid % LANES;
    scratch[lid] = value;
    workgroupBarrier();
    for (var step = LANES / 2u; step > 0u; step >>= 1u) {
        if (lane < step) {
            scratch[lid] = select(scratch[lid] + scratch[lid + step], max(scratch[lid], scratch[lid + step]), op == OP_MAX);
        }
        workgroupBarrier();
    }
    let result = scratch[lid - lane];
    workgroupBarrier();
    return result;
}
