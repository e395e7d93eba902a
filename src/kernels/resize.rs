//! Image resizing, NHWC (`wgsl/resize.wgsl`): ResizeBilinear and ResizeNearestNeighbor, and their
//! gradients as two separable passes (columns, then rows) of weighted sums (`axis_sum`, which
//! MirrorPadGrad also uses); ResizeBicubic, ScaleAndTranslate and their gradients as the same
//! passes over TF's cubic taps and sampling-kernel spans.
//!
//! TF computes each output pixel's source coordinate in float32 (`image_resizer_state.h`). The
//! host computes the same coordinates, indices and weights here, as TF-CPU does (Rust does not fuse
//! `a * b + c` into an fma, and TF's x86 build does not either), and hands the shaders tables: the
//! device never rounds a coordinate, so it picks exactly TF's pixels.

use crate::error::{Error, Result};
use crate::runtime::pipeline::{dispatch, loop_budget, storage_window, PipelineSpec, Shader};

use super::column_tiles::{self, ColumnTile, Side};
use super::conv::{BATCHED_IMAGE, IMAGE_IN_OUT};
use super::layout;
use super::validate::shape_string;
use super::{shader_len, DType, KernelContext, KernelInstance, TensorRef};

pub const SHADER: Shader = Shader {
    name: "resize",
    source: concat!(include_str!("../../wgsl/math.wgsl"), include_str!("../../wgsl/resize.wgsl")),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    channels: u32,
    out_h: u32,
    out_w: u32,
    in_h: u32,
    in_w: u32,
    in_off: u32,
    out_off: u32,
    y_table: u32,
    x_table: u32,
    inner: u32,
    axis_in: u32,
    axis_out: u32,
    k_begin: u32,
    k_end: u32,
    accumulate: u32,
}

/// TF's `CalculateResizeScale`.
fn resize_scale(in_size: i64, out_size: i64, align_corners: bool) -> f32 {
    if align_corners && out_size > 1 {
        (in_size - 1) as f32 / (out_size - 1) as f32
    } else {
        in_size as f32 / out_size as f32
    }
}

/// TF's `HalfPixelScaler` or `LegacyScaler`: the source coordinate of output index `i`.
fn bilinear_source(i: i64, scale: f32, half_pixel_centers: bool) -> f32 {
    if half_pixel_centers {
        (i as f32 + 0.5) * scale - 0.5
    } else {
        i as f32 * scale
    }
}

/// TF's `compute_interpolation_weights`: per output index, (lower, upper, lerp bits).
fn bilinear_axis(out_size: i64, in_size: i64, scale: f32, half_pixel_centers: bool) -> Vec<[u32; 3]> {
    (0..out_size)
        .map(|i| {
            let at = bilinear_source(i, scale, half_pixel_centers);
            let floor = at.floor();
            // TF leaves the lower index unclamped above (it can reach in_size where the float32
            // coordinate of a huge resize rounds up); clamped here, so no read leaves the image.
            let lower = (floor as i64).max(0).min(in_size - 1);
            let upper = (at.ceil() as i64).min(in_size - 1);
            [lower as u32, upper as u32, (at - floor).to_bits()]
        })
        .collect()
}

/// TF's nearest-neighbour `compute_indices`: the source index of each output index.
fn nearest_axis(out_size: i64, in_size: i64, scale: f32, align_corners: bool, half_pixel_centers: bool) -> Vec<u32> {
    (0..out_size)
        .map(|i| {
            // HalfPixelScalerForNN leaves out the - 0.5 that the floor makes up for.
            let at = if half_pixel_centers { (i as f32 + 0.5) * scale } else { i as f32 * scale };
            let rounded = if align_corners { at.round() } else { at.floor() };
            let mut index = (rounded as i64).min(in_size - 1);
            if half_pixel_centers {
                index = index.max(0);
            }
            index as u32
        })
        .collect()
}

