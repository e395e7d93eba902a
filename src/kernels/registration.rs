//! `TF_InitKernel` and the C callbacks of every registered kernel: the shim between TF's kernel C
//! API (`kernels.h`) and `KernelContext`.

use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::error::{from_panic, Error, Result};
use crate::ffi::tf::{
    api, set_status, OwnedStatus, TF_AllocatorAttributes, TF_OpKernelConstruction, TF_OpKernelContext, TF_Tensor,
    TF_VariableInputLockHolder, TfApi, TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE,
};
use crate::runtime::{trace, Stream};

use super::{
    validate, AttrKind, AttrValue, Attrs, DType, KernelContext, KernelDef, KernelInstance, TensorRef, VariableWork,
    KERNELS,
};

macro_rules! tf_fn {
    ($api:expr, $name:ident) => {
        $api.$name.ok_or_else(|| Error::unimplemented(concat!("this TensorFlow lacks ", stringify!($name))))?
    };
}

type CreateFn = unsafe extern "C" fn(*mut TF_OpKernelConstruction) -> *mut c_void;

/// TF's `create_func` carries no user data, so each table row gets its own create function: the
/// `I`-th one builds a `KernelInstance` for `KERNELS[I]` with the node's attributes, which TF then
/// hands to `compute` as kernel state and to `delete_kernel` at the end.
unsafe extern "C" fn create_kernel<const I: usize>(ctx: *mut TF_OpKernelConstruction) -> *mut c_void {
    let outcome = catch_unwind(|| {
        let def = KERNELS.get(I).ok_or_else(|| Error::internal("kernel index out of range"))?;
        let attrs = read_attrs(ctx, def)?;
        let tf_op = format!("{}:{}", node_name(ctx).unwrap_or_else(|| def.op.to_string()), def.op).into();
        Ok(Box::into_raw(Box::new(NodeKernel { instance: KernelInstance::new(def, attrs), tf_op })) as *mut c_void)
    })
    .unwrap_or_else(|p| Err(from_panic(p)));
    match outcome {
        Ok(state) => state,
        Err(e) => {
            if let Some(fail) = api().TF_OpKernelConstruction_Failure {
                let status = OwnedStatus::new();
                // SAFETY: our own live status.
                unsafe { set_status(status.as_ptr(), &Err(e)) };
                // SAFETY: `ctx` is the construction context TF passed to this call.
                unsafe { fail(ctx, status.as_ptr()) };
            }
            std::ptr::null_mut()
        }
    }
}

/// A kernel as TF holds it: the instance, and the "node name:op type" the profiler names its work by.
struct NodeKernel {
    instance: KernelInstance,
    tf_op: Arc<str>,
}

