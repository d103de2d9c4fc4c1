//! `cargo run -p gsched-xtask -- man [--check] [--bin-dir DIR]`: writes (or with `--check`,
//! compares) the man pages of the commands and daemons under `man/`, from the binaries in
//! DIR (default: the workspace's target/debug).
//! `cargo run -p gsched-xtask -- completions [--check]`: the same for the shell completions
//! under `packaging/completions/`, from the commands' option tables.
//! `cargo run -p gsched-xtask -- openapi [--check]`: the same for `docs/openapi.json`.
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
        Some("openapi") => {
            let check = match it.next().map(String::as_str) {
                None => false,
                Some("--check") => true,
                Some(other) => bail!("unknown argument {other}"),
            };
            let path = root.join("docs/openapi.json");
            let text = gsched_proto::openapi::document_text();
            if check {
                if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                    bail!("docs/openapi.json is stale (run: cargo run -p gsched-xtask -- openapi)");
                }
            } else {
                std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                println!("wrote docs/openapi.json");
            }
            return Ok(());
        }
        Some("completions") => {
            let check = match it.next().map(String::as_str) {
                None => false,
                Some("--check") => true,
                Some(other) => bail!("unknown argument {other}"),
            };
            return completions(&root, check);
        }
        _ => bail!(
            "usage: gsched-xtask man [--check] [--bin-dir DIR] | completions [--check] | openapi [--check]"
        ),
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

/// Writes (or compares) `packaging/completions/{bash,zsh,fish}/...`.
fn completions(root: &std::path::Path, check: bool) -> Result<()> {
    let mut stale = Vec::new();
    for (rel, text) in gsched_cli::completions::scripts() {
        let path = root.join("packaging/completions").join(&rel);
        if check {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(rel);
            }
        } else {
            std::fs::create_dir_all(path.parent().expect("a shell folder"))?;
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("wrote packaging/completions/{rel}");
        }
    }
    if !stale.is_empty() {
        bail!(
            "stale completions (run: cargo run -p gsched-xtask -- completions): {}",
            stale.join(", ")
        );
    }
    Ok(())
}
