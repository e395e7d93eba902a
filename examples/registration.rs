//! Loads the built plugin (dlopen, or LoadLibrary on Windows) and walks the registration sequence as TensorFlow core does:
//! SE_InitPlugin → device → stream executor → stream → H2D copy → round trip → event → D2H.
//!
//!     cargo build --lib && cargo run --example registration [path/to/libtensorflow_wgpu.so]
//!
//! The plugin falls back to its own TF_Status stand-in when TensorFlow is not loaded; this example
//! makes its statuses with the same crate's `OwnedStatus`, which uses that stand-in.

use std::ffi::{c_void, CStr};
use std::path::Path;

use tensorflow_wgpu::ffi::loader;
use tensorflow_wgpu::ffi::se::*;
use tensorflow_wgpu::ffi::tf::{OwnedStatus, TF_Status};

type InitPlugin = unsafe extern "C" fn(*mut SE_PlatformRegistrationParams, *mut TF_Status);

fn ok(step: &str, status: &OwnedStatus) {
    match status.result() {
        Ok(()) => println!("  {step}: OK"),
        Err(e) => panic!("{step} failed: {e}"),
    }
}

fn zeroed<T>() -> Box<T> {
    // SAFETY: the mirrored structs are plain data; all-zero is a valid (empty) value.
    Box::new(unsafe { std::mem::zeroed() })
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target").join(profile);
        dir.join(loader::plugin_file_name()).to_string_lossy().into_owned()
    });
    println!("load {path}");
    // Loading the plugin library, as TF's LoadLibrary does.
    let lib = loader::Library::open(Path::new(&path))
        .unwrap_or_else(|e| panic!("{e}: build it first with `cargo build --lib`"));
    let sym = lib.symbol(c"SE_InitPlugin");
    assert!(!sym.is_null(), "SE_InitPlugin not exported");
    // SAFETY: SE_InitPlugin has the signature of stream_executor.h.
    let init: InitPlugin = unsafe { std::mem::transmute::<*mut c_void, InitPlugin>(sym) };
    // TF_InitKernel is exported too; only its presence is checked here.
    assert!(!lib.symbol(c"TF_InitKernel").is_null(), "TF_InitKernel not exported");

    let status = OwnedStatus::new();
    let (mut platform, mut fns) = (zeroed::<SP_Platform>(), zeroed::<SP_PlatformFns>());
    platform.struct_size = SP_PLATFORM_STRUCT_SIZE;
    fns.struct_size = SP_PLATFORM_FNS_STRUCT_SIZE;
    let mut params = zeroed::<SE_PlatformRegistrationParams>();
    params.struct_size = SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE;
    (params.major_version, params.minor_version, params.patch_version) = (SE_MAJOR, SE_MINOR, SE_PATCH);
    params.platform = &mut *platform;
    params.platform_fns = &mut *fns;
    // SAFETY: the whole sequence below calls the plugin's callbacks with the structs TF would pass.
    unsafe {
        init(&mut *params, status.as_ptr());
        ok("SE_InitPlugin", &status);
        println!(
            "  platform {} / type {} (use_bfc_allocator={}, unified memory={})",
            CStr::from_ptr(platform.name).to_string_lossy(),
            CStr::from_ptr(platform.type_).to_string_lossy(),
            platform.use_bfc_allocator,
            platform.supports_unified_memory
        );
        let mut count = 0;
        (fns.get_device_count.unwrap())(&*platform, &mut count, status.as_ptr());
        ok("get_device_count", &status);
        println!("  {count} device(s)");

        let mut device = zeroed::<SP_Device>();
        device.struct_size = SP_DEVICE_STRUCT_SIZE;
        let mut dparams = zeroed::<SE_CreateDeviceParams>();
        dparams.struct_size = SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE;
        dparams.device = &mut *device;
        (fns.create_device.unwrap())(&*platform, &mut *dparams, status.as_ptr());
        ok("create_device(0)", &status);
        println!(
            "  hardware {:?}, vendor {:?}",
            CStr::from_ptr(device.hardware_name),
            CStr::from_ptr(device.device_vendor)
        );

        let mut se = zeroed::<SP_StreamExecutor>();
        se.struct_size = SP_STREAMEXECUTOR_STRUCT_SIZE;
        let mut sparams = zeroed::<SE_CreateStreamExecutorParams>();
        sparams.struct_size = SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE;
        sparams.stream_executor = &mut *se;
        (fns.create_stream_executor.unwrap())(&*platform, &mut *sparams, status.as_ptr());
        ok("create_stream_executor", &status);

        let dev: *const SP_Device = &*device;
        let mut stream = std::ptr::null_mut();
        (se.create_stream.unwrap())(dev, &mut stream, status.as_ptr());
        ok("create_stream", &status);

        let data: Vec<u8> = (0..1_000_003u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut mem: SP_DeviceMemoryBase = std::mem::zeroed();
        mem.struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
        (se.allocate.unwrap())(dev, data.len() as u64, 0, &mut mem);
        assert!(!mem.opaque.is_null());
        println!("  allocate({} bytes) -> {:#x}", data.len(), mem.opaque as u64);
        (se.memcpy_htod.unwrap())(
            dev,
            stream,
            &mut mem,
            data.as_ptr() as *const c_void,
            data.len() as u64,
            status.as_ptr(),
        );
        ok("memcpy_htod", &status);

        let mut copy = mem;
        (se.allocate.unwrap())(dev, data.len() as u64, 0, &mut copy);
        (se.memcpy_dtod.unwrap())(dev, stream, &mut copy, &mem, data.len() as u64, status.as_ptr());
        ok("memcpy_dtod (kernel-free round trip on the device)", &status);

        let mut event = std::ptr::null_mut();
        (se.create_event.unwrap())(dev, &mut event, status.as_ptr());
        ok("create_event", &status);
        let mut back = vec![0u8; data.len()];
        (se.memcpy_dtoh.unwrap())(
            dev,
            stream,
            back.as_mut_ptr() as *mut c_void,
            &copy,
            data.len() as u64,
            status.as_ptr(),
        );
        ok("memcpy_dtoh", &status);
        (se.record_event.unwrap())(dev, stream, event, status.as_ptr());
        ok("record_event", &status);
        println!("  event status right after record: {:?}", (se.get_event_status.unwrap())(dev, event));
        (se.block_host_for_event.unwrap())(dev, event, status.as_ptr());
        ok("block_host_for_event", &status);
        println!("  event status after waiting: {:?}", (se.get_event_status.unwrap())(dev, event));
        assert_eq!(back, data, "round trip mismatch");
        println!("  round trip of {} bytes is bit-exact", data.len());

        let mut stats = SP_AllocatorStats { struct_size: SP_ALLOCATORSTATS_STRUCT_SIZE, ..Default::default() };
        (se.get_allocator_stats.unwrap())(dev, &mut stats);
        println!("  allocator: {} bytes in use, peak {}", stats.bytes_in_use, stats.peak_bytes_in_use);

        (se.destroy_event.unwrap())(dev, event);
        (se.deallocate.unwrap())(dev, &mut mem);
        (se.deallocate.unwrap())(dev, &mut copy);
        (se.destroy_stream.unwrap())(dev, stream);
        (fns.destroy_device.unwrap())(&*platform, &mut *device);
        println!("done");
    }
}
