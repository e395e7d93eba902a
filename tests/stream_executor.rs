//! The StreamExecutor callbacks, driven through the C ABI as TensorFlow core calls them (no TF).

mod common;

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use tensorflow_wgpu::error::{Code, Error};
use tensorflow_wgpu::ffi::se::*;
use tensorflow_wgpu::ffi::tf::{set_status, OwnedStatus, TF_Status};
use tensorflow_wgpu::kernels::binary::{launch, BinaryOp};
use tensorflow_wgpu::kernels::{DType, TensorRef};
use tensorflow_wgpu::runtime::Stream;

fn runtime_stream<'a>(s: SP_Stream) -> &'a Stream {
    // SAFETY: SP_Stream handles of this plugin are `Box<Stream>` pointers.
    unsafe { &*(s as *const Stream) }
}

fn f32_tensor(mem: &SP_DeviceMemoryBase, n: usize) -> TensorRef {
    TensorRef { address: mem.opaque as u64, dtype: DType::F32, shape: vec![n as i64] }
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytemuck::pod_collect_to_vec(bytes)
}

fn add(s: SP_Stream, a: &SP_DeviceMemoryBase, b: &SP_DeviceMemoryBase, out: &SP_DeviceMemoryBase, n: usize) {
    launch(runtime_stream(s), BinaryOp::Add, &f32_tensor(a, n), &f32_tensor(b, n), &f32_tensor(out, n)).unwrap();
}

#[test]
fn read_after_write_and_write_after_read_keep_program_order() {
    let p = plugin();
    let n = 1000;
    let (a, b, c, d) = (p.alloc(4 * n as u64), p.alloc(4 * n as u64), p.alloc(4 * n as u64), p.alloc(4 * n as u64));
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| 1000.0 * i as f32).collect();
    let z: Vec<f32> = vec![-5.0; n];
    let s = p.stream();
    // RAW: the kernel must see both uploads; WAR: the re-upload of A must not reach the kernel.
    p.htod(s, &a.base, bytemuck::cast_slice(&x));
    p.htod(s, &b.base, bytemuck::cast_slice(&y));
    add(s, &a.base, &b.base, &c.base, n);
    p.htod(s, &a.base, bytemuck::cast_slice(&z));
    // RAW through a device copy of the kernel's output, then WAR: a fill of C after the copy.
    p.dtod(s, &d.base, &c.base, 4 * n as u64);
    let status = OwnedStatus::new();
    let mut c_mem = c.base;
    unsafe { (p.se.mem_zero.unwrap())(p.dev(), s, &mut c_mem, 4 * n as u64, status.as_ptr()) };
    check(&status);
    // RAW: a memset32 of B followed by a kernel reading it.
    let mut b_mem = b.base;
    unsafe { (p.se.memset32.unwrap())(p.dev(), s, &mut b_mem, 2.5f32.to_bits(), 4 * n as u64, status.as_ptr()) };
    check(&status);
    add(s, &a.base, &b.base, &b.base, n);
    let (mut got_c, mut got_d, mut got_a, mut got_b) =
        (vec![0u8; 4 * n], vec![0u8; 4 * n], vec![0u8; 4 * n], vec![0u8; 4 * n]);
    p.dtoh(s, &c.base, &mut got_c);
    p.dtoh(s, &d.base, &mut got_d);
    p.dtoh(s, &a.base, &mut got_a);
    p.dtoh(s, &b.base, &mut got_b);
    p.sync(s);
    let sum: Vec<f32> = x.iter().zip(&y).map(|(x, y)| x + y).collect();
    assert_eq!(floats(&got_d), sum, "copy of the kernel output");
    assert_eq!(floats(&got_c), vec![0.0; n], "mem_zero after the copy");
    assert_eq!(floats(&got_a), z, "re-upload after the kernel");
    assert_eq!(floats(&got_b), vec![-2.5; n], "kernel after memset32, in place");
    p.destroy_stream(s);
}

