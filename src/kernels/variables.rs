//! Resource-variable ops that need the variable's tensor: ResourceGather, ResourceGatherNd,
//! AssignAddVariableOp, AssignSubVariableOp, ResourceScatter{Add,Sub,Mul,Div,Min,Max,Update},
//! ResourceScatterNd{Add,Sub,Update,Min,Max}, and the TF1 optimizers' ResourceApply* and
//! ResourceSparseApply* ops (`crate::optimizer` lists them).
//!
//! TF's kernel C API reaches a variable's tensor only through `kernels_experimental.h`. Where TF
//! exports it (2.16), these kernels lock the variable and update or read its tensor on the device,
//! in eager mode as in graphs. TF 2.19 and later do not export it; there the rows still exist so
//! that TF places the ops on the WGPU device (where the variable lives) instead of failing, or, for
//! AssignAdd/AssignSub, instead of running TF core's DEVICE_DEFAULT kernels, which read device
//! memory as host memory and crash. In graphs (`tf.function`, Keras `fit`) the Grappler plugin
//! rewrites them into ops that run (`crate::rewrite`) on every version, so `compute` is reached
//! without variable access only in eager mode, where it says what to do instead.

use crate::error::{Error, Result};
use crate::optimizer::{Arithmetic, Optimizer};

use super::binary::{self, BinaryOp};
use super::scatter::{self, Combine};
use super::unary::{self, UnaryOp};
use super::{cast, complex, index, integer, DType, KernelContext, KernelInstance, TensorRef};

pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    if !ctx.variables_accessible() {
        return Err(needs_a_graph(kernel.def.op));
    }
    match kernel.def.op {
        "ResourceGather" => gather(ctx, kernel),
        "ResourceGatherNd" => gather_nd(ctx),
        "AssignAddVariableOp" | "AssignSubVariableOp" => assign_update(ctx, kernel.def.op),
        op if op.starts_with("ResourceScatterNd") => scatter_nd_update(ctx, kernel, op),
        op if op.starts_with("ResourceScatter") => scatter_update(ctx, op),
        op => apply_optimizer(ctx, kernel, op),
    }
}

fn needs_a_graph(op: &str) -> Error {
    let instead = match op {
        "ResourceGather" => "tf.gather(v.read_value(), indices)",
        "ResourceGatherNd" => "tf.gather_nd(v.read_value(), indices)",
        "AssignSubVariableOp" => "v.assign(v - x)",
        "ResourceApplyGradientDescent" => "v.assign(v - alpha * delta)",
        "AssignAddVariableOp" => "v.assign(v + x)",
        _ => "a Keras optimizer, which updates with assign",
    };
    Error::unimplemented(format!(
        "{op} on the WGPU device runs inside tf.function only: this TensorFlow does not export \
         the variable-access functions of kernels_experimental.h to plugins, so the plugin's graph pass \
         rewrites {op} into ReadVariableOp and ops it can run. In eager mode, write {instead}, or \
         wrap the code in tf.function."
    ))
}

/// AssignAddVariableOp / AssignSubVariableOp: the variable's tensor updated in place.
fn assign_update(ctx: &mut dyn KernelContext, op: &str) -> Result<()> {
    let value = ctx.input(1)?;
    ctx.with_variables(&[0], &mut |ctx, variables| {
        let variable = &variables[0];
        if variable.shape != value.shape {
            return Err(Error::invalid_argument(format!(
                "Cannot update variable with shape {:?} using a Tensor with shape {:?}, shapes must be equal.",
                variable.shape, value.shape
            )));
        }
        let subtract = op == "AssignSubVariableOp";
        let math = if subtract { BinaryOp::Sub } else { BinaryOp::Add };
        match variable.dtype {
            DType::BF16 => {
                // float32 math rounded once, as TF's bfloat16 kernels round each op's result.
                let wide = ctx.allocate_temp(DType::F32, &variable.shape)?;
                let wide_value = ctx.allocate_temp(DType::F32, &value.shape)?;
                let stream = ctx.stream()?;
                cast::launch(stream, variable, &wide)?;
                cast::launch(stream, &value, &wide_value)?;
                binary::launch(stream, math, &wide, &wide_value, &wide)?;
                cast::launch(stream, &wide, variable)
            }
            // Complex values add as their float parts.
            DType::C64 | DType::C128 => {
                let parts = complex::as_parts(variable);
                binary::launch(ctx.stream()?, math, &parts, &complex::as_parts(&value), &parts)
            }
            DType::F32 | DType::F16 | DType::F64 => binary::launch(ctx.stream()?, math, variable, &value, variable),
            dtype if integer::is_integral(dtype) && dtype != DType::Bool => {
                let code = if subtract { integer::SUB } else { integer::ADD };
                integer::launch(ctx.stream()?, code, variable, &value, variable)
            }
            other => Err(Error::unimplemented(format!("{op} of a {} variable on WGPU", other.tf_name()))),
        }
    })
}

