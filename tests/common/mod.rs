//! Drives the plugin through its C ABI the way TensorFlow core does, without TensorFlow.
#![allow(dead_code)]

use std::ffi::c_void;
use std::sync::OnceLock;

use tensorflow_wgpu::ffi::se::*;
use tensorflow_wgpu::ffi::tf::{OwnedStatus, TF_Status};

pub struct Plugin {
    pub platform: Box<SP_Platform>,
    pub fns: Box<SP_PlatformFns>,
    pub se: Box<SP_StreamExecutor>,
    pub device: Box<SP_Device>,
    pub timer_fns: Box<SP_TimerFns>,
}

// SAFETY (test harness): the structs are filled once and only read afterwards.
unsafe impl Sync for Plugin {}
unsafe impl Send for Plugin {}

pub fn zeroed<T>() -> Box<T> {
    // SAFETY: every mirrored struct is plain data for which all-zero bytes are valid (null pointers, None).
    Box::new(unsafe { std::mem::zeroed() })
}

pub fn check(status: &OwnedStatus) {
    if let Err(e) = status.result() {
        panic!("plugin call failed: {e}");
    }
}

/// Registers the plugin once per test process, as TF does, and opens device 0.
pub fn plugin() -> &'static Plugin {
    static PLUGIN: OnceLock<Plugin> = OnceLock::new();
    PLUGIN.get_or_init(|| unsafe {
        let mut platform = zeroed::<SP_Platform>();
        platform.struct_size = SP_PLATFORM_STRUCT_SIZE;
        let mut fns = zeroed::<SP_PlatformFns>();
        fns.struct_size = SP_PLATFORM_FNS_STRUCT_SIZE;
        let mut params = zeroed::<SE_PlatformRegistrationParams>();
        params.struct_size = SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE;
        params.major_version = SE_MAJOR;
        params.minor_version = SE_MINOR;
        params.patch_version = SE_PATCH;
        params.platform = &mut *platform;
        params.platform_fns = &mut *fns;
        let status = OwnedStatus::new();
        tensorflow_wgpu::plugin::SE_InitPlugin(&mut *params, status.as_ptr());
        check(&status);

        let mut count = 0;
        (fns.get_device_count.unwrap())(&*platform, &mut count, status.as_ptr());
        check(&status);
        assert!(count >= 1, "no WGPU adapter found (install mesa-vulkan-drivers for lavapipe)");

        let mut device = zeroed::<SP_Device>();
        device.struct_size = SP_DEVICE_STRUCT_SIZE;
        let mut dparams = zeroed::<SE_CreateDeviceParams>();
        dparams.struct_size = SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE;
        dparams.ordinal = 0;
        dparams.device = &mut *device;
        (fns.create_device.unwrap())(&*platform, &mut *dparams, status.as_ptr());
        check(&status);

        let mut se = zeroed::<SP_StreamExecutor>();
        se.struct_size = SP_STREAMEXECUTOR_STRUCT_SIZE;
        let mut sparams = zeroed::<SE_CreateStreamExecutorParams>();
        sparams.struct_size = SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE;
        sparams.stream_executor = &mut *se;
        (fns.create_stream_executor.unwrap())(&*platform, &mut *sparams, status.as_ptr());
        check(&status);

        let mut timer_fns = zeroed::<SP_TimerFns>();
        timer_fns.struct_size = SP_TIMER_FNS_STRUCT_SIZE;
        (fns.create_timer_fns.unwrap())(&*platform, &mut *timer_fns, status.as_ptr());
        check(&status);
        Plugin { platform, fns, se, device, timer_fns }
    })
}

/// A device allocation, freed on drop.
pub struct Mem {
    pub base: SP_DeviceMemoryBase,
}

impl Mem {
    pub fn at(&self, offset: u64) -> SP_DeviceMemoryBase {
        let mut m = self.base;
        m.opaque = (self.base.opaque as u64 + offset) as *mut c_void;
        m.size = self.base.size - offset;
        m
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        let p = plugin();
        unsafe { (p.se.deallocate.unwrap())(&*p.device, &mut self.base) };
    }
}

