//! Convolutions of images whose one window's input, with all its channels, passes a storage
//! binding (millions of channels): tiles of rows or columns cannot help there, so the node runs
//! again on blocks of its input channels. A convolution sums over its input channels, and each
//! gradient's channels depend on their own block only, so a block is a node of its own: its
//! images' channels and its filter's input channels are copied into temporaries (one copy per
//! pixel or filter tap, as a block's channels are contiguous in each), the op runs there, and its
//! result is added (the forward convolution) or copied into the block's channels of the node's
//! output. Blocks halve until each runs.
//!
//! Where a filter's output channels pass a binding instead (a few input channels into millions of
//! output channels), the node runs on blocks of its output channels the same way: the filter's
//! last dimension and dy's are copied per block, and the block's result is added (an input
//! gradient sums over the output channels) or copied into the block's output channels (the
//! forward output, the filter gradient). Each such block still runs in blocks of its input
//! channels where it needs to.

use crate::error::{Error, Result};
use crate::runtime::Stream;

use super::batch::is_binding_limit;
use super::binary::{self, BinaryOp};
use super::column_tiles::copy_columns;
use super::layout::{output_once, try_binding, Allocated};
use super::{DType, KernelContext, KernelInstance, TensorRef, VariableWork};

/// How a windowed op's arguments hold its input channels.
pub struct BlockArgs {
    /// Device inputs whose last dimension is the input channels (x).
    pub images: &'static [usize],
    /// Device inputs whose last dimension is the input channels times a multiplier (a depthwise
    /// convolution's dy).
    pub multiplied_images: &'static [usize],
    /// Device filters [taps..., channels, out].
    pub filters: &'static [usize],
    /// Host inputs holding an image's shape, channels last (`input_sizes`).
    pub image_sizes: &'static [usize],
    /// Host inputs holding a filter's shape (`filter_sizes`).
    pub filter_sizes: &'static [usize],
    /// What output 0 is.
    pub output: BlockOutput,
    /// Device inputs whose last dimension is the output channels (times a depthwise
    /// convolution's channels): dy.
    pub out_images: &'static [usize],
    /// What output 0 is over blocks of the output channels.
    pub out_output: OutBlockOutput,
}

