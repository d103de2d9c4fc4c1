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

/// The target of the programs that start once per job (gsstepd, gsbatch) as installed and
/// packaged: static binaries, which start without the dynamic loader and glibc's start-up
/// (scripts/build-static.sh).
pub const STATIC_TARGET: &str = "x86_64-unknown-linux-musl";

/// The static build of `name` for the same profile
/// (`target/x86_64-unknown-linux-musl/<profile>/<name>`, which `make test` builds), if there
/// is one. (Its age is not compared with the glibc build's: `cargo test` relinks those with
/// the test features, so a fresh static build looks older. `make test` rebuilds both.)
pub fn static_build(name: &str) -> Option<PathBuf> {
    let dir = bin_dir();
    let p = dir
        .parent()?
        .join(STATIC_TARGET)
        .join(dir.file_name()?)
        .join(name);
    if !p.is_file() {
        return None;
    }
    Some(p)
}

/// The directory of links to the static commands (scripts/build-static.sh makes it), which
/// the clusters' commands find first on `PATH`, if the static gsbatch is built.
pub fn static_commands_dir() -> Option<PathBuf> {
    let gsbatch = static_build("gsbatch")?;
    let d = gsbatch.parent()?.join("commands");
    d.join("gsbatch").exists().then_some(d)
}

/// The gsstepd the node daemons run: the static build when there is one, else the one in
/// the binary directory (a `GSCHED_BIN_DIR` without a static build beside it).
pub fn stepd() -> PathBuf {
    static_build("gsstepd").unwrap_or_else(|| bin("gsstepd"))
}

/// Whether the ELF executable at `path` names a program interpreter (`PT_INTERP`): true for a
/// dynamically linked program, false for a static one. `None` when it is not a 64-bit
/// little-endian ELF file.
pub fn has_program_interpreter(path: &Path) -> Option<bool> {
    let b = std::fs::read(path).ok()?;
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    const PT_INTERP: u32 = 3;
    let mut found = false;
    for i in 0..phnum {
        found |= u32_at(phoff + i * phentsize)? == PT_INTERP;
    }
    Some(found)
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
    fn program_interpreter_of_dynamic_and_static_programs() {
        assert_eq!(has_program_interpreter(Path::new("/bin/sh")), Some(true));
        assert_eq!(has_program_interpreter(Path::new("/etc/passwd")), None);
        let dir = tempfile::tempdir().unwrap();
        let short = dir.path().join("short");
        std::fs::write(&short, b"\x7fELF\x02\x01").unwrap();
        assert_eq!(has_program_interpreter(&short), None);
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
