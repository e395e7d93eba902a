// Passes over the rows of a window's taps (or of the windows covering an element), for loops that
// would pass llvmpipe's cap on one invocation's iterations and that the host splits
// (`conv::passes_of_rows`): a pass runs `count` rows from `first`, counted from each invocation's own
// first row, so that every invocation of a SIMD group loops over at most `count` rows of at most
// the widest row's taps (llvmpipe counts the group's iterations); a count of 0 runs them all.

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

// A pass's sum over its rows of covering windows, into `out` (each shader's output, whose Params
// carry pass_first): the first pass writes it, later ones add theirs.
fn add_pass(at: u32, sum: T) {
    if (p.pass_first == 0u) {
        out[at] = sum;
    } else {
        out[at] += sum;
    }
}

// Whether the pass runs the last of `total` rows (the most rows the host split).
fn runs_last_rows(total: u32, first: u32, count: u32) -> bool {
    return count == 0u || first + count >= total;
}
