//! WGSL kernels and the registration table. A kernel reads its inputs through `KernelContext`
//! (implemented over TF's `TF_OpKernelContext` by `registration`, and by plain Rust in tests), so no
//! kernel touches an FFI struct. Adding an op is a table line plus a WGSL function.

/// The `KernelContext` methods an adapter context (`layout`, `batch`, `half`) passes straight to
/// the context it wraps, `self.inner`; `variables` adds the resource-variable ones, and
/// `all_but_host_output` leaves out `write_host_output` (`rnn`'s batch ranges write it once), and
/// `no_forwarding` allocates every output.
macro_rules! pass_through_to_inner {
    () => {
        pass_through_to_inner!(all_but_host_output);

        fn write_host_output(&mut self, index: usize, dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<()> {
            self.inner.write_host_output(index, dtype, shape, bytes)
        }
    };
    (all_but_host_output) => {
        fn num_inputs(&self) -> usize {
            self.inner.num_inputs()
        }

        fn num_outputs(&self) -> usize {
            self.inner.num_outputs()
        }

        fn expected_output_dtype(&self, index: usize) -> Result<DType> {
            self.inner.expected_output_dtype(index)
        }

        fn host_input_floats(&mut self, index: usize) -> Result<Vec<f64>> {
            self.inner.host_input_floats(index)
        }

        fn allocate_temp(&mut self, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
            self.inner.allocate_temp(dtype, shape)
        }

        fn stream(&mut self) -> Result<&Stream> {
            self.inner.stream()
        }
    };
    (no_forwarding) => {
        // The inputs this context hands out are its own temporaries or slices, so there is
        // nothing of TF's to forward: every output is allocated.
        fn forward_input_or_allocate_output(
            &mut self,
            _candidates: &[usize],
            index: usize,
            dtype: DType,
            shape: &[i64],
        ) -> Result<TensorRef> {
            self.allocate_output(index, dtype, shape)
        }
    };
    (batch_start) => {
        fn batch_start(&self) -> i64 {
            self.inner.batch_start()
        }
    };
    (variables) => {
        pass_through_to_inner!();

        fn variables_accessible(&self) -> bool {
            self.inner.variables_accessible()
        }

        fn with_variables(&mut self, resources: &[usize], f: &mut VariableWork) -> Result<()> {
            self.inner.with_variables(resources, f)
        }
    };
}

pub mod batch;
pub mod batch_norm;
pub mod binary;
pub mod cast;
pub mod channel_blocks;
pub mod column_tiles;
pub mod compact;
pub mod complex;
pub mod conv;
pub mod einsum;
pub mod fused;
pub mod generic_conv;
pub mod half;
pub mod im2col;
pub mod index;
pub mod integer;
pub mod layout;
pub mod matmul;
pub mod matmul_gpu;
pub mod matmul_skinny;
pub mod matrix;
pub mod nn;
pub mod random;
pub mod reduce;
pub mod registration;
pub mod resize;
pub mod rnn;
pub mod scan;
pub mod scatter;
pub mod slice;
pub mod sort;
pub mod special;
pub mod unary;
pub mod unique;
pub mod validate;
pub mod variables;
pub mod volume;
pub mod windows;

use crate::error::{Error, Result};
use crate::runtime::Stream;

/// Element types the kernels know, with TF's `TF_DataType` codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F16,
    BF16,
    F32,
    F64,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    Bool,
    C64,
    C128,
}

impl DType {
    pub const ALL: [DType; 15] = [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::Bool,
        DType::C64,
        DType::C128,
    ];

    pub const fn tf_code(self) -> i32 {
        match self {
            DType::F32 => 1,
            DType::F64 => 2,
            DType::I32 => 3,
            DType::U8 => 4,
            DType::I16 => 5,
            DType::I8 => 6,
            DType::C64 => 8,
            DType::I64 => 9,
            DType::Bool => 10,
            DType::BF16 => 14,
            DType::U16 => 17,
            DType::C128 => 18,
            DType::F16 => 19,
            DType::U32 => 22,
            DType::U64 => 23,
        }
    }

    pub fn from_tf_code(code: i32) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.tf_code() == code)
    }

    /// The WGSL scalar type for arithmetic on this dtype, where WGSL has one.
    pub const fn wgsl(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::U32 => "u32",
            _ => "unsupported",
        }
    }

    pub const fn size(self) -> u64 {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// TF's name for the dtype, as `tf.as_dtype(...).name` prints it.
    pub const fn tf_name(self) -> &'static str {
        match self {
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I16 => "int16",
            DType::U16 => "uint16",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::I64 => "int64",
            DType::U64 => "uint64",
            DType::Bool => "bool",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
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

/// Work done on the locked tensors of resource variables (`KernelContext::with_variables`).
pub type VariableWork<'a> = dyn FnMut(&mut dyn KernelContext, &[TensorRef]) -> Result<()> + 'a;

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
    fn num_outputs(&self) -> usize;
    /// The dtype the node declares for output `index`.
    fn expected_output_dtype(&self, index: usize) -> Result<DType>;
    /// The values of an int32/int64 input that TF keeps in host memory (shapes, axes, indices).
    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)>;
    /// Allocates host-memory output `index` (declared HostMemory) and fills it with `bytes`.
    fn write_host_output(&mut self, index: usize, dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<()>;
    /// The values of a float32/float64 input that TF keeps in host memory.
    fn host_input_floats(&mut self, index: usize) -> Result<Vec<f64>>;
    /// A device tensor that lives until the kernel returns (and its enqueued work is done with it).
    fn allocate_temp(&mut self, dtype: DType, shape: &[i64]) -> Result<TensorRef>;
    fn stream(&mut self) -> Result<&Stream>;
    /// The node's batch index at which this run's leading dimension starts: nonzero only for the
    /// later ranges of a batch run a range at a time (`batch::split_batch_on_overflow`), for
    /// kernels whose outputs count positions across the batch.
    fn batch_start(&self) -> i64 {
        0
    }
    /// Whether `with_variables` can reach variables on this TensorFlow (2.16 yes, 2.19+ no).
    fn variables_accessible(&self) -> bool {
        false
    }
    /// Runs `f` on the tensors of the resource variables at inputs `resources`, holding their locks,
    /// after TF's copy-on-write has made each tensor its variable's own (so `f` may update them in
    /// place).
    fn with_variables(&mut self, resources: &[usize], f: &mut VariableWork) -> Result<()> {
        let _ = (resources, f);
        Err(Error::unimplemented("this TensorFlow gives plugins no access to resource variables"))
    }
}

/// The kind of a node attribute a kernel reads at construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    Int,
    Float,
    Bool,
    Str,
    IntList,
    FloatList,
    StrList,
    /// A string attribute that older TensorFlows' ops lack (`Attrs::str` errors then).
    OptionalStr,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    IntList(Vec<i64>),
    FloatList(Vec<f32>),
    StrList(Vec<String>),
    Int(i64),
    Float(f32),
    Bool(bool),
    Str(String),
}

/// Attribute values read once, when TF constructs the kernel for a node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs {
    values: Vec<(&'static str, AttrValue)>,
}

impl Attrs {
    /// Sets attribute `name`, replacing any value it had.
    pub fn set(&mut self, name: &'static str, value: AttrValue) {
        match self.values.iter_mut().find(|(n, _)| *n == name) {
            Some((_, old)) => *old = value,
            None => self.values.push((name, value)),
        }
    }

    fn get(&self, name: &str) -> Result<&AttrValue> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| Error::internal(format!("attribute {name} was not read at construction")))
    }

    pub fn int(&self, name: &str) -> Result<i64> {
        match self.get(name)? {
            AttrValue::Int(v) => Ok(*v),
            other => Err(Error::internal(format!("attribute {name} is {other:?}, not an int"))),
        }
    }

    pub fn float(&self, name: &str) -> Result<f32> {
        match self.get(name)? {
            AttrValue::Float(v) => Ok(*v),
            other => Err(Error::internal(format!("attribute {name} is {other:?}, not a float"))),
        }
    }

    pub fn bool(&self, name: &str) -> Result<bool> {
        match self.get(name)? {
            AttrValue::Bool(v) => Ok(*v),
            other => Err(Error::internal(format!("attribute {name} is {other:?}, not a bool"))),
        }
    }

    pub fn ints(&self, name: &str) -> Result<Vec<i64>> {
        match self.get(name)? {
            AttrValue::IntList(v) => Ok(v.clone()),
            other => Err(Error::internal(format!("attribute {name} is {other:?}, not a list of ints"))),
        }
    }

    pub fn floats(&self, name: &str) -> Result<Vec<f32>> {
        match self.get(name)? {
            AttrValue::FloatList(v) => Ok(v.clone()),
            other => Err(Error::internal(format!("attribute {name} is {other:?}, not a list of floats"))),
        }
    }

    pub fn strs(&self, name: &str) -> Result<Vec<String>> {
        match self.get(name)? {
            AttrValue::StrList(v) => Ok(v.clone()),
            other => Err(Error::internal(format!("attribute {name} is {other:?}, not a list of strings"))),
        }
    }

    pub fn str(&self, name: &str) -> Result<&str> {
        match self.get(name)? {
            AttrValue::Str(v) => Ok(v),
            other => Err(Error::internal(format!("attribute {name} is {other:?}, not a string"))),
        }
    }
}