/// The name of the node `ctx` builds a kernel for, where TF offers it.
fn node_name(ctx: *mut TF_OpKernelConstruction) -> Option<String> {
    let get = api().TF_OpKernelConstruction_GetName?;
    // SAFETY: `ctx` is the live construction context of this create call.
    let view = unsafe { get(ctx) };
    if view.data.is_null() {
        return None;
    }
    // SAFETY: TF's view points to `len` bytes that live as long as the construction context.
    let bytes = unsafe { std::slice::from_raw_parts(view.data as *const u8, view.len) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}

fn read_attrs(ctx: *mut TF_OpKernelConstruction, def: &KernelDef) -> Result<Attrs> {
    let mut attrs = Attrs::default();
    for (name, kind) in def.attrs {
        let c_name = CString::new(*name).map_err(|e| Error::internal(e.to_string()))?;
        let status = OwnedStatus::new();
        let value = match kind {
            AttrKind::Int => {
                let get = tf_fn!(api(), TF_OpKernelConstruction_GetAttrInt64);
                let mut value = 0i64;
                // SAFETY: `ctx` is live during construction; TF writes one int64.
                unsafe { get(ctx, c_name.as_ptr(), &mut value, status.as_ptr()) };
                AttrValue::Int(value)
            }
            AttrKind::Float => {
                let get = tf_fn!(api(), TF_OpKernelConstruction_GetAttrFloat);
                let mut value = 0f32;
                // SAFETY: as above; TF writes one float.
                unsafe { get(ctx, c_name.as_ptr(), &mut value, status.as_ptr()) };
                AttrValue::Float(value)
            }
            AttrKind::Bool => {
                let get = tf_fn!(api(), TF_OpKernelConstruction_GetAttrBool);
                let mut value: u8 = 0;
                // SAFETY: as above; TF writes one TF_Bool.
                unsafe { get(ctx, c_name.as_ptr(), &mut value, status.as_ptr()) };
                AttrValue::Bool(value != 0)
            }
            AttrKind::IntList => {
                let (size_of, get) = (
                    tf_fn!(api(), TF_OpKernelConstruction_GetAttrSize),
                    tf_fn!(api(), TF_OpKernelConstruction_GetAttrInt64List),
                );
                let (mut list_size, mut total_size) = (0i32, 0i32);
                // SAFETY: as above; TF reports the list length, then copies that many int64s.
                unsafe { size_of(ctx, c_name.as_ptr(), &mut list_size, &mut total_size, status.as_ptr()) };
                status.result()?;
                let mut values = vec![0i64; list_size.max(0) as usize];
                unsafe { get(ctx, c_name.as_ptr(), values.as_mut_ptr(), list_size.max(0), status.as_ptr()) };
                AttrValue::IntList(values)
            }
            AttrKind::FloatList => {
                let (size_of, get) = (
                    tf_fn!(api(), TF_OpKernelConstruction_GetAttrSize),
                    tf_fn!(api(), TF_OpKernelConstruction_GetAttrFloatList),
                );
                let (mut list_size, mut total_size) = (0i32, 0i32);
                // SAFETY: as above; TF reports the list length, then copies that many floats.
                unsafe { size_of(ctx, c_name.as_ptr(), &mut list_size, &mut total_size, status.as_ptr()) };
                status.result()?;
                let mut values = vec![0f32; list_size.max(0) as usize];
                unsafe { get(ctx, c_name.as_ptr(), values.as_mut_ptr(), list_size.max(0), status.as_ptr()) };
                AttrValue::FloatList(values)
            }
            AttrKind::StrList => {
                let (size_of, get) = (
                    tf_fn!(api(), TF_OpKernelConstruction_GetAttrSize),
                    tf_fn!(api(), TF_OpKernelConstruction_GetAttrStringList),
                );
                let (mut list_size, mut total_size) = (0i32, 0i32);
                // SAFETY: as above; TF reports the count and total length, then fills pointers into
                // `storage` and their lengths.
                unsafe { size_of(ctx, c_name.as_ptr(), &mut list_size, &mut total_size, status.as_ptr()) };
                status.result()?;
                let count = list_size.max(0) as usize;
                let mut pointers = vec![std::ptr::null_mut::<c_char>(); count];
                let mut lengths = vec![0usize; count];
                let mut storage = vec![0u8; total_size.max(0) as usize + 1];
                unsafe {
                    get(
                        ctx,
                        c_name.as_ptr(),
                        pointers.as_mut_ptr(),
                        lengths.as_mut_ptr(),
                        count as c_int,
                        storage.as_mut_ptr() as *mut c_void,
                        storage.len(),
                        status.as_ptr(),
                    )
                };
                status.result()?;
                let values = pointers
                    .iter()
                    .zip(&lengths)
                    .map(|(&ptr, &len)| {
                        // SAFETY: TF pointed each entry at `len` bytes inside `storage`.
                        let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
                        String::from_utf8_lossy(bytes).into_owned()
                    })
                    .collect();
                AttrValue::StrList(values)
            }
            AttrKind::Str | AttrKind::OptionalStr => {
                let (size_of, get) = (
                    tf_fn!(api(), TF_OpKernelConstruction_GetAttrSize),
                    tf_fn!(api(), TF_OpKernelConstruction_GetAttrString),
                );
                let (mut list_size, mut total_size) = (0i32, 0i32);
                // SAFETY: as above; TF reports the string's length, then copies that many bytes.
                unsafe { size_of(ctx, c_name.as_ptr(), &mut list_size, &mut total_size, status.as_ptr()) };
                if *kind == AttrKind::OptionalStr && status.result().is_err() {
                    // An attribute this TensorFlow's op does not have yet.
                    continue;
                }
                status.result()?;
                let mut buffer = vec![0u8; total_size.max(0) as usize + 1];
                unsafe { get(ctx, c_name.as_ptr(), buffer.as_mut_ptr() as *mut c_char, buffer.len(), status.as_ptr()) };
                buffer.truncate(total_size.max(0) as usize);
                AttrValue::Str(String::from_utf8_lossy(&buffer).into_owned())
            }
        };
        status.result()?;
        attrs.set(name, value);
    }
    Ok(attrs)
}

macro_rules! row {
    ($hi:literal) => {
        [
            create_kernel::<{ $hi * 16 }> as CreateFn,
            create_kernel::<{ $hi * 16 + 1 }>,
            create_kernel::<{ $hi * 16 + 2 }>,
            create_kernel::<{ $hi * 16 + 3 }>,
            create_kernel::<{ $hi * 16 + 4 }>,
            create_kernel::<{ $hi * 16 + 5 }>,
            create_kernel::<{ $hi * 16 + 6 }>,
            create_kernel::<{ $hi * 16 + 7 }>,
            create_kernel::<{ $hi * 16 + 8 }>,
            create_kernel::<{ $hi * 16 + 9 }>,
            create_kernel::<{ $hi * 16 + 10 }>,
            create_kernel::<{ $hi * 16 + 11 }>,
            create_kernel::<{ $hi * 16 + 12 }>,
            create_kernel::<{ $hi * 16 + 13 }>,
            create_kernel::<{ $hi * 16 + 14 }>,
            create_kernel::<{ $hi * 16 + 15 }>,
        ]
    };
}

/// Room for `MAX_KERNELS` kernels.
static CREATE_FNS: [[CreateFn; 16]; MAX_KERNELS / 16] = [
    row!(0),
    row!(1),
    row!(2),
    row!(3),
    row!(4),
    row!(5),
    row!(6),
    row!(7),
    row!(8),
    row!(9),
    row!(10),
    row!(11),
    row!(12),
    row!(13),
    row!(14),
    row!(15),
    row!(16),
    row!(17),
    row!(18),
    row!(19),
    row!(20),
    row!(21),
    row!(22),
    row!(23),
    row!(24),
    row!(25),
    row!(26),
    row!(27),
    row!(28),
    row!(29),
    row!(30),
    row!(31),
    row!(32),
    row!(33),
    row!(34),
    row!(35),
    row!(36),
    row!(37),
    row!(38),
    row!(39),
    row!(40),
    row!(41),
    row!(42),
    row!(43),
    row!(44),
    row!(45),
    row!(46),
    row!(47),
    row!(48),
    row!(49),
    row!(50),
    row!(51),
    row!(52),
    row!(53),
    row!(54),
    row!(55),
    row!(56),
    row!(57),
    row!(58),
    row!(59),
    row!(60),
    row!(61),
    row!(62),
    row!(63),
    row!(64),
    row!(65),
    row!(66),
    row!(67),
    row!(68),
    row!(69),
    row!(70),
    row!(71),
    row!(72),
    row!(73),
    row!(74),
    row!(75),
    row!(76),
    row!(77),
    row!(78),
    row!(79),
    row!(80),
    row!(81),
    row!(82),
    row!(83),
    row!(84),
    row!(85),
    row!(86),
    row!(87),
    row!(88),
    row!(89),
    row!(90),
    row!(91),
    row!(92),
    row!(93),
    row!(94),
    row!(95),
    row!(96),
    row!(97),
    row!(98),
    row!(99),
    row!(100),
    row!(101),
    row!(102),
    row!(103),
    row!(104),
    row!(105),
    row!(106),
    row!(107),
    row!(108),
    row!(109),
    row!(110),
    row!(111),
    row!(112),
    row!(113),
    row!(114),
    row!(115),
    row!(116),
    row!(117),
    row!(118),
    row!(119),
    row!(120),
    row!(121),
    row!(122),
    row!(123),
    row!(124),
    row!(125),
    row!(126),
    row!(127),
    row!(128),
    row!(129),
    row!(130),
    row!(131),
    row!(132),
    row!(133),
    row!(134),
    row!(135),
    row!(136),
    row!(137),
    row!(138),
    row!(139),
    row!(140),
    row!(141),
    row!(142),
    row!(143),
    row!(144),
    row!(145),
    row!(146),
    row!(147),
    row!(148),
    row!(149),
    row!(150),
    row!(151),
    row!(152),
    row!(153),
    row!(154),
    row!(155),
    row!(156),
    row!(157),
    row!(158),
    row!(159),
    row!(160),
    row!(161),
    row!(162),
    row!(163),
    row!(164),
    row!(165),
    row!(166),
    row!(167),
    row!(168),
    row!(169),
    row!(170),
    row!(171),
    row!(172),
    row!(173),
    row!(174),
    row!(175),
    row!(176),
    row!(177),
    row!(178),
    row!(179),
    row!(180),
    row!(181),
    row!(182),
    row!(183),
    row!(184),
    row!(185),
    row!(186),
    row!(187),
    row!(188),
    row!(189),
    row!(190),
    row!(191),
    row!(192),
    row!(193),
    row!(194),
    row!(195),
    row!(196),
    row!(197),
    row!(198),
    row!(199),
    row!(200),
    row!(201),
    row!(202),
    row!(203),
    row!(204),
    row!(205),
    row!(206),
    row!(207),
    row!(208),
    row!(209),
    row!(210),
    row!(211),
    row!(212),
    row!(213),
    row!(214),
    row!(215),
    row!(216),
    row!(217),
    row!(218),
    row!(219),
    row!(220),
    row!(221),
    row!(222),
    row!(223),
    row!(224),
    row!(225),
    row!(226),
    row!(227),
    row!(228),
    row!(229),
    row!(230),
    row!(231),
    row!(232),
    row!(233),
    row!(234),
    row!(235),
    row!(236),
    row!(237),
    row!(238),
    row!(239),
    row!(240),
    row!(241),
    row!(242),
    row!(243),
    row!(244),
    row!(245),
    row!(246),
    row!(247),
    row!(248),
    row!(249),
    row!(250),
    row!(251),
    row!(252),
    row!(253),
    row!(254),
    row!(255),
];

unsafe extern "C" fn delete_kernel(state: *mut c_void) {
    let outcome = catch_unwind(|| {
        if !state.is_null() {
            // SAFETY: the state is the `Box<NodeKernel>` made by `create_kernel`, freed once.
            drop(unsafe { Box::from_raw(state as *mut NodeKernel) });
        }
    });
    if let Err(p) = outcome {
        log::error!("tensorflow-wgpu: delete_kernel: {}", from_panic(p));
    }
}

unsafe extern "C" fn compute_kernel(state: *mut c_void, ctx: *mut TF_OpKernelContext) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `state` is the `NodeKernel` that `create_kernel` returned.
        let node =
            unsafe { (state as *const NodeKernel).as_ref() }.ok_or_else(|| Error::internal("null kernel state"))?;
        let _profiled_op = trace::OpScope::enter(&node.tf_op);
        let kernel = &node.instance;
        let mut context = TfKernelContext { ctx, api: api(), tensors: Vec::new(), stream: None };
        let result = (kernel.def.compute)(&mut context, kernel);
        result.map_err(|e| Error::new(e.code, format!("{} on WGPU: {}", kernel.def.op, e.message)))
    }))
    .unwrap_or_else(|p| Err(from_panic(p)));
    if let Err(e) = outcome {
        if let Some(fail) = api().TF_OpKernelContext_Failure {
            let status = OwnedStatus::new();
            // SAFETY: our own live status.
            unsafe { set_status(status.as_ptr(), &Err(e)) };
            // SAFETY: `ctx` is the live context TF passed to this compute call.
            unsafe { fail(ctx, status.as_ptr()) };
        }
    }
}

