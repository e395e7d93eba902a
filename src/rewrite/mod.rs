//! Graph rewrites for the Grappler plugin, on serialized `GraphDef`s.
//!
//! Some ops on resource variables need the variable's tensor inside the kernel, which TF's kernel
//! C API reaches only through `kernels_experimental.h`, and TF 2.20+ does not export it. In a graph
//! they are rewritten, on the WGPU device, into ops our kernels and TF core's DEVICE_DEFAULT
//! kernels do run:
//! - `ResourceGather(v, i)` → `GatherV2(ReadVariableOp(v), i, axis = batch_dims)`;
//! - `ResourceGatherNd(v, i)` → `GatherNd(ReadVariableOp(v), i)`;
//! - `ResourceScatterAdd(v, i, u)` → `AssignVariableOp(v, TensorScatterAdd(ReadVariableOp(v),
//!   ExpandDims(i, -1), BroadcastTo(u, rows)))`, and `Sub`, `Min`, `Max` and `Update` likewise
//!   with `TensorScatterSub`, `Min`, `Max` and `Update` (`rows` the shape of the rows `i` names,
//!   so that a scalar `u` serves every row); `ResourceScatterMul`/`Div` multiply/divide the
//!   variable by `UnsortedSegmentProd(BroadcastTo(u, rows), i, rows)`, so duplicate indices
//!   combine as they do on TF-CPU; integer `ResourceScatterDiv` → `TensorScatterUpdate` with the
//!   private attribute `_wgpu_scatter_combine = "Div"`, which our kernel reads to divide each row
//!   by its divisors one at a time (a quotient truncates at each, so the product would differ);
//! - `ResourceScatterNdAdd(v, i, u)` → `AssignVariableOp(v, TensorScatterAdd(ReadVariableOp(v), i,
//!   u))`, and `Sub`, `Update`, `Min` and `Max` likewise;
//! - `AssignAddVariableOp(v, x)` → `AssignVariableOp(v, AddV2(ReadVariableOp(v), x))`, and
//!   `AssignSubVariableOp` likewise with `Sub`;
//! - the TF1 optimizers' `ResourceApply*` ops (`crate::optimizer` lists them) → reads of their
//!   variables, TF-CPU's update formulas as element-wise ops (for gradient descent
//!   `Sub(ReadVariableOp(v), Mul(alpha, delta))`), and one assign per variable, gathered under a
//!   `NoOp`; their `ResourceSparseApply*` twins likewise on the rows the indices name
//!   (`GatherV2` of each variable, the formula, `TensorScatterUpdate` back). With duplicate
//!   indices one row's update wins, as on TF-GPU, whose kernels update rows in parallel (TF's
//!   optimizers sum duplicates first).
//!
//! The rewritten op keeps its node name, so fetches, outputs and control edges stay valid.

pub mod proto;

use std::collections::HashSet;

use crate::error::Result;
use crate::kernels::scatter;
use crate::optimizer::{Arithmetic, Optimizer};
use proto::{Message, Value};

const GRAPH_NODE: u32 = 1;
const NODE_NAME: u32 = 1;
const NODE_OP: u32 = 2;
const NODE_INPUT: u32 = 3;
const NODE_DEVICE: u32 = 4;
const NODE_ATTR: u32 = 5;
const ATTR_S: u32 = 2;
const ATTR_I: u32 = 3;
const ATTR_B: u32 = 5;
const ATTR_TYPE: u32 = 6;
const ATTR_TENSOR: u32 = 8;
const DT_INT32: u64 = 3;
const DT_INT64: u64 = 9;
/// TF's integer DataType codes: int32, uint8, int16, int8, int64, uint16, uint32, uint64.
const INTEGER_TYPES: [u64; 8] = [3, 4, 5, 6, 9, 17, 22, 23];
const TENSOR_DTYPE: u32 = 1;
const TENSOR_SHAPE: u32 = 2;
const TENSOR_INT_VAL: u32 = 7;
const SHAPE_DIM: u32 = 2;
const DIM_SIZE: u32 = 1;

/// The ops besides the optimizers' that `rewrite_graph` replaces on the WGPU device.
const REWRITTEN_VARIABLE_OPS: [&str; 16] = [
    "ResourceGather",
    "ResourceGatherNd",
    "ResourceScatterAdd",
    "ResourceScatterSub",
    "ResourceScatterMul",
    "ResourceScatterDiv",
    "ResourceScatterMin",
    "ResourceScatterMax",
    "ResourceScatterUpdate",
    "ResourceScatterNdAdd",
    "ResourceScatterNdSub",
    "ResourceScatterNdUpdate",
    "ResourceScatterNdMin",
    "ResourceScatterNdMax",
    "AssignAddVariableOp",
    "AssignSubVariableOp",
];

/// Whether `rewrite_graph` replaces `op` when it is placed on the WGPU device.
pub fn is_rewritten(op: &str) -> bool {
    REWRITTEN_VARIABLE_OPS.contains(&op) || Optimizer::from_op(op, |_, default| default).is_some()
}

/// A `NodeDef`, decoded as far as the rewrites need.
struct Node {
    name: String,
    op: String,
    inputs: Vec<String>,
    device: String,
    attrs: Vec<(String, Message)>,
}

