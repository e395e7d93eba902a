//! The encoder's upload arenas: thousands of uploads in one encoder span several arena buffers, big
//! ones get buffers of their own, and every byte arrives where the encoder's copies put it.

use std::sync::{Arc, Mutex};

use tensorflow_wgpu::runtime::encoder::Arena;
use tensorflow_wgpu::runtime::{instance, Stream};

#[test]
fn uploads_across_arena_buffers_arrive_in_order() {
    let device = Arc::new(instance::open_private_device(0).expect("no WGPU adapter"));
    let stream = Stream::new(device.clone());
    // 5000 blocks of 16 bytes: far more than one 64 KiB arena holds at any offset alignment.
    let blocks = 5000u64;
    let big = 40 * 1024u64; // past a quarter arena: a dedicated buffer
    let address = device.memory.allocate(&device, blocks * 16 + 2 * big).unwrap();
    let target = device.memory.resolve(address, blocks * 16 + 2 * big).unwrap();
    let block = |i: u64| -> Vec<u8> { (0..16).map(|j| (i * 31 + j * 7) as u8).collect() };
    let large = |seed: u64| -> Vec<u8> { (0..big).map(|j| (j * seed % 251) as u8).collect() };
    stream
        .encode(|core, encoder| {
            for i in 0..blocks {
                let arena = if i % 2 == 0 { Arena::Params } else { Arena::Staging };
                let up = encoder.upload(core, arena, &block(i))?;
                encoder.copy_buffer_to_buffer(&up.buffer, up.offset, target.buffer(), target.offset + i * 16, 16);
            }
            for (n, seed) in [3u64, 5].into_iter().enumerate() {
                let up = encoder.upload(core, Arena::Staging, &large(seed))?;
                let at = target.offset + blocks * 16 + n as u64 * big;
                encoder.copy_buffer_to_buffer(&up.buffer, up.offset, target.buffer(), at, big);
            }
            Ok(())
        })
        .unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    stream
        .memcpy_dtoh(address, blocks * 16 + 2 * big, Box::new(move |b| sink.lock().unwrap().extend_from_slice(b)))
        .unwrap();
    stream.block_until_done().unwrap();
    let got = got.lock().unwrap();
    for i in 0..blocks {
        assert_eq!(got[(i * 16) as usize..(i * 16 + 16) as usize], block(i)[..], "block {i}");
    }
    let tail = (blocks * 16) as usize;
    assert_eq!(got[tail..tail + big as usize], large(3)[..]);
    assert_eq!(got[tail + big as usize..], large(5)[..]);
    device.memory.free(address).unwrap();
}
