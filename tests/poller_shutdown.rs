//! A device's poller thread stops when the device is dropped (own process: counts threads).

use std::sync::Arc;

use tensorflow_wgpu::runtime::{instance, Stream};

fn pollers() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("wgpu-poller-"))
        .count()
}

/// The poller names itself once it runs: wait (bounded) until `pollers()` reaches `count`.
fn wait_for_pollers(count: usize) -> usize {
    for _ in 0..500 {
        if pollers() == count {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    pollers()
}

#[test]
fn poller_stops_with_its_device() {
    let device = Arc::new(instance::open_private_device(0).expect("no WGPU adapter"));
    assert!(device.poller_running());
    assert_eq!(wait_for_pollers(1), 1, "the private device's poller is running");
    let running = 1;
    {
        let stream = Stream::new(device.clone());
        let address = device.memory.allocate(&device, 256).unwrap();
        stream.memcpy_htod(address, &[7u8; 256]).unwrap();
        let got = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = got.clone();
        stream.memcpy_dtoh(address, 256, Box::new(move |b| sink.lock().unwrap().extend_from_slice(b))).unwrap();
        stream.block_until_done().unwrap();
        assert_eq!(*got.lock().unwrap(), vec![7u8; 256]);
        device.memory.free(address).unwrap();
    }
    let device = Arc::try_unwrap(device).ok().expect("device still shared");
    drop(device);
    // Dropping joins the thread, so it is gone at once.
    assert_eq!(pollers(), running - 1);
}
