// Batch offsets shared by matmul.wgsl and matmul_gpu.wgsl (prepended to each): their `Params`
// both carry `a_off`, `b_off`, `batch_rank`, `batch_shape` and the operands' batch strides (0
// where an operand broadcasts), along the output batch dims, innermost last.

// A's and B's element offsets of output batch `z`.
fn batch_bases(z: u32) -> vec2<u32> {
    var rem = z;
    var bases = vec2<u32>(p.a_off, p.b_off);
    for (var d = p.batch_rank; d > 0u; d--) {
        let k = d - 1u;
        let coord = rem % p.batch_shape[k];
        rem = rem / p.batch_shape[k];
        bases += coord * vec2<u32>(p.a_batch_stride[k], p.b_batch_stride[k]);
    }
    return bases;
}
