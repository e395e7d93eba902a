//! Graph rewrites for the Grappler plugin, on serialized `GraphDef`s.
//!
//! Some ops on resource variables need the variable's tensor inside the kernel, which TF's kernel
//! C API reaches only through `kernels_experimental.h`, and TF 2.20+ does not export it. In a graph
//! they are rewritten, on the WGPU device, into ops our kernels and TF core's DEVICE_DEFAULT
//! kernels do run:
//! - `ResourceGather(v, i)` → `GatherV2(ReadVariableOp(v), i, axis = batch_dims)`;
//! - `ResourceScatterAdd(v, i, u)` → `AssignVariableOp(v, TensorScatterAdd(ReadVariableOp(v),
//!   ExpandDims(i, -1), 0 + u))`, and `ResourceScatterSub` likewise with `0 - u` (the zeros shaped
//!   like the rows `i` names, so that a scalar `u` serves every row);
//! - `AssignAddVariableOp(v, x)` → `AssignVariableOp(v, AddV2(ReadVariableOp(v), x))`, and
//!   `AssignSubVariableOp` likewise with `Sub`;
//! - the TF1 optimizers' `ResourceApplyGradientDescent`, `ResourceApplyMomentum`,
//!   `ResourceApplyKerasMomentum`, `ResourceApplyAdam`, `ResourceApplyRMSProp` and
//!   `ResourceApplyAdagrad` → reads of their variables, TF-CPU's update formulas as element-wise ops
//!   (`crate::optimizer`; for gradient descent `Sub(ReadVariableOp(v), Mul(alpha, delta))`), and
//!   one assign per variable, gathered under a `NoOp`.
//!
//! The rewritten op keeps its node name, so fetches, outputs and control edges stay valid.

pub mod proto;

use std::collections::HashSet;

use crate::error::Result;
use crate::optimizer::{Arithmetic, Optimizer};
use proto::{Message, Value};

const GRAPH_NODE: u32 = 1;
const NODE_NAME: u32 = 1;
const NODE_OP: u32 = 2;
const NODE_INPUT: u32 = 3;
const NODE_DEVICE: u32 = 4;
const NODE_ATTR: u32 = 5;
const ATTR_I: u32 = 3;
const ATTR_B: u32 = 5;
const ATTR_TYPE: u32 = 6;
const ATTR_TENSOR: u32 = 8;
const DT_INT32: u64 = 3;

/// The ops `rewrite_graph` replaces when they are placed on the WGPU device.
pub const REWRITTEN_OPS: [&str; 11] = [
    "ResourceGather",
    "ResourceScatterAdd",
    "ResourceScatterSub",
    "AssignAddVariableOp",
    "AssignSubVariableOp",
    "ResourceApplyGradientDescent",
    "ResourceApplyMomentum",
    "ResourceApplyKerasMomentum",
    "ResourceApplyAdam",
    "ResourceApplyRMSProp",
    "ResourceApplyAdagrad",
];

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

fn bool_attr(value: bool) -> Message {
    Message::default().with_varint(ATTR_B, u64::from(value))
}

/// A scalar int32 `TensorProto` (dtype 1, tensor_shape 2 with no dims, int_val 7).
fn int32_scalar_tensor(value: i32) -> Message {
    let tensor =
        Message::default().with_varint(1, DT_INT32).with_bytes(2, Vec::new()).with_varint(7, value as i64 as u64);
    Message::default().with_bytes(ATTR_TENSOR, tensor.encode())
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

/// Emits the element-wise nodes of an optimizer update in place of `node`.
struct Update<'a> {
    node: &'a Node,
    names: &'a mut Names,
    dtype: u64,
    control: Vec<String>,
    nodes: Vec<Node>,
    assigns: Vec<String>,
}

