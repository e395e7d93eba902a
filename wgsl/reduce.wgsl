// Reductions over any set of axes: one workgroup per output element, its 256 threads striding over
// the reduced elements, then a tree in workgroup memory. Input and output are u32 words (floats
// bitcast), so one layout serves float, bool and argmax results.
//   reduce_f32: Sum (OP 0), Prod (1), Max (2), Min (3), Mean (4), half the sum of squares (5,
//     L2Loss); NaN propagates through Max/Min.
//   reduce_f32_serial: the same ops, one invocation per output looping over its elements, with no
//     barriers: for short reductions, where a 256-thread tree would mostly wait (and llvmpipe's
//     barriers are costly). reduce_f32_serial_vec4 is it over contiguous rows read as vec4s.
//   reduce_bool: All (OP 0), Any (1) over bool bytes, in slices: each clears (All) or sets (Any)
//     its byte of an output that starts as the identity.
//   arg_f32: ArgMax (OP 0), ArgMin (1) over one axis, as Eigen's tuple reducers (see `better`);
//     `out_words` 1 or 2; long axes in slices whose candidates arg_f32_merge reduces.
//   reduce_columns: reduce_f32's ops but L2Loss over the middle axis of a `batches` x `rows` x
//     `columns` input (the kept columns innermost): see below; reduce_columns_vec4, four columns at
//     once.

@group(0) @binding(0) var<storage, read_write> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> partial: array<f32, 256>;
var<workgroup> partial_index: array<u32, 256>;

fn identity() -> f32 {
    switch OP {
        case 1u: { return 1.0; }
        case 2u: { return bitcast<f32>(0xff800000u); }
        case 3u: { return bitcast<f32>(0x7f800000u); }
        default: { return 0.0; }
    }
}

fn combine(x: f32, y: f32) -> f32 {
    switch OP {
        case 1u: { return x * y; }
        case 2u: {
            if (math_is_nan(x) || math_is_nan(y)) { return math_nan(); }
            return max(x, y);
        }
        case 3u: {
            if (math_is_nan(x) || math_is_nan(y)) { return math_nan(); }
            return min(x, y);
        }
        default: { return x + y; }
    }
}

// Sums (Sum, Mean, L2Loss) accumulate with Kahan's compensation (`math_sum_add`), so each
// invocation's error does not grow with the elements it adds; the tree over invocations adds
// O(log n).
fn is_sum() -> bool {
    return OP == 0u || OP == 4u || OP == 5u;
}

fn accumulate(acc: ptr<function, MathSum>, x: f32) {
    if (is_sum()) {
        math_sum_add(acc, x);
    } else {
        (*acc).total = combine((*acc).total, x);
    }
}

// What each input element contributes: itself, or its square for L2Loss.
fn term(x: f32) -> f32 {
    if (OP == 5u) {
        return x * x;
    }
    return x;
}

@compute @workgroup_size(256)
fn reduce_f32(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // Workgroup w reduces slice w % slices of output w / slices (one slice unless the host split a
    // long reduction under the adapter's loop limit).
    let w = output_index(wid, nwg);
    let o = w / p.slices;
    let valid = o < p.outputs;
    let base = p.in_off + offset_of(select(0u, o, valid), KEPT_RANK, p.kept_shape, p.kept_stride);
    let first = (w - o * p.slices) * p.rows_per_slice;
    let last = min(p.rows, first + p.rows_per_slice);
    var acc = MathSum(identity(), 0.0);
    if (valid) {
        for (var r = first + lid; r < last; r += 256u) {
            accumulate(&acc, term(bitcast<f32>(input[base + offset_of(r, RED_RANK, p.red_shape, p.red_stride)])));
        }
    }
    partial[lid] = math_sum_value(acc);
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (lid < step) {
            partial[lid] = combine(partial[lid], partial[lid + step]);
        }
        workgroupBarrier();
    }
    if (lid == 0u && valid) {
        atomicStore(&out[p.out_off + w], bitcast<u32>(select(finish(partial[0]), partial[0], p.partial != 0u)));
    }
}

fn finish(total: f32) -> f32 {
    if (OP == 4u) {
        return total / f32(p.count);
    }
    if (OP == 5u) {
        return total * 0.5;
    }
    return total;
}