/// TF's bicubic kernel table entry: the weight of a tap `x` pixels away (0 <= x <= 2), for Keys'
/// cubic `a`, computed in double from a float x and stored in float, as `InitCoeffsTable` does.
fn cubic_coefficient(x: f32, a: f64) -> f32 {
    let x = f64::from(x);
    if x <= 1.0 {
        (((a + 2.0) * x - (a + 3.0)) * x * x + 1.0) as f32
    } else {
        (((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a) as f32
    }
}

/// TF's bicubic `GetWeightsAndIndices` for each output index of an axis: the four source indices
/// (clamped to the image) and their weights. With half-pixel centers (Keys' cubic, a = -0.5) taps
/// outside the image weigh 0 and the rest are renormalised; the legacy kernel (a = -0.75) repeats
/// the edge pixel instead.
fn bicubic_axis(out_size: i64, in_size: i64, scale: f32, half_pixel_centers: bool) -> Vec<[(u32, f32); 4]> {
    const TABLE_SIZE: i64 = 1 << 10;
    let a = if half_pixel_centers { -0.5 } else { -0.75 };
    // The table entry i holds the weights of taps i / 1024 and 1 + i / 1024 pixels away.
    let table = |i: i64, far: bool| {
        let x = (i as f64 / TABLE_SIZE as f64) as f32;
        cubic_coefficient(if far { x + 1.0 } else { x }, a)
    };
    (0..out_size)
        .map(|i| {
            let at = bilinear_source(i, scale, half_pixel_centers);
            let floor = at.floor();
            let delta = at - floor;
            let offset = (delta * TABLE_SIZE as f32).round_ties_even() as i64;
            let start = floor as i64 - 1;
            let mut weights = [
                table(offset, true),
                table(offset, false),
                table(TABLE_SIZE - offset, false),
                table(TABLE_SIZE - offset, true),
            ];
            let mut taps = [(0u32, 0f32); 4];
            for (k, tap) in taps.iter_mut().enumerate() {
                let wanted = start + k as i64;
                let index = wanted.clamp(0, in_size - 1);
                if half_pixel_centers && index != wanted {
                    weights[k] = 0.0;
                }
                *tap = (index as u32, 0.0);
            }
            if half_pixel_centers {
                let sum = weights[0] + weights[1] + weights[2] + weights[3];
                if sum.abs() >= 1000.0 * f32::MIN_POSITIVE {
                    let inverse = 1.0 / sum;
                    weights.iter_mut().for_each(|w| *w *= inverse);
                }
            }
            for (tap, weight) in taps.iter_mut().zip(weights) {
                tap.1 = weight;
            }
            taps
        })
        .collect()
}

/// An axis's bicubic taps as the sources of each output index (`forward`) or, for the gradient,
/// the output indices each source index gathers from.
fn bicubic_sources(out_size: i64, in_size: i64, attrs: &Attrs, forward: bool) -> Sources {
    let scale = resize_scale(in_size, out_size, attrs.align_corners);
    let taps = bicubic_axis(out_size, in_size, scale, attrs.half_pixel_centers);
    let terms: Vec<(u32, u32, f32)> = taps
        .iter()
        .enumerate()
        .flat_map(|(i, taps)| taps.iter().map(move |&(s, w)| if forward { (i as u32, s, w) } else { (s, i as u32, w) }))
        .collect();
    Sources::new(if forward { out_size } else { in_size } as usize, &terms)
}

/// The sampling kernels of ScaleAndTranslate (TF's `sampling_kernels.h`), computed in float as
/// TF computes them (Rust's `f32::sin` is the C library's `sinf`, as TF's `std::sin(float)`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sampling {
    Lanczos(f32),
    Gaussian,
    Box,
    Triangle,
    KeysCubic,
    MitchellCubic,
}

impl Sampling {
    fn parse(name: &str) -> Result<Sampling> {
        Ok(match name {
            "lanczos1" => Sampling::Lanczos(1.0),
            "lanczos3" => Sampling::Lanczos(3.0),
            "lanczos5" => Sampling::Lanczos(5.0),
            "gaussian" => Sampling::Gaussian,
            "box" => Sampling::Box,
            "triangle" => Sampling::Triangle,
            "keyscubic" => Sampling::KeysCubic,
            "mitchellcubic" => Sampling::MitchellCubic,
            other => return Err(Error::invalid_argument(format!("Unrecognized kernel type: {other}"))),
        })
    }

    fn radius(self) -> f32 {
        match self {
            Sampling::Lanczos(radius) => radius,
            Sampling::Gaussian => 1.5,
            Sampling::Box | Sampling::Triangle => 1.0,
            Sampling::KeysCubic | Sampling::MitchellCubic => 2.0,
        }
    }

    fn weight(self, x: f32) -> f32 {
        let x = x.abs();
        match self {
            Sampling::Lanczos(radius) => {
                // TF's kPI = 3.14159265359 rounds to the same float.
                use std::f32::consts::PI;
                if x > radius {
                    0.0
                } else if f64::from(x) <= 1e-3 {
                    1.0
                } else {
                    radius * (PI * x).sin() * (PI * x / radius).sin() / (PI * PI * x * x)
                }
            }
            Sampling::Gaussian => {
                let sigma = 1.5f32 / 3.0;
                if x >= 1.5 {
                    0.0
                } else {
                    (f64::from(-x * x) / (2.0 * f64::from(sigma) * f64::from(sigma))).exp() as f32
                }
            }
            Sampling::Box if x < 0.5 => 1.0,
            Sampling::Box if x == 0.5 => 0.5,
            Sampling::Box => 0.0,
            Sampling::Triangle if x < 1.0 => 1.0 - x,
            Sampling::Triangle => 0.0,
            Sampling::KeysCubic if x >= 2.0 => 0.0,
            Sampling::KeysCubic if x >= 1.0 => ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0,
            Sampling::KeysCubic => ((1.5 * x - 2.5) * x) * x + 1.0,
            Sampling::MitchellCubic if x >= 2.0 => 0.0,
            Sampling::MitchellCubic if x >= 1.0 => (((-7.0 / 18.0) * x + 2.0) * x - 10.0 / 3.0) * x + 16.0 / 9.0,
            Sampling::MitchellCubic => (((7.0 / 6.0) * x - 2.0) * x) * x + 8.0 / 9.0,
        }
    }
}

/// TF's `Spans` of one axis: per output index, the first input index and `size` weights (zero
/// past the index's own span).
struct Spans {
    size: usize,
    starts: Vec<i64>,
    weights: Vec<f32>,
}

impl Spans {
    /// TF's `ComputeSpansCore`: the kernel's taps of each output index, normalised to sum to 1.
    fn new(kernel: Sampling, output: i64, input: i64, scale: f32, translate: f32, antialias: bool) -> Result<Spans> {
        let inv_scale = (1.0 / f64::from(scale)) as f32;
        let inv_translate = -inv_scale * translate;
        let kernel_scale = if antialias { inv_scale.max(1.0) } else { 1.0 };
        let reach = kernel.radius() * kernel_scale;
        // TF computes the span's size as an int; past that its kernel's arithmetic overflows.
        let fits = reach.ceil() <= (i32::MAX / 2 - 1) as f32;
        if !fits {
            return Err(Error::invalid_argument(format!(
                "the sampling kernel's reach ({reach} input pixels, at scale {scale}) does not fit an int32"
            )));
        }
        let size = (2 * reach.ceil() as i64 + 1).min(input).max(0) as usize;
        let one_over_kernel_scale = 1.0 / kernel_scale;
        let mut starts = vec![0; output as usize];
        let mut weights = vec![0f32; size * output as usize];
        for x in 0..output as usize {
            let sample = (x as f32 + 0.5) * inv_scale + inv_translate;
            // No taps where the sample lies outside the input.
            if !(sample >= 0.0 && sample <= input as f32) {
                continue;
            }
            let first = ((sample - reach - 0.5).ceil() as i64).clamp(0, input - 1);
            let end = ((sample + reach - 0.5).floor() as i64).clamp(0, input - 1) + 1;
            if (end - first) as usize > size {
                return Err(Error::internal(format!("Span is too large: {} vs {size}.", end - first)));
            }
            let taps: Vec<f32> = (first..end)
                .map(|source| kernel.weight((source as f32 + 0.5 - sample) * one_over_kernel_scale))
                .collect();
            let total = taps.iter().fold(0f32, |sum, &w| sum + w);
            if total.abs() >= 1000.0 * f32::MIN_POSITIVE {
                let inverse = 1.0 / total;
                for (slot, w) in weights[x * size..].iter_mut().zip(&taps) {
                    *slot = w * inverse;
                }
            }
            starts[x] = first;
        }
        Ok(Spans { size, starts, weights })
    }

    /// TF's `ComputeGradSpansCore`: for each input index, the output indices that weigh it.
    fn transposed(&self, input: i64) -> Spans {
        let mut components: Vec<Vec<(i64, f32)>> = vec![Vec::new(); input as usize];
        for (out, &start) in self.starts.iter().enumerate() {
            for j in 0..self.size {
                let (source, weight) = (start + j as i64, self.weights[out * self.size + j]);
                if weight != 0.0 && source < input {
                    components[source as usize].push((out as i64, weight));
                }
            }
        }
        let size = components.iter().filter_map(|c| Some(c.last()?.0 - c.first()?.0 + 1)).max().unwrap_or(0) as usize;
        let mut starts = vec![0; input as usize];
        let mut weights = vec![0f32; size * input as usize];
        for (i, list) in components.iter().enumerate() {
            if let Some(&(first, _)) = list.first() {
                starts[i] = first;
                for &(out, weight) in list {
                    weights[i * size + (out - first) as usize] += weight;
                }
            }
        }
        Spans { size, starts, weights }
    }

    /// The spans as `axis_sum` sources: each index's taps from its start up to the span's size or
    /// the end of the axis it reads (`input`), zero weights included, as TF's gathers multiply them.
    fn sources(&self, input: i64) -> Sources {
        let mut terms = Vec::new();
        for (d, &start) in self.starts.iter().enumerate() {
            let end = (start + self.size as i64).min(input);
            for source in start..end {
                terms.push((d as u32, source as u32, self.weights[d * self.size + (source - start) as usize]));
            }
        }
        Sources::new(self.starts.len(), &terms)
    }
}

/// A gradient's sources per destination index, CSR: `offsets[d]..offsets[d + 1]` index `pairs`,
/// each (source index, weight bits). MirrorPadGrad (`index.rs`) folds its padding back with them.
pub(super) struct Sources {
    offsets: Vec<u32>,
    pairs: Vec<[u32; 2]>,
}

impl Sources {
    /// Groups (destination, source, weight) terms by destination.
    pub(super) fn new(destinations: usize, terms: &[(u32, u32, f32)]) -> Sources {
        let mut lists: Vec<Vec<[u32; 2]>> = vec![Vec::new(); destinations];
        for &(d, s, w) in terms {
            lists[d as usize].push([s, w.to_bits()]);
        }
        let mut offsets = vec![0u32];
        for list in &lists {
            offsets.push(offsets.last().copied().unwrap_or(0) + list.len() as u32);
        }
        Sources { offsets, pairs: lists.concat() }
    }

    fn longest(&self) -> u32 {
        self.offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0)
    }
}

