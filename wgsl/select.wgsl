// Select/SelectV2 with broadcasting (`broadcast.wgsl` is prepended): out = cond ? t : e, for any
// element type made of whole u32 words (`WORDS` per element). `cond` is packed bool bytes.

override WORDS: u32 = 1u;

struct Params {
    n: u32,
    rank: u32,
    cond_byte: u32,
    t_off: u32,
    e_off: u32,
    out_off: u32,
    _pad0: u32,
    _pad1: u32,
    shape: array<vec4<u32>, 2>,
    cond_strides: array<vec4<u32>, 2>,
    t_strides: array<vec4<u32>, 2>,
    e_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read_write> cond: array<u32>;
@group(0) @binding(1) var<storage, read_write> t: array<u32>;
@group(0) @binding(2) var<storage, read_write> e: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let word = gid.x + gid.y * nwg.x * 256u;
    if (word >= p.n * WORDS) {
        return;
    }
    let i = word / WORDS;
    let part = word % WORDS;
    let at = broadcast_offsets(i, p.shape, p.cond_strides, p.t_strides, p.e_strides);
    let c = read_byte(cond[(p.cond_byte + at.x) >> 2u], p.cond_byte + at.x) != 0u;
    let from_t = t[p.t_off + at.y * WORDS + part];
    let from_e = e[p.e_off + at.z * WORDS + part];
    out[p.out_off + word] = select(from_e, from_t, c);
}
