// Softmax (OP 0) and LogSoftmax (OP 1) over the last dimension: one workgroup per row, with
// workgroup-memory trees for the row maximum and the sum of exponentials.

override OP: u32 = 0u;

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

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = wid.x + wid.y * nwg.x;
    let valid = row < p.rows;
    let base = select(0u, row, valid) * p.cols;
    var m = bitcast<f32>(0xff800000u);
    if (valid) {
        for (var i = lid; i < p.cols; i += 256u) {
            m = max(m, x[p.in_off + base + i]);
        }
    }
    scratch[lid] = m;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (lid < step) {
            scratch[lid] = max(scratch[lid], scratch[lid + step]);
        }
        workgroupBarrier();
    }
    let row_max = scratch[0];
    workgroupBarrier();
    var s = 0.0;
    if (valid) {
        for (var i = lid; i < p.cols; i += 256u) {
            s += exp(x[p.in_off + base + i] - row_max);
        }
    }
    scratch[lid] = s;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (lid < step) {
            scratch[lid] = scratch[lid] + scratch[lid + step];
        }
        workgroupBarrier();
    }
    let total = scratch[0];
    if (valid) {
        for (var i = lid; i < p.cols; i += 256u) {
            let shifted = x[p.in_off + base + i] - row_max;
            y[p.out_off + base + i] = select(exp(shifted) / total, shifted - log(total), OP == 1u);
        }
    }
}