struct Attrs {
    align_corners: bool,
    half_pixel_centers: bool,
}

/// The two attributes, as ResizeNearestNeighborGrad reads them (TF does not check the pair there).
fn any_attrs(kernel: &KernelInstance) -> Result<Attrs> {
    Ok(Attrs {
        align_corners: kernel.attrs.bool("align_corners")?,
        half_pixel_centers: kernel.attrs.bool("half_pixel_centers")?,
    })
}

/// The two attributes, refused together as TF's image-resizer states do.
fn attrs(kernel: &KernelInstance) -> Result<Attrs> {
    let attrs = any_attrs(kernel)?;
    if attrs.half_pixel_centers && attrs.align_corners {
        return Err(Error::invalid_argument("If half_pixel_centers is True, align_corners must be False."));
    }
    Ok(attrs)
}

/// The `size` input (host memory): two positive int32s.
fn output_size(ctx: &mut dyn KernelContext, index: usize, name: &str, what: &str) -> Result<(i64, i64)> {
    let (size, shape) = ctx.host_input_values(index)?;
    if shape.len() != 1 {
        return Err(Error::invalid_argument(format!("{name} must be 1-dimensional{}", shape_string(&shape))));
    }
    if size.len() != 2 {
        return Err(Error::invalid_argument(format!("{name} must have two elements{}", shape_string(&shape))));
    }
    if size[0] <= 0 || size[1] <= 0 {
        return Err(Error::invalid_argument(what.to_string()));
    }
    Ok((size[0], size[1]))
}

/// TF's `ImageResizerState` checks of a forward resize's image; returns (height, width).
fn check_image(image: &TensorRef) -> Result<(i64, i64)> {
    if image.shape.len() != 4 {
        return Err(Error::invalid_argument(format!("input must be 4-dimensional{}", shape_string(&image.shape))));
    }
    if image.shape[3] <= 0 {
        return Err(Error::invalid_argument("image must have at least one channel"));
    }
    let (h, w) = (image.shape[1], image.shape[2]);
    if h <= 0 || w <= 0 {
        return Err(Error::invalid_argument("input image must be of non-zero size"));
    }
    if h >= i32::MAX as i64 || w >= i32::MAX as i64 {
        return Err(Error::invalid_argument("input sizes must be between 0 and max int32"));
    }
    Ok((h, w))
}

/// Encodes one `resize.wgsl` launch of `invocations` (output elements; for `nearest_halves`, the
/// words they fill) over `input`, `output` and `table`.
fn launch(
    ctx: &mut dyn KernelContext,
    entry: &'static str,
    input: &TensorRef,
    output: &TensorRef,
    table: &TensorRef,
    mut params: Params,
    invocations: u64,
) -> Result<()> {
    if invocations == 0 {
        return Ok(());
    }
    let stream = ctx.stream()?;
    let device = stream.device();
    // 16-bit elements are addressed in halves, floats as themselves, everything else as words.
    let (unit, storage) = match (entry, input.dtype) {
        ("nearest_halves", _) => (2, "u32"),
        ("nearest", _) => (4, "u32"),
        (_, DType::F16) => (2, "f16"),
        (_, DType::F64) => (8, "f64"),
        _ => (4, "f32"),
    };
    // Float outputs are f32 but for float64 gradient sums (`axis_sum`); `nearest` writes words.
    let (out_unit, out_float) = match (entry, output.dtype) {
        ("nearest_halves", _) => (2, "f32"),
        ("axis_sum", DType::F64) => (8, "f64"),
        _ => (4, "f32"),
    };
    let [in_mem, out_mem, table_mem] =
        [input, output, table].map(|t| device.memory.resolve(t.address, t.byte_len().max(1)));
    let (in_mem, out_mem, table_mem) = (in_mem?, out_mem?, table_mem?);
    let aliases = [("S", storage), ("O", out_float)];
    let pipeline = device.pipelines.get(device, &SHADER, &PipelineSpec { entry, aliases: &aliases, constants: &[] })?;
    stream.encode(|core, encoder| {
        let (in_bind, in_off) = storage_window(core, &in_mem, unit)?;
        let (out_bind, out_off) = storage_window(core, &out_mem, out_unit)?;
        let (table_bind, table_off) = storage_window(core, &table_mem, 4)?;
        (params.in_off, params.out_off) = (in_off, out_off);
        params.y_table += table_off;
        params.x_table += table_off;
        // 16-bit outputs: a word per invocation, one more where the output starts mid-word.
        let invocations =
            if entry == "nearest_halves" { (invocations + u64::from(out_off % 2)).div_ceil(2) } else { invocations };
        let bindings = [in_bind, out_bind, table_bind];
        dispatch(core, encoder, "resize", &pipeline, &bindings, bytemuck::bytes_of(&params), invocations)
    })
}

/// How one output row's entries sit in a row table: `words` a row, the first `rows` of them source
/// rows (bilinear: top, bottom, weight; nearest: the source row). Column tables alike.
#[derive(Clone, Copy)]
struct RowTable<'a> {
    entries: &'a [u32],
    words: usize,
    rows: usize,
}

impl RowTable<'_> {
    /// The source rows (columns) of output row (column) `i`.
    fn sources(&self, i: i64) -> impl Iterator<Item = i64> + '_ {
        self.entries[i as usize * self.words..][..self.rows].iter().map(|&r| i64::from(r))
    }

    /// The entries of outputs `first..end`, their sources counted from source `lo`.
    fn shifted(&self, (first, end): (i64, i64), lo: i64) -> impl Iterator<Item = u32> + '_ {
        self.entries[first as usize * self.words..end as usize * self.words].chunks(self.words).flat_map(move |entry| {
            entry.iter().enumerate().map(move |(k, &w)| if k < self.rows { w - lo as u32 } else { w })
        })
    }

    /// The most sources one output's span: the rows (columns) from its first source to its last.
    fn widest_span(&self, outputs: i64) -> u64 {
        (0..outputs)
            .map(|i| self.sources(i).max().unwrap_or(0) - self.sources(i).min().unwrap_or(0) + 1)
            .max()
            .unwrap_or(1) as u64
    }
}