#[test]
fn upload_to_an_idle_stream_waits_for_its_submitted_readers() {
    // Once the stream's work is submitted (recording an event flushes it), an upload takes the
    // direct `Queue::write_buffer` route; it must still land after the kernel that reads A.
    let p = plugin();
    let n = 4096;
    let (a, b, c) = (p.alloc(4 * n as u64), p.alloc(4 * n as u64), p.alloc(4 * n as u64));
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let z: Vec<f32> = vec![-5.0; n];
    let s = p.stream();
    p.htod(s, &a.base, bytemuck::cast_slice(&x));
    p.htod(s, &b.base, bytemuck::cast_slice(&x));
    for _ in 0..20 {
        add(s, &a.base, &b.base, &c.base, n);
        let e = p.event();
        p.record(s, e);
        p.htod(s, &a.base, bytemuck::cast_slice(&z));
        let mut got_c = vec![0u8; 4 * n];
        p.dtoh(s, &c.base, &mut got_c);
        p.sync(s);
        assert_eq!(floats(&got_c), x.iter().map(|v| v + v).collect::<Vec<f32>>(), "kernel saw the later upload");
        assert_eq!(floats(&p.read(&a.base, 4 * n)), z);
        p.htod(s, &a.base, bytemuck::cast_slice(&x));
        unsafe { (p.se.destroy_event.unwrap())(p.dev(), e) };
    }
    p.destroy_stream(s);
}

/// NHWC convolution, SAME padding, stride 1, by the definition (integer-valued data: exact sums).
fn reference_conv(x: &[f32], f: &[f32], [n, h, w, c]: [usize; 4], [kh, kw, oc]: [usize; 3]) -> Vec<f32> {
    let mut out = vec![0.0; n * h * w * oc];
    for (i, o) in out.iter_mut().enumerate() {
        let (img, oy, ox, ch) = (i / (h * w * oc), i / (w * oc) % h, i / oc % w, i % oc);
        for (ky, kx, ci) in (0..kh).flat_map(|ky| (0..kw).flat_map(move |kx| (0..c).map(move |ci| (ky, kx, ci)))) {
            let (iy, ix) = ((oy + ky) as i64 - (kh / 2) as i64, (ox + kx) as i64 - (kw / 2) as i64);
            if (0..h as i64).contains(&iy) && (0..w as i64).contains(&ix) {
                let at = ((img * h + iy as usize) * w + ix as usize) * c + ci;
                *o += x[at] * f[((ky * kw + kx) * c + ci) * oc + ch];
            }
        }
    }
    out
}

#[test]
fn convolution_reads_its_input_at_interior_addresses() {
    // The implicit-GEMM packers on inputs that start inside a buffer: 16-byte aligned (uniform
    // windows that start before the input or inside it) and not (element loads).
    use tensorflow_wgpu::kernels::im2col::{launch_conv_tiles, Im2col};
    let p = plugin();
    let s = p.stream();
    let ([n, h, w, c], [kh, kw, oc]) = ([2usize, 17, 17, 36], [3usize, 3, 40]);
    let len = n * h * w * c;
    let x: Vec<f32> = (0..len).map(|i| (i % 7) as f32 - 3.0).collect();
    let f: Vec<f32> = (0..kh * kw * c * oc).map(|i| (i % 5) as f32 - 2.0).collect();
    let want = reference_conv(&x, &f, [n, h, w, c], [kh, kw, oc]);
    let buffer = p.alloc(4 * (len as u64 + 64));
    let filter = p.alloc(4 * f.len() as u64);
    p.htod(s, &filter.base, bytemuck::cast_slice(&f));
    let g = Im2col {
        batch: n as u32,
        h: h as u32,
        w: w as u32,
        c: c as u32,
        oh: h as u32,
        ow: w as u32,
        kh: kh as u32,
        kw: kw as u32,
        strides: [1, 1],
        dilations: [1, 1],
        pads: [1, 1],
    };
    for at in [36u64, 6] {
        p.htod(s, &buffer.at(4 * at), bytemuck::cast_slice(&x));
        let out = p.alloc(4 * want.len() as u64);
        let tensor = |mem: &SP_DeviceMemoryBase, shape: Vec<i64>| TensorRef {
            address: mem.opaque as u64,
            dtype: DType::F32,
            shape,
        };
        let input = tensor(&buffer.at(4 * at), vec![n as i64, h as i64, w as i64, c as i64]);
        let kernel = tensor(&filter.base, vec![kh as i64, kw as i64, c as i64, oc as i64]);
        let output = tensor(&out.base, vec![n as i64, h as i64, w as i64, oc as i64]);
        if !launch_conv_tiles(runtime_stream(s), &g, &input, &kernel, &output).unwrap() {
            return; // A GPU adapter: the direct kernel's business.
        }
        let mut got = vec![0u8; 4 * want.len()];
        p.dtoh(s, &out.base, &mut got);
        p.sync(s);
        assert_eq!(floats(&got), want, "input at element {at}");
    }
    p.destroy_stream(s);
}

