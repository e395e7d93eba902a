// Byte-granular copies and fills for the StreamExecutor (memcpy, memset, memset32 at any offset and
// size). Buffers are viewed as u32 words; each invocation owns one destination word and rewrites
// only the bytes of it that fall inside the destination range, so neighbouring bytes stay intact.

struct Params {
    // Byte offset of the source range inside the `src` window (copy) / unused (fill).
    src_byte: u32,
    // Byte offset of the destination range inside the `dst` window.
    dst_byte: u32,
    // Number of bytes to write.
    len: u32,
    // Fill pattern: byte k of the range gets byte (k % 4) of this word (little-endian).
    pattern: u32,
}

@group(0) @binding(0) var<storage, read_write> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

fn word_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn src_byte_at(i: u32) -> u32 {
    return (src[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn words_touched() -> u32 {
    return (p.dst_byte + p.len + 3u) / 4u - p.dst_byte / 4u;
}

@compute @workgroup_size(256)
fn copy_bytes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = word_index(gid, nwg);
    if (k >= words_touched()) {
        return;
    }
    let word = p.dst_byte / 4u + k;
    var value = dst[word];
    for (var b = 0u; b < 4u; b++) {
        let addr = word * 4u + b;
        if (addr >= p.dst_byte && addr < p.dst_byte + p.len) {
            let byte = src_byte_at(p.src_byte + (addr - p.dst_byte));
            value = (value & ~(0xffu << (b * 8u))) | (byte << (b * 8u));
        }
    }
    dst[word] = value;
}

@compute @workgroup_size(256)
fn fill_bytes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = word_index(gid, nwg);
    if (k >= words_touched()) {
        return;
    }
    let word = p.dst_byte / 4u + k;
    var value = dst[word];
    for (var b = 0u; b < 4u; b++) {
        let addr = word * 4u + b;
        if (addr >= p.dst_byte && addr < p.dst_byte + p.len) {
            let byte = (p.pattern >> (((addr - p.dst_byte) & 3u) * 8u)) & 0xffu;
            value = (value & ~(0xffu << (b * 8u))) | (byte << (b * 8u));
        }
    }
    dst[word] = value;
}