/// No argument in blocks: the base the ops' own `BlockArgs` fill in.
pub const NO_BLOCKS: BlockArgs = BlockArgs {
    images: &[],
    multiplied_images: &[],
    filters: &[],
    image_sizes: &[],
    filter_sizes: &[],
    output: BlockOutput::Summed,
    out_images: &[],
    out_output: OutBlockOutput::Channels,
};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum BlockOutput {
    /// Summed over the blocks (a convolution's output).
    Summed,
    /// An image whose channels (times a multiplier) are the blocks' (an input gradient, a
    /// depthwise convolution's output).
    Image,
    /// A filter whose input channels are the blocks' (a filter gradient).
    Filter,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OutBlockOutput {
    /// Summed over the blocks (an input gradient).
    Summed,
    /// A tensor whose last dimension holds the output channels (the forward output, a filter
    /// gradient).
    Channels,
}

/// Runs `compute` (a channels-last convolution or gradient); where a tensor was too big to bind,
/// runs it again on blocks of its input channels.
pub fn channel_blocks_on_overflow(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    args: &BlockArgs,
    compute: impl Fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
) -> Result<()> {
    let Some((error, allocated)) = try_binding(ctx, kernel, &compute)? else { return Ok(()) };
    in_channel_blocks(ctx, kernel, args, &compute, (error, allocated)).map(drop)
}

/// `compute` on blocks of the node's input channels, after a first run failed with `error`
/// having allocated `allocated`; returns the node's outputs, by index (`error` where blocks
/// cannot serve the node).
pub fn in_channel_blocks(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    args: &BlockArgs,
    compute: &dyn Fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
    (error, mut allocated): (Error, Allocated),
) -> Result<Allocated> {
    // The filter's shape [taps..., channels, out channels], from the filter or its sizes.
    let filter = match (args.filters.first(), args.filter_sizes.first()) {
        (Some(&i), _) => ctx.input(i)?.shape,
        (None, Some(&i)) => ctx.host_input_values(i)?.0,
        _ => Vec::new(),
    };
    let (channels, out_channels) = match filter[..] {
        [.., c, oc] => (c, oc),
        _ => (1, 0),
    };
    // The image's channels: an image input's, or its sizes' (4 or 5 of them: Conv2DBackpropInput's
    // [height, width] alone names none, and its depth is the filter's).
    let image_channels = match (args.images.first(), args.image_sizes.first()) {
        (Some(&i), _) => ctx.input(i)?.shape.last().copied().unwrap_or(0),
        (None, Some(&i)) => {
            let sizes = ctx.host_input_values(i)?.0;
            if (4..=5).contains(&sizes.len()) {
                sizes[sizes.len() - 1]
            } else {
                channels
            }
        }
        _ => channels,
    };
    // Groups split the filter's output channels evenly (TF checks it).
    let grouped = channels > 0 && image_channels > channels && image_channels % channels == 0;
    if grouped && out_channels % (image_channels / channels) == 0 {
        // A grouped convolution: each group as a convolution of its own (its channels blocked
        // where it still passes a binding).
        let in_blocks = |ctx: &mut dyn KernelContext, kernel: &KernelInstance| {
            channel_blocks_on_overflow(ctx, kernel, args, |ctx, kernel| compute(ctx, kernel))
        };
        return in_groups(ctx, kernel, &in_blocks, image_channels / channels, allocated);
    }
    // Images of other channel counts are the kernel's to refuse.
    if image_channels != channels {
        return Err(error);
    }
    let mut input_blocks = channels > 1;
    for &i in args.images.iter().chain(args.multiplied_images) {
        let last = ctx.input(i)?.shape.last().copied().unwrap_or(0);
        let fits = if args.images.contains(&i) { last == channels } else { last > 0 && last % channels == 0 };
        input_blocks &= fits;
    }
    let mut error = error;
    if input_blocks {
        match in_input_blocks(ctx, kernel, args, compute, channels, &mut allocated) {
            Err(e) if is_binding_limit(&e) => error = e,
            other => return other.map(|()| allocated),
        }
    }
    // Still too big: the output channels in blocks, each block's input channels too if needed.
    let mut out_blocks = out_channels > 1;
    for &i in args.out_images {
        let last = ctx.input(i)?.shape.last().copied().unwrap_or(0);
        out_blocks &= last > 0 && last % out_channels == 0;
    }
    if !out_blocks {
        return Err(error);
    }
    let in_blocks_on_overflow = |ctx: &mut dyn KernelContext, kernel: &KernelInstance| {
        let Some((error, mut allocated)) = try_binding(ctx, kernel, &compute)? else {
            return Ok(());
        };
        if !input_blocks {
            return Err(error);
        }
        in_input_blocks(ctx, kernel, args, compute, channels, &mut allocated)
    };
    let mut per_block = (out_channels + 1) / 2;
    loop {
        let blocks = (out_channels, per_block);
        match run_out_blocks(ctx, kernel, args, &in_blocks_on_overflow, blocks, &mut allocated) {
            Err(e) if is_binding_limit(&e) && per_block > 1 => per_block = (per_block + 1) / 2,
            other => return other.map(|()| allocated),
        }
    }
}

/// `compute` on blocks of the node's `channels` input channels, halving them until each runs.
fn in_input_blocks(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    args: &BlockArgs,
    compute: &dyn Fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
    channels: i64,
    allocated: &mut Allocated,
) -> Result<()> {
    let mut per_block = (channels + 1) / 2;
    loop {
        match run_blocks(ctx, kernel, args, compute, (channels, per_block), allocated) {
            Err(e) if is_binding_limit(&e) && per_block > 1 => per_block = (per_block + 1) / 2,
            other => return other,
        }
    }
}

/// A grouped convolution (and its gradients) of `groups` groups, one group at a time: every
/// tensor's last dimension (the image's channels, the filter's and dy's output channels) holds
/// the groups one after another, so group `j` is part `j` of it in each, input and output alike.
fn in_groups(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    compute: &dyn Fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
    groups: i64,
    mut allocated: Allocated,
) -> Result<Allocated> {
    for group in 0..groups {
        let mut part = GroupContext {
            inner: &mut *ctx,
            group: (group, groups),
            allocated: &mut allocated,
            inputs: Vec::new(),
            pending: Vec::new(),
        };
        compute(&mut part, kernel)?;
        let pending = std::mem::take(&mut part.pending);
        for (result, output) in pending {
            let (total, count) = (last_dim(&output), last_dim(&result));
            copy_columns(ctx, (&image_view(&result, count), 0), (&image_view(&output, total), group * count), count)?;
        }
    }
    Ok(allocated)
}

fn last_dim(t: &TensorRef) -> i64 {
    t.shape.last().copied().unwrap_or(1)
}

/// The node's context as one group of a grouped convolution sees it: part `group.0` of
/// `group.1` of every tensor's last dimension.
struct GroupContext<'a> {
    inner: &'a mut dyn KernelContext,
    group: (i64, i64),
    allocated: &'a mut Allocated,
    inputs: Vec<(usize, TensorRef)>,
    /// The group's results and the node's outputs they go into.
    pending: Vec<(TensorRef, TensorRef)>,
}

