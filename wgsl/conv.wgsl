// NHWC spatial ops, one invocation per output element (direct loops; implicit GEMM is future work):
//   conv2d:    Conv2D with strides, dilations, padding and groups; filter HWIO
//   depthwise: DepthwiseConv2dNative; filter [KH, KW, C, M], output channel c * M + m
//   max_pool, avg_pool: windows over H and W; padding is excluded from max and from the average
//   batch_norm: FusedBatchNormV3 inference, y = (x - mean) * rsqrt(var + eps) * scale + offset
// and their gradients, one invocation per element of the gradient they produce:
//   conv2d_grad_input, depthwise_grad_input: dx from dy (`input`) and the filter (`weights`)
//   conv2d_grad_filter, depthwise_grad_filter: df from x (`input`) and dy (`weights`), over
//     slices of the output pixels summed by conv2d_grad_filter_sum
//   max_pool_grad_argmax, max_pool_grad_routed, max_pool_grad_windows: dx from x (`input`) and dy
//     (`weights`); each window's gradient goes to its first maximum, as TF-CPU routes it
//   avg_pool_grad: dx from dy (`input`), shared among each window's non-padding elements
//   max_pool_argmax: MaxPoolWithArgmax, the first maximum of each window and its flat index (int64
//     words into `shift_words`; the image's own index, or the batch's where `fc` is 1)
//   max_pool_grad_grad: MaxPoolGradGrad, each window's gradient-of-gradient (`weights`, shaped
//     like x) at the window's first element equal to orig_output (`shift`), 0 where none is
// Elements are `T`, which the prelude before this file declares with `negative_infinity`, `is_nan`
// and `reciprocal_sqrt`: `element_f32.wgsl` (float32) or `element_f64.wgsl` (float64).

struct Params {
    n: u32,
    batch: u32,
    h: u32,
    w: u32,
    c: u32,
    oh: u32,
    ow: u32,
    // Output channels.
    oc: u32,
    kh: u32,
    kw: u32,
    sh: u32,
    sw: u32,
    dh: u32,
    dw: u32,
    pad_top: u32,
    pad_left: u32,
    // Filter input channels (conv2d: c / groups) or depth multiplier (depthwise).
    fc: u32,
    in_off: u32,
    f_off: u32,
    out_off: u32,
    // Extra per-channel operands of batch_norm (offsets into `weights`, which holds the scale).
    offset_off: u32,
    mean_off: u32,
    var_off: u32,
    epsilon: f32,
    // Split filter gradients: slices of the batch * oh * ow output pixels, and pixels per slice.
    slices: u32,
    slice_len: u32,
    // The taps of a window (or the windows covering an element) this pass runs, for loops past
    // llvmpipe's cap that the host splits into passes (`tap_passes.wgsl`): pass_rows rows from
    // pass_first, and of each row pass_columns from pass_first_column; 0: all of them.
    pass_first: u32,
    pass_rows: u32,
    pass_first_column: u32,
    pass_columns: u32,
}

@group(0) @binding(0) var<storage, read_write> input: array<T>;
@group(0) @binding(1) var<storage, read_write> weights: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;
// Used by batch_norm only: the offset, mean and variance vectors; by the max pools' second
// gradient, orig_output; by max_pool_argmax, the argmax output (as words).
@group(0) @binding(3) var<storage, read_write> shift: array<T>;
@group(0) @binding(3) var<storage, read_write> shift_words: array<u32>;
@group(0) @binding(4) var<storage, read_write> mean: array<T>;
@group(0) @binding(5) var<storage, read_write> variance: array<T>;
@group(0) @binding(6) var<uniform> p: Params;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

struct Position {
    b: u32,
    y: u32,
    x: u32,
    ch: u32,
}

// The (batch, y, x, channel) of element `i` of a [batch, h, w, c] tensor.
fn split_position(i: u32, h: u32, w: u32, c: u32) -> Position {
    let pixel = quot_rem(i, c);
    let row = quot_rem(pixel.x, w);
    let image = quot_rem(row.x, h);
    return Position(image.x, image.y, row.y, pixel.y);
}

// The position of output element `i`.
fn position(i: u32) -> Position {
    return split_position(i, p.oh, p.ow, p.oc);
}

fn input_at(b: u32, y: u32, x: u32, ch: u32) -> T {
    return input[p.in_off + ((b * p.h + y) * p.w + x) * p.c + ch];
}

@compute @workgroup_size(256)
fn conv2d(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = position(i);
    let groups = p.c / p.fc;
    let group = pos.ch / (p.oc / groups);
    var acc = T(0.0);
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(pos.y * p.sh + ky * p.dh) - i32(p.pad_top);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let ix = i32(pos.x * p.sw + kx * p.dw) - i32(p.pad_left);
            if (ix < 0 || ix >= i32(p.w)) { continue; }
            let in_base = p.in_off + ((pos.b * p.h + u32(iy)) * p.w + u32(ix)) * p.c + group * p.fc;
            let f_base = p.f_off + (ky * p.kw + kx) * p.fc * p.oc + pos.ch;
            for (var ci = 0u; ci < p.fc; ci++) {
                acc += input[in_base + ci] * weights[f_base + ci * p.oc];
            }
        }
    }
    out[p.out_off + i] = acc;
}

// Vec4 views of the filter and output bindings, for `conv2d_oc4` (no entry point uses both views).
@group(0) @binding(1) var<storage, read_write> weights4: array<vec4<T>>;
@group(0) @binding(2) var<storage, read_write> out4: array<vec4<T>>;

// Conv2D computing four output channels per invocation: the input loads are shared by the four,
// and the filter (HWIO, output channels innermost) and the output move as vec4s. On llvmpipe every
// storage access is a per-lane loop, so this makes about a quarter of the accesses of `conv2d`.
// For ungrouped convolutions with oc a multiple of 4 and the filter and output offsets on a vec4;
// p.n / 4 invocations.
@compute @workgroup_size(256)
fn conv2d_oc4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = linear_id(gid, nwg);
    if (q >= p.n / 4u) {
        return;
    }
    let pos = position(q * 4u);
    var acc = vec4<T>();
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(pos.y * p.sh + ky * p.dh) - i32(p.pad_top);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let ix = i32(pos.x * p.sw + kx * p.dw) - i32(p.pad_left);
            if (ix < 0 || ix >= i32(p.w)) { continue; }
            let in_base = p.in_off + ((pos.b * p.h + u32(iy)) * p.w + u32(ix)) * p.c;
            let f_base = (p.f_off + (ky * p.kw + kx) * p.c * p.oc + pos.ch) / 4u;
            for (var ci = 0u; ci < p.c; ci++) {
                acc += input[in_base + ci] * weights4[f_base + ci * (p.oc / 4u)];
            }
        }
    }
    out4[p.out_off / 4u + q] = acc;
}