impl Node {
    fn parse(bytes: &[u8]) -> Result<Node> {
        let message = Message::parse(bytes)?;
        let mut attrs = Vec::new();
        for entry in message.bytes(NODE_ATTR) {
            let entry = Message::parse(entry)?;
            let value = Message::parse(entry.bytes(2).last().unwrap_or_default())?;
            attrs.push((entry.string(1), value));
        }
        Ok(Node {
            name: message.string(NODE_NAME),
            op: message.string(NODE_OP),
            inputs: message.bytes(NODE_INPUT).map(|b| String::from_utf8_lossy(b).into_owned()).collect(),
            device: message.string(NODE_DEVICE),
            attrs,
        })
    }

    fn new(name: String, op: &str, inputs: Vec<String>, device: &str) -> Node {
        Node { name, op: op.to_string(), inputs, device: device.to_string(), attrs: Vec::new() }
    }

    fn attr(mut self, name: &str, value: Message) -> Node {
        self.attrs.push((name.to_string(), value));
        self
    }

    fn attr_value(&self, name: &str) -> Option<&Message> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn encode(&self) -> Vec<u8> {
        let mut message =
            Message::default().with_bytes(NODE_NAME, self.name.as_bytes()).with_bytes(NODE_OP, self.op.as_bytes());
        for input in &self.inputs {
            message = message.with_bytes(NODE_INPUT, input.as_bytes());
        }
        message = message.with_bytes(NODE_DEVICE, self.device.as_bytes());
        for (name, value) in &self.attrs {
            let entry = Message::default().with_bytes(1, name.as_bytes()).with_bytes(2, value.encode());
            message = message.with_bytes(NODE_ATTR, entry.encode());
        }
        message.encode()
    }

    /// Data inputs and `^control` inputs, apart.
    fn split_inputs(&self) -> (Vec<String>, Vec<String>) {
        self.inputs.iter().cloned().partition(|i| !i.starts_with('^'))
    }
}

fn type_attr(code: u64) -> Message {
    Message::default().with_varint(ATTR_TYPE, code)
}

fn int_attr(value: i64) -> Message {
    Message::default().with_varint(ATTR_I, value as u64)
}

fn string_attr(value: &str) -> Message {
    Message::default().with_bytes(ATTR_S, value.as_bytes().to_vec())
}

fn bool_attr(value: bool) -> Message {
    Message::default().with_varint(ATTR_B, u64::from(value))
}

/// An int32 `TensorProto` attribute: a scalar, or with `dims` a tensor of those dims.
fn int32_tensor(values: &[i32], dims: Option<&[i64]>) -> Message {
    let mut shape = Message::default();
    for &d in dims.unwrap_or_default() {
        shape = shape.with_bytes(SHAPE_DIM, Message::default().with_varint(DIM_SIZE, d as u64).encode());
    }
    let mut tensor = Message::default().with_varint(TENSOR_DTYPE, DT_INT32).with_bytes(TENSOR_SHAPE, shape.encode());
    for &v in values {
        tensor = tensor.with_varint(TENSOR_INT_VAL, v as i64 as u64);
    }
    Message::default().with_bytes(ATTR_TENSOR, tensor.encode())
}

fn int32_scalar_tensor(value: i32) -> Message {
    int32_tensor(&[value], None)
}

/// Whether TF placed `device` on a GPU-typed device: ours, as the plugin's device type is `GPU`.
fn on_wgpu(device: &str) -> bool {
    device.contains("device:GPU:")
}

/// Node names that do not clash with the graph's.
struct Names(HashSet<String>);

impl Names {
    fn fresh(&mut self, base: &str, suffix: &str) -> String {
        let mut name = format!("{base}/{suffix}");
        let mut k = 1;
        while self.0.contains(&name) {
            name = format!("{base}/{suffix}_{k}");
            k += 1;
        }
        self.0.insert(name.clone());
        name
    }
}

/// Emits the nodes that replace `node`, on its device, with fresh names under its own.
struct Emitter<'a> {
    node: &'a Node,
    names: &'a mut Names,
    nodes: Vec<Node>,
}

impl Emitter<'_> {
    /// A new node `op(inputs)` with `attrs`; returns its name.
    fn push(&mut self, suffix: &str, op: &str, inputs: &[&str], attrs: Vec<(&str, Message)>) -> String {
        let name = self.names.fresh(&self.node.name, suffix);
        self.push_named(name.clone(), op, inputs, attrs);
        name
    }

    fn push_named(&mut self, name: String, op: &str, inputs: &[&str], attrs: Vec<(&str, Message)>) {
        let inputs = inputs.iter().map(|i| i.to_string()).collect();
        let mut new = Node::new(name, op, inputs, &self.node.device);
        for (key, value) in attrs {
            new = new.attr(key, value);
        }
        self.nodes.push(new);
    }

    /// The last node, under the replaced node's name, so that its consumers and fetches find it.
    fn finish(mut self, op: &str, inputs: &[&str], attrs: Vec<(&str, Message)>) -> Vec<Node> {
        self.push_named(self.node.name.clone(), op, inputs, attrs);
        self.nodes
    }

    /// Reads variable `resource` after `control` (the replaced node's control inputs).
    fn read(&mut self, resource: &str, dtype: u64, control: &[String]) -> String {
        let name = self.names.fresh(&self.node.name, "wgpu_read");
        let inputs = std::iter::once(resource.to_string()).chain(control.iter().cloned()).collect();
        self.nodes
            .push(Node::new(name.clone(), "ReadVariableOp", inputs, &self.node.device).attr("dtype", type_attr(dtype)));
        name
    }

    /// An int32 constant; the control edge from `after` keeps it in that node's frame (loops).
    fn int32_const(&mut self, suffix: &str, value: Message, after: &str) -> String {
        let after = format!("^{after}");
        self.push(suffix, "Const", &[&after], vec![("dtype", type_attr(DT_INT32)), ("value", value)])
    }

    /// `GatherV2(params, indices, 0)`: the rows `indices` name.
    fn rows(&mut self, params: &str, indices: &str, dtype: u64, tindices: u64) -> String {
        let axis = self.int32_const("wgpu_first_axis", int32_scalar_tensor(0), params);
        let attrs = vec![
            ("Tparams", type_attr(dtype)),
            ("Tindices", type_attr(tindices)),
            ("Taxis", type_attr(DT_INT32)),
            ("batch_dims", int_attr(0)),
        ];
        self.push("wgpu_rows", "GatherV2", &[params, indices, &axis], attrs)
    }

    /// `ExpandDims(indices, -1)`: the indices as depth-1 tuples, for the TensorScatter ops.
    fn tuples(&mut self, indices: &str, tindices: u64, after: &str) -> String {
        let axis = self.int32_const("wgpu_last_axis", int32_scalar_tensor(-1), after);
        let attrs = vec![("T", type_attr(tindices)), ("Tdim", type_attr(DT_INT32))];
        self.push("wgpu_index_tuples", "ExpandDims", &[indices, &axis], attrs)
    }
}