#[test]
fn small_ops_batch_at_interior_addresses_in_program_order() {
    // On CPU adapters small f32 binary ops join one dispatch, which runs before any other command.
    // Views start inside one buffer; a copy overwrites an operand an earlier op of the batch read
    // (write-after-read), and later ops read what earlier ones wrote (read-after-write).
    let p = plugin();
    let s = p.stream();
    let m = p.alloc(4 * 1024);
    let n = 37usize;
    let first: Vec<f32> = (0..n).map(|i| i as f32 - 5.0).collect();
    let second: Vec<f32> = (0..n).map(|i| 0.25 * i as f32).collect();
    let (x_at, y_at, z_at, one_at) = (3u64, 101u64, 333u64, 517u64);
    p.htod(s, &m.at(4 * x_at), bytemuck::cast_slice(&first));
    p.htod(s, &m.at(4 * one_at), bytemuck::cast_slice(&[3.0f32]));
    let view = |at: u64| f32_tensor(&m.at(4 * at), n);
    let one = TensorRef { address: m.at(4 * one_at).opaque as u64, dtype: DType::F32, shape: vec![] };
    // y = x * 3; x = second (a copy, after the batch so far); z = x - y; y = z * 3.
    launch(runtime_stream(s), BinaryOp::Mul, &view(x_at), &one, &view(y_at)).unwrap();
    p.htod(s, &m.at(4 * x_at), bytemuck::cast_slice(&second));
    launch(runtime_stream(s), BinaryOp::Sub, &view(x_at), &view(y_at), &view(z_at)).unwrap();
    launch(runtime_stream(s), BinaryOp::Mul, &one, &view(z_at), &view(y_at)).unwrap();
    let mut out = vec![0u8; 4 * n];
    p.dtoh(s, &m.at(4 * y_at), &mut out);
    p.sync(s);
    let expected: Vec<f32> = (0..n).map(|i| 3.0 * (second[i] - first[i] * 3.0)).collect();
    assert_eq!(floats(&out), expected);
    // A batch still open at a sync runs before it.
    launch(runtime_stream(s), BinaryOp::Add, &view(y_at), &one, &view(z_at)).unwrap();
    p.sync(s);
    p.dtoh(s, &m.at(4 * z_at), &mut out);
    p.sync(s);
    assert_eq!(floats(&out), expected.iter().map(|v| v + 3.0).collect::<Vec<f32>>());
    p.destroy_stream(s);
}

#[test]
fn small_op_batches_split_where_their_slots_run_out() {
    // x[i] = x[i - 1] + 1 over 40 buffers: each launch brings one new buffer, so a batch fills its
    // 28 slots mid-chain and the next launch starts another batch (a 29th buffer has no binding).
    let p = plugin();
    let s = p.stream();
    let xs: Vec<_> = (0..40).map(|_| p.alloc(4)).collect();
    let one = p.alloc(4);
    p.htod(s, &one.base, bytemuck::cast_slice(&[1.0f32]));
    p.htod(s, &xs[0].base, bytemuck::cast_slice(&[0.0f32]));
    for i in 1..xs.len() {
        let (a, b, out) = (f32_tensor(&xs[i - 1].base, 1), f32_tensor(&one.base, 1), f32_tensor(&xs[i].base, 1));
        launch(runtime_stream(s), BinaryOp::Add, &a, &b, &out).unwrap();
    }
    let mut out = vec![0u8; 4];
    p.dtoh(s, &xs[39].base, &mut out);
    p.sync(s);
    assert_eq!(floats(&out), [39.0]);
    p.destroy_stream(s);
}

#[test]
fn kernels_read_and_write_views_at_interior_addresses() {
    // Tensors at element offsets that are not storage-binding aligned (TF slices a buffer that way):
    // the kernels must bind an aligned window and index from the uniform offset.
    let p = plugin();
    let s = p.stream();
    let m = p.alloc(4 * 4096);
    let data: Vec<f32> = (0..4096).map(|i| i as f32).collect();
    p.htod(s, &m.base, bytemuck::cast_slice(&data));
    let (a_at, b_at, out_at, n) = (3u64, 1000u64, 2051u64, 777usize);
    let view = |at: u64| f32_tensor(&m.at(4 * at), n);
    launch(runtime_stream(s), BinaryOp::Mul, &view(a_at), &view(b_at), &view(out_at)).unwrap();
    let mut out = vec![0u8; 4 * n];
    p.dtoh(s, &m.at(4 * out_at), &mut out);
    p.sync(s);
    let expected: Vec<f32> = (0..n).map(|i| data[a_at as usize + i] * data[b_at as usize + i]).collect();
    assert_eq!(floats(&out), expected);

    // A strided copy (StridedSlice's kernel) out of the middle of the buffer, into an interior view.
    use tensorflow_wgpu::kernels::slice::{launch as strided, StridedView};
    let source = TensorRef { address: m.at(4 * 5).opaque as u64, dtype: DType::F32, shape: vec![40, 10] };
    let view = StridedView { base: 93, shape: vec![5, 3], strides: vec![-2 * 10, 3] };
    let target = TensorRef { address: m.at(4 * 3001).opaque as u64, dtype: DType::F32, shape: vec![15] };
    strided(runtime_stream(s), &source, &view, &target).unwrap();
    let mut out = vec![0u8; 4 * 15];
    p.dtoh(s, &m.at(4 * 3001), &mut out);
    p.sync(s);
    let expected: Vec<f32> = (0..5).flat_map(|r| (0..3).map(move |c| (5 + 93 - 20 * r + 3 * c) as f32)).collect();
    assert_eq!(floats(&out), expected);
    p.destroy_stream(s);
}

