// Chunked stream compaction, shared by compact.wgsl (Where) and unique.wgsl (Unique, ListDiff),
// which come first and declare `p.n` (elements of the pass), `p.chunks` (chunks in all), `kept(i)`
// (whether element i of the pass is kept), `chunk_base()` (the pass's first chunk) and
// `load_count(c)` / `store_count(c, v)` (chunk counts, c from the first chunk of all).
//   count_chunks: workgroup c counts the kept elements of chunk c into count chunk_base() + c.
//   scan_counts: one workgroup turns counts 0..chunks into exclusive offsets and writes their
//     total at count `chunks`.
// `chunk_rank` gives a writing pass each thread's rank within its chunk.

const WG: u32 = 256u;
const PER_THREAD: u32 = 4u;
const CHUNK: u32 = 1024u;

var<workgroup> partial: array<u32, WG>;

// Thread t's elements are PER_THREAD consecutive ones, so threads in order cover the chunk in order.
fn thread_count(chunk: u32, t: u32) -> u32 {
    var c = 0u;
    for (var k = 0u; k < PER_THREAD; k++) {
        let i = chunk * CHUNK + t * PER_THREAD + k;
        if (i < p.n && kept(i)) {
            c += 1u;
        }
    }
    return c;
}

// Inclusive prefix sums of `partial` across the workgroup (Hillis-Steele).
fn scan_partial(t: u32) {
    for (var s = 1u; s < WG; s <<= 1u) {
        var add = 0u;
        if (t >= s) {
            add = partial[t - s];
        }
        workgroupBarrier();
        partial[t] += add;
        workgroupBarrier();
    }
}

// The number of kept elements in chunk `chunk` before thread t's first (every thread of the
// workgroup calls it: it holds barriers).
fn chunk_rank(chunk: u32, t: u32) -> u32 {
    let mine = thread_count(chunk, t);
    partial[t] = mine;
    workgroupBarrier();
    scan_partial(t);
    return partial[t] - mine;
}

@compute @workgroup_size(256)
fn count_chunks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let chunk = wid.x + wid.y * nwg.x;
    partial[t] = thread_count(chunk, t);
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            partial[t] += partial[t + s];
        }
        workgroupBarrier();
    }
    if (t == 0u && chunk * CHUNK < p.n) {
        store_count(chunk_base() + chunk, partial[0]);
    }
}

@compute @workgroup_size(256)
fn scan_counts(@builtin(local_invocation_index) t: u32) {
    let per = (p.chunks + WG - 1u) / WG;
    let lo = min(t * per, p.chunks);
    let hi = min(lo + per, p.chunks);
    var sum = 0u;
    for (var c = lo; c < hi; c++) {
        sum += load_count(c);
    }
    partial[t] = sum;
    workgroupBarrier();
    scan_partial(t);
    var run = partial[t] - sum;
    for (var c = lo; c < hi; c++) {
        let v = load_count(c);
        store_count(c, run);
        run += v;
    }
    if (t == WG - 1u) {
        store_count(p.chunks, partial[WG - 1u]);
    }
}