/// `AssignVariableOp`'s attributes. The kernels refuse a value of another shape than the variable;
/// the rewritten element-wise formulas would broadcast it, and the assign keeps that check.
fn assign_attrs(dtype: u64) -> Vec<(&'static str, Message)> {
    vec![("dtype", type_attr(dtype)), ("validate_shape", bool_attr(true))]
}

/// Emits the element-wise nodes of an optimizer update.
struct Update<'a> {
    e: Emitter<'a>,
    dtype: u64,
    assigns: Vec<String>,
}

impl Update<'_> {
    /// A new node `op(inputs)` of the update's dtype; returns its name.
    fn op(&mut self, suffix: &str, op: &str, inputs: &[&str]) -> String {
        self.e.push(suffix, op, inputs, vec![("T", type_attr(self.dtype))])
    }

    fn assign(&mut self, resource: &str, value: &str) {
        self.assign_after(resource, value, &[]);
    }

    /// `assign`, after the nodes of the control inputs `after` ("^name").
    fn assign_after(&mut self, resource: &str, value: &str, after: &[String]) {
        let mut inputs = vec![resource, value];
        inputs.extend(after.iter().map(String::as_str));
        let name = self.e.push("wgpu_assign", "AssignVariableOp", &inputs, assign_attrs(self.dtype));
        self.assigns.push(format!("^{name}"));
    }

    /// The nodes, ending in a `NoOp` under the op's name that waits for every assign.
    fn finish(self) -> Vec<Node> {
        let assigns: Vec<&str> = self.assigns.iter().map(String::as_str).collect();
        self.e.finish("NoOp", &assigns, Vec::new())
    }
}

impl Arithmetic for Update<'_> {
    type Value = String;
    type Error = crate::error::Error;
    fn add(&mut self, a: &String, b: &String) -> Result<String> {
        Ok(self.op("wgpu_add", "AddV2", &[a, b]))
    }
    fn sub(&mut self, a: &String, b: &String) -> Result<String> {
        Ok(self.op("wgpu_sub", "Sub", &[a, b]))
    }
    fn mul(&mut self, a: &String, b: &String) -> Result<String> {
        Ok(self.op("wgpu_mul", "Mul", &[a, b]))
    }
    fn div(&mut self, a: &String, b: &String) -> Result<String> {
        Ok(self.op("wgpu_div", "RealDiv", &[a, b]))
    }
    fn square(&mut self, a: &String) -> Result<String> {
        Ok(self.op("wgpu_square", "Square", &[a]))
    }
    fn sqrt(&mut self, a: &String) -> Result<String> {
        Ok(self.op("wgpu_sqrt", "Sqrt", &[a]))
    }
    fn rsqrt(&mut self, a: &String) -> Result<String> {
        Ok(self.op("wgpu_rsqrt", "Rsqrt", &[a]))
    }
    fn exp(&mut self, a: &String) -> Result<String> {
        Ok(self.op("wgpu_exp", "Exp", &[a]))
    }
    fn ones_like(&mut self, a: &String) -> Result<String> {
        Ok(self.op("wgpu_one", "OnesLike", &[a]))
    }
    fn abs(&mut self, a: &String) -> Result<String> {
        Ok(self.op("wgpu_abs", "Abs", &[a]))
    }
    fn sign(&mut self, a: &String) -> Result<String> {
        Ok(self.op("wgpu_sign", "Sign", &[a]))
    }
    fn relu(&mut self, a: &String) -> Result<String> {
        Ok(self.op("wgpu_relu", "Relu", &[a]))
    }
    fn pow(&mut self, a: &String, b: &String) -> Result<String> {
        Ok(self.op("wgpu_pow", "Pow", &[a, b]))
    }
    fn minimum(&mut self, a: &String, b: &String) -> Result<String> {
        Ok(self.op("wgpu_min", "Minimum", &[a, b]))
    }
    fn maximum(&mut self, a: &String, b: &String) -> Result<String> {
        Ok(self.op("wgpu_max", "Maximum", &[a, b]))
    }
    fn select_greater(&mut self, a: &String, b: &String, then: &String, otherwise: &String) -> Result<String> {
        let greater = self.op("wgpu_greater", "Greater", &[a, b]);
        Ok(self.op("wgpu_select", "SelectV2", &[&greater, then, otherwise]))
    }
    fn step_as_float(&mut self, step: &String) -> Result<String> {
        let attrs =
            vec![("SrcT", type_attr(DT_INT64)), ("DstT", type_attr(self.dtype)), ("Truncate", bool_attr(false))];
        Ok(self.e.push("wgpu_step", "Cast", &[step], attrs))
    }
}