impl Plugin {
    pub fn dev(&self) -> *const SP_Device {
        &*self.device
    }

    pub fn alloc(&self, size: u64) -> Mem {
        let mut base: SP_DeviceMemoryBase = unsafe { std::mem::zeroed() };
        base.struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
        unsafe { (self.se.allocate.unwrap())(self.dev(), size, 0, &mut base) };
        assert!(!base.opaque.is_null(), "allocation of {size} bytes failed");
        Mem { base }
    }

    pub fn stream(&self) -> SP_Stream {
        let status = OwnedStatus::new();
        let mut s = std::ptr::null_mut();
        unsafe { (self.se.create_stream.unwrap())(self.dev(), &mut s, status.as_ptr()) };
        check(&status);
        s
    }

    pub fn destroy_stream(&self, s: SP_Stream) {
        unsafe { (self.se.destroy_stream.unwrap())(self.dev(), s) };
    }

    pub fn htod(&self, s: SP_Stream, dst: &SP_DeviceMemoryBase, data: &[u8]) {
        let status = OwnedStatus::new();
        let mut dst = *dst;
        unsafe {
            (self.se.memcpy_htod.unwrap())(
                self.dev(),
                s,
                &mut dst,
                data.as_ptr() as *const c_void,
                data.len() as u64,
                status.as_ptr(),
            )
        };
        check(&status);
    }

    /// Enqueues a device-to-host copy; `out` is filled once the stream gets there.
    pub fn dtoh(&self, s: SP_Stream, src: &SP_DeviceMemoryBase, out: &mut [u8]) {
        let status = OwnedStatus::new();
        unsafe {
            (self.se.memcpy_dtoh.unwrap())(
                self.dev(),
                s,
                out.as_mut_ptr() as *mut c_void,
                src,
                out.len() as u64,
                status.as_ptr(),
            )
        };
        check(&status);
    }

    pub fn dtod(&self, s: SP_Stream, dst: &SP_DeviceMemoryBase, src: &SP_DeviceMemoryBase, size: u64) {
        let status = OwnedStatus::new();
        let mut dst = *dst;
        unsafe { (self.se.memcpy_dtod.unwrap())(self.dev(), s, &mut dst, src, size, status.as_ptr()) };
        check(&status);
    }

    pub fn sync(&self, s: SP_Stream) {
        let status = OwnedStatus::new();
        unsafe { (self.se.block_host_until_done.unwrap())(self.dev(), s, status.as_ptr()) };
        check(&status);
    }

    pub fn stream_status(&self, s: SP_Stream) -> Result<(), tensorflow_wgpu::error::Error> {
        let status = OwnedStatus::new();
        unsafe { (self.se.get_stream_status.unwrap())(self.dev(), s, status.as_ptr()) };
        status.result()
    }

    pub fn event(&self) -> SP_Event {
        let status = OwnedStatus::new();
        let mut e = std::ptr::null_mut();
        unsafe { (self.se.create_event.unwrap())(self.dev(), &mut e, status.as_ptr()) };
        check(&status);
        e
    }

    pub fn record(&self, s: SP_Stream, e: SP_Event) {
        let status = OwnedStatus::new();
        unsafe { (self.se.record_event.unwrap())(self.dev(), s, e, status.as_ptr()) };
        check(&status);
    }

    pub fn event_status(&self, e: SP_Event) -> SE_EventStatus {
        unsafe { (self.se.get_event_status.unwrap())(self.dev(), e) }
    }

    pub fn read(&self, src: &SP_DeviceMemoryBase, len: usize) -> Vec<u8> {
        let s = self.stream();
        let mut out = vec![0u8; len];
        self.dtoh(s, src, &mut out);
        self.sync(s);
        self.destroy_stream(s);
        out
    }
}

/// Deterministic pseudo-random bytes.
pub fn bytes(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 8) as u8
        })
        .collect()
}

pub type StatusPtr = *mut TF_Status;
