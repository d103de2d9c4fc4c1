//! The committed man pages of the commands and daemons (`man/man1`, `man/man8`) are what
//! `cargo run -p gsched-xtask -- man` makes from the programs' `--help` today, and each
//! renders without a groff warning.

use gsched_tests::bins;

#[test]
fn man_pages_match_the_programs_and_render_cleanly() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pages = gsched_xtask::pages(&bins::bin_dir()).expect("generate the pages");
    assert_eq!(pages.len(), gsched_xtask::PROGRAMS.len());
    let mut stale = Vec::new();
    for (rel, text) in &pages {
        let path = root.join("man").join(rel);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(rel.display().to_string());
        }
        match std::process::Command::new("groff")
            .args(["-wall", "-man", "-Tutf8", "-z"])
            .arg(&path)
            .output()
        {
            Ok(o) => {
                let err = String::from_utf8_lossy(&o.stderr);
                assert!(
                    o.status.success() && err.trim().is_empty(),
                    "{}: {err}",
                    rel.display()
                );
            }
            Err(_) => eprintln!("groff not installed: {} not rendered", rel.display()),
        }
    }
    // The hand-written overview renders cleanly too, and names every page generated here.
    let overview = root.join("man/man7/gsched.7");
    let text = std::fs::read_to_string(&overview).expect("man/man7/gsched.7");
    for p in gsched_xtask::PROGRAMS {
        assert!(
            text.contains(&format!("{}\\fR({})", p.name, p.section))
                || text.contains(&format!(".BR {} ({})", p.name, p.section)),
            "gsched(7) does not mention {}({})",
            p.name,
            p.section
        );
    }
    if let Ok(o) = std::process::Command::new("groff")
        .args(["-wall", "-man", "-Tutf8", "-z"])
        .arg(&overview)
        .output()
    {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success() && err.trim().is_empty(),
            "gsched.7: {err}"
        );
    }
    assert!(
        stale.is_empty(),
        "man pages differ from the programs' --help; regenerate with `cargo build --bins && cargo run -p gsched-xtask -- man`: {stale:?}"
    );
}