/// A fused optimizer op as reads of its variables, its update formula as element-wise nodes
/// (`crate::optimizer`), and one assign per updated variable. A sparse op's formula runs on the
/// rows its indices name, which are then scattered back.
fn optimizer_update(
    node: &Node,
    names: &mut Names,
    dtype: u64,
    data: &[String],
    control: Vec<String>,
) -> Option<Vec<Node>> {
    let flag =
        |name: &str, default: bool| node.attr_value(name).and_then(|v| v.varint(ATTR_B)).map_or(default, |b| b != 0);
    let optimizer = Optimizer::from_op(&node.op, flag)?;
    let sparse = Optimizer::is_sparse(&node.op);
    let (variables, others) = optimizer.arity();
    if data.len() != variables + others + usize::from(sparse) {
        return None;
    }
    let indices_at = variables + optimizer.gradient_index() + 1;
    let mut args: Vec<String> =
        (variables..data.len()).filter(|&k| !sparse || k != indices_at).map(|k| data[k].clone()).collect();
    let mut u = Update { e: Emitter { node, names, nodes: Vec::new() }, dtype, assigns: Vec::new() };
    let current: Vec<String> = data[..variables].iter().map(|v| u.e.read(v, dtype, &control)).collect();
    if !sparse {
        let updated = optimizer.update(&mut u, &current, &args).ok()?;
        for (resource, value) in data.iter().zip(updated) {
            if let Some(value) = value {
                u.assign(resource, &value);
            }
        }
        return Some(u.finish());
    }
    let indices = data[indices_at].as_str();
    let tindices = node.attr_value("Tindices")?.varint(ATTR_TYPE)?;
    let mut rows: Vec<String> = current.iter().map(|read| u.e.rows(read, indices, dtype, tindices)).collect();
    // The gradient must have the rows' shape, [len(indices)] + var.shape[1:]: the formula would
    // broadcast another. Two shapes that broadcast to each other are equal, so broadcasting each to
    // the other's shape fails exactly when they differ (InvalidArgument, as TF's kernels).
    let grad_at = optimizer.gradient_index();
    let shape_attrs = || vec![("T", type_attr(dtype)), ("out_type", type_attr(DT_INT32))];
    let broadcast_attrs = || vec![("T", type_attr(dtype)), ("Tidx", type_attr(DT_INT32))];
    let rows_shape = u.e.push("wgpu_rows_shape", "Shape", &[&rows[0]], shape_attrs());
    let grad_shape = u.e.push("wgpu_grad_shape", "Shape", &[&args[grad_at]], shape_attrs());
    args[grad_at] = u.e.push("wgpu_checked_grad", "BroadcastTo", &[&args[grad_at], &rows_shape], broadcast_attrs());
    rows[0] = u.e.push("wgpu_checked_rows", "BroadcastTo", &[&rows[0], &grad_shape], broadcast_attrs());
    // The assigns wait for both checks: with no indices Grappler folds the empty scatter away, and
    // the formula (the checks' only other consumer) with it.
    let checks = [format!("^{}", args[grad_at]), format!("^{}", rows[0])];
    let updated = optimizer.update(&mut u, &rows, &args).ok()?;
    let tuples = u.e.tuples(indices, tindices, &current[0]);
    for ((resource, read), value) in data.iter().zip(&current).zip(updated) {
        if let Some(value) = value {
            let attrs = vec![("T", type_attr(dtype)), ("Tindices", type_attr(tindices))];
            let scattered = u.e.push("wgpu_scattered", "TensorScatterUpdate", &[read, &tuples, &value], attrs);
            u.assign_after(resource, &scattered, &checks);
        }
    }
    Some(u.finish())
}

