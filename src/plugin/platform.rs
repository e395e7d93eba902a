//! `SE_InitPlugin` and the SP_PlatformFns callbacks: devices, device fns, executors, timer fns.

use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ffi::se::*;
use crate::ffi::tf::TF_Status;
use crate::runtime::{instance, Device};

use super::{executor, null_arg, with_status, DEVICE_TYPE, PLATFORM_NAME};

/// What `SP_Device.device_handle` points to.
pub struct DeviceHandle {
    pub device: Arc<Device>,
    _hardware_name: CString,
    _vendor: CString,
    _pci_bus_id: CString,
}

static INITIALISED: AtomicBool = AtomicBool::new(false);

fn check_struct_size(what: &str, given: usize, ours: usize) -> Result<()> {
    if given < ours {
        return Err(Error::failed_precondition(format!(
            "{what}.struct_size is {given}, tensorflow-wgpu needs at least {ours}: this TensorFlow is older than the plugin supports"
        )));
    }
    Ok(())
}

/// The plugin's entry point, called once by TensorFlow when it loads the library.
///
/// # Safety
/// `params` must point to TF's registration struct whose `platform`/`platform_fns` point to
/// writable structs, and `status` to a live `TF_Status`.
#[no_mangle]
pub unsafe extern "C" fn SE_InitPlugin(params: *mut SE_PlatformRegistrationParams, status: *mut TF_Status) {
    let _ = env_logger::Builder::from_env(env_logger::Env::default().filter_or("TF_WGPU_LOG", "warn")).try_init();
    with_status(status, || {
        // SAFETY: TF hands us a valid registration struct (null checked).
        let params = unsafe { params.as_mut() }.ok_or_else(|| null_arg("SE_PlatformRegistrationParams"))?;
        check_struct_size(
            "SE_PlatformRegistrationParams",
            params.struct_size,
            SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE,
        )?;
        if params.major_version != SE_MAJOR {
            return Err(Error::failed_precondition(format!(
                "StreamExecutor C API version {}.{}.{} is not supported (plugin built for {SE_MAJOR}.{SE_MINOR}.{SE_PATCH})",
                params.major_version, params.minor_version, params.patch_version
            )));
        }
        // SAFETY: TF owns these structs and passes them for us to fill (null checked).
        let platform = unsafe { params.platform.as_mut() }.ok_or_else(|| null_arg("SP_Platform"))?;
        let fns = unsafe { params.platform_fns.as_mut() }.ok_or_else(|| null_arg("SP_PlatformFns"))?;
        if INITIALISED.swap(true, Ordering::SeqCst) {
            return Err(Error::failed_precondition("SE_InitPlugin was already called in this process"));
        }
        platform.struct_size = SP_PLATFORM_STRUCT_SIZE;
        platform.ext = std::ptr::null_mut();
        platform.name = PLATFORM_NAME.as_ptr();
        platform.type_ = DEVICE_TYPE.as_ptr();
        platform.supports_unified_memory = 0;
        platform.use_bfc_allocator = u8::from(crate::runtime::memory::AllocatorKind::from_env().is_bfc());
        platform.force_memory_growth = 0;

        fns.struct_size = SP_PLATFORM_FNS_STRUCT_SIZE;
        fns.ext = std::ptr::null_mut();
        fns.get_device_count = Some(get_device_count);
        fns.create_device = Some(create_device);
        fns.destroy_device = Some(destroy_device);
        fns.create_device_fns = Some(create_device_fns);
        fns.destroy_device_fns = Some(destroy_device_fns);
        fns.create_stream_executor = Some(create_stream_executor);
        fns.destroy_stream_executor = Some(destroy_stream_executor);
        fns.create_timer_fns = Some(create_timer_fns);
        fns.destroy_timer_fns = Some(destroy_timer_fns);
        params.destroy_platform = Some(destroy_platform);
        params.destroy_platform_fns = Some(destroy_platform_fns);
        Ok(())
    })
}

unsafe extern "C" fn destroy_platform(_platform: *mut SP_Platform) {
    // The platform struct is TF's and points only at static strings: nothing to free.
}

unsafe extern "C" fn destroy_platform_fns(_fns: *mut SP_PlatformFns) {
    // Function pointers only: nothing to free.
}

unsafe extern "C" fn get_device_count(_platform: *const SP_Platform, count: *mut i32, status: *mut TF_Status) {
    with_status(status, || {
        // SAFETY: TF passes a writable int (null checked).
        let count = unsafe { count.as_mut() }.ok_or_else(|| null_arg("device_count"))?;
        *count = instance::device_count() as i32;
        Ok(())
    })
}

fn vendor_name(info: &wgpu::AdapterInfo) -> String {
    match info.vendor {
        0x10de => "NVIDIA".into(),
        0x1002 | 0x1022 => "AMD".into(),
        0x8086 => "Intel".into(),
        0x106b => "Apple".into(),
        0x13b5 => "ARM".into(),
        0x5143 => "Qualcomm".into(),
        0x10005 => "Mesa".into(),
        _ if !info.driver.is_empty() => info.driver.clone(),
        other => format!("vendor {other:#x}"),
    }
}

