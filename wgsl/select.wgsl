// Select/SelectV2 with broadcasting (`broadcast.wgsl` is prepended): out = cond ? t : e, for any
// element type made of whole u32 words (`WORDS` per element; `main_packed` below for 1- and 2-byte
// elements). `cond` is packed bool bytes.

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

// Elements of BYTES (1 or 2) bytes: each invocation writes one output word of them, keeping the
// bytes of a last word past the tensor. Offsets are in bytes.
override BYTES: u32 = 1u;

@compute @workgroup_size(256)
fn main_packed(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = gid.x + gid.y * nwg.x * 256u;
    let per = 4u / BYTES;
    if (w * per >= p.n) {
        return;
    }
    let bits = BYTES * 8u;
    let mask = (1u << (bits & 31u)) - 1u;
    var word = 0u;
    var written = 0u;
    for (var k = 0u; k < per; k++) {
        let i = w * per + k;
        if (i < p.n) {
            let at = broadcast_offsets(i, p.shape, p.cond_strides, p.t_strides, p.e_strides);
            let c = read_byte(cond[(p.cond_byte + at.x) >> 2u], p.cond_byte + at.x) != 0u;
            let tb = p.t_off + at.y * BYTES;
            let eb = p.e_off + at.z * BYTES;
            let v = select(e[eb >> 2u] >> ((eb & 3u) * 8u), t[tb >> 2u] >> ((tb & 3u) * 8u), c) & mask;
            word |= v << ((k * bits) & 31u);
            written |= mask << ((k * bits) & 31u);
        }
    }
    let at = p.out_off / 4u + w;
    out[at] = (out[at] & ~written) | word;
}