#[test]
fn odd_sizes_round_trip_at_any_offset() {
    let p = plugin();
    let s = p.stream();
    for size in [1usize, 3, 4, 5, 4097] {
        for offset in [0u64, 1, 3, 256] {
            let m = p.alloc(size as u64 + offset + 8);
            let sentinel = bytes(size + offset as usize + 8, 7);
            p.htod(s, &m.base, &sentinel);
            let data = bytes(size, size as u32 + offset as u32);
            p.htod(s, &m.at(offset), &data);
            let mut out = vec![0u8; size];
            p.dtoh(s, &m.at(offset), &mut out);
            let mut whole = vec![0u8; sentinel.len()];
            p.dtoh(s, &m.base, &mut whole);
            p.sync(s);
            assert_eq!(out, data, "size {size} offset {offset}");
            let mut expected = sentinel.clone();
            expected[offset as usize..offset as usize + size].copy_from_slice(&data);
            assert_eq!(whole, expected, "neighbouring bytes of size {size} offset {offset}");
        }
    }
    p.destroy_stream(s);
}

#[test]
fn copies_and_fills_at_interior_addresses() {
    let p = plugin();
    let s = p.stream();
    let (m, other) = (p.alloc(4096), p.alloc(4096));
    let mut model = bytes(4096, 3);
    let mut other_model = bytes(4096, 4);
    p.htod(s, &m.base, &model);
    p.htod(s, &other.base, &other_model);
    let status = OwnedStatus::new();
    unsafe {
        let mut at = m.at(3);
        (p.se.memset.unwrap())(p.dev(), s, &mut at, 0xAB, 5, status.as_ptr());
        check(&status);
        let mut at = m.at(101);
        (p.se.memset32.unwrap())(p.dev(), s, &mut at, 0xDEAD_BEEF, 17, status.as_ptr());
        check(&status);
        let mut at = m.at(203);
        (p.se.mem_zero.unwrap())(p.dev(), s, &mut at, 10, status.as_ptr());
        check(&status);
    }
    model[3..8].fill(0xAB);
    for k in 0..17 {
        model[101 + k] = 0xDEAD_BEEFu32.to_le_bytes()[k % 4];
    }
    model[203..213].fill(0);
    // Within one allocation (wgpu forbids same-buffer copies: staged) and across two.
    p.dtod(s, &m.at(1000), &m.at(7), 333);
    model.copy_within(7..340, 1000);
    p.dtod(s, &other.at(5), &m.at(9), 1001);
    other_model[5..1006].copy_from_slice(&model[9..1010]);
    let (mut got, mut got_other) = (vec![0u8; 4096], vec![0u8; 4096]);
    p.dtoh(s, &m.base, &mut got);
    p.dtoh(s, &other.base, &mut got_other);
    p.sync(s);
    assert_eq!(got, model);
    assert_eq!(got_other, other_model);

    // The synchronous variants.
    let data = bytes(77, 9);
    unsafe {
        let mut at = other.at(13);
        (p.se.sync_memcpy_htod.unwrap())(p.dev(), &mut at, data.as_ptr() as *const c_void, 77, status.as_ptr());
        check(&status);
        let mut at = m.at(1);
        (p.se.sync_memcpy_dtod.unwrap())(p.dev(), &mut at, &other.at(13), 77, status.as_ptr());
        check(&status);
        let mut back = vec![0u8; 77];
        (p.se.sync_memcpy_dtoh.unwrap())(p.dev(), back.as_mut_ptr() as *mut c_void, &m.at(1), 77, status.as_ptr());
        check(&status);
        assert_eq!(back, data);
    }
    p.destroy_stream(s);
}