/// `ResourceScatter{Add,Sub,Mul,Div,Min,Max,Update}(v, i, u)`: the variable's new value (see the
/// module's doc), from its read.
fn scatter_update(e: &mut Emitter, read: &str, data: &[String], dtype: u64, tindices: u64) -> Option<String> {
    let (indices, updates) = (data[1].as_str(), data[2].as_str());
    // The updates as full rows: a scalar update stands for every named row, which the TensorScatter
    // ops do not take. BroadcastTo moves the values as they are, in any dtype.
    let rows = e.rows(read, indices, dtype, tindices);
    let shape_attrs = vec![("T", type_attr(dtype)), ("out_type", type_attr(DT_INT32))];
    let rows_shape = e.push("wgpu_rows_shape", "Shape", &[&rows], shape_attrs);
    let broadcast_attrs = vec![("T", type_attr(dtype)), ("Tidx", type_attr(DT_INT32))];
    let full = e.push("wgpu_updates", "BroadcastTo", &[updates, &rows_shape], broadcast_attrs);
    let combine = e.node.op.strip_prefix("ResourceScatter")?;
    if combine == "Div" && INTEGER_TYPES.contains(&dtype) {
        // Integer quotients truncate at each divisor, so dividing by the divisors' product (which
        // may wrap) would differ: our TensorScatterUpdate divides by each in turn when told to.
        let tuples = e.tuples(indices, tindices, read);
        let mut attrs = vec![("T", type_attr(dtype)), ("Tindices", type_attr(tindices))];
        attrs.push((scatter::COMBINE_ATTR, string_attr("Div")));
        return Some(e.push("wgpu_scattered", "TensorScatterUpdate", &[read, &tuples, &full], attrs));
    }
    if let Some(math) = match combine {
        "Mul" => Some("Mul"),
        "Div" => Some("RealDiv"),
        _ => None,
    } {
        // The product of each row's updates (1 where none lands), then one multiply or divide.
        let shape =
            e.push("wgpu_shape", "Shape", &[read], vec![("T", type_attr(dtype)), ("out_type", type_attr(DT_INT32))]);
        let begin = e.int32_const("wgpu_begin", int32_tensor(&[0], Some(&[1])), read);
        let end = e.int32_const("wgpu_end", int32_tensor(&[1], Some(&[1])), read);
        let strides = e.int32_const("wgpu_strides", int32_tensor(&[1], Some(&[1])), read);
        let mut slice_attrs = vec![("T", type_attr(DT_INT32)), ("Index", type_attr(DT_INT32))];
        for mask in ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask"] {
            slice_attrs.push((mask, int_attr(0)));
        }
        slice_attrs.push(("shrink_axis_mask", int_attr(1)));
        let count = e.push("wgpu_row_count", "StridedSlice", &[&shape, &begin, &end, &strides], slice_attrs);
        let attrs =
            vec![("T", type_attr(dtype)), ("Tindices", type_attr(tindices)), ("Tnumsegments", type_attr(DT_INT32))];
        let factors = e.push("wgpu_factors", "UnsortedSegmentProd", &[&full, indices, &count], attrs);
        return Some(e.push("wgpu_scattered", math, &[read, &factors], vec![("T", type_attr(dtype))]));
    }
    let tensor_op = format!("TensorScatter{combine}");
    let tuples = e.tuples(indices, tindices, read);
    let attrs = vec![("T", type_attr(dtype)), ("Tindices", type_attr(tindices))];
    Some(e.push("wgpu_scattered", &tensor_op, &[read, &tuples, &full], attrs))
}

/// The nodes that replace `node`, or None when it stays as it is.
fn replace(node: &Node, names: &mut Names) -> Option<Vec<Node>> {
    if !on_wgpu(&node.device) {
        return None;
    }
    let (data, control) = node.split_inputs();
    let dtype = node.attr_value("dtype").or_else(|| node.attr_value("T"))?.varint(ATTR_TYPE)?;
    let op = node.op.as_str();
    if Optimizer::from_op(op, |_, default| default).is_some() {
        return optimizer_update(node, names, dtype, &data, control);
    }
    let tindices = node.attr_value("Tindices").and_then(|v| v.varint(ATTR_TYPE));
    let mut e = Emitter { node, names, nodes: Vec::new() };
    // The read carries the node's control inputs, so it is ordered after what the op was.
    let read = e.read(data.first()?, dtype, &control);
    match op {
        "ResourceGather" if data.len() == 2 => {
            let batch_dims = node.attr_value("batch_dims").and_then(|v| v.varint(ATTR_I)).unwrap_or(0) as i64;
            let axis = e.int32_const("wgpu_axis", int32_scalar_tensor(i32::try_from(batch_dims).ok()?), &read);
            let attrs = vec![
                ("Tparams", type_attr(dtype)),
                ("Tindices", type_attr(tindices?)),
                ("Taxis", type_attr(DT_INT32)),
                ("batch_dims", int_attr(batch_dims)),
            ];
            Some(e.finish("GatherV2", &[&read, &data[1], &axis], attrs))
        }
        "ResourceGatherNd" if data.len() == 2 => {
            let attrs = vec![("Tparams", type_attr(dtype)), ("Tindices", type_attr(tindices?))];
            Some(e.finish("GatherNd", &[&read, &data[1]], attrs))
        }
        "AssignAddVariableOp" | "AssignSubVariableOp" if data.len() == 2 => {
            // AssignAdd/AssignSub refuse a value of another shape; AddV2/Sub would broadcast it
            // (the assign's validate_shape keeps the check).
            let math = if op == "AssignAddVariableOp" { "AddV2" } else { "Sub" };
            let update = e.push("wgpu_update", math, &[&read, &data[1]], vec![("T", type_attr(dtype))]);
            Some(e.finish("AssignVariableOp", &[&data[0], &update], assign_attrs(dtype)))
        }
        _ if op.starts_with("ResourceScatterNd") && data.len() == 3 => {
            let tensor_op = op.replace("ResourceScatterNd", "TensorScatter");
            let mut attrs = vec![("T", type_attr(dtype)), ("Tindices", type_attr(tindices?))];
            if let Some(policy) = node.attr_value("bad_indices_policy") {
                attrs.push(("bad_indices_policy", policy.clone()));
            }
            let scattered = e.push("wgpu_scattered", &tensor_op, &[&read, &data[1], &data[2]], attrs);
            Some(e.finish("AssignVariableOp", &[&data[0], &scattered], assign_attrs(dtype)))
        }
        _ if op.starts_with("ResourceScatter") && data.len() == 3 => {
            let scattered = scatter_update(&mut e, &read, &data, dtype, tindices?)?;
            Some(e.finish("AssignVariableOp", &[&data[0], &scattered], assign_attrs(dtype)))
        }
        _ => None,
    }
}

