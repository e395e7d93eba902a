// Softmax cross-entropy with its gradient, per row of `features` [rows, cols]:
//   loss[r] = sum_j p[r, j] * (log(sum_k exp(f[r, k] - max)) - (f[r, j] - max))
//   backprop[r, j] = softmax(f)[r, j] - p[r, j]
// where p is one-hot(labels[r]) for `sparse` (int32 labels, or int64 read as their low word) and
// the dense label row for `dense` (`dense_labels`: the same buffer as F). A sparse label outside
// [0, cols) makes the row NaN, as TF's GPU kernel does. `LANES` invocations share a row (rows.wgsl
// is prepended): one for a classifier's short rows of logits.


struct Params {
    rows: u32,
    cols: u32,
    f_off: u32,
    labels_off: u32,
    loss_off: u32,
    back_off: u32,
    // 1 for int32 labels, 2 for int64 (words per label).
    label_words: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> features: array<F>;
@group(0) @binding(1) var<storage, read_write> labels: array<u32>;
@group(0) @binding(2) var<storage, read_write> loss: array<F>;
@group(0) @binding(3) var<storage, read_write> backprop: array<F>;
@group(0) @binding(4) var<storage, read_write> dense_labels: array<F>;
@group(0) @binding(5) var<uniform> p: Params;

// The target probability of column `j` in row `row`.
fn target_of(sparse: bool, row: u32, j: u32) -> F {
    if (sparse) {
        let label = labels[p.labels_off + row * p.label_words];
        return select(F(0.0), F(1.0), label == j);
    }
    return dense_labels[p.labels_off + row * p.cols + j];
}

fn cross_entropy(sparse: bool, wid: vec3<u32>, nwg: vec3<u32>, lid: u32) {
    let at = row_and_lane(wid, nwg, lid);
    let row = at.x;
    let lane = at.y;
    let valid = row < p.rows;
    let base = p.f_off + select(0u, row, valid) * p.cols;
    var m = row_neg_inf();
    if (valid) {
        for (var j = lane; j < p.cols; j += LANES) {
            m = max(m, features[base + j]);
        }
    }
    let row_max = row_reduce(lid, m, OP_MAX);
    // Compensated sums (rows_f32.wgsl: Kahan's), so that long rows do not drift.
    var s = row_sum();
    var dot = row_sum();
    var mass = row_sum();
    if (valid) {
        for (var j = lane; j < p.cols; j += LANES) {
            let shifted = features[base + j] - row_max;
            let t = target_of(sparse, row, j);
            row_sum_add(&s, row_exp(shifted));
            // Sparse: the label's logit alone, as TF reads it (0 * -inf elsewhere would be NaN).
            row_sum_add(&dot, select(t * shifted, select(F(0.0), shifted, t != 0.0), sparse));
            row_sum_add(&mass, t);
        }
    }
    let total = row_reduce(lid, row_sum_value(s), OP_SUM);
    let target_dot = row_reduce(lid, row_sum_value(dot), OP_SUM);
    let target_sum = row_reduce(lid, row_sum_value(mass), OP_SUM);
    // Dense labels need not sum to 1: the loss is sum_j p_j * (log(total) - shifted_j), term by term
    // as TF sums it (an infinite label times a positive term is inf, where lse * sum(p) - dot would
    // be inf - inf).
    let lse = row_log(total);
    var terms = row_sum();
    if (valid && !sparse) {
        for (var j = lane; j < p.cols; j += LANES) {
            row_sum_add(&terms, target_of(false, row, j) * (lse - (features[base + j] - row_max)));
        }
    }
    let dense_loss = row_reduce(lid, row_sum_value(terms), OP_SUM);
    if (!valid) {
        return;
    }
    var out_of_range = false;
    if (sparse) {
        out_of_range = labels[p.labels_off + row * p.label_words] >= p.cols
            || (p.label_words == 2u && labels[p.labels_off + row * 2u + 1u] != 0u);
    }
    let nan = row_nan();
    if (lane == 0u) {
        let value = select(dense_loss, lse * target_sum - target_dot, sparse);
        loss[p.loss_off + row] = select(value, nan, out_of_range);
    }
    let back = p.back_off + row * p.cols;
    for (var j = lane; j < p.cols; j += LANES) {
        let softmax = row_exp(features[base + j] - row_max) / total;
        backprop[back + j] = select(softmax - target_of(sparse, row, j), nan, out_of_range);
    }
}

@compute @workgroup_size(WORKGROUP)
fn sparse(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    cross_entropy(true, wid, nwg, lid);
}

@compute @workgroup_size(WORKGROUP)
fn dense(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    cross_entropy(false, wid, nwg, lid);
}
