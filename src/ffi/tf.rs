//! TensorFlow's C types (`tf_status.h`, `tf_tensor.h`, `tf_datatype.h`, `kernels.h`) and the run-time
//! resolution of the `TF_*` functions.
//!
//! The cdylib never links against TensorFlow: every `TF_*` function is looked up in the process at
//! run time (`loader::tf_symbol`, per OS). That keeps `cargo test` free of TensorFlow and lets one binary run on several TF versions. When no
//! TF status functions are present (Rust tests, the dlopen example), a small built-in `TF_Status`
//! stand-in is used instead; it is all-or-nothing so that a real TF status is never handled by it.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use crate::error::{Code, Error};

pub type TF_Bool = u8;

#[repr(C)]
pub struct TF_Status {
    _private: [u8; 0],
}
#[repr(C)]
pub struct TF_Tensor {
    _private: [u8; 0],
}
#[repr(C)]
pub struct TF_OpKernelContext {
    _private: [u8; 0],
}
/// Locks taken by `TF_MaybeLockVariableInputMutexesInOrder` (`kernels_experimental.h`).
#[repr(C)]
pub struct TF_VariableInputLockHolder {
    _private: [u8; 0],
}
#[repr(C)]
pub struct TF_OpKernelConstruction {
    _private: [u8; 0],
}
/// `tf_tstring.h`'s view of a string TF owns.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TF_StringView {
    pub data: *const c_char,
    pub len: usize,
}

#[repr(C)]
pub struct TF_KernelBuilder {
    _private: [u8; 0],
}

/// `TF_AllocatorAttributes` of `tf_tensor.h`.
#[repr(C)]
pub struct TF_AllocatorAttributes {
    pub struct_size: usize,
    pub on_host: TF_Bool,
}
pub const TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE: usize =
    std::mem::offset_of!(TF_AllocatorAttributes, on_host) + std::mem::size_of::<TF_Bool>();

/// `TF_DataType` values from `tf_datatype.h`.
pub type TF_DataType = c_int;
pub type TF_Code = c_int;

use super::se::SP_Stream;

type CreateFn = unsafe extern "C" fn(*mut TF_OpKernelConstruction) -> *mut c_void;
type ComputeFn = unsafe extern "C" fn(*mut c_void, *mut TF_OpKernelContext);
type DeleteFn = unsafe extern "C" fn(*mut c_void);
/// `kernels_experimental.h`'s copy callback: copy `source` into `dest` (same device, same size).
pub type VariableCopyFn = unsafe extern "C" fn(*mut TF_OpKernelContext, *mut TF_Tensor, *mut TF_Tensor);

/// Declares the table of `TF_*` functions resolved at run time; each entry is `None` where TF lacks it.
macro_rules! tf_api {
    ($($name:ident : fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        #[allow(non_snake_case)]
        pub struct TfApi {
            $(pub $name: Option<unsafe extern "C" fn($($arg),*) $(-> $ret)?>,)*
        }
        impl TfApi {
            fn resolve() -> Self {
                Self {
                    $($name: {
                        let ptr = lookup(concat!(stringify!($name), "\0"));
                        // SAFETY: a non-null symbol of this name has the C signature in TF's headers,
                        // which the declaration above mirrors.
                        (!ptr.is_null()).then(|| unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(ptr)
                        })
                    },)*
                }
            }
        }
    };
}

