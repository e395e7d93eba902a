//! Kernels over tensors larger than one storage binding, run a batch at a time.
//!
//! Convolutions, pools, softmax rows and matmul rows are independent along their leading (batch)
//! dimension. When such a kernel finds a tensor too big to bind (`is_binding_limit`),
//! `split_batch_on_overflow` runs it again on ranges of the batch: its batched inputs and outputs
//! become row ranges of the same memory (no copies), shape inputs name the part's batch, and
//! outputs summed over the batch (filter gradients) are accumulated part by part. A part too big
//! for a binding halves until it fits.

use crate::error::{Code, Error, Result};
use crate::runtime::pipeline::BINDING_LIMIT_ERROR;
use crate::runtime::Stream;

use super::binary::{self, BinaryOp};
use super::windows::rows;
use super::{ComputeFn, DType, KernelContext, KernelInstance, TensorRef, VariableWork};

/// Whether `e` is the error of a tensor too big for a storage binding.
pub fn is_binding_limit(e: &Error) -> bool {
    e.code == Code::Unimplemented && e.message.starts_with(BINDING_LIMIT_ERROR)
}

/// How an op's arguments relate to its batch.
pub struct BatchArgs {
    /// Inputs whose leading dimension is the batch.
    pub inputs: &'static [usize],
    /// Host inputs holding a batched tensor's shape (`input_sizes`), batch first.
    pub shape_inputs: &'static [usize],
    /// Outputs whose leading dimension is the batch.
    pub outputs: &'static [usize],
    /// Outputs that sum over the batch (filter gradients).
    pub summed_outputs: &'static [usize],
}

/// An op whose input 0 and output 0 share their leading (batch) dimension.
pub const INPUT_0_OUTPUT_0: BatchArgs =
    BatchArgs { inputs: &[0], shape_inputs: &[], outputs: &[0], summed_outputs: &[] };

/// `split_batch_on_overflow` where `args` is Some (the node's tensors share a leading batch
/// dimension as it says), else `compute` on the whole node.
pub fn split_batch_if(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    args: Option<&BatchArgs>,
    compute: ComputeFn,
) -> Result<()> {
    match args {
        Some(args) => split_batch_on_overflow(ctx, kernel, args, compute),
        None => compute(ctx, kernel),
    }
}

/// Runs `compute`; if a tensor was too big to bind, runs it again a range of the batch at a time.
pub fn split_batch_on_overflow(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    args: &BatchArgs,
    compute: ComputeFn,
) -> Result<()> {
    let mut whole = BatchContext::new(ctx, args, None);
    let error = match compute(&mut whole, kernel) {
        Err(e) if is_binding_limit(&e) => e,
        other => return other,
    };
    let mut allocated = std::mem::take(&mut whole.allocated);
    let batch = match args.inputs.first() {
        Some(&i) => ctx.input(i)?.shape.first().copied().unwrap_or(0),
        None => return Err(error),
    };
    for &i in args.inputs {
        if ctx.input(i)?.shape.first() != Some(&batch) {
            return Err(error);
        }
    }
    // Ranges of the batch, each retried at half the size while a tensor of it is too big to bind
    // (a later range can start off the binding alignment the first one had). Only a range that
    // ran adds its summed outputs.
    let mut per_part = batch / 2;
    let mut start = 0;
    while start < batch {
        if per_part < 1 {
            return Err(error);
        }
        let count = per_part.min(batch - start);
        let mut part = BatchContext::new(ctx, args, Some((start, count, batch)));
        part.allocated = std::mem::take(&mut allocated);
        let outcome = compute(&mut part, kernel).and_then(|()| part.finish_part());
        allocated = part.allocated;
        match outcome {
            Err(e) if is_binding_limit(&e) => per_part /= 2,
            Err(e) => return Err(e),
            Ok(()) => start += count,
        }
    }
    Ok(())
}