impl KernelContext for GroupContext<'_> {
    pass_through_to_inner!(variables);
    pass_through_to_inner!(batch_start);

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        if let Some((_, t)) = self.inputs.iter().find(|(i, _)| *i == index) {
            return Ok(t.clone());
        }
        let t = self.inner.input(index)?;
        let (group, groups) = self.group;
        let total = last_dim(&t);
        if t.shape.is_empty() || total % groups != 0 {
            return Ok(t);
        }
        let count = total / groups;
        let mut shape = t.shape.clone();
        *shape.last_mut().unwrap_or(&mut 0) = count;
        let temp = self.inner.allocate_temp(t.dtype, &shape)?;
        copy_columns(self.inner, (&image_view(&t, total), group * count), (&image_view(&temp, count), 0), count)?;
        self.inputs.push((index, temp.clone()));
        Ok(temp)
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let mut node_shape = shape.to_vec();
        if let Some(last) = node_shape.last_mut() {
            *last *= self.group.1;
        }
        let output = output_once(self.inner, self.allocated, (index, dtype, &node_shape))?;
        if shape.is_empty() {
            return Ok(output);
        }
        let temp = self.inner.allocate_temp(dtype, shape)?;
        self.pending.push((temp.clone(), output));
        Ok(temp)
    }

    pass_through_to_inner!(no_forwarding);

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        let (mut values, shape) = self.inner.host_input_values(index)?;
        // Sizes of an image or a filter (4 or 5 values); Conv2DBackpropInput's [height, width]
        // alone has no channels.
        if values.len() >= 4 {
            if let Some(last) = values.last_mut() {
                *last /= self.group.1;
            }
        }
        Ok((values, shape))
    }
}

fn run_blocks(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    args: &BlockArgs,
    compute: &dyn Fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
    (channels, per_block): (i64, i64),
    allocated: &mut Vec<(usize, TensorRef)>,
) -> Result<()> {
    let mut first = 0;
    while first < channels {
        let count = per_block.min(channels - first);
        let mut block = BlockContext {
            inner: &mut *ctx,
            args,
            channels,
            block: (first, count),
            allocated: &mut *allocated,
            inputs: Vec::new(),
            pending: None,
        };
        compute(&mut block, kernel)?;
        if let Some((result, output)) = block.pending.take() {
            let stream = ctx.stream()?;
            match args.output {
                BlockOutput::Summed => binary::launch(stream, BinaryOp::Add, &output, &result, &output)?,
                BlockOutput::Image => {
                    copy_columns(ctx, (&image_view(&result, count), 0), (&image_view(&output, channels), first), count)?
                }
                BlockOutput::Filter => {
                    copy_columns(ctx, (&filter_view(&result), 0), (&filter_view(&output), first), count)?
                }
            }
        }
        first += count;
    }
    Ok(())
}

/// An image [.., channels * inner] as [pixels, channels, inner] (rows of columns for `copy_columns`).
fn image_view(t: &TensorRef, channels: i64) -> TensorRef {
    let pixels = t.shape[..t.shape.len() - 1].iter().product();
    let inner = t.shape.last().copied().unwrap_or(0) / channels.max(1);
    TensorRef { shape: vec![pixels, channels, inner], ..t.clone() }
}