#[test]
fn stream_dependency_orders_work_across_streams() {
    let p = plugin();
    let (first, second) = (p.stream(), p.stream());
    for round in 0..5 {
        let m = p.alloc(1 << 16);
        let data = bytes(1 << 16, round);
        // Encoded on `first` but not flushed: only the dependency gets it onto the queue in time.
        p.htod(first, &m.base, &data);
        let status = OwnedStatus::new();
        unsafe { (p.se.create_stream_dependency.unwrap())(p.dev(), second, first, status.as_ptr()) };
        check(&status);
        let mut out = vec![0u8; 1 << 16];
        p.dtoh(second, &m.base, &mut out);
        p.sync(second);
        assert_eq!(out, data, "round {round}");
    }
    p.sync(first);
    p.destroy_stream(first);
    p.destroy_stream(second);
}

unsafe extern "C" fn wait_for_flag(arg: *mut c_void, _status: *mut TF_Status) {
    let flag = unsafe { &*(arg as *const AtomicBool) };
    while !flag.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[test]
fn event_goes_from_pending_to_complete() {
    let p = plugin();
    let s = p.stream();
    let e = p.event();
    assert_eq!(p.event_status(e), SE_EventStatus::SE_EVENT_COMPLETE, "an unrecorded event is complete");
    let gate: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let ok = unsafe { (p.se.host_callback.unwrap())(p.dev(), s, Some(wait_for_flag), gate as *const _ as *mut c_void) };
    assert_eq!(ok, 1);
    let m = p.alloc(64);
    p.htod(s, &m.base, &[1u8; 64]);
    p.record(s, e);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(p.event_status(e), SE_EventStatus::SE_EVENT_PENDING, "the stream is held by the callback");
    gate.store(true, Ordering::SeqCst);
    let status = OwnedStatus::new();
    unsafe { (p.se.block_host_for_event.unwrap())(p.dev(), e, status.as_ptr()) };
    check(&status);
    assert_eq!(p.event_status(e), SE_EventStatus::SE_EVENT_COMPLETE);

    // wait_for_event: a second stream's readback waits for the first stream's upload.
    let other = p.stream();
    let data = bytes(64, 5);
    let gate2: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    unsafe { (p.se.host_callback.unwrap())(p.dev(), s, Some(wait_for_flag), gate2 as *const _ as *mut c_void) };
    p.htod(s, &m.base, &data);
    p.record(s, e);
    unsafe { (p.se.wait_for_event.unwrap())(p.dev(), other, e, status.as_ptr()) };
    check(&status);
    let mut out = vec![0u8; 64];
    p.dtoh(other, &m.base, &mut out);
    gate2.store(true, Ordering::SeqCst);
    p.sync(other);
    assert_eq!(out, data);
    unsafe { (p.se.destroy_event.unwrap())(p.dev(), e) };
    p.destroy_stream(s);
    p.destroy_stream(other);
}

struct Log {
    order: Mutex<Vec<usize>>,
}

struct Entry {
    log: Arc<Log>,
    index: usize,
    fail: bool,
}

unsafe extern "C" fn log_entry(arg: *mut c_void, status: *mut TF_Status) {
    let entry = unsafe { Box::from_raw(arg as *mut Entry) };
    entry.log.order.lock().unwrap().push(entry.index);
    if entry.fail {
        let error = Err(Error::new(Code::OutOfRange, format!("callback {} failed", entry.index)));
        // SAFETY: the plugin passes a live status to the callback.
        unsafe { set_status(status, &error) };
    }
}

fn enqueue_entry(s: SP_Stream, log: &Arc<Log>, index: usize, fail: bool) {
    let p = plugin();
    let entry = Box::into_raw(Box::new(Entry { log: log.clone(), index, fail }));
    assert_eq!(unsafe { (p.se.host_callback.unwrap())(p.dev(), s, Some(log_entry), entry as *mut c_void) }, 1);
}

#[test]
fn host_callbacks_run_in_stream_order_and_failures_reach_the_stream_status() {
    let p = plugin();
    let s = p.stream();
    let log = Arc::new(Log { order: Mutex::new(Vec::new()) });
    let m = p.alloc(4096);
    for i in 0..50 {
        if i % 3 == 0 {
            p.htod(s, &m.base, &bytes(4096, i as u32));
        }
        enqueue_entry(s, &log, i, false);
    }
    p.sync(s);
    assert_eq!(*log.order.lock().unwrap(), (0..50).collect::<Vec<_>>());
    assert!(p.stream_status(s).is_ok());

    enqueue_entry(s, &log, 99, true);
    let status = OwnedStatus::new();
    unsafe { (p.se.block_host_until_done.unwrap())(p.dev(), s, status.as_ptr()) };
    let err = status.result().unwrap_err();
    assert_eq!(err.code, Code::OutOfRange);
    let err = p.stream_status(s).unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (Code::OutOfRange, "callback 99 failed"));
    p.destroy_stream(s);
}

