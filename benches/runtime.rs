//! Runtime benchmarks on whatever adapter is found (lavapipe in CI): dispatch round trips, batched
//! dispatches, and 64 MiB H2D/D2H through the plugin's stream path beside raw wgpu in the same run.
//!
//!     cargo bench --bench runtime

use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tensorflow_wgpu::kernels::binary::{launch, BinaryOp};
use tensorflow_wgpu::kernels::{DType, TensorRef};
use tensorflow_wgpu::runtime::{instance, Device, Event, Stream};

const BIG: usize = 64 << 20;

fn tensor(address: u64, n: usize) -> TensorRef {
    TensorRef { address, dtype: DType::F32, shape: vec![n as i64] }
}

fn wait_all(device: &Device) {
    device.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
}

fn bench(c: &mut Criterion) {
    let device = instance::device(0).expect("no WGPU adapter");
    let stream = Stream::new(device.clone());
    let one = device.memory.allocate(&device, 4).unwrap();
    stream.memcpy_htod(one, &1.0f32.to_le_bytes()).unwrap();
    stream.block_until_done().unwrap();
    println!("adapter: {} ({:?})", device.info.name, device.info.backend);

    let mut group = c.benchmark_group("dispatch");
    group.sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    group.bench_function("plugin: 1-element AddV2 + block_until_done", |b| {
        b.iter(|| {
            launch(&stream, BinaryOp::Add, &tensor(one, 1), &tensor(one, 1), &tensor(one, 1)).unwrap();
            stream.block_until_done().unwrap();
        })
    });
    group.bench_function("plugin: event record + wait (empty)", |b| {
        b.iter(|| {
            let e = Arc::new(Event::new());
            stream.record_event(&e);
            e.wait().unwrap();
        })
    });
    group.throughput(Throughput::Elements(64));
    group.bench_function("plugin: 64 1-element AddV2 (records of batch dispatches), one wait", |b| {
        b.iter(|| {
            for _ in 0..64 {
                launch(&stream, BinaryOp::Add, &tensor(one, 1), &tensor(one, 1), &tensor(one, 1)).unwrap();
            }
            stream.block_until_done().unwrap();
        })
    });
    // 65 elements: one more than a batch record takes, so a dispatch per op.
    let wide = device.memory.allocate(&device, 4 * 65).unwrap();
    stream.memcpy_htod(wide, &[0u8; 4 * 65]).unwrap();
    group.bench_function("plugin: 64 AddV2 of 65 elements (a dispatch each), one wait", |b| {
        b.iter(|| {
            for _ in 0..64 {
                launch(&stream, BinaryOp::Add, &tensor(wide, 65), &tensor(wide, 65), &tensor(wide, 65)).unwrap();
            }
            stream.block_until_done().unwrap();
        })
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("raw wgpu: empty submit + wait", |b| {
        b.iter(|| {
            device.queue.submit([]);
            wait_all(&device);
        })
    });
    group.finish();

    let data = vec![7u8; BIG];
    let big = device.memory.allocate(&device, BIG as u64).unwrap();
    let raw_buffer = device.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench raw"),
        size: BIG as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut group = c.benchmark_group("transfer 64 MiB");
    group.sample_size(10).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Bytes(BIG as u64));
    group.bench_function("plugin: memcpy_htod + block_until_done", |b| {
        b.iter(|| {
            stream.memcpy_htod(big, &data).unwrap();
            stream.block_until_done().unwrap();
        })
    });
    group.bench_function("raw wgpu: write_buffer + submit + wait", |b| {
        b.iter(|| {
            device.queue.write_buffer(&raw_buffer, 0, &data);
            device.queue.submit([]);
            wait_all(&device);
        })
    });
    let host = Arc::new(Mutex::new(vec![0u8; BIG]));
    group.bench_function("plugin: memcpy_dtoh + block_until_done", |b| {
        b.iter(|| {
            let host = host.clone();
            stream
                .memcpy_dtoh(big, BIG as u64, Box::new(move |bytes| host.lock().unwrap().copy_from_slice(bytes)))
                .unwrap();
            stream.block_until_done().unwrap();
        })
    });
    group.bench_function("raw wgpu: copy to MAP_READ + map + read", |b| {
        b.iter(|| {
            let readback = device.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("bench readback"),
                size: BIG as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = device.device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(&raw_buffer, 0, &readback, 0, BIG as u64);
            device.queue.submit([encoder.finish()]);
            readback.slice(..).map_async(wgpu::MapMode::Read, |r| r.unwrap());
            wait_all(&device);
            host.lock().unwrap().copy_from_slice(&readback.slice(..).get_mapped_range().unwrap());
            readback.unmap();
        })
    });
    group.finish();
    device.memory.free(big).unwrap();
    device.memory.free(one).unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