/// A filter [taps..., channels, out] as [taps, channels, out].
fn filter_view(t: &TensorRef) -> TensorRef {
    let r = t.shape.len();
    TensorRef { shape: vec![t.shape[..r - 2].iter().product(), t.shape[r - 2], t.shape[r - 1]], ..t.clone() }
}

/// The node's context as one block of its input channels sees it.
struct BlockContext<'a> {
    inner: &'a mut dyn KernelContext,
    args: &'a BlockArgs,
    channels: i64,
    /// The block's channels (first, count).
    block: (i64, i64),
    /// The node's outputs allocated so far, by index.
    allocated: &'a mut Vec<(usize, TensorRef)>,
    /// The block's inputs copied so far, by index.
    inputs: Vec<(usize, TensorRef)>,
    /// The block's result and the node's output it goes into.
    pending: Option<(TensorRef, TensorRef)>,
}

impl BlockContext<'_> {
    /// `t`'s block of channels, viewed as `view` does, in a temporary of `t`'s shape with
    /// `channels_at` holding the block's share.
    fn copied(
        &mut self,
        t: &TensorRef,
        view: impl Fn(&TensorRef) -> TensorRef,
        channels_at: usize,
    ) -> Result<TensorRef> {
        let (first, count) = self.block;
        let whole = view(t);
        let mut shape = t.shape.clone();
        shape[channels_at] = shape[channels_at] / self.channels * count;
        let temp = self.inner.allocate_temp(t.dtype, &shape)?;
        let mut part = whole.clone();
        part.shape[1] = count;
        copy_columns(self.inner, (&whole, first), (&TensorRef { address: temp.address, ..part }, 0), count)?;
        Ok(temp)
    }

    fn node_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        output_once(self.inner, self.allocated, (index, dtype, shape))
    }
}

impl KernelContext for BlockContext<'_> {
    pass_through_to_inner!(variables);
    pass_through_to_inner!(batch_start);

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        if let Some((_, t)) = self.inputs.iter().find(|(i, _)| *i == index) {
            return Ok(t.clone());
        }
        let t = self.inner.input(index)?;
        let r = t.shape.len();
        let image = self.args.images.contains(&index) || self.args.multiplied_images.contains(&index);
        let copied = if image && r >= 1 {
            let channels = self.channels;
            self.copied(&t, |t| image_view(t, channels), r - 1)?
        } else if self.args.filters.contains(&index) && r >= 2 {
            self.copied(&t, filter_view, r - 2)?
        } else {
            return Ok(t);
        };
        self.inputs.push((index, copied.clone()));
        Ok(copied)
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let r = shape.len();
        if index != 0 || r < 2 {
            return self.node_output(index, dtype, shape);
        }
        let (first, count) = self.block;
        let mut node_shape = shape.to_vec();
        match self.args.output {
            BlockOutput::Summed => {}
            BlockOutput::Image => node_shape[r - 1] = shape[r - 1] / count * self.channels,
            BlockOutput::Filter => node_shape[r - 2] = self.channels,
        }
        let output = self.node_output(index, dtype, &node_shape)?;
        // The first block of a sum writes the node's output itself.
        if self.args.output == BlockOutput::Summed && first == 0 {
            return Ok(output);
        }
        let temp = self.inner.allocate_temp(dtype, shape)?;
        self.pending = Some((temp.clone(), output));
        Ok(temp)
    }

    pass_through_to_inner!(no_forwarding);

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        let (mut values, shape) = self.inner.host_input_values(index)?;
        let r = values.len();
        let count = self.block.1;
        if self.args.image_sizes.contains(&index) && r >= 3 {
            values[r - 1] = count;
        } else if self.args.filter_sizes.contains(&index) && r >= 2 {
            values[r - 2] = count;
        }
        Ok((values, shape))
    }
}