@compute @workgroup_size(64)
fn reduce_f32_serial(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = gid.x + gid.y * nwg.x * 64u;
    if (o >= p.outputs) {
        return;
    }
    let base = p.in_off + offset_of(o, KEPT_RANK, p.kept_shape, p.kept_stride);
    var acc = MathSum(identity(), 0.0);
    for (var r = 0u; r < p.count; r++) {
        accumulate(&acc, term(bitcast<f32>(input[base + offset_of(r, RED_RANK, p.red_shape, p.red_stride)])));
    }
    atomicStore(&out[p.out_off + o], bitcast<u32>(finish(math_sum_value(acc))));
}

// reduce_f32_serial over rows of contiguous elements that start on a vec4 (the host checks: one
// reduced dimension of stride 1, its length, every kept stride and the offset multiples of 4). The
// same operations in the same order, four elements per load: llvmpipe loads storage lane by lane,
// one vec4 load is one such loop where four scalar loads are four.
@group(0) @binding(0) var<storage, read_write> input4: array<vec4<u32>>;

@compute @workgroup_size(64)
fn reduce_f32_serial_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = gid.x + gid.y * nwg.x * 64u;
    if (o >= p.outputs) {
        return;
    }
    let base = (p.in_off + offset_of(o, KEPT_RANK, p.kept_shape, p.kept_stride)) / 4u;
    var acc = MathSum(identity(), 0.0);
    for (var r = 0u; r < p.count / 4u; r++) {
        let v = bitcast<vec4<f32>>(input4[base + r]);
        accumulate(&acc, term(v.x));
        accumulate(&acc, term(v.y));
        accumulate(&acc, term(v.z));
        accumulate(&acc, term(v.w));
    }
    atomicStore(&out[p.out_off + o], bitcast<u32>(finish(math_sum_value(acc))));
}

// Column reductions (Sum over leading axes, BiasAddGrad, Mean over an image's H and W): the input is
// `batches` x `rows` x `columns` (p.kept_shape[0].y columns, batches p.kept_stride[0].x elements
// apart), reduced over its rows into `outputs` = batches * columns. Invocation (slice, output)
// combines its slice of one column with a plain row stride, neighbouring lanes reading neighbouring
// columns and no element index split into coordinates. With more than one slice it writes raw
// partial results, one row per slice, that a second launch over `slices` rows of one batch combines
// (`count` stays the reduced element count, for Mean).
fn column_start(o: u32) -> u32 {
    let columns = p.kept_shape[0].y;
    let batch = quot(o, columns);
    return p.in_off + batch * p.kept_stride[0].x + (o - batch * columns);
}

@compute @workgroup_size(64)
fn reduce_columns(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.outputs * p.slices) {
        return;
    }
    let slice = quot(i, p.outputs);
    let start = column_start(i - slice * p.outputs);
    let columns = p.kept_shape[0].y;
    let first = slice * p.rows_per_slice;
    let last = min(p.rows, first + p.rows_per_slice);
    var acc = MathSum(identity(), 0.0);
    for (var r = first; r < last; r++) {
        accumulate(&acc, bitcast<f32>(input[start + r * columns]));
    }
    let total = math_sum_value(acc);
    atomicStore(&out[p.out_off + i], bitcast<u32>(select(finish(total), total, p.partial != 0u)));
}

// reduce_columns over `width` adjacent columns per invocation (4 or 16), read and written as vec4s
// (the host checks that the columns are a multiple of the width and both offsets of 4): the same
// operations per column within a slice (math_sum4_add is math_sum_add on each lane); the host cuts
// the rows into more slices, to keep as many invocations busy.
@group(0) @binding(1) var<storage, read_write> out4: array<vec4<u32>>;

fn combine4(x: vec4<f32>, y: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(combine(x.x, y.x), combine(x.y, y.y), combine(x.z, y.z), combine(x.w, y.w));
}

fn accumulate4(acc: ptr<function, MathSum4>, v: vec4<f32>) {
    if (is_sum()) {
        math_sum4_add(acc, v);
    } else {
        (*acc).total = combine4((*acc).total, v);
    }
}

fn column_result4(acc: MathSum4) -> vec4<u32> {
    let total = math_sum4_value(acc);
    let done = vec4<f32>(finish(total.x), finish(total.y), finish(total.z), finish(total.w));
    return bitcast<vec4<u32>>(select(done, total, p.partial != 0u));
}

// Invocation `i`'s part of a vec4 column reduction `width` columns wide: its first row's vec4
// (`at`), the rows [first, last) of its slice, and where its results go (`put`, in vec4s).
struct ColumnSlice {
    valid: bool,
    at: u32,
    first: u32,
    last: u32,
    put: u32,
}

