// The loads of `conv2d_grad_filter_rows` (conv.wgsl) from textures, copies of the input from
// element `p.in_off` and of dy from vec4 `p.f_off / 4`, 4096 texels a row, for f32 on CPU adapters:
// llvmpipe fetches texels as vectors where it loads storage lane by lane. They bind after the
// parameter block (`conv::TEXELS_SHADER`).
@group(0) @binding(7) var input_texels: texture_2d<u32>;
@group(0) @binding(8) var dy_texels: texture_2d<u32>;

fn texel_coord(t: u32) -> vec2<u32> {
    return vec2<u32>(t & 4095u, t >> 12u);
}

fn rows_input(at: u32) -> T {
    let e = at - p.in_off;
    return bitcast<f32>(textureLoad(input_texels, texel_coord(e >> 2u), 0)[e & 3u]);
}

fn rows_dy4(at: u32) -> vec4<T> {
    return bitcast<vec4<f32>>(textureLoad(dy_texels, texel_coord(at - p.f_off / 4u), 0));
}