tf_api! {
    TF_NewStatus: fn() -> *mut TF_Status;
    TF_DeleteStatus: fn(*mut TF_Status);
    TF_SetStatus: fn(*mut TF_Status, TF_Code, *const c_char);
    TF_GetCode: fn(*const TF_Status) -> TF_Code;
    TF_Message: fn(*const TF_Status) -> *const c_char;

    TF_NewKernelBuilder: fn(*const c_char, *const c_char, Option<CreateFn>, Option<ComputeFn>, Option<DeleteFn>) -> *mut TF_KernelBuilder;
    TF_KernelBuilder_TypeConstraint: fn(*mut TF_KernelBuilder, *const c_char, TF_DataType, *mut TF_Status);
    TF_KernelBuilder_HostMemory: fn(*mut TF_KernelBuilder, *const c_char);
    TF_RegisterKernelBuilder: fn(*const c_char, *mut TF_KernelBuilder, *mut TF_Status);
    TF_DeleteKernelBuilder: fn(*mut TF_KernelBuilder);
    TF_OpKernelConstruction_GetAttrType: fn(*mut TF_OpKernelConstruction, *const c_char, *mut TF_DataType, *mut TF_Status);
    TF_OpKernelConstruction_Failure: fn(*mut TF_OpKernelConstruction, *mut TF_Status);
    TF_OpKernelConstruction_GetAttrInt64: fn(*mut TF_OpKernelConstruction, *const c_char, *mut i64, *mut TF_Status);
    TF_OpKernelConstruction_GetAttrFloat: fn(*mut TF_OpKernelConstruction, *const c_char, *mut f32, *mut TF_Status);
    TF_OpKernelConstruction_GetAttrBool: fn(*mut TF_OpKernelConstruction, *const c_char, *mut TF_Bool, *mut TF_Status);
    TF_OpKernelConstruction_GetAttrSize: fn(*mut TF_OpKernelConstruction, *const c_char, *mut i32, *mut i32, *mut TF_Status);
    TF_OpKernelConstruction_GetAttrInt64List: fn(*mut TF_OpKernelConstruction, *const c_char, *mut i64, c_int, *mut TF_Status);
    TF_OpKernelConstruction_GetAttrFloatList: fn(*mut TF_OpKernelConstruction, *const c_char, *mut f32, c_int, *mut TF_Status);
    TF_OpKernelConstruction_GetAttrStringList: fn(*mut TF_OpKernelConstruction, *const c_char, *mut *mut c_char, *mut usize, c_int, *mut c_void, usize, *mut TF_Status);
    TF_OpKernelConstruction_GetAttrString: fn(*mut TF_OpKernelConstruction, *const c_char, *mut c_char, usize, *mut TF_Status);
    TF_OpKernelConstruction_GetName: fn(*mut TF_OpKernelConstruction) -> TF_StringView;

    TF_GetStream: fn(*mut TF_OpKernelContext, *mut TF_Status) -> SP_Stream;
    TF_NumInputs: fn(*mut TF_OpKernelContext) -> c_int;
    TF_NumOutputs: fn(*mut TF_OpKernelContext) -> c_int;
    TF_ExpectedOutputDataType: fn(*mut TF_OpKernelContext, c_int) -> TF_DataType;
    TF_IsHostMemoryOutput: fn(*mut TF_OpKernelContext, c_int, *mut TF_Status) -> TF_Bool;
    TF_GetInput: fn(*mut TF_OpKernelContext, c_int, *mut *mut TF_Tensor, *mut TF_Status);
    TF_AllocateOutput: fn(*mut TF_OpKernelContext, c_int, TF_DataType, *const i64, c_int, usize, *mut TF_Status) -> *mut TF_Tensor;
    TF_ForwardInputOrAllocateOutput: fn(*mut TF_OpKernelContext, *const c_int, c_int, c_int, *const i64, c_int, *mut c_int, *mut TF_Status) -> *mut TF_Tensor;
    TF_OpKernelContext_Failure: fn(*mut TF_OpKernelContext, *mut TF_Status);
    TF_AllocateTemp: fn(*mut TF_OpKernelContext, TF_DataType, *const i64, c_int, *mut TF_AllocatorAttributes, *mut TF_Status) -> *mut TF_Tensor;

    // kernels_experimental.h: exported by TF 2.16, not by 2.19 and later (optional).
    TF_MaybeLockVariableInputMutexesInOrder: fn(*mut TF_OpKernelContext, bool, bool, *const c_int, usize, Option<VariableCopyFn>, *mut *mut TF_VariableInputLockHolder, *mut TF_Status);
    TF_GetInputTensorFromVariable: fn(*mut TF_OpKernelContext, c_int, bool, bool, bool, Option<VariableCopyFn>, *mut *mut TF_Tensor, *mut TF_Status);
    TF_ReleaseVariableInputLockHolder: fn(*mut TF_VariableInputLockHolder);

    TF_DeleteTensor: fn(*mut TF_Tensor);
    TF_TensorType: fn(*const TF_Tensor) -> TF_DataType;
    TF_NumDims: fn(*const TF_Tensor) -> c_int;
    TF_Dim: fn(*const TF_Tensor, c_int) -> i64;
    TF_TensorByteSize: fn(*const TF_Tensor) -> usize;
    TF_TensorData: fn(*const TF_Tensor) -> *mut c_void;
}

fn lookup(name_nul: &str) -> *mut c_void {
    super::loader::tf_symbol(name_nul)
}

