// Unique, UniqueWithCounts and ListDiff by hashing on the device; only the number of results goes
// back to the host. Elements are compared by their key: their bits (zero-extended to 64), float32
// and float64 zeros of either sign and subnormals as one key, and NaN never equal to anything (never inserted,
// never found). The hash table (open addressing, linear probing, load at most one half) holds
// element indices into `keys`; a table too large for one binding is split into parts by the top
// bits of the hash, one launch of `insert`, `resolve` and `lookup` per part.
//   insert: claims or finds each `src` element's slot; the slot keeps the lowest index of its key
//     (atomicMin), and `record` notes the slot in slots[i].
//   resolve (Unique): slots[i] = the index of the first occurrence of element i's key.
//   lookup (ListDiff): slots[i] = i where x[i] is not in the table (kept), EMPTY where it is.
//   count_chunks, scan_counts (`chunk_scan.wgsl`, which follows): as Where's, over the selected
//     elements (slots[i] == i): the first occurrences (Unique) or the kept elements (ListDiff); the
//     total at counts[chunks].
//   write_selected: each selected element's bits at its rank; Unique: idx[i] = rank; ListDiff:
//     idx[rank] = i.
//   write_rest (Unique): idx[i] = idx[first occurrence]; counts of each unique value.
// A probe longer than `probe_limit` (llvmpipe ends long loops early) sets counts[chunks + 1]; the
// host then tries again with another seed.

const EMPTY: u32 = 0xffffffffu;