fn run_out_blocks(
    ctx: &mut dyn KernelContext,
    kernel: &KernelInstance,
    args: &BlockArgs,
    compute: &dyn Fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
    (out_channels, per_block): (i64, i64),
    allocated: &mut Allocated,
) -> Result<()> {
    let mut first = 0;
    while first < out_channels {
        let count = per_block.min(out_channels - first);
        let mut block = OutBlockContext {
            inner: &mut *ctx,
            args,
            out_channels,
            block: (first, count),
            allocated: &mut *allocated,
            inputs: Vec::new(),
            pending: None,
        };
        compute(&mut block, kernel)?;
        if let Some((result, output)) = block.pending.take() {
            match args.out_output {
                OutBlockOutput::Summed => binary::launch(ctx.stream()?, BinaryOp::Add, &output, &result, &output)?,
                OutBlockOutput::Channels => copy_columns(
                    ctx,
                    (&out_channel_view(&result, count), 0),
                    (&out_channel_view(&output, out_channels), first),
                    count,
                )?,
            }
        }
        first += count;
    }
    Ok(())
}

/// A tensor whose last dimension holds `out_channels` output channels innermost (a filter
/// [.., out], dy [.., out] or a depthwise convolution's [.., channels * out]) as
/// [rows, out_channels, 1].
fn out_channel_view(t: &TensorRef, out_channels: i64) -> TensorRef {
    let elements: i64 = t.shape.iter().product();
    TensorRef { shape: vec![elements / out_channels.max(1), out_channels, 1], ..t.clone() }
}

/// The node's context as one block of its output channels sees it.
struct OutBlockContext<'a> {
    inner: &'a mut dyn KernelContext,
    args: &'a BlockArgs,
    out_channels: i64,
    /// The block's output channels (first, count).
    block: (i64, i64),
    /// The node's outputs allocated so far, by index.
    allocated: &'a mut Allocated,
    /// The block's inputs copied so far, by index.
    inputs: Vec<(usize, TensorRef)>,
    /// The block's result and the node's output it goes into.
    pending: Option<(TensorRef, TensorRef)>,
}

impl OutBlockContext<'_> {
    /// `t`'s block of output channels, in a temporary of `t`'s shape with the last dimension
    /// holding the block's share.
    fn copied(&mut self, t: &TensorRef) -> Result<TensorRef> {
        let (first, count) = self.block;
        let mut shape = t.shape.clone();
        let r = shape.len();
        shape[r - 1] = shape[r - 1] / self.out_channels * count;
        let temp = self.inner.allocate_temp(t.dtype, &shape)?;
        let (whole, part) = (out_channel_view(t, self.out_channels), out_channel_view(&temp, count));
        copy_columns(self.inner, (&whole, first), (&part, 0), count)?;
        Ok(temp)
    }
}

impl KernelContext for OutBlockContext<'_> {
    pass_through_to_inner!(variables);
    pass_through_to_inner!(batch_start);

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        if let Some((_, t)) = self.inputs.iter().find(|(i, _)| *i == index) {
            return Ok(t.clone());
        }
        let t = self.inner.input(index)?;
        let sliced = self.args.filters.contains(&index) || self.args.out_images.contains(&index);
        if !sliced || t.shape.is_empty() {
            return Ok(t);
        }
        let copied = self.copied(&t)?;
        self.inputs.push((index, copied.clone()));
        Ok(copied)
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        if index != 0 || shape.is_empty() {
            return output_once(self.inner, self.allocated, (index, dtype, shape));
        }
        let (first, count) = self.block;
        let mut node_shape = shape.to_vec();
        if self.args.out_output == OutBlockOutput::Channels {
            let r = node_shape.len();
            node_shape[r - 1] = shape[r - 1] / count * self.out_channels;
        }
        let output = output_once(self.inner, self.allocated, (index, dtype, &node_shape))?;
        // The first block of a sum writes the node's output itself.
        if self.args.out_output == OutBlockOutput::Summed && first == 0 {
            return Ok(output);
        }
        let temp = self.inner.allocate_temp(dtype, shape)?;
        self.pending = Some((temp.clone(), output));
        Ok(temp)
    }

    pass_through_to_inner!(no_forwarding);

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        let (mut values, shape) = self.inner.host_input_values(index)?;
        if self.args.filter_sizes.contains(&index) {
            if let Some(last) = values.last_mut() {
                *last = self.block.1;
            }
        }
        Ok((values, shape))
    }
}