impl Update<'_> {
    /// A new node `op(inputs)` of the update's dtype; returns its name.
    fn op(&mut self, suffix: &str, op: &str, inputs: &[&str]) -> String {
        let name = self.names.fresh(&self.node.name, suffix);
        let inputs = inputs.iter().map(|i| i.to_string()).collect();
        self.nodes.push(Node::new(name.clone(), op, inputs, &self.node.device).attr("T", type_attr(self.dtype)));
        name
    }

    /// Reads variable `resource`, after the node's control inputs.
    fn read(&mut self, resource: &str) -> String {
        let name = self.names.fresh(&self.node.name, "wgpu_read");
        let inputs = std::iter::once(resource.to_string()).chain(self.control.iter().cloned()).collect();
        self.nodes.push(
            Node::new(name.clone(), "ReadVariableOp", inputs, &self.node.device).attr("dtype", type_attr(self.dtype)),
        );
        name
    }

    fn assign(&mut self, resource: &str, value: &str) {
        let name = self.names.fresh(&self.node.name, "wgpu_assign");
        self.nodes.push(
            Node::new(
                name.clone(),
                "AssignVariableOp",
                vec![resource.to_string(), value.to_string()],
                &self.node.device,
            )
            .attr("dtype", type_attr(self.dtype))
            // The kernels refuse a gradient of another shape than the variable; the element-wise
            // formulas would broadcast it, and the assign of the result keeps that check.
            .attr("validate_shape", bool_attr(true)),
        );
        self.assigns.push(format!("^{name}"));
    }

    /// The nodes, ending in a `NoOp` under the op's name that waits for every assign.
    fn finish(mut self) -> Vec<Node> {
        self.nodes.push(Node::new(self.node.name.clone(), "NoOp", self.assigns, &self.node.device));
        self.nodes
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
    fn ones_like(&mut self, a: &String) -> Result<String> {
        Ok(self.op("wgpu_one", "OnesLike", &[a]))
    }
}

/// A fused optimizer op as reads of its variables, its update formula as element-wise nodes
/// (`crate::optimizer`), and one assign per updated variable.
fn optimizer_update(
    node: &Node,
    names: &mut Names,
    dtype: u64,
    data: &[String],
    control: Vec<String>,
) -> Option<Vec<Node>> {
    let flag = |name: &str, default: u64| node.attr_value(name).and_then(|v| v.varint(ATTR_B)).unwrap_or(default) != 0;
    let optimizer = Optimizer::from_op(&node.op, flag("use_nesterov", 0), flag("update_slots", 1))?;
    let (variables, others) = optimizer.arity();
    if data.len() != variables + others {
        return None;
    }
    let mut u = Update { node, names, dtype, control, nodes: Vec::new(), assigns: Vec::new() };
    let current: Vec<String> = data[..variables].iter().map(|v| u.read(v)).collect();
    let updated = optimizer.update(&mut u, &current, &data[variables..]).ok()?;
    for (resource, value) in data.iter().zip(updated) {
        if let Some(value) = value {
            u.assign(resource, &value);
        }
    }
    Some(u.finish())
}

