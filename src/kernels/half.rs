//! float16 and bfloat16 kernels for ops whose shaders work in float32 (reductions, softmax,
//! convolutions, pools, batch norm, resizes, Einsum): the 16-bit inputs are cast into float32
//! temporaries, the op's float32 kernel runs on them, and its float32 results are cast back into
//! the 16-bit outputs. TF-CPU does the same for most of these ops (Eigen accumulates half in float),
//! and one path per op keeps the shaders single-typed.

use crate::error::{Error, Result};
use crate::runtime::Stream;

use super::{cast, DType, KernelContext, KernelDef, KernelInstance, TensorRef, KERNELS};

/// Whether `dtype` is a 16-bit float these kernels widen.
fn is_narrow(dtype: DType) -> bool {
    matches!(dtype, DType::F16 | DType::BF16)
}

/// The op's float32 row: the same op with every 16-bit float type constraint replaced by float32.
fn f32_twin(def: &KernelDef) -> Result<&'static KernelDef> {
    let wanted: Vec<(&str, DType)> =
        def.constraints.iter().map(|&(a, d)| (a, if is_narrow(d) { DType::F32 } else { d })).collect();
    KERNELS
        .iter()
        .find(|k| k.op == def.op && k.constraints == wanted.as_slice())
        .ok_or_else(|| Error::internal(format!("{}: no float32 kernel to run 16-bit floats through", def.op)))
}

/// Runs a float16 or bfloat16 node through its op's float32 kernel.
pub fn via_f32(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let twin = f32_twin(kernel.def)?;
    let instance = KernelInstance::new(twin, kernel.attrs.clone());
    let mut view = F32View { inner: ctx, pending: Vec::new(), widened: Vec::new() };
    (twin.compute)(&mut view, &instance)?;
    let F32View { inner, pending, .. } = view;
    let stream = inner.stream()?;
    for (wide, out) in pending {
        cast::launch(stream, &wide, &out)?;
    }
    Ok(())
}

/// A `KernelContext` that shows 16-bit float tensors to a float32 kernel as float32 temporaries.
struct F32View<'a> {
    inner: &'a mut dyn KernelContext,
    /// (float32 temporary the kernel writes, 16-bit output it is cast into afterwards).
    pending: Vec<(TensorRef, TensorRef)>,
    /// Inputs already cast, by index: kernels may read an input more than once.
    widened: Vec<(usize, TensorRef)>,
}

impl F32View<'_> {
    fn widen(&mut self, tensor: TensorRef) -> Result<TensorRef> {
        if !is_narrow(tensor.dtype) {
            return Ok(tensor);
        }
        let wide = self.inner.allocate_temp(DType::F32, &tensor.shape)?;
        cast::launch(self.inner.stream()?, &tensor, &wide)?;
        Ok(wide)
    }
}

impl KernelContext for F32View<'_> {
    pass_through_to_inner!();
    pass_through_to_inner!(batch_start);

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        if let Some((_, wide)) = self.widened.iter().find(|(i, _)| *i == index) {
            return Ok(wide.clone());
        }
        let tensor = self.inner.input(index)?;
        let wide = self.widen(tensor)?;
        self.widened.push((index, wide.clone()));
        Ok(wide)
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let expected = self.inner.expected_output_dtype(index)?;
        if dtype != DType::F32 || !is_narrow(expected) {
            return self.inner.allocate_output(index, dtype, shape);
        }
        let out = self.inner.allocate_output(index, expected, shape)?;
        let wide = self.inner.allocate_temp(DType::F32, shape)?;
        self.pending.push((wide.clone(), out));
        Ok(wide)
    }

    pass_through_to_inner!(no_forwarding);

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        self.inner.host_input_values(index)
    }
}
