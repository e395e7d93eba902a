//! `TF_InitGraph`: the Grappler plugin half of the plugin.
//!
//! Our device is of type `GPU`, so TF's Grappler would apply its CUDA-minded rewrites to graphs
//! placed on it: the layout optimizer turns NHWC convolutions, pools and batch norms into NCHW with
//! transposes around them, and the remapper fuses ops into `_Fused*` kernels. The WGPU kernels are
//! NHWC-native, so the plugin turns both optimizers off (TF applies plugin configs process-wide).
//! Its own optimizer rewrites the resource-variable ops our kernels cannot run (`crate::rewrite`).

use std::ffi::c_void;

use crate::error::{Error, Result};
use crate::ffi::grappler::*;
use crate::ffi::tf::TF_Status;

use super::{null_arg, with_status, DEVICE_TYPE};

unsafe extern "C" fn create_optimizer() -> *mut c_void {
    // No state: any non-null token will do.
    std::ptr::NonNull::<u8>::dangling().as_ptr() as *mut c_void
}

unsafe extern "C" fn destroy_optimizer(_optimizer: *mut c_void) {}

unsafe extern "C" fn free_graph_copy(data: *mut c_void, _length: usize) {
    // SAFETY: the buffer came from libc::malloc in `optimize_graph`.
    unsafe { libc::free(data) }
}

/// Hands back the graph with `crate::rewrite`'s rewrites applied.
unsafe extern "C" fn optimize_graph(
    _optimizer: *mut c_void,
    graph: *const TF_Buffer,
    _item: *const TF_GrapplerItem,
    optimized: *mut TF_Buffer,
    status: *mut TF_Status,
) {
    with_status(status, || {
        // SAFETY: TF passes the serialized input graph and a buffer to fill (null checked).
        let (graph, optimized) = unsafe { (graph.as_ref(), optimized.as_mut()) };
        let (graph, optimized) = graph.zip(optimized).ok_or_else(|| null_arg("graph buffer"))?;
        let input: &[u8] = if graph.length == 0 || graph.data.is_null() {
            &[]
        } else {
            // SAFETY: TF's buffer holds `graph.length` bytes at `graph.data` for this call.
            unsafe { std::slice::from_raw_parts(graph.data as *const u8, graph.length) }
        };
        let rewritten = crate::rewrite::rewrite_graph(input)?;
        let output = rewritten.as_deref().unwrap_or(input);
        // SAFETY: malloc of the output's length (at least 1 byte); TF frees it with `free_graph_copy`.
        let copy = unsafe { libc::malloc(output.len().max(1)) };
        if copy.is_null() {
            return Err(Error::resource_exhausted("cannot copy the graph"));
        }
        // SAFETY: `copy` has room for `output.len()` bytes; the regions are distinct.
        unsafe { std::ptr::copy_nonoverlapping(output.as_ptr(), copy as *mut u8, output.len()) };
        optimized.data = copy;
        optimized.length = output.len();
        optimized.data_deallocator = Some(free_graph_copy);
        Ok(())
    })
}

fn register(params: &mut TP_OptimizerRegistrationParams) -> Result<()> {
    if params.struct_size < TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE {
        return Err(Error::failed_precondition("TP_OptimizerRegistrationParams is older than this plugin"));
    }
    // SAFETY: TF owns these output structs and passes them for us to fill (null checked).
    let configs = unsafe { params.optimizer_configs.as_mut() }.ok_or_else(|| null_arg("TP_OptimizerConfigs"))?;
    let optimizer = unsafe { params.optimizer.as_mut() }.ok_or_else(|| null_arg("TP_Optimizer"))?;
    params.device_type = DEVICE_TYPE.as_ptr();
    configs.struct_size = TP_OPTIMIZER_CONFIGS_STRUCT_SIZE;
    configs.layout_optimizer = TF_TRISTATE_OFF;
    configs.remapping = TF_TRISTATE_OFF;
    optimizer.struct_size = TP_OPTIMIZER_STRUCT_SIZE;
    optimizer.create_func = Some(create_optimizer);
    optimizer.optimize_func = Some(optimize_graph);
    optimizer.destroy_func = Some(destroy_optimizer);
    Ok(())
}

/// Registers the Grappler plugin. Called by TensorFlow when it loads the library.
///
/// # Safety
/// `params` must point to TF's registration struct and `status` to a live `TF_Status`.
#[no_mangle]
pub unsafe extern "C" fn TF_InitGraph(params: *mut TP_OptimizerRegistrationParams, status: *mut TF_Status) {
    with_status(status, || {
        // SAFETY: TF passes its registration struct (null checked).
        register(unsafe { params.as_mut() }.ok_or_else(|| null_arg("TP_OptimizerRegistrationParams"))?)
    })
}
