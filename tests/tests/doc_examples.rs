//! The configuration examples of the documentation load: every fenced block marked
//! `gsched.conf` in README.md and docs/*.md is put into a config (beside the same page's
//! `gres.conf` block, if it has one, and a small price file for `PriceFile=`) and loaded as
//! gsctld loads its config. A renamed key or a changed syntax fails here, not at a reader's.

use gsched_proto::config::Config;
use gsched_proto::gres_conf::GresConf;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The pages with examples: README.md and every docs/*.md.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// The fenced blocks of `text` whose info string is `tag`.
fn blocks(text: &str, tag: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Inside a fenced block: Some(its text if it is one of ours).
    let mut open: Option<Option<String>> = None;
    for line in text.lines() {
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => {
                let ours = line.trim_start().trim_start_matches('`').trim() == tag;
                open = Some(ours.then(String::new));
            }
            (Some(b), true) => {
                if let Some(b) = b.take() {
                    out.push(b);
                }
                open = None;
            }
            (Some(Some(b)), false) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    out
}

#[test]
fn every_gsched_conf_example_of_the_docs_loads() {
    let mut checked = 0;
    let mut gres_checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let gres = blocks(&text, "gres.conf");
        for (k, block) in blocks(&text, "gsched.conf").iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path().display();
            let mut conf = format!(
                "ClusterName=docs\nSlurmctldHost=h(127.0.0.1)\nAuthType=auth/none\n\
                 StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n"
            );
            if !block
                .lines()
                .any(|l| l.trim_start().starts_with("NodeName="))
            {
                conf.push_str("NodeName=n[1-2] CPUs=4 RealMemory=8000\n");
                conf.push_str("PartitionName=debug Nodes=ALL Default=YES\n");
            }
            conf.push_str(block);
            // EPEX layout (DATE,HOUR,PRICE), what `PriceFile=prices.csv` examples name.
            std::fs::write(
                dir.path().join("prices.csv"),
                "Date,Hour,Price\n2026-12-03,1,85.2\n2026-12-03,2,80.1\n",
            )
            .unwrap();
            if let Some(g) = gres.first() {
                std::fs::write(dir.path().join("gres.conf"), g).unwrap();
            }
            let path = dir.path().join("gsched.conf");
            std::fs::write(&path, &conf).unwrap();
            if let Err(e) = Config::load(&path) {
                panic!(
                    "{} example {}:\n{block}\ndoes not load: {e}",
                    page.display(),
                    k + 1
                );
            }
            if !gres.is_empty() {
                match GresConf::load_beside(&path) {
                    Ok(Some(_)) => gres_checked += 1,
                    Ok(None) => panic!("{}: gres.conf example not found", page.display()),
                    Err(e) => panic!("{} gres.conf example: {e}", page.display()),
                }
            }
            checked += 1;
        }
    }
    // The pages hold at least these (GPU sharing, two price configs): a test that found
    // nothing would prove nothing.
    assert!(checked >= 3, "only {checked} gsched.conf examples found");
    assert!(gres_checked >= 1, "no gres.conf example checked");
}