/// The context a kernel sees: the whole node (`part` None), or rows `start..start + count` of a
/// batch of `batch` (`part` Some).
struct BatchContext<'a> {
    inner: &'a mut dyn KernelContext,
    args: &'a BatchArgs,
    part: Option<(i64, i64, i64)>,
    /// Outputs allocated so far, by index: TF allocates each once.
    allocated: Vec<(usize, TensorRef)>,
    /// Summed outputs of a later part: its temporary and the output it adds to.
    pending_sums: Vec<(TensorRef, TensorRef)>,
}

impl<'a> BatchContext<'a> {
    fn new(inner: &'a mut dyn KernelContext, args: &'a BatchArgs, part: Option<(i64, i64, i64)>) -> Self {
        BatchContext { inner, args, part, allocated: Vec::new(), pending_sums: Vec::new() }
    }

    /// The node's output `index` of `shape` (allocated on first request).
    fn output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        if let Some((_, t)) = self.allocated.iter().find(|(i, _)| *i == index) {
            return Ok(t.clone());
        }
        let t = self.inner.allocate_output(index, dtype, shape)?;
        self.allocated.push((index, t.clone()));
        Ok(t)
    }

    fn finish_part(&mut self) -> Result<()> {
        let stream = self.inner.stream()?;
        for (partial, total) in std::mem::take(&mut self.pending_sums) {
            binary::launch(stream, BinaryOp::Add, &total, &partial, &total)?;
        }
        Ok(())
    }
}

impl KernelContext for BatchContext<'_> {
    pass_through_to_inner!(variables);

    fn batch_start(&self) -> i64 {
        self.inner.batch_start() + self.part.map_or(0, |(start, _, _)| start)
    }

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        let input = self.inner.input(index)?;
        match self.part {
            Some((start, count, _)) if self.args.inputs.contains(&index) => Ok(rows(&input, start, count)),
            _ => Ok(input),
        }
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let Some((start, count, batch)) = self.part else {
            return self.output(index, dtype, shape);
        };
        if self.args.outputs.contains(&index) && !shape.is_empty() {
            let mut whole = shape.to_vec();
            whole[0] = batch;
            return Ok(rows(&self.output(index, dtype, &whole)?, start, count));
        }
        let first = start == 0;
        if first {
            return self.output(index, dtype, shape);
        }
        // Later parts: summed outputs add into the node's, other outputs (statistics passed
        // through) were written by the first part.
        let temp = self.inner.allocate_temp(dtype, shape)?;
        if self.args.summed_outputs.contains(&index) {
            let total = self.output(index, dtype, shape)?;
            self.pending_sums.push((temp.clone(), total));
        }
        Ok(temp)
    }

    fn forward_input_or_allocate_output(
        &mut self,
        candidates: &[usize],
        index: usize,
        dtype: DType,
        shape: &[i64],
    ) -> Result<TensorRef> {
        if self.part.is_none() {
            if let Some((_, t)) = self.allocated.iter().find(|(i, _)| *i == index) {
                return Ok(t.clone());
            }
            let t = self.inner.forward_input_or_allocate_output(candidates, index, dtype, shape)?;
            self.allocated.push((index, t.clone()));
            return Ok(t);
        }
        self.allocate_output(index, dtype, shape)
    }

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        let (mut values, shape) = self.inner.host_input_values(index)?;
        if let Some((_, count, _)) = self.part {
            // A full shape, batch first (Conv2DBackpropInput also takes [height, width] alone).
            if self.args.shape_inputs.contains(&index) && values.len() >= 3 {
                values[0] = count;
            }
        }
        Ok((values, shape))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_ranges_of_the_same_memory() {
        let t = TensorRef { address: 4096, dtype: DType::F32, shape: vec![6, 2, 3] };
        let part = rows(&t, 2, 3);
        assert_eq!(part.address, 4096 + 2 * 24);
        assert_eq!(part.shape, vec![3, 2, 3]);
    }

    #[test]
    fn binding_limit_errors_are_recognised() {
        assert!(is_binding_limit(&Error::unimplemented(format!("{BINDING_LIMIT_ERROR} 5 bytes exceeds"))));
        assert!(!is_binding_limit(&Error::invalid_argument(format!("{BINDING_LIMIT_ERROR} 5 bytes"))));
    }
}
