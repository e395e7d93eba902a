// Cast between 32-bit types. `S` and `D` are aliased per (SrcT, DstT). WGSL converts float to int by
// truncating toward zero and saturating, as TF's GPU Cast does for in-range values.

struct Params {
    n: u32,
    in_off: u32,
    out_off: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> input: array<S>;
@group(0) @binding(1) var<storage, read_write> out: array<D>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= p.n) {
        return;
    }
    out[p.out_off + i] = D(input[p.in_off + i]);
}