/// A kernel for one node: its table row, the node's attributes and what it keeps between runs.
pub struct KernelInstance {
    pub def: &'static KernelDef,
    pub attrs: Attrs,
    /// The stateful random ops' Philox stream, which advances with every run of the node.
    pub philox: std::sync::Mutex<Option<random::PhiloxStream>>,
}

impl KernelInstance {
    pub fn new(def: &'static KernelDef, attrs: Attrs) -> Self {
        KernelInstance { def, attrs, philox: std::sync::Mutex::new(None) }
    }

    pub fn dtype(&self, attr: &str) -> Result<DType> {
        self.def.dtype(attr)
    }
}

pub type ComputeFn = fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>;

/// One row of the registration table: an op on the WGPU device for one set of type attributes.
#[derive(Clone)]
pub struct KernelDef {
    pub op: &'static str,
    /// Type-attribute constraints, e.g. `[("T", DType::F32)]`.
    pub constraints: &'static [(&'static str, DType)],
    /// Arguments TF keeps in host memory (shapes, axes).
    pub host_memory: &'static [&'static str],
    /// Node attributes read at construction.
    pub attrs: &'static [(&'static str, AttrKind)],
    pub compute: ComputeFn,
}

impl KernelDef {
    /// The dtype bound to type attribute `attr`.
    pub fn dtype(&self, attr: &str) -> Result<DType> {
        self.constraints
            .iter()
            .find(|(name, _)| *name == attr)
            .map(|(_, d)| *d)
            .ok_or_else(|| Error::internal(format!("{}: no type attribute {attr} in the kernel table", self.op)))
    }
}

/// `[("T", dtype)]` as a static slice, for the table's type constraints.
pub const fn t_of(dtype: DType) -> &'static [(&'static str, DType)] {
    match dtype {
        DType::F16 => &[("T", DType::F16)],
        DType::BF16 => &[("T", DType::BF16)],
        DType::F32 => &[("T", DType::F32)],
        DType::F64 => &[("T", DType::F64)],
        DType::I8 => &[("T", DType::I8)],
        DType::U8 => &[("T", DType::U8)],
        DType::I16 => &[("T", DType::I16)],
        DType::U16 => &[("T", DType::U16)],
        DType::I32 => &[("T", DType::I32)],
        DType::U32 => &[("T", DType::U32)],
        DType::I64 => &[("T", DType::I64)],
        DType::U64 => &[("T", DType::U64)],
        DType::Bool => &[("T", DType::Bool)],
        DType::C64 => &[("T", DType::C64)],
        DType::C128 => &[("T", DType::C128)],
    }
}

/// Every dtype TF places on the device for data-movement ops. int32 is left out, as in TF-GPU: TF
/// core's DEVICE_DEFAULT kernels keep int32 tensors in host memory.
pub const MOVABLE_DTYPES: [DType; 14] = [
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::U32,
    DType::I64,
    DType::U64,
    DType::Bool,
    DType::C64,
    DType::C128,
];

const STRIDED_SLICE_ATTRS: &[(&str, AttrKind)] = &[
    ("begin_mask", AttrKind::Int),
    ("end_mask", AttrKind::Int),
    ("ellipsis_mask", AttrKind::Int),
    ("new_axis_mask", AttrKind::Int),
    ("shrink_axis_mask", AttrKind::Int),
];
const SPLIT_ATTRS: &[(&str, AttrKind)] = &[("num_split", AttrKind::Int)];
const SPACE_DEPTH_ATTRS: &[(&str, AttrKind)] = &[("block_size", AttrKind::Int), ("data_format", AttrKind::Str)];

fn kernel(
    op: &'static str,
    constraints: &'static [(&'static str, DType)],
    host_memory: &'static [&'static str],
    attrs: &'static [(&'static str, AttrKind)],
    compute: ComputeFn,
) -> KernelDef {
    KernelDef { op, constraints, host_memory, attrs, compute }
}

/// A constraint list built at table construction; the table lives for the whole process.
fn leak(constraints: Vec<(&'static str, DType)>) -> &'static [(&'static str, DType)] {
    Box::leak(constraints.into_boxed_slice())
}

/// LeakyRelu's and LeakyReluGrad's `alpha`; no attributes for the other elementwise ops.
fn alpha_attr(op: &str) -> &'static [(&'static str, AttrKind)] {
    if op == "LeakyRelu" || op == "LeakyReluGrad" {
        &[("alpha", AttrKind::Float)]
    } else {
        &[]
    }
}

/// BiasAdd, AddN, ClipByValue, MatMul and BatchMatMulV2 for the float type constraint `t`.
fn push_float_linear_algebra(table: &mut Vec<KernelDef>, t: &'static [(&'static str, DType)]) {
    table.push(kernel("BiasAdd", t, &[], &[("data_format", AttrKind::Str)], binary::bias_add));
    table.push(kernel("BiasAddV1", t, &[], &[], binary::bias_add));
    table.push(kernel("AddN", t, &[], &[], binary::add_n));
    table.push(kernel("ClipByValue", t, &[], &[], binary::clip_by_value));
    table.push(kernel(
        "MatMul",
        t,
        &[],
        &[("transpose_a", AttrKind::Bool), ("transpose_b", AttrKind::Bool)],
        matmul::compute,
    ));
    table.push(kernel(
        "BatchMatMulV2",
        t,
        &[],
        &[("adj_x", AttrKind::Bool), ("adj_y", AttrKind::Bool)],
        matmul::compute,
    ));
}

/// The float random fills, by the name their ops share (`Stateless{name}`, `Stateless{name}V2` and
/// the stateful op, RandomStandardNormal for RandomNormal).
const RANDOM_FLOAT_FILLS: [(&str, ComputeFn); 3] = [
    ("RandomUniform", random::uniform),
    ("RandomNormal", random::normal),
    ("TruncatedNormal", random::truncated_normal),
];

/// The dtypes of a float random fill: float16 and bfloat16 (TF's own distributions of them), and
/// float64 (the uniform one from integer words anywhere; the normal ones need float64 logarithms
/// and sines: SHADER_F64).
fn random_float_types(op: &str, with_f16: bool, with_f64: bool) -> Vec<DType> {
    // (float16's rounding from float32 needs SHADER_F16; bfloat16's uses integer words.)
    let mut types = vec![DType::F32, DType::BF16];
    if with_f16 {
        types.push(DType::F16);
    }
    if op == "RandomUniform" || with_f64 {
        types.push(DType::F64);
    }
    types
}