/// A resize of one image whose input or output passes a storage binding: bands of output rows,
/// each launched on the band of input rows its sources span, with its rows of the table shifted to
/// that band (`xs`, the column table, follows them). `per_row`: output elements a row (times the
/// invocations an element takes). Where one output row with its source rows passes the binding:
/// tiles of output columns, each over the input columns its sources span.
fn launch_in_bands(
    ctx: &mut dyn KernelContext,
    entry: &'static str,
    (image, out): (&TensorRef, &TensorRef),
    ys: RowTable,
    xs: RowTable,
    params: Params,
) -> Result<()> {
    let limit = super::windows::binding_limit(ctx.stream()?.device());
    let (in_h, out_h) = (image.shape[1], out.shape[1]);
    let in_row = image.byte_len() / in_h.max(1) as u64;
    let out_row = out.byte_len() / out_h.max(1) as u64;
    if out_row > limit || ys.widest_span(out_h) * in_row > limit {
        // Some output row with its source rows passes the binding (checked before any band runs,
        // so that no band is computed twice).
        return launch_in_columns(ctx, entry, (image, out), ys, xs, params);
    }
    let mut first = 0;
    while first < out_h {
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        let mut end = first;
        while end < out_h {
            let (row_lo, row_hi) = ys.sources(end).fold((lo, hi), |(l, h), r| (l.min(r), h.max(r)));
            let fits = (end + 1 - first) as u64 * out_row <= limit && (row_hi - row_lo + 1) as u64 * in_row <= limit;
            if !fits {
                break;
            }
            (lo, hi, end) = (row_lo, row_hi, end + 1);
        }
        if end == first {
            return Err(Error::internal("a resize band of no rows, though every row fits"));
        }
        let band = end - first;
        let mut words: Vec<u32> = Vec::with_capacity(band as usize * ys.words + xs.entries.len());
        words.extend(ys.shifted((first, end), lo));
        words.extend_from_slice(xs.entries);
        let table = upload(ctx, &words)?;
        let source = super::windows::image_rows(image, lo, hi - lo + 1);
        let target = super::windows::image_rows(out, first, band);
        let per_row = u64::from(params.n) / out_h as u64;
        let p = Params {
            n: shader_len(per_row * band as u64, "resize")?,
            out_h: band as u32,
            in_h: (hi - lo + 1) as u32,
            y_table: 0,
            x_table: (band as usize * ys.words) as u32,
            ..params
        };
        launch(ctx, entry, &source, &target, &table, p, u64::from(p.n))?;
        first = end;
    }
    Ok(())
}

/// `launch_in_bands` in tiles of output columns, each over the input columns its sources span
/// (copied out, their entries in the column table shifted to them), in bands of rows there.
fn launch_in_columns(
    ctx: &mut dyn KernelContext,
    entry: &'static str,
    (image, out): (&TensorRef, &TensorRef),
    ys: RowTable,
    xs: RowTable,
    params: Params,
) -> Result<()> {
    let limit = super::windows::binding_limit(ctx.stream()?.device());
    let (in_w, out_w) = (image.shape[2], out.shape[2]);
    let in_column = image.byte_len() / in_w.max(1) as u64 / image.shape[1].max(1) as u64;
    let out_column = out.byte_len() / out_w.max(1) as u64;
    // The most input rows one output row reads.
    let row_span = ys.widest_span(out.shape[1]);
    let mut tiles = Vec::new();
    let mut first = 0;
    while first < out_w {
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        let mut end = first;
        while end < out_w {
            let (l, h) = xs.sources(end).fold((lo, hi), |(l, h), c| (l.min(c), h.max(c)));
            if (end + 1 - first) as u64 * out_column > limit || (h - l + 1) as u64 * in_column * row_span > limit {
                break;
            }
            (lo, hi, end) = (l, h, end + 1);
        }
        if end == first {
            return Err(Error::unimplemented(format!(
                "{} {} bytes exceeds this adapter's max_storage_buffer_binding_size: the source rows of one output \
                 element of a resize",
                crate::runtime::pipeline::BINDING_LIMIT_ERROR,
                row_span * in_column
            )));
        }
        let width = hi - lo + 1;
        tiles.push(ColumnTile { image: (lo, width), windows: (first, end - first), written: (0, width), pad_left: 0 });
        first = end;
    }
    let per_column = u64::from(params.n) / out_w as u64;
    column_tiles::run(ctx, &tiles, &[(image, Side::Image)], Some((out, Side::Windows)), |ctx, tile, tensors, target| {
        let target = target.ok_or_else(|| Error::internal("a resize tile without its output"))?;
        let ((lo, width), (first, count)) = (tile.image, tile.windows);
        let entries: Vec<u32> = xs.shifted((first, first + count), lo).collect();
        let p = Params {
            n: shader_len(per_column * count as u64, "resize")?,
            out_w: count as u32,
            in_w: width as u32,
            ..params
        };
        launch_in_bands(ctx, entry, (&tensors[0], target), ys, RowTable { entries: &entries, ..xs }, p)
    })
}

/// Whether a resize of `image` into `out` runs in bands: one image, past a binding.
fn needs_bands(ctx: &mut dyn KernelContext, image: &TensorRef, out: &TensorRef) -> Result<bool> {
    let limit = super::windows::binding_limit(ctx.stream()?.device());
    Ok(image.shape[0] == 1 && image.byte_len().max(out.byte_len()) > limit)
}

/// `words` uploaded into a temporary int32 tensor.
fn upload(ctx: &mut dyn KernelContext, words: &[u32]) -> Result<TensorRef> {
    let table = ctx.allocate_temp(DType::I32, &[words.len().max(1) as i64])?;
    ctx.stream()?.memcpy_htod(table.address, bytemuck::cast_slice(words))?;
    Ok(table)
}

/// ResizeBilinear: float32 output, TF's weights (a same-size resize copies, as TF-CPU does).
pub fn bilinear(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    layout::in_batches_of_images(ctx, kernel, (&IMAGE_IN_OUT, &BATCHED_IMAGE), bilinear_whole)
}

