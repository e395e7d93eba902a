// Softmax (OP 0) and LogSoftmax (OP 1) over the last dimension, `LANES` invocations a row
// (rows.wgsl is prepended): the row maximum, then the sum of exponentials. `F`: f32 or f64.

override OP: u32 = 0u;

struct Params {
    rows: u32,
    cols: u32,
    in_off: u32,
    out_off: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<F>;
@group(0) @binding(1) var<storage, read_write> y: array<F>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WORKGROUP)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let at = row_and_lane(wid, nwg, lid);
    let row = at.x;
    let lane = at.y;
    let valid = row < p.rows;
    let base = select(0u, row, valid) * p.cols;
    var m = row_neg_inf();
    if (valid) {
        for (var i = lane; i < p.cols; i += LANES) {
            m = max(m, x[p.in_off + base + i]);
        }
    }
    let row_max = row_reduce(lid, m, OP_MAX);
    // The denominator as a compensated sum (rows_f32.wgsl: Kahan's), so that long rows do not drift.
    var s = row_sum();
    if (valid) {
        for (var i = lane; i < p.cols; i += LANES) {
            row_sum_add(&s, row_exp(x[p.in_off + base + i] - row_max));
        }
    }
    let total = row_reduce(lid, row_sum_value(s), OP_SUM);
    if (valid) {
        for (var i = lane; i < p.cols; i += LANES) {
            let shifted = x[p.in_off + base + i] - row_max;
            y[p.out_off + base + i] = select(row_exp(shifted) / total, shifted - row_log(total), OP == 1u);
        }
    }
}
