//! `tensorflow/c/experimental/pluggable_profiler/pluggable_profiler.h` (API 0.0.1, unchanged from
//! TF 2.16 to 2.21).

use std::ffi::{c_char, c_void};

use super::tf::TF_Status;

pub const TP_MAJOR: i32 = 0;
pub const TP_MINOR: i32 = 0;
pub const TP_PATCH: i32 = 1;

#[repr(C)]
pub struct TP_Profiler {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub device_type: *const c_char,
}

pub const TP_PROFILER_STRUCT_SIZE: usize = offset_of_end!(TP_Profiler, device_type, *const c_char);

pub type ProfilerFn = unsafe extern "C" fn(*const TP_Profiler, *mut TF_Status);
pub type CollectXSpaceFn = unsafe extern "C" fn(*const TP_Profiler, *mut u8, *mut usize, *mut TF_Status);

#[repr(C)]
pub struct TP_ProfilerFns {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub start: Option<ProfilerFn>,
    pub stop: Option<ProfilerFn>,
    pub collect_data_xspace: Option<CollectXSpaceFn>,
}

pub const TP_PROFILER_FNS_STRUCT_SIZE: usize =
    offset_of_end!(TP_ProfilerFns, collect_data_xspace, Option<CollectXSpaceFn>);

#[repr(C)]
pub struct TF_ProfilerRegistrationParams {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub major_version: i32,
    pub minor_version: i32,
    pub patch_version: i32,
    pub profiler: *mut TP_Profiler,
    pub profiler_fns: *mut TP_ProfilerFns,
    pub destroy_profiler: Option<unsafe extern "C" fn(*mut TP_Profiler)>,
    pub destroy_profiler_fns: Option<unsafe extern "C" fn(*mut TP_ProfilerFns)>,
}

pub const TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE: usize = offset_of_end!(
    TF_ProfilerRegistrationParams,
    destroy_profiler_fns,
    Option<unsafe extern "C" fn(*mut TP_ProfilerFns)>
);