/// The stream TF runs this kernel call on.
///
/// # Safety
/// `ctx` must be the live context of a compute call on our device.
unsafe fn stream_of<'a>(api: &TfApi, ctx: *mut TF_OpKernelContext) -> Result<&'a Stream> {
    let get = tf_fn!(api, TF_GetStream);
    let status = OwnedStatus::new();
    // SAFETY: per this function's contract; on our device the SP_Stream is a `Box<Stream>` from
    // create_stream, alive for at least the duration of the compute call.
    let stream = unsafe { (get(ctx, status.as_ptr()) as *const Stream).as_ref() };
    status.result()?;
    stream.ok_or_else(|| Error::internal("TF_GetStream returned null"))
}

/// `kernels_experimental.h`'s copy callback, run when TF copies a variable's tensor before an
/// update (copy-on-write): a device-to-device copy on the kernel's stream. The callback owns both
/// tensors.
unsafe extern "C" fn copy_variable_tensor(ctx: *mut TF_OpKernelContext, source: *mut TF_Tensor, dest: *mut TF_Tensor) {
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<()> {
        let api = api();
        let (data, size) = (tf_fn!(api, TF_TensorData), tf_fn!(api, TF_TensorByteSize));
        // SAFETY: TF calls this during our compute call with live tensors of one size on our device.
        unsafe {
            let stream = stream_of(api, ctx)?;
            let len = size(source) as u64;
            if len > 0 {
                stream.memcpy_dtod(data(dest) as u64, data(source) as u64, len)?;
            }
        }
        Ok(())
    }))
    .unwrap_or_else(|p| Err(from_panic(p)));
    let api = api();
    if let Some(delete) = api.TF_DeleteTensor {
        // SAFETY: the callback owns both tensors (kernels_experimental.h) and deletes each once.
        unsafe {
            delete(source);
            delete(dest);
        }
    }
    if let (Err(e), Some(fail)) = (outcome, api.TF_OpKernelContext_Failure) {
        let status = OwnedStatus::new();
        // SAFETY: our own live status, and the live context TF passed to the callback.
        unsafe {
            set_status(status.as_ptr(), &Err(e));
            fail(ctx, status.as_ptr());
        }
    }
}