struct Params {
    // Elements of `src`.
    n: u32,
    // Byte offsets of the first element of `src` and of `keys` inside their bindings.
    src_byte: u32,
    keys_byte: u32,
    // 1, 2, 4 or 8.
    elem_bytes: u32,
    // 0: integers and bool (bits); 1: float16; 2: bfloat16; 3: float32; 4: float64.
    kind: u32,
    seed: u32,
    // Word offset of this part's table and its slots less one (a power of two less one).
    table_off: u32,
    table_mask: u32,
    parts: u32,
    part: u32,
    // 32 - log2(parts), for parts > 1.
    part_shift: u32,
    probe_limit: u32,
    // insert: 1 to note each element's slot in `slots` (Unique).
    record: u32,
    // write_selected: 0 Unique, 1 ListDiff.
    mode: u32,
    chunks: u32,
    // 1 for int64 indices and counts (low word, then a zero high word).
    idx_wide: u32,
    // write_rest: 1 to count each unique value's occurrences.
    with_count: u32,
    // Word offsets inside their bindings.
    slots_off: u32,
    counts_off: u32,
    out_off: u32,
    idx_off: u32,
    count_off: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> table: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> slots: array<u32>;
@group(0) @binding(4) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> idx: array<u32>;
@group(0) @binding(7) var<storage, read_write> count: array<atomic<u32>>;
@group(0) @binding(8) var<uniform> p: Params;


// The element at byte `start` whose word is `word` (and, for 8 bytes, `high` the next one).
fn element_bits(start: u32, word: u32, high: u32) -> vec2<u32> {
    if (p.elem_bytes == 8u) {
        return vec2<u32>(word, high);
    }
    if (p.elem_bytes == 4u) {
        return vec2<u32>(word, 0u);
    }
    let mask = select(0xffffu, 0xffu, p.elem_bytes == 1u);
    return vec2<u32>((word >> ((start % 4u) * 8u)) & mask, 0u);
}

fn src_bits(i: u32) -> vec2<u32> {
    let start = p.src_byte + i * p.elem_bytes;
    var high = 0u;
    if (p.elem_bytes == 8u) {
        high = src[start / 4u + 1u];
    }
    return element_bits(start, src[start / 4u], high);
}

fn keys_bits(i: u32) -> vec2<u32> {
    let start = p.keys_byte + i * p.elem_bytes;
    var high = 0u;
    if (p.elem_bytes == 8u) {
        high = keys[start / 4u + 1u];
    }
    return element_bits(start, keys[start / 4u], high);
}

fn is_nan(b: vec2<u32>) -> bool {
    switch p.kind {
        case 1u: {
            return (b.x & 0x7fffu) > 0x7c00u;
        }
        case 2u: {
            return (b.x & 0x7fffu) > 0x7f80u;
        }
        case 3u: {
            return (b.x & 0x7fffffffu) > 0x7f800000u;
        }
        case 4u: {
            let h = b.y & 0x7fffffffu;
            return h > 0x7ff00000u || (h == 0x7ff00000u && b.x != 0u);
        }
        default: {
            return false;
        }
    }
}

// The key of non-NaN bits: float32 and float64 zeros of either sign and subnormals as +0.0
// (TF-CPU runs with denormals as zero, so its hash maps merge them all; its float16 and bfloat16
// ones compare bits).
fn key_of(b: vec2<u32>) -> vec2<u32> {
    if (p.kind == 3u && (b.x & 0x7f800000u) == 0u) {
        return vec2<u32>(0u, 0u);
    }
    if (p.kind == 4u && (b.y & 0x7ff00000u) == 0u) {
        return vec2<u32>(0u, 0u);
    }
    return b;
}

// MurmurHash3's finaliser.
fn mix(x: u32) -> u32 {
    var h = x;
    h ^= h >> 16u;
    h *= 0x85ebca6bu;
    h ^= h >> 13u;
    h *= 0xc2b2ae35u;
    h ^= h >> 16u;
    return h;
}

fn hash(k: vec2<u32>) -> u32 {
    return mix(k.x ^ mix(k.y ^ p.seed));
}

fn part_of(h: u32) -> u32 {
    if (p.parts > 1u) {
        return h >> p.part_shift;
    }
    return 0u;
}

fn same_key(j: u32, k: vec2<u32>) -> bool {
    return all(key_of(keys_bits(j)) == k);
}

fn flag_overflow() {
    atomicStore(&counts[p.counts_off + p.chunks + 1u], 1u);
}

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

@compute @workgroup_size(256)
fn insert(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let b = src_bits(i);
    if (is_nan(b)) {
        // Its own first occurrence, in no slot.
        if (p.record == 1u && p.part == 0u) {
            slots[p.slots_off + i] = i;
        }
        return;
    }
    let k = key_of(b);
    let h = hash(k);
    if (part_of(h) != p.part) {
        return;
    }
    var s = h & p.table_mask;
    for (var tries = 0u; tries < p.probe_limit; tries++) {
        let r = atomicCompareExchangeWeak(&table[p.table_off + s], EMPTY, i);
        var mine = r.exchanged;
        if (!mine && r.old_value != EMPTY && same_key(r.old_value, k)) {
            if (p.record == 1u) {
                atomicMin(&table[p.table_off + s], i);
            }
            mine = true;
        }
        if (mine) {
            if (p.record == 1u) {
                slots[p.slots_off + i] = s;
            }
            return;
        }
        // A weak exchange may fail on an empty slot: try it again.
        if (r.old_value != EMPTY) {
            s = (s + 1u) & p.table_mask;
        }
    }
    flag_overflow();
}

@compute @workgroup_size(256)
fn resolve(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let b = src_bits(i);
    if (is_nan(b) || part_of(hash(key_of(b))) != p.part) {
        return;
    }
    let s = slots[p.slots_off + i] & p.table_mask;
    slots[p.slots_off + i] = atomicLoad(&table[p.table_off + s]);
}

@compute @workgroup_size(256)
fn lookup(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let b = src_bits(i);
    if (is_nan(b)) {
        // Never found: kept.
        if (p.part == 0u) {
            slots[p.slots_off + i] = i;
        }
        return;
    }
    let k = key_of(b);
    let h = hash(k);
    if (part_of(h) != p.part) {
        return;
    }
    var s = h & p.table_mask;
    for (var tries = 0u; tries < p.probe_limit; tries++) {
        let j = atomicLoad(&table[p.table_off + s]);
        if (j == EMPTY) {
            slots[p.slots_off + i] = i;
            return;
        }
        if (same_key(j, k)) {
            slots[p.slots_off + i] = EMPTY;
            return;
        }
        s = (s + 1u) & p.table_mask;
    }
    flag_overflow();
}

fn selected(i: u32) -> bool {
    return slots[p.slots_off + i] == i;
}

// `chunk_scan.wgsl`'s hooks (one pass: every chunk counts from the first).
fn kept(i: u32) -> bool {
    return selected(i);
}

fn chunk_base() -> u32 {
    return 0u;
}

fn load_count(c: u32) -> u32 {
    return atomicLoad(&counts[p.counts_off + c]);
}

fn store_count(c: u32, v: u32) {
    atomicStore(&counts[p.counts_off + c], v);
}

fn store_index(at: u32, value: u32) {
    if (p.idx_wide == 1u) {
        idx[p.idx_off + 2u * at] = value;
        idx[p.idx_off + 2u * at + 1u] = 0u;
    } else {
        idx[p.idx_off + at] = value;
    }
}

fn load_index(at: u32) -> u32 {
    return idx[p.idx_off + select(at, 2u * at, p.idx_wide == 1u)];
}

// Output value `at` := bits `b`. Elements under a word are or-ed into the zeroed output, as
// neighbouring ones may come from other invocations.
fn store_value(at: u32, b: vec2<u32>) {
    if (p.elem_bytes == 8u) {
        atomicStore(&out[p.out_off + 2u * at], b.x);
        atomicStore(&out[p.out_off + 2u * at + 1u], b.y);
    } else if (p.elem_bytes == 4u) {
        atomicStore(&out[p.out_off + at], b.x);
    } else {
        let byte = at * p.elem_bytes;
        atomicOr(&out[p.out_off + byte / 4u], b.x << ((byte % 4u) * 8u));
    }
}

@compute @workgroup_size(256)
fn write_selected(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let chunk = wid.x + wid.y * nwg.x;
    let before = chunk_rank(chunk, t);
    if (chunk * CHUNK >= p.n) {
        return;
    }
    var rank = load_count(chunk) + before;
    for (var k = 0u; k < PER_THREAD; k++) {
        let i = chunk * CHUNK + t * PER_THREAD + k;
        if (i < p.n && selected(i)) {
            store_value(rank, src_bits(i));
            if (p.mode == 0u) {
                store_index(i, rank);
            } else {
                store_index(rank, i);
            }
            rank += 1u;
        }
    }
}

@compute @workgroup_size(256)
fn write_rest(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let first = slots[p.slots_off + i];
    let at = load_index(first);
    if (first != i) {
        store_index(i, at);
    }
    if (p.with_count == 1u) {
        atomicAdd(&count[p.count_off + select(at, 2u * at, p.idx_wide == 1u)], 1u);
    }
}
