//! Prints the registered (op × dtype) matrix from the registration table.
//!
//!     cargo run -q --example op_table

fn main() {
    let table = tensorflow_wgpu::kernels::op_table();
    println!("{table}");
    println!("({} kernels)", tensorflow_wgpu::kernels::KERNELS.len());
}