/// Releases the variable locks when dropped.
struct VariableLocks<'a> {
    holder: *mut TF_VariableInputLockHolder,
    api: &'a TfApi,
}

impl Drop for VariableLocks<'_> {
    fn drop(&mut self) {
        if let (false, Some(release)) = (self.holder.is_null(), self.api.TF_ReleaseVariableInputLockHolder) {
            // SAFETY: the holder came from TF_MaybeLockVariableInputMutexesInOrder, released once.
            unsafe { release(self.holder) };
        }
    }
}

/// `KernelContext` over a live `TF_OpKernelContext`.
struct TfKernelContext<'a> {
    ctx: *mut TF_OpKernelContext,
    api: &'a TfApi,
    /// Tensors obtained from TF during this call, deleted when it ends.
    tensors: Vec<*mut TF_Tensor>,
    stream: Option<&'a Stream>,
}

impl Drop for TfKernelContext<'_> {
    fn drop(&mut self) {
        if let Some(delete) = self.api.TF_DeleteTensor {
            for t in self.tensors.drain(..) {
                // SAFETY: each tensor came from TF_GetInput/TF_AllocateOutput and is deleted once.
                unsafe { delete(t) };
            }
        }
    }
}

impl TfKernelContext<'_> {
    /// The bytes of an input TF keeps in host memory (the kernel declared it HostMemory).
    fn host_input(&mut self, index: usize) -> Result<(Vec<u8>, TensorRef)> {
        let get = tf_fn!(self.api, TF_GetInput);
        let status = OwnedStatus::new();
        let mut tensor = std::ptr::null_mut();
        // SAFETY: `ctx` is live; TF writes a new tensor handle or an error.
        unsafe { get(self.ctx, index as c_int, &mut tensor, status.as_ptr()) };
        status.result()?;
        let described = self.describe(tensor)?;
        let len = described.byte_len() as usize;
        let data = tf_fn!(self.api, TF_TensorData);
        // SAFETY: a HostMemory argument's TF_TensorData is a host pointer to `len` bytes.
        let bytes = unsafe {
            let ptr = data(tensor);
            if len == 0 || ptr.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(ptr as *const u8, len).to_vec()
            }
        };
        Ok((bytes, described))
    }

    /// The byte size of a tensor the kernel asks TF for, after the checks without which TF would
    /// abort the process (`validate::output_bytes`); sizes past the device's budget are refused.
    fn checked_bytes(&mut self, dtype: DType, shape: &[i64]) -> Result<u64> {
        let budget = self.stream()?.device().memory.limit();
        validate::output_bytes(dtype, shape, budget)
    }

    fn describe(&mut self, tensor: *mut TF_Tensor) -> Result<TensorRef> {
        if tensor.is_null() {
            return Err(Error::internal("TensorFlow returned a null tensor"));
        }
        self.tensors.push(tensor);
        let (dtype_of, num_dims, dim, data) = (
            tf_fn!(self.api, TF_TensorType),
            tf_fn!(self.api, TF_NumDims),
            tf_fn!(self.api, TF_Dim),
            tf_fn!(self.api, TF_TensorData),
        );
        // SAFETY: `tensor` is a live TF_Tensor; dims are read within 0..num_dims.
        unsafe {
            let code = dtype_of(tensor);
            let dtype = DType::from_tf_code(code)
                .ok_or_else(|| Error::unimplemented(format!("tensor dtype code {code} is not supported on WGPU")))?;
            let shape = (0..num_dims(tensor)).map(|i| dim(tensor, i)).collect();
            Ok(TensorRef { address: data(tensor) as u64, dtype, shape })
        }
    }
}

