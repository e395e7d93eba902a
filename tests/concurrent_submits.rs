//! Streams submitting from several threads while the poller waits on the GPU. Each `Queue::submit`
//! also polls the device, on the submitting thread, and wgpu-core 30.0 asserts when that poll
//! retires submissions under a poller wait that had timed out (gfx-rs/wgpu#9958). The panic
//! dropped the callbacks it had collected, and a readback then waited forever. The poller survives
//! its panics, so this test fails on any panic on the poller thread, and by its watchdog if a
//! readback stops completing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use tensorflow_wgpu::runtime::{instance, Stream};

/// Long enough for the race to come up many times on lavapipe, short enough for CI.
const RUN_FOR: Duration = Duration::from_secs(8);
/// A readback that takes this long is lost, not slow.
const WATCHDOG: Duration = Duration::from_secs(60);

#[test]
fn readbacks_complete_while_other_threads_submit() {
    let poller_panics = Arc::new(Mutex::new(Vec::<String>::new()));
    let default_hook = std::panic::take_hook();
    {
        let poller_panics = poller_panics.clone();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name().is_some_and(|n| n.starts_with("wgpu-poller")) {
                poller_panics.lock().unwrap().push(info.to_string());
            }
            default_hook(info);
        }));
    }
    let device = Arc::new(instance::open_private_device(0).expect("no WGPU adapter"));
    // Fills of up to 2 MiB keep the GPU busy for milliseconds, so the poller waits on unfinished work.
    let big_len = 2u64 << 20;
    let big = device.memory.allocate(&device, big_len).unwrap();
    let stop = Arc::new(AtomicBool::new(false));

    // A submitter: tiny fills, each submitted on its own.
    let submitter = {
        let (device, stop) = (device.clone(), stop.clone());
        std::thread::spawn(move || {
            let stream = Stream::new(device.clone());
            let small = device.memory.allocate(&device, 256).unwrap();
            let mut submits = 0u64;
            while !stop.load(Ordering::SeqCst) {
                stream.fill(small, 256, submits as u32).unwrap();
                stream.flush();
                submits += 1;
                if submits.is_multiple_of(64) {
                    stream.block_until_done().unwrap();
                }
            }
            stream.block_until_done().unwrap();
            device.memory.free(small).unwrap();
            submits
        })
    };

    // Spinners crowd the cores, so threads get preempted inside wgpu's polls (where the race is).
    let spinners: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();

    // Reader: a big fill, then a readback of its last bytes, again and again.
    let (progress, rounds) = mpsc::channel::<u32>();
    let reader = {
        let (device, stop) = (device.clone(), stop.clone());
        std::thread::spawn(move || {
            let stream = Stream::new(device.clone());
            let mut round = 0u32;
            while !stop.load(Ordering::SeqCst) {
                round += 1;
                // From 512 KiB to 2 MiB (a few milliseconds on lavapipe), so the poller's waits end
                // on either side of any short timeout.
                let len = (u64::from(round % 4) + 1) << 19;
                stream.fill(big + big_len - len, len, round).unwrap();
                let got = Arc::new(Mutex::new(Vec::new()));
                let sink = got.clone();
                stream
                    .memcpy_dtoh(big + big_len - 8, 8, Box::new(move |b| sink.lock().unwrap().extend_from_slice(b)))
                    .unwrap();
                stream.block_until_done().unwrap();
                assert_eq!(*got.lock().unwrap(), [round.to_le_bytes(), round.to_le_bytes()].concat());
                progress.send(round).unwrap();
            }
        })
    };

    let start = Instant::now();
    let mut completed = 0;
    while start.elapsed() < RUN_FOR {
        match rounds.recv_timeout(WATCHDOG) {
            Ok(round) => completed = round,
            Err(_) => panic!("a readback did not complete within {WATCHDOG:?} (after {completed} rounds)"),
        }
    }
    stop.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    spinners.into_iter().for_each(|t| t.join().unwrap());
    let submits = submitter.join().unwrap();
    eprintln!("{completed} readbacks, {submits} submits from another thread");
    assert!(completed > 0 && submits > 0);
    assert_eq!(*poller_panics.lock().unwrap(), Vec::<String>::new(), "the poller thread panicked");
    device.memory.free(big).unwrap();
}
