// Shared by the shaders that split flat indices into coordinates (prepended to them).

// Whether every dividend is below 2^23 (the host checks), so `quot` may divide through f32.
// The host sets it per pipeline; false is always correct.
override FAST_DIV: bool = false;

// x / d (d > 0). llvmpipe has no vector integer division and divides lane by lane, which made the
// index math of packers, reductions and broadcasts cost more than their loads. The f32 quotient of
// two exact f32s below 2^23 is within 2 of the true one (WGSL allows 2.5 ulp), and the steps below
// correct it.
fn quot(x: u32, d: u32) -> u32 {
    if (!FAST_DIV) {
        return x / d;
    }
    var q = u32(max(f32(x) / f32(d), 0.0));
    q = select(q, q - 1u, q * d > x);
    q = select(q, q - 1u, q * d > x);
    q = select(q, q + 1u, x >= q * d + d);
    q = select(q, q + 1u, x >= q * d + d);
    return q;
}

// x % d, through `quot`.
fn rem(x: u32, d: u32) -> u32 {
    return x - quot(x, d) * d;
}