fn build_table() -> Vec<KernelDef> {
    // float16 arithmetic kernels need SHADER_F16 on every adapter TF may place them on.
    let with_f16 = crate::runtime::instance::all_adapters_support(wgpu::Features::SHADER_F16);
    let floats: &[DType] = if with_f16 { &[DType::F32, DType::F16] } else { &[DType::F32] };
    let f32 = t_of(DType::F32);
    let mut table = Vec::new();
    // Elementwise math, computed in f32 whatever the storage type.
    for &dtype in floats {
        let t = t_of(dtype);
        for (op, _) in binary::BINARY_OPS {
            if dtype == DType::F16 && binary::FLOAT32_ONLY_OPS.contains(&op) {
                continue;
            }
            table.push(kernel(op, t, &[], &[], binary::compute));
        }
        for (op, _) in binary::COMPARE_OPS {
            table.push(kernel(op, t, &[], integer::compare_attrs(op), binary::compare));
        }
        for (op, _) in unary::UnaryOp::ALL {
            // TF-CPU has no float16 Rint: keep the device's set the same as the reference's.
            if dtype == DType::F16 && op == "Rint" {
                continue;
            }
            table.push(kernel(op, t, &[], alpha_attr(op), unary::compute));
        }
        for (op, _) in binary::GRAD_OPS {
            table.push(kernel(op, t, &[], alpha_attr(op), binary::grad));
        }
        push_float_linear_algebra(&mut table, t);
    }
    // float64 where every adapter computes in f64 (Vulkan with SHADER_F64: `offered_features`):
    // the ops whose f64 math `binary_f64.wgsl`, `math_f64.wgsl` and `reduce_f64.wgsl` have.
    let with_f64 = crate::runtime::instance::all_adapters_support(wgpu::Features::SHADER_F64);
    // float32, and float64 where the adapter computes in f64.
    let float_types: &[DType] = if with_f64 { &[DType::F32, DType::F64] } else { &[DType::F32] };
    // (No float16: TF-CPU has no float16 ApproximateEqual.)
    for &dtype in float_types {
        let tolerance: &[(&str, AttrKind)] = &[("tolerance", AttrKind::Float)];
        table.push(kernel("ApproximateEqual", t_of(dtype), &[], tolerance, binary::approximate_equal));
    }
    if with_f64 {
        let t = t_of(DType::F64);
        for op in binary::FLOAT64_OPS {
            table.push(kernel(op, t, &[], &[], binary::compute));
        }
        for (op, _) in binary::COMPARE_OPS {
            table.push(kernel(op, t, &[], integer::compare_attrs(op), binary::compare));
        }
        for op in unary::FLOAT64_OPS {
            table.push(kernel(op, t, &[], alpha_attr(op), unary::compute));
        }
        for (op, _) in binary::GRAD_OPS {
            table.push(kernel(op, t, &[], alpha_attr(op), binary::grad));
        }
        push_float_linear_algebra(&mut table, t);
        for (op, _) in reduce::FLOAT_REDUCTIONS {
            table.push(kernel(op, t, &["reduction_indices"], &[("keep_dims", AttrKind::Bool)], reduce::compute));
        }
        table.push(kernel("BiasAddGrad", t, &[], &[("data_format", AttrKind::Str)], reduce::bias_add_grad));
        table.push(kernel("L2Loss", t, &[], &[], reduce::l2_loss));
    }
    integer::register(&mut table);
    complex::register(&mut table, with_f64);
    compact::register(&mut table);
    unique::register(&mut table);
    special::register(&mut table, float_types);
    // Classified from the bits (float16 and bfloat16 through float32, HALF_VIA_F32 and its bfloat16
    // twin list).
    for &dtype in float_types {
        for op in ["IsNan", "IsInf", "IsFinite"] {
            table.push(kernel(op, t_of(dtype), &[], &[], unary::classify));
        }
    }
    for op in ["LogicalAnd", "LogicalOr", "LogicalNot"] {
        table.push(kernel(op, &[], &[], &[], binary::logical));
    }
    for dtype in MOVABLE_DTYPES.into_iter().chain([DType::I32]) {
        for op in ["Select", "SelectV2"] {
            table.push(kernel(op, t_of(dtype), &[], &[], binary::select));
        }
    }
    let mut cast_types = vec![DType::F32, DType::BF16, DType::Bool, DType::I32];
    cast_types.extend([DType::I8, DType::U8, DType::I16, DType::U16, DType::U32, DType::I64, DType::U64]);
    if with_f16 {
        cast_types.push(DType::F16);
    }
    cast_types.push(DType::C64);
    if with_f64 {
        cast_types.extend([DType::F64, DType::C128]);
    }
    for &src in &cast_types {
        for &dst in &cast_types {
            // (bool -> int32 included: TF core has no kernel for it, and TF-GPU casts it on the
            // device; so are casts to the same type, which TF-GPU also serves.)
            if src == dst || cast::route(src, dst).is_some() {
                let truncate: &[(&str, AttrKind)] = &[("Truncate", AttrKind::Bool)];
                table.push(kernel("Cast", leak(vec![("SrcT", src), ("DstT", dst)]), &[], truncate, cast::cast));
            }
        }
    }
    for (op, _) in reduce::FLOAT_REDUCTIONS {
        table.push(kernel(op, f32, &["reduction_indices"], &[("keep_dims", AttrKind::Bool)], reduce::compute));
    }
    for op in ["All", "Any"] {
        table.push(kernel(op, &[], &["reduction_indices"], &[("keep_dims", AttrKind::Bool)], reduce::compute));
    }
    // Cross, EuclideanNorm, BatchMatMulV3 and Einsum of float64 run the float64 elementwise ops,
    // reductions and products.
    for &dtype in float_types {
        table.push(kernel("Cross", t_of(dtype), &[], &[], index::cross));
        for axes in [DType::I32, DType::I64] {
            table.push(kernel(
                "EuclideanNorm",
                leak(vec![("T", dtype), ("Tidx", axes)]),
                &["reduction_indices"],
                &[("keep_dims", AttrKind::Bool)],
                reduce::euclidean_norm,
            ));
        }
        table.push(kernel(
            "BatchMatMulV3",
            leak(vec![("Ta", dtype), ("Tb", dtype), ("Tout", dtype)]),
            &[],
            &[("adj_x", AttrKind::Bool), ("adj_y", AttrKind::Bool)],
            matmul::compute,
        ));
        table.push(kernel("Einsum", t_of(dtype), &[], &[("equation", AttrKind::Str)], einsum::compute));
    }
    let arg_types: &[DType] = if with_f64 { &[DType::F32, DType::F64] } else { &[DType::F32] };
    for op in ["ArgMax", "ArgMin"] {
        for &dtype in arg_types {
            for out in [DType::I64, DType::I32] {
                let constraints = leak(vec![("T", dtype), ("output_type", out)]);
                table.push(kernel(op, constraints, &["dimension"], &[], reduce::arg));
            }
        }
    }
    // Complex products (four real ones) and Sum and Mean (the parts reduced alike); complex128's
    // run float64 shaders.
    let adj: &[(&str, AttrKind)] = &[("adj_x", AttrKind::Bool), ("adj_y", AttrKind::Bool)];
    let complex_types: &[DType] = if with_f64 { &[DType::C64, DType::C128] } else { &[DType::C64] };
    for &complex in complex_types {
        let t = t_of(complex);
        let transposes: &[(&str, AttrKind)] = &[("transpose_a", AttrKind::Bool), ("transpose_b", AttrKind::Bool)];
        table.push(kernel("MatMul", t, &[], transposes, matmul::compute));
        table.push(kernel("BatchMatMulV2", t, &[], adj, matmul::compute));
        let v3 = leak(vec![("Ta", complex), ("Tb", complex), ("Tout", complex)]);
        table.push(kernel("BatchMatMulV3", v3, &[], adj, matmul::compute));
        for op in ["Sum", "Mean", "Prod"] {
            table.push(kernel(op, t, &["reduction_indices"], &[("keep_dims", AttrKind::Bool)], reduce::compute));
        }
    }
    const CONV_ATTRS: &[(&str, AttrKind)] = &[
        ("strides", AttrKind::IntList),
        ("dilations", AttrKind::IntList),
        ("padding", AttrKind::Str),
        ("explicit_paddings", AttrKind::IntList),
        ("data_format", AttrKind::Str),
    ];
    const POOL_ATTRS: &[(&str, AttrKind)] = &[
        ("ksize", AttrKind::IntList),
        ("strides", AttrKind::IntList),
        ("padding", AttrKind::Str),
        ("data_format", AttrKind::Str),
    ];
    table.push(kernel("Conv2D", f32, &[], CONV_ATTRS, conv::conv));
    table.push(kernel("DepthwiseConv2dNative", f32, &[], CONV_ATTRS, conv::conv));
    const MAX_POOL_ATTRS: &[(&str, AttrKind)] = &[
        ("ksize", AttrKind::IntList),
        ("strides", AttrKind::IntList),
        ("padding", AttrKind::Str),
        ("explicit_paddings", AttrKind::IntList),
        ("data_format", AttrKind::Str),
    ];
    table.push(kernel("Conv2DBackpropInput", f32, &["input_sizes"], CONV_ATTRS, conv::conv_grad));
    table.push(kernel("Conv2DBackpropFilter", f32, &["filter_sizes"], CONV_ATTRS, conv::conv_grad));
    table.push(kernel("Conv2DBackpropInputV2", f32, &[], CONV_ATTRS, conv::conv_grad));
    if with_f64 {
        // float64 convolutions compute in f64 on the implicit GEMM (`conv::on_gemm`), grouped too.
        let t = t_of(DType::F64);
        table.push(kernel("Conv2D", t, &[], CONV_ATTRS, conv::conv));
        table.push(kernel("Conv2DBackpropInput", t, &["input_sizes"], CONV_ATTRS, conv::conv_grad));
        table.push(kernel("Conv2DBackpropFilter", t, &["filter_sizes"], CONV_ATTRS, conv::conv_grad));
        table.push(kernel("Conv2DBackpropInputV2", t, &[], CONV_ATTRS, conv::conv_grad));
        // Depthwise ones on `conv.wgsl`'s direct kernels in f64 (`element_f64.wgsl`).
        table.push(kernel("DepthwiseConv2dNative", t, &[], CONV_ATTRS, conv::conv));
        table.push(kernel("DepthwiseConv2dNativeBackpropInput", t, &["input_sizes"], CONV_ATTRS, conv::conv_grad));
        table.push(kernel("DepthwiseConv2dNativeBackpropFilter", t, &["filter_sizes"], CONV_ATTRS, conv::conv_grad));
    }
    table.push(kernel("DepthwiseConv2dNativeBackpropInput", f32, &["input_sizes"], CONV_ATTRS, conv::conv_grad));
    table.push(kernel("DepthwiseConv2dNativeBackpropFilter", f32, &["filter_sizes"], CONV_ATTRS, conv::conv_grad));
    // ksize and strides as inputs (tf.nn.max_pool2d with tensors for them).
    const POOL_V2_ATTRS: &[(&str, AttrKind)] = &[("padding", AttrKind::Str), ("data_format", AttrKind::Str)];
    // TF's kernels (CPU and GPU) produce int64 indices only.
    const ARGMAX_ATTRS: &[(&str, AttrKind)] = &[
        ("ksize", AttrKind::IntList),
        ("strides", AttrKind::IntList),
        ("padding", AttrKind::Str),
        ("include_batch_in_index", AttrKind::Bool),
    ];
    // The 2-D pools and their gradients: float64 in f64 (`element_f64.wgsl`).
    for &dtype in float_types {
        let t = t_of(dtype);
        table.push(kernel("MaxPool", t, &[], MAX_POOL_ATTRS, conv::pool));
        table.push(kernel("AvgPool", t, &[], POOL_ATTRS, conv::pool));
        table.push(kernel("MaxPoolGrad", t, &[], MAX_POOL_ATTRS, conv::pool_grad));
        table.push(kernel("AvgPoolGrad", t, &["orig_input_shape"], POOL_ATTRS, conv::pool_grad));
        table.push(kernel("MaxPoolV2", t, &["ksize", "strides"], POOL_V2_ATTRS, conv::pool_v2));
        table.push(kernel("MaxPoolGradV2", t, &["ksize", "strides"], POOL_V2_ATTRS, conv::pool_v2));
        table.push(kernel("MaxPoolGradGrad", t, &[], POOL_ATTRS, conv::max_pool_grad_grad));
        table.push(kernel("MaxPoolGradGradV2", t, &["ksize", "strides"], POOL_V2_ATTRS, conv::pool_v2));
        let with_argmax = leak(vec![("Targmax", DType::I64), ("T", dtype)]);
        table.push(kernel("MaxPoolWithArgmax", with_argmax, &[], ARGMAX_ATTRS, conv::max_pool_with_argmax));
        table.push(kernel("MaxPoolGradWithArgmax", with_argmax, &[], ARGMAX_ATTRS, conv::max_pool_grad_with_argmax));
    }
    // 3-D convolutions and pools (NDHWC and NCDHW). (The first generation's gradients,
    // Conv3DBackpropInput and Conv3DBackpropFilter, were removed in GraphDef version 10: TF runs
    // them nowhere.)
    const CONV3D_ATTRS: &[(&str, AttrKind)] = &[
        ("strides", AttrKind::IntList),
        ("dilations", AttrKind::IntList),
        ("padding", AttrKind::Str),
        ("data_format", AttrKind::Str),
    ];
    // The generic Conv: any batch rank, 2 or 3 spatial dimensions, through Conv2D's and Conv3D's
    // kernels.
    const GENERIC_CONV_ATTRS: &[(&str, AttrKind)] = &[
        ("strides", AttrKind::IntList),
        ("dilations", AttrKind::IntList),
        ("padding", AttrKind::Str),
        ("explicit_paddings", AttrKind::IntList),
        ("data_format", AttrKind::Str),
        ("batch_dims", AttrKind::Int),
        ("groups", AttrKind::Int),
    ];
    // 3-D convolutions are column matrices times the filter: float64's columns in f64
    // (`volume_f64`), its products on the float64 matmul.
    for &dtype in float_types {
        let t = t_of(dtype);
        table.push(kernel("Conv3D", t, &[], CONV3D_ATTRS, volume::conv3d));
        table.push(kernel("Conv", t, &[], GENERIC_CONV_ATTRS, generic_conv::compute));
        for sizes in [DType::I32, DType::I64] {
            let constraints = leak(vec![("T", dtype), ("Tshape", sizes)]);
            table.push(kernel(
                "Conv3DBackpropInputV2",
                constraints,
                &["input_sizes"],
                CONV3D_ATTRS,
                volume::conv3d_grad_input,
            ));
        }
        table.push(kernel("Conv3DBackpropFilterV2", t, &["filter_sizes"], CONV3D_ATTRS, volume::conv3d_grad_filter));
    }
    // (float32 only: TF defines float64 AvgPool3D, its gradient and MaxPool3DGradGrad, but registers
    // no float64 kernel of them on any device.)
    for op in ["MaxPool3D", "AvgPool3D"] {
        table.push(kernel(op, f32, &[], POOL_ATTRS, volume::pool3d));
    }
    table.push(kernel(
        "MaxPool3DGrad",
        leak(vec![("T", DType::F32), ("TInput", DType::F32)]),
        &[],
        POOL_ATTRS,
        volume::pool3d_grad,
    ));
    table.push(kernel("AvgPool3DGrad", f32, &["orig_input_shape"], POOL_ATTRS, volume::pool3d_grad));
    table.push(kernel("MaxPool3DGradGrad", f32, &[], POOL_ATTRS, volume::pool3d_grad));
    // FusedBatchNorm's generations: V1 (float32, statistics typed T) and V2 (statistics typed U)
    // have no reserve_space_3, and only 4-D layouts in TF's op definitions.
    const BATCH_NORM_ATTRS: &[(&str, AttrKind)] = &[
        ("epsilon", AttrKind::Float),
        ("exponential_avg_factor", AttrKind::Float),
        ("data_format", AttrKind::Str),
        ("is_training", AttrKind::Bool),
    ];
    const BATCH_NORM_GRAD_ATTRS: &[(&str, AttrKind)] =
        &[("epsilon", AttrKind::Float), ("data_format", AttrKind::Str), ("is_training", AttrKind::Bool)];
    let with_statistics = leak(vec![("T", DType::F32), ("U", DType::F32)]);
    for op in ["FusedBatchNormV3", "FusedBatchNormV2"] {
        table.push(kernel(op, with_statistics, &[], BATCH_NORM_ATTRS, conv::fused_batch_norm));
    }
    table.push(kernel("FusedBatchNorm", f32, &[], BATCH_NORM_ATTRS, conv::fused_batch_norm));
    for op in ["FusedBatchNormGradV3", "FusedBatchNormGradV2"] {
        table.push(kernel(op, with_statistics, &[], BATCH_NORM_GRAD_ATTRS, batch_norm::grad));
    }
    table.push(kernel("FusedBatchNormGrad", f32, &[], BATCH_NORM_GRAD_ATTRS, batch_norm::grad));
    table.push(kernel(
        "_FusedConv2D",
        f32,
        &[],
        &[
            ("strides", AttrKind::IntList),
            ("dilations", AttrKind::IntList),
            ("padding", AttrKind::Str),
            ("explicit_paddings", AttrKind::IntList),
            ("data_format", AttrKind::Str),
            ("fused_ops", AttrKind::StrList),
            ("epsilon", AttrKind::Float),
            ("leakyrelu_alpha", AttrKind::Float),
            ("num_args", AttrKind::Int),
        ],
        fused::conv2d,
    ));
    table.push(kernel(
        "_FusedMatMul",
        f32,
        &[],
        &[
            ("transpose_a", AttrKind::Bool),
            ("transpose_b", AttrKind::Bool),
            ("fused_ops", AttrKind::StrList),
            ("leakyrelu_alpha", AttrKind::Float),
            ("num_args", AttrKind::Int),
        ],
        fused::matmul,
    ));
    // Image resizing: ResizeBilinear and ResizeBicubic read float images (float16 and float64 where the adapter
    // has them) into float32; nearest-neighbour moves TF-GPU's float types; the gradients sum in
    // float32 (float16 through HALF_VIA_F32).
    const RESIZE_ATTRS: &[(&str, AttrKind)] =
        &[("align_corners", AttrKind::Bool), ("half_pixel_centers", AttrKind::Bool)];
    let mut bilinear_images = vec![DType::F32];
    if with_f16 {
        bilinear_images.push(DType::F16);
    }
    if with_f64 {
        bilinear_images.push(DType::F64);
    }
    const SCALE_AND_TRANSLATE_ATTRS: &[(&str, AttrKind)] =
        &[("kernel_type", AttrKind::Str), ("antialias", AttrKind::Bool)];
    for dtype in bilinear_images {
        table.push(kernel("ResizeBilinear", t_of(dtype), &["size"], RESIZE_ATTRS, resize::bilinear));
        table.push(kernel("ResizeBicubic", t_of(dtype), &["size"], RESIZE_ATTRS, resize::bicubic));
        table.push(kernel(
            "ScaleAndTranslate",
            t_of(dtype),
            &["size", "scale", "translation"],
            SCALE_AND_TRANSLATE_ATTRS,
            resize::scale_and_translate,
        ));
    }
    // TF defines ScaleAndTranslateGrad for float32 only.
    table.push(kernel(
        "ScaleAndTranslateGrad",
        f32,
        &["scale", "translation"],
        SCALE_AND_TRANSLATE_ATTRS,
        resize::scale_and_translate_grad,
    ));
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        table.push(kernel("ResizeNearestNeighbor", t_of(dtype), &["size"], RESIZE_ATTRS, resize::nearest));
    }
    // The gradients take float32 `grads` and give T: float64 ones sum in f64 (`axis_sum`). TF
    // defines ResizeBicubicGrad for float32 and float64 only (no float16).
    for &dtype in float_types {
        let t = t_of(dtype);
        table.push(kernel("ResizeBilinearGrad", t, &[], RESIZE_ATTRS, resize::bilinear_grad));
        table.push(kernel("ResizeBicubicGrad", t, &[], RESIZE_ATTRS, resize::bicubic_grad));
    }
    // Both gradients sum in float32 (float16 through HALF_VIA_F32), or in float64 for doubles; any
    // int paddings type.
    for &dtype in float_types {
        let t = t_of(dtype);
        table.push(kernel("ResizeNearestNeighborGrad", t, &["size"], RESIZE_ATTRS, resize::nearest_grad));
        table.push(kernel("MirrorPadGrad", t, &["paddings"], &[("mode", AttrKind::Str)], index::mirror_pad_grad));
    }
    // Keras's LSTM and GRU on a GPU, and the tf.compat paths' earlier generations.
    const RNN_ATTRS: [(&str, AttrKind); 6] = [
        ("rnn_mode", AttrKind::Str),
        ("input_mode", AttrKind::Str),
        ("direction", AttrKind::Str),
        ("dropout", AttrKind::Float),
        ("seed", AttrKind::Int),
        ("seed2", AttrKind::Int),
    ];
    const RNN_V3: [(&str, AttrKind); 2] = [("num_proj", AttrKind::Int), ("time_major", AttrKind::Bool)];
    const TRAINING: [(&str, AttrKind); 1] = [("is_training", AttrKind::Bool)];
    for (op, host_memory, extra) in [
        ("CudnnRNN", &[][..], &TRAINING[..]),
        ("CudnnRNNV2", &["host_reserved"][..], &TRAINING[..]),
        ("CudnnRNNV3", &["sequence_lengths", "host_reserved"][..], &[TRAINING[0], RNN_V3[0], RNN_V3[1]][..]),
        ("CudnnRNNBackprop", &[][..], &[][..]),
        ("CudnnRNNBackpropV2", &["host_reserved"][..], &[][..]),
        ("CudnnRNNBackpropV3", &["sequence_lengths", "host_reserved"][..], &RNN_V3[..]),
    ] {
        let attrs: Vec<(&'static str, AttrKind)> = RNN_ATTRS.iter().chain(extra).copied().collect();
        let compute: ComputeFn = if op.contains("Backprop") { rnn::backward } else { rnn::forward };
        let attrs: &'static [(&'static str, AttrKind)] = Box::leak(attrs.into_boxed_slice());
        for &dtype in float_types {
            table.push(kernel(op, t_of(dtype), host_memory, attrs, compute));
        }
    }
    for op in ["Softmax", "LogSoftmax"] {
        table.push(kernel(op, f32, &[], &[], nn::softmax));
        if with_f64 {
            table.push(kernel(op, t_of(DType::F64), &[], &[], nn::softmax));
        }
    }
    // Cumulative sums and products (float16 and bfloat16 through float32).
    const SCAN_ATTRS: &[(&str, AttrKind)] = &[("exclusive", AttrKind::Bool), ("reverse", AttrKind::Bool)];
    let scan_f64 = with_f64.then_some(DType::F64);
    for op in ["Cumsum", "Cumprod", "CumulativeLogsumexp"] {
        let types: &[DType] = match op {
            "CumulativeLogsumexp" => &[DType::F32],
            _ => &[DType::F32, DType::I32, DType::I64, DType::U32, DType::U64],
        };
        for dtype in types.iter().copied().chain(scan_f64) {
            for axis in [DType::I32, DType::I64] {
                table.push(kernel(op, leak(vec![("T", dtype), ("Tidx", axis)]), &["axis"], SCAN_ATTRS, scan::compute));
            }
        }
    }
    for int in [DType::I32, DType::I64] {
        table.push(kernel(
            "StatelessRandomGetKeyCounter",
            leak(vec![("Tseed", int)]),
            &["seed", "key", "counter"],
            &[],
            random::get_key_counter,
        ));
        for (op, fill) in RANDOM_FLOAT_FILLS {
            for dtype in random_float_types(op, with_f16, with_f64) {
                let constraints = leak(vec![("dtype", dtype), ("Tshape", int)]);
                let name: &'static str = Box::leak(format!("Stateless{op}V2").into_boxed_str());
                table.push(kernel(name, constraints, &["shape", "key", "counter", "alg"], &[], fill));
            }
        }
    }
    // The stateless random ops' first generation (a seed) and the integer fills of both.
    for shape in [DType::I32, DType::I64] {
        for seed in [DType::I32, DType::I64] {
            for (op, fill) in RANDOM_FLOAT_FILLS {
                for dtype in random_float_types(op, with_f16, with_f64) {
                    let constraints = leak(vec![("dtype", dtype), ("T", shape), ("Tseed", seed)]);
                    let name: &'static str = Box::leak(format!("Stateless{op}").into_boxed_str());
                    table.push(kernel(name, constraints, &["shape", "seed"], &[], fill));
                }
            }
            for dtype in [DType::I32, DType::I64] {
                let constraints = leak(vec![("dtype", dtype), ("T", shape), ("Tseed", seed)]);
                let host = &["shape", "seed", "minval", "maxval"];
                table.push(kernel("StatelessRandomUniformInt", constraints, host, &[], random::uniform_int));
            }
            for dtype in [DType::I32, DType::I64, DType::U32, DType::U64] {
                let constraints = leak(vec![("dtype", dtype), ("T", shape), ("Tseed", seed)]);
                let host = &["shape", "seed"];
                table.push(kernel("StatelessRandomUniformFullInt", constraints, host, &[], random::uniform_full_int));
            }
        }
        for dtype in [DType::I32, DType::I64, DType::U32, DType::U64] {
            let constraints = leak(vec![("dtype", dtype), ("Tshape", shape)]);
            // (TF-CPU has no unsigned StatelessRandomUniformIntV2: the reference decides the set.)
            if matches!(dtype, DType::I32 | DType::I64) {
                let host = &["shape", "key", "counter", "alg", "minval", "maxval"];
                table.push(kernel("StatelessRandomUniformIntV2", constraints, host, &[], random::uniform_int));
            }
            let host = &["shape", "key", "counter", "alg"];
            table.push(kernel("StatelessRandomUniformFullIntV2", constraints, host, &[], random::uniform_full_int));
        }
        table.push(kernel(
            "StatelessRandomGetKeyCounterAlg",
            leak(vec![("Tseed", shape)]),
            &["seed", "key", "counter", "alg"],
            &[],
            random::get_key_counter_alg,
        ));
    }
    table.push(kernel("StatelessRandomGetAlg", &[], &["alg"], &[], random::get_alg));
    // The stateful random ops, each node with its own Philox stream.
    const SEED_ATTRS: &[(&str, AttrKind)] = &[("seed", AttrKind::Int), ("seed2", AttrKind::Int)];
    for shape in [DType::I32, DType::I64] {
        for (op, fill) in RANDOM_FLOAT_FILLS {
            for dtype in random_float_types(op, with_f16, with_f64) {
                let op = if op == "RandomNormal" { "RandomStandardNormal" } else { op };
                table.push(kernel(op, leak(vec![("dtype", dtype), ("T", shape)]), &["shape"], SEED_ATTRS, fill));
            }
        }
        for out in [DType::I32, DType::I64] {
            let constraints = leak(vec![("Tout", out), ("T", shape)]);
            let host = &["shape", "minval", "maxval"];
            table.push(kernel("RandomUniformInt", constraints, host, SEED_ATTRS, random::uniform_int));
        }
    }
    // Comparisons within rows. (TopKV2's k and index types, int32 in older TFs, are left
    // unconstrained: a constraint on an attribute an op lacks breaks registration there.)
    // (TF-GPU's TopKV2 serves float32, float64 and every integer type; int32 in device memory.)
    for dtype in sort::KEYED_TYPES {
        table.push(kernel("TopKV2", t_of(dtype), &["k"], &[], sort::top_k));
    }
    // (TopK, the first generation, is left out: TF 2.21's own CPU kernel of it constrains an
    // index_type attribute the op lacks, which fails its kernel lookup on every device.)
    for targets in [DType::I32, DType::I64] {
        table.push(kernel("InTopKV2", t_of(targets), &["k"], &[], sort::in_top_k));
        table.push(kernel("InTopK", t_of(targets), &[], &[("k", AttrKind::Int)], sort::in_top_k));
    }
    // The searches compare keys of the real types, as TopKV2 ranks them; float64 only compares bits,
    // so it needs no SHADER_F64.
    for dtype in sort::KEYED_TYPES {
        for out in [DType::I32, DType::I64] {
            for op in ["LowerBound", "UpperBound"] {
                table.push(kernel(op, leak(vec![("T", dtype), ("out_type", out)]), &[], &[], sort::search_sorted));
            }
        }
    }
    // TF-GPU's types (int32 in device memory, as its kernel takes it).
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        table.push(kernel("Bucketize", t_of(dtype), &[], &[("boundaries", AttrKind::FloatList)], sort::bucketize));
    }
    let mut xent_types = vec![DType::F32];
    if with_f64 {
        xent_types.push(DType::F64);
    }
    for dtype in xent_types {
        table.push(kernel("SoftmaxCrossEntropyWithLogits", t_of(dtype), &[], &[], nn::cross_entropy));
        for labels in [DType::I32, DType::I64] {
            let constraints = leak(vec![("T", dtype), ("Tlabels", labels)]);
            table.push(kernel("SparseSoftmaxCrossEntropyWithLogits", constraints, &[], &[], nn::cross_entropy));
        }
    }
    table.push(kernel("BiasAddGrad", f32, &[], &[("data_format", AttrKind::Str)], reduce::bias_add_grad));
    table.push(kernel("L2Loss", f32, &[], &[], reduce::l2_loss));
    // Bin counts of float32 and int32 weights (TF-GPU's types).
    for dtype in [DType::F32, DType::I32] {
        table.push(kernel("Bincount", t_of(dtype), &["size"], &[], scatter::bincount));
        for index in [DType::I32, DType::I64] {
            let constraints = leak(vec![("Tidx", index), ("T", dtype)]);
            let binary: &[(&str, AttrKind)] = &[("binary_output", AttrKind::Bool)];
            table.push(kernel("DenseBincount", constraints, &["size"], binary, scatter::bincount));
        }
    }
    let policy: &[(&str, AttrKind)] = &[("bad_indices_policy", AttrKind::OptionalStr)];
    // float64 scatters combine through chains of the updates, in f64 (SHADER_F64).
    let scatter_f64 = with_f64.then_some(DType::F64);
    for indices in [DType::I32, DType::I64] {
        for segments in [DType::I32, DType::I64] {
            // (int32 in device memory, as TF-GPU's kernels keep it.)
            for dtype in [DType::F32, DType::I32].into_iter().chain(scatter::ARITHMETIC_INTEGERS).chain(scatter_f64) {
                let constraints = leak(vec![("T", dtype), ("Tindices", indices), ("Tnumsegments", segments)]);
                for op in ["UnsortedSegmentSum", "UnsortedSegmentProd", "UnsortedSegmentMin", "UnsortedSegmentMax"] {
                    table.push(kernel(op, constraints, &["num_segments"], &[], scatter::unsorted_segment_reduce));
                }
            }
        }
        for dtype in [DType::F32].into_iter().chain(scatter_f64) {
            let constraints = leak(vec![("T", dtype), ("Tindices", indices)]);
            for op in ["SegmentSum", "SegmentProd", "SegmentMin", "SegmentMax", "SegmentMean"] {
                table.push(kernel(op, constraints, &[], &[], scatter::segment_reduce));
            }
        }
        // Sums and extremes of float32, float64 and the integers (TF-GPU runs int32 in host memory,
        // where the CPU kernel refuses bad indices).
        for dtype in [DType::F32].into_iter().chain(scatter::ARITHMETIC_INTEGERS).chain(scatter_f64) {
            let constraints = leak(vec![("T", dtype), ("Tindices", indices)]);
            table.push(kernel("ScatterNd", constraints, &["shape"], policy, scatter::scatter_nd));
            for op in [
                "TensorScatterAdd",
                "TensorScatterSub",
                "TensorScatterMin",
                "TensorScatterMax",
                "ScatterNdNonAliasingAdd",
            ] {
                table.push(kernel(op, constraints, &[], policy, scatter::tensor_scatter));
            }
        }
        // Moves of any dtype (1- and 2-byte elements gathered by the word, swapped in by lanes);
        // integers divide when the graph rewrite asks (`scatter::COMBINE_ATTR`).
        let update_attrs: &[(&str, AttrKind)] =
            &[("bad_indices_policy", AttrKind::OptionalStr), (scatter::COMBINE_ATTR, AttrKind::OptionalStr)];
        for dtype in MOVABLE_DTYPES {
            let constraints = leak(vec![("T", dtype), ("Tindices", indices)]);
            table.push(kernel("TensorScatterUpdate", constraints, &[], update_attrs, scatter::tensor_scatter));
            let constraints = leak(vec![("Tparams", dtype), ("Tindices", indices)]);
            table.push(kernel("GatherNd", constraints, &[], policy, scatter::gather_nd));
        }
    }
    for dtype in [DType::F32, DType::F64, DType::I64] {
        table.push(kernel("Range", leak(vec![("Tidx", dtype)]), &["start", "limit", "delta"], &[], index::range));
    }
    // Computed on the host and uploaded (no float64 arithmetic on the device).
    for dtype in [DType::F32, DType::F64] {
        for count in [DType::I32, DType::I64] {
            let constraints = leak(vec![("T", dtype), ("Tidx", count)]);
            table.push(kernel("LinSpace", constraints, &["start", "stop", "num"], &[], index::lin_space));
        }
    }
    // Whole-word float32, float64 and int64 values by the index kernel, the others by a select;
    // int32 in device memory, as TF-GPU's OneHot (TF core has no int32 kernel of it).
    for dtype in MOVABLE_DTYPES.into_iter().chain([DType::I32]) {
        for indices in [DType::I32, DType::I64] {
            let constraints = leak(vec![("T", dtype), ("TI", indices)]);
            table.push(kernel("OneHot", constraints, &["depth"], &[("axis", AttrKind::Int)], index::one_hot));
        }
    }
    // int32 slices stay in host memory, as CUDA TF registers them (shape math).
    table.push(kernel(
        "StridedSlice",
        &[("T", DType::I32)],
        &["input", "begin", "end", "strides", "output"],
        STRIDED_SLICE_ATTRS,
        slice::strided_slice_host,
    ));
    // int32 in device memory where TF-GPU keeps it there (its Transpose, Tile and Select kernels
    // take every type) and TF core registers no DEVICE_DEFAULT kernel for it.
    // The same for its Gather, GatherV2, GatherNd, Roll, Diag, DiagPart and ConjugateTranspose.
    let i32 = t_of(DType::I32);
    table.push(kernel("Transpose", i32, &["perm"], &[], index::transpose));
    table.push(kernel("Tile", i32, &["multiples"], &[], index::tile));
    table.push(kernel("Diag", i32, &[], &[], matrix::diag));
    table.push(kernel("DiagPart", i32, &[], &[], matrix::diag_part));
    for int in [DType::I32, DType::I64] {
        let constraints = leak(vec![("Tparams", DType::I32), ("Tindices", int)]);
        table.push(kernel("GatherV2", constraints, &["axis"], &[("batch_dims", AttrKind::Int)], index::gather));
        table.push(kernel("Gather", constraints, &[], &[], index::gather));
        let policy: &[(&str, AttrKind)] = &[("bad_indices_policy", AttrKind::OptionalStr)];
        table.push(kernel("GatherNd", constraints, &[], policy, scatter::gather_nd));
        let constraints = leak(vec![("T", DType::I32), ("Tperm", int)]);
        table.push(kernel("ConjugateTranspose", constraints, &["perm"], &[], index::transpose));
        for axis in [DType::I32, DType::I64] {
            let constraints = leak(vec![("T", DType::I32), ("Tshift", int), ("Taxis", axis)]);
            table.push(kernel("Roll", constraints, &["shift", "axis"], &[], index::roll));
        }
    }
    // Data movement: any dtype, the kernels only move bytes.
    for dtype in MOVABLE_DTYPES {
        let t = t_of(dtype);
        table.push(kernel("StridedSlice", t, &["begin", "end", "strides"], STRIDED_SLICE_ATTRS, slice::strided_slice));
        table.push(kernel("Slice", t, &["begin", "size"], &[], slice::slice));
        // Whole-word elements only: the scatter writes 32-bit words (smaller types go to the CPU).
        if dtype.size().is_multiple_of(4) {
            let host: &[&str] = &["shape", "begin", "end", "strides"];
            let reverse_attrs: &[(&str, AttrKind)] = &[("seq_dim", AttrKind::Int), ("batch_dim", AttrKind::Int)];
            for int in [DType::I32, DType::I64] {
                let constraints = leak(vec![("T", dtype), ("Index", int)]);
                table.push(kernel(
                    "StridedSliceGrad",
                    constraints,
                    host,
                    STRIDED_SLICE_ATTRS,
                    slice::strided_slice_grad,
                ));
                let constraints = leak(vec![("T", dtype), ("Tlen", int)]);
                table.push(kernel(
                    "ReverseSequence",
                    constraints,
                    &["seq_lengths"],
                    reverse_attrs,
                    slice::reverse_sequence,
                ));
            }
        }
        table.push(kernel("Split", t, &["split_dim"], SPLIT_ATTRS, slice::split));
        table.push(kernel("SplitV", t, &["size_splits", "split_dim"], SPLIT_ATTRS, slice::split_v));
        table.push(kernel("Transpose", t, &["perm"], &[], index::transpose));
        let perm_types = [DType::I32, DType::I64];
        for perm in perm_types {
            let constraints = leak(vec![("T", dtype), ("Tperm", perm)]);
            table.push(kernel("ConjugateTranspose", constraints, &["perm"], &[], index::transpose));
        }
        for op in ["SpaceToDepth", "DepthToSpace"] {
            table.push(kernel(op, t, &[], SPACE_DEPTH_ATTRS, index::space_depth));
        }
        // TF registers real numbers only (no bool or complex), on the CPU as on GPUs.
        if !matches!(dtype, DType::Bool | DType::C64 | DType::C128) {
            for (block, pads) in
                [(DType::I32, DType::I32), (DType::I32, DType::I64), (DType::I64, DType::I32), (DType::I64, DType::I64)]
            {
                let constraints = leak(vec![("T", dtype), ("Tblock_shape", block), ("Tpaddings", pads)]);
                table.push(kernel(
                    "SpaceToBatchND",
                    constraints,
                    &["block_shape", "paddings"],
                    &[],
                    index::space_batch,
                ));
                let constraints = leak(vec![("T", dtype), ("Tblock_shape", block), ("Tcrops", pads)]);
                table.push(kernel("BatchToSpaceND", constraints, &["block_shape", "crops"], &[], index::space_batch));
            }
        }
        // TF-CPU has no uint16 Tile: keep the device's set the same as the reference's.
        if dtype != DType::U16 {
            table.push(kernel("Tile", t, &["multiples"], &[], index::tile));
        }
        table.push(kernel("Pad", t, &["paddings"], &[], index::pad));
        table.push(kernel("PadV2", t, &["paddings"], &[], index::pad));
        table.push(kernel("MirrorPad", t, &["paddings"], &[("mode", AttrKind::Str)], index::pad));
        for bounds in [DType::I32, DType::I64] {
            let constraints = leak(vec![("T", dtype), ("Tindex", bounds)]);
            table.push(kernel("MatrixBandPart", constraints, &["num_lower", "num_upper"], &[], matrix::band_part));
        }
        // Diagonals: whole-word elements.
        if dtype.size().is_multiple_of(4) {
            table.push(kernel("MatrixDiag", t, &[], &[], matrix::matrix_diag));
            table.push(kernel("MatrixDiagPart", t, &[], &[], matrix::matrix_diag_part));
            table.push(kernel("MatrixSetDiag", t, &[], &[], matrix::matrix_set_diag));
            let align: &[(&str, AttrKind)] = &[("align", AttrKind::Str)];
            for (version, attrs) in [("V2", &[][..]), ("V3", align)] {
                let name = |op: &str| -> &'static str { Box::leak(format!("{op}{version}").into_boxed_str()) };
                let sizes = &["k", "num_rows", "num_cols"];
                table.push(kernel(name("MatrixDiag"), t, sizes, attrs, matrix::matrix_diag));
                table.push(kernel(name("MatrixDiagPart"), t, &["k"], attrs, matrix::matrix_diag_part));
                table.push(kernel(name("MatrixSetDiag"), t, &["k"], attrs, matrix::matrix_set_diag));
            }
            // TF defines Diag and DiagPart for floats, complex numbers and 32/64-bit integers.
            if matches!(dtype, DType::F32 | DType::F64 | DType::I64 | DType::C64 | DType::C128) {
                table.push(kernel("Diag", t, &[], &[], matrix::diag));
                table.push(kernel("DiagPart", t, &[], &[], matrix::diag_part));
            }
        }
        table.push(kernel("ReverseV2", t, &["axis"], &[], index::reverse));
        table.push(kernel("Reverse", t, &["dims"], &[], index::reverse));
        for (shift, axis) in
            [(DType::I32, DType::I32), (DType::I64, DType::I64), (DType::I32, DType::I64), (DType::I64, DType::I32)]
        {
            let constraints = leak(vec![("T", dtype), ("Tshift", shift), ("Taxis", axis)]);
            table.push(kernel("Roll", constraints, &["shift", "axis"], &[], index::roll));
        }
        table.push(kernel("Concat", t, &["concat_dim"], &[], index::concat));
        table.push(kernel("BroadcastTo", t, &["shape"], &[], index::broadcast_to));
        table.push(kernel("Fill", t, &["dims"], &[], index::fill));
        table.push(kernel("ConcatV2", t, &["axis"], &[], index::concat));
        table.push(kernel("Pack", t, &[], &[("axis", AttrKind::Int)], index::pack));
        table.push(kernel("Unpack", t, &[], &[("num", AttrKind::Int), ("axis", AttrKind::Int)], index::unpack));
        for indices in [DType::I32, DType::I64] {
            let constraints = leak(vec![("Tparams", dtype), ("Tindices", indices)]);
            table.push(kernel("GatherV2", constraints, &["axis"], &[("batch_dims", AttrKind::Int)], index::gather));
            table.push(kernel("Gather", constraints, &[], &[], index::gather));
        }
    }
    for dtype in MOVABLE_DTYPES {
        for indices in [DType::I32, DType::I64] {
            let constraints = leak(vec![("dtype", dtype), ("Tindices", indices)]);
            table.push(kernel(
                "ResourceGather",
                constraints,
                &[],
                &[("batch_dims", AttrKind::Int)],
                variables::compute,
            ));
        }
    }
    // TF core's DEVICE_DEFAULT kernels for these crash on device memory. Every dtype a variable
    // on the device can have (int32 variables live in host memory, bool has no AssignAdd); float16
    // only where its arithmetic compiles (SHADER_F16), like every float16 kernel.
    for dtype in MOVABLE_DTYPES.into_iter().filter(|&d| d != DType::Bool && (d != DType::F16 || with_f16)) {
        for op in ["AssignAddVariableOp", "AssignSubVariableOp"] {
            table.push(kernel(op, leak(vec![("dtype", dtype)]), &[], &[], variables::compute));
        }
    }
    // Sparse updates of float32, float64 and integer variables (Keras optimizers' updates from Embedding
    // gradients use Add/Sub; int32 variables live in host memory); ResourceScatterUpdate,
    // ResourceScatterNdUpdate and ResourceGatherNd move elements of any dtype.
    for indices in [DType::I32, DType::I64] {
        // (16-bit floats combine in float32 within their lane, rounded back at each update.)
        let halves = [DType::BF16].into_iter().chain(with_f16.then_some(DType::F16));
        for dtype in [DType::F32].into_iter().chain(scatter::ARITHMETIC_INTEGERS).chain(scatter_f64).chain(halves) {
            for op in [
                "ResourceScatterAdd",
                "ResourceScatterSub",
                "ResourceScatterMul",
                "ResourceScatterDiv",
                "ResourceScatterMin",
                "ResourceScatterMax",
            ] {
                let constraints = leak(vec![("dtype", dtype), ("Tindices", indices)]);
                table.push(kernel(op, constraints, &[], &[], variables::compute));
            }
            for op in ["ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterNdMin", "ResourceScatterNdMax"] {
                let constraints = leak(vec![("T", dtype), ("Tindices", indices)]);
                table.push(kernel(op, constraints, &[], policy, variables::compute));
            }
        }
        for dtype in MOVABLE_DTYPES {
            let constraints = leak(vec![("dtype", dtype), ("Tindices", indices)]);
            table.push(kernel("ResourceScatterUpdate", constraints, &[], &[], variables::compute));
            table.push(kernel("ResourceGatherNd", constraints, &[], &[], variables::compute));
            let constraints = leak(vec![("T", dtype), ("Tindices", indices)]);
            table.push(kernel("ResourceScatterNdUpdate", constraints, &[], policy, variables::compute));
        }
    }
    let nesterov: &'static [(&'static str, AttrKind)] = &[("use_nesterov", AttrKind::Bool)];
    let slots: &'static [(&'static str, AttrKind)] = &[("update_slots", AttrKind::Bool)];
    let no_attrs: &'static [(&'static str, AttrKind)] = &[];
    let linear_by_lr: &'static [(&'static str, AttrKind)] = &[("multiply_linear_by_lr", AttrKind::Bool)];
    // The dense updates compose the elementwise kernels, float64's in f64.
    let optimizer_types: Vec<DType> = floats.iter().copied().chain(with_f64.then_some(DType::F64)).collect();
    for &dtype in &optimizer_types {
        for (op, attrs) in [
            ("GradientDescent", no_attrs),
            ("Momentum", nesterov),
            ("KerasMomentum", nesterov),
            ("Adam", nesterov),
            ("RMSProp", no_attrs),
            ("CenteredRMSProp", no_attrs),
            ("Adagrad", slots),
            ("AdagradV2", slots),
            ("Adadelta", no_attrs),
            ("ProximalGradientDescent", no_attrs),
            ("ProximalAdagrad", no_attrs),
            ("AdagradDA", no_attrs),
            ("Ftrl", linear_by_lr),
            ("FtrlV2", linear_by_lr),
            ("AdaMax", no_attrs),
            ("AddSign", no_attrs),
            ("PowerSign", no_attrs),
            ("AdamWithAmsgrad", no_attrs),
        ] {
            // Not float16: the proximal updates select and AdagradDA casts its step (Select and
            // Cast of float16 are not served everywhere), and Ftrl's pow would stray further from
            // TF-CPU's sqrt in float16. float64 computes them in f64.
            let not_float16 = ["AdagradDA", "Ftrl", "FtrlV2", "ProximalGradientDescent", "ProximalAdagrad"];
            if dtype == DType::F16 && not_float16.contains(&op) {
                continue;
            }
            let dense: &'static str = Box::leak(format!("ResourceApply{op}").into_boxed_str());
            table.push(kernel(dense, t_of(dtype), &[], attrs, variables::compute));
            // TF has no sparse GradientDescent, Adam, AdaMax, AddSign, PowerSign or
            // AdamWithAmsgrad. The sparse ops scatter rows back so that one duplicate's row wins
            // whole: float32 as whole words, float64 through the scatter chains where their links
            // fit in a binding (`scatter::scatter`). Not float16 (its elements share words).
            if matches!(dtype, DType::F32 | DType::F64)
                && !matches!(op, "GradientDescent" | "Adam" | "AdaMax" | "AddSign" | "PowerSign" | "AdamWithAmsgrad")
            {
                let sparse: &'static str = Box::leak(format!("ResourceSparseApply{op}").into_boxed_str());
                for indices in [DType::I32, DType::I64] {
                    let constraints = leak(vec![("T", dtype), ("Tindices", indices)]);
                    table.push(kernel(sparse, constraints, &[], attrs, variables::compute));
                }
            }
        }
    }
    let bfloat16 = narrow_twins(&table, &BFLOAT16_VIA_F32, DType::BF16);
    if with_f16 {
        table.extend(narrow_twins(&table, &HALF_VIA_F32, DType::F16));
    }
    table.extend(bfloat16);
    table
}