// Vec4 view of the input binding, for the `_c4` depthwise entries.
@group(0) @binding(0) var<storage, read_write> input4: array<vec4<T>>;

// DepthwiseConv2dNative with a channel multiplier of 1, four channels of four adjacent output
// pixels of a row per invocation: input, filter and output (channels innermost in all three) move
// as vec4s, a quarter of `depthwise`'s per-lane accesses on llvmpipe, and each filter tap is loaded
// once for the four pixels. c a multiple of 4, every offset on a vec4; batch * oh * ceil(ow / 4) *
// c / 4 invocations.
fn depthwise_tap(acc: ptr<function, vec4<T>>, row: u32, ox: u32, kx: u32, ch: u32, tap: vec4<T>) {
    let ix = i32(ox * p.sw + kx * p.dw) - i32(p.pad_left);
    if (ox < p.ow && ix >= 0 && ix < i32(p.w)) {
        *acc += input4[(p.in_off + (row + u32(ix)) * p.c + ch) / 4u] * tap;
    }
}

fn depthwise_put(ox: u32, at: u32, acc: vec4<T>) {
    if (ox < p.ow) {
        out4[at / 4u] = acc;
    }
}

@compute @workgroup_size(256)
fn depthwise_c4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = linear_id(gid, nwg);
    let c4 = p.c / 4u;
    let ow4 = (p.ow + 3u) / 4u;
    if (q >= p.n / (p.ow * p.c) * ow4 * c4) {
        return;
    }
    let ch = (q % c4) * 4u;
    let block = q / c4;
    let ox = (block % ow4) * 4u;
    let image_row = block / ow4;
    let oy = image_row % p.oh;
    let b = image_row / p.oh;
    var acc0 = vec4<T>();
    var acc1 = vec4<T>();
    var acc2 = vec4<T>();
    var acc3 = vec4<T>();
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(oy * p.sh + ky * p.dh) - i32(p.pad_top);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        let row = (b * p.h + u32(iy)) * p.w;
        for (var kx = 0u; kx < p.kw; kx++) {
            let tap = weights4[(p.f_off + (ky * p.kw + kx) * p.c + ch) / 4u];
            depthwise_tap(&acc0, row, ox, kx, ch, tap);
            depthwise_tap(&acc1, row, ox + 1u, kx, ch, tap);
            depthwise_tap(&acc2, row, ox + 2u, kx, ch, tap);
            depthwise_tap(&acc3, row, ox + 3u, kx, ch, tap);
        }
    }
    let at = p.out_off + (image_row * p.ow + ox) * p.c + ch;
    depthwise_put(ox, at, acc0);
    depthwise_put(ox + 1u, at + p.c, acc1);
    depthwise_put(ox + 2u, at + 2u * p.c, acc2);
    depthwise_put(ox + 3u, at + 3u * p.c, acc3);
}

// DepthwiseConv2dNativeBackpropInput with a channel multiplier of 1, four channels per invocation
// (as `depthwise_c4`), stepping from one tap that reads the pixel to the next (`first_tap`) instead
// of testing every tap with a division.
@compute @workgroup_size(256)
fn depthwise_grad_input_c4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = linear_id(gid, nwg);
    if (q >= p.n / 4u) {
        return;
    }
    let pos = input_position(q * 4u);
    let y = first_tap(pos.y, p.sh, p.dh, p.pad_top);
    let x = first_tap(pos.x, p.sw, p.dw, p.pad_left);
    var acc = vec4<T>();
    var oy = i32(y.y);
    for (var ky = y.x; ky < p.kh && oy >= 0; ky += y.z) {
        if (u32(oy) < p.oh) {
            var ox = i32(x.y);
            for (var kx = x.x; kx < p.kw && ox >= 0; kx += x.z) {
                if (u32(ox) < p.ow) {
                    let dy = input4[(p.in_off + dy_index(pos.b, u32(oy), u32(ox), pos.ch)) / 4u];
                    acc += dy * weights4[(p.f_off + (ky * p.kw + kx) * p.c + pos.ch) / 4u];
                }
                ox -= i32(x.w);
            }
        }
        oy -= i32(y.w);
    }
    out4[p.out_off / 4u + q] = acc;
}

// The `_rows` depthwise entries: a channel multiplier of 1, four channels (a vec4) of four adjacent
// pixels of a row per invocation, with the window's width, column stride and column dilation as
// override constants. Their loops over taps unroll, and the columns the four pixels share are loaded
// once into registers: a 3x3 stride-1 window reads 6 columns of a row for its 12 products, where
// one tap per load read 12. llvmpipe runs every storage access as a per-lane loop, so accesses are
// what these kernels cost. c a multiple of 4, every offset on a vec4, ROW_KW <= ROW_TAPS_MAX and the
// columns (`row_columns_needed`) <= ROW_COLUMNS_MAX (the host checks).
override ROW_KW: u32 = 1u;
override ROW_SW: u32 = 1u;
override ROW_DW: u32 = 1u;
const ROW_TAPS_MAX: u32 = 8u;
const ROW_COLUMNS_MAX: u32 = 16u;

// The columns that four adjacent pixels of a row read through ROW_KW taps at column stride `stride`.
fn row_columns_needed(stride: u32) -> u32 {
    return 3u * stride + (ROW_KW - 1u) * ROW_DW + 1u;
}

// Columns x0 .. x0 + count - 1 of channel quad `ch` of one row of binding 0 (`width` pixels of p.c
// channels from pixel `row_start`): zero outside [0, width), and everywhere when `inside` is false
// (a row in the padding). The filter gradient multiplies those zeros by dy, as TF-CPU's
// zero-padded product does; the convolution and its input gradient skip them (`tap_product`).
fn row_columns(cols: ptr<function, array<vec4<T>, ROW_COLUMNS_MAX>>, count: u32, inside: bool, row_start: u32, x0: i32, width: u32, ch: u32) {
    for (var k = 0u; k < count; k++) {
        let x = x0 + i32(k);
        var v = vec4<T>();
        if (inside && x >= 0 && x < i32(width)) {
            v = input4[(p.in_off + (row_start + u32(x)) * p.c + ch) / 4u];
        }
        (*cols)[k] = v;
    }
}

