//! Einsum, as TF's op defines it: one or two operands, ellipses, repeated labels (diagonals) and
//! labels summed away. Each operand is first brought to distinct labels that are either kept or
//! contracted with the other operand (diagonals through a strided view, lone labels summed,
//! broadcast ellipsis dimensions expanded); two operands then transpose to [batch, free,
//! contracted] order for one batched matmul, and a transpose gives the output order.

use crate::error::{Error, Result};

use super::index::{self, permute_any_size, permuted_shape};
use super::slice::{self, contiguous_strides, StridedView};
use super::{matmul, reduce, KernelContext, KernelInstance, TensorRef};

/// An equation's labels: each operand's and the output's, ellipses expanded into labels of their
/// own (`ellipsis_label`s, right-aligned across operands as broadcasting aligns them).
#[derive(Debug, PartialEq, Eq)]
pub struct Labels {
    pub inputs: Vec<Vec<char>>,
    pub output: Vec<char>,
}

/// The label of the `k`-th ellipsis dimension: a private-use character, so that no label of the
/// equation can collide with it.
fn ellipsis_label(k: usize) -> char {
    char::from_u32(ELLIPSIS_LABELS + k as u32).unwrap_or('\u{E000}')
}

const ELLIPSIS_LABELS: u32 = 0xE000;

/// Whether `c` labels an ellipsis dimension (which broadcasts: size 1 against any size).
fn is_ellipsis_label(c: char) -> bool {
    (ELLIPSIS_LABELS..ELLIPSIS_LABELS + 16).contains(&u32::from(c))
}

/// The labels of `equation` for operands of the given ranks.
pub fn parse(equation: &str, ranks: &[usize]) -> Result<Labels> {
    let invalid = |why: &str| Error::invalid_argument(format!("Einsum equation {equation:?}: {why}"));
    // TF's op takes every other character as a label, spaces and digits too (tf.einsum strips
    // spaces before it builds the op).
    // TF's op takes explicit outputs only (tf.einsum writes implicit ones out).
    let (inputs, output) = match equation.split_once("->") {
        Some((i, o)) if !o.contains("->") => (i.to_string(), o.to_string()),
        _ => return Err(Error::invalid_argument(format!("Expecting exactly one '->' in einsum equation: {equation}"))),
    };
    let operands: Vec<&str> = inputs.split(',').collect();
    if operands.len() != ranks.len() {
        return Err(invalid(&format!("{} input subscripts for {} operands", operands.len(), ranks.len())));
    }
    // Each operand: its explicit labels before and after an ellipsis, and the ellipsis's rank.
    let mut parts = Vec::new();
    let mut ellipsis_rank = 0;
    for (subscript, &rank) in operands.iter().zip(ranks) {
        let (before, after, has_ellipsis) = split_ellipsis(subscript).ok_or_else(|| invalid("bad ellipsis"))?;
        let explicit = before.len() + after.len();
        let dots = match (has_ellipsis, rank.checked_sub(explicit)) {
            (true, Some(d)) => d,
            (false, Some(0)) => 0,
            _ => return Err(invalid(&format!("subscript {subscript:?} does not match an operand of rank {rank}"))),
        };
        ellipsis_rank = ellipsis_rank.max(dots);
        parts.push((before, after, dots));
    }
    if ellipsis_rank > 10 {
        return Err(invalid("more than 10 ellipsis dimensions"));
    }
    let ellipsis = |dots: usize| -> Vec<char> { (ellipsis_rank - dots..ellipsis_rank).map(ellipsis_label).collect() };
    let mut labels_in = Vec::new();
    for (before, after, dots) in &parts {
        if before.iter().chain(after).any(|&c| is_ellipsis_label(c)) {
            return Err(invalid("labels must not be private-use characters"));
        }
        labels_in.push([before.clone(), ellipsis(*dots), after.clone()].concat());
    }
    let (before, after, has_ellipsis) = split_ellipsis(&output).ok_or_else(|| invalid("bad ellipsis"))?;
    let dots = if has_ellipsis { ellipsis(ellipsis_rank) } else { Vec::new() };
    let output = [before, dots, after].concat();
    let mut seen = output.clone();
    seen.sort();
    seen.dedup();
    if seen.len() != output.len() {
        return Err(invalid("an output label appears twice"));
    }
    if output.iter().any(|l| !labels_in.iter().any(|i| i.contains(l))) {
        return Err(invalid("an output label appears in no input"));
    }
    Ok(Labels { inputs: labels_in, output })
}