/// The nodes that replace `node`, or None when it stays as it is.
fn replace(node: &Node, names: &mut Names) -> Option<Vec<Node>> {
    if !on_wgpu(&node.device) {
        return None;
    }
    let (data, control) = node.split_inputs();
    let dtype = node.attr_value("dtype").or_else(|| node.attr_value("T"))?.varint(ATTR_TYPE)?;
    if node.op.starts_with("ResourceApply") {
        return optimizer_update(node, names, dtype, &data, control);
    }
    let device = node.device.as_str();
    // The read carries the node's control inputs, so it is ordered after what the op was.
    let read_name = names.fresh(&node.name, "wgpu_read");
    let read_inputs = std::iter::once(data.first()?.clone()).chain(control).collect();
    let read = Node::new(read_name.clone(), "ReadVariableOp", read_inputs, device).attr("dtype", type_attr(dtype));
    match node.op.as_str() {
        "ResourceGather" if data.len() == 2 => {
            let batch_dims = node.attr_value("batch_dims").and_then(|v| v.varint(ATTR_I)).unwrap_or(0) as i64;
            let tindices = node.attr_value("Tindices")?.varint(ATTR_TYPE)?;
            // A control edge from the read keeps the constant in the op's frame (inside loops).
            let axis_name = names.fresh(&node.name, "wgpu_axis");
            let axis = Node::new(axis_name.clone(), "Const", vec![format!("^{read_name}")], device)
                .attr("dtype", type_attr(DT_INT32))
                .attr("value", int32_scalar_tensor(i32::try_from(batch_dims).ok()?));
            let gather = Node::new(node.name.clone(), "GatherV2", vec![read_name, data[1].clone(), axis_name], device)
                .attr("Tparams", type_attr(dtype))
                .attr("Tindices", type_attr(tindices))
                .attr("Taxis", type_attr(DT_INT32))
                .attr("batch_dims", int_attr(batch_dims));
            Some(vec![read, axis, gather])
        }
        "ResourceScatterAdd" | "ResourceScatterSub" if data.len() == 3 => {
            // v[i] += u as AssignVariableOp(v, TensorScatterAdd(v, ExpandDims(i, -1), u)), which drops
            // out-of-range indices as TF-GPU does; Sub adds the negated updates.
            // (Out-of-range indices gather zeros for the update's shape, as on TF-GPU.)
            let tindices = node.attr_value("Tindices")?.varint(ATTR_TYPE)?;
            let axis_name = names.fresh(&node.name, "wgpu_last_axis");
            let axis = Node::new(axis_name.clone(), "Const", vec![format!("^{read_name}")], device)
                .attr("dtype", type_attr(DT_INT32))
                .attr("value", int32_scalar_tensor(-1));
            let tuples_name = names.fresh(&node.name, "wgpu_index_tuples");
            let tuples = Node::new(tuples_name.clone(), "ExpandDims", vec![data[1].clone(), axis_name], device)
                .attr("T", type_attr(tindices))
                .attr("Tdim", type_attr(DT_INT32));
            // The updates as full rows (a scalar update stands for every named row, which
            // TensorScatterAdd does not take): 0 ± u, shaped like the rows the indices name.
            let first_axis_name = names.fresh(&node.name, "wgpu_first_axis");
            let first_axis = Node::new(first_axis_name.clone(), "Const", vec![format!("^{read_name}")], device)
                .attr("dtype", type_attr(DT_INT32))
                .attr("value", int32_scalar_tensor(0));
            let rows_name = names.fresh(&node.name, "wgpu_rows");
            let rows = Node::new(
                rows_name.clone(),
                "GatherV2",
                vec![read_name.clone(), data[1].clone(), first_axis_name],
                device,
            )
            .attr("Tparams", type_attr(dtype))
            .attr("Tindices", type_attr(tindices))
            .attr("Taxis", type_attr(DT_INT32))
            .attr("batch_dims", int_attr(0));
            let zeros_name = names.fresh(&node.name, "wgpu_zero_rows");
            let zeros = Node::new(zeros_name.clone(), "ZerosLike", vec![rows_name], device).attr("T", type_attr(dtype));
            let math = if node.op == "ResourceScatterAdd" { "AddV2" } else { "Sub" };
            let updates = names.fresh(&node.name, "wgpu_updates");
            let full =
                Node::new(updates.clone(), math, vec![zeros_name, data[2].clone()], device).attr("T", type_attr(dtype));
            let mut nodes = vec![read, axis, tuples, first_axis, rows, zeros, full];
            let sum_name = names.fresh(&node.name, "wgpu_scattered");
            nodes.push(
                Node::new(sum_name.clone(), "TensorScatterAdd", vec![read_name, tuples_name, updates], device)
                    .attr("T", type_attr(dtype))
                    .attr("Tindices", type_attr(tindices)),
            );
            nodes.push(
                Node::new(node.name.clone(), "AssignVariableOp", vec![data[0].clone(), sum_name], device)
                    .attr("dtype", type_attr(dtype))
                    .attr("validate_shape", bool_attr(true)),
            );
            Some(nodes)
        }
        "AssignAddVariableOp" | "AssignSubVariableOp" if data.len() == 2 => {
            let math = if node.op == "AssignAddVariableOp" { "AddV2" } else { "Sub" };
            let update_name = names.fresh(&node.name, "wgpu_update");
            let update = Node::new(update_name.clone(), math, vec![read_name, data[1].clone()], device)
                .attr("T", type_attr(dtype));
            let assign = Node::new(node.name.clone(), "AssignVariableOp", vec![data[0].clone(), update_name], device)
                .attr("dtype", type_attr(dtype))
                // AssignAdd/AssignSub refuse a value of another shape; AddV2/Sub would broadcast it.
                .attr("validate_shape", bool_attr(true));
            Some(vec![read, update, assign])
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
    if !nodes.iter().any(|n| REWRITTEN_OPS.contains(&n.op.as_str()) && on_wgpu(&n.device)) {
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
        match REWRITTEN_OPS.contains(&node.op.as_str()).then(|| replace(&node, &mut names)).flatten() {
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
