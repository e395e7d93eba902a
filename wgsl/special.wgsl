// Elementwise special functions (`special_math.wgsl` after `math.wgsl`, or for float64
// `special_math_f64.wgsl` after `math_f64.wgsl`; then `quot.wgsl` and `broadcast.wgsl` are
// prepended), with NumPy broadcasting for the two-operand ones; `T` is the storage type, `M` the
// type of the math (f32, or f64 for float64), whose library defines the `math_*` functions. One
// entry point per function rather than an `OP` switch: a driver inlines every function an entry
// point reaches before it folds the switch, and these functions' loops would make each pipeline
// slow to compile.

struct Params {
    n: u32,
    rank: u32,
    a_off: u32,
    b_off: u32,
    out_off: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    shape: array<vec4<u32>, 2>,
    a_strides: array<vec4<u32>, 2>,
    b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> a: array<T>;
@group(0) @binding(1) var<storage, read_write> b: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;
@group(0) @binding(3) var<uniform> p: Params;

// Output element i's index, or p.n past the end.
fn element(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return min(gid.x + gid.y * nwg.x * 256u, p.n);
}

// Element i's operands (the one-operand functions read `a` twice), subnormals as zero (TF's DAZ).
fn operands(i: u32) -> vec2<M> {
    let at = broadcast_offsets(i, p.shape, p.a_strides, p.b_strides, p.b_strides);
    return vec2<M>(math_flush(M(a[p.a_off + at.x])), math_flush(M(b[p.b_off + at.y])));
}

@compute @workgroup_size(256)
fn ndtri(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_ndtri(x));
    }
}

@compute @workgroup_size(256)
fn erfinv(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_erfinv(x));
    }
}

@compute @workgroup_size(256)
fn bessel_i0(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_i0(x));
    }
}

@compute @workgroup_size(256)
fn bessel_i0e(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_i0e(x));
    }
}

@compute @workgroup_size(256)
fn bessel_i1(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_i1(x));
    }
}

@compute @workgroup_size(256)
fn bessel_i1e(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_i1e(x));
    }
}

@compute @workgroup_size(256)
fn bessel_k0(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_k0(x));
    }
}

@compute @workgroup_size(256)
fn bessel_k0e(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_k0e(x));
    }
}

@compute @workgroup_size(256)
fn bessel_k1(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_k1(x));
    }
}

@compute @workgroup_size(256)
fn bessel_k1e(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_k1e(x));
    }
}

@compute @workgroup_size(256)
fn bessel_j0(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_j0(x));
    }
}

@compute @workgroup_size(256)
fn bessel_j1(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_j1(x));
    }
}

@compute @workgroup_size(256)
fn bessel_y0(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_y0(x));
    }
}

@compute @workgroup_size(256)
fn bessel_y1(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_bessel_y1(x));
    }
}

@compute @workgroup_size(256)
fn igamma(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_igamma(x, y, MATH_IGAMMA_VALUE));
    }
}

@compute @workgroup_size(256)
fn igammac(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_igammac(x, y));
    }
}

@compute @workgroup_size(256)
fn igamma_grad_a(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_igamma(x, y, MATH_IGAMMA_DERIVATIVE));
    }
}

@compute @workgroup_size(256)
fn random_gamma_grad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_igamma(x, y, MATH_IGAMMA_SAMPLE_DERIVATIVE));
    }
}

@compute @workgroup_size(256)
fn zeta(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_zeta(x, y));
    }
}

@compute @workgroup_size(256)
fn polygamma(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        let v = operands(i);
        let x = v.x;
        let y = v.y;
        out[p.out_off + i] = T(math_polygamma(x, y));
    }
}

@compute @workgroup_size(256)
fn dawsn(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        out[p.out_off + i] = T(math_dawsn(operands(i).x));
    }
}

@compute @workgroup_size(256)
fn expint(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        out[p.out_off + i] = T(math_expint(operands(i).x));
    }
}

@compute @workgroup_size(256)
fn fresnel_cos(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        out[p.out_off + i] = T(math_fresnel_cos(operands(i).x));
    }
}

@compute @workgroup_size(256)
fn fresnel_sin(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        out[p.out_off + i] = T(math_fresnel_sin(operands(i).x));
    }
}

@compute @workgroup_size(256)
fn spence(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element(gid, nwg);
    if (i < p.n) {
        out[p.out_off + i] = T(math_spence(operands(i).x));
    }
}
