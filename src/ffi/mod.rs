//! Byte-exact mirrors of TensorFlow's C API and the run-time lookup of its functions.
//! Only this module and `plugin`/`kernels::registration` (the C-callback shims) use `unsafe`.
#![allow(non_camel_case_types, non_snake_case, clippy::upper_case_acronyms)]

/// `TF_OFFSET_OF_END(type, last_field)`: the offset of the end of the last field, without tail padding.
macro_rules! offset_of_end {
    ($ty:ty, $field:ident, $field_ty:ty) => {
        std::mem::offset_of!($ty, $field) + std::mem::size_of::<$field_ty>()
    };
}

pub mod grappler;
pub mod loader;
pub mod profiler;
pub mod se;
pub mod tf;
