// Shared by the broadcasting shaders (prepended to them): element offsets of up to three operands
// for output element `i`, row-major over `shape` (rank <= 8); a stride of 0 repeats a dimension.

fn broadcast_offsets(
    i: u32,
    rank: u32,
    shape: array<vec4<u32>, 2>,
    sa: array<vec4<u32>, 2>,
    sb: array<vec4<u32>, 2>,
    sc: array<vec4<u32>, 2>,
) -> vec3<u32> {
    var rem = i;
    var at = vec3<u32>(0u, 0u, 0u);
    for (var d = rank; d > 0u; d--) {
        let k = d - 1u;
        let size = shape[k / 4u][k % 4u];
        let coord = rem % size;
        rem = rem / size;
        at += coord * vec3<u32>(sa[k / 4u][k % 4u], sb[k / 4u][k % 4u], sc[k / 4u][k % 4u]);
    }
    return at;
}

fn is_nan_f32(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn read_byte(word: u32, byte_index: u32) -> u32 {
    return (word >> ((byte_index & 3u) * 8u)) & 0xffu;
}