fn column_slice(i: u32, width: u32) -> ColumnSlice {
    let groups = p.outputs / width;
    if (i >= groups * p.slices) {
        return ColumnSlice(false, 0u, 0u, 0u, 0u);
    }
    let slice = i / groups;
    let o = (i - slice * groups) * width;
    let first = slice * p.rows_per_slice;
    let last = min(p.rows, first + p.rows_per_slice);
    return ColumnSlice(true, column_start(o) / 4u, first, last, (p.out_off + slice * p.outputs + o) / 4u);
}

@compute @workgroup_size(64)
fn reduce_columns_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let part = column_slice(gid.x + gid.y * nwg.x * 64u, 4u);
    if (!part.valid) {
        return;
    }
    let row = p.kept_shape[0].y / 4u;
    var acc = MathSum4(vec4<f32>(identity()), vec4<f32>());
    for (var r = part.first; r < part.last; r++) {
        accumulate4(&acc, bitcast<vec4<f32>>(input4[part.at + r * row]));
    }
    out4[part.put] = column_result4(acc);
}

// reduce_columns_vec4 over sixteen adjacent columns: each row's four vec4 loads are one 64-byte
// run, so a lane reads whole cache lines, and four independent loads per row keep more of them in
// flight on llvmpipe, whose lane-by-lane loads down a strided column otherwise wait on memory one
// by one.
@compute @workgroup_size(64)
fn reduce_columns_vec16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let part = column_slice(gid.x + gid.y * nwg.x * 64u, 16u);
    if (!part.valid) {
        return;
    }
    let row = p.kept_shape[0].y / 4u;
    let init = MathSum4(vec4<f32>(identity()), vec4<f32>());
    var acc0 = init;
    var acc1 = init;
    var acc2 = init;
    var acc3 = init;
    for (var r = part.first; r < part.last; r++) {
        let at = part.at + r * row;
        accumulate4(&acc0, bitcast<vec4<f32>>(input4[at]));
        accumulate4(&acc1, bitcast<vec4<f32>>(input4[at + 1u]));
        accumulate4(&acc2, bitcast<vec4<f32>>(input4[at + 2u]));
        accumulate4(&acc3, bitcast<vec4<f32>>(input4[at + 3u]));
    }
    out4[part.put] = column_result4(acc0);
    out4[part.put + 1u] = column_result4(acc1);
    out4[part.put + 2u] = column_result4(acc2);
    out4[part.put + 3u] = column_result4(acc3);
}

// reduce_columns_vec16 reading the input from a texture, a copy of it from its first vec4 of 4096
// texels a row, for f32 on CPU adapters (see `main_vec4_texels` in binary.wgsl). The texture binds
// after the parameter block.
@group(0) @binding(3) var input_texels: texture_2d<u32>;

fn input_texel(at: u32) -> vec4<f32> {
    let t = at - p.in_off / 4u;
    return bitcast<vec4<f32>>(textureLoad(input_texels, vec2<u32>(t & 4095u, t >> 12u), 0));
}

@compute @workgroup_size(64)
fn reduce_columns_vec16_texels(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let part = column_slice(gid.x + gid.y * nwg.x * 64u, 16u);
    if (!part.valid) {
        return;
    }
    let row = p.kept_shape[0].y / 4u;
    let init = MathSum4(vec4<f32>(identity()), vec4<f32>());
    var acc0 = init;
    var acc1 = init;
    var acc2 = init;
    var acc3 = init;
    for (var r = part.first; r < part.last; r++) {
        let at = part.at + r * row;
        accumulate4(&acc0, input_texel(at));
        accumulate4(&acc1, input_texel(at + 1u));
        accumulate4(&acc2, input_texel(at + 2u));
        accumulate4(&acc3, input_texel(at + 3u));
    }
    out4[part.put] = column_result4(acc0);
    out4[part.put + 1u] = column_result4(acc1);
    out4[part.put + 2u] = column_result4(acc2);
    out4[part.put + 3u] = column_result4(acc3);
}

