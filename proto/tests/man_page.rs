//! `gsched.conf(5)` documents exactly the keys the config parser implements: every accepted
//! global, node and partition key has an entry (`.TP` then `\fBKey\fR`), and every entry
//! names an accepted key, so the page cannot drift from the parser.

use gsched_proto::config::{GLOBAL_KEYS, NODE_KEYS, PARTITION_KEYS};
use gsched_proto::notify_config::WEBHOOK_KEYS;
use gsched_proto::price_conf::PRICE_WINDOW_KEYS;
use std::collections::BTreeSet;

const PAGE: &str = include_str!("../../man/man5/gsched.conf.5");

/// The keys that open a `.TP` entry: `\fBKey\fR=...` (several may share one line, separated
/// by `, `).
fn documented() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let lines: Vec<&str> = PAGE.lines().collect();
    for w in lines.windows(2) {
        if w[0].trim() != ".TP" {
            continue;
        }
        let mut rest = w[1];
        while let Some(i) = rest.find("\\fB") {
            let after = &rest[i + 3..];
            let Some(end) = after.find("\\fR") else { break };
            let key = &after[..end];
            rest = &after[end + 3..];
            if key.chars().all(|c| c.is_ascii_alphanumeric()) && !key.is_empty() {
                out.insert(key.to_string());
            }
            // Only the keys before the first `=` of each alternative.
            if !rest.starts_with(", ") && !rest.starts_with(" or ") {
                break;
            }
        }
    }
    out
}

#[test]
fn every_accepted_key_is_documented_and_only_those() {
    let doc = documented();
    let accepted: BTreeSet<String> = GLOBAL_KEYS
        .iter()
        .chain(NODE_KEYS)
        .chain(PARTITION_KEYS)
        .chain(WEBHOOK_KEYS)
        .chain(PRICE_WINDOW_KEYS)
        .map(|k| k.to_string())
        .collect();
    let missing: Vec<&String> = accepted
        .iter()
        .filter(|k| !doc.contains(*k) && !PAGE.contains(&format!("\\fB{k}\\fR")))
        .collect();
    assert!(
        missing.is_empty(),
        "accepted but not documented in man/man5/gsched.conf.5: {missing:?}"
    );
    let unknown: Vec<&String> = doc.iter().filter(|k| !accepted.contains(*k)).collect();
    assert!(
        unknown.is_empty(),
        "documented in man/man5/gsched.conf.5 but not accepted by the parser: {unknown:?}"
    );
}

#[test]
fn page_renders_without_groff_warnings() {
    let Ok(out) = std::process::Command::new("groff")
        .args(["-wall", "-man", "-Tutf8", "-z"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../man/man5/gsched.conf.5"
        ))
        .output()
    else {
        eprintln!("groff not installed: rendering not checked");
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.trim().is_empty(), "{err}");
}

const CGROUP_PAGE: &str = include_str!("../../man/man5/cgroup.conf.5");

/// `cgroup.conf(5)` documents exactly the keys of `cgroup.conf` the parser implements.
#[test]
fn cgroup_conf_page_documents_exactly_its_keys() {
    use gsched_proto::cgroup_conf::CGROUP_KEYS;
    let mut doc = BTreeSet::new();
    let lines: Vec<&str> = CGROUP_PAGE.lines().collect();
    for w in lines.windows(2) {
        if w[0].trim() == ".TP" {
            if let Some(rest) = w[1].strip_prefix("\\fB") {
                if let Some(end) = rest.find("\\fR") {
                    doc.insert(rest[..end].to_string());
                }
            }
        }
    }
    let accepted: BTreeSet<String> = CGROUP_KEYS.iter().map(|k| k.to_string()).collect();
    assert_eq!(
        doc, accepted,
        "man/man5/cgroup.conf.5 and CGROUP_KEYS differ"
    );
}

#[test]
fn cgroup_conf_page_renders_without_groff_warnings() {
    let Ok(out) = std::process::Command::new("groff")
        .args(["-wall", "-man", "-Tutf8", "-z"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../man/man5/cgroup.conf.5"
        ))
        .output()
    else {
        eprintln!("groff not installed: rendering not checked");
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.trim().is_empty(), "{err}");
}
