//! The update formulas of TF's fused optimizer ops, written once over an abstract element-wise
//! `Arithmetic`, in TF-CPU's order of operations: `ResourceApply*` for GradientDescent, Momentum,
//! KerasMomentum, Adam, RMSProp, CenteredRMSProp, Adagrad, AdagradV2, AdagradDA, Adadelta,
//! ProximalGradientDescent, ProximalAdagrad, Ftrl, FtrlV2, AdaMax, AddSign, PowerSign and
//! AdamWithAmsgrad, and the `ResourceSparseApply*` twins of all but GradientDescent, Adam and the
//! last four (TF has none), which apply the same formula to the rows
//! their indices name. The graph pass (`crate::rewrite`) evaluates them into graph nodes; the eager kernels
//! (`crate::kernels::variables`) into launches on the variables' tensors.

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
    fn exp(&mut self, a: &Self::Value) -> Result<Self::Value, Self::Error>;
    /// Ones of `a`'s shape and dtype.
    fn ones_like(&mut self, a: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn abs(&mut self, a: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn sign(&mut self, a: &Self::Value) -> Result<Self::Value, Self::Error>;
    /// max(a, 0).
    fn relu(&mut self, a: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn pow(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn minimum(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, Self::Error>;
    fn maximum(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, Self::Error>;
    /// `a > b ? then : otherwise`, element-wise.
    fn select_greater(
        &mut self,
        a: &Self::Value,
        b: &Self::Value,
        then: &Self::Value,
        otherwise: &Self::Value,
    ) -> Result<Self::Value, Self::Error>;
    /// An int64 scalar (AdagradDA's global step) in the update's dtype.
    fn step_as_float(&mut self, step: &Self::Value) -> Result<Self::Value, Self::Error>;
}

/// A fused optimizer update and its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimizer {
    GradientDescent,
    Momentum {
        nesterov: bool,
    },
    KerasMomentum {
        nesterov: bool,
    },
    Adam {
        nesterov: bool,
    },
    /// `sparse`: the sparse op's order of operations, which differs from the dense one's.
    RmsProp {
        sparse: bool,
    },
    CenteredRmsProp {
        sparse: bool,
    },
    Adagrad {
        update_slots: bool,
    },
    AdagradV2 {
        update_slots: bool,
    },
    Adadelta,
    ProximalGradientDescent,
    ProximalAdagrad,
    AdagradDa,
    /// `v2`: FtrlV2's L2 shrinkage input; `sparse`: the sparse kernels' clamp in place of the
    /// dense one's select.
    Ftrl {
        v2: bool,
        multiply_linear_by_lr: bool,
        sparse: bool,
    },
    AdaMax,
    AddSign,
    PowerSign,
    AdamWithAmsgrad,
}

impl Optimizer {
    /// The op's optimizer (`ResourceApply*` or `ResourceSparseApply*`); `flag(name, default)` reads
    /// the node's boolean attributes (`use_nesterov`, `update_slots`, `multiply_linear_by_lr`).
    pub fn from_op(op: &str, flag: impl Fn(&str, bool) -> bool) -> Option<Optimizer> {
        let nesterov = flag("use_nesterov", false);
        let update_slots = flag("update_slots", true);
        let multiply_linear_by_lr = flag("multiply_linear_by_lr", false);
        let (name, sparse) = match op.strip_prefix("ResourceSparseApply") {
            Some(name) => (name, true),
            None => (op.strip_prefix("ResourceApply")?, false),
        };
        Some(match name {
            "GradientDescent" if !sparse => Optimizer::GradientDescent,
            "Adam" if !sparse => Optimizer::Adam { nesterov },
            "Momentum" => Optimizer::Momentum { nesterov },
            "KerasMomentum" => Optimizer::KerasMomentum { nesterov },
            "RMSProp" => Optimizer::RmsProp { sparse },
            "CenteredRMSProp" => Optimizer::CenteredRmsProp { sparse },
            "Adagrad" => Optimizer::Adagrad { update_slots },
            "AdagradV2" => Optimizer::AdagradV2 { update_slots },
            "Adadelta" => Optimizer::Adadelta,
            "ProximalGradientDescent" => Optimizer::ProximalGradientDescent,
            "ProximalAdagrad" => Optimizer::ProximalAdagrad,
            "AdagradDA" => Optimizer::AdagradDa,
            "Ftrl" => Optimizer::Ftrl { v2: false, multiply_linear_by_lr, sparse },
            "FtrlV2" => Optimizer::Ftrl { v2: true, multiply_linear_by_lr, sparse },
            "AdaMax" if !sparse => Optimizer::AdaMax,
            "AddSign" if !sparse => Optimizer::AddSign,
            "PowerSign" if !sparse => Optimizer::PowerSign,
            "AdamWithAmsgrad" if !sparse => Optimizer::AdamWithAmsgrad,
            _ => return None,
        })
    }

    /// Whether `op` is a `ResourceSparseApply*` op, whose `indices` input follows the gradient.
    pub fn is_sparse(op: &str) -> bool {
        op.starts_with("ResourceSparseApply")
    }

    /// The op's inputs: how many leading ones are variables, and how many follow them.
    pub fn arity(self) -> (usize, usize) {
        match self {
            Optimizer::GradientDescent => (1, 2),
            Optimizer::Momentum { .. } | Optimizer::KerasMomentum { .. } => (2, 3),
            Optimizer::Adam { .. } => (3, 7),
            Optimizer::RmsProp { .. } => (3, 5),
            Optimizer::CenteredRmsProp { .. } => (4, 5),
            Optimizer::Adagrad { .. } => (2, 2),
            Optimizer::AdagradV2 { .. } => (2, 3),
            Optimizer::Adadelta => (3, 4),
            Optimizer::ProximalGradientDescent => (1, 4),
            Optimizer::ProximalAdagrad => (2, 4),
            Optimizer::AdagradDa => (3, 5),
            Optimizer::Ftrl { v2, .. } => (3, if v2 { 6 } else { 5 }),
            Optimizer::AdaMax => (3, 6),
            Optimizer::AddSign | Optimizer::PowerSign => (2, 5),
            Optimizer::AdamWithAmsgrad => (4, 7),
        }
    }

    /// Where the gradient is among the inputs after the variables.
    pub fn gradient_index(self) -> usize {
        match self {
            Optimizer::GradientDescent
            | Optimizer::Momentum { .. }
            | Optimizer::KerasMomentum { .. }
            | Optimizer::Adagrad { .. } => 1,
            Optimizer::Adam { .. } | Optimizer::AdamWithAmsgrad => 6,
            Optimizer::AdaMax => 5,
            Optimizer::AddSign | Optimizer::PowerSign => 4,
            Optimizer::RmsProp { .. } | Optimizer::CenteredRmsProp { .. } => 4,
            Optimizer::AdagradV2 { .. } => 2,
            Optimizer::Adadelta | Optimizer::ProximalGradientDescent | Optimizer::ProximalAdagrad => 3,
            Optimizer::AdagradDa | Optimizer::Ftrl { .. } => 0,
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
                let (alpha, one_minus_beta1, m, v) =
                    Self::adam_moments(a, [m, v], [beta1_power, beta2_power, lr, beta1, beta2, grad])?;
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
            (Optimizer::RmsProp { sparse: false }, [var, ms, mom], [lr, rho, momentum, epsilon, grad]) => {
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
            (Optimizer::RmsProp { sparse: true }, [var, ms, mom], [lr, rho, momentum, epsilon, grad]) => {
                // ms = ms * rho + grad^2 * (1 - rho);
                // mom = mom * momentum + rsqrt(ms + epsilon) * lr * grad; var -= mom
                let one = a.ones_like(rho)?;
                let one_minus_rho = a.sub(&one, rho)?;
                let ms = Self::decayed_square(a, ms, rho, grad, &one_minus_rho)?;
                let shifted = a.add(&ms, epsilon)?;
                let mom = Self::sparse_momentum(a, mom, momentum, &shifted, lr, grad)?;
                vec![Some(a.sub(var, &mom)?), Some(ms), Some(mom)]
            }
            (Optimizer::CenteredRmsProp { sparse: false }, [var, mg, ms, mom], [lr, rho, momentum, epsilon, grad]) => {
                // ms += (grad^2 - ms) * (1 - rho); mg += (grad - mg) * (1 - rho);
                // mom = mom * momentum + (grad * lr) / sqrt(ms - mg^2 + epsilon); var -= mom
                let one = a.ones_like(rho)?;
                let one_minus_rho = a.sub(&one, rho)?;
                let g2 = a.square(grad)?;
                let gms = a.sub(&g2, ms)?;
                let dms = a.mul(&gms, &one_minus_rho)?;
                let ms = a.add(ms, &dms)?;
                let gmg = a.sub(grad, mg)?;
                let dmg = a.mul(&gmg, &one_minus_rho)?;
                let mg = a.add(mg, &dmg)?;
                let mg2 = a.square(&mg)?;
                let centered = a.sub(&ms, &mg2)?;
                let denominator = a.add(&centered, epsilon)?;
                let root = a.sqrt(&denominator)?;
                let kept = a.mul(mom, momentum)?;
                let scaled = a.mul(grad, lr)?;
                let fresh = a.div(&scaled, &root)?;
                let mom = a.add(&kept, &fresh)?;
                vec![Some(a.sub(var, &mom)?), Some(mg), Some(ms), Some(mom)]
            }
            (Optimizer::CenteredRmsProp { sparse: true }, [var, mg, ms, mom], [lr, rho, momentum, epsilon, grad]) => {
                // ms = ms * rho + grad^2 * (1 - rho); mg = mg * rho + grad * (1 - rho);
                // mom = mom * momentum + rsqrt(ms - mg^2 + epsilon) * lr * grad; var -= mom
                let one = a.ones_like(rho)?;
                let one_minus_rho = a.sub(&one, rho)?;
                let ms = Self::decayed_square(a, ms, rho, grad, &one_minus_rho)?;
                let kept_mg = a.mul(mg, rho)?;
                let fresh_mg = a.mul(grad, &one_minus_rho)?;
                let mg = a.add(&kept_mg, &fresh_mg)?;
                let mg2 = a.square(&mg)?;
                let centered = a.sub(&ms, &mg2)?;
                let denominator = a.add(&centered, epsilon)?;
                let mom = Self::sparse_momentum(a, mom, momentum, &denominator, lr, grad)?;
                vec![Some(a.sub(var, &mom)?), Some(mg), Some(ms), Some(mom)]
            }
            (Optimizer::AdagradV2 { update_slots }, [var, accum], [lr, epsilon, grad]) => {
                // accum += grad^2 (when update_slots); var -= grad * lr / (sqrt(accum) + epsilon)
                let accum = if update_slots {
                    let g2 = a.square(grad)?;
                    Some(a.add(accum, &g2)?)
                } else {
                    None
                };
                let scaled = a.mul(grad, lr)?;
                let root = a.sqrt(accum.as_ref().unwrap_or(&vars[1]))?;
                let denominator = a.add(&root, epsilon)?;
                let step = a.div(&scaled, &denominator)?;
                vec![Some(a.sub(var, &step)?), accum]
            }
            (Optimizer::Adadelta, [var, accum, accum_update], [lr, rho, epsilon, grad]) => {
                // accum = accum * rho + grad^2 * (1 - rho);
                // update = sqrt(accum_update + epsilon) * rsqrt(accum + epsilon) * grad;
                // var -= update * lr; accum_update = accum_update * rho + update^2 * (1 - rho)
                let one = a.ones_like(rho)?;
                let one_minus_rho = a.sub(&one, rho)?;
                let accum = Self::decayed_square(a, accum, rho, grad, &one_minus_rho)?;
                let shifted_update = a.add(accum_update, epsilon)?;
                let root_update = a.sqrt(&shifted_update)?;
                let shifted_accum = a.add(&accum, epsilon)?;
                let inverse_root = a.rsqrt(&shifted_accum)?;
                let ratio = a.mul(&root_update, &inverse_root)?;
                let update = a.mul(&ratio, grad)?;
                let step = a.mul(&update, lr)?;
                let accum_update = Self::decayed_square(a, accum_update, rho, &update, &one_minus_rho)?;
                vec![Some(a.sub(var, &step)?), Some(accum), Some(accum_update)]
            }
            (Optimizer::ProximalGradientDescent, [var], [alpha, l1, l2, grad]) => {
                // prox = var - grad * alpha; var = sign(prox) * max(|prox| - alpha * l1, 0) / (1 + alpha * l2)
                let step = a.mul(grad, alpha)?;
                let prox = a.sub(var, &step)?;
                vec![Some(Self::proximal(a, &prox, alpha, l1, l2)?)]
            }
            (Optimizer::ProximalAdagrad, [var, accum], [lr, l1, l2, grad]) => {
                // accum += grad^2; rate = lr * rsqrt(accum); prox = var - grad * rate;
                // var = sign(prox) * max(|prox| - rate * l1, 0) / (1 + rate * l2)
                let g2 = a.square(grad)?;
                let accum = a.add(accum, &g2)?;
                let inverse_root = a.rsqrt(&accum)?;
                let rate = a.mul(lr, &inverse_root)?;
                let step = a.mul(grad, &rate)?;
                let prox = a.sub(var, &step)?;
                vec![Some(Self::proximal(a, &prox, &rate, l1, l2)?), Some(accum)]
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
            (Optimizer::AdagradDa, [var, ga, gsa], [grad, lr, l1, l2, global_step]) => {
                // ga += grad; gsa += grad^2; t = global_step;
                // var = -(lr * shrunk / (l2 * t * lr + sqrt(gsa))), where shrunk is
                // sign(ga) * max(|ga| - t * l1, 0) for l1 > 0 and ga otherwise (TF-CPU's branch,
                // as a select: a negative or NaN l1 takes ga).
                let _ = var;
                let ga = a.add(ga, grad)?;
                let g2 = a.square(grad)?;
                let gsa = a.add(gsa, &g2)?;
                let t = a.step_as_float(global_step)?;
                let sign = a.sign(&ga)?;
                let magnitude = a.abs(&ga)?;
                let threshold = a.mul(&t, l1)?;
                let shrunk = a.sub(&magnitude, &threshold)?;
                let kept = a.relu(&shrunk)?;
                let signed = a.mul(&sign, &kept)?;
                let one = a.ones_like(lr)?;
                let zero = a.sub(&one, &one)?;
                let chosen = a.select_greater(l1, &zero, &signed, &ga)?;
                let numerator = a.mul(lr, &chosen)?;
                let l2t = a.mul(l2, &t)?;
                let decay = a.mul(&l2t, lr)?;
                let root = a.sqrt(&gsa)?;
                let denominator = a.add(&decay, &root)?;
                let quotient = a.div(&numerator, &denominator)?;
                vec![Some(a.sub(&zero, &quotient)?), Some(ga), Some(gsa)]
            }
            (Optimizer::Ftrl { v2, multiply_linear_by_lr, sparse }, [var, accum, linear], rest) => {
                // new_accum = accum + grad^2; g = grad (+ 2 * l2_shrinkage * var for FtrlV2);
                // linear += g - (new_accum^-p - accum^-p) / lr * var;
                // var = |linear| > l1 ? (l1 * sign(linear) - linear) / y : 0, y = new_accum^-p / lr + 2 * l2
                // (the sparse kernels: var = (clamp(linear, -l1, l1) - linear) / y, the same but
                // where y is 0 or linear NaN; multiply_linear_by_lr: linear += g * lr -
                // (new_accum^-p - accum^-p) * var, and l1 * lr, new_accum^-p + 2 * l2 * lr in place
                // of l1 and y).
                let (grad, lr, l1, l2, shrinkage, lr_power) = match (v2, rest) {
                    (false, [grad, lr, l1, l2, lr_power]) => (grad, lr, l1, l2, None, lr_power),
                    (true, [grad, lr, l1, l2, shrinkage, lr_power]) => (grad, lr, l1, l2, Some(shrinkage), lr_power),
                    _ => return Ok(vec![None; vars.len()]),
                };
                let one = a.ones_like(lr)?;
                let two = a.add(&one, &one)?;
                let g2 = a.square(grad)?;
                let new_accum = a.add(accum, &g2)?;
                let g = match shrinkage {
                    Some(shrinkage) => {
                        let scale = a.mul(&two, shrinkage)?;
                        let pull = a.mul(&scale, var)?;
                        a.add(grad, &pull)?
                    }
                    None => grad.clone(),
                };
                let zero = a.sub(&one, &one)?;
                let power = a.sub(&zero, lr_power)?;
                let new_root = a.pow(&new_accum, &power)?;
                let old_root = a.pow(accum, &power)?;
                let sigma = a.sub(&new_root, &old_root)?;
                let two_l2 = a.mul(&two, l2)?;
                let (linear, threshold, denominator) = if multiply_linear_by_lr {
                    let scaled = a.mul(&g, lr)?;
                    let pull = a.mul(&sigma, var)?;
                    let step = a.sub(&scaled, &pull)?;
                    let linear = a.add(linear, &step)?;
                    let threshold = a.mul(l1, lr)?;
                    let decay = a.mul(&two_l2, lr)?;
                    (linear, threshold, a.add(&new_root, &decay)?)
                } else {
                    let rate = a.div(&sigma, lr)?;
                    let pull = a.mul(&rate, var)?;
                    let step = a.sub(&g, &pull)?;
                    let linear = a.add(linear, &step)?;
                    let rooted = a.div(&new_root, lr)?;
                    (linear, l1.clone(), a.add(&rooted, &two_l2)?)
                };
                let var = if sparse {
                    let below = a.minimum(&linear, &threshold)?;
                    let lowest = a.sub(&zero, &threshold)?;
                    let clamped = a.maximum(&below, &lowest)?;
                    let numerator = a.sub(&clamped, &linear)?;
                    a.div(&numerator, &denominator)?
                } else {
                    let sign = a.sign(&linear)?;
                    let pulled = a.mul(&threshold, &sign)?;
                    let numerator = a.sub(&pulled, &linear)?;
                    let shrunk = a.div(&numerator, &denominator)?;
                    let magnitude = a.abs(&linear)?;
                    a.select_greater(&magnitude, &threshold, &shrunk, &zero)?
                };
                vec![Some(var), Some(new_accum), Some(linear)]
            }
            (Optimizer::AdaMax, [var, m, v], [beta1_power, lr, beta1, beta2, epsilon, grad]) => {
                // m += (grad - m) * (1 - beta1); v = cwiseMax(beta2 * v, |grad|);
                // var -= lr / (1 - beta1_power) * (m / (v + epsilon))
                let one = a.ones_like(beta1)?;
                let one_minus_beta1 = a.sub(&one, beta1)?;
                let gm = a.sub(grad, m)?;
                let dm = a.mul(&gm, &one_minus_beta1)?;
                let m = a.add(m, &dm)?;
                let decayed = a.mul(beta2, v)?;
                let magnitude = a.abs(grad)?;
                let v = Self::eigen_max(a, &decayed, &magnitude)?;
                let correction = a.sub(&one, beta1_power)?;
                let rate = a.div(lr, &correction)?;
                let shifted = a.add(&v, epsilon)?;
                let ratio = a.div(&m, &shifted)?;
                let step = a.mul(&rate, &ratio)?;
                vec![Some(a.sub(var, &step)?), Some(m), Some(v)]
            }
            (Optimizer::AddSign, [var, m], [lr, alpha, sign_decay, beta, grad])
            | (Optimizer::PowerSign, [var, m], [lr, alpha, sign_decay, beta, grad]) => {
                // m = m * beta + grad * (1 - beta); s = sign(grad) * sign(m);
                // AddSign: var -= lr * (alpha + sign_decay * s) * grad;
                // PowerSign (alpha is logbase): var -= lr * exp(logbase * sign_decay * s) * grad
                let one = a.ones_like(beta)?;
                let one_minus_beta = a.sub(&one, beta)?;
                let kept = a.mul(m, beta)?;
                let fresh = a.mul(grad, &one_minus_beta)?;
                let m = a.add(&kept, &fresh)?;
                let grad_sign = a.sign(grad)?;
                let m_sign = a.sign(&m)?;
                let agreement = a.mul(&grad_sign, &m_sign)?;
                let scale = if self == Optimizer::AddSign {
                    let decayed = a.mul(sign_decay, &agreement)?;
                    a.add(alpha, &decayed)?
                } else {
                    let exponent = a.mul(alpha, sign_decay)?;
                    let exponent = a.mul(&exponent, &agreement)?;
                    a.exp(&exponent)?
                };
                let rate = a.mul(lr, &scale)?;
                let step = a.mul(&rate, grad)?;
                vec![Some(a.sub(var, &step)?), Some(m)]
            }
            (
                Optimizer::AdamWithAmsgrad,
                [var, m, v, vhat],
                [beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad],
            ) => {
                // Adam's moments; vhat = cwiseMax(vhat, v); var -= (m * alpha) / (sqrt(vhat) + epsilon)
                let (alpha, _, m, v) =
                    Self::adam_moments(a, [m, v], [beta1_power, beta2_power, lr, beta1, beta2, grad])?;
                let vhat = Self::eigen_max(a, vhat, &v)?;
                let numerator = a.mul(&m, &alpha)?;
                let root = a.sqrt(&vhat)?;
                let denominator = a.add(&root, epsilon)?;
                let step = a.div(&numerator, &denominator)?;
                vec![Some(a.sub(var, &step)?), Some(m), Some(v), Some(vhat)]
            }
            _ => return Ok(vec![None; vars.len()]),
        })
    }

    /// Adam's step size and moments, as Adam and AdamWithAmsgrad compute them:
    /// alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - m) * (1 - beta1);
    /// v += (grad^2 - v) * (1 - beta2). Returns (alpha, 1 - beta1, m, v).
    #[allow(clippy::type_complexity)]
    fn adam_moments<A: Arithmetic>(
        a: &mut A,
        [m, v]: [&A::Value; 2],
        [beta1_power, beta2_power, lr, beta1, beta2, grad]: [&A::Value; 6],
    ) -> Result<(A::Value, A::Value, A::Value, A::Value), A::Error> {
        let one = a.ones_like(beta1)?;
        let b2c = a.sub(&one, beta2_power)?;
        let b2c = a.sqrt(&b2c)?;
        let scaled = a.mul(lr, &b2c)?;
        let b1c = a.sub(&one, beta1_power)?;
        let alpha = a.div(&scaled, &b1c)?;
        let one_minus_beta1 = a.sub(&one, beta1)?;
        let gm = a.sub(grad, m)?;
        let dm = a.mul(&gm, &one_minus_beta1)?;
        let m = a.add(m, &dm)?;
        let one_minus_beta2 = a.sub(&one, beta2)?;
        let g2 = a.square(grad)?;
        let gv = a.sub(&g2, v)?;
        let dv = a.mul(&gv, &one_minus_beta2)?;
        let v = a.add(v, &dv)?;
        Ok((alpha, one_minus_beta1, m, v))
    }

    /// Eigen's cwiseMax(x, y) in TF's kernels: `x < y ? y : x`, so a NaN in `y` leaves `x`.
    fn eigen_max<A: Arithmetic>(a: &mut A, x: &A::Value, y: &A::Value) -> Result<A::Value, A::Error> {
        a.select_greater(y, x, y, x)
    }

    /// `slot * rho + x^2 * (1 - rho)`, the sparse kernels' and Adadelta's order.
    fn decayed_square<A: Arithmetic>(
        a: &mut A,
        slot: &A::Value,
        rho: &A::Value,
        x: &A::Value,
        one_minus_rho: &A::Value,
    ) -> Result<A::Value, A::Error> {
        let kept = a.mul(slot, rho)?;
        let x2 = a.square(x)?;
        let fresh = a.mul(&x2, one_minus_rho)?;
        a.add(&kept, &fresh)
    }

    /// `mom * momentum + rsqrt(denominator) * lr * grad`, the sparse RMSProp kernels' order.
    fn sparse_momentum<A: Arithmetic>(
        a: &mut A,
        mom: &A::Value,
        momentum: &A::Value,
        denominator: &A::Value,
        lr: &A::Value,
        grad: &A::Value,
    ) -> Result<A::Value, A::Error> {
        let kept = a.mul(mom, momentum)?;
        let inverse_root = a.rsqrt(denominator)?;
        let scaled = a.mul(&inverse_root, lr)?;
        let fresh = a.mul(&scaled, grad)?;
        a.add(&kept, &fresh)
    }

    /// `l1 > 0 ? sign(prox) * max(|prox| - rate * l1, 0) / (1 + rate * l2) : prox / (1 + rate * l2)`.
    fn proximal<A: Arithmetic>(
        a: &mut A,
        prox: &A::Value,
        rate: &A::Value,
        l1: &A::Value,
        l2: &A::Value,
    ) -> Result<A::Value, A::Error> {
        let sign = a.sign(prox)?;
        let magnitude = a.abs(prox)?;
        let threshold = a.mul(rate, l1)?;
        let shrunk = a.sub(&magnitude, &threshold)?;
        let kept = a.relu(&shrunk)?;
        let signed = a.mul(&sign, &kept)?;
        let one = a.ones_like(rate)?;
        let decay = a.mul(rate, l2)?;
        let denominator = a.add(&one, &decay)?;
        let shrunk = a.div(&signed, &denominator)?;
        let plain = a.div(prox, &denominator)?;
        let zero = a.sub(&one, &one)?;
        a.select_greater(l1, &zero, &shrunk, &plain)
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
        fn exp(&mut self, a: &f64) -> Result<f64, ()> {
            Ok(a.exp())
        }
        fn ones_like(&mut self, _: &f64) -> Result<f64, ()> {
            Ok(1.0)
        }
        fn abs(&mut self, a: &f64) -> Result<f64, ()> {
            Ok(a.abs())
        }
        fn sign(&mut self, a: &f64) -> Result<f64, ()> {
            Ok(if *a == 0.0 { 0.0 } else { a.signum() })
        }
        fn relu(&mut self, a: &f64) -> Result<f64, ()> {
            Ok(a.max(0.0))
        }
        fn pow(&mut self, a: &f64, b: &f64) -> Result<f64, ()> {
            Ok(a.powf(*b))
        }
        fn minimum(&mut self, a: &f64, b: &f64) -> Result<f64, ()> {
            Ok(a.min(*b))
        }
        fn maximum(&mut self, a: &f64, b: &f64) -> Result<f64, ()> {
            Ok(a.max(*b))
        }
        fn select_greater(&mut self, a: &f64, b: &f64, then: &f64, otherwise: &f64) -> Result<f64, ()> {
            Ok(if a > b { *then } else { *otherwise })
        }
        fn step_as_float(&mut self, step: &f64) -> Result<f64, ()> {
            Ok(*step)
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

    #[test]
    fn sparse_names_map_to_the_dense_formulas() {
        assert_eq!(
            Optimizer::from_op("ResourceSparseApplyRMSProp", |_, d| d),
            Some(Optimizer::RmsProp { sparse: true })
        );
        assert_eq!(Optimizer::from_op("ResourceApplyRMSProp", |_, d| d), Some(Optimizer::RmsProp { sparse: false }));
        // TF has no sparse GradientDescent or Adam, nor an op of these names.
        assert_eq!(Optimizer::from_op("ResourceSparseApplyAdam", |_, d| d), None);
        assert_eq!(Optimizer::from_op("ResourceSparseApplyGradientDescent", |_, d| d), None);
        assert_eq!(Optimizer::from_op("ResourceApplyFtrlV3", |_, d| d), None);
        assert_eq!(
            Optimizer::from_op("ResourceSparseApplyFtrlV2", |name, d| name == "multiply_linear_by_lr" || d),
            Some(Optimizer::Ftrl { v2: true, multiply_linear_by_lr: true, sparse: true })
        );
        assert!(Optimizer::is_sparse("ResourceSparseApplyMomentum"));
    }

    #[test]
    fn adagrad_v2_adadelta_and_proximal_follow_tf() {
        let out =
            Optimizer::AdagradV2 { update_slots: true }.update(&mut Scalars, &[1.0, 4.0], &[0.5, 0.1, 2.0]).unwrap();
        assert_eq!(out, [Some(1.0 - 2.0 * 0.5 / (8.0f64.sqrt() + 0.1)), Some(8.0)]);
        let out = Optimizer::ProximalGradientDescent.update(&mut Scalars, &[1.0], &[0.1, 0.5, 0.2, 2.0]).unwrap();
        // prox = 1 - 2 * 0.1; shrunk by alpha * l1 = 0.05, scaled by 1 / (1 + alpha * l2)
        assert_eq!(out, [Some((0.8f64 - 0.1 * 0.5) / (1.0 + 0.1 * 0.2))]);
        let (rho, eps, g) = (0.9, 1e-3, 2.0);
        let out = Optimizer::Adadelta.update(&mut Scalars, &[1.0, 0.5, 0.25], &[1.0, rho, eps, g]).unwrap();
        let accum = 0.5 * rho + g * g * (1.0 - rho);
        let update = (0.25f64 + eps).sqrt() * (1.0 / (accum + eps).sqrt()) * g;
        assert_eq!(out, [Some(1.0 - update), Some(accum), Some(0.25 * rho + update * update * (1.0 - rho))]);
    }

    #[test]
    fn ftrl_and_adagrad_da_follow_tf() {
        // Ftrl with lr_power -0.5: new_accum = 0.1 + 4; linear = 0.3 + 2 - (sqrt(4.1) - sqrt(0.1)) / 0.5 * 1.
        let out = Optimizer::Ftrl { v2: false, multiply_linear_by_lr: false, sparse: false }
            .update(&mut Scalars, &[1.0, 0.1, 0.3], &[2.0, 0.5, 0.01, 0.02, -0.5])
            .unwrap();
        let linear = 0.3 + (2.0 - (4.1f64.sqrt() - 0.1f64.sqrt()) / 0.5 * 1.0);
        let var = (0.01 * linear.signum() - linear) / (4.1f64.sqrt() / 0.5 + 2.0 * 0.02);
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
        assert!(close(out[0], var) && close(out[1], 4.1) && close(out[2], linear), "{out:?}");
        // |linear| under l1: the variable becomes 0, with the select and with the clamp.
        for sparse in [false, true] {
            let out = Optimizer::Ftrl { v2: false, multiply_linear_by_lr: false, sparse }
                .update(&mut Scalars, &[1.0, 0.1, 0.0], &[0.0, 0.5, 10.0, 0.0, -0.5])
                .unwrap();
            assert_eq!(out[0], Some(0.0), "sparse: {sparse}");
        }
        // AdagradDA: ga = 0.5 + 1; gsa = 0.25 + 1; t = 3.
        let out = Optimizer::AdagradDa.update(&mut Scalars, &[9.0, 0.5, 0.25], &[1.0, 0.1, 0.2, 0.3, 3.0]).unwrap();
        let var = -(0.1 * (1.5f64 - 3.0 * 0.2)) / (0.3 * 3.0 * 0.1 + 1.25f64.sqrt());
        assert!(close(out[0], var) && close(out[1], 1.5) && close(out[2], 1.25), "{out:?}");
        // A negative or NaN l1 takes TF-CPU's other branch: no shrinking (found by the fuzzer).
        for l1 in [-0.2, f64::NAN] {
            let out = Optimizer::AdagradDa.update(&mut Scalars, &[9.0, 0.5, 0.25], &[1.0, 0.1, l1, 0.3, 3.0]).unwrap();
            let var = -(0.1 * 1.5) / (0.3 * 3.0 * 0.1 + 1.25f64.sqrt());
            assert!(close(out[0], var), "l1 {l1}: {out:?}");
        }
    }
}
