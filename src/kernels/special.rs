//! Elementwise special functions (`wgsl/special.wgsl` over the `wgsl/special_math.wgsl` library):
//! Ndtri, Erfinv, the Bessel functions, Dawsn, Expint, FresnelCos, FresnelSin, Spence, and the two-operand Igamma, Igammac, IgammaGradA,
//! RandomGammaGrad, Zeta and Polygamma with broadcasting; float32 math, as TF-CPU's Eigen code, and
//! float64 math for float64 where the adapter has SHADER_F64 (Eigen's and TF's double code).

use crate::error::{Error, Result};
use crate::runtime::pipeline::{PipelineSpec, Shader};

use super::binary::{broadcast_shapes, launch_two, Units};
use super::{kernel, t_of, DType, KernelContext, KernelDef, KernelInstance};

pub const SHADER: Shader = Shader {
    name: "special",
    source: concat!(
        include_str!("../../wgsl/math.wgsl"),
        include_str!("../../wgsl/special_math.wgsl"),
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/broadcast.wgsl"),
        include_str!("../../wgsl/special.wgsl")
    ),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

/// The same entry points over the float64 library (`wgsl/special_math_f64.wgsl`: the Gamma family
/// with Ndtri and Erfinv, the Bessel functions, and TF's own Dawsn ... Spence).
pub const FLOAT64_SHADER: Shader = Shader {
    name: "special_f64",
    source: concat!(
        include_str!("../../wgsl/math_f64.wgsl"),
        include_str!("../../wgsl/special_math_f64.wgsl"),
        include_str!("../../wgsl/quot.wgsl"),
        include_str!("../../wgsl/broadcast.wgsl"),
        include_str!("../../wgsl/special.wgsl")
    ),
    storage_buffers: 3,
    uniform_buffers: 0,
    textures: 0,
};

/// One-operand functions: TF op and entry point.
pub const UNARY: [(&str, &str); 19] = [
    ("Ndtri", "ndtri"),
    ("Erfinv", "erfinv"),
    ("BesselI0", "bessel_i0"),
    ("BesselI0e", "bessel_i0e"),
    ("BesselI1", "bessel_i1"),
    ("BesselI1e", "bessel_i1e"),
    ("BesselK0", "bessel_k0"),
    ("BesselK0e", "bessel_k0e"),
    ("BesselK1", "bessel_k1"),
    ("BesselK1e", "bessel_k1e"),
    ("BesselJ0", "bessel_j0"),
    ("BesselJ1", "bessel_j1"),
    ("BesselY0", "bessel_y0"),
    ("BesselY1", "bessel_y1"),
    ("Dawsn", "dawsn"),
    ("Expint", "expint"),
    ("FresnelCos", "fresnel_cos"),
    ("FresnelSin", "fresnel_sin"),
    ("Spence", "spence"),
];

/// Two-operand functions (TF defines them for float32 and float64 only).
pub const BINARY: [(&str, &str); 6] = [
    ("Igamma", "igamma"),
    ("Igammac", "igammac"),
    ("IgammaGradA", "igamma_grad_a"),
    ("RandomGammaGrad", "random_gamma_grad"),
    ("Zeta", "zeta"),
    ("Polygamma", "polygamma"),
];

/// The registration rows of the family, for `float_types`: float32, and float64 where every adapter
/// computes in f64 (bfloat16 rows come through `half::via_f32`).
pub fn register(table: &mut Vec<KernelDef>, float_types: &[DType]) {
    for &dtype in float_types {
        for (op, _) in UNARY.iter().chain(&BINARY) {
            table.push(kernel(op, t_of(dtype), &[], &[], compute));
        }
    }
}

pub fn compute(ctx: &mut dyn KernelContext, kernel: &KernelInstance) -> Result<()> {
    let dtype = kernel.dtype("T")?;
    let op = kernel.def.op;
    let (entry, two) = match UNARY.iter().find(|(name, _)| *name == op) {
        Some((_, entry)) => (*entry, false),
        None => (
            BINARY
                .iter()
                .find(|(name, _)| *name == op)
                .map(|(_, entry)| *entry)
                .ok_or_else(|| Error::internal(format!("special: unknown op {op}")))?,
            true,
        ),
    };
    let a = ctx.input(0)?;
    let b = if two { ctx.input(1)? } else { a.clone() };
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let out = ctx.forward_input_or_allocate_output(if two { &[0, 1] } else { &[0] }, 0, dtype, &shape)?;
    let (shader, math) = if dtype == DType::F64 { (&FLOAT64_SHADER, "f64") } else { (&SHADER, "f32") };
    let aliases = [("T", dtype.wgsl()), ("M", math)];
    let spec = PipelineSpec { entry, aliases: &aliases, constants: &[] };
    launch_two(ctx.stream()?, shader, spec, &a, &b, &out, Units::elements(dtype.size()))
}
