// Diagonals of the innermost two dimensions [..., rows, cols], elements moved as `unit` whole
// words (MatrixDiag/MatrixDiagPart/MatrixSetDiag in every generation, Diag, DiagPart). Diagonal d
// (= column - row) from `lo` to `hi` is row `hi - d` of the diagonals tensor [..., num_diags,
// diag_len]; a diagonal shorter than `diag_len` sits at its row's start or end as `align` says
// (TF's content offset). One invocation per output element:
//   mode 0 (MatrixDiag): out [..., rows, cols] from `a` (the diagonals), `b[0]` (padding) elsewhere
//   mode 1 (MatrixDiagPart): out [..., num_diags, diag_len] from `a` (the matrices), padding where a
//     diagonal's row has no element
//   mode 2 (MatrixSetDiag): out [..., rows, cols] from `a` (the diagonals) on them, `b` (the
//     matrices) elsewhere
// Matrices past a binding go in windows of their rows (counted over all matrices), from row
// `first_row` on: in modes 0 and 2 the output (and in mode 2 `b`) are the window's rows; in mode 1
// `a` is, and an output whose element lies in another window is left as it is (padding is written
// by every window).

struct Params {
    n: u32,
    unit: u32,
    mode: u32,
    rows: u32,
    cols: u32,
    num_diags: u32,
    diag_len: u32,
    lo: i32,
    hi: i32,
    super_left: u32,
    sub_left: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    first_row: u32,
    window_rows: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

// The length of diagonal d in a rows x cols matrix.
fn length_of(d: i32) -> i32 {
    return min(i32(p.rows) + min(0, d), i32(p.cols) - max(0, d));
}

// Where diagonal d's elements start in its row of the diagonals tensor.
fn content_offset(d: i32) -> i32 {
    let left = (d >= 0 && p.super_left != 0u) || (d <= 0 && p.sub_left != 0u);
    return select(i32(p.diag_len) - length_of(d), 0, left);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = gid.x + gid.y * nwg.x * 256u;
    if (o >= p.n) {
        return;
    }
    var from_a = false;
    var src = 0u;
    if (p.mode == 1u) {
        let n = o % p.diag_len;
        let r = (o / p.diag_len) % p.num_diags;
        let batch = o / (p.diag_len * p.num_diags);
        let d = p.hi - i32(r);
        let m = i32(n) - content_offset(d);
        if (m >= 0 && m < length_of(d)) {
            // The element's row among all the matrices' rows.
            let row = batch * p.rows + u32(m + max(0, -d));
            if (row < p.first_row || row - p.first_row >= p.window_rows) {
                return;
            }
            from_a = true;
            src = (row - p.first_row) * p.cols + u32(m + max(0, d));
        }
    } else {
        // The output's row among all the matrices' rows (element indices could pass 2^32).
        let row = p.first_row + o / p.cols;
        let j = o % p.cols;
        let i = row % p.rows;
        let batch = row / p.rows;
        let d = i32(j) - i32(i);
        if (d >= p.lo && d <= p.hi) {
            from_a = true;
            let along = select(j, i, d >= 0);
            src = (batch * p.num_diags + u32(p.hi - d)) * p.diag_len + u32(i32(along) + content_offset(d));
        } else if (p.mode == 2u) {
            src = o;
        }
    }
    for (var w = 0u; w < p.unit; w++) {
        if (from_a) {
            out[p.out_off + o * p.unit + w] = a[p.a_off + src * p.unit + w];
        } else {
            out[p.out_off + o * p.unit + w] = b[p.b_off + src * p.unit + w];
        }
    }
}
