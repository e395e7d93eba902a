// float64 reductions, computed in f64 (`quot.wgsl` and `reduce_index.wgsl` are prepended; the
// device has SHADER_F64): Sum (OP 0), Prod (1), Max (2), Min (3), Mean (4) and half the sum of
// squares (5, L2Loss), numbered and laid out as reduce.wgsl's, offsets in f64 elements.
//   reduce_f64: one workgroup per output (or per slice of one, `p.slices`), its 256 threads
//     striding over the elements, then a tree in workgroup memory; raw partial results where
//     `p.partial` is set, for a second launch over the slices (L2Loss writes halved sums, which
//     the second launch adds).
//   reduce_f64_serial: one invocation per output looping over its elements (short reductions, and
//     empty ones: `p.count` 0 gives the identity, or NaN for Mean).
//   arg_f64: ArgMax (OP 0) and ArgMin (1) over one axis, as reduce.wgsl's arg_f32 (Eigen's tuple
//     reducers); indices written to `out_words` (`out_words` words each). arg_f64_candidates
//     writes slices' candidates instead, which arg_f64_merge reduces.
// Max and Min propagate NaN, recognised from the bits (`words`: the host binds the input a second
// time, as WGSL has no bitcast from f64).

@group(0) @binding(0) var<storage, read_write> input: array<f64>;
@group(0) @binding(1) var<storage, read_write> out: array<f64>;
@group(0) @binding(2) var<storage, read_write> words: array<vec2<u32>>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> partial: array<f64, 256>;
// 1 where a NaN met Max or Min in the thread's elements.
var<workgroup> partial_nan: array<u32, 256>;

const ONE: f64 = 1.0;

fn is_nan_bits(w: vec2<u32>) -> bool {
    let high = w.y & 0x7fffffffu;
    return high > 0x7ff00000u || (high == 0x7ff00000u && w.x != 0u);
}

fn identity() -> f64 {
    switch OP {
        case 1u: { return ONE; }
        // -inf and inf, widened from f32's (WGSL has no infinite literal).
        case 2u: { return -f64(bitcast<f32>(0x7f800000u)); }
        case 3u: { return f64(bitcast<f32>(0x7f800000u)); }
        default: { return 0.0; }
    }
}

fn combine(x: f64, y: f64) -> f64 {
    switch OP {
        case 1u: { return x * y; }
        case 2u: { return max(x, y); }
        case 3u: { return min(x, y); }
        default: { return x + y; }
    }
}

// The finished result: Mean divides by the elements, and Max/Min that met a NaN are NaN.
fn nan64() -> f64 {
    return f64(bitcast<f32>(0x7fc00000u));
}

fn finish(total: f64, nan: bool) -> f64 {
    if (nan) {
        return nan64();
    }
    if (OP == 4u) {
        return total / f64(p.count);
    }
    if (OP == 5u) {
        return total * 0.5;
    }
    return total;
}

// Element `r` of output `o`'s reduced elements, at `base`, into (acc, nan).
fn take(acc: ptr<function, f64>, nan: ptr<function, bool>, at: u32) {
    if ((OP == 2u || OP == 3u) && is_nan_bits(words[at])) {
        *nan = true;
    } else if (OP == 5u) {
        *acc += input[at] * input[at];
    } else {
        *acc = combine(*acc, input[at]);
    }
}

@compute @workgroup_size(256)
fn reduce_f64(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = output_index(wid, nwg);
    let o = w / p.slices;
    let valid = o < p.outputs;
    let base = p.in_off + offset_of(select(0u, o, valid), KEPT_RANK, p.kept_shape, p.kept_stride);
    let first = (w - o * p.slices) * p.rows_per_slice;
    let last = min(p.rows, first + p.rows_per_slice);
    var acc = identity();
    var nan = false;
    if (valid) {
        for (var r = first + lid; r < last; r += 256u) {
            take(&acc, &nan, base + offset_of(r, RED_RANK, p.red_shape, p.red_stride));
        }
    }
    partial[lid] = acc;
    partial_nan[lid] = select(0u, 1u, nan);
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (lid < step) {
            partial[lid] = combine(partial[lid], partial[lid + step]);
            partial_nan[lid] |= partial_nan[lid + step];
        }
        workgroupBarrier();
    }
    if (lid == 0u && valid) {
        let any_nan = partial_nan[0] != 0u;
        // A raw partial result (not divided for Mean) keeps a NaN as a NaN value, which the second
        // pass, reading the partials as its input, finds from the bits.
        let raw = select(partial[0], nan64(), any_nan);
        out[p.out_off + w] = select(finish(partial[0], any_nan), raw, p.partial != 0u);
    }
}