impl KernelContext for TfKernelContext<'_> {
    fn num_inputs(&self) -> usize {
        // SAFETY: `ctx` is live for this compute call.
        self.api.TF_NumInputs.map_or(0, |f| unsafe { f(self.ctx) } as usize)
    }

    fn num_outputs(&self) -> usize {
        // SAFETY: `ctx` is live for this compute call.
        self.api.TF_NumOutputs.map_or(0, |f| unsafe { f(self.ctx) } as usize)
    }

    fn expected_output_dtype(&self, index: usize) -> Result<DType> {
        let expected = tf_fn!(self.api, TF_ExpectedOutputDataType);
        // SAFETY: `ctx` is live for this compute call; TF checks the index.
        let code = unsafe { expected(self.ctx, index as c_int) };
        DType::from_tf_code(code).ok_or_else(|| Error::unimplemented(format!("output dtype code {code} on WGPU")))
    }

    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        let (bytes, tensor) = self.host_input(index)?;
        let values = match tensor.dtype {
            DType::I32 => {
                bytes.chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap_or_default()) as i64).collect()
            }
            DType::U32 => {
                bytes.chunks_exact(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap_or_default()) as i64).collect()
            }
            // (Reverse's dims.)
            DType::Bool => bytes.iter().map(|&b| i64::from(b != 0)).collect(),
            // uint64 (random keys and counters) keeps its bits.
            DType::I64 | DType::U64 => {
                bytes.chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().unwrap_or_default())).collect()
            }
            other => return Err(Error::invalid_argument(format!("expected an integer input, got {other:?}"))),
        };
        Ok((values, tensor.shape))
    }

    fn write_host_output(&mut self, index: usize, dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<()> {
        let out = self.allocate_output(index, dtype, shape)?;
        if out.byte_len() != bytes.len() as u64 {
            return Err(Error::internal(format!("host output {index}: {} bytes for {shape:?}", bytes.len())));
        }
        let is_host = tf_fn!(self.api, TF_IsHostMemoryOutput);
        let status = OwnedStatus::new();
        // SAFETY: `ctx` is live for this compute call.
        let on_host = unsafe { is_host(self.ctx, index as c_int, status.as_ptr()) };
        status.result()?;
        if on_host == 0 {
            return Err(Error::internal(format!("output {index} is not in host memory")));
        }
        if !bytes.is_empty() {
            // SAFETY: a host-memory output's data is a host pointer to `out.byte_len()` bytes.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.address as *mut u8, bytes.len()) };
        }
        Ok(())
    }

    fn host_input_floats(&mut self, index: usize) -> Result<Vec<f64>> {
        let (bytes, tensor) = self.host_input(index)?;
        Ok(match tensor.dtype {
            DType::F32 => {
                bytes.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap_or_default()) as f64).collect()
            }
            DType::F64 => bytes.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap_or_default())).collect(),
            DType::I32 => {
                bytes.chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap_or_default()) as f64).collect()
            }
            DType::I64 => {
                bytes.chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().unwrap_or_default()) as f64).collect()
            }
            other => return Err(Error::invalid_argument(format!("expected a numeric host input, got {other:?}"))),
        })
    }

    fn input(&mut self, index: usize) -> Result<TensorRef> {
        let get = tf_fn!(self.api, TF_GetInput);
        let status = OwnedStatus::new();
        let mut tensor = std::ptr::null_mut();
        // SAFETY: `ctx` is live; TF writes a new tensor handle or an error.
        unsafe { get(self.ctx, index as c_int, &mut tensor, status.as_ptr()) };
        status.result()?;
        self.describe(tensor)
    }

    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let bytes = self.checked_bytes(dtype, shape)?;
        let allocate = tf_fn!(self.api, TF_AllocateOutput);
        let status = OwnedStatus::new();
        // SAFETY: `ctx` is live; `shape` outlives the call.
        let tensor = unsafe {
            allocate(
                self.ctx,
                index as c_int,
                dtype.tf_code(),
                shape.as_ptr(),
                shape.len() as c_int,
                bytes as usize,
                status.as_ptr(),
            )
        };
        status.result()?;
        self.describe(tensor)
    }

    fn forward_input_or_allocate_output(
        &mut self,
        candidates: &[usize],
        index: usize,
        dtype: DType,
        shape: &[i64],
    ) -> Result<TensorRef> {
        self.checked_bytes(dtype, shape)?;
        let forward = tf_fn!(self.api, TF_ForwardInputOrAllocateOutput);
        let candidates: Vec<c_int> = candidates.iter().map(|&c| c as c_int).collect();
        let status = OwnedStatus::new();
        let mut forwarded: c_int = -1;
        // SAFETY: `ctx` is live; the arrays outlive the call.
        let tensor = unsafe {
            forward(
                self.ctx,
                candidates.as_ptr(),
                candidates.len() as c_int,
                index as c_int,
                shape.as_ptr(),
                shape.len() as c_int,
                &mut forwarded,
                status.as_ptr(),
            )
        };
        status.result()?;
        let out = self.describe(tensor)?;
        if out.dtype != dtype {
            return Err(Error::internal(format!("forwarded output has dtype {:?}, expected {dtype:?}", out.dtype)));
        }
        Ok(out)
    }

    fn allocate_temp(&mut self, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        self.checked_bytes(dtype, shape)?;
        let allocate = tf_fn!(self.api, TF_AllocateTemp);
        let status = OwnedStatus::new();
        let mut attributes = TF_AllocatorAttributes { struct_size: TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE, on_host: 0 };
        // SAFETY: `ctx` is live; `shape` and `attributes` outlive the call.
        let tensor = unsafe {
            allocate(self.ctx, dtype.tf_code(), shape.as_ptr(), shape.len() as c_int, &mut attributes, status.as_ptr())
        };
        status.result()?;
        self.describe(tensor)
    }

    fn stream(&mut self) -> Result<&Stream> {
        if self.stream.is_none() {
            // SAFETY: `ctx` is the live context of this compute call.
            self.stream = Some(unsafe { stream_of(self.api, self.ctx) }?);
        }
        self.stream.ok_or_else(|| Error::internal("no stream"))
    }

    fn variables_accessible(&self) -> bool {
        self.api.has_variable_access()
    }

    fn with_variables(&mut self, resources: &[usize], f: &mut VariableWork) -> Result<()> {
        let lock = tf_fn!(self.api, TF_MaybeLockVariableInputMutexesInOrder);
        let get = tf_fn!(self.api, TF_GetInputTensorFromVariable);
        let inputs: Vec<c_int> = resources.iter().map(|&r| r as c_int).collect();
        let status = OwnedStatus::new();
        let mut locks = VariableLocks { holder: std::ptr::null_mut(), api: self.api };
        // SAFETY: `ctx` is live; `inputs` outlives the call; TF takes the locks in its own order and
        // writes a lock holder or an error.
        unsafe {
            lock(
                self.ctx,
                true,
                false,
                inputs.as_ptr(),
                inputs.len(),
                Some(copy_variable_tensor),
                &mut locks.holder,
                status.as_ptr(),
            )
        };
        status.result()?;
        let mut variables = Vec::with_capacity(inputs.len());
        for &input in &inputs {
            let mut tensor = std::ptr::null_mut();
            // SAFETY: `ctx` is live and the variables' locks are held; TF writes a tensor or an error.
            unsafe {
                get(self.ctx, input, true, false, false, Some(copy_variable_tensor), &mut tensor, status.as_ptr())
            };
            status.result()?;
            variables.push(self.describe(tensor)?);
        }
        let result = f(self, &variables);
        drop(locks);
        result
    }
}