/// The resolved `TF_*` functions of this process (resolved once).
pub fn api() -> &'static TfApi {
    static API: OnceLock<TfApi> = OnceLock::new();
    API.get_or_init(TfApi::resolve)
}

impl TfApi {
    /// Whether this TF lets kernels reach resource variables' tensors (`kernels_experimental.h`).
    pub fn has_variable_access(&self) -> bool {
        self.TF_MaybeLockVariableInputMutexesInOrder.is_some()
            && self.TF_GetInputTensorFromVariable.is_some()
            && self.TF_ReleaseVariableInputLockHolder.is_some()
    }

    /// Whether every function the kernel registration path needs is present.
    pub fn missing_kernel_symbols(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        macro_rules! need {
            ($($f:ident),*) => { $( if self.$f.is_none() { missing.push(stringify!($f)); } )* };
        }
        need!(
            TF_NewKernelBuilder,
            TF_KernelBuilder_TypeConstraint,
            TF_KernelBuilder_HostMemory,
            TF_RegisterKernelBuilder,
            TF_OpKernelConstruction_GetAttrType,
            TF_OpKernelConstruction_Failure,
            TF_OpKernelConstruction_GetAttrInt64,
            TF_OpKernelConstruction_GetAttrFloat,
            TF_OpKernelConstruction_GetAttrBool,
            TF_OpKernelConstruction_GetAttrSize,
            TF_OpKernelConstruction_GetAttrString,
            TF_OpKernelConstruction_GetAttrInt64List,
            TF_GetStream,
            TF_NumOutputs,
            TF_NumInputs,
            TF_GetInput,
            TF_AllocateOutput,
            TF_ForwardInputOrAllocateOutput,
            TF_OpKernelContext_Failure,
            TF_DeleteTensor,
            TF_TensorType,
            TF_NumDims,
            TF_Dim,
            TF_TensorByteSize,
            TF_TensorData
        );
        missing
    }
}

// ---------------------------------------------------------------------------------------------------
// TF_Status: TensorFlow's functions when present, else the built-in stand-in.

struct FallbackStatus {
    code: TF_Code,
    message: CString,
}

unsafe extern "C" fn fallback_new_status() -> *mut TF_Status {
    Box::into_raw(Box::new(FallbackStatus { code: 0, message: CString::default() })) as *mut TF_Status
}
unsafe extern "C" fn fallback_delete_status(s: *mut TF_Status) {
    if !s.is_null() {
        // SAFETY: stand-in statuses are only ever created by `fallback_new_status`.
        drop(unsafe { Box::from_raw(s as *mut FallbackStatus) });
    }
}
unsafe extern "C" fn fallback_set_status(s: *mut TF_Status, code: TF_Code, msg: *const c_char) {
    // SAFETY: `s` came from `fallback_new_status`; `msg` is a C string or null.
    let status = unsafe { &mut *(s as *mut FallbackStatus) };
    status.code = code;
    status.message = if msg.is_null() { CString::default() } else { unsafe { CStr::from_ptr(msg) }.to_owned() };
}
unsafe extern "C" fn fallback_get_code(s: *const TF_Status) -> TF_Code {
    // SAFETY: `s` came from `fallback_new_status`.
    unsafe { (*(s as *const FallbackStatus)).code }
}
unsafe extern "C" fn fallback_message(s: *const TF_Status) -> *const c_char {
    // SAFETY: `s` came from `fallback_new_status`; the message lives as long as the status.
    unsafe { (*(s as *const FallbackStatus)).message.as_ptr() }
}

struct StatusFns {
    new: unsafe extern "C" fn() -> *mut TF_Status,
    delete: unsafe extern "C" fn(*mut TF_Status),
    set: unsafe extern "C" fn(*mut TF_Status, TF_Code, *const c_char),
    get_code: unsafe extern "C" fn(*const TF_Status) -> TF_Code,
    message: unsafe extern "C" fn(*const TF_Status) -> *const c_char,
}

fn status_fns() -> &'static StatusFns {
    static FNS: OnceLock<StatusFns> = OnceLock::new();
    FNS.get_or_init(|| {
        let a = api();
        match (a.TF_NewStatus, a.TF_DeleteStatus, a.TF_SetStatus, a.TF_GetCode, a.TF_Message) {
            (Some(new), Some(delete), Some(set), Some(get_code), Some(message)) => {
                StatusFns { new, delete, set, get_code, message }
            }
            _ => StatusFns {
                new: fallback_new_status,
                delete: fallback_delete_status,
                set: fallback_set_status,
                get_code: fallback_get_code,
                message: fallback_message,
            },
        }
    })
}

