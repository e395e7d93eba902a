// Integer Sum (OP 0), Prod (1), Max (2), Min (3) and Mean (4) over any set of axes, and ArgMax (5)
// and ArgMin (6) over one, in 64 bits
// (`math.wgsl`, `int64.wgsl`, `quot.wgsl` and `reduce_index.wgsl` are prepended). Invocation t
// combines chunk t % slices (`rows_per_slice` of the `rows` reduced elements) of output t / slices
// and writes one 64-bit word pair: a partial result that a further launch (WIDTH 8) combines, or,
// with `partial` 0, the result (Mean divided by `count`, toward zero). Sums wrap in 64 bits and
// are stored truncated by the host's cast: TF's Sum wraps in the element type, and its Mean of
// 8- to 32-bit integers sums without overflow (int64 and uint64 wrap). ArgMax and ArgMin keep
// (value, index) records of 4 words (`out_words` 4, read back with RECORDS) until the last launch
// writes the index (`out_words` 1 or 2); the first of equal values wins, as in TF.

override RECORDS: bool = false;

@group(0) @binding(0) var<storage, read_write> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

fn load(e: u32) -> vec2<u32> {
    let at = p.in_off + e * WIDTH;
    if (WIDTH == 8u) {
        return vec2<u32>(input[at >> 2u], input[(at >> 2u) + 1u]);
    }
    return extend(input[at >> 2u] >> ((at & 3u) * 8u));
}

// The identity of OP in the element type: Max starts from its least value, Min from its greatest.
fn identity() -> vec2<u32> {
    let top = WIDTH * 8u - 1u;
    let least = select(vec2<u32>(0u, 0u), shift_left(ALL_ONES, top), SIGNED);
    switch OP {
        case 1u: { return vec2<u32>(1u, 0u); }
        case 2u: { return least; }
        case 3u: { return select(ALL_ONES, ~least, SIGNED); }
        default: { return vec2<u32>(0u, 0u); }
    }
}

fn combine(acc: vec2<u32>, x: vec2<u32>) -> vec2<u32> {
    switch OP {
        case 1u: { return mul64(acc, x); }
        case 2u: { return select(acc, x, less(acc, x)); }
        case 3u: { return select(acc, x, less(x, acc)); }
        default: { return add64(acc, x); }
    }
}

// ArgMax/ArgMin over elements first..last of output o's row starting at `base`.
fn arg(t: u32, base: u32, first: u32, last: u32) {
    var best = vec2<u32>(0u, 0u);
    var best_index = 0u;
    for (var i = first; i < last; i++) {
        let e = base + offset_of(i, RED_RANK, p.red_shape, p.red_stride);
        var v = load(e);
        var index = i;
        if (RECORDS) {
            let at = (p.in_off >> 2u) + 4u * e;
            v = vec2<u32>(input[at], input[at + 1u]);
            index = input[at + 2u];
        }
        let better = select(less(v, best), less(best, v), OP == 5u);
        if (i == first || better) {
            best = v;
            best_index = index;
        }
    }
    let at = (p.out_off >> 2u) + p.out_words * t;
    if (p.out_words == 4u) {
        out[at] = best.x;
        out[at + 1u] = best.y;
        out[at + 2u] = best_index;
        out[at + 3u] = 0u;
    } else {
        out[at] = best_index;
        if (p.out_words == 2u) {
            out[at + 1u] = 0u;
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 256u;
    if (t >= p.outputs * p.slices) {
        return;
    }
    let o = t / p.slices;
    let first = (t - o * p.slices) * p.rows_per_slice;
    let last = min(first + p.rows_per_slice, p.rows);
    let base = offset_of(o, KEPT_RANK, p.kept_shape, p.kept_stride);
    if (OP >= 5u) {
        arg(t, base, first, last);
        return;
    }
    var acc = identity();
    for (var i = first; i < last; i++) {
        acc = combine(acc, load(base + offset_of(i, RED_RANK, p.red_shape, p.red_stride)));
    }
    if (OP == 4u && p.partial == 0u) {
        acc = select(truncate_divmod(acc, vec2<u32>(p.count, 0u)).xy, vec2<u32>(0u, 0u), p.count == 0u);
    }
    out[(p.out_off >> 2u) + 2u * t] = acc.x;
    out[(p.out_off >> 2u) + 2u * t + 1u] = acc.y;
}
