// scatter_chain.wgsl's element type for 8-byte integers: (low word, high word), int64.wgsl's
// arithmetic with its SIGNED.

alias V = vec2<u32>;

fn chain_combine(old: V, v: V) -> V {
    return combined_int(old, v);
}