/// ResourceScatter{Add,Sub,Mul,Div,Min,Max,Update} (Keras optimizers update Embeddings from their
/// sparse gradients with Add/Sub): the rows of `updates` combined into the variable's rows that
/// `indices` name, in place. Out-of-range indices are dropped, as on TF-GPU.
fn scatter_update(ctx: &mut dyn KernelContext, op: &str) -> Result<()> {
    let combine = Combine::of_op(op).ok_or_else(|| Error::internal(format!("{op} is not a scatter")))?;
    let indices = ctx.input(1)?;
    let updates = ctx.input(2)?;
    ctx.with_variables(&[0], &mut |ctx, variables| {
        let variable = &variables[0];
        let rows = *variable.shape.first().ok_or_else(|| Error::invalid_argument("params must be at least 1-D"))?;
        let mut want = indices.shape.clone();
        want.extend_from_slice(&variable.shape[1..]);
        if updates.shape != want && !updates.shape.is_empty() {
            return Err(Error::invalid_argument(format!(
                "Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], got \
                 updates.shape {:?}, indices.shape {:?}, params.shape {:?}",
                updates.shape, indices.shape, variable.shape
            )));
        }
        // A scalar update stands for every row: spread it over `want` first.
        let full = if updates.shape.is_empty() {
            let spread = ctx.allocate_temp(updates.dtype, &want)?;
            let dims: Vec<index::DimMap> = want.iter().map(|&d| index::DimMap::spread(d)).collect();
            index::map(ctx.stream()?, &updates, &spread, &dims, None)?;
            spread
        } else {
            updates.clone()
        };
        scatter::scatter(ctx.stream()?, combine, &indices, &[rows], &full, variable)
    })
}

/// ResourceScatterNd{Add,Sub,Update,Min,Max}: TensorScatter*'s update of the variable, in place.
fn scatter_nd_update(ctx: &mut dyn KernelContext, kernel: &KernelInstance, op: &str) -> Result<()> {
    scatter::check_bad_indices_policy(kernel)?;
    let combine = Combine::of_op(op).ok_or_else(|| Error::internal(format!("{op} is not a scatter")))?;
    let indices = ctx.input(1)?;
    let updates = ctx.input(2)?;
    ctx.with_variables(&[0], &mut |ctx, variables| {
        let variable = &variables[0];
        let depth = scatter::check_scatter_nd(&indices, &updates, &variable.shape)?;
        scatter::scatter(ctx.stream()?, combine, &indices, &variable.shape[..depth], &updates, variable)
    })
}

/// ResourceGatherNd: GatherNd of the variable's tensor.
fn gather_nd(ctx: &mut dyn KernelContext) -> Result<()> {
    let indices = ctx.input(1)?;
    ctx.with_variables(&[0], &mut |ctx, params| {
        let params = &params[0];
        let (depth, shape) = scatter::gather_nd_shape(params, &indices)?;
        let out = ctx.allocate_output(0, params.dtype, &shape)?;
        scatter::gather(ctx.stream()?, params, &indices, &params.shape[..depth], &out)
    })
}

/// ResourceGather: GatherV2 on axis `batch_dims` (0) of the variable's tensor.
fn gather(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let batch_dims = kernel.attrs.int("batch_dims")?;
    let indices = ctx.input(1)?;
    ctx.with_variables(&[0], &mut |ctx, params| index::gather_into(ctx, &params[0], &indices, batch_dims, batch_dims))
}

/// Evaluates an update formula with launches, each result in a fresh temporary.
struct Launches<'a> {
    ctx: &'a mut dyn KernelContext,
    /// The variables' dtype.
    dtype: DType,
}