@compute @workgroup_size(64)
fn reduce_f64_serial(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = gid.x + gid.y * nwg.x * 64u;
    if (o >= p.outputs) {
        return;
    }
    let base = p.in_off + offset_of(o, KEPT_RANK, p.kept_shape, p.kept_stride);
    var acc = identity();
    var nan = false;
    for (var r = 0u; r < p.count; r++) {
        take(&acc, &nan, base + offset_of(r, RED_RANK, p.red_shape, p.red_stride));
    }
    out[p.out_off + o] = finish(acc, nan);
}

// arg_f64's view of binding 1, and its candidates' indices.
@group(0) @binding(1) var<storage, read_write> out_words: array<u32>;
var<workgroup> partial_index: array<u32, 256>;

const F64_MAX: f64 = 1.7976931348623157e308;

// reduce.wgsl's `better`: Eigen's tuple reducers (a NaN never wins; comparisons with it are false).
fn arg_better(x: f64, xi: u32, y: f64, yi: u32) -> bool {
    if (x == y) { return xi < yi; }
    return select((x < y), (x > y), OP == 0u);
}

// Slices as reduce.wgsl's arg_f32: the best (value, whole-axis index) of output o's reduced rows
// [first, last), left in partial[0] and partial_index[0] for lane 0.
fn arg_f64_slice(o: u32, valid: bool, first: u32, last: u32, lid: u32) {
    let base = p.in_off + offset_of(select(0u, o, valid), KEPT_RANK, p.kept_shape, p.kept_stride);
    let stride = dim_at(p.red_stride, 0u);
    var best = arg_start_f64();
    var best_index = 0u;
    if (valid) {
        for (var r = first + lid; r < last; r += 256u) {
            let v = input[base + r * stride];
            if (arg_better(v, p.index_base + r, best, best_index)) {
                best = v;
                best_index = p.index_base + r;
            }
        }
    }
    partial[lid] = best;
    partial_index[lid] = best_index;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (lid < step) {
            if (arg_better(partial[lid + step], partial_index[lid + step], partial[lid], partial_index[lid])) {
                partial[lid] = partial[lid + step];
                partial_index[lid] = partial_index[lid + step];
            }
        }
        workgroupBarrier();
    }
}

// One workgroup per output (`slices` 1): the index.
@compute @workgroup_size(256)
fn arg_f64(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let o = output_index(wid, nwg);
    let valid = o < p.outputs;
    arg_f64_slice(o, valid, 0u, p.rows, lid);
    if (lid == 0u && valid) {
        out_words[p.out_off + o * p.out_words] = partial_index[0];
        if (p.out_words == 2u) {
            out_words[p.out_off + o * 2u + 1u] = 0u;
        }
    }
}

// Workgroup w: slice w % slices of output w / slices, its candidate as two f64 slots of `out`
// (the index, exact in f64, then the value) at slot `s` of the output's `partial` (`out_off` in f64
// slots, counting earlier windows' slots). (An entry cannot write `out` and `out_words` both.)
@compute @workgroup_size(256)
fn arg_f64_candidates(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = output_index(wid, nwg);
    let o = w / p.slices;
    let s = w - o * p.slices;
    let valid = o < p.outputs;
    let first = s * p.rows_per_slice;
    arg_f64_slice(o, valid, first, min(p.rows, first + p.rows_per_slice), lid);
    if (lid == 0u && valid) {
        let at = p.out_off + 2u * (o * p.partial + s);
        out[at] = f64(partial_index[0]);
        out[at + 1u] = partial[0];
    }
}

// The reducer's start: the type's lowest (ArgMin: highest) at index 0.
fn arg_start_f64() -> f64 {
    return select(F64_MAX, -F64_MAX, OP == 0u);
}

// arg_f64_candidates's slots (`input`, `in_off` in f64 slots) reduced, one invocation per output.
@compute @workgroup_size(64)
fn arg_f64_merge(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = gid.x + gid.y * nwg.x * 64u;
    if (o >= p.outputs) {
        return;
    }
    var best = arg_start_f64();
    var best_index = 0u;
    for (var s = 0u; s < p.partial; s++) {
        let at = p.in_off + 2u * (o * p.partial + s);
        let v = input[at + 1u];
        let index = u32(input[at]);
        if (arg_better(v, index, best, best_index)) {
            best = v;
            best_index = index;
        }
    }
    out_words[p.out_off + o * p.out_words] = best_index;
    if (p.out_words == 2u) {
        out_words[p.out_off + o * 2u + 1u] = 0u;
    }
}