// Column k's product with `tap`, or zero where column x0 + k is outside [0, width): TF-CPU skips
// taps in the padding, so an infinite filter tap there gives no NaN.
fn tap_product(column: vec4<T>, tap: vec4<T>, x0: i32, k: u32, width: u32) -> vec4<T> {
    let x = x0 + i32(k);
    return select(vec4<T>(), column * tap, x >= 0 && x < i32(width));
}

// Stores four pixels' accumulators from element `at` on, those of the row's first `width` columns.
fn row_put(acc: array<vec4<T>, 4>, x: u32, width: u32, at: u32) {
    for (var j = 0u; j < 4u; j++) {
        if (x + j < width) {
            out4[(at + j * p.c) / 4u] = acc[j];
        }
    }
}

// DepthwiseConv2dNative; batch * oh * ceil(ow / 4) * c / 4 invocations.
@compute @workgroup_size(256)
fn depthwise_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = linear_id(gid, nwg);
    let c4 = p.c / 4u;
    let ow4 = (p.ow + 3u) / 4u;
    if (q >= p.batch * p.oh * ow4 * c4) {
        return;
    }
    let ch = (q % c4) * 4u;
    let block = q / c4;
    let ox = (block % ow4) * 4u;
    let image_row = block / ow4;
    let oy = image_row % p.oh;
    let b = image_row / p.oh;
    let x0 = i32(ox * ROW_SW) - i32(p.pad_left);
    var acc: array<vec4<T>, 4>;
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(oy * p.sh + ky * p.dh) - i32(p.pad_top);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        var cols: array<vec4<T>, ROW_COLUMNS_MAX>;
        row_columns(&cols, row_columns_needed(ROW_SW), true, (b * p.h + u32(iy)) * p.w, x0, p.w, ch);
        for (var kx = 0u; kx < ROW_KW; kx++) {
            let tap = weights4[(p.f_off + (ky * p.kw + kx) * p.c + ch) / 4u];
            for (var j = 0u; j < 4u; j++) {
                let k = j * ROW_SW + kx * ROW_DW;
                acc[j] += tap_product(cols[k], tap, x0, k, p.w);
            }
        }
    }
    row_put(acc, ox, p.ow, p.out_off + (image_row * p.ow + ox) * p.c + ch);
}

// DepthwiseConv2dNativeBackpropInput at a column stride of 1, 2 or 4 (so the quad's first pixel `ix`,
// a multiple of 4, is one of the stride too): dx pixel ix + j reads, through tap kx, dy column
// (ix + j + pad_left - kx * dw) / sw where that divides exactly. With ROW_PHASE = pad_left % sw,
// whether it divides and which of the loaded columns it is depend only on j and kx, so the unrolled
// loops keep just the taps that hit. Rows step from tap to tap as in `depthwise_grad_input_c4`.
// batch * h * ceil(w / 4) * c / 4 invocations.
override ROW_PHASE: u32 = 0u;

// The columns `depthwise_grad_input_rows` loads start `grad_input_reach() / ROW_SW` before the
// quad's first one: the taps' reach rounded up to the stride.
fn grad_input_reach() -> u32 {
    return ((ROW_KW - 1u) * ROW_DW + ROW_SW - 1u) / ROW_SW * ROW_SW;
}

@compute @workgroup_size(256)
fn depthwise_grad_input_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = linear_id(gid, nwg);
    let c4 = p.c / 4u;
    let w4 = (p.w + 3u) / 4u;
    if (q >= p.batch * p.h * w4 * c4) {
        return;
    }
    let ch = (q % c4) * 4u;
    let block = q / c4;
    let ix = (block % w4) * 4u;
    let image_row = block / w4;
    let iy = image_row % p.h;
    let b = image_row / p.h;
    let reach = grad_input_reach();
    let x0 = i32((ix + p.pad_left - ROW_PHASE) / ROW_SW) - i32(reach / ROW_SW);
    let columns = (3u + ROW_PHASE + reach) / ROW_SW + 1u;
    let y = first_tap(iy, p.sh, p.dh, p.pad_top);
    var acc: array<vec4<T>, 4>;
    var oy = i32(y.y);
    for (var ky = y.x; ky < p.kh && oy >= 0; ky += y.z) {
        if (u32(oy) < p.oh) {
            var cols: array<vec4<T>, ROW_COLUMNS_MAX>;
            row_columns(&cols, columns, true, (b * p.oh + u32(oy)) * p.ow, x0, p.ow, ch);
            for (var kx = 0u; kx < ROW_KW; kx++) {
                let tap = weights4[(p.f_off + (ky * p.kw + kx) * p.c + ch) / 4u];
                for (var j = 0u; j < 4u; j++) {
                    let t = j + ROW_PHASE + reach - kx * ROW_DW;
                    if (t % ROW_SW == 0u) {
                        acc[j] += tap_product(cols[t / ROW_SW], tap, x0, t / ROW_SW, p.ow);
                    }
                }
            }
        }
        oy -= i32(y.w);
    }
    row_put(acc, ix, p.w, p.out_off + (image_row * p.w + ix) * p.c + ch);
}

@compute @workgroup_size(256)
fn depthwise(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = position(i);
    let ch = pos.ch / p.fc;
    var acc = T(0.0);
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(pos.y * p.sh + ky * p.dh) - i32(p.pad_top);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let ix = i32(pos.x * p.sw + kx * p.dw) - i32(p.pad_left);
            if (ix < 0 || ix >= i32(p.w)) { continue; }
            acc += input_at(pos.b, u32(iy), u32(ix), ch) * weights[p.f_off + ((ky * p.kw + kx) * p.c + ch) * p.fc + pos.ch % p.fc];
        }
    }
    out[p.out_off + i] = acc;
}

// The taps [first, end) of a window of `k` starting at row or column `start` (negative inside the
// padding) that fall inside [0, size). Pooling windows come from attributes, not tensors, and SAME
// padding accepts any size: loops over the taps inside the image cost at most the image.
fn taps_inside(start: i32, k: u32, size: u32) -> vec2<u32> {
    return vec2<u32>(u32(max(-start, 0)), u32(clamp(i32(size) - start, 0, i32(k))));
}