#[test]
fn synchronize_all_activity_waits_for_every_stream() {
    let p = plugin();
    let log = Arc::new(Log { order: Mutex::new(Vec::new()) });
    let streams: Vec<SP_Stream> = (0..3).map(|_| p.stream()).collect();
    let m = p.alloc(1 << 20);
    for (i, &s) in streams.iter().enumerate() {
        p.htod(s, &m.base, &bytes(1 << 20, i as u32));
        enqueue_entry(s, &log, i, false);
    }
    let status = OwnedStatus::new();
    unsafe { (p.se.synchronize_all_activity.unwrap())(p.dev(), status.as_ptr()) };
    check(&status);
    let mut seen = log.order.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, vec![0, 1, 2]);
    streams.into_iter().for_each(|s| p.destroy_stream(s));
}

#[test]
fn timers_measure_device_work() {
    let p = plugin();
    let s = p.stream();
    let status = OwnedStatus::new();
    let mut timer = std::ptr::null_mut();
    unsafe { (p.se.create_timer.unwrap())(p.dev(), &mut timer, status.as_ptr()) };
    check(&status);
    let m = p.alloc(8 << 20);
    unsafe { (p.se.start_timer.unwrap())(p.dev(), s, timer, status.as_ptr()) };
    check(&status);
    for i in 0..4 {
        p.htod(s, &m.base, &bytes(8 << 20, i));
    }
    unsafe { (p.se.stop_timer.unwrap())(p.dev(), s, timer, status.as_ptr()) };
    check(&status);
    p.sync(s);
    let ns = unsafe { (p.timer_fns.nanoseconds.unwrap())(timer) };
    assert!(ns > 0 && ns < 60_000_000_000, "elapsed {ns} ns");
    unsafe { (p.se.destroy_timer.unwrap())(p.dev(), timer) };

    // Both timer modes through the runtime.
    use tensorflow_wgpu::runtime::{Timer, TimerMode};
    let stream = runtime_stream(s);
    let mut modes = vec![TimerMode::HostClock];
    if stream.device().features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        modes.push(TimerMode::GpuTimestamps);
    }
    for mode in modes {
        let t = Timer::with_mode(stream.device(), mode);
        t.start(stream).unwrap();
        p.htod(s, &m.base, &bytes(8 << 20, 9));
        t.stop(stream).unwrap();
        p.sync(s);
        assert!(t.nanoseconds() > 0, "{mode:?}");
    }
    p.destroy_stream(s);
}

#[test]
fn many_threads_drive_streams_at_once() {
    let p = plugin();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let p = plugin();
                let s = p.stream();
                let n = 513 + t * 17;
                let (a, b, c) = (p.alloc(4 * n as u64), p.alloc(4 * n as u64), p.alloc(4 * n as u64));
                for round in 0..20 {
                    let x: Vec<f32> = (0..n).map(|i| (i * (t + 1) + round) as f32).collect();
                    p.htod(s, &a.base, bytemuck::cast_slice(&x));
                    p.htod(s, &b.base, bytemuck::cast_slice(&x));
                    add(s, &a.base, &b.base, &c.base, n);
                    let mut out = vec![0u8; 4 * n];
                    p.dtoh(s, &c.base, &mut out);
                    p.sync(s);
                    let expected: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
                    assert_eq!(floats(&out), expected, "thread {t} round {round}");
                }
                p.destroy_stream(s);
            })
        })
        .collect();
    for t in threads {
        t.join().expect("worker thread failed");
    }
    let _ = p;
}

#[test]
fn bad_input_gives_errors_not_crashes() {
    let p = plugin();
    let s = p.stream();
    let status = OwnedStatus::new();
    // An address that is not inside any allocation.
    let mut bogus: SP_DeviceMemoryBase = unsafe { std::mem::zeroed() };
    bogus.struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
    bogus.opaque = 0x1234 as *mut c_void;
    let data = [0u8; 16];
    unsafe { (p.se.memcpy_htod.unwrap())(p.dev(), s, &mut bogus, data.as_ptr() as *const c_void, 16, status.as_ptr()) };
    assert_eq!(status.result().unwrap_err().code, Code::InvalidArgument);
    // A copy running past the end of its allocation.
    let m = p.alloc(16);
    let mut big = [0u8; 64];
    unsafe { (p.se.memcpy_dtoh.unwrap())(p.dev(), s, big.as_mut_ptr() as *mut c_void, &m.base, 64, status.as_ptr()) };
    assert_eq!(status.result().unwrap_err().code, Code::InvalidArgument);
    // Null handles.
    unsafe { (p.se.block_host_until_done.unwrap())(p.dev(), std::ptr::null_mut(), status.as_ptr()) };
    assert_eq!(status.result().unwrap_err().code, Code::InvalidArgument);
    assert_eq!(unsafe { (p.se.host_callback.unwrap())(p.dev(), s, None, std::ptr::null_mut()) }, 0);
    p.sync(s);
    p.destroy_stream(s);
}

