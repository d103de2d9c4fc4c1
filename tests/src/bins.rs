//! Where the gsched binaries under test live.
//!
//! `cargo test` builds only the test's own package, so the daemons and commands come from a
//! preceding `cargo build --workspace --bins` (that is what `make test` does). They are taken
//! from the profile directory of the test executable (`target/<profile>/deps/xxx` →
//! `target/<profile>/`), or from `$GSCHED_BIN_DIR` when set.

use std::path::{Path, PathBuf};

/// Environment variable overriding the directory the binaries are taken from.
pub const BIN_DIR_ENV: &str = "GSCHED_BIN_DIR";

/// The daemons every cluster needs.
pub const DAEMONS: &[&str] = &["gsctld", "gsnoded", "gsstepd"];

/// The user commands.
pub const COMMANDS: &[&str] = &[
    "gsbatch",
    "gsqueue",
    "gscancel",
    "gsinfo",
    "gscontrol",
    "gsacctmgr",
    "gsprio",
    "gsrun",
    "gsstat",
    "gsshare",
];

/// The directory holding the binaries under test.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    bin_dir_from(std::env::var_os(BIN_DIR_ENV).map(PathBuf::from), &exe)
}

/// `override_dir` if given, else the profile directory of `exe` (the parent of `deps/`).
pub fn bin_dir_from(override_dir: Option<PathBuf>, exe: &Path) -> PathBuf {
    if let Some(d) = override_dir.filter(|d| !d.as_os_str().is_empty()) {
        return d;
    }
    let parent = exe.parent().unwrap_or_else(|| Path::new("."));
    if parent.file_name().is_some_and(|n| n == "deps") {
        parent.parent().unwrap_or(parent).to_path_buf()
    } else {
        parent.to_path_buf()
    }
}

/// The target gsstepd is built for as installed and packaged: a static binary, which starts
/// without the dynamic loader and glibc's start-up (scripts/build-stepd.sh).
pub const STEPD_TARGET: &str = "x86_64-unknown-linux-musl";

/// The gsstepd the node daemons run: the static build of the same profile
/// (`target/x86_64-unknown-linux-musl/<profile>/gsstepd`, which `make test` builds), else the
/// one in the binary directory (a `GSCHED_BIN_DIR` without a static build beside it).
pub fn stepd() -> PathBuf {
    let dir = bin_dir();
    let static_build = match (dir.parent(), dir.file_name()) {
        (Some(target), Some(profile)) => {
            Some(target.join(STEPD_TARGET).join(profile).join("gsstepd"))
        }
        _ => None,
    };
    match static_build.filter(|p| p.is_file()) {
        Some(p) => p,
        None => bin("gsstepd"),
    }
}

/// The path of binary `name`; panics with what to run when it is missing.
pub fn bin(name: &str) -> PathBuf {
    let dir = bin_dir();
    let p = dir.join(name);
    if !p.is_file() {
        panic!("{}", missing_message(&dir, &[name]));
    }
    p
}

/// Panics, naming every missing one, unless all `names` exist in the binary directory.
pub fn require(names: &[&str]) {
    let dir = bin_dir();
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !dir.join(n).is_file())
        .collect();
    if !missing.is_empty() {
        panic!("{}", missing_message(&dir, &missing));
    }
}

/// The message for missing binaries: which, where we looked, and what to run.
pub fn missing_message(dir: &Path, missing: &[&str]) -> String {
    let list = missing
        .iter()
        .map(|m| format!("`{m}`"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "gsched-tests: missing binar{} {list} in {}.\n\
         The integration tests run the real daemons and commands, which `cargo test` does not \
         build. Run the tests with `make test` (= cargo build --workspace --bins && cargo test \
         --workspace), or point ${BIN_DIR_ENV} at a directory holding the built binaries.",
        if missing.len() == 1 { "y" } else { "ies" },
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_dir_is_parent_of_deps() {
        assert_eq!(
            bin_dir_from(None, Path::new("/w/target/debug/deps/basic-0123")),
            PathBuf::from("/w/target/debug")
        );
        assert_eq!(
            bin_dir_from(None, Path::new("/w/target/release/foo")),
            PathBuf::from("/w/target/release")
        );
        assert_eq!(
            bin_dir_from(Some("/opt/gs".into()), Path::new("/w/target/debug/deps/x")),
            PathBuf::from("/opt/gs")
        );
        assert_eq!(
            bin_dir_from(Some("".into()), Path::new("/w/target/debug/deps/x")),
            PathBuf::from("/w/target/debug")
        );
    }

    #[test]
    fn missing_message_names_binary_and_make_test() {
        let m = missing_message(Path::new("/w/target/debug"), &["gsnoded"]);
        assert!(m.contains("`gsnoded`"), "{m}");
        assert!(m.contains("make test"), "{m}");
        assert!(m.contains("/w/target/debug"), "{m}");
        let m = missing_message(Path::new("/x"), &["gsnoded", "gsbatch"]);
        assert!(m.contains("binaries `gsnoded`, `gsbatch`"), "{m}");
    }
}
