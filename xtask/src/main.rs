//! `cargo run -p gsched-xtask -- man [--check] [--bin-dir DIR]`: writes (or with `--check`,
//! compares) the man pages of the commands and daemons under `man/`, from the binaries in
//! DIR (default: the workspace's target/debug).
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut check = false;
    let mut bin_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("debug");
    let mut it = args.iter();
    match it.next().map(String::as_str) {
        Some("man") => {}
        _ => bail!("usage: gsched-xtask man [--check] [--bin-dir DIR]"),
    }
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => check = true,
            "--bin-dir" => {
                bin_dir = PathBuf::from(it.next().context("--bin-dir needs a directory")?)
            }
            other => bail!("unknown argument {other}"),
        }
    }
    let mut stale = Vec::new();
    for (rel, text) in gsched_xtask::pages(&bin_dir)? {
        let path = root.join("man").join(&rel);
        if check {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(rel.display().to_string());
            }
        } else {
            std::fs::create_dir_all(path.parent().expect("man/manN"))?;
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("wrote man/{}", rel.display());
        }
    }
    if !stale.is_empty() {
        bail!(
            "stale man pages (run: cargo build --bins && cargo run -p gsched-xtask -- man): {}",
            stale.join(", ")
        );
    }
    Ok(())
}