#[test]
fn destroyed_and_foreign_handles_give_errors_not_crashes() {
    let p = plugin();
    let status = OwnedStatus::new();
    let invalid = |status: &OwnedStatus| {
        let err = status.result().expect_err("a stale handle was accepted");
        assert_eq!(err.code, Code::InvalidArgument, "{}", err.message);
    };
    // Streams: use after destroy, double destroy, a pointer that was never a stream.
    let s = p.stream();
    p.destroy_stream(s);
    unsafe { (p.se.block_host_until_done.unwrap())(p.dev(), s, status.as_ptr()) };
    invalid(&status);
    p.destroy_stream(s);
    let mut not_a_stream = 0u64;
    let foreign = &mut not_a_stream as *mut u64 as SP_Stream;
    unsafe { (p.se.get_stream_status.unwrap())(p.dev(), foreign, status.as_ptr()) };
    invalid(&status);
    p.destroy_stream(foreign);
    assert_eq!(not_a_stream, 0);
    // Events.
    let live = p.stream();
    let e = p.event();
    unsafe { (p.se.destroy_event.unwrap())(p.dev(), e) };
    unsafe { (p.se.record_event.unwrap())(p.dev(), live, e, status.as_ptr()) };
    invalid(&status);
    assert_eq!(p.event_status(e), SE_EventStatus::SE_EVENT_ERROR);
    unsafe { (p.se.destroy_event.unwrap())(p.dev(), e) };
    // Timers.
    let mut t = std::ptr::null_mut();
    unsafe { (p.se.create_timer.unwrap())(p.dev(), &mut t, status.as_ptr()) };
    check(&status);
    unsafe { (p.se.destroy_timer.unwrap())(p.dev(), t) };
    unsafe { (p.se.start_timer.unwrap())(p.dev(), live, t, status.as_ptr()) };
    invalid(&status);
    assert_eq!(unsafe { (p.timer_fns.nanoseconds.unwrap())(t) }, 0);
    unsafe { (p.se.destroy_timer.unwrap())(p.dev(), t) };
    // Device memory: a double free is refused and the next allocation still works.
    let mut base: SP_DeviceMemoryBase = unsafe { std::mem::zeroed() };
    base.struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
    unsafe { (p.se.allocate.unwrap())(p.dev(), 64, 0, &mut base) };
    unsafe { (p.se.deallocate.unwrap())(p.dev(), &mut base) };
    unsafe { (p.se.deallocate.unwrap())(p.dev(), &mut base) };
    // Null out-pointers and stats structs.
    unsafe { (p.se.create_stream.unwrap())(p.dev(), std::ptr::null_mut(), status.as_ptr()) };
    invalid(&status);
    assert_eq!(unsafe { (p.se.get_allocator_stats.unwrap())(p.dev(), std::ptr::null_mut()) }, 0);
    let m = p.alloc(16);
    p.htod(live, &m.base, &[7u8; 16]);
    assert_eq!(p.read(&m.base, 16), vec![7u8; 16]);
    p.destroy_stream(live);
}

#[test]
fn platform_callbacks_refuse_short_structs() {
    let p = plugin();
    let status = OwnedStatus::new();
    let mut fns = zeroed::<SP_DeviceFns>();
    let mut params = zeroed::<SE_CreateDeviceFnsParams>();
    params.struct_size = 8;
    params.device_fns = &mut *fns;
    unsafe { (p.fns.create_device_fns.unwrap())(&*p.platform, &mut *params, status.as_ptr()) };
    assert!(status.result().unwrap_err().message.contains("struct_size"));
    let mut se = zeroed::<SP_StreamExecutor>();
    let mut params = zeroed::<SE_CreateStreamExecutorParams>();
    params.struct_size = 8;
    params.stream_executor = &mut *se;
    unsafe { (p.fns.create_stream_executor.unwrap())(&*p.platform, &mut *params, status.as_ptr()) };
    assert!(status.result().unwrap_err().message.contains("struct_size"));
    assert!(se.allocate.is_none(), "the executor was filled from a short struct");
    let mut params = zeroed::<SE_CreateDeviceParams>();
    params.struct_size = 8;
    unsafe { (p.fns.create_device.unwrap())(&*p.platform, &mut *params, status.as_ptr()) };
    assert!(status.result().unwrap_err().message.contains("struct_size"));
    unsafe { (p.fns.create_device.unwrap())(&*p.platform, std::ptr::null_mut(), status.as_ptr()) };
    assert_eq!(status.result().unwrap_err().code, Code::InvalidArgument);
}

