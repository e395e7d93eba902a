//! Allocator statistics and out-of-memory behaviour (own process: the stats are device-wide).

mod common;

use common::*;
use tensorflow_wgpu::ffi::se::*;

fn stats() -> SP_AllocatorStats {
    let p = plugin();
    let mut s = SP_AllocatorStats { struct_size: SP_ALLOCATORSTATS_STRUCT_SIZE, ..Default::default() };
    assert_eq!(unsafe { (p.se.get_allocator_stats.unwrap())(p.dev(), &mut s) }, 1);
    s
}

#[test]
fn stats_track_allocations_and_oversized_requests_fail_cleanly() {
    let p = plugin();
    let before = stats();
    assert_eq!(before.bytes_in_use, 0);
    let blocks: Vec<Mem> = [100u64, 3, 1 << 20, 4097].iter().map(|&n| p.alloc(n)).collect();
    let during = stats();
    assert_eq!(during.bytes_in_use, 100 + 3 + (1 << 20) + 4097);
    assert_eq!(during.num_allocs, before.num_allocs + 4);
    assert_eq!(during.largest_alloc_size, 1 << 20);
    assert!(during.peak_bytes_in_use >= during.bytes_in_use);
    assert_eq!(during.has_bytes_limit, 1);
    // Every address inside an allocation maps back to it; distinct allocations never overlap.
    let mut ranges: Vec<(u64, u64)> = blocks.iter().map(|m| (m.base.opaque as u64, m.base.size)).collect();
    ranges.sort();
    for w in ranges.windows(2) {
        assert!(w[0].0 + w[0].1 < w[1].0);
    }
    drop(blocks);
    let after = stats();
    assert_eq!(after.bytes_in_use, 0);
    assert_eq!(after.peak_bytes_in_use, during.peak_bytes_in_use);

    // Far beyond what the device can hold: a null allocation, no crash, and the device still works.
    let mut mem: SP_DeviceMemoryBase = unsafe { std::mem::zeroed() };
    mem.struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
    unsafe { (p.se.allocate.unwrap())(p.dev(), 1 << 50, 0, &mut mem) };
    assert!(mem.opaque.is_null());
    assert_eq!(stats().bytes_in_use, 0);
    let m = p.alloc(64);
    assert_eq!(p.read(&m.base, 64).len(), 64);
}
