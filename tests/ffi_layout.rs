//! Every mirrored struct has the size TF 2.21's headers compute with TF_OFFSET_OF_END.

use tensorflow_wgpu::ffi::profiler::*;
use tensorflow_wgpu::ffi::se::*;

#[test]
fn struct_sizes_match_tensorflow_2_21_headers() {
    assert_eq!(SP_PLATFORM_STRUCT_SIZE, 35);
    assert_eq!(SP_PLATFORM_FNS_STRUCT_SIZE, 88);
    assert_eq!(SP_STREAMEXECUTOR_STRUCT_SIZE, 288);
    assert_eq!(SP_DEVICE_STRUCT_SIZE, 56);
    assert_eq!(SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE, 32);
    assert_eq!(SP_DEVICE_MEMORY_BASE_STRUCT_SIZE, 40);
    assert_eq!(SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE, 64);
    assert_eq!(SP_TIMER_FNS_STRUCT_SIZE, 24);
    assert_eq!(SP_DEVICE_FNS_STRUCT_SIZE, 40);
    assert_eq!(SE_CREATE_DEVICE_FNS_PARAMS_STRUCT_SIZE, 24);
    assert_eq!(SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE, 24);
    assert_eq!(SP_ALLOCATORSTATS_STRUCT_SIZE, 96);
    assert_eq!(TP_PROFILER_STRUCT_SIZE, 24);
    assert_eq!(TP_PROFILER_FNS_STRUCT_SIZE, 40);
    assert_eq!(TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE, 64);
}

#[test]
fn event_status_values_match_the_header() {
    assert_eq!(SE_EventStatus::SE_EVENT_UNKNOWN as i32, 0);
    assert_eq!(SE_EventStatus::SE_EVENT_ERROR as i32, 1);
    assert_eq!(SE_EventStatus::SE_EVENT_PENDING as i32, 2);
    assert_eq!(SE_EventStatus::SE_EVENT_COMPLETE as i32, 3);
}

/// With `TF_INCLUDE_DIR` set (CI sets it from the installed wheel), compiles `tests/struct_sizes.c`
/// against TF's own header and compares every `*_STRUCT_SIZE` it prints with ours.
#[test]
fn struct_sizes_match_the_installed_header() {
    let Ok(include) = std::env::var("TF_INCLUDE_DIR") else {
        eprintln!("TF_INCLUDE_DIR not set: header comparison skipped");
        return;
    };
    let dir = std::env::temp_dir().join(format!("tfwgpu-sizes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("struct_sizes");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/struct_sizes.c");
    let built = std::process::Command::new("cc").args(["-I", &include, source, "-o"]).arg(&exe).status().unwrap();
    assert!(built.success(), "cannot compile against {include}");
    let out = String::from_utf8(std::process::Command::new(&exe).output().unwrap().stdout).unwrap();
    let ours = [
        ("SP_PLATFORM", SP_PLATFORM_STRUCT_SIZE),
        ("SP_PLATFORM_FNS", SP_PLATFORM_FNS_STRUCT_SIZE),
        ("SP_STREAMEXECUTOR", SP_STREAMEXECUTOR_STRUCT_SIZE),
        ("SP_DEVICE", SP_DEVICE_STRUCT_SIZE),
        ("SE_CREATE_DEVICE_PARAMS", SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE),
        ("SP_DEVICE_MEMORY_BASE", SP_DEVICE_MEMORY_BASE_STRUCT_SIZE),
        ("SE_PLATFORM_REGISTRATION_PARAMS", SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE),
        ("SP_TIMER_FNS", SP_TIMER_FNS_STRUCT_SIZE),
        ("SP_DEVICE_FNS", SP_DEVICE_FNS_STRUCT_SIZE),
        ("SE_CREATE_DEVICE_FNS_PARAMS", SE_CREATE_DEVICE_FNS_PARAMS_STRUCT_SIZE),
        ("SE_CREATE_STREAM_EXECUTOR_PARAMS", SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE),
        ("SP_ALLOCATORSTATS", SP_ALLOCATORSTATS_STRUCT_SIZE),
        ("TP_PROFILER", TP_PROFILER_STRUCT_SIZE),
        ("TP_PROFILER_FNS", TP_PROFILER_FNS_STRUCT_SIZE),
        ("TF_PROFILER_REGISTRATION_PARAMS", TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE),
    ];
    let header: std::collections::HashMap<&str, usize> =
        out.lines().filter_map(|l| l.split_once(' ')).map(|(k, v)| (k, v.parse().unwrap())).collect();
    for (name, size) in ours {
        assert_eq!(header.get(name), Some(&size), "{name}");
    }
}
