//! Byte-exact mirror of TF's Grappler plugin API (`tensorflow/c/experimental/grappler/grappler.h`)
//! and of `TF_Buffer` (`tf_buffer.h`).

use std::ffi::{c_char, c_void};

use super::tf::TF_Status;

pub type TF_TriState = i32;
pub const TF_TRISTATE_DEFAULT: TF_TriState = 0;
pub const TF_TRISTATE_OFF: TF_TriState = 1;

#[repr(C)]
pub struct TF_Buffer {
    pub data: *const c_void,
    pub length: usize,
    pub data_deallocator: Option<unsafe extern "C" fn(data: *mut c_void, length: usize)>,
}

#[repr(C)]
pub struct TF_GrapplerItem {
    _private: [u8; 0],
}

#[repr(C)]
pub struct TP_OptimizerConfigs {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub disable_model_pruning: TF_TriState,
    pub implementation_selector: TF_TriState,
    pub function_optimization: TF_TriState,
    pub common_subgraph_elimination: TF_TriState,
    pub arithmetic_optimization: TF_TriState,
    pub debug_stripper: TF_TriState,
    pub constant_folding: TF_TriState,
    pub shape_optimization: TF_TriState,
    pub auto_mixed_precision: TF_TriState,
    pub auto_mixed_precision_onednn_bfloat16: TF_TriState,
    pub auto_mixed_precision_mkl: TF_TriState,
    pub pin_to_host_optimization: TF_TriState,
    pub layout_optimizer: TF_TriState,
    pub remapping: TF_TriState,
    pub loop_optimization: TF_TriState,
    pub dependency_optimization: TF_TriState,
    pub auto_parallel: TF_TriState,
    pub memory_optimization: TF_TriState,
    pub scoped_allocator_optimization: TF_TriState,
}
pub const TP_OPTIMIZER_CONFIGS_STRUCT_SIZE: usize =
    std::mem::offset_of!(TP_OptimizerConfigs, scoped_allocator_optimization) + std::mem::size_of::<TF_TriState>();

#[repr(C)]
pub struct TP_Optimizer {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub create_func: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub optimize_func: Option<
        unsafe extern "C" fn(*mut c_void, *const TF_Buffer, *const TF_GrapplerItem, *mut TF_Buffer, *mut TF_Status),
    >,
    pub destroy_func: Option<unsafe extern "C" fn(*mut c_void)>,
}
pub const TP_OPTIMIZER_STRUCT_SIZE: usize =
    std::mem::offset_of!(TP_Optimizer, destroy_func) + std::mem::size_of::<usize>();

#[repr(C)]
pub struct TP_OptimizerRegistrationParams {
    pub struct_size: usize,
    pub ext: *mut c_void,
    pub major_version: i32,
    pub minor_version: i32,
    pub patch_version: i32,
    pub device_type: *const c_char,
    pub optimizer_configs: *mut TP_OptimizerConfigs,
    pub optimizer: *mut TP_Optimizer,
}
pub const TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE: usize =
    std::mem::offset_of!(TP_OptimizerRegistrationParams, optimizer) + std::mem::size_of::<usize>();