// This pass's rows of `rows` (`tap_passes.wgsl`, Params.pass_rows).
fn pass_rows(rows: vec2<u32>) -> vec2<u32> {
    return pass_rows_of(rows, p.pass_first, p.pass_rows);
}

// Whether this pass runs the window's last taps (the only pass, when the host does not split).
fn last_window_pass() -> bool {
    return runs_last_taps(min(p.kh, p.h), min(p.kw, p.w));
}

// The output rows or columns [first, end) whose pooling window (size k, no dilation) covers input
// row or column `at`.
fn covering_windows(at: u32, k: u32, stride: u32, pad: u32, size: u32) -> vec2<u32> {
    let t = at + pad;
    let first = select(0u, (t - (k - 1u) + stride - 1u) / stride, t + 1u > k);
    return vec2<u32>(first, min(t / stride + 1u, size));
}

// A max pool starts from the lowest finite value and takes greater values only: NaNs are skipped,
// and a window of NaNs and -inf gives the lowest value, as TF-CPU's pools (and TF-GPU's, unless
// TF_ENABLE_MAXPOOL_NANPROP is set) do. Windows past the loop cap run in passes of rows
// (`pass_rows`): a pass after the first resumes from the maximum or the sum left in out, and the
// last one divides the sum by the count of the window's elements inside the image.
fn pool(i: u32, average: bool) -> T {
    let pos = position(i);
    let resumed = !first_window_pass();
    let previous = out[p.out_off + i];
    var best = select(lowest(), previous, resumed);
    var sum = select(T(0.0), previous, resumed);
    let y0 = i32(pos.y * p.sh) - i32(p.pad_top);
    let x0 = i32(pos.x * p.sw) - i32(p.pad_left);
    let rows = taps_inside(y0, p.kh, p.h);
    let columns = taps_inside(x0, p.kw, p.w);
    let ty = pass_rows(rows);
    let tx = pass_columns(columns);
    for (var ky = ty.x; ky < ty.y; ky++) {
        let iy = y0 + i32(ky);
        for (var kx = tx.x; kx < tx.y; kx++) {
            let ix = x0 + i32(kx);
            let v = input_at(pos.b, u32(iy), u32(ix), pos.ch);
            if (v > best && !is_nan(v)) {
                best = v;
            }
            sum += v;
        }
    }
    if (!average) {
        return best;
    }
    return select(sum, sum / T(span(rows) * span(columns)), last_window_pass());
}

@compute @workgroup_size(256)
fn max_pool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i < p.n) {
        out[p.out_off + i] = pool(i, false);
    }
}

@compute @workgroup_size(256)
fn avg_pool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i < p.n) {
        out[p.out_off + i] = pool(i, true);
    }
}

// MaxPool and AvgPool four channels per invocation (as `depthwise_c4`): c a multiple of 4, every
// offset on a vec4; p.n / 4 invocations. The same steps per channel as `pool`.
fn is_nan4(v: vec4<T>) -> vec4<bool> {
    return vec4<bool>(is_nan(v.x), is_nan(v.y), is_nan(v.z), is_nan(v.w));
}

fn pool4(q: u32, average: bool) -> vec4<T> {
    let pos = position(q * 4u);
    let resumed = !first_window_pass();
    let previous = out4[p.out_off / 4u + q];
    var best = select(vec4<T>(lowest()), previous, resumed);
    var sum = select(vec4<T>(), previous, resumed);
    let y0 = i32(pos.y * p.sh) - i32(p.pad_top);
    let x0 = i32(pos.x * p.sw) - i32(p.pad_left);
    let rows = taps_inside(y0, p.kh, p.h);
    let columns = taps_inside(x0, p.kw, p.w);
    let ty = pass_rows(rows);
    let tx = pass_columns(columns);
    for (var ky = ty.x; ky < ty.y; ky++) {
        let row = (pos.b * p.h + u32(y0 + i32(ky))) * p.w;
        for (var kx = tx.x; kx < tx.y; kx++) {
            let v = input4[(p.in_off + (row + u32(x0 + i32(kx))) * p.c + pos.ch) / 4u];
            best = select(best, v, v > best & !is_nan4(v));
            sum += v;
        }
    }
    if (!average) {
        return best;
    }
    return select(sum, sum / T(span(rows) * span(columns)), last_window_pass());
}

@compute @workgroup_size(256)
fn max_pool_c4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = linear_id(gid, nwg);
    if (q < p.n / 4u) {
        out4[p.out_off / 4u + q] = pool4(q, false);
    }
}

@compute @workgroup_size(256)
fn avg_pool_c4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = linear_id(gid, nwg);
    if (q < p.n / 4u) {
        out4[p.out_off / 4u + q] = pool4(q, true);
    }
}

@compute @workgroup_size(256)
fn batch_norm(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let ch = i % p.c;
    let scale = weights[p.f_off + ch];
    let inv = reciprocal_sqrt(variance[p.var_off + ch] + T(p.epsilon));
    out[p.out_off + i] = (input[p.in_off + i] - mean[p.mean_off + ch]) * inv * scale + shift[p.offset_off + ch];
}

// The position of element `i` of an input-shaped tensor.
fn input_position(i: u32) -> Position {
    return split_position(i, p.h, p.w, p.c);
}

// The output row or column that reads input row/column `at` through kernel tap `k`, if any.
fn output_index(at: u32, k: u32, stride: u32, dilation: u32, pad: u32, size: u32) -> i32 {
    let t = i32(at + pad) - i32(k * dilation);
    if (t < 0 || t % i32(stride) != 0 || t / i32(stride) >= i32(size)) {
        return -1;
    }
    return t / i32(stride);
}

fn dy_index(b: u32, oy: u32, ox: u32, o: u32) -> u32 {
    return ((b * p.oh + oy) * p.ow + ox) * p.oc + o;
}

