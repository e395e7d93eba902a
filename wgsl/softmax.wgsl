// Softmax (OP 0) and LogSoftmax (OP 1) over the last dimension. `LANES` invocations share a row:
// 256 (a workgroup per row, with workgroup-memory trees for the row maximum and the sum of
// exponentials) for long rows, 1 (an invocation per row looping over it, no barriers) for short
// ones, where a 256-thread tree would mostly wait and llvmpipe's barriers are costly.

override OP: u32 = 0u;
override LANES: u32 = 256u;
override WORKGROUP: u32 = 256u;

struct Params {
    rows: u32,
    cols: u32,
    in_off: u32,
    out_off: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> scratch: array<f32, 256>;

// The maximum (OP_MAX) or sum of `value` over the LANES invocations of a row.
const OP_MAX: u32 = 0u;
const OP_SUM: u32 = 1u;
fn row_reduce(lane: u32, value: f32, op: u32) -> f32 {
    if (LANES == 1u) {
        return value;
    }
    scratch[lane] = value;
    workgroupBarrier();
    for (var step = LANES / 2u; step > 0u; step >>= 1u) {
        if (lane < step) {
            scratch[lane] = select(scratch[lane] + scratch[lane + step], max(scratch[lane], scratch[lane + step]), op == OP_MAX);
        }
        workgroupBarrier();
    }
    let result = scratch[0];
    workgroupBarrier();
    return result;
}

@compute @workgroup_size(WORKGROUP)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // LANES divides WORKGROUP; no product that could pass 2^32 for a large grid.
    let row = (wid.x + wid.y * nwg.x) * (WORKGROUP / LANES) + lid / LANES;
    let lane = lid % LANES;
    let valid = row < p.rows;
    let base = select(0u, row, valid) * p.cols;
    var m = bitcast<f32>(0xff800000u);
    if (valid) {
        for (var i = lane; i < p.cols; i += LANES) {
            m = max(m, x[p.in_off + base + i]);
        }
    }
    let row_max = row_reduce(lane, m, OP_MAX);
    var s = 0.0;
    if (valid) {
        for (var i = lane; i < p.cols; i += LANES) {
            s += exp(x[p.in_off + base + i] - row_max);
        }
    }
    let total = row_reduce(lane, s, OP_SUM);
    if (valid) {
        for (var i = lane; i < p.cols; i += LANES) {
            let shifted = x[p.in_off + base + i] - row_max;
            y[p.out_off + base + i] = select(exp(shifted) / total, shifted - log(total), OP == 1u);
        }
    }
}
