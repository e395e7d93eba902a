//! Einsum for two operands (no ellipsis, each label at most once per operand): transposes to
//! [batch, free, contracted] order, one batched matmul, and a transpose to the output order.

use crate::error::{Error, Result};

use super::index::{permute, permuted_shape};
use super::{matmul, KernelContext, KernelInstance, TensorRef};

/// The two operands' labels and the output's, from an equation like `abc,cd->abd`.
pub fn parse(equation: &str) -> Result<(Vec<char>, Vec<char>, Vec<char>)> {
    let unsupported =
        || Error::unimplemented(format!("Einsum equation {equation:?} (two operands, no ellipsis) on WGPU"));
    let (inputs, output) = equation.split_once("->").ok_or_else(unsupported)?;
    let (a, b) = inputs.split_once(',').ok_or_else(unsupported)?;
    let labels = |s: &str| -> Result<Vec<char>> {
        let v: Vec<char> = s.trim().chars().collect();
        let mut seen = v.clone();
        seen.sort();
        seen.dedup();
        if seen.len() != v.len() || v.iter().any(|c| !c.is_ascii_alphabetic()) {
            return Err(unsupported());
        }
        Ok(v)
    };
    Ok((labels(a)?, labels(b)?, labels(output)?))
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

pub fn plan(equation: &str, a_shape: &[i64], b_shape: &[i64]) -> Result<Plan> {
    let (a, b, out) = parse(equation)?;
    if a.len() != a_shape.len() || b.len() != b_shape.len() {
        return Err(Error::invalid_argument(format!(
            "Einsum: equation {equation:?} does not match operand ranks {} and {}",
            a_shape.len(),
            b_shape.len()
        )));
    }
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
        return Err(Error::unimplemented(format!("Einsum {equation:?}: summing a label of one operand only")));
    }
    let pos = |labels: &[char], l: char| labels.iter().position(|&x| x == l).unwrap_or(0);
    let a_perm: Vec<usize> = batch.iter().chain(&free_a).chain(&contract).map(|&l| pos(&a, l)).collect();
    let b_perm: Vec<usize> = batch.iter().chain(&contract).chain(&free_b).map(|&l| pos(&b, l)).collect();
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
    permute(ctx.stream()?, t, &temp, perm)?;
    Ok(temp)
}

pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    if ctx.num_inputs() != 2 {
        return Err(Error::unimplemented("Einsum with other than two operands on WGPU"));
    }
    let plan = plan(kernel.attrs.str("equation")?, &a.shape, &b.shape)?;
    let out = ctx.allocate_output(0, a.dtype, &plan.out_shape)?;
    if out.num_elements() == 0 {
        return Ok(());
    }
    let mut a_t = permuted(ctx, &a, &plan.a_perm)?;
    let mut b_t = permuted(ctx, &b, &plan.b_perm)?;
    let batch_count: i64 = plan.batch.iter().product();
    a_t.shape = vec![batch_count, plan.m, plan.k];
    b_t.shape = vec![batch_count, plan.k, plan.n];
    let direct = is_identity(&plan.out_perm);
    let mut product = if direct { out.clone() } else { ctx.allocate_temp(a.dtype, &plan.product_shape)? };
    product.shape = vec![batch_count, plan.m, plan.n];
    matmul::launch(ctx.stream()?, &a_t, &b_t, &product, false, false)?;
    if !direct {
        product.shape = plan.product_shape.clone();
        permute(ctx.stream()?, &product, &out, &plan.out_perm)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_equations_plan_as_batched_matmuls() {
        // Keras MultiHeadAttention's score equation.
        let p = plan("aecd,abcd->acbe", &[2, 5, 3, 4], &[2, 7, 3, 4]).unwrap();
        assert_eq!((p.batch.clone(), p.m, p.k, p.n), (vec![2, 3], 5, 4, 7));
        assert_eq!(p.out_shape, vec![2, 3, 7, 5]);
        assert!(plan("ab,bc->a", &[2, 3], &[3, 4]).is_err());
        assert!(parse("...a,ab->b").is_err());
    }
}