@compute @workgroup_size(256)
fn conv2d_grad_input(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = input_position(i);
    let groups = p.c / p.fc;
    let per_group = p.oc / groups;
    let group = pos.ch / p.fc;
    let ci = pos.ch % p.fc;
    var acc = T(0.0);
    for (var ky = 0u; ky < p.kh; ky++) {
        let oy = output_index(pos.y, ky, p.sh, p.dh, p.pad_top, p.oh);
        if (oy < 0) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let ox = output_index(pos.x, kx, p.sw, p.dw, p.pad_left, p.ow);
            if (ox < 0) { continue; }
            let dy_base = p.in_off + dy_index(pos.b, u32(oy), u32(ox), group * per_group);
            let f_base = p.f_off + ((ky * p.kw + kx) * p.fc + ci) * p.oc + group * per_group;
            for (var o = 0u; o < per_group; o++) {
                acc += input[dy_base + o] * weights[f_base + o];
            }
        }
    }
    out[p.out_off + i] = acc;
}

// Conv2DBackpropInput of a strided convolution (`grad_input_by_columns`): the im2col columns,
// [batch * oh * ow, kh * kw * c] = dy x filter^T (bound as `weights4`), summed back onto the input
// (col2im). Invocation `i` sums input channels 4i..4i+4 of one pixel: the column entry of every
// (output pixel, tap) that reads them (c is a multiple of 4).
@compute @workgroup_size(256)
fn col2im_c4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i * 4u >= p.n) {
        return;
    }
    let pos = input_position(i * 4u);
    let row = p.kh * p.kw * p.c;
    let y = first_tap(pos.y, p.sh, p.dh, p.pad_top);
    let x = first_tap(pos.x, p.sw, p.dw, p.pad_left);
    var acc = vec4<T>();
    // Tap k reads this pixel from output coordinate o; the next tap that does, k + step, from
    // o - step * dilation / stride. Taps whose output lies past the last are skipped.
    var oy = i32(y.y);
    for (var ky = y.x; ky < p.kh && oy >= 0; ky += y.z) {
        if (u32(oy) < p.oh) {
            let base = p.f_off + (pos.b * p.oh + u32(oy)) * p.ow * row + ky * p.kw * p.c + pos.ch;
            var ox = i32(x.y);
            for (var kx = x.x; kx < p.kw && ox >= 0; kx += x.z) {
                if (u32(ox) < p.ow) {
                    acc += weights4[(base + u32(ox) * row + kx * p.c) / 4u];
                }
                ox -= i32(x.w);
            }
        }
        oy -= i32(y.w);
    }
    out4[p.out_off / 4u + i] = acc;
}

// For input coordinate `at` of a window dimension: the first tap that reads it, the output
// coordinate it reads it from, the step to the next such tap and the output step that goes with it
// (the first tap is past the window where none reads it). At dilation 1 the taps that read `at`
// are those congruent to at + pad modulo the stride; in general the step is stride / gcd(stride,
// dilation), found by trying the first `stride` taps.
fn first_tap(at: u32, stride: u32, dilation: u32, pad: u32) -> vec4<u32> {
    let t = at + pad;
    if (dilation == 1u) {
        let q = quot_rem(t, stride);
        return vec4<u32>(q.y, q.x, stride, 1u);
    }
    var g = dilation;
    var r = stride;
    while (r != 0u) {
        let next = g % r;
        g = r;
        r = next;
    }
    let step = stride / g;
    for (var k = 0u; k < step; k++) {
        let reach = k * dilation;
        if (reach > t) {
            break;
        }
        let q = quot_rem(t - reach, stride);
        if (q.y == 0u) {
            return vec4<u32>(k, q.x, step, step * dilation / stride);
        }
    }
    return vec4<u32>(0xffffffffu, 0u, 1u, 0u);
}

// Conv2DBackpropInput's output gradient spread out by the strides, zeros between: the input
// gradient of a strided convolution is then a stride-1 convolution of it (`conv2d_grad_input_as_conv`).
// Here (h, w, c) is the spread shape and (oh, ow, oc) the gradient's.
@compute @workgroup_size(256)
fn spread_by_strides(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = input_position(i);
    var v = T(0.0);
    if (pos.y % p.sh == 0u && pos.x % p.sw == 0u) {
        v = input[p.in_off + dy_index(pos.b, pos.y / p.sh, pos.x / p.sw, pos.ch)];
    }
    out[p.out_off + i] = v;
}

// Filter element `f` of conv2d_grad_filter, as (ky, kx, input channel, output channel).
fn grad_filter_element(f: u32) -> vec4<u32> {
    let tap_channel = quot(f, p.oc);
    let tap = quot(tap_channel, p.fc);
    let o = f - tap_channel * p.oc;
    let ci = tap_channel - tap * p.fc;
    let ky = quot(tap, p.kw);
    let kx = tap - ky * p.kw;
    let groups = p.c / p.fc;
    return vec4<u32>(ky, kx, (o / (p.oc / groups)) * p.fc + ci, o);
}

// An output pixel (batch, row, column), walked in row-major order: a slice of the batch * oh * ow
// pixels splits its first index once and then steps (llvmpipe divides integers lane by lane, and
// splitting every pixel's flat index cost three divisions per product).
struct Pixel {
    b: u32,
    y: u32,
    x: u32,
}

fn pixel_of(q: u32) -> Pixel {
    let row = quot_rem(q, p.ow);
    let image = quot_rem(row.x, p.oh);
    return Pixel(image.x, image.y, row.y);
}

fn next_pixel(px: ptr<function, Pixel>) {
    (*px).x += 1u;
    if ((*px).x == p.ow) {
        (*px).x = 0u;
        (*px).y += 1u;
        if ((*px).y == p.oh) {
            (*px).y = 0u;
            (*px).b += 1u;
        }
    }
}

// The first pixel of quad `q` of four adjacent output pixels, `ow4` quads to a row (the `_rows`
// filter gradients' walk, as `pixel_of` and `next_pixel` walk single pixels).
fn quad_of(q: u32, ow4: u32) -> Pixel {
    let row = quot_rem(q, ow4);
    return Pixel(row.x / p.oh, row.x % p.oh, row.y * 4u);
}

fn next_quad(px: ptr<function, Pixel>) {
    (*px).x += 4u;
    if ((*px).x >= p.ow) {
        (*px).x = 0u;
        (*px).y += 1u;
        if ((*px).y == p.oh) {
            (*px).y = 0u;
            (*px).b += 1u;
        }
    }
}