/// Ops whose bfloat16 kernels run through their float32 kernel (`half::via_f32`): bfloat16 storage
/// with float32 math, one rounding per op (every adapter: no bfloat16 arithmetic is needed). The
/// elementwise ops, reductions, matmuls, softmax and losses, segment and scatter sums, and the
/// convolution, pooling, batch-norm and resize family.
const BFLOAT16_VIA_F32: [&str; 161] = [
    "Conv2D",
    "Conv2DBackpropInput",
    "Conv2DBackpropInputV2",
    "Conv2DBackpropFilter",
    "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter",
    "Conv",
    "Conv3D",
    "Conv3DBackpropInputV2",
    "Conv3DBackpropFilterV2",
    "MaxPool",
    "MaxPoolV2",
    "AvgPool",
    "MaxPoolGrad",
    "MaxPoolGradV2",
    "AvgPoolGrad",
    "MaxPoolGradGrad",
    "MaxPoolGradGradV2",
    "MaxPoolWithArgmax",
    "MaxPoolGradWithArgmax",
    "MaxPool3D",
    "AvgPool3D",
    "MaxPool3DGrad",
    "AvgPool3DGrad",
    "MaxPool3DGradGrad",
    "FusedBatchNormV2",
    "FusedBatchNormV3",
    "FusedBatchNormGradV2",
    "FusedBatchNormGradV3",
    "ResizeBilinear",
    "ResizeBicubic",
    "ResizeBilinearGrad",
    "ScaleAndTranslate",
    "Cumsum",
    "Cumprod",
    "Abs",
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Ceil",
    "Cos",
    "Cosh",
    "Digamma",
    "Elu",
    "Erf",
    "Erfc",
    "Exp",
    "Expm1",
    "Floor",
    "Inv",
    "LeakyRelu",
    "Lgamma",
    "Log",
    "Log1p",
    "Neg",
    "Reciprocal",
    "Relu",
    "Relu6",
    "Rint",
    "Round",
    "Rsqrt",
    "Selu",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Square",
    "Tan",
    "Tanh",
    "ZerosLike",
    "OnesLike",
    "Add",
    "AddV2",
    "Atan2",
    "Div",
    "DivNoNan",
    "FloorDiv",
    "FloorMod",
    "Maximum",
    "Minimum",
    "Mul",
    "Pow",
    "RealDiv",
    "Sub",
    "SquaredDifference",
    "Xdivy",
    "Xlog1py",
    "Xlogy",
    "MulNoNan",
    "Ndtri",
    "Erfinv",
    "EluGrad",
    "InvGrad",
    "LeakyReluGrad",
    "ReciprocalGrad",
    "Relu6Grad",
    "ReluGrad",
    "RsqrtGrad",
    "SeluGrad",
    "SigmoidGrad",
    "SoftplusGrad",
    "SoftsignGrad",
    "SqrtGrad",
    "TanhGrad",
    "Equal",
    "Greater",
    "GreaterEqual",
    "Less",
    "LessEqual",
    "NotEqual",
    "IsFinite",
    "IsInf",
    "IsNan",
    "AddN",
    "BiasAdd",
    "BiasAddGrad",
    "ClipByValue",
    "MatMul",
    "BatchMatMulV2",
    "Einsum",
    "Softmax",
    "LogSoftmax",
    "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits",
    "L2Loss",
    "Sum",
    "Prod",
    "Max",
    "Min",
    "Mean",
    "EuclideanNorm",
    "ArgMax",
    "ArgMin",
    "UnsortedSegmentSum",
    "UnsortedSegmentMax",
    "UnsortedSegmentMin",
    "UnsortedSegmentProd",
    "SegmentSum",
    "SegmentProd",
    "SegmentMin",
    "SegmentMax",
    "SegmentMean",
    "ScatterNd",
    "TensorScatterAdd",
    "TensorScatterSub",
    "TensorScatterMin",
    "TensorScatterMax",
    "ScatterNdNonAliasingAdd",
    "BiasAddV1",
    "ResizeNearestNeighborGrad",
    "MirrorPadGrad",
    "TopKV2",
    "LowerBound",
    "UpperBound",
];

