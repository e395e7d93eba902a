//! Byte-exact mirrors of TensorFlow's C API and the run-time lookup of its functions.
//! Only this module and `plugin`/`kernels::registration` (the C-callback shims) use `unsafe`.
#![allow(non_camel_case_types, non_snake_case, clippy::upper_case_acronyms)]

pub mod grappler;
pub mod loader;
pub mod se;
pub mod tf;
