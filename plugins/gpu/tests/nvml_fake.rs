//! The real nvml-wrapper path against the fake `libnvidia-ml.so.1` (`fake_nvml.c`, compiled
//! here with `cc`): no NVIDIA GPU or driver is needed, and what NVML reports is set through
//! the fake's environment variables.

use gsched_gpu::nvml::NvmlBackend;
use gsched_gpu::GpuBackend;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles the fake NVML library into `dir`; `None` (the test says why) without a C compiler.
pub fn build_fake_nvml(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_nvml.c");
    let out = dir.join("libnvidia-ml.so.1");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    match Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(out),
        Ok(s) => panic!("{cc} failed ({s}) compiling {}", src.display()),
        Err(e) => {
            eprintln!("skipping: no C compiler ({cc}: {e}); install gcc");
            None
        }
    }
}

#[test]
fn nvml_wrapper_reads_the_fake_library() {
    let t = tempfile::tempdir().unwrap();
    let Some(lib) = build_fake_nvml(t.path()) else {
        return;
    };
    let procs = t.path().join("procs");
    std::fs::write(&procs, "1 4242 1000 37\n0 77 5 1\n").unwrap();
    std::env::set_var("FAKE_NVML_GPUS", "3");
    std::env::set_var("FAKE_NVML_NAME", "NVIDIA H100 80GB HBM3");
    std::env::set_var("FAKE_NVML_MEMORY_MB", "81559");
    std::env::set_var("FAKE_NVML_USED_MB", "1200");
    std::env::set_var("FAKE_NVML_UTIL", "63");
    std::env::set_var("FAKE_NVML_MIG", "2");
    std::env::set_var("FAKE_NVML_PROCS_FILE", &procs);
    let b = NvmlBackend::open(Some(lib.as_os_str())).unwrap();
    let gpus = b.detect().unwrap();
    assert_eq!(gpus.len(), 3);
    assert_eq!(gpus[0].model, "NVIDIA H100 80GB HBM3");
    assert_eq!(gpus[1].minor, Some(1));
    assert_eq!(gpus[0].memory_mb, 81559);
    assert!(gpus[2].mig && !gpus[0].mig);
    assert_eq!(
        gpus[1].uuid.as_deref(),
        Some("GPU-fa4e0000-0000-0000-0000-000000000001")
    );
    let s = b.sample(1).unwrap();
    assert_eq!((s.util_percent, s.mem_used_mb), (63, 1200));
    assert_eq!(s.processes.len(), 1);
    assert_eq!(
        (
            s.processes[0].pid,
            s.processes[0].mem_used_mb,
            s.processes[0].sm_percent
        ),
        (4242, 1000, 37)
    );
    assert!(b.sample(7).is_err());
    // A library that is not there: a clear start-up error.
    let e = NvmlBackend::open(Some(t.path().join("nope.so").as_os_str()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("install the NVIDIA driver, or set AutoDetect=off"),
        "{e}"
    );
}