fn bilinear_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let attrs = attrs(kernel)?;
    let image = ctx.input(0)?;
    let (in_h, in_w) = check_image(&image)?;
    let (out_h, out_w) = output_size(ctx, 1, "shape_t", "output dimensions must be positive")?;
    let (batch, channels) = (image.shape[0], image.shape[3]);
    let out = ctx.allocate_output(0, DType::F32, &[batch, out_h, out_w, channels])?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    if (in_h, in_w) == (out_h, out_w) {
        let stream = ctx.stream()?;
        if image.dtype == DType::F32 {
            return stream.memcpy_dtod(out.address, image.address, image.byte_len());
        }
        return super::cast::launch(stream, &image, &out);
    }
    let h_scale = resize_scale(in_h, out_h, attrs.align_corners);
    let w_scale = resize_scale(in_w, out_w, attrs.align_corners);
    let ys = bilinear_axis(out_h, in_h, h_scale, attrs.half_pixel_centers);
    let xs = bilinear_axis(out_w, in_w, w_scale, attrs.half_pixel_centers);
    let n = shader_len(out.num_elements(), "ResizeBilinear")?;
    if needs_bands(ctx, &image, &out)? {
        let params =
            Params { n, channels: channels as u32, out_w: out_w as u32, in_w: in_w as u32, ..Params::default() };
        let (ys, xs): (Vec<u32>, Vec<u32>) = (ys.concat(), xs.concat());
        let rows = RowTable { entries: &ys, words: 3, rows: 2 };
        return launch_in_bands(
            ctx,
            "bilinear",
            (&image, &out),
            rows,
            RowTable { entries: &xs, words: 3, rows: 2 },
            params,
        );
    }
    let words: Vec<u32> = ys.iter().chain(&xs).flatten().copied().collect();
    let table = upload(ctx, &words)?;
    let params = Params {
        n,
        channels: channels as u32,
        out_h: out_h as u32,
        out_w: out_w as u32,
        in_h: in_h as u32,
        in_w: in_w as u32,
        y_table: 0,
        x_table: 3 * out_h as u32,
        ..Params::default()
    };
    launch(ctx, "bilinear", &image, &out, &table, params, u64::from(n))
}

/// ResizeBicubic: float32 output, TF's cubic weights, as two separable passes (along the height,
/// then the width: the order TF-CPU interpolates in).
pub fn bicubic(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    layout::in_batches_of_images(ctx, kernel, (&IMAGE_IN_OUT, &BATCHED_IMAGE), bicubic_whole)
}

fn bicubic_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let attrs = attrs(kernel)?;
    let image = ctx.input(0)?;
    let (in_h, in_w) = check_image(&image)?;
    let (out_h, out_w) = output_size(ctx, 1, "shape_t", "output dimensions must be positive")?;
    let (batch, channels) = (image.shape[0], image.shape[3]);
    let out = ctx.allocate_output(0, DType::F32, &[batch, out_h, out_w, channels])?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let ys = bicubic_sources(out_h, in_h, &attrs, true);
    let xs = bicubic_sources(out_w, in_w, &attrs, true);
    separable_rows_first(ctx, &image, &out, &ys, &xs)
}

/// ScaleAndTranslate's and ScaleAndTranslateGrad's attributes and their `scale` and
/// `translation` inputs (host memory, two floats each: rows, then columns).
struct Transform {
    kernel: Sampling,
    antialias: bool,
    scale: [f32; 2],
    translation: [f32; 2],
}

fn transform(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<Transform> {
    let sampling = Sampling::parse(kernel.attrs.str("kernel_type")?)?;
    let mut pair = |index: usize| -> Result<[f32; 2]> {
        let shape = ctx.input(index)?.shape;
        if shape.len() != 1 {
            return Err(Error::invalid_argument(format!("t must be 1-dimensional{}", shape_string(&shape))));
        }
        match ctx.host_input_floats(index)?[..] {
            [a, b] => Ok([a as f32, b as f32]),
            _ => Err(Error::invalid_argument(format!("t must have two elements{}", shape_string(&shape)))),
        }
    };
    let scale = pair(2)?;
    if !(scale[0] > 0.0 && scale[1] > 0.0) {
        return Err(Error::invalid_argument("Scale must be greater than zero."));
    }
    let translation = pair(3)?;
    Ok(Transform { kernel: sampling, antialias: kernel.attrs.bool("antialias")?, scale, translation })
}

/// ScaleAndTranslate: each output pixel a normalised kernel-weighted sum of the input pixels its
/// (scaled, translated) position covers, float32 out; the rows' pass, then the columns', as TF.
/// (TF has a CPU kernel only; this one follows it.)
pub fn scale_and_translate(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    layout::in_batches_of_images(ctx, kernel, (&IMAGE_IN_OUT, &BATCHED_IMAGE), scale_and_translate_whole)
}

fn scale_and_translate_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let image = ctx.input(0)?;
    let (in_h, in_w) = check_image(&image)?;
    let (out_h, out_w) = output_size(ctx, 1, "output_shape_t", "output dimensions must be positive")?;
    let (batch, channels) = (image.shape[0], image.shape[3]);
    let t = transform(ctx, kernel)?;
    let out = ctx.allocate_output(0, DType::F32, &[batch, out_h, out_w, channels])?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let cols = Spans::new(t.kernel, out_w, in_w, t.scale[1], t.translation[1], t.antialias)?;
    let rows = Spans::new(t.kernel, out_h, in_h, t.scale[0], t.translation[0], t.antialias)?;
    separable_rows_first(ctx, &image, &out, &rows.sources(in_h), &cols.sources(in_w))
}

/// ScaleAndTranslateGrad: the forward spans transposed (TF's grad spans), applied the same way.
pub fn scale_and_translate_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    layout::channels_as_images_on_overflow(ctx, kernel, &IMAGE_IN_OUT, scale_and_translate_grad_whole)
}

fn scale_and_translate_grad_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let grads = ctx.input(0)?;
    if grads.shape.len() != 4 {
        return Err(Error::invalid_argument(format!("input_grad must be 4-dimensional{}", shape_string(&grads.shape))));
    }
    let original = ctx.input(1)?;
    if original.shape.len() != 4 {
        return Err(Error::invalid_argument(format!(
            "original_image must be 4-dimensional{}",
            shape_string(&original.shape)
        )));
    }
    let [batch, out_h, out_w, channels] = grads.shape[..] else { unreachable!("checked 4-D") };
    let (in_h, in_w) = (original.shape[1], original.shape[2]);
    if in_h >= i32::MAX as i64 || in_w >= i32::MAX as i64 {
        return Err(Error::invalid_argument("original sizes must be between 0 and max int32"));
    }
    let out = ctx.allocate_output(0, original.dtype, &[batch, in_h, in_w, channels])?;
    let t = transform(ctx, kernel)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let cols = Spans::new(t.kernel, out_w, in_w, t.scale[1], t.translation[1], t.antialias)?.transposed(in_w);
    let rows = Spans::new(t.kernel, out_h, in_h, t.scale[0], t.translation[0], t.antialias)?.transposed(in_h);
    separable_rows_first(ctx, &grads, &out, &rows.sources(out_h), &cols.sources(out_w))
}

/// ResizeNearestNeighbor: a gather of whole pixels, for elements of 2, 4 or 8 bytes.
pub fn nearest(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    layout::in_batches_of_images(ctx, kernel, (&IMAGE_IN_OUT, &BATCHED_IMAGE), nearest_whole)
}

