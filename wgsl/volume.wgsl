// 3-D windows over NDHWC tensors, one invocation per element written:
//   columns: rows [row_begin, row_begin + n / taps) of a 3-D convolution's column matrix
//     [batch * od * oh * ow, kd * kh * kw * c]; the input is read as if dilated by `lhs_*` (its
//     elements that far apart: the input gradient's transposed convolution), and taps outside it
//     read 0
//   max_pool, avg_pool: each window's maximum (NaN propagates) or mean over its taps inside the input
//   max_pool_grad: per input element, the gradient (`aux`) of each covering window whose maximum
//     (`aux2`, orig_output) lies within 1e-5 of it, as TF-CPU's MaxPool3DGrad routes it (ties all
//     receive it)
//   avg_pool_grad: per input element, each covering window's gradient (`input`) times 1 / its
//     count of taps inside the input
//   max_pool_grad_grad: per output element, `aux` (shaped like the input) at the window's first
//     element equal to its maximum (`aux2`), 0 where none is
// Elements are `T`, from the prelude before this file: `element_f32.wgsl`, or `element_f64.wgsl`
// for float64 convolutions (TF defines no float64 3-D pools).

struct Params {
    n: u32,
    batch: u32,
    c: u32,
    row_begin: u32,
    d: u32,
    h: u32,
    w: u32,
    in_off: u32,
    od: u32,
    oh: u32,
    ow: u32,
    out_off: u32,
    kd: u32,
    kh: u32,
    kw: u32,
    aux_off: u32,
    sd: u32,
    sh: u32,
    sw: u32,
    aux2_off: u32,
    dd: u32,
    dh: u32,
    dw: u32,
    // Window entries past llvmpipe's loop cap: the host's passes over the lines (z, y) of a window
    // inside the input, or of the windows covering an element (`tap_passes.wgsl`), pass_rows lines
    // from pass_first (and of each line pass_columns from pass_first_column, after lhs_w); 0: all
    // of them.
    pass_first: u32,
    pd: i32,
    ph: i32,
    pw: i32,
    pass_rows: u32,
    lhs_d: u32,
    lhs_h: u32,
    lhs_w: u32,
    pass_first_column: u32,
    pass_columns: u32,
}

@group(0) @binding(0) var<storage, read_write> input: array<T>;
@group(0) @binding(1) var<storage, read_write> out: array<T>;
@group(0) @binding(2) var<storage, read_write> aux: array<T>;
@group(0) @binding(3) var<storage, read_write> aux2: array<T>;
@group(0) @binding(4) var<uniform> p: Params;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

struct Spot {
    b: u32,
    z: u32,
    y: u32,
    x: u32,
    ch: u32,
}

// The (batch, z, y, x, channel) of element `i` of a [batch, d, h, w, c] tensor.
fn split(i: u32, d: u32, h: u32, w: u32, c: u32) -> Spot {
    var r = i;
    let ch = r % c;
    r = r / c;
    let x = r % w;
    r = r / w;
    let y = r % h;
    r = r / h;
    return Spot(r / d, r % d, y, x, ch);
}

fn input_index(b: u32, z: u32, y: u32, x: u32, ch: u32) -> u32 {
    return (((b * p.d + z) * p.h + y) * p.w + x) * p.c + ch;
}

fn output_index(b: u32, z: u32, y: u32, x: u32, ch: u32) -> u32 {
    return (((b * p.od + z) * p.oh + y) * p.ow + x) * p.c + ch;
}

// The input coordinate output `o` reads through tap `k` along one axis, or -1 outside the input
// (or between the elements of an input dilated by `lhs`).
fn tap(o: u32, k: u32, stride: u32, dilation: u32, pad: i32, lhs: u32, size: u32) -> i32 {
    let t = i32(o * stride + k * dilation) - pad;
    if (t < 0 || u32(t) % lhs != 0u || u32(t) / lhs >= size) {
        return -1;
    }
    return i32(u32(t) / lhs);
}

@compute @workgroup_size(256)
fn columns(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let taps = p.kd * p.kh * p.kw * p.c;
    let o = split(p.row_begin + i / taps, p.od, p.oh, p.ow, 1u);
    let k = split(i % taps, p.kd, p.kh, p.kw, p.c);
    let z = tap(o.z, k.z, p.sd, p.dd, p.pd, p.lhs_d, p.d);
    let y = tap(o.y, k.y, p.sh, p.dh, p.ph, p.lhs_h, p.h);
    let x = tap(o.x, k.x, p.sw, p.dw, p.pw, p.lhs_w, p.w);
    var v = T(0.0);
    if (z >= 0 && y >= 0 && x >= 0) {
        v = input[p.in_off + input_index(o.b, u32(z), u32(y), u32(x), k.ch)];
    }
    out[p.out_off + i] = v;
}

// The input coordinates [begin, end) of output `o`'s window along one axis.
fn window_range(o: u32, k: u32, stride: u32, pad: i32, size: u32) -> vec2<u32> {
    let start = i32(o * stride) - pad;
    return vec2<u32>(u32(max(start, 0)), u32(clamp(start + i32(k), 0, i32(size))));
}

// The outputs [first, end) whose windows cover input coordinate `t` along one axis.
fn covering(t: u32, k: u32, stride: u32, pad: i32, size: u32) -> vec2<u32> {
    let u = i32(t) + pad;
    let first = max(u - i32(k) + i32(stride), 0) / i32(stride);
    let end = clamp(u / i32(stride) + 1, 0, i32(size));
    return vec2<u32>(u32(first), u32(max(end, first)));
}