// The input element filter tap (ky, kx) reads for output pixel `px` in channel `ch`, if any.
fn tap_input(px: Pixel, ky: u32, kx: u32, ch: u32) -> T {
    let iy = i32(px.y * p.sh + ky * p.dh) - i32(p.pad_top);
    let ix = i32(px.x * p.sw + kx * p.dw) - i32(p.pad_left);
    if (iy < 0 || iy >= i32(p.h) || ix < 0 || ix >= i32(p.w)) {
        return 0.0;
    }
    return input_at(px.b, u32(iy), u32(ix), ch);
}

// Conv2DBackpropFilter over slices of the output pixels: invocation (slice s, filter element f)
// sums slice s of the batch * oh * ow pixels into `out[s * p.n + f]`. With one slice that is the
// gradient itself; with more, `out` is a scratch buffer and `conv2d_grad_filter_sum` adds the
// slices. A few filter elements (144 for 3x3x1x16) each summing every pixel would leave all but
// one thread of the device idle.
@compute @workgroup_size(256)
fn conv2d_grad_filter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n * p.slices) {
        return;
    }
    let slice = quot(i, p.n);
    let e = grad_filter_element(i - slice * p.n);
    let first = slice * p.slice_len;
    let last = min(first + p.slice_len, p.batch * p.oh * p.ow);
    var px = pixel_of(first);
    var acc = T(0.0);
    for (var q = first; q < last; q++) {
        acc += tap_input(px, e.x, e.y, e.z) * weights[p.f_off + dy_index(px.b, px.y, px.x, e.w)];
        next_pixel(&px);
    }
    out[p.out_off + i] = acc;
}

// conv2d_grad_filter for four output channels per invocation: the input load is shared by the
// four and dy moves as a vec4 (2 storage accesses per 4 products instead of 8). For ungrouped
// convolutions with oc a multiple of 4 and the dy and output offsets on a vec4; p.n / 4 filter
// element groups per slice.
@compute @workgroup_size(256)
fn conv2d_grad_filter_oc4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    let groups = p.n / 4u;
    if (i >= groups * p.slices) {
        return;
    }
    let slice = quot(i, groups);
    let f = (i - slice * groups) * 4u;
    let e = grad_filter_element(f);
    let first = slice * p.slice_len;
    let last = min(first + p.slice_len, p.batch * p.oh * p.ow);
    var px = pixel_of(first);
    var acc = vec4<T>();
    for (var q = first; q < last; q++) {
        acc += tap_input(px, e.x, e.y, e.z) * weights4[(p.f_off + dy_index(px.b, px.y, px.x, e.w)) / 4u];
        next_pixel(&px);
    }
    out4[(p.out_off + slice * p.n + f) / 4u] = acc;
}

// The sum over slices of conv2d_grad_filter's partials, which are bound as `shift`.
@compute @workgroup_size(256)
fn conv2d_grad_filter_sum(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let f = linear_id(gid, nwg);
    if (f >= p.n) {
        return;
    }
    var acc = T(0.0);
    for (var s = 0u; s < p.slices; s++) {
        acc += shift[p.offset_off + s * p.n + f];
    }
    out[p.out_off + f] = acc;
}

@compute @workgroup_size(256)
fn depthwise_grad_input(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = input_position(i);
    var acc = T(0.0);
    for (var ky = 0u; ky < p.kh; ky++) {
        let oy = output_index(pos.y, ky, p.sh, p.dh, p.pad_top, p.oh);
        if (oy < 0) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let ox = output_index(pos.x, kx, p.sw, p.dw, p.pad_left, p.ow);
            if (ox < 0) { continue; }
            for (var m = 0u; m < p.fc; m++) {
                acc += input[p.in_off + dy_index(pos.b, u32(oy), u32(ox), pos.ch * p.fc + m)]
                    * weights[p.f_off + ((ky * p.kw + kx) * p.c + pos.ch) * p.fc + m];
            }
        }
    }
    out[p.out_off + i] = acc;
}

// DepthwiseConv2dNativeBackpropFilter over slices of the output pixels, as conv2d_grad_filter:
// invocation (slice s, filter element [ky, kx, ch, m]) sums slice s into `out[s * p.n + f]`.
@compute @workgroup_size(256)
fn depthwise_grad_filter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n * p.slices) {
        return;
    }
    let slice = quot(i, p.n);
    let f = i - slice * p.n;
    let m = f % p.fc;
    let ch = (f / p.fc) % p.c;
    let kx = (f / (p.fc * p.c)) % p.kw;
    let ky = f / (p.fc * p.c * p.kw);
    let first = slice * p.slice_len;
    let last = min(first + p.slice_len, p.batch * p.oh * p.ow);
    var px = pixel_of(first);
    var acc = T(0.0);
    for (var q = first; q < last; q++) {
        acc += tap_input(px, ky, kx, ch) * weights[p.f_off + dy_index(px.b, px.y, px.x, ch * p.fc + m)];
        next_pixel(&px);
    }
    out[p.out_off + i] = acc;
}

// depthwise_grad_filter with a channel multiplier of 1, four channels per invocation: input and
// dy move as vec4s (2 storage accesses per 4 products instead of 8). c a multiple of 4, x, dy and
// the output on vec4s; p.n / 4 filter element groups per slice.
@compute @workgroup_size(256)
fn depthwise_grad_filter_c4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    let groups = p.n / 4u;
    if (i >= groups * p.slices) {
        return;
    }
    let slice = quot(i, groups);
    let f = (i - slice * groups) * 4u;
    let ch = f % p.c;
    let tap = f / p.c;
    let kx = tap % p.kw;
    let ky = tap / p.kw;
    let first = slice * p.slice_len;
    let last = min(first + p.slice_len, p.batch * p.oh * p.ow);
    var px = pixel_of(first);
    var acc = vec4<T>();
    for (var q = first; q < last; q++) {
        let iy = i32(px.y * p.sh + ky * p.dh) - i32(p.pad_top);
        let ix = i32(px.x * p.sw + kx * p.dw) - i32(p.pad_left);
        // A tap in the padding reads zero and still multiplies dy (an infinite dy gives NaN there,
        // as in TF-CPU's zero-padded product).
        var x = vec4<T>();
        if (iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
            x = input4[(p.in_off + ((px.b * p.h + u32(iy)) * p.w + u32(ix)) * p.c + ch) / 4u];
        }
        acc += x * weights4[(p.f_off + dy_index(px.b, px.y, px.x, ch)) / 4u];
        next_pixel(&px);
    }
    out4[(p.out_off + slice * p.n + f) / 4u] = acc;
}