/// A subscript's labels before and after its `...`, and whether it has one.
fn split_ellipsis(subscript: &str) -> Option<(Vec<char>, Vec<char>, bool)> {
    match subscript.split_once("...") {
        Some((before, after)) if !after.contains('.') && !before.contains('.') => {
            Some((before.chars().collect(), after.chars().collect(), true))
        }
        None if !subscript.contains('.') => Some((subscript.chars().collect(), Vec::new(), false)),
        _ => None,
    }
}

/// The plan: permutations of A and B, matmul sizes, and the permutation to the output order.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub a_perm: Vec<usize>,
    pub b_perm: Vec<usize>,
    pub batch: Vec<i64>,
    pub m: i64,
    pub k: i64,
    pub n: i64,
    /// Shape of the matmul result as [batch..., free_a..., free_b...].
    pub product_shape: Vec<i64>,
    /// For each output dim, the product dim it comes from.
    pub out_perm: Vec<usize>,
    pub out_shape: Vec<i64>,
}

/// The matmul plan of two operands with distinct labels, each kept or contracted (`normalize`).
pub fn plan(a: &[char], b: &[char], out: &[char], a_shape: &[i64], b_shape: &[i64]) -> Result<Plan> {
    let size_of = |l: char| -> Result<i64> {
        let sa = a.iter().position(|&x| x == l).map(|i| a_shape[i]);
        let sb = b.iter().position(|&x| x == l).map(|i| b_shape[i]);
        match (sa, sb) {
            (Some(x), Some(y)) if x != y => Err(Error::invalid_argument(format!(
                "Einsum: label {l} has size {x} in one operand and {y} in the other"
            ))),
            (Some(x), _) | (None, Some(x)) => Ok(x),
            (None, None) => Err(Error::invalid_argument(format!("Einsum: output label {l} appears in no input"))),
        }
    };
    let batch: Vec<char> = out.iter().copied().filter(|l| a.contains(l) && b.contains(l)).collect();
    let contract: Vec<char> = a.iter().copied().filter(|l| b.contains(l) && !out.contains(l)).collect();
    let free_a: Vec<char> = a.iter().copied().filter(|l| !b.contains(l)).collect();
    let free_b: Vec<char> = b.iter().copied().filter(|l| !a.contains(l)).collect();
    if free_a.iter().chain(&free_b).any(|l| !out.contains(l)) {
        return Err(Error::internal("Einsum: a lone label was not summed before the matmul"));
    }
    let pos = |labels: &[char], l: char| labels.iter().position(|&x| x == l).unwrap_or(0);
    let a_perm: Vec<usize> = batch.iter().chain(&free_a).chain(&contract).map(|&l| pos(a, l)).collect();
    let b_perm: Vec<usize> = batch.iter().chain(&contract).chain(&free_b).map(|&l| pos(b, l)).collect();
    let product_labels: Vec<char> = batch.iter().chain(&free_a).chain(&free_b).copied().collect();
    let product_shape: Vec<i64> = product_labels.iter().map(|&l| size_of(l)).collect::<Result<_>>()?;
    let out_perm: Vec<usize> = out.iter().map(|&l| pos(&product_labels, l)).collect();
    let out_shape: Vec<i64> = out.iter().map(|&l| size_of(l)).collect::<Result<_>>()?;
    let product = |labels: &[char]| labels.iter().map(|&l| size_of(l)).product::<Result<i64>>();
    Ok(Plan {
        a_perm,
        b_perm,
        batch: batch.iter().map(|&l| size_of(l)).collect::<Result<_>>()?,
        m: product(&free_a)?,
        k: product(&contract)?,
        n: product(&free_b)?,
        product_shape,
        out_perm,
        out_shape,
    })
}

fn is_identity(perm: &[usize]) -> bool {
    perm.iter().enumerate().all(|(i, &p)| i == p)
}

/// `t` permuted by `perm`, in a temporary unless the permutation is the identity.
fn permuted(ctx: &mut dyn KernelContext, t: &TensorRef, perm: &[usize]) -> Result<TensorRef> {
    if is_identity(perm) {
        return Ok(t.clone());
    }
    let temp = ctx.allocate_temp(t.dtype, &permuted_shape(&t.shape, perm))?;
    permute_any_size(ctx, t, &temp, perm)?;
    Ok(temp)
}

