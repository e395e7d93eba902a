// Shared by the broadcasting shaders (prepended to them): element offsets of up to three operands
// for output element `i`, row-major over `shape` (rank <= 8); a stride of 0 repeats a dimension.

// One dimension of `broadcast_offsets`: peels the coordinate off `rem` and adds its offsets.
fn broadcast_step(rem: ptr<function, u32>, at: ptr<function, vec3<u32>>, size: u32, strides: vec3<u32>) {
    let split = quot_rem(*rem, size);
    *at += split.y * strides;
    *rem = split.x;
}

// The rank the pipeline handles (1, 2, 4 or 8; the host pads dimensions past the real rank with
// size 1). A guard on the rank in the parameters would not help: llvmpipe runs both sides of a
// branch under a mask, so every step ran for every element, whatever the rank (a 4M-element
// bias add took 16 ns per element).
override RANK: u32 = 8u;

// Dimensions innermost first, each at a constant index: llvmpipe keeps an array indexed by a
// variable in memory, per lane, which made a same-shape AddV2 about 7x slower.
fn broadcast_offsets(
    i: u32,
    shape: array<vec4<u32>, 2>,
    sa: array<vec4<u32>, 2>,
    sb: array<vec4<u32>, 2>,
    sc: array<vec4<u32>, 2>,
) -> vec3<u32> {
    var rem = i;
    var at = vec3<u32>(0u, 0u, 0u);
    if (RANK > 7u) { broadcast_step(&rem, &at, shape[1].w, vec3<u32>(sa[1].w, sb[1].w, sc[1].w)); }
    if (RANK > 6u) { broadcast_step(&rem, &at, shape[1].z, vec3<u32>(sa[1].z, sb[1].z, sc[1].z)); }
    if (RANK > 5u) { broadcast_step(&rem, &at, shape[1].y, vec3<u32>(sa[1].y, sb[1].y, sc[1].y)); }
    if (RANK > 4u) { broadcast_step(&rem, &at, shape[1].x, vec3<u32>(sa[1].x, sb[1].x, sc[1].x)); }
    if (RANK > 3u) { broadcast_step(&rem, &at, shape[0].w, vec3<u32>(sa[0].w, sb[0].w, sc[0].w)); }
    if (RANK > 2u) { broadcast_step(&rem, &at, shape[0].z, vec3<u32>(sa[0].z, sb[0].z, sc[0].z)); }
    if (RANK > 1u) { broadcast_step(&rem, &at, shape[0].y, vec3<u32>(sa[0].y, sb[0].y, sc[0].y)); }
    if (RANK > 0u) { broadcast_step(&rem, &at, shape[0].x, vec3<u32>(sa[0].x, sb[0].x, sc[0].x)); }
    return at;
}

fn is_nan_f32(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn read_byte(word: u32, byte_index: u32) -> u32 {
    return (word >> ((byte_index & 3u) * 8u)) & 0xffu;
}