fn nearest_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let attrs = attrs(kernel)?;
    let image = ctx.input(0)?;
    let (in_h, in_w) = check_image(&image)?;
    let (out_h, out_w) = output_size(ctx, 1, "shape_t", "output dimensions must be positive")?;
    if in_h >= 1 << 24 || in_w >= 1 << 24 {
        return Err(Error::invalid_argument("nearest neighbor requires max height & width of 2^24"));
    }
    let (batch, channels) = (image.shape[0], image.shape[3]);
    let out = ctx.allocate_output(0, image.dtype, &[batch, out_h, out_w, channels])?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let h_scale = resize_scale(in_h, out_h, attrs.align_corners);
    let w_scale = resize_scale(in_w, out_w, attrs.align_corners);
    let ys = nearest_axis(out_h, in_h, h_scale, attrs.align_corners, attrs.half_pixel_centers);
    let xs = nearest_axis(out_w, in_w, w_scale, attrs.align_corners, attrs.half_pixel_centers);
    // Each element as whole words where it has them; 16-bit elements two to an invocation.
    let (entry, per_element) = match image.dtype.size() {
        2 => ("nearest_halves", 1),
        size => ("nearest", (size / 4) as i64),
    };
    let n = shader_len(out.num_elements() * per_element as u64, "ResizeNearestNeighbor")?;
    if needs_bands(ctx, &image, &out)? {
        let params = Params {
            n,
            channels: (channels * per_element) as u32,
            out_w: out_w as u32,
            in_w: in_w as u32,
            ..Params::default()
        };
        let (rows, columns) =
            (RowTable { entries: &ys, words: 1, rows: 1 }, RowTable { entries: &xs, words: 1, rows: 1 });
        return launch_in_bands(ctx, entry, (&image, &out), rows, columns, params);
    }
    let words: Vec<u32> = ys.iter().chain(&xs).copied().collect();
    let table = upload(ctx, &words)?;
    let params = Params {
        n,
        channels: (channels * per_element) as u32,
        out_h: out_h as u32,
        out_w: out_w as u32,
        in_h: in_h as u32,
        in_w: in_w as u32,
        y_table: 0,
        x_table: out_h as u32,
        ..Params::default()
    };
    launch(ctx, entry, &image, &out, &table, params, u64::from(n))
}

/// Runs `out[o, d, i] = sum over sources (s, w) of d of w * input[o, s, i]` (float32), the
/// tensors viewed as [outer, axis, inner]. Tensors past a binding run in windows: ranges of
/// `outer`, or where one [axis, inner] slice passes it, bands of destinations `d` over the sources
/// they read (as the forward resizes' bands of rows).
pub(super) fn axis_sum(
    ctx: &mut dyn KernelContext,
    input: &TensorRef,
    out: &TensorRef,
    (outer, axis_in, inner): (i64, i64, i64),
    sources: &Sources,
) -> Result<()> {
    let limit = super::windows::binding_limit(ctx.stream()?.device());
    let axis_out = sources.offsets.len() as i64 - 1;
    // The bytes of the table of destinations `from..to` (their offsets, then their pairs).
    let table_bytes = |from: i64, to: i64| {
        let pairs = sources.offsets[to as usize] - sources.offsets[from as usize];
        (to - from + 1) as u64 * 4 + u64::from(pairs) * 8
    };
    let table_fits = table_bytes(0, axis_out) <= limit;
    if input.byte_len() <= limit && out.byte_len() <= limit && table_fits {
        return launch_axis_sum(ctx, input, out, (outer, axis_in, inner), sources, false);
    }
    let (in_size, out_size) = (input.dtype.size(), out.dtype.size());
    let (in_slice, out_slice) = ((axis_in * inner) as u64 * in_size, (axis_out * inner) as u64 * out_size);
    // Elements `first..first + count` of `t`, flat.
    let view = |t: &TensorRef, first: i64, count: i64| TensorRef {
        address: t.address + first as u64 * t.dtype.size(),
        dtype: t.dtype,
        shape: vec![count],
    };
    if in_slice <= limit && out_slice <= limit && table_fits {
        let per_launch = (limit / in_slice.max(out_slice).max(1)) as i64;
        let mut o = 0;
        while o < outer {
            let count = per_launch.min(outer - o);
            let (part_in, part_out) = (
                view(input, o * axis_in * inner, count * axis_in * inner),
                view(out, o * axis_out * inner, count * axis_out * inner),
            );
            launch_axis_sum(ctx, &part_in, &part_out, (count, axis_in, inner), sources, false)?;
            o += count;
        }
        return Ok(());
    }
    let (in_row, out_row) = (inner as u64 * in_size, inner as u64 * out_size);
    let span_of = |d: usize| {
        sources.pairs[sources.offsets[d] as usize..sources.offsets[d + 1] as usize]
            .iter()
            .map(|pair| i64::from(pair[0]))
    };
    // The most source rows one destination reads.
    let widest = (0..axis_out as usize)
        .filter_map(|d| {
            span_of(d)
                .fold(None, |span: Option<(i64, i64)>, s| Some(span.map_or((s, s), |(l, h)| (l.min(s), h.max(s)))))
        })
        .map(|(lo, hi)| hi - lo + 1)
        .max()
        .unwrap_or(1);
    if (widest as u64 * in_row > limit || out_row > limit) && inner > 1 {
        // One destination row with its sources passes a binding (the pass down the height of an
        // image whose rows pass it): ranges of the inner elements, each copied out and back (one
        // at a time where one element's sources pass it: their rows then run in windows).
        let chunk = ((limit / (widest as u64 * in_size).max(out_size)) as i64).max(1);
        let as_columns = |t: &TensorRef, rows: i64, inner: i64| TensorRef { shape: vec![rows, inner, 1], ..t.clone() };
        let (input, out) = (as_columns(input, outer * axis_in, inner), as_columns(out, outer * axis_out, inner));
        let part_in = ctx.allocate_temp(input.dtype, &[outer * axis_in, chunk.min(inner), 1])?;
        let part_out = ctx.allocate_temp(out.dtype, &[outer * axis_out, chunk.min(inner), 1])?;
        let mut first = 0;
        while first < inner {
            let count = chunk.min(inner - first);
            let (part_in, part_out) =
                (as_columns(&part_in, outer * axis_in, count), as_columns(&part_out, outer * axis_out, count));
            super::column_tiles::copy_columns(ctx, (&input, first), (&part_in, 0), count)?;
            axis_sum(ctx, &part_in, &part_out, (outer, axis_in, count), sources)?;
            super::column_tiles::copy_columns(ctx, (&part_out, 0), (&out, first), count)?;
            first += count;
        }
        return Ok(());
    }
    for o in 0..outer {
        let mut first = 0;
        while first < axis_out {
            // The longest band of destinations from `first` whose rows and source rows fit.
            let (mut lo, mut hi) = (i64::MAX, i64::MIN);
            let mut end = first;
            while end < axis_out {
                let (band_lo, band_hi) = span_of(end as usize).fold((lo, hi), |(l, h), s| (l.min(s), h.max(s)));
                let source_rows = if band_hi < band_lo { 0 } else { band_hi - band_lo + 1 };
                let too_big = (end + 1 - first) as u64 * out_row > limit || source_rows as u64 * in_row > limit;
                if too_big || table_bytes(first, end + 1) > limit {
                    break;
                }
                (lo, hi, end) = (band_lo, band_hi, end + 1);
            }
            if end == first {
                // One destination whose source rows (or their table) pass a binding: the sum of
                // its sources in windows of rows that fit.
                let target = view(out, (o * axis_out + first) * inner, inner);
                let (lo, hi) = span_of(first as usize).fold((i64::MAX, i64::MIN), |(l, h), s| (l.min(s), h.max(s)));
                // A table pair is 8 bytes; clamped taps may list one source row up to 4 times.
                let window_rows = (limit / in_row.max(32)).saturating_sub(2).max(1) as i64;
                let pairs = &sources.pairs
                    [sources.offsets[first as usize] as usize..sources.offsets[end as usize + 1] as usize];
                let mut written = false;
                for (a, b) in (lo..=hi).step_by(window_rows as usize).map(|a| (a, (a + window_rows).min(hi + 1))) {
                    let part: Vec<[u32; 2]> = pairs
                        .iter()
                        .filter(|&&[s, _]| (a..b).contains(&i64::from(s)))
                        .map(|&[s, w]| [s - a as u32, w])
                        .collect();
                    if part.is_empty() {
                        continue;
                    }
                    let band = Sources { offsets: vec![0, part.len() as u32], pairs: part };
                    let source = view(input, (o * axis_in + a) * inner, (b - a) * inner);
                    launch_axis_sum(ctx, &source, &target, (1, b - a, inner), &band, written)?;
                    written = true;
                }
                if !written {
                    ctx.stream()?.fill(target.address, target.byte_len(), 0)?;
                }
                first = end + 1;
                continue;
            }
            let target = view(out, (o * axis_out + first) * inner, (end - first) * inner);
            if hi < lo {
                // No sources: zeros.
                ctx.stream()?.fill(target.address, target.byte_len(), 0)?;
            } else {
                let (from, to) = (sources.offsets[first as usize], sources.offsets[end as usize]);
                let band = Sources {
                    offsets: sources.offsets[first as usize..=end as usize].iter().map(|&k| k - from).collect(),
                    pairs: sources.pairs[from as usize..to as usize].iter().map(|&[s, w]| [s - lo as u32, w]).collect(),
                };
                let source = view(input, (o * axis_in + lo) * inner, (hi - lo + 1) * inner);
                launch_axis_sum(ctx, &source, &target, (1, hi - lo + 1, inner), &band, false)?;
            }
            first = end;
        }
    }
    Ok(())
}

