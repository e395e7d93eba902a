// Passes over the rows of a window's taps (or of the windows covering an element), for loops that
// would pass llvmpipe's cap on one invocation's iterations and that the host splits
// (`conv::passes_of_rows`): a pass runs `count` rows from `first`, counted from each invocation's own
// first row, so that every invocation of a SIMD group loops over at most `count` rows of at most
// the widest row's taps (llvmpipe counts the group's iterations); a count of 0 runs them all. Rows
// wider than the cap run one per pass, in ranges of their taps counted the same way. The shaders'
// Params carry pass_first, pass_rows, pass_first_column and pass_columns.

// The length of a range [first, end).
fn span(r: vec2<u32>) -> u32 {
    return r.y - min(r.x, r.y);
}

// The rows of `rows` [first, end) that a pass runs, from its first and count.
fn pass_rows_of(rows: vec2<u32>, first: u32, count: u32) -> vec2<u32> {
    if (count == 0u) {
        return rows;
    }
    let total = span(rows);
    return rows.x + vec2<u32>(min(first, total), min(first + count, total));
}

// This pass's taps of a row's `columns` (Params.pass_columns from pass_first_column): rows wider
// than the cap run in passes of their taps, one row at a time.
fn pass_columns(columns: vec2<u32>) -> vec2<u32> {
    return pass_rows_of(columns, p.pass_first_column, p.pass_columns);
}

// Whether this is the first pass in row-major order (or the only one): the later ones resume.
fn first_window_pass() -> bool {
    return p.pass_first == 0u && p.pass_first_column == 0u;
}

// Whether this pass runs the last taps of a window of `rows` rows of at most `widest` taps.
fn runs_last_taps(rows: u32, widest: u32) -> bool {
    return runs_last_rows(rows, p.pass_first, p.pass_rows) && runs_last_rows(widest, p.pass_first_column, p.pass_columns);
}

// A pass's sum over its covering windows, into `out` (each shader's output, whose Params carry
// the pass): the first pass writes it, later ones add theirs.
fn add_pass(at: u32, sum: T) {
    if (first_window_pass()) {
        out[at] = sum;
    } else {
        out[at] += sum;
    }
}

// Whether the pass runs the last of `total` rows (the most rows the host split).
fn runs_last_rows(total: u32, first: u32, count: u32) -> bool {
    return count == 0u || first + count >= total;
}