impl Launches<'_> {
    fn binary(&mut self, op: BinaryOp, a: &TensorRef, b: &TensorRef) -> Result<TensorRef> {
        let shape = binary::broadcast_shapes(&a.shape, &b.shape)?;
        let out = self.ctx.allocate_temp(a.dtype, &shape)?;
        binary::launch(self.ctx.stream()?, op, a, b, &out)?;
        Ok(out)
    }

    fn unary(&mut self, op: UnaryOp, a: &TensorRef) -> Result<TensorRef> {
        let out = self.ctx.allocate_temp(a.dtype, &a.shape)?;
        unary::launch(self.ctx.stream()?, op, 0.0, a, &out)?;
        Ok(out)
    }
}

impl Arithmetic for Launches<'_> {
    type Value = TensorRef;
    type Error = Error;
    fn add(&mut self, a: &TensorRef, b: &TensorRef) -> Result<TensorRef> {
        self.binary(BinaryOp::Add, a, b)
    }
    fn sub(&mut self, a: &TensorRef, b: &TensorRef) -> Result<TensorRef> {
        self.binary(BinaryOp::Sub, a, b)
    }
    fn mul(&mut self, a: &TensorRef, b: &TensorRef) -> Result<TensorRef> {
        self.binary(BinaryOp::Mul, a, b)
    }
    fn div(&mut self, a: &TensorRef, b: &TensorRef) -> Result<TensorRef> {
        self.binary(BinaryOp::RealDiv, a, b)
    }
    fn square(&mut self, a: &TensorRef) -> Result<TensorRef> {
        self.unary(UnaryOp::Square, a)
    }
    fn sqrt(&mut self, a: &TensorRef) -> Result<TensorRef> {
        self.unary(UnaryOp::Sqrt, a)
    }
    fn rsqrt(&mut self, a: &TensorRef) -> Result<TensorRef> {
        self.unary(UnaryOp::Rsqrt, a)
    }
    fn exp(&mut self, a: &TensorRef) -> Result<TensorRef> {
        self.unary(UnaryOp::Exp, a)
    }
    fn ones_like(&mut self, a: &TensorRef) -> Result<TensorRef> {
        self.unary(UnaryOp::OnesLike, a)
    }
    fn abs(&mut self, a: &TensorRef) -> Result<TensorRef> {
        self.unary(UnaryOp::Abs, a)
    }
    fn sign(&mut self, a: &TensorRef) -> Result<TensorRef> {
        self.unary(UnaryOp::Sign, a)
    }
    fn relu(&mut self, a: &TensorRef) -> Result<TensorRef> {
        self.unary(UnaryOp::Relu, a)
    }
    fn pow(&mut self, a: &TensorRef, b: &TensorRef) -> Result<TensorRef> {
        self.binary(BinaryOp::Pow, a, b)
    }
    fn minimum(&mut self, a: &TensorRef, b: &TensorRef) -> Result<TensorRef> {
        self.binary(BinaryOp::Minimum, a, b)
    }
    fn maximum(&mut self, a: &TensorRef, b: &TensorRef) -> Result<TensorRef> {
        self.binary(BinaryOp::Maximum, a, b)
    }
    fn select_greater(
        &mut self,
        a: &TensorRef,
        b: &TensorRef,
        then: &TensorRef,
        otherwise: &TensorRef,
    ) -> Result<TensorRef> {
        let shape = binary::broadcast_shapes(&a.shape, &b.shape)?;
        let greater = self.ctx.allocate_temp(DType::Bool, &shape)?;
        binary::launch_compare(self.ctx.stream()?, "Greater", a.dtype, a, b, &greater)?;
        let shape = binary::broadcast_shapes(&binary::broadcast_shapes(&shape, &then.shape)?, &otherwise.shape)?;
        let out = self.ctx.allocate_temp(then.dtype, &shape)?;
        binary::launch_select(self.ctx.stream()?, &greater, then, otherwise, &out)?;
        Ok(out)
    }
    fn step_as_float(&mut self, step: &TensorRef) -> Result<TensorRef> {
        let out = self.ctx.allocate_temp(self.dtype, &step.shape)?;
        super::cast::launch(self.ctx.stream()?, step, &out)?;
        Ok(out)
    }
}

