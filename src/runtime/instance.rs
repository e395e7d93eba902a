//! The process-wide wgpu instance, the adapters TensorFlow sees as devices, and their cached devices.
//!
//! TF calls `create_device` and enumerates devices hundreds of times per process, so the instance,
//! the adapter list and every opened device live for the whole process and are reused.

use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result};

use super::device::{offered_features, requested_features, Device, LimitsProfile};

/// Environment variable: comma list of backends (`vulkan`, `metal`, `dx12`); default all native ones.
pub const ENV_BACKENDS: &str = "TF_WGPU_BACKENDS";
/// Environment variable: comma list of adapter indices or case-insensitive name substrings.
pub const ENV_ADAPTER: &str = "TF_WGPU_ADAPTER";

pub struct AdapterSlot {
    pub adapter: wgpu::Adapter,
    pub info: wgpu::AdapterInfo,
    device: Mutex<Option<Arc<Device>>>,
}

struct Registry {
    instance: wgpu::Instance,
    adapters: Vec<AdapterSlot>,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        crate::ffi::loader::isolate_vulkan_drivers();
        let backends = backends_from_env();
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = backends;
        let instance = wgpu::Instance::new(desc);
        let all = pollster::block_on(instance.enumerate_adapters(backends));
        let adapters = select_adapters(all, std::env::var(ENV_ADAPTER).ok().as_deref());
        for (i, slot) in adapters.iter().enumerate() {
            log::info!(
                "tensorflow-wgpu: GPU:{i} = {} ({:?}, {:?})",
                slot.info.name,
                slot.info.backend,
                slot.info.device_type
            );
        }
        Registry { instance, adapters }
    })
}

fn backends_from_env() -> wgpu::Backends {
    match std::env::var(ENV_BACKENDS) {
        Ok(list) if !list.trim().is_empty() => wgpu::Backends::from_comma_list(&list),
        _ => wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12,
    }
}

/// Orders adapters (real GPUs first), drops duplicates seen through two backends, drops software
/// adapters when a real GPU exists, and applies the `TF_WGPU_ADAPTER` selection.
fn select_adapters(all: Vec<wgpu::Adapter>, selection: Option<&str>) -> Vec<AdapterSlot> {
    let mut slots: Vec<AdapterSlot> = all
        .into_iter()
        .filter(|a| a.get_info().backend != wgpu::Backend::Noop)
        .map(|adapter| AdapterSlot { info: adapter.get_info(), adapter, device: Mutex::new(None) })
        .collect();
    let rank = |t: wgpu::DeviceType| match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    };
    slots.sort_by_key(|s| rank(s.info.device_type));
    let mut seen = Vec::new();
    slots.retain(|s| {
        let key = (s.info.vendor, s.info.device, s.info.name.clone());
        let fresh = !seen.contains(&key);
        seen.push(key);
        fresh
    });
    match selection.map(str::trim).filter(|s| !s.is_empty()) {
        Some(selection) => {
            let wanted: Vec<String> = selection.split(',').map(|s| s.trim().to_lowercase()).collect();
            let mut chosen = Vec::new();
            for (index, slot) in slots.into_iter().enumerate() {
                let name = slot.info.name.to_lowercase();
                if wanted.iter().any(|w| w.parse::<usize>().map_or(name.contains(w.as_str()), |i| i == index)) {
                    chosen.push(slot);
                }
            }
            chosen
        }
        None => {
            let has_gpu = slots.iter().any(|s| s.info.device_type != wgpu::DeviceType::Cpu);
            if has_gpu {
                slots.retain(|s| s.info.device_type != wgpu::DeviceType::Cpu);
            }
            slots
        }
    }
}

/// Number of adapters exposed as TF devices.
pub fn device_count() -> usize {
    registry().adapters.len()
}

/// Whether every exposed adapter's device gets `features` (kernels that need them register only
/// then): what the adapter offers, less what `TF_WGPU_PORTABLE_LIMITS` drops.
pub fn all_adapters_support(features: wgpu::Features) -> bool {
    let adapters = &registry().adapters;
    let profile = LimitsProfile::from_env();
    !adapters.is_empty()
        && adapters.iter().all(|s| requested_features(offered_features(&s.adapter), profile).contains(features))
}

/// Adapter information for `ordinal`.
pub fn adapter_info(ordinal: usize) -> Result<wgpu::AdapterInfo> {
    registry()
        .adapters
        .get(ordinal)
        .map(|s| s.info.clone())
        .ok_or_else(|| Error::invalid_argument(format!("no WGPU device with ordinal {ordinal}")))
}

/// The shared, lazily opened device for `ordinal`.
pub fn device(ordinal: usize) -> Result<Arc<Device>> {
    let reg = registry();
    let slot = reg
        .adapters
        .get(ordinal)
        .ok_or_else(|| Error::invalid_argument(format!("no WGPU device with ordinal {ordinal}")))?;
    let mut cached = slot.device.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dev) = cached.as_ref() {
        return Ok(dev.clone());
    }
    let dev = Arc::new(Device::open(ordinal, &slot.adapter)?);
    *cached = Some(dev.clone());
    Ok(dev)
}

/// The shared device for `ordinal` if TF has opened it, without opening it.
pub fn opened_device(ordinal: usize) -> Option<Arc<Device>> {
    let slot = registry().adapters.get(ordinal)?;
    slot.device.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Opens a fresh device that is not shared (tests use it to check shutdown).
pub fn open_private_device(ordinal: usize) -> Result<Device> {
    open_private_device_with(ordinal, LimitsProfile::from_env())
}

/// `open_private_device` with the limits of `profile`, whatever the environment says.
pub fn open_private_device_with(ordinal: usize, profile: LimitsProfile) -> Result<Device> {
    let slot = registry()
        .adapters
        .get(ordinal)
        .ok_or_else(|| Error::invalid_argument(format!("no WGPU device with ordinal {ordinal}")))?;
    Device::open_with(ordinal, &slot.adapter, profile)
}

/// Keeps the instance alive (adapters hold it too); exposed for diagnostics.
pub fn instance() -> &'static wgpu::Instance {
    &registry().instance
}