fn register(api: &TfApi, index: usize, def: &KernelDef) -> Result<()> {
    let create = *CREATE_FNS
        .get(index / 16)
        .and_then(|row| row.get(index % 16))
        .ok_or_else(|| Error::internal("kernel table larger than CREATE_FNS"))?;
    let op = CString::new(def.op).map_err(|e| Error::internal(e.to_string()))?;
    let (new_builder, constrain, host_memory, register, delete_builder) = (
        tf_fn!(api, TF_NewKernelBuilder),
        tf_fn!(api, TF_KernelBuilder_TypeConstraint),
        tf_fn!(api, TF_KernelBuilder_HostMemory),
        tf_fn!(api, TF_RegisterKernelBuilder),
        api.TF_DeleteKernelBuilder,
    );
    let status = OwnedStatus::new();
    // SAFETY: TF's kernel-builder API, called with NUL-terminated strings that outlive each call and
    // callbacks of the declared signatures. The builder is consumed by TF_RegisterKernelBuilder.
    unsafe {
        let builder =
            new_builder(op.as_ptr(), c"GPU".as_ptr(), Some(create), Some(compute_kernel), Some(delete_kernel));
        for (attr, dtype) in def.constraints {
            let attr = CString::new(*attr).map_err(|e| Error::internal(e.to_string()))?;
            constrain(builder, attr.as_ptr(), dtype.tf_code(), status.as_ptr());
            if let Err(e) = status.result() {
                if let Some(delete) = delete_builder {
                    delete(builder);
                }
                return Err(e);
            }
        }
        for arg in def.host_memory {
            let arg = CString::new(*arg).map_err(|e| Error::internal(e.to_string()))?;
            host_memory(builder, arg.as_ptr());
        }
        let types: String = def.constraints.iter().map(|(_, d)| format!("_{}", d.tf_name())).collect();
        let name = CString::new(format!("{}{types}_WGPU", def.op)).map_err(|e| Error::internal(e.to_string()))?;
        register(name.as_ptr(), builder, status.as_ptr());
    }
    status.result()
}

