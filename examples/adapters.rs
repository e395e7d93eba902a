//! Lists the adapters the plugin would expose, with the features and limits that matter to it.
//!
//!     cargo run -q --example adapters

use tensorflow_wgpu::runtime::instance;

fn main() {
    let count = instance::device_count();
    println!("{count} WGPU device(s)");
    for ordinal in 0..count {
        let device = instance::device(ordinal).expect("cannot open device");
        let info = &device.info;
        println!(
            "GPU:{ordinal}: {} ({:?}, {:?}, driver {} {})",
            info.name, info.backend, info.device_type, info.driver, info.driver_info
        );
        println!("  features: {:?}", device.features);
        let l = &device.limits;
        println!(
            "  max_buffer_size {} max_storage_buffer_binding_size {} max_uniform_buffer_binding_size {} min_storage_buffer_offset_alignment {} max_compute_workgroups_per_dimension {}",
            l.max_buffer_size,
            l.max_storage_buffer_binding_size,
            l.max_uniform_buffer_binding_size,
            l.min_storage_buffer_offset_alignment,
            l.max_compute_workgroups_per_dimension
        );
    }
}
