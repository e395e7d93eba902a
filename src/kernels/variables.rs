//! Resource-variable ops whose kernels would need the variable's tensor: ResourceGather,
//! AssignAddVariableOp, AssignSubVariableOp, ResourceApplyGradientDescent.
//!
//! TF's kernel C API reaches a variable's tensor only through `kernels_experimental.h`, which TF
//! 2.20+ does not export. These rows exist so that TF places the ops on the WGPU device (where the
//! variable lives) instead of failing, or, for AssignAdd/AssignSub, instead of running TF core's
//! DEVICE_DEFAULT kernels, which read device memory as host memory and crash. In graphs
//! (`tf.function`, Keras `fit`) the Grappler plugin rewrites them into ops that run
//! (`crate::rewrite`), so `compute` is reached only in eager mode, where it says what to do instead.

use crate::error::{Error, Result};

use super::{KernelContext, KernelInstance};

pub fn eager_only_in_graphs(_ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let instead = match kernel.def.op {
        "ResourceGather" => "tf.gather(v.read_value(), indices)",
        "AssignSubVariableOp" => "v.assign(v - x)",
        "ResourceApplyGradientDescent" => "v.assign(v - alpha * delta)",
        _ => "v.assign(v + x)",
    };
    Err(Error::unimplemented(format!(
        "{op} on the WGPU device runs inside tf.function only: this TensorFlow does not export \
         the variable-access functions of kernels_experimental.h to plugins, so the plugin's graph pass \
         rewrites {op} into ReadVariableOp and ops it can run. In eager mode, write {instead}, or \
         wrap the code in tf.function.",
        op = kernel.def.op
    )))
}