/// Ops whose float16 kernels run through their float32 kernel (`half::via_f32`).
/// (TF-CPU has no float16 BatchMatMulV3, so neither do we: the reference decides the set.)
const HALF_VIA_F32: [&str; 89] = [
    "Cumsum",
    "Cumprod",
    "CudnnRNN",
    "CudnnRNNV2",
    "CudnnRNNV3",
    "CudnnRNNBackprop",
    "CudnnRNNBackpropV2",
    "CudnnRNNBackpropV3",
    "FusedBatchNormGradV3",
    "FusedBatchNormGradV2",
    "FusedBatchNormV2",
    "MaxPoolV2",
    "MaxPoolGradV2",
    "MaxPoolGradGrad",
    "MaxPoolGradGradV2",
    "MaxPoolWithArgmax",
    "MaxPoolGradWithArgmax",
    "Conv2DBackpropInputV2",
    "Conv",
    "Conv3D",
    "Conv3DBackpropInputV2",
    "Conv3DBackpropFilterV2",
    "MaxPool3D",
    "AvgPool3D",
    "MaxPool3DGrad",
    "AvgPool3DGrad",
    "MaxPool3DGradGrad",
    "L2Loss",
    "Conv2DBackpropInput",
    "Conv2DBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter",
    "MaxPoolGrad",
    "AvgPoolGrad",
    "BiasAddGrad",
    "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits",
    "Sum",
    "Prod",
    "Max",
    "Min",
    "Mean",
    "ArgMax",
    "ArgMin",
    "Einsum",
    "Softmax",
    "LogSoftmax",
    "Conv2D",
    "DepthwiseConv2dNative",
    "MaxPool",
    "AvgPool",
    "FusedBatchNormV3",
    "ResizeBilinearGrad",
    "ResizeNearestNeighborGrad",
    "MirrorPadGrad",
    "IsFinite",
    "IsInf",
    "IsNan",
    "EuclideanNorm",
    "UnsortedSegmentSum",
    "UnsortedSegmentMax",
    "UnsortedSegmentMin",
    "UnsortedSegmentProd",
    "SegmentSum",
    "SegmentProd",
    "SegmentMin",
    "SegmentMax",
    "SegmentMean",
    "ScatterNd",
    "TensorScatterAdd",
    "TensorScatterSub",
    "TensorScatterMin",
    "TensorScatterMax",
    "ScatterNdNonAliasingAdd",
    "TopKV2",
    "LowerBound",
    "UpperBound",
    "BesselI0",
    "BesselI0e",
    "BesselI1",
    "BesselI1e",
    "BesselK0",
    "BesselK0e",
    "BesselK1",
    "BesselK1e",
    "BesselJ0",
    "BesselJ1",
    "BesselY0",
    "BesselY1",
];