/// `axis_sum` of tensors that each fit a binding, in launches of at most the adapter's loop budget
/// of sources each; added to `out` where `accumulate` (a later window of a destination's sources).
fn launch_axis_sum(
    ctx: &mut dyn KernelContext,
    input: &TensorRef,
    out: &TensorRef,
    (outer, axis_in, inner): (i64, i64, i64),
    sources: &Sources,
    accumulate: bool,
) -> Result<()> {
    let axis_out = sources.offsets.len() as i64 - 1;
    let n = shader_len((outer * axis_out * inner) as u64, "resize gradient")?;
    if n == 0 {
        return Ok(());
    }
    let mut words = sources.offsets.clone();
    words.extend(sources.pairs.iter().flatten());
    let table = upload(ctx, &words)?;
    let budget = loop_budget(ctx.stream()?.device(), 16).min(u64::from(u32::MAX)) as u32;
    let longest = sources.longest().max(1);
    let mut k_begin = 0;
    while k_begin < longest {
        let k_end = k_begin.saturating_add(budget);
        let params = Params {
            n,
            inner: inner as u32,
            axis_in: axis_in as u32,
            axis_out: axis_out as u32,
            y_table: 0,
            x_table: sources.offsets.len() as u32,
            k_begin,
            k_end,
            accumulate: u32::from(accumulate || k_begin > 0),
            ..Params::default()
        };
        launch(ctx, "axis_sum", input, out, &table, params, u64::from(n))?;
        k_begin = k_end;
    }
    Ok(())
}

/// Two separable passes in TF-CPU's order for bicubic and ScaleAndTranslate: along the height
/// (`ys`, into a temporary of the output's height and the input's width), then the width (`xs`).
fn separable_rows_first(
    ctx: &mut dyn KernelContext,
    input: &TensorRef,
    out: &TensorRef,
    ys: &Sources,
    xs: &Sources,
) -> Result<()> {
    let [batch, in_h, in_w, channels] = input.shape[..] else {
        return Err(Error::internal("separable resize: not 4-D"));
    };
    let out_h = ys.offsets.len() as i64 - 1;
    let rows = ctx.allocate_temp(DType::F32, &[batch, out_h, in_w, channels])?;
    axis_sum(ctx, input, &rows, (batch, in_h, in_w * channels), ys)?;
    axis_sum(ctx, &rows, out, (batch * out_h, in_w, channels), xs)
}

/// A gradient as two separable passes: along the width (`xs`), then the height (`ys`).
fn separable_grad(
    ctx: &mut dyn KernelContext,
    grads: &TensorRef,
    out: &TensorRef,
    ys: &Sources,
    xs: &Sources,
) -> Result<()> {
    let [batch, grad_h, grad_w, channels] = grads.shape[..] else {
        return Err(Error::internal("resize gradient: not 4-D"));
    };
    let out_w = xs.offsets.len() as i64 - 1;
    let columns = ctx.allocate_temp(out.dtype, &[batch, grad_h, out_w, channels])?;
    axis_sum(ctx, grads, &columns, (batch * grad_h, grad_w, channels), xs)?;
    axis_sum(ctx, &columns, out, (batch, grad_h, out_w * channels), ys)
}

/// ResizeBilinearGrad: each output gradient pixel spread over its four source pixels with TF's
/// weights, gathered per source pixel.
pub fn bilinear_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    // `original_image` gives its height and width only (its batch need not match, as in TF).
    layout::in_batches_of_images(ctx, kernel, (&IMAGE_IN_OUT, &BATCHED_IMAGE), bilinear_grad_whole)
}

/// A resize gradient's operands: the incoming gradient, the allocated output gradient, and the
/// resized and original (height, width).
struct GradGeometry {
    grads: TensorRef,
    out: TensorRef,
    resized: (i64, i64),
    original: (i64, i64),
}