#[test]
fn init_plugin_refuses_a_second_call_and_other_versions() {
    let _ = plugin();
    let mut platform = zeroed::<SP_Platform>();
    let mut fns = zeroed::<SP_PlatformFns>();
    let mut params = zeroed::<SE_PlatformRegistrationParams>();
    params.struct_size = SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE;
    params.platform = &mut *platform;
    params.platform_fns = &mut *fns;
    let status = OwnedStatus::new();
    unsafe { tensorflow_wgpu::plugin::SE_InitPlugin(&mut *params, status.as_ptr()) };
    let err = status.result().unwrap_err();
    assert_eq!(err.code, Code::FailedPrecondition);
    assert!(err.message.contains("already"), "{}", err.message);

    params.major_version = 1;
    unsafe { tensorflow_wgpu::plugin::SE_InitPlugin(&mut *params, status.as_ptr()) };
    assert!(status.result().unwrap_err().message.contains("version"));

    params.major_version = 0;
    params.struct_size = 16;
    unsafe { tensorflow_wgpu::plugin::SE_InitPlugin(&mut *params, status.as_ptr()) };
    assert!(status.result().unwrap_err().message.contains("struct_size"));

    unsafe { tensorflow_wgpu::plugin::SE_InitPlugin(std::ptr::null_mut(), status.as_ptr()) };
    assert_eq!(status.result().unwrap_err().code, Code::InvalidArgument);
}

#[test]
fn device_reports_itself() {
    let p = plugin();
    assert_eq!(p.platform.struct_size, SP_PLATFORM_STRUCT_SIZE);
    let name = unsafe { std::ffi::CStr::from_ptr(p.platform.name) };
    let kind = unsafe { std::ffi::CStr::from_ptr(p.platform.type_) };
    assert_eq!((name.to_str().unwrap(), kind.to_str().unwrap()), ("WGPU", "GPU"));
    // TF's BFC allocator serves tensors from the plugin's regions unless TF_WGPU_ALLOCATOR=pool.
    let pool = std::env::var("TF_WGPU_ALLOCATOR").is_ok_and(|v| v.trim() == "pool");
    assert_eq!(p.platform.use_bfc_allocator, u8::from(!pool));
    let hardware = unsafe { std::ffi::CStr::from_ptr(p.device.hardware_name) }.to_string_lossy();
    assert!(!hardware.is_empty());
    let mut fns = zeroed::<SP_DeviceFns>();
    let mut params = zeroed::<SE_CreateDeviceFnsParams>();
    params.struct_size = SE_CREATE_DEVICE_FNS_PARAMS_STRUCT_SIZE;
    params.device_fns = &mut *fns;
    let status = OwnedStatus::new();
    unsafe { (p.fns.create_device_fns.unwrap())(&*p.platform, &mut *params, status.as_ptr()) };
    check(&status);
    assert_eq!(unsafe { (fns.get_numa_node.unwrap())(p.dev()) }, -1);
    assert!(unsafe { (fns.get_gflops.unwrap())(p.dev()) } < 0.0);
    let (mut free, mut total) = (0i64, 0i64);
    assert_eq!(unsafe { (p.se.device_memory_usage.unwrap())(p.dev(), &mut free, &mut total) }, 1);
    assert!(total > 0 && free <= total);
    // The budget, plus the margin TF keeps back for the system, so that TF may use all of it.
    let budget = tensorflow_wgpu::runtime::instance::opened_device(0).map(|d| d.memory.limit() as i64);
    if let Some(budget) = budget {
        assert!(free >= budget + (255 << 20), "free {free}, budget {budget}");
    }
    let host = unsafe { (p.se.host_memory_allocate.unwrap())(p.dev(), 1000) };
    assert!(!host.is_null() && (host as usize).is_multiple_of(64));
    unsafe { (p.se.host_memory_deallocate.unwrap())(p.dev(), host) };
    assert!(unsafe { (p.se.unified_memory_allocate.unwrap())(p.dev(), 1000) }.is_null());
}