/// Registers every kernel of the table. Called by TensorFlow after `SE_InitPlugin`.
#[no_mangle]
pub extern "C" fn TF_InitKernel() {
    let outcome = catch_unwind(|| {
        let api = api();
        let missing = api.missing_kernel_symbols();
        if !missing.is_empty() {
            log::error!("tensorflow-wgpu: kernel API functions missing, no kernels registered: {missing:?}");
            return;
        }
        let mut registered = 0;
        for (index, def) in KERNELS.iter().enumerate() {
            match register(api, index, def) {
                Ok(()) => registered += 1,
                Err(e) => log::error!("tensorflow-wgpu: cannot register {} {:?}: {e}", def.op, def.constraints),
            }
        }
        log::info!("tensorflow-wgpu: registered {registered} of {} kernels", KERNELS.len());
    });
    if let Err(p) = outcome {
        log::error!("tensorflow-wgpu: TF_InitKernel: {}", from_panic(p));
    }
}

/// The registered (op × dtype) table as text, for tests and tools that load the library (not a TF
/// symbol). One line per kernel: the op, then `attr=dtype` pairs.
#[no_mangle]
pub extern "C" fn tf_wgpu_kernel_table() -> *const c_char {
    static TABLE: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    let build = || {
        let lines: Vec<String> = KERNELS
            .iter()
            .map(|k| {
                let attrs: Vec<String> = k.constraints.iter().map(|(a, d)| format!("{a}={}", d.tf_name())).collect();
                format!("{} {}", k.op, attrs.join(" ")).trim().to_string()
            })
            .collect();
        CString::new(lines.join("\n")).unwrap_or_default()
    };
    match catch_unwind(|| TABLE.get_or_init(build).as_ptr()) {
        Ok(table) => table,
        Err(p) => {
            log::error!("tensorflow-wgpu: tf_wgpu_kernel_table: {}", from_panic(p));
            std::ptr::null()
        }
    }
}

/// The number of create functions available, checked against the table size in a test.
pub const MAX_KERNELS: usize = 256 * 16;

#[cfg(test)]
mod tests {
    #[test]
    fn table_fits_the_create_functions() {
        assert!(super::KERNELS.len() <= super::MAX_KERNELS);
    }
}