// Workgroup w: slice w % slices of output w / slices (rows [first, last) of `rows`). The output
// starts as All's or Any's identity (bytes of 1 or 0); a slice with a false element clears All's
// byte, one with a true element sets Any's, so slices and windows of an input combine in place.
@compute @workgroup_size(256)
fn reduce_bool(
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
    // All: count false elements; Any: count true ones.
    var hits = 0.0;
    if (valid) {
        for (var r = first + lid; r < last; r += 256u) {
            let at = base + offset_of(r, RED_RANK, p.red_shape, p.red_stride);
            let bit = (input[at >> 2u] >> ((at & 3u) * 8u)) & 0xffu;
            hits += select(0.0, 1.0, (bit != 0u) == (OP == 1u));
        }
    }
    partial[lid] = hits;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (lid < step) {
            partial[lid] = partial[lid] + partial[lid + step];
        }
        workgroupBarrier();
    }
    if (lid == 0u && valid && partial[0] > 0.0) {
        let at = p.out_off + o;
        let byte = 0xffu << ((at & 3u) * 8u);
        if (OP == 1u) {
            atomicOr(&out[at >> 2u], byte & 0x01010101u);
        } else {
            atomicAnd(&out[at >> 2u], ~byte);
        }
    }
}

// Eigen's ArgMax/ArgMin tuple reducers, which TF's CPU and GPU kernels run: (x, xi) wins over
// (y, yi) if x is greater (ArgMin: less), or equal at a lower index. A NaN never wins, nor does a
// value not past the reducer's start, (the type's lowest (highest), index 0): where nothing does,
// the answer is index 0.
fn better(x: f32, xi: u32, y: f32, yi: u32) -> bool {
    if (x == y) { return xi < yi; }
    return select((x < y), (x > y), OP == 0u);
}

fn arg_start() -> f32 {
    return select(bitcast<f32>(0x7f7fffffu), bitcast<f32>(0xff7fffffu), OP == 0u);
}

// Workgroup w reduces slice w % slices of output w / slices: reduced rows [first, last) of the
// `rows` this launch binds, whose row 0 is reduced index `index_base` of the whole axis (a window
// of an input past a binding). Indices are the whole axis's, so ties compare across slices. With
// `partial` 0 it writes the index; else the candidate (index, value bits) at slot `s` of the
// output's `partial` slots (`out_off` counts the slots of earlier windows), which `arg_f32_merge`
// reduces.
@compute @workgroup_size(256)
fn arg_f32(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = output_index(wid, nwg);
    let o = w / p.slices;
    let s = w - o * p.slices;
    let valid = o < p.outputs;
    let base = p.in_off + offset_of(select(0u, o, valid), KEPT_RANK, p.kept_shape, p.kept_stride);
    let stride = dim_at(p.red_stride, 0u);
    let first = s * p.rows_per_slice;
    let last = min(p.rows, first + p.rows_per_slice);
    var best = arg_start();
    var best_index = 0u;
    if (valid) {
        for (var r = first + lid; r < last; r += 256u) {
            let v = bitcast<f32>(input[base + r * stride]);
            if (better(v, p.index_base + r, best, best_index)) {
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
            if (better(partial[lid + step], partial_index[lid + step], partial[lid], partial_index[lid])) {
                partial[lid] = partial[lid + step];
                partial_index[lid] = partial_index[lid + step];
            }
        }
        workgroupBarrier();
    }
    if (lid == 0u && valid) {
        if (p.partial != 0u) {
            let at = p.out_off + 2u * (o * p.partial + s);
            atomicStore(&out[at], partial_index[0]);
            atomicStore(&out[at + 1u], bitcast<u32>(partial[0]));
            return;
        }
        atomicStore(&out[p.out_off + o * p.out_words], partial_index[0]);
        if (p.out_words == 2u) {
            atomicStore(&out[p.out_off + o * 2u + 1u], 0u);
        }
    }
}

// The index of each output's best candidate of arg_f32's `partial` slots, one invocation per
// output (the start wins where no candidate does, as in one pass).
@compute @workgroup_size(64)
fn arg_f32_merge(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = gid.x + gid.y * nwg.x * 64u;
    if (o >= p.outputs) {
        return;
    }
    var best = arg_start();
    var best_index = 0u;
    for (var s = 0u; s < p.partial; s++) {
        let at = p.in_off + 2u * (o * p.partial + s);
        let v = bitcast<f32>(input[at + 1u]);
        if (better(v, input[at], best, best_index)) {
            best = v;
            best_index = input[at];
        }
    }
    atomicStore(&out[p.out_off + o * p.out_words], best_index);
    if (p.out_words == 2u) {
        atomicStore(&out[p.out_off + o * 2u + 1u], 0u);
    }
}