// DepthwiseConv2dNativeBackpropFilter with a channel multiplier of 1 over slices of the batch *
// oh * ceil(ow / 4) quads of four adjacent output pixels: invocation (slice s, filter row ky,
// channel quad) sums its taps' products over slice s into `out[s * p.n + f]` (as
// conv2d_grad_filter), loading each quad's input columns once for all ROW_KW taps of the row.
// A tap in the padding multiplies zero by dy (an infinite dy gives NaN there, as in TF-CPU).
@compute @workgroup_size(256)
fn depthwise_grad_filter_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    let c4 = p.c / 4u;
    let per_slice = p.kh * c4;
    if (i >= per_slice * p.slices) {
        return;
    }
    let slice = quot(i, per_slice);
    let r = i - slice * per_slice;
    let ky = r / c4;
    let ch = (r - ky * c4) * 4u;
    let ow4 = (p.ow + 3u) / 4u;
    let first = slice * p.slice_len;
    let last = min(first + p.slice_len, p.batch * p.oh * ow4);
    var px = quad_of(first, ow4);
    var acc: array<vec4<T>, ROW_TAPS_MAX>;
    for (var q = first; q < last; q++) {
        let iy = i32(px.y * p.sh + ky * p.dh) - i32(p.pad_top);
        var cols: array<vec4<T>, ROW_COLUMNS_MAX>;
        let inside = iy >= 0 && iy < i32(p.h);
        let x0 = i32(px.x * ROW_SW) - i32(p.pad_left);
        row_columns(&cols, row_columns_needed(ROW_SW), inside, (px.b * p.h + u32(iy)) * p.w, x0, p.w, ch);
        let dy_at = p.f_off + dy_index(px.b, px.y, px.x, ch);
        for (var j = 0u; j < 4u; j++) {
            if (px.x + j < p.ow) {
                let dy = weights4[(dy_at + j * p.c) / 4u];
                for (var kx = 0u; kx < ROW_KW; kx++) {
                    acc[kx] += cols[j * ROW_SW + kx * ROW_DW] * dy;
                }
            }
        }
        next_quad(&px);
    }
    for (var kx = 0u; kx < ROW_KW; kx++) {
        out4[(p.out_off + slice * p.n + (ky * p.kw + kx) * p.c + ch) / 4u] = acc[kx];
    }
}

// Conv2DBackpropFilter of an image with few channels (a first layer's gray or RGB input) over
// slices of the batch * oh * ceil(ow / 4) quads of four adjacent output pixels, as
// `depthwise_grad_filter_rows`: invocation (slice s, filter row ky, input channel ci, OC_QUADS
// output channel quads) loads each quad's ROW columns of channel ci once for all ROW_KW taps of the row and sums the
// products with dy's four channels into `out[s * p.n + f]`. There the tiled product's k (the
// pixels) is long and its output small, so it ran one dispatch per 384 pixels. Ungrouped, oc a
// multiple of 4, dy and the output on vec4s. A tap in the padding multiplies zero by dy.
// OC_QUADS (1, 2 or 4, dividing oc / 4): each loaded column feeds all of those quads. Its loads
// (`rows_input`, `rows_dy4`) come from conv_loads.wgsl or, on CPU adapters, conv_loads_texels.wgsl.
override OC_QUADS: u32 = 1u;
const OC_QUADS_MAX: u32 = 4u;

@compute @workgroup_size(256)
fn conv2d_grad_filter_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    let blocks = p.oc / (4u * OC_QUADS);
    let per_slice = p.kh * p.c * blocks;
    if (i >= per_slice * p.slices) {
        return;
    }
    let slice = quot(i, per_slice);
    let r = i - slice * per_slice;
    let o = (r % blocks) * 4u * OC_QUADS;
    let row_channel = r / blocks;
    let ci = row_channel % p.c;
    let ky = row_channel / p.c;
    let ow4 = (p.ow + 3u) / 4u;
    let first = slice * p.slice_len;
    let last = min(first + p.slice_len, p.batch * p.oh * ow4);
    var px = quad_of(first, ow4);
    let columns = row_columns_needed(ROW_SW);
    var acc: array<vec4<T>, ROW_TAPS_MAX * OC_QUADS_MAX>;
    for (var q = first; q < last; q++) {
        let iy = i32(px.y * p.sh + ky * p.dh) - i32(p.pad_top);
        let inside = iy >= 0 && iy < i32(p.h);
        let x0 = i32(px.x * ROW_SW) - i32(p.pad_left);
        let row_start = (px.b * p.h + u32(iy)) * p.w;
        var cols: array<T, ROW_COLUMNS_MAX>;
        for (var k = 0u; k < columns; k++) {
            let x = x0 + i32(k);
            var v = T(0.0);
            if (inside && x >= 0 && x < i32(p.w)) {
                v = rows_input(p.in_off + (row_start + u32(x)) * p.c + ci);
            }
            cols[k] = v;
        }
        let dy_at = p.f_off + dy_index(px.b, px.y, px.x, o);
        for (var j = 0u; j < 4u; j++) {
            if (px.x + j < p.ow) {
                for (var u = 0u; u < OC_QUADS; u++) {
                    let dy = rows_dy4((dy_at + j * p.oc) / 4u + u);
                    for (var kx = 0u; kx < ROW_KW; kx++) {
                        acc[u * ROW_TAPS_MAX + kx] += cols[j * ROW_SW + kx * ROW_DW] * dy;
                    }
                }
            }
        }
        next_quad(&px);
    }
    for (var u = 0u; u < OC_QUADS; u++) {
        for (var kx = 0u; kx < ROW_KW; kx++) {
            out4[(p.out_off + slice * p.n + ((ky * p.kw + kx) * p.c + ci) * p.oc + o) / 4u + u] = acc[u * ROW_TAPS_MAX + kx];
        }
    }
}

