//! Byte-exact mirror of TensorFlow 2.21's `tensorflow/c/experimental/stream_executor/stream_executor.h`.
//!
//! Written by hand because bindgen does not emit the `*_STRUCT_SIZE` macros; `tests/ffi_layout.rs`
//! checks every size against the values the header computes with `TF_OFFSET_OF_END`.

use std::ffi::{c_char, c_void};

use super::tf::{TF_Bool, TF_Status};

pub const SE_MAJOR: i32 = 0;
pub const SE_MINOR: i32 = 0;
pub const SE_PATCH: i32 = 1;

#[repr(C)]
pub struct SP_Stream_st {
    _private: [u8; 0],
}
#[repr(C)]
pub struct SP_Event_st {
    _private: [u8; 0],
}
#[repr(C)]
pub struct SP_Timer_st {
    _private: [u8; 0],
}
pub type SP_Stream = *mut SP_Stream_st;
pub type SP_Event = *mut SP_Event_st;
pub type SP_Timer = *mut SP_Timer_st;

pub type SE_StatusCallbackFn = Option<unsafe extern "C" fn(arg: *mut c_void, status: *mut TF_Status)>;

#[repr(C)]
pub struct SP_TimerFns {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub nanoseconds: Option<unsafe extern "C" fn(timer: SP_Timer) -> u64>,
}
pub const SP_TIMER_FNS_STRUCT_SIZE: usize = offset_of_end!(SP_TimerFns, nanoseconds, usize);