unsafe extern "C" fn create_device(
    _platform: *const SP_Platform,
    params: *mut SE_CreateDeviceParams,
    status: *mut TF_Status,
) {
    with_status(status, || {
        // SAFETY: TF passes its params struct, whose `device` it owns (null checked).
        let params = unsafe { params.as_mut() }.ok_or_else(|| null_arg("SE_CreateDeviceParams"))?;
        check_struct_size("SE_CreateDeviceParams", params.struct_size, SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE)?;
        let out = unsafe { params.device.as_mut() }.ok_or_else(|| null_arg("SP_Device"))?;
        let ordinal = usize::try_from(params.ordinal)
            .map_err(|_| Error::invalid_argument(format!("negative device ordinal {}", params.ordinal)))?;
        let device = instance::device(ordinal)?;
        let info = &device.info;
        let handle = Box::new(DeviceHandle {
            _hardware_name: CString::new(format!("{} ({:?})", info.name, info.backend)).unwrap_or_default(),
            _vendor: CString::new(vendor_name(info)).unwrap_or_default(),
            _pci_bus_id: CString::new(info.device_pci_bus_id.clone()).unwrap_or_default(),
            device,
        });
        out.struct_size = SP_DEVICE_STRUCT_SIZE;
        out.ext = std::ptr::null_mut();
        out.ordinal = params.ordinal;
        out.hardware_name = handle._hardware_name.as_ptr();
        out.device_vendor = handle._vendor.as_ptr();
        out.pci_bus_id = if handle._pci_bus_id.is_empty() { std::ptr::null() } else { handle._pci_bus_id.as_ptr() };
        out.device_handle = Box::into_raw(handle) as *mut c_void;
        Ok(())
    })
}

unsafe extern "C" fn destroy_device(_platform: *const SP_Platform, device: *mut SP_Device) {
    super::or_log("destroy_device", (), || {
        // SAFETY: `device` is one we filled in `create_device`; its handle is freed once here.
        if let Some(device) = unsafe { device.as_mut() } {
            if !device.device_handle.is_null() {
                drop(unsafe { Box::from_raw(device.device_handle as *mut DeviceHandle) });
                device.device_handle = std::ptr::null_mut();
            }
        }
        Ok(())
    })
}

unsafe extern "C" fn get_numa_node(_device: *const SP_Device) -> i32 {
    -1
}
unsafe extern "C" fn get_memory_bandwidth(_device: *const SP_Device) -> i64 {
    -1
}
unsafe extern "C" fn get_gflops(_device: *const SP_Device) -> f64 {
    -1.0
}

unsafe extern "C" fn create_device_fns(
    _platform: *const SP_Platform,
    params: *mut SE_CreateDeviceFnsParams,
    status: *mut TF_Status,
) {
    with_status(status, || {
        // SAFETY: TF passes its params struct and the SP_DeviceFns to fill (null checked).
        let params = unsafe { params.as_mut() }.ok_or_else(|| null_arg("SE_CreateDeviceFnsParams"))?;
        check_struct_size("SE_CreateDeviceFnsParams", params.struct_size, SE_CREATE_DEVICE_FNS_PARAMS_STRUCT_SIZE)?;
        let fns = unsafe { params.device_fns.as_mut() }.ok_or_else(|| null_arg("SP_DeviceFns"))?;
        // wgpu reports neither NUMA placement, bandwidth nor FLOPS: answer "unknown" (-1).
        fns.struct_size = SP_DEVICE_FNS_STRUCT_SIZE;
        fns.ext = std::ptr::null_mut();
        fns.get_numa_node = Some(get_numa_node);
        fns.get_memory_bandwidth = Some(get_memory_bandwidth);
        fns.get_gflops = Some(get_gflops);
        Ok(())
    })
}

unsafe extern "C" fn destroy_device_fns(_platform: *const SP_Platform, _fns: *mut SP_DeviceFns) {}

unsafe extern "C" fn create_stream_executor(
    _platform: *const SP_Platform,
    params: *mut SE_CreateStreamExecutorParams,
    status: *mut TF_Status,
) {
    with_status(status, || {
        // SAFETY: TF passes its params struct and the SP_StreamExecutor to fill (null checked).
        let params = unsafe { params.as_mut() }.ok_or_else(|| null_arg("SE_CreateStreamExecutorParams"))?;
        check_struct_size(
            "SE_CreateStreamExecutorParams",
            params.struct_size,
            SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE,
        )?;
        let se = unsafe { params.stream_executor.as_mut() }.ok_or_else(|| null_arg("SP_StreamExecutor"))?;
        executor::fill(se);
        Ok(())
    })
}

unsafe extern "C" fn destroy_stream_executor(_platform: *const SP_Platform, _se: *mut SP_StreamExecutor) {}

unsafe extern "C" fn create_timer_fns(_platform: *const SP_Platform, fns: *mut SP_TimerFns, status: *mut TF_Status) {
    with_status(status, || {
        // SAFETY: TF passes the SP_TimerFns to fill (null checked).
        let fns = unsafe { fns.as_mut() }.ok_or_else(|| null_arg("SP_TimerFns"))?;
        fns.struct_size = SP_TIMER_FNS_STRUCT_SIZE;
        fns.ext = std::ptr::null_mut();
        fns.nanoseconds = Some(executor::timer_nanoseconds);
        Ok(())
    })
}

unsafe extern "C" fn destroy_timer_fns(_platform: *const SP_Platform, _fns: *mut SP_TimerFns) {}