// The flat input index of the first maximum of output window (b, oy, ox, ch), or -1 if empty; over
// this pass's taps, continuing from the earlier passes' `resume` (-1 on the first).
fn window_argmax(b: u32, oy: u32, ox: u32, ch: u32, resume: i32) -> i32 {
    var best_at = resume;
    var best = input[p.in_off + u32(max(resume, 0))];
    let y0 = i32(oy * p.sh) - i32(p.pad_top);
    let x0 = i32(ox * p.sw) - i32(p.pad_left);
    let ty = pass_rows(taps_inside(y0, p.kh, p.h));
    let tx = pass_columns(taps_inside(x0, p.kw, p.w));
    for (var ky = ty.x; ky < ty.y; ky++) {
        let iy = y0 + i32(ky);
        for (var kx = tx.x; kx < tx.y; kx++) {
            let ix = x0 + i32(kx);
            let v = input_at(b, u32(iy), u32(ix), ch);
            if (best_at < 0 || best < v) {
                best = v;
                best_at = i32(((b * p.h + u32(iy)) * p.w + u32(ix)) * p.c + ch);
            }
        }
    }
    return best_at;
}

// MaxPoolGrad where windows overlap, in two passes: max_pool_grad_argmax stores each window's first
// maximum (its flat index in x, -1 for an empty window) as words in `shift_words`, once per window;
// max_pool_grad_routed then sums, for each input element, the gradients of the covering windows
// whose maximum it is, in the windows' order. Rescanning every covering window for each input element
// instead cost, for 3x3 windows of stride 2, four windows of nine loads each, against nine loads
// per window (a quarter of the elements) plus two per covering window.
@compute @workgroup_size(256)
fn max_pool_grad_argmax(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    // p.n counts input elements; there are oh * ow * oc windows per image.
    if (i >= p.n / (p.h * p.w * p.c) * (p.oh * p.ow * p.oc)) {
        return;
    }
    let pos = position(i);
    let resume = select(-1, bitcast<i32>(shift_words[p.offset_off + i]), !first_window_pass());
    shift_words[p.offset_off + i] = bitcast<u32>(window_argmax(pos.b, pos.y, pos.x, pos.ch, resume));
}

@compute @workgroup_size(256)
fn max_pool_grad_routed(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = input_position(i);
    var acc = T(0.0);
    let wy = pass_rows(covering_windows(pos.y, p.kh, p.sh, p.pad_top, p.oh));
    let wx = pass_columns(covering_windows(pos.x, p.kw, p.sw, p.pad_left, p.ow));
    for (var oy = wy.x; oy < wy.y; oy++) {
        for (var ox = wx.x; ox < wx.y; ox++) {
            let window = dy_index(pos.b, oy, ox, pos.ch);
            if (bitcast<i32>(shift_words[p.offset_off + window]) == i32(i)) {
                acc += weights[p.f_off + window];
            }
        }
    }
    add_pass(p.out_off + i, acc);
}

// MaxPoolGrad where windows do not overlap (strides at least the window): each input element lies
// in at most one window, so one invocation per window writes the window's gradient to its argmax,
// into an output the host has zeroed.
@compute @workgroup_size(256)
fn max_pool_grad_windows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    // p.n counts input elements; there are oh * ow * oc windows per image.
    if (i >= p.n / (p.h * p.w * p.c) * (p.oh * p.ow * p.oc)) {
        return;
    }
    let pos = position(i);
    let at = window_argmax(pos.b, pos.y, pos.x, pos.ch, -1);
    if (at >= 0) {
        out[p.out_off + u32(at)] = weights[p.f_off + i];
    }
}

// The number of non-padding elements of an output window along one dimension.
fn window_extent(o: u32, stride: u32, k: u32, pad: u32, size: u32) -> u32 {
    let taps = taps_inside(i32(o * stride) - i32(pad), k, size);
    return taps.y - min(taps.x, taps.y);
}

@compute @workgroup_size(256)
fn avg_pool_grad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = input_position(i);
    var acc = T(0.0);
    let wy = pass_rows(covering_windows(pos.y, p.kh, p.sh, p.pad_top, p.oh));
    let wx = pass_columns(covering_windows(pos.x, p.kw, p.sw, p.pad_left, p.ow));
    for (var oy = wy.x; oy < wy.y; oy++) {
        for (var ox = wx.x; ox < wx.y; ox++) {
            let count = window_extent(oy, p.sh, p.kh, p.pad_top, p.h) * window_extent(ox, p.sw, p.kw, p.pad_left, p.w);
            acc += input[p.in_off + dy_index(pos.b, oy, ox, pos.ch)] / T(count);
        }
    }
    add_pass(p.out_off + i, acc);
}

@compute @workgroup_size(256)
fn max_pool_argmax(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = position(i);
    // Passes before the last keep the flat index reached so far (-1 before any element).
    let resume = select(-1, bitcast<i32>(shift_words[p.offset_off + 2u * i]), !first_window_pass());
    let reached = window_argmax(pos.b, pos.y, pos.x, pos.ch, resume);
    if (!last_window_pass()) {
        shift_words[p.offset_off + 2u * i] = bitcast<u32>(reached);
        return;
    }
    // SAME and VALID windows always hold an input element.
    let at = u32(max(reached, 0));
    out[p.out_off + i] = input[p.in_off + at];
    let index = select(at - pos.b * p.h * p.w * p.c, at, p.fc == 1u);
    shift_words[p.offset_off + 2u * i] = index;
    shift_words[p.offset_off + 2u * i + 1u] = 0u;
}

@compute @workgroup_size(256)
fn max_pool_grad_grad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let pos = position(i);
    let wanted = shift[p.offset_off + i];
    var value = T(0.0);
    var found = false;
    let y0 = i32(pos.y * p.sh) - i32(p.pad_top);
    let x0 = i32(pos.x * p.sw) - i32(p.pad_left);
    // Passes run the window's rows last to first: a match in an earlier row, found by a later
    // pass, replaces one an earlier pass found.
    let ty = pass_rows(taps_inside(y0, p.kh, p.h));
    let tx = pass_columns(taps_inside(x0, p.kw, p.w));
    for (var ky = ty.x; ky < ty.y && !found; ky++) {
        let iy = u32(y0 + i32(ky));
        for (var kx = tx.x; kx < tx.y && !found; kx++) {
            let ix = u32(x0 + i32(kx));
            if (input_at(pos.b, iy, ix, pos.ch) == wanted) {
                value = weights[p.f_off + ((pos.b * p.h + iy) * p.w + ix) * p.c + pos.ch];
                found = true;
            }
        }
    }
    if (found || last_window_pass()) {
        out[p.out_off + i] = value;
    }
}