/// Rewrites a serialized `GraphDef`. Returns None when no node needed it.
pub fn rewrite_graph(graph: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut message = Message::parse(graph)?;
    let mut nodes = Vec::new();
    for (number, value) in &message.fields {
        if let (GRAPH_NODE, Value::Bytes(bytes)) = (*number, value) {
            nodes.push(Node::parse(bytes)?);
        }
    }
    if !nodes.iter().any(|n| is_rewritten(&n.op) && on_wgpu(&n.device)) {
        return Ok(None);
    }
    let mut names = Names(nodes.iter().map(|n| n.name.clone()).collect());
    let mut fields = Vec::with_capacity(message.fields.len());
    let mut rewritten = 0;
    for (number, value) in std::mem::take(&mut message.fields) {
        let Value::Bytes(bytes) = &value else {
            fields.push((number, value));
            continue;
        };
        if number != GRAPH_NODE {
            fields.push((number, value));
            continue;
        }
        let node = Node::parse(bytes)?;
        match is_rewritten(&node.op).then(|| replace(&node, &mut names)).flatten() {
            Some(replacements) => {
                log::debug!("tensorflow-wgpu: rewrote {} ({}) for the WGPU device", node.name, node.op);
                rewritten += 1;
                fields.extend(replacements.iter().map(|n| (GRAPH_NODE, Value::Bytes(n.encode()))));
            }
            None => fields.push((number, value)),
        }
    }
    message.fields = fields;
    Ok((rewritten > 0).then(|| message.encode()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPU: &str = "/job:localhost/replica:0/task:0/device:GPU:0";

    fn graph(nodes: &[Node]) -> Vec<u8> {
        let mut message = Message::default();
        for n in nodes {
            message = message.with_bytes(GRAPH_NODE, n.encode());
        }
        // versions { producer: 1 } must survive untouched.
        message.with_bytes(4, Message::default().with_varint(1, 1).encode()).encode()
    }

    fn nodes_of(bytes: &[u8]) -> Vec<Node> {
        Message::parse(bytes).unwrap().bytes(GRAPH_NODE).map(|b| Node::parse(b).unwrap()).collect()
    }

    fn gather(device: &str) -> Node {
        Node::new("emb".into(), "ResourceGather", vec!["v".into(), "ids".into(), "^init".into()], device)
            .attr("dtype", type_attr(1))
            .attr("Tindices", type_attr(9))
            .attr("batch_dims", int_attr(0))
    }

    #[test]
    fn resource_gather_becomes_read_and_gather() {
        let out = rewrite_graph(&graph(&[gather(GPU)])).unwrap().expect("rewritten");
        let nodes = nodes_of(&out);
        let ops: Vec<&str> = nodes.iter().map(|n| n.op.as_str()).collect();
        assert_eq!(ops, ["ReadVariableOp", "Const", "GatherV2"]);
        assert_eq!(nodes[0].inputs, ["v", "^init"]);
        assert_eq!(nodes[1].inputs, ["^emb/wgpu_read"]);
        assert_eq!(nodes[2].name, "emb");
        assert_eq!(nodes[2].inputs, ["emb/wgpu_read", "ids", "emb/wgpu_axis"]);
        assert_eq!(nodes[2].attr_value("Tindices").unwrap().varint(ATTR_TYPE), Some(9));
        assert!(nodes.iter().all(|n| n.device == GPU));
        assert_eq!(Message::parse(&out).unwrap().bytes(4).count(), 1, "versions kept");
    }

    #[test]
    fn assign_add_becomes_read_add_assign() {
        let node = Node::new("upd".into(), "AssignSubVariableOp", vec!["v".into(), "x".into()], GPU)
            .attr("dtype", type_attr(1));
        let nodes = nodes_of(&rewrite_graph(&graph(&[node])).unwrap().unwrap());
        let ops: Vec<&str> = nodes.iter().map(|n| n.op.as_str()).collect();
        assert_eq!(ops, ["ReadVariableOp", "Sub", "AssignVariableOp"]);
        assert_eq!(nodes[1].inputs, ["upd/wgpu_read", "x"]);
        assert_eq!(nodes[2].inputs, ["v", "upd/wgpu_update"]);
        assert_eq!(nodes[2].name, "upd");
    }

    #[test]
    fn gradient_descent_becomes_read_mul_sub_assign() {
        let node =
            Node::new("sgd".into(), "ResourceApplyGradientDescent", vec!["v".into(), "lr".into(), "g".into()], GPU)
                .attr("T", type_attr(1));
        let nodes = nodes_of(&rewrite_graph(&graph(&[node])).unwrap().unwrap());
        let ops: Vec<&str> = nodes.iter().map(|n| n.op.as_str()).collect();
        assert_eq!(ops, ["ReadVariableOp", "Mul", "Sub", "AssignVariableOp", "NoOp"]);
        assert_eq!(nodes[1].inputs, ["lr", "g"]);
        assert_eq!(nodes[2].inputs, ["sgd/wgpu_read", "sgd/wgpu_mul"]);
        assert_eq!(nodes[3].inputs, ["v", "sgd/wgpu_sub"]);
        assert_eq!(
            (nodes[4].name.as_str(), nodes[4].inputs.as_slice()),
            ("sgd", ["^sgd/wgpu_assign".to_string()].as_slice())
        );
    }

    #[test]
    fn adam_becomes_reads_math_assigns_and_a_noop() {
        let inputs = ["var", "m", "v", "b1p", "b2p", "lr", "b1", "b2", "eps", "g", "^dep"];
        let node = Node::new("adam".into(), "ResourceApplyAdam", inputs.iter().map(|s| s.to_string()).collect(), GPU)
            .attr("T", type_attr(1));
        let nodes = nodes_of(&rewrite_graph(&graph(&[node])).unwrap().unwrap());
        let reads: Vec<&Vec<String>> = nodes.iter().filter(|n| n.op == "ReadVariableOp").map(|n| &n.inputs).collect();
        assert_eq!(
            reads,
            [
                &vec!["var".to_string(), "^dep".into()],
                &vec!["m".to_string(), "^dep".into()],
                &vec!["v".to_string(), "^dep".into()]
            ]
        );
        let assigned: Vec<&str> =
            nodes.iter().filter(|n| n.op == "AssignVariableOp").map(|n| n.inputs[0].as_str()).collect();
        assert_eq!(assigned, ["var", "m", "v"]);
        let last = nodes.last().unwrap();
        assert_eq!((last.name.as_str(), last.op.as_str()), ("adam", "NoOp"));
        assert_eq!(last.inputs.len(), 3);
        assert!(last.inputs.iter().all(|i| i.starts_with("^adam/wgpu_assign")));
        // Every input of every new node is an original input or a node made here.
        let made: HashSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        for n in &nodes {
            for i in &n.inputs {
                let i = i.trim_start_matches('^');
                assert!(made.contains(i) || inputs.contains(&i) || inputs.contains(&format!("^{i}").as_str()), "{i}");
            }
        }
    }

    #[test]
    fn momentum_updates_var_and_accum() {
        let inputs = ["var", "accum", "lr", "g", "mom"];
        for op in ["ResourceApplyMomentum", "ResourceApplyKerasMomentum"] {
            let node = Node::new("mom_step".into(), op, inputs.iter().map(|s| s.to_string()).collect(), GPU)
                .attr("T", type_attr(1))
                .attr("use_nesterov", bool_attr(true));
            let nodes = nodes_of(&rewrite_graph(&graph(&[node])).unwrap().unwrap());
            let assigned: Vec<&str> =
                nodes.iter().filter(|n| n.op == "AssignVariableOp").map(|n| n.inputs[0].as_str()).collect();
            assert_eq!(assigned, ["var", "accum"], "{op}");
            assert_eq!(nodes.last().unwrap().op, "NoOp");
        }
    }

    #[test]
    fn adagrad_without_slot_updates_assigns_only_the_variable() {
        let inputs = ["var", "accum", "lr", "g"].map(String::from).to_vec();
        for (update_slots, assigned) in [(true, vec!["var", "accum"]), (false, vec!["var"])] {
            let node = Node::new("ada".into(), "ResourceApplyAdagrad", inputs.clone(), GPU)
                .attr("T", type_attr(1))
                .attr("update_slots", bool_attr(update_slots));
            let nodes = nodes_of(&rewrite_graph(&graph(&[node])).unwrap().unwrap());
            let got: Vec<&str> =
                nodes.iter().filter(|n| n.op == "AssignVariableOp").map(|n| n.inputs[0].as_str()).collect();
            assert_eq!(got, assigned);
        }
    }

    fn ops_of(nodes: &[Node]) -> Vec<&str> {
        nodes.iter().map(|n| n.op.as_str()).collect()
    }

    fn rewritten(node: Node) -> Vec<Node> {
        nodes_of(&rewrite_graph(&graph(&[node])).unwrap().expect("rewritten"))
    }

    fn scatter(op: &str) -> Node {
        Node::new("upd".into(), op, vec!["v".into(), "i".into(), "u".into()], GPU)
            .attr("dtype", type_attr(1))
            .attr("T", type_attr(1))
            .attr("Tindices", type_attr(3))
    }

    #[test]
    fn resource_scatters_become_tensor_scatters_of_full_rows() {
        for (op, tensor_op) in [
            ("ResourceScatterAdd", "TensorScatterAdd"),
            ("ResourceScatterSub", "TensorScatterSub"),
            ("ResourceScatterMin", "TensorScatterMin"),
            ("ResourceScatterMax", "TensorScatterMax"),
            ("ResourceScatterUpdate", "TensorScatterUpdate"),
        ] {
            let nodes = rewritten(scatter(op));
            let ops = ops_of(&nodes);
            assert_eq!(
                ops,
                [
                    "ReadVariableOp",
                    "Const",
                    "GatherV2",
                    "Shape",
                    "BroadcastTo",
                    "Const",
                    "ExpandDims",
                    tensor_op,
                    "AssignVariableOp"
                ],
                "{op}"
            );
            let scattered = &nodes[7];
            assert_eq!(scattered.inputs, ["upd/wgpu_read", "upd/wgpu_index_tuples", "upd/wgpu_updates"]);
            assert_eq!(nodes[4].inputs, ["u", "upd/wgpu_rows_shape"]);
            let last = nodes.last().unwrap();
            assert_eq!(
                (last.name.as_str(), last.inputs.as_slice()),
                ("upd", ["v".to_string(), scattered.name.clone()].as_slice())
            );
        }
    }

    #[test]
    fn resource_scatter_mul_and_div_use_each_rows_product_of_updates() {
        for (op, math) in [("ResourceScatterMul", "Mul"), ("ResourceScatterDiv", "RealDiv")] {
            let nodes = rewritten(scatter(op));
            let product = nodes.iter().find(|n| n.op == "UnsortedSegmentProd").expect("a segment product");
            assert_eq!(product.inputs, ["upd/wgpu_updates", "i", "upd/wgpu_row_count"]);
            let count = nodes.iter().find(|n| n.name == "upd/wgpu_row_count").unwrap();
            assert_eq!((count.op.as_str(), count.inputs[0].as_str()), ("StridedSlice", "upd/wgpu_shape"));
            let result = nodes.iter().find(|n| n.name == "upd/wgpu_scattered").unwrap();
            assert_eq!(
                (result.op.as_str(), result.inputs.as_slice()),
                (math, ["upd/wgpu_read".to_string(), product.name.clone()].as_slice())
            );
        }
    }

    #[test]
    fn integer_resource_scatter_div_divides_by_each_update_in_turn() {
        let node = Node::new("upd".into(), "ResourceScatterDiv", vec!["v".into(), "i".into(), "u".into()], GPU)
            .attr("dtype", type_attr(DT_INT64))
            .attr("Tindices", type_attr(DT_INT32));
        let nodes = rewritten(node);
        assert!(nodes.iter().all(|n| n.op != "UnsortedSegmentProd"));
        let result = nodes.iter().find(|n| n.name == "upd/wgpu_scattered").unwrap();
        assert_eq!(result.op, "TensorScatterUpdate");
        assert_eq!(result.inputs, ["upd/wgpu_read", "upd/wgpu_index_tuples", "upd/wgpu_updates"]);
        let combine = result.attr_value(scatter::COMBINE_ATTR).expect("the combine attribute");
        assert_eq!(combine.bytes(ATTR_S).collect::<Vec<_>>(), [b"Div".as_slice()]);
    }

    #[test]
    fn scatter_nd_ops_and_gather_nd_map_to_their_tensor_ops() {
        let nodes = rewritten(
            scatter("ResourceScatterNdUpdate").attr("bad_indices_policy", Message::default().with_bytes(2, "IGNORE")),
        );
        assert_eq!(ops_of(&nodes), ["ReadVariableOp", "TensorScatterUpdate", "AssignVariableOp"]);
        assert_eq!(nodes[1].inputs, ["upd/wgpu_read", "i", "u"]);
        assert!(nodes[1].attr_value("bad_indices_policy").is_some());
        let gather = Node::new("g".into(), "ResourceGatherNd", vec!["v".into(), "i".into()], GPU)
            .attr("dtype", type_attr(1))
            .attr("Tindices", type_attr(9));
        let nodes = rewritten(gather);
        assert_eq!(ops_of(&nodes), ["ReadVariableOp", "GatherNd"]);
        assert_eq!(
            (nodes[1].name.as_str(), nodes[1].inputs.as_slice()),
            ("g", ["g/wgpu_read".to_string(), "i".into()].as_slice())
        );
    }

    #[test]
    fn sparse_apply_updates_the_named_rows_of_each_variable() {
        let inputs = ["var", "accum", "lr", "g", "ids", "mom"].map(String::from).to_vec();
        let node = Node::new("sparse".into(), "ResourceSparseApplyMomentum", inputs, GPU)
            .attr("T", type_attr(1))
            .attr("Tindices", type_attr(3));
        let nodes = rewritten(node);
        let gathers: Vec<&Vec<String>> = nodes.iter().filter(|n| n.op == "GatherV2").map(|n| &n.inputs).collect();
        assert_eq!(gathers.len(), 2);
        assert!(gathers.iter().all(|i| i[1] == "ids"));
        // The formula never sees the indices; the gradient is the rows' own.
        assert!(nodes
            .iter()
            .filter(|n| ["Mul", "AddV2", "Sub"].contains(&n.op.as_str()))
            .all(|n| !n.inputs.contains(&"ids".to_string())));
        let scatters: Vec<&Node> = nodes.iter().filter(|n| n.op == "TensorScatterUpdate").collect();
        assert_eq!(scatters.len(), 2);
        assert_eq!(scatters[0].inputs[0], "sparse/wgpu_read");
        let assigned: Vec<&str> =
            nodes.iter().filter(|n| n.op == "AssignVariableOp").map(|n| n.inputs[0].as_str()).collect();
        assert_eq!(assigned, ["var", "accum"]);
        assert_eq!(nodes.last().unwrap().op, "NoOp");
    }

    #[test]
    fn other_devices_and_ops_are_left_alone() {
        let cpu = gather("/job:localhost/replica:0/task:0/device:CPU:0");
        let other = Node::new("a".into(), "AddV2", vec!["x".into(), "y".into()], GPU);
        assert_eq!(rewrite_graph(&graph(&[cpu, other])).unwrap(), None);
    }

    #[test]
    fn fresh_names_avoid_existing_ones() {
        let taken = Node::new("emb/wgpu_read".into(), "NoOp", vec![], GPU);
        let nodes = nodes_of(&rewrite_graph(&graph(&[taken, gather(GPU)])).unwrap().unwrap());
        assert_eq!(nodes[1].name, "emb/wgpu_read_1");
        assert_eq!(nodes[3].inputs[0], "emb/wgpu_read_1");
    }
}