fn window_count(s: Spot) -> u32 {
    let rz = window_range(s.z, p.kd, p.sd, p.pd, p.d);
    let ry = window_range(s.y, p.kh, p.sh, p.ph, p.h);
    let rx = window_range(s.x, p.kw, p.sw, p.pw, p.w);
    return (rz.y - min(rz.x, rz.y)) * (ry.y - min(ry.x, ry.y)) * (rx.y - min(rx.x, rx.y));
}

// Windows past the loop cap run in passes of lines (z, y) (`pass_lines`): a pass after the first
// resumes from the maximum or the sum left in out, and the last one divides the sum by the count.
fn pool(i: u32, average: bool) -> T {
    let s = split(i, p.od, p.oh, p.ow, p.c);
    let rz = window_range(s.z, p.kd, p.sd, p.pd, p.d);
    let ry = window_range(s.y, p.kh, p.sh, p.ph, p.h);
    let rx = window_range(s.x, p.kw, p.sw, p.pw, p.w);
    let resumed = !first_window_pass();
    let previous = out[p.out_off + i];
    var best = select(negative_infinity(), previous, resumed);
    var sum = select(T(0.0), previous, resumed);
    let ny = span(ry);
    let lines = pass_lines(rz, ry);
    let xs = pass_columns(rx);
    for (var line = lines.x; line < lines.y; line++) {
        let z = rz.x + line / ny;
        let y = ry.x + line % ny;
        for (var x = xs.x; x < xs.y; x++) {
            let v = input[p.in_off + input_index(s.b, z, y, x, s.ch)];
            if (is_nan(v)) {
                best = v;
            } else if (!is_nan(best)) {
                best = max(best, v);
            }
            sum += v;
        }
    }
    if (!average) {
        return best;
    }
    let last = runs_last_taps(min(p.kd, p.d) * min(p.kh, p.h), min(p.kw, p.w));
    return select(sum, sum / T(window_count(s)), last);
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

@compute @workgroup_size(256)
fn max_pool_grad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let s = split(i, p.d, p.h, p.w, p.c);
    let v = input[p.in_off + i];
    let cz = covering(s.z, p.kd, p.sd, p.pd, p.od);
    let cy = covering(s.y, p.kh, p.sh, p.ph, p.oh);
    let cx = covering(s.x, p.kw, p.sw, p.pw, p.ow);
    var acc = T(0.0);
    // Lines (z, y) of covering windows, in passes.
    let ny = span(cy);
    let lines = pass_lines(cz, cy);
    let xs = pass_columns(cx);
    for (var line = lines.x; line < lines.y; line++) {
        let z = cz.x + line / ny;
        let y = cy.x + line % ny;
        for (var x = xs.x; x < xs.y; x++) {
            let o = output_index(s.b, z, y, x, s.ch);
            if (abs(v - aux2[p.aux2_off + o]) < 1e-5) {
                acc += aux[p.aux_off + o];
            }
        }
    }
    add_pass(p.out_off + i, acc);
}

// This pass's lines (z, y) of a grid of the ranges `zs` by `ys`, counted from its first line
// (`tap_passes.wgsl`).
fn pass_lines(zs: vec2<u32>, ys: vec2<u32>) -> vec2<u32> {
    return pass_rows_of(vec2<u32>(0u, span(zs) * span(ys)), p.pass_first, p.pass_rows);
}

@compute @workgroup_size(256)
fn avg_pool_grad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let s = split(i, p.d, p.h, p.w, p.c);
    let cz = covering(s.z, p.kd, p.sd, p.pd, p.od);
    let cy = covering(s.y, p.kh, p.sh, p.ph, p.oh);
    let cx = covering(s.x, p.kw, p.sw, p.pw, p.ow);
    var acc = T(0.0);
    // Lines (z, y) of covering windows, in passes.
    let ny = span(cy);
    let lines = pass_lines(cz, cy);
    let xs = pass_columns(cx);
    for (var line = lines.x; line < lines.y; line++) {
        let z = cz.x + line / ny;
        let y = cy.x + line % ny;
        for (var x = xs.x; x < xs.y; x++) {
            let count = window_count(Spot(s.b, z, y, x, s.ch));
            acc += input[p.in_off + output_index(s.b, z, y, x, s.ch)] * (1.0 / T(count));
        }
    }
    add_pass(p.out_off + i, acc);
}

@compute @workgroup_size(256)
fn max_pool_grad_grad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let s = split(i, p.od, p.oh, p.ow, p.c);
    let rz = window_range(s.z, p.kd, p.sd, p.pd, p.d);
    let ry = window_range(s.y, p.kh, p.sh, p.ph, p.h);
    let rx = window_range(s.x, p.kw, p.sw, p.pw, p.w);
    let wanted = aux2[p.aux2_off + i];
    var value = T(0.0);
    var found = false;
    // The window's lines (z, y) in order; passes run them last to first, so that a match in an
    // earlier line, found by a later pass, replaces one an earlier pass found.
    let ny = span(ry);
    let lines = pass_lines(rz, ry);
    let xs = pass_columns(rx);
    for (var line = lines.x; line < lines.y && !found; line++) {
        let z = rz.x + line / ny;
        let y = ry.x + line % ny;
        for (var x = xs.x; x < xs.y && !found; x++) {
            let at = input_index(s.b, z, y, x, s.ch);
            if (input[p.in_off + at] == wanted) {
                value = aux[p.aux_off + at];
                found = true;
            }
        }
    }
    // The first pass to run (the window's last lines) writes every element.
    if (found || runs_last_taps(min(p.kd, p.d) * min(p.kh, p.h), min(p.kw, p.w))) {
        out[p.out_off + i] = value;
    }
}