/// The TF1 optimizers' fused ops: TF-CPU's formula (`crate::optimizer`) on the locked variables, whose
/// new values are copied back into them. A sparse op's formula runs on the rows its indices name,
/// gathered, and its results are scattered back (with duplicate indices one row's update wins, as
/// on TF-GPU).
fn apply_optimizer(ctx: &mut dyn KernelContext, kernel: &KernelInstance, op: &str) -> Result<()> {
    let flag = |name: &str, default: bool| kernel.attrs.bool(name).unwrap_or(default);
    let optimizer = Optimizer::from_op(op, flag).ok_or_else(|| Error::internal(format!("{op} is not an optimizer")))?;
    let sparse = Optimizer::is_sparse(op);
    let (variables, others) = optimizer.arity();
    let indices_at = variables + optimizer.gradient_index() + 1;
    let args = (variables..variables + others + usize::from(sparse))
        .filter(|&i| !sparse || i != indices_at)
        .map(|i| ctx.input(i))
        .collect::<Result<Vec<_>>>()?;
    let grad = &args[optimizer.gradient_index()];
    // As TF-CPU's kernels: learning rates, decays and epsilons are scalars.
    if let Some((k, other)) =
        args.iter().enumerate().find(|(k, a)| *k != optimizer.gradient_index() && !a.shape.is_empty())
    {
        return Err(Error::invalid_argument(format!(
            "{op}: input {} is not a scalar: {:?}",
            variables + k,
            other.shape
        )));
    }
    let indices = if sparse { Some(ctx.input(indices_at)?) } else { None };
    let resources: Vec<usize> = (0..variables).collect();
    ctx.with_variables(&resources, &mut |ctx, current| {
        let Some(indices) = &indices else {
            if let Some(other) = current.iter().find(|v| v.shape != grad.shape) {
                return Err(Error::invalid_argument(format!(
                    "{op}: variables and grad must have the same shape: {:?} vs {:?}",
                    other.shape, grad.shape
                )));
            }
            let updated = optimizer.update(&mut Launches { ctx: &mut *ctx, dtype: grad.dtype }, current, &args)?;
            let stream = ctx.stream()?;
            for (variable, value) in current.iter().zip(updated) {
                if let Some(value) = value {
                    stream.memcpy_dtod(variable.address, value.address, variable.byte_len())?;
                }
            }
            return Ok(());
        };
        check_sparse_shapes(op, current, grad, indices)?;
        let rows = current[0].shape[0];
        let mut gathered = Vec::with_capacity(current.len());
        for variable in current.iter() {
            let row_values = ctx.allocate_temp(variable.dtype, &grad.shape)?;
            scatter::gather(ctx.stream()?, variable, indices, &[rows], &row_values)?;
            gathered.push(row_values);
        }
        let updated = optimizer.update(&mut Launches { ctx: &mut *ctx, dtype: grad.dtype }, &gathered, &args)?;
        let stream = ctx.stream()?;
        for (variable, value) in current.iter().zip(updated) {
            if let Some(value) = value {
                scatter::scatter(stream, Combine::Assign, indices, &[rows], &value, variable)?;
            }
        }
        Ok(())
    })
}

/// TF's checks of a sparse apply's operands.
fn check_sparse_shapes(op: &str, variables: &[TensorRef], grad: &TensorRef, indices: &TensorRef) -> Result<()> {
    let var = &variables[0];
    if let Some(other) = variables.iter().find(|v| v.shape != var.shape) {
        return Err(Error::invalid_argument(format!(
            "{op}: var and accum do not have the same shape {:?} {:?}",
            var.shape, other.shape
        )));
    }
    if var.shape.is_empty() {
        return Err(Error::invalid_argument(format!("{op}: var must be at least 1 dimensional")));
    }
    if indices.shape.len() != 1 {
        return Err(Error::invalid_argument(format!("{op}: indices must be one-dimensional")));
    }
    if grad.shape.first() != indices.shape.first() {
        return Err(Error::invalid_argument(format!(
            "{op}: grad must be the same size as indices in the first dimension."
        )));
    }
    if grad.shape[1..] != var.shape[1..] {
        return Err(Error::invalid_argument(format!(
            "{op}: var and grad must match in dimension 1..: {:?} vs {:?}",
            var.shape, grad.shape
        )));
    }
    Ok(())
}
