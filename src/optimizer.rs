//! The update formulas of TF's fused optimizer ops (`ResourceApplyGradientDescent`,
//! `ResourceApplyMomentum`, `ResourceApplyKerasMomentum`, `ResourceApplyAdam`,
//! `ResourceApplyRMSProp`, `ResourceApplyAdagrad`), written once over an abstract element-wise `Arithmetic`, in TF-CPU's
//! order of operations. The graph pass (`crate::rewrite`) evaluates them into graph nodes; the eager
//! kernels (`crate::kernels::variables`) into launches on the variables' tensors.

/// Element-wise arithmetic with NumPy broadcasting (scalars against tensors).
pub trait Arithmetic {
    type Value: Clone;
    type Error;
    fn add(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn sub(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn mul(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn div(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn square(&mut self, a: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn sqrt(&mut self, a: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn rsqrt(&mut self, a: &Self::Value) -> Result<Self::Value, Self::Error>;
    /// Ones of `a`'s shape and dtype.
    fn ones_like(&mut self, a: &Self::Value) -> Result<Self::Value, Self::Error>;
}

/// A fused optimizer update and its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimizer {
    GradientDescent,
    Momentum { nesterov: bool },
    KerasMomentum { nesterov: bool },
    Adam { nesterov: bool },
    RmsProp,
    Adagrad { update_slots: bool },
}

impl Optimizer {
    /// The op's optimizer; `nesterov` and `update_slots` are the node's attributes where it has them.
    pub fn from_op(op: &str, nesterov: bool, update_slots: bool) -> Option<Optimizer> {
        Some(match op {
            "ResourceApplyGradientDescent" => Optimizer::GradientDescent,
            "ResourceApplyMomentum" => Optimizer::Momentum { nesterov },
            "ResourceApplyKerasMomentum" => Optimizer::KerasMomentum { nesterov },
            "ResourceApplyAdam" => Optimizer::Adam { nesterov },
            "ResourceApplyRMSProp" => Optimizer::RmsProp,
            "ResourceApplyAdagrad" => Optimizer::Adagrad { update_slots },
            _ => return None,
        })
    }

    /// The op's inputs: how many leading ones are variables, and how many follow them.
    pub fn arity(self) -> (usize, usize) {
        match self {
            Optimizer::GradientDescent => (1, 2),
            Optimizer::Momentum { .. } | Optimizer::KerasMomentum { .. } => (2, 3),
            Optimizer::Adam { .. } => (3, 7),
            Optimizer::RmsProp => (3, 5),
            Optimizer::Adagrad { .. } => (2, 2),
        }
    }

    /// Where the gradient is among the inputs after the variables.
    pub fn gradient_index(self) -> usize {
        match self {
            Optimizer::GradientDescent
            | Optimizer::Momentum { .. }
            | Optimizer::KerasMomentum { .. }
            | Optimizer::Adagrad { .. } => 1,
            Optimizer::Adam { .. } => 6,
            Optimizer::RmsProp => 4,
        }
    }

    /// The variables' new values (in input order; None leaves one unchanged) from their current
    /// values `vars` and the op's other inputs `args`, both in op order.
    pub fn update<A: Arithmetic>(
        self,
        a: &mut A,
        vars: &[A::Value],
        args: &[A::Value],
    ) -> Result<Vec<Option<A::Value>>, A::Error> {
        Ok(match (self, vars, args) {
            (Optimizer::GradientDescent, [var], [alpha, delta]) => {
                // var -= alpha * delta
                let step = a.mul(alpha, delta)?;
                vec![Some(a.sub(var, &step)?)]
            }
            (Optimizer::Momentum { nesterov }, [var, accum], [lr, grad, momentum]) => {
                // accum = accum * momentum + grad; var -= accum * lr
                // (nesterov: var -= grad * lr + accum * momentum * lr)
                let kept = a.mul(accum, momentum)?;
                let accum = a.add(&kept, grad)?;
                let step = if nesterov {
                    let direct = a.mul(grad, lr)?;
                    let ahead = a.mul(&accum, momentum)?;
                    let ahead = a.mul(&ahead, lr)?;
                    a.add(&direct, &ahead)?
                } else {
                    a.mul(&accum, lr)?
                };
                vec![Some(a.sub(var, &step)?), Some(accum)]
            }
            (Optimizer::KerasMomentum { nesterov }, [var, accum], [lr, grad, momentum]) => {
                // accum = accum * momentum - grad * lr; var += accum
                // (nesterov: var += accum * momentum - grad * lr)
                let kept = a.mul(accum, momentum)?;
                let direct = a.mul(grad, lr)?;
                let accum = a.sub(&kept, &direct)?;
                let step = if nesterov {
                    let ahead = a.mul(&accum, momentum)?;
                    a.sub(&ahead, &direct)?
                } else {
                    accum.clone()
                };
                vec![Some(a.add(var, &step)?), Some(accum)]
            }
            (
                Optimizer::Adam { nesterov },
                [var, m, v],
                [beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad],
            ) => {
                // alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
                let one = a.ones_like(beta1)?;
                let b2c = a.sub(&one, beta2_power)?;
                let b2c = a.sqrt(&b2c)?;
                let scaled = a.mul(lr, &b2c)?;
                let b1c = a.sub(&one, beta1_power)?;
                let alpha = a.div(&scaled, &b1c)?;
                // m += (grad - m) * (1 - beta1); v += (grad^2 - v) * (1 - beta2)
                let one_minus_beta1 = a.sub(&one, beta1)?;
                let gm = a.sub(grad, m)?;
                let dm = a.mul(&gm, &one_minus_beta1)?;
                let m = a.add(m, &dm)?;
                let one_minus_beta2 = a.sub(&one, beta2)?;
                let g2 = a.square(grad)?;
                let gv = a.sub(&g2, v)?;
                let dv = a.mul(&gv, &one_minus_beta2)?;
                let v = a.add(v, &dv)?;
                // var -= (m * alpha) / (sqrt(v) + epsilon)
                // (nesterov: var -= ((grad * (1 - beta1) + beta1 * m) * alpha) / (sqrt(v) + epsilon))
                let direction = if nesterov {
                    let from_grad = a.mul(grad, &one_minus_beta1)?;
                    let from_m = a.mul(beta1, &m)?;
                    a.add(&from_grad, &from_m)?
                } else {
                    m.clone()
                };
                let numerator = a.mul(&direction, &alpha)?;
                let root = a.sqrt(&v)?;
                let denominator = a.add(&root, epsilon)?;
                let step = a.div(&numerator, &denominator)?;
                vec![Some(a.sub(var, &step)?), Some(m), Some(v)]
            }
            (Optimizer::RmsProp, [var, ms, mom], [lr, rho, momentum, epsilon, grad]) => {
                // ms += (grad^2 - ms) * (1 - rho); mom = mom * momentum + (grad * lr) / sqrt(ms + epsilon);
                // var -= mom
                let one = a.ones_like(rho)?;
                let one_minus_rho = a.sub(&one, rho)?;
                let g2 = a.square(grad)?;
                let gms = a.sub(&g2, ms)?;
                let dms = a.mul(&gms, &one_minus_rho)?;
                let ms = a.add(ms, &dms)?;
                let kept = a.mul(mom, momentum)?;
                let scaled = a.mul(grad, lr)?;
                let shifted = a.add(&ms, epsilon)?;
                let root = a.sqrt(&shifted)?;
                let fresh = a.div(&scaled, &root)?;
                let mom = a.add(&kept, &fresh)?;
                vec![Some(a.sub(var, &mom)?), Some(ms), Some(mom)]
            }
            (Optimizer::Adagrad { update_slots }, [var, accum], [lr, grad]) => {
                // accum += grad^2 (when update_slots); var -= grad * lr * rsqrt(accum)
                let accum = if update_slots {
                    let g2 = a.square(grad)?;
                    Some(a.add(accum, &g2)?)
                } else {
                    None
                };
                let scaled = a.mul(grad, lr)?;
                let inverse_root = a.rsqrt(accum.as_ref().unwrap_or(&vars[1]))?;
                let step = a.mul(&scaled, &inverse_root)?;
                vec![Some(a.sub(var, &step)?), accum]
            }
            _ => return Ok(vec![None; vars.len()]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scalars, to check the formulas against TF's reference implementation by hand.
    struct Scalars;

    impl Arithmetic for Scalars {
        type Value = f64;
        type Error = ();
        fn add(&mut self, a: &f64, b: &f64) -> Result<f64, ()> {
            Ok(a + b)
        }
        fn sub(&mut self, a: &f64, b: &f64) -> Result<f64, ()> {
            Ok(a - b)
        }
        fn mul(&mut self, a: &f64, b: &f64) -> Result<f64, ()> {
            Ok(a * b)
        }
        fn div(&mut self, a: &f64, b: &f64) -> Result<f64, ()> {
            Ok(a / b)
        }
        fn square(&mut self, a: &f64) -> Result<f64, ()> {
            Ok(a * a)
        }
        fn sqrt(&mut self, a: &f64) -> Result<f64, ()> {
            Ok(a.sqrt())
        }
        fn rsqrt(&mut self, a: &f64) -> Result<f64, ()> {
            Ok(1.0 / a.sqrt())
        }
        fn ones_like(&mut self, _: &f64) -> Result<f64, ()> {
            Ok(1.0)
        }
    }

    #[test]
    fn momentum_and_adagrad_follow_tf() {
        let out = Optimizer::Momentum { nesterov: false }.update(&mut Scalars, &[1.0, 0.5], &[0.1, 2.0, 0.9]).unwrap();
        // accum = 0.5 * 0.9 + 2 = 2.45; var = 1 - 2.45 * 0.1
        assert_eq!(out, [Some(1.0 - 0.245), Some(2.45)]);
        let out = Optimizer::Adagrad { update_slots: false }.update(&mut Scalars, &[1.0, 4.0], &[0.5, 2.0]).unwrap();
        assert_eq!(out, [Some(1.0 - 2.0 * 0.5 * 0.5), None]);
    }

    #[test]
    fn adam_follows_tf() {
        let (b1, b2, lr, eps, g) = (0.9, 0.999, 0.01, 1e-7, 0.5);
        let out = Optimizer::Adam { nesterov: false }
            .update(&mut Scalars, &[1.0, 0.0, 0.0], &[b1, b2, lr, b1, b2, eps, g])
            .unwrap();
        let alpha = lr * (1.0f64 - b2).sqrt() / (1.0 - b1);
        let (m, v) = (g * (1.0 - b1), g * g * (1.0 - b2));
        assert_eq!(out, [Some(1.0 - m * alpha / (v.sqrt() + eps)), Some(m), Some(v)]);
    }
}