/// Whether the loaded TensorFlow is a CUDA build, as `tf.sysconfig.get_build_info()` tells Python
/// (read from the package's `python/platform/build_info.py`). None where that cannot be found.
pub fn is_cuda_build() -> Option<bool> {
    let dir = super::loader::tf_library_dir()?;
    let info = dir
        .ancestors()
        .take(3)
        .map(|d| d.join("python/platform/build_info.py"))
        .find_map(|p| std::fs::read_to_string(p).ok())?;
    parse_is_cuda_build(&info)
}

/// `build_info.py`'s `is_cuda_build` value (`('is_cuda_build', True)` in an OrderedDict).
fn parse_is_cuda_build(text: &str) -> Option<bool> {
    let after = &text[text.find("is_cuda_build")? + "is_cuda_build".len()..];
    let value = after.trim_start_matches(|c: char| c == '\'' || c == '"' || c == ',' || c == ':' || c.is_whitespace());
    if value.starts_with("True") {
        Some(true)
    } else if value.starts_with("False") {
        Some(false)
    } else {
        None
    }
}

/// Whether the statuses handled here are TensorFlow's own (false in TF-free Rust tests).
pub fn tensorflow_present() -> bool {
    api().TF_NewStatus.is_some()
}

/// An owned `TF_Status`, deleted on drop.
pub struct OwnedStatus(*mut TF_Status);

impl OwnedStatus {
    pub fn new() -> Self {
        // SAFETY: the constructor takes no arguments and returns a fresh status.
        Self(unsafe { (status_fns().new)() })
    }
    pub fn as_ptr(&self) -> *mut TF_Status {
        self.0
    }
    pub fn result(&self) -> Result<(), Error> {
        // SAFETY: we own this live status.
        unsafe { status_result(self.0) }
    }
}

impl Default for OwnedStatus {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for OwnedStatus {
    fn drop(&mut self) {
        // SAFETY: we own the status and delete it once.
        unsafe { (status_fns().delete)(self.0) }
    }
}

/// Writes `result` into a caller-owned status (`TF_OK` on success). A null status is ignored.
///
/// # Safety
/// `status` must be null or a live `TF_Status` of this process.
pub unsafe fn set_status(status: *mut TF_Status, result: &Result<(), Error>) {
    if status.is_null() {
        return;
    }
    let (code, message) = match result {
        Ok(()) => (Code::Ok as TF_Code, CString::default()),
        Err(e) => (e.code as TF_Code, CString::new(e.message.replace('\0', " ")).unwrap_or_default()),
    };
    // SAFETY: `status` is a live TF_Status handed to us by the caller.
    unsafe { (status_fns().set)(status, code, message.as_ptr()) }
}

/// Reads a status back into a `Result`.
///
/// # Safety
/// `status` must be null or a live `TF_Status` of this process.
pub unsafe fn status_result(status: *const TF_Status) -> Result<(), Error> {
    if status.is_null() {
        return Ok(());
    }
    // SAFETY: `status` is a live TF_Status; its message is a NUL-terminated string.
    let (code, message) = unsafe {
        let fns = status_fns();
        let code = (fns.get_code)(status);
        let msg = (fns.message)(status);
        let message = if msg.is_null() { String::new() } else { CStr::from_ptr(msg).to_string_lossy().into_owned() };
        (code, message)
    };
    if code == 0 {
        return Ok(());
    }
    let code = match code {
        1 => Code::Cancelled,
        3 => Code::InvalidArgument,
        5 => Code::NotFound,
        8 => Code::ResourceExhausted,
        9 => Code::FailedPrecondition,
        11 => Code::OutOfRange,
        12 => Code::Unimplemented,
        13 => Code::Internal,
        14 => Code::Unavailable,
        _ => Code::Unknown,
    };
    Err(Error::new(code, message))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_is_cuda_build_from_build_info() {
        let cpu = "build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False)])";
        let cuda = "build_info = collections.OrderedDict([('is_cuda_build', True), ('cuda_version', '12')])";
        assert_eq!(super::parse_is_cuda_build(cpu), Some(false));
        assert_eq!(super::parse_is_cuda_build(cuda), Some(true));
        assert_eq!(super::parse_is_cuda_build("{\"is_cuda_build\": True}"), Some(true));
        assert_eq!(super::parse_is_cuda_build("nothing here"), None);
    }
}