/// `t` (labels `labels`) brought to distinct labels, none of them summed away unless `keep` names
/// it: diagonals of repeated labels taken through a strided view, labels outside `keep` summed.
fn normalize(
    ctx: &mut dyn KernelContext,
    t: &TensorRef,
    labels: &[char],
    keep: &[char],
) -> Result<(TensorRef, Vec<char>)> {
    let mut unique: Vec<char> = Vec::new();
    for &l in labels {
        if !unique.contains(&l) {
            unique.push(l);
        }
    }
    let mut t = t.clone();
    if unique.len() != labels.len() {
        // A repeated label reads the diagonal: its dimensions' strides add up.
        let strides = contiguous_strides(&t.shape);
        let mut shape = Vec::new();
        let mut view_strides = Vec::new();
        for &l in &unique {
            let dims: Vec<usize> = (0..labels.len()).filter(|&d| labels[d] == l).collect();
            let size = t.shape[dims[0]];
            if dims.iter().any(|&d| t.shape[d] != size) {
                return Err(Error::invalid_argument(format!(
                    "Einsum: repeated label {l} has sizes {:?}",
                    dims.iter().map(|&d| t.shape[d]).collect::<Vec<_>>()
                )));
            }
            shape.push(size);
            view_strides.push(dims.iter().map(|&d| strides[d]).sum());
        }
        let diagonal = ctx.allocate_temp(t.dtype, &shape)?;
        let view = StridedView { base: 0, shape: shape.clone(), strides: view_strides };
        slice::launch(ctx.stream()?, &t, &view, &diagonal)?;
        t = diagonal;
    }
    let summed: Vec<bool> = unique.iter().map(|l| !keep.contains(l)).collect();
    if summed.iter().any(|&s| s) {
        let shape: Vec<i64> = t.shape.iter().zip(&summed).filter(|(_, &s)| !s).map(|(&d, _)| d).collect();
        let out = ctx.allocate_temp(t.dtype, &shape)?;
        reduce::sum(ctx, &t, &summed, &out)?;
        t = out;
        unique = unique.into_iter().zip(&summed).filter(|(_, &s)| !s).map(|(l, _)| l).collect();
    }
    Ok((t, unique))
}

/// `t` with its dimensions of size 1 broadcast to `sizes` (per label).
fn broadcast(
    ctx: &mut dyn KernelContext,
    t: TensorRef,
    labels: &[char],
    size_of: &dyn Fn(char) -> i64,
) -> Result<TensorRef> {
    let shape: Vec<i64> = labels.iter().map(|&l| size_of(l)).collect();
    if shape == t.shape {
        return Ok(t);
    }
    let full = ctx.allocate_temp(t.dtype, &shape)?;
    index::map(ctx.stream()?, &t, &full, &index::broadcast_dims(&t.shape, &shape)?, None)?;
    Ok(full)
}

pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let operands: Vec<TensorRef> = (0..ctx.num_inputs()).map(|i| ctx.input(i)).collect::<Result<_>>()?;
    if operands.is_empty() || operands.len() > 2 {
        return Err(Error::invalid_argument(format!("Einsum takes 1 or 2 operands, got {}", operands.len())));
    }
    let ranks: Vec<usize> = operands.iter().map(|t| t.shape.len()).collect();
    let labels = parse(kernel.attrs.str("equation")?, &ranks)?;
    // Every label's size; 1 broadcasts against any other (ellipsis dimensions).
    let mut sizes: Vec<(char, i64)> = Vec::new();
    for (t, ls) in operands.iter().zip(&labels.inputs) {
        for (&l, &d) in ls.iter().zip(&t.shape) {
            match sizes.iter_mut().find(|(m, _)| *m == l) {
                Some((_, s)) if *s == d || (d == 1 && is_ellipsis_label(l)) => {}
                Some((_, s)) if *s == 1 && is_ellipsis_label(l) => *s = d,
                Some((_, s)) => {
                    return Err(Error::invalid_argument(format!(
                        "Einsum: label {l} has size {s} in one place and {d} in another"
                    )))
                }
                None => sizes.push((l, d)),
            }
        }
    }
    let size_of = |l: char| sizes.iter().find(|(m, _)| *m == l).map_or(1, |&(_, s)| s);
    let out_shape: Vec<i64> = labels.output.iter().map(|&l| size_of(l)).collect();
    let out = ctx.allocate_output(0, operands[0].dtype, &out_shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    if operands.iter().any(|t| t.num_elements() == 0) {
        // A sum over nothing.
        return ctx.stream()?.fill(out.address, out.byte_len(), 0);
    }
    if operands.len() == 1 {
        let (t, ls) = normalize(ctx, &operands[0], &labels.inputs[0], &labels.output)?;
        let t = broadcast(ctx, t, &ls, &size_of)?;
        let perm: Vec<usize> = labels.output.iter().map(|l| ls.iter().position(|m| m == l).unwrap_or(0)).collect();
        return permute_any_size(ctx, &t, &out, &perm);
    }
    // Labels each operand keeps: the output's and those it shares with the other.
    let keep = |own: usize| -> Vec<char> {
        let other = &labels.inputs[1 - own];
        labels.inputs[own].iter().copied().filter(|l| labels.output.contains(l) || other.contains(l)).collect()
    };
    let (keep_a, keep_b) = (keep(0), keep(1));
    let (a, a_labels) = normalize(ctx, &operands[0], &labels.inputs[0], &keep_a)?;
    let (b, b_labels) = normalize(ctx, &operands[1], &labels.inputs[1], &keep_b)?;
    // Shared labels of size 1 in one operand only (broadcast ellipsis dimensions) expand.
    let own = |t: &TensorRef, ls: &[char], l: char| ls.iter().position(|&m| m == l).map_or(1, |d| t.shape[d]);
    let (a0, b0) = (a.clone(), b.clone());
    let a = broadcast(ctx, a, &a_labels, &|l| if b_labels.contains(&l) { size_of(l) } else { own(&a0, &a_labels, l) })?;
    let b = broadcast(ctx, b, &b_labels, &|l| if a_labels.contains(&l) { size_of(l) } else { own(&b0, &b_labels, l) })?;
    let plan = plan(&a_labels, &b_labels, &labels.output, &a.shape, &b.shape)?;
    let mut a_t = permuted(ctx, &a, &plan.a_perm)?;
    let mut b_t = permuted(ctx, &b, &plan.b_perm)?;
    let batch_count: i64 = plan.batch.iter().product();
    a_t.shape = vec![batch_count, plan.m, plan.k];
    b_t.shape = vec![batch_count, plan.k, plan.n];
    let direct = is_identity(&plan.out_perm);
    let mut product = if direct { out.clone() } else { ctx.allocate_temp(out.dtype, &plan.product_shape)? };
    product.shape = vec![batch_count, plan.m, plan.n];
    matmul::product(ctx, &a_t, &b_t, &product, false, false)?;
    if !direct {
        product.shape = plan.product_shape.clone();
        permute_any_size(ctx, &product, &out, &plan.out_perm)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_equations_plan_as_batched_matmuls() {
        // Keras MultiHeadAttention's score equation.
        let l = parse("aecd,abcd->acbe", &[4, 4]).unwrap();
        let p = plan(&l.inputs[0], &l.inputs[1], &l.output, &[2, 5, 3, 4], &[2, 7, 3, 4]).unwrap();
        assert_eq!((p.batch.clone(), p.m, p.k, p.n), (vec![2, 3], 5, 4, 7));
        assert_eq!(p.out_shape, vec![2, 3, 7, 5]);
    }

    #[test]
    fn ellipses_expand_right_aligned() {
        let l = parse("...ij,jk->...ik", &[4, 2]).unwrap();
        let [e0, e1] = [ellipsis_label(0), ellipsis_label(1)];
        assert_eq!(l.inputs, vec![vec![e0, e1, 'i', 'j'], vec!['j', 'k']]);
        assert_eq!(l.output, vec![e0, e1, 'i', 'k']);
        let l = parse("...i,...i->...", &[3, 1]).unwrap();
        assert_eq!((l.inputs[1].clone(), l.output.clone()), (vec!['i'], vec![e0, e1]));
        // Spaces and digits are labels of TF's op (a space of 'i j' is a third dimension).
        assert!(parse("i j,jk->ik", &[2, 2]).is_err());
        assert_eq!(parse("i j,jk->ik", &[3, 2]).unwrap().inputs[0], vec!['i', ' ', 'j']);
        assert_eq!(parse("a1,1b->ab", &[2, 2]).unwrap().inputs[1], vec!['1', 'b']);
        assert!(parse("ba,ac", &[2, 2]).is_err());
        assert!(parse("ab,bc->ad", &[2, 2]).is_err());
        assert!(parse("abc->a", &[2]).is_err());
        assert!(parse("a.b->a", &[2]).is_err());
    }
}