/// `narrow` (float16 or bfloat16) rows for the float32 rows of `ops`. The batch norms keep their
/// statistics (type attribute `U`) in float32, as TF does.
fn narrow_twins(table: &[KernelDef], ops: &[&str], narrow: DType) -> Vec<KernelDef> {
    table
        .iter()
        .filter(|k| ops.contains(&k.op) && k.constraints.iter().any(|&(a, d)| d == DType::F32 && a != "U"))
        .map(|k| {
            let constraints = k
                .constraints
                .iter()
                .map(|&(attr, d)| (attr, if d == DType::F32 && attr != "U" { narrow } else { d }))
                .collect();
            KernelDef { constraints: leak(constraints), compute: half::via_f32, ..k.clone() }
        })
        .collect()
}

/// Every kernel this plugin registers, in a fixed order (TF's create callbacks index into it).
pub static KERNELS: std::sync::LazyLock<Vec<KernelDef>> = std::sync::LazyLock::new(build_table);

/// The registered (op × dtype) matrix, one line per op, as the README shows it.
pub fn op_table() -> String {
    let mut ops: Vec<(&str, Vec<String>)> = Vec::new();
    for k in KERNELS.iter() {
        let types = match k.constraints {
            [] => "bool".to_string(),
            [(_, d)] => d.tf_name().to_string(),
            many => many.iter().map(|(a, d)| format!("{a}={}", d.tf_name())).collect::<Vec<_>>().join(","),
        };
        match ops.iter_mut().find(|(op, _)| *op == k.op) {
            Some((_, list)) => list.push(types),
            None => ops.push((k.op, vec![types])),
        }
    }
    ops.sort_by_key(|(op, _)| *op);
    ops.iter()
        .map(|(op, types)| {
            let row = format!("{op:<13} {}", types.join(" "));
            match layouts(op) {
                Some(layouts) => format!("{row}  layouts: {layouts}"),
                None => row,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The data formats an op with a `data_format` attribute serves (channels-first ones through
/// `layout::channels_last`).
fn layouts(op: &str) -> Option<&'static str> {
    let def = KERNELS.iter().find(|k| k.op == op)?;
    let layouts = match op {
        "FusedBatchNormV3" | "FusedBatchNormGradV3" => "NHWC NCHW NDHWC NCDHW",
        _ if op.contains("3D") => "NDHWC NCDHW",
        _ => "NHWC NCHW",
    };
    def.attrs.iter().any(|(name, _)| *name == "data_format").then_some(layouts)
}

/// The `FAST_DIV` override of `wgsl/quot.wgsl` for a pipeline whose dividends (flat indices) are
/// all below `largest`: whether f32 division is exact enough for them.
/// The `RANK` override of shaders that split indices over up to 8 dimensions (`broadcast.wgsl`):
/// `rank` rounded up to 1, 2, 4 or 8, so that a few pipelines serve every rank and the host pads
/// the dimensions past it with size 1.
pub(crate) fn rank_constant(rank: u32) -> (&'static str, f64) {
    ("RANK", rank.max(1).next_power_of_two() as f64)
}

pub(crate) fn fast_div(largest: u32) -> (&'static str, f64) {
    ("FAST_DIV", if largest < 1 << 23 { 1.0 } else { 0.0 })
}

/// Element count as the u32 the shaders index with.
pub(crate) fn shader_len(n: u64, op: &str) -> Result<u32> {
    u32::try_from(n)
        .map_err(|_| Error::unimplemented(format!("{op}: tensors of {n} elements are too large for one kernel")))
}
