//! Fake GPUs for the integration tests on machines without any: the fake
//! `libnvidia-ml.so.1` (`plugins/gpu/tests/fake_nvml.c`, compiled here with `cc`), which the
//! daemons load from their `LD_LIBRARY_PATH` through the real nvml-wrapper code path and which
//! reports as many GPUs, as busy, as the `FAKE_NVML_*` variables of their environment say.
//!
//! With `AutoDetect=nvml` and no `Name=gpu` lines in gres.conf, gsnoded takes NVML's GPUs as
//! they are, so a cluster gets GPUs, placement and samples without root; tests that confine
//! jobs to their GPUs add device files of their own (`tests/gpu_node.rs`).

use crate::ClusterOpts;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A folder holding the compiled fake NVML library (`lib/libnvidia-ml.so.1`), removed when
/// dropped; tests may put more fakes in it.
pub struct FakeNvml {
    dir: tempfile::TempDir,
}

impl FakeNvml {
    /// Compiles the library; `None`, saying why, where there is no C compiler.
    pub fn build() -> Option<FakeNvml> {
        let dir = tempfile::tempdir().expect("temporary folder");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/gpu/tests/fake_nvml.c");
        match Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.path().join("lib/libnvidia-ml.so.1"))
            .arg(&src)
            .status()
        {
            Ok(s) => assert!(s.success(), "cc failed on {}", src.display()),
            Err(e) => {
                eprintln!("skipping: no C compiler for the fake NVML library ({e}); install gcc");
                return None;
            }
        }
        Some(FakeNvml { dir })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A path inside the folder.
    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// `opts` with the library on the daemons' `LD_LIBRARY_PATH`, `gpus` GPUs (NVML's default
    /// model, `NVIDIA A100-SXM4-80GB`, 80 GiB) at `util`% utilization, and a gres.conf that
    /// has gsnoded find them through NVML.
    pub fn cluster_opts(&self, opts: ClusterOpts, gpus: u32, util: u32) -> ClusterOpts {
        opts.file("gres.conf", "AutoDetect=nvml\n")
            .daemon_env("LD_LIBRARY_PATH", &self.path("lib").display().to_string())
            .daemon_env("FAKE_NVML_GPUS", &gpus.to_string())
            .daemon_env("FAKE_NVML_UTIL", &util.to_string())
    }
}
