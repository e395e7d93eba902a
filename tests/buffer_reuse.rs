//! Freed tensor buffers serve later allocations of their size class. Reuse must keep stream order:
//! work encoded before the free still sees the old contents, work encoded after sees the new ones.

use std::sync::{Arc, Mutex};

use tensorflow_wgpu::runtime::memory::AllocatorKind;
use tensorflow_wgpu::runtime::{instance, Device, Stream};

fn read(stream: &Stream, address: u64, len: u64) -> Vec<u8> {
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    stream.memcpy_dtoh(address, len, Box::new(move |b| sink.lock().unwrap().extend_from_slice(b))).unwrap();
    stream.block_until_done().unwrap();
    let bytes = got.lock().unwrap().clone();
    bytes
}

fn pattern(len: u64, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(seed).wrapping_add(seed)).collect()
}

fn buffer_of(device: &Device, address: u64) -> wgpu::Buffer {
    device.memory.resolve(address, 1).unwrap().buffer().clone()
}

/// Writes `old` into a new allocation of `len` bytes, encodes (behind a slow host callback on
/// `compute`, if asked) a copy out of it on `compute`, frees it and allocates `len` bytes again,
/// which must get the same buffer: returns (the copy's address, the reused address). The copy is
/// still unsubmitted.
fn copy_then_reuse(device: &Device, compute: &Stream, len: u64, old: &[u8], behind_callback: bool) -> (u64, u64) {
    let source = device.memory.allocate(device, len).unwrap();
    let copy = device.memory.allocate(device, len).unwrap();
    compute.memcpy_htod(source, old).unwrap();
    compute.block_until_done().unwrap();
    if behind_callback {
        // The compute stream's next command buffer waits behind a slow host callback.
        compute.host_callback(Box::new(|| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            Ok(())
        }));
    }
    compute.memcpy_dtod(copy, source, len).unwrap();
    let freed = buffer_of(device, source);
    device.memory.free(source).unwrap();
    let reused = device.memory.allocate(device, len).unwrap();
    assert!(buffer_of(device, reused) == freed, "a freed buffer of the same size is reused");
    (copy, reused)
}

#[test]
fn a_reused_buffer_keeps_stream_order() {
    let device = Arc::new(instance::open_private_device(0).expect("no WGPU adapter"));
    let stream = Stream::new(device.clone());
    let len = 1000u64;
    let (old, new) = (pattern(len, 3), pattern(len, 7));
    let source = device.memory.allocate(&device, len).unwrap();
    let copy = device.memory.allocate(&device, len).unwrap();
    stream.memcpy_htod(source, &old).unwrap();
    stream.block_until_done().unwrap();

    // Encoded, not yet submitted: a copy out of `source`. Then `source` is freed and its buffer
    // serves the next allocation of that size, which is overwritten on the same stream.
    stream.memcpy_dtod(copy, source, len).unwrap();
    let freed = buffer_of(&device, source);
    device.memory.free(source).unwrap();
    assert!(device.memory.pooled_bytes() >= len);
    // Under TF's BFC allocator (the default) buffers are BFC's regions, of exactly the size asked.
    let reuse_len = if AllocatorKind::from_env().is_bfc() { len } else { len + 1 };
    let reused = device.memory.allocate(&device, reuse_len).unwrap();
    assert!(buffer_of(&device, reused) == freed, "a freed buffer of the same size class is reused");
    assert_eq!(device.memory.pooled_bytes(), 0);
    stream.memcpy_htod(reused, &new).unwrap();

    assert_eq!(read(&stream, copy, len), old, "the copy encoded before the free saw the old bytes");
    assert_eq!(read(&stream, reused, len), new);
    // Reuse does not widen what an address may reach: the range past the request stays invalid.
    assert!(device.memory.resolve(reused, 1005).is_err());
    assert_eq!(device.memory.stats().bytes_in_use, (reuse_len + len) as i64);

    // Another size class gets a buffer of its own.
    let other = device.memory.allocate(&device, 4 * len).unwrap();
    assert!(buffer_of(&device, other) != freed);
    for address in [copy, reused, other] {
        device.memory.free(address).unwrap();
    }
    assert_eq!(device.memory.stats().bytes_in_use, 0);
}

/// The same reuse across streams, as TF does it for an eager function's constant output: the
/// buffer is freed while the compute stream's copy out of it is still unsubmitted, and another
/// stream uploads into it at once, with no event between the two. Streams submit in the order work
/// was encoded, so the copy still reads the old bytes.
#[test]
fn a_buffer_reused_by_another_stream_waits_for_work_encoded_before() {
    let device = Arc::new(instance::open_private_device(0).expect("no WGPU adapter"));
    let compute = Stream::new(device.clone());
    let uploads = Stream::new(device.clone());
    let len = 1000u64;
    let (old, new) = (pattern(len, 5), pattern(len, 11));
    let scratch = device.memory.allocate(&device, 4).unwrap();
    for (direct, behind_callback) in [(true, false), (false, false), (true, true), (false, true)] {
        let (copy, reused) = copy_then_reuse(&device, &compute, len, &old, behind_callback);
        if direct {
            // An idle stream may write with Queue::write_buffer, which lands before the next submit.
            uploads.memcpy_htod(reused, &new).unwrap();
        } else {
            // A staged upload (the stream has work open), submitted by a flush of its own stream.
            uploads.fill(scratch, 4, 0).unwrap();
            uploads.memcpy_htod(reused, &new).unwrap();
        }
        uploads.block_until_done().unwrap();
        assert_eq!(read(&compute, copy, len), old, "direct upload: {direct}, behind a callback: {behind_callback}");
        assert_eq!(read(&uploads, reused, len), new);
        for address in [copy, reused] {
            device.memory.free(address).unwrap();
        }
    }
}

/// The same reuse, flushed from the other side: the compute stream's copy out of the buffer is
/// encoded first, the upload into the reused buffer second (staged), and then the compute stream
/// takes a new command, which submits the upload stream's encoder. That upload must still come
/// after the copy: when the compute stream's buffer with the copy is submitted at once, and when it
/// is held back behind a slow host callback. (A fresh `tf.function`'s constants, uploaded while
/// other threads' eager ops were in flight, corrupted their tensors where the upload went first.)
#[test]
fn a_stream_that_encodes_after_another_submits_after_it() {
    let device = Arc::new(instance::open_private_device(0).expect("no WGPU adapter"));
    let compute = Stream::new(device.clone());
    let uploads = Stream::new(device.clone());
    // Not a whole number of words: the upload is staged, never written directly.
    let len = 1002u64;
    let (old, new) = (pattern(len, 13), pattern(len, 17));
    let scratch = device.memory.allocate(&device, 4).unwrap();
    for behind_callback in [false, true] {
        let (copy, reused) = copy_then_reuse(&device, &compute, len, &old, behind_callback);
        uploads.memcpy_htod(reused, &new).unwrap();
        compute.fill(scratch, 4, 0).unwrap();
        compute.flush();
        uploads.block_until_done().unwrap();
        assert_eq!(read(&compute, copy, len), old, "behind a callback: {behind_callback}");
        assert_eq!(read(&uploads, reused, len), new);
        for address in [copy, reused] {
            device.memory.free(address).unwrap();
        }
    }
}