#[repr(C)]
#[derive(Default)]
pub struct SP_AllocatorStats {
    pub struct_size: usize,
    pub num_allocs: i64,
    pub bytes_in_use: i64,
    pub peak_bytes_in_use: i64,
    pub largest_alloc_size: i64,
    pub has_bytes_limit: i8,
    pub bytes_limit: i64,
    pub bytes_reserved: i64,
    pub peak_bytes_reserved: i64,
    pub has_bytes_reservable_limit: i8,
    pub bytes_reservable_limit: i64,
    pub largest_free_block_bytes: i64,
}
pub const SP_ALLOCATORSTATS_STRUCT_SIZE: usize = offset_of_end!(SP_AllocatorStats, largest_free_block_bytes, i64);

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SE_EventStatus {
    SE_EVENT_UNKNOWN = 0,
    SE_EVENT_ERROR = 1,
    SE_EVENT_PENDING = 2,
    SE_EVENT_COMPLETE = 3,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct SP_DeviceMemoryBase {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub opaque: *mut c_void,
    pub size: u64,
    pub payload: u64,
}
pub const SP_DEVICE_MEMORY_BASE_STRUCT_SIZE: usize = offset_of_end!(SP_DeviceMemoryBase, payload, u64);

#[repr(C)]
pub struct SP_Device {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub ordinal: i32,
    pub device_handle: *mut c_void,
    pub hardware_name: *const c_char,
    pub device_vendor: *const c_char,
    pub pci_bus_id: *const c_char,
}
pub const SP_DEVICE_STRUCT_SIZE: usize = offset_of_end!(SP_Device, pci_bus_id, usize);

#[repr(C)]
pub struct SE_CreateDeviceParams {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub ordinal: i32,
    pub device: *mut SP_Device,
}
pub const SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE: usize = offset_of_end!(SE_CreateDeviceParams, device, usize);

#[repr(C)]
pub struct SP_DeviceFns {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub get_numa_node: Option<unsafe extern "C" fn(device: *const SP_Device) -> i32>,
    pub get_memory_bandwidth: Option<unsafe extern "C" fn(device: *const SP_Device) -> i64>,
    pub get_gflops: Option<unsafe extern "C" fn(device: *const SP_Device) -> f64>,
}
pub const SP_DEVICE_FNS_STRUCT_SIZE: usize = offset_of_end!(SP_DeviceFns, get_gflops, usize);

#[repr(C)]
pub struct SE_CreateDeviceFnsParams {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub device_fns: *mut SP_DeviceFns,
}
pub const SE_CREATE_DEVICE_FNS_PARAMS_STRUCT_SIZE: usize = offset_of_end!(SE_CreateDeviceFnsParams, device_fns, usize);

type Dev = *const SP_Device;
type St = *mut TF_Status;

#[repr(C)]
pub struct SP_StreamExecutor {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub allocate: Option<unsafe extern "C" fn(Dev, u64, i64, *mut SP_DeviceMemoryBase)>,
    pub deallocate: Option<unsafe extern "C" fn(Dev, *mut SP_DeviceMemoryBase)>,
    pub host_memory_allocate: Option<unsafe extern "C" fn(Dev, u64) -> *mut c_void>,
    pub host_memory_deallocate: Option<unsafe extern "C" fn(Dev, *mut c_void)>,
    pub unified_memory_allocate: Option<unsafe extern "C" fn(Dev, u64) -> *mut c_void>,
    pub unified_memory_deallocate: Option<unsafe extern "C" fn(Dev, *mut c_void)>,
    pub get_allocator_stats: Option<unsafe extern "C" fn(Dev, *mut SP_AllocatorStats) -> TF_Bool>,
    pub device_memory_usage: Option<unsafe extern "C" fn(Dev, *mut i64, *mut i64) -> TF_Bool>,
    pub create_stream: Option<unsafe extern "C" fn(Dev, *mut SP_Stream, St)>,
    pub destroy_stream: Option<unsafe extern "C" fn(Dev, SP_Stream)>,
    pub create_stream_dependency: Option<unsafe extern "C" fn(Dev, SP_Stream, SP_Stream, St)>,
    pub get_stream_status: Option<unsafe extern "C" fn(Dev, SP_Stream, St)>,
    pub create_event: Option<unsafe extern "C" fn(Dev, *mut SP_Event, St)>,
    pub destroy_event: Option<unsafe extern "C" fn(Dev, SP_Event)>,
    pub get_event_status: Option<unsafe extern "C" fn(Dev, SP_Event) -> SE_EventStatus>,
    pub record_event: Option<unsafe extern "C" fn(Dev, SP_Stream, SP_Event, St)>,
    pub wait_for_event: Option<unsafe extern "C" fn(Dev, SP_Stream, SP_Event, St)>,
    pub create_timer: Option<unsafe extern "C" fn(Dev, *mut SP_Timer, St)>,
    pub destroy_timer: Option<unsafe extern "C" fn(Dev, SP_Timer)>,
    pub start_timer: Option<unsafe extern "C" fn(Dev, SP_Stream, SP_Timer, St)>,
    pub stop_timer: Option<unsafe extern "C" fn(Dev, SP_Stream, SP_Timer, St)>,
    pub memcpy_dtoh: Option<unsafe extern "C" fn(Dev, SP_Stream, *mut c_void, *const SP_DeviceMemoryBase, u64, St)>,
    pub memcpy_htod: Option<unsafe extern "C" fn(Dev, SP_Stream, *mut SP_DeviceMemoryBase, *const c_void, u64, St)>,
    pub memcpy_dtod:
        Option<unsafe extern "C" fn(Dev, SP_Stream, *mut SP_DeviceMemoryBase, *const SP_DeviceMemoryBase, u64, St)>,
    pub sync_memcpy_dtoh: Option<unsafe extern "C" fn(Dev, *mut c_void, *const SP_DeviceMemoryBase, u64, St)>,
    pub sync_memcpy_htod: Option<unsafe extern "C" fn(Dev, *mut SP_DeviceMemoryBase, *const c_void, u64, St)>,
    pub sync_memcpy_dtod:
        Option<unsafe extern "C" fn(Dev, *mut SP_DeviceMemoryBase, *const SP_DeviceMemoryBase, u64, St)>,
    pub block_host_for_event: Option<unsafe extern "C" fn(Dev, SP_Event, St)>,
    pub block_host_until_done: Option<unsafe extern "C" fn(Dev, SP_Stream, St)>,
    pub synchronize_all_activity: Option<unsafe extern "C" fn(Dev, St)>,
    pub mem_zero: Option<unsafe extern "C" fn(Dev, SP_Stream, *mut SP_DeviceMemoryBase, u64, St)>,
    pub memset: Option<unsafe extern "C" fn(Dev, SP_Stream, *mut SP_DeviceMemoryBase, u8, u64, St)>,
    pub memset32: Option<unsafe extern "C" fn(Dev, SP_Stream, *mut SP_DeviceMemoryBase, u32, u64, St)>,
    pub host_callback: Option<unsafe extern "C" fn(Dev, SP_Stream, SE_StatusCallbackFn, *mut c_void) -> TF_Bool>,
}
pub const SP_STREAMEXECUTOR_STRUCT_SIZE: usize = offset_of_end!(SP_StreamExecutor, host_callback, usize);

#[repr(C)]
pub struct SE_CreateStreamExecutorParams {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub stream_executor: *mut SP_StreamExecutor,
}
pub const SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE: usize =
    offset_of_end!(SE_CreateStreamExecutorParams, stream_executor, usize);

#[repr(C)]
pub struct SP_Platform {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub name: *const c_char,
    pub type_: *const c_char,
    pub supports_unified_memory: TF_Bool,
    pub use_bfc_allocator: TF_Bool,
    pub force_memory_growth: TF_Bool,
}
pub const SP_PLATFORM_STRUCT_SIZE: usize = offset_of_end!(SP_Platform, force_memory_growth, TF_Bool);

type Plat = *const SP_Platform;

#[repr(C)]
pub struct SP_PlatformFns {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub get_device_count: Option<unsafe extern "C" fn(Plat, *mut i32, St)>,
    pub create_device: Option<unsafe extern "C" fn(Plat, *mut SE_CreateDeviceParams, St)>,
    pub destroy_device: Option<unsafe extern "C" fn(Plat, *mut SP_Device)>,
    pub create_device_fns: Option<unsafe extern "C" fn(Plat, *mut SE_CreateDeviceFnsParams, St)>,
    pub destroy_device_fns: Option<unsafe extern "C" fn(Plat, *mut SP_DeviceFns)>,
    pub create_stream_executor: Option<unsafe extern "C" fn(Plat, *mut SE_CreateStreamExecutorParams, St)>,
    pub destroy_stream_executor: Option<unsafe extern "C" fn(Plat, *mut SP_StreamExecutor)>,
    pub create_timer_fns: Option<unsafe extern "C" fn(Plat, *mut SP_TimerFns, St)>,
    pub destroy_timer_fns: Option<unsafe extern "C" fn(Plat, *mut SP_TimerFns)>,
}
pub const SP_PLATFORM_FNS_STRUCT_SIZE: usize = offset_of_end!(SP_PlatformFns, destroy_timer_fns, usize);

#[repr(C)]
pub struct SE_PlatformRegistrationParams {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub major_version: i32,
    pub minor_version: i32,
    pub patch_version: i32,
    pub platform: *mut SP_Platform,
    pub platform_fns: *mut SP_PlatformFns,
    pub destroy_platform: Option<unsafe extern "C" fn(*mut SP_Platform)>,
    pub destroy_platform_fns: Option<unsafe extern "C" fn(*mut SP_PlatformFns)>,
}
pub const SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE: usize =
    offset_of_end!(SE_PlatformRegistrationParams, destroy_platform_fns, usize);