/// TF's `ImageResizerGradientState` checks: the gradient (input 0) and the original image's
/// height and width (input 1); allocates the output gradient.
fn grad_geometry(ctx: &mut dyn KernelContext) -> Result<GradGeometry> {
    let grads = ctx.input(0)?;
    if grads.shape.len() != 4 {
        return Err(Error::invalid_argument(format!("input_grad must be 4-dimensional{}", shape_string(&grads.shape))));
    }
    let (batch, resized_h, resized_w, channels) = (grads.shape[0], grads.shape[1], grads.shape[2], grads.shape[3]);
    if resized_h <= 0 || resized_w <= 0 {
        return Err(Error::invalid_argument("resized dimensions must be positive"));
    }
    let original = ctx.input(1)?;
    if original.shape.len() != 4 {
        return Err(Error::invalid_argument(format!(
            "original_image must be 4-dimensional{}",
            shape_string(&original.shape)
        )));
    }
    let (orig_h, orig_w) = (original.shape[1], original.shape[2]);
    if orig_h <= 0 || orig_w <= 0 {
        return Err(Error::invalid_argument("original dimensions must be positive"));
    }
    if orig_h >= i32::MAX as i64 || orig_w >= i32::MAX as i64 {
        return Err(Error::invalid_argument("original sizes must be between 0 and max int32"));
    }
    let out = ctx.allocate_output(0, original.dtype, &[batch, orig_h, orig_w, channels])?;
    Ok(GradGeometry { grads, out, resized: (resized_h, resized_w), original: (orig_h, orig_w) })
}

fn bilinear_grad_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let attrs = attrs(kernel)?;
    let GradGeometry { grads, out, resized: (resized_h, resized_w), original: (orig_h, orig_w) } = grad_geometry(ctx)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let terms = |resized: i64, original: i64| {
        let scale = resize_scale(original, resized, attrs.align_corners);
        let axis = bilinear_axis(resized, original, scale, attrs.half_pixel_centers);
        let mut terms = Vec::with_capacity(2 * axis.len());
        for (i, &[lower, upper, lerp]) in axis.iter().enumerate() {
            let lerp = f32::from_bits(lerp);
            terms.push((lower, i as u32, 1.0 - lerp));
            terms.push((upper, i as u32, lerp));
        }
        Sources::new(original as usize, &terms)
    };
    let (ys, xs) = (terms(resized_h, orig_h), terms(resized_w, orig_w));
    separable_grad(ctx, &grads, &out, &ys, &xs)
}

/// ResizeBicubicGrad: each output gradient pixel spread over its 4x4 source pixels with TF's
/// weights, gathered per source pixel.
pub fn bicubic_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    layout::in_batches_of_images(ctx, kernel, (&IMAGE_IN_OUT, &BATCHED_IMAGE), bicubic_grad_whole)
}

fn bicubic_grad_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let attrs = attrs(kernel)?;
    let GradGeometry { grads, out, resized: (resized_h, resized_w), original: (orig_h, orig_w) } = grad_geometry(ctx)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let ys = bicubic_sources(resized_h, orig_h, &attrs, false);
    let xs = bicubic_sources(resized_w, orig_w, &attrs, false);
    separable_grad(ctx, &grads, &out, &ys, &xs)
}

/// ResizeNearestNeighborGrad: each gradient pixel added to the pixel it was copied from.
pub fn nearest_grad(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    layout::in_batches_of_images(ctx, kernel, (&IMAGE_IN_OUT, &BATCHED_IMAGE), nearest_grad_whole)
}

fn nearest_grad_whole(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let attrs = any_attrs(kernel)?;
    let grads = ctx.input(0)?;
    if grads.shape.len() != 4 {
        return Err(Error::invalid_argument(format!("input must be 4-dimensional{}", shape_string(&grads.shape))));
    }
    let (out_h, out_w) = output_size(ctx, 1, "shape_t", "shape_t's elements must be positive")?;
    let (batch, grad_h, grad_w, channels) = (grads.shape[0], grads.shape[1], grads.shape[2], grads.shape[3]);
    let out = ctx.allocate_output(0, grads.dtype, &[batch, out_h, out_w, channels])?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    if grads.num_elements() == 0 {
        return ctx.stream()?.fill(out.address, out.byte_len(), 0);
    }
    let terms = |grad_size: i64, out_size: i64| {
        let scale = resize_scale(out_size, grad_size, attrs.align_corners);
        let axis = nearest_axis(grad_size, out_size, scale, attrs.align_corners, attrs.half_pixel_centers);
        let terms: Vec<(u32, u32, f32)> = axis.iter().enumerate().map(|(i, &d)| (d, i as u32, 1.0)).collect();
        Sources::new(out_size as usize, &terms)
    };
    let (ys, xs) = (terms(grad_h, out_h), terms(grad_w, out_w));
    separable_grad(ctx, &grads, &out, &ys, &xs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_pixel_weights_clamp_like_tf() {
        // 2 -> 4 with half-pixel centers: sources -0.25, 0.25, 0.75, 1.25.
        let axis = bilinear_axis(4, 2, resize_scale(2, 4, false), true);
        let lerps: Vec<f32> = axis.iter().map(|e| f32::from_bits(e[2])).collect();
        assert_eq!(axis.iter().map(|e| (e[0], e[1])).collect::<Vec<_>>(), [(0, 0), (0, 1), (0, 1), (1, 1)]);
        assert_eq!(lerps, [0.75, 0.25, 0.75, 0.25]);
    }

    #[test]
    fn bicubic_taps_of_a_same_size_resize_copy_the_pixel() {
        for half_pixel_centers in [false, true] {
            let taps = bicubic_axis(5, 5, resize_scale(5, 5, false), half_pixel_centers);
            for (i, taps) in taps.iter().enumerate() {
                assert_eq!(taps.map(|(_, w)| w), [0.0, 1.0, 0.0, 0.0]);
                assert_eq!(taps[1].0, i as u32);
            }
        }
    }

    #[test]
    fn keys_cubic_drops_taps_outside_the_image_and_renormalises() {
        // 2 -> 4 with half-pixel centers: output 0 samples -0.25, so tap -2 and -1 fall outside.
        let taps = bicubic_axis(4, 2, resize_scale(2, 4, false), true);
        let [(i0, w0), (i1, w1), (_, w2), (_, w3)] = taps[0];
        assert_eq!((i0, i1, w0, w1), (0, 0, 0.0, 0.0));
        assert!((w2 + w3 - 1.0).abs() < 1e-6, "{:?}", taps[0]);
    }

    #[test]
    fn nearest_indices_round_or_floor() {
        assert_eq!(nearest_axis(4, 3, resize_scale(3, 4, true), true, false), [0, 1, 1, 2]);
        assert_eq!(nearest_axis(4, 3, resize_scale(3, 4, false), false, false), [0, 0, 1, 2]);
        assert_eq!(nearest_axis(4, 3, resize_scale(3, 4, false), false, true), [0, 1, 1, 2]);
    }

    #[test]
    fn sources_group_terms_by_destination() {
        let s = Sources::new(3, &[(2, 0, 1.0), (0, 1, 0.5), (2, 2, 0.25)]);
        assert_eq!(s.offsets, [0, 1, 1, 3]);
        assert_eq!(s.pairs.iter().map(|p| p[0]).collect::<Vec<_>>(), [1, 0, 2]);
        assert_eq!(s.longest(), 2);
    }
}
