// Shared by the shaders that split flat indices into coordinates (prepended to them).

// Whether every dividend is below 2^23 (the host checks), so `quot` may divide through f32.
// The host sets it per pipeline; false is always correct.
override FAST_DIV: bool = false;

// x / d and x % d (d > 0). llvmpipe has no vector integer division and divides lane by lane, which
// made the index math of packers, reductions and broadcasts cost more than their loads. The f32
// quotient of two exact f32s below 2^23 is within 2 of the true one (WGSL allows 2.5 ulp), and the
// steps below correct it through the remainder: one multiplication, then adds and compares (each
// `q * d` of a correction cost a 10-cycle multiply in a chain llvmpipe cannot overlap).
fn quot_rem(x: u32, d: u32) -> vec2<u32> {
    if (!FAST_DIV) {
        let q = x / d;
        return vec2<u32>(q, x - q * d);
    }
    let di = i32(d);
    var q = i32(f32(x) / f32(d));
    var r = i32(x) - q * di;
    q = select(q, q - 1, r < 0);
    r = select(r, r + di, r < 0);
    q = select(q, q - 1, r < 0);
    r = select(r, r + di, r < 0);
    q = select(q, q + 1, r >= di);
    r = select(r, r - di, r >= di);
    q = select(q, q + 1, r >= di);
    r = select(r, r - di, r >= di);
    return vec2<u32>(u32(q), u32(r));
}

fn quot(x: u32, d: u32) -> u32 {
    return quot_rem(x, d).x;
}

// x % d, through `quot_rem`.
fn rem(x: u32, d: u32) -> u32 {
    return quot_rem(x, d).y;
}
