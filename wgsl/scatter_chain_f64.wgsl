// scatter_chain.wgsl's element type for float64 (needs SHADER_F64). Min and Max take the update
// only where it compares smaller or larger, as TF-CPU's cwiseMin/cwiseMax(old, v) do.

alias V = f64;

fn chain_combine(old: V, v: V) -> V {
    switch p.combine {
        case COMBINE_SUB: { return old - v; }
        case COMBINE_MUL: { return old * v; }
        case COMBINE_DIV: { return old / v; }
        case COMBINE_MIN: { return select(old, v, v < old); }
        case COMBINE_MAX: { return select(old, v, old < v); }
        default: { return old + v; }
    }
}
