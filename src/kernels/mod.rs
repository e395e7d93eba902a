//! WGSL kernels and the registration table. A kernel reads its inputs through `KernelContext`
//! (implemented over TF's `TF_OpKernelContext` by `registration`, and by plain Rust in tests), so no
//! kernel touches an FFI struct. Adding an op is a table line plus a WGSL function.

pub mod binary;
pub mod cast;
pub mod registration;

use crate::error::{Error, Result};
use crate::runtime::Stream;

/// Element types the kernels know, with TF's `TF_DataType` codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    I32,
    U32,
}

impl DType {
    pub const fn tf_code(self) -> i32 {
        match self {
            DType::F32 => 1,
            DType::I32 => 3,
            DType::U32 => 22,
        }
    }

    pub fn from_tf_code(code: i32) -> Option<DType> {
        [DType::F32, DType::I32, DType::U32]
            .into_iter()
            .find(|d| d.tf_code() == code)
    }

    /// The WGSL scalar type used for this dtype.
    pub const fn wgsl(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::U32 => "u32",
        }
    }

    pub const fn size(self) -> u64 {
        4
    }

    /// TF's name for the dtype, as `tf.as_dtype(...).name` prints it.
    pub const fn tf_name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::I32 => "int32",
            DType::U32 => "uint32",
        }
    }
}

/// A tensor as a kernel sees it: a device address, a dtype and a shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorRef {
    pub address: u64,
    pub dtype: DType,
    pub shape: Vec<i64>,
}

impl TensorRef {
    pub fn num_elements(&self) -> u64 {
        self.shape.iter().map(|&d| d.max(0) as u64).product()
    }

    pub fn byte_len(&self) -> u64 {
        self.num_elements() * self.dtype.size()
    }
}

/// What a kernel may ask of TensorFlow while it runs.
pub trait KernelContext {
    fn num_inputs(&self) -> usize;
    fn input(&mut self, index: usize) -> Result<TensorRef>;
    fn allocate_output(&mut self, index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef>;
    /// Reuses one of `candidates` for output `index` when TF allows it (same shape, sole owner).
    fn forward_input_or_allocate_output(
        &mut self,
        candidates: &[usize],
        index: usize,
        dtype: DType,
        shape: &[i64],
    ) -> Result<TensorRef>;
    fn stream(&mut self) -> Result<&Stream>;
}

pub type ComputeFn = fn(&mut dyn KernelContext, &KernelDef) -> Result<()>;

/// One row of the registration table: an op on the WGPU device for one set of type attributes.
pub struct KernelDef {
    pub op: &'static str,
    /// Type-attribute constraints, e.g. `[("T", DType::F32)]`.
    pub constraints: &'static [(&'static str, DType)],
    /// Arguments TF keeps in host memory (shapes, axes).
    pub host_memory: &'static [&'static str],
    pub compute: ComputeFn,
}

impl KernelDef {
    /// The dtype bound to type attribute `attr`.
    pub fn dtype(&self, attr: &str) -> Result<DType> {
        self.constraints
            .iter()
            .find(|(name, _)| *name == attr)
            .map(|(_, d)| *d)
            .ok_or_else(|| {
                Error::internal(format!(
                    "{}: no type attribute {attr} in the kernel table",
                    self.op
                ))
            })
    }
}

const F32: &[(&str, DType)] = &[("T", DType::F32)];

/// Every kernel this plugin registers.
pub static KERNELS: &[KernelDef] = &[
    KernelDef {
        op: "AddV2",
        constraints: F32,
        host_memory: &[],
        compute: binary::add,
    },
    KernelDef {
        op: "Mul",
        constraints: F32,
        host_memory: &[],
        compute: binary::mul,
    },
    KernelDef {
        op: "Cast",
        constraints: &[("SrcT", DType::F32), ("DstT", DType::I32)],
        host_memory: &[],
        compute: cast::cast,
    },
    KernelDef {
        op: "Cast",
        constraints: &[("SrcT", DType::I32), ("DstT", DType::F32)],
        host_memory: &[],
        compute: cast::cast,
    },
];

/// The registered (op × dtype) matrix, one line per kernel, as the README shows it.
pub fn op_table() -> String {
    let mut rows: Vec<String> = KERNELS
        .iter()
        .map(|k| {
            let types: Vec<String> = k
                .constraints
                .iter()
                .map(|(a, d)| format!("{a}={}", d.tf_name()))
                .collect();
            format!("{:<12} {}", k.op, types.join(", "))
        })
        .collect();
    rows.sort();
    rows.join("\n")
}

/// Element count as the u32 the shaders index with.
pub(crate) fn shader_len(n: u64, op: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        Error::unimplemented(format!(
            "{op}: tensors of {n} elements are too large for one kernel"
        ))
    })
}
