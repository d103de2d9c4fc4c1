//! As root, gsnoded runs each job as its user: `gsbatch --uid=gstest` (root only) gives a job
//! whose processes and output file belong to gstest. Needs root and the user `gstest`, which
//! `.ci/run` creates; elsewhere the test says why it skips.

use gsched_tests::{is_root, secs, user_ids, ClusterOpts, JobState, TestCluster};
use std::os::unix::fs::MetadataExt;

const TEST_USER: &str = "gstest";

/// The reason to skip, if any.
fn skip_reason() -> Option<String> {
    if !is_root() || user_ids(TEST_USER).is_none() {
        return Some(format!(
            "skipping: needs root and user {TEST_USER} (created by .ci/run); running as {}{}",
            gsched_tests::current_user(),
            if user_ids(TEST_USER).is_none() {
                format!(", and user {TEST_USER} does not exist")
            } else {
                String::new()
            }
        ));
    }
    None
}

#[test]
fn job_runs_as_submitting_user() {
    if let Some(why) = skip_reason() {
        eprintln!("{why}");
        return;
    }
    let (uid, gid) = user_ids(TEST_USER).unwrap();
    let c = TestCluster::start(ClusterOpts::named("setuid"));
    let id = c.submit([
        &format!("--uid={TEST_USER}"),
        "-o",
        "who-%u-%j.out",
        "--wrap",
        "id -un; id -u; id -g; pwd; touch made-by-job",
    ]);
    let j = c.wait_terminal(id, secs(30));
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!((j.user_id, j.user_name.as_str()), (uid, TEST_USER), "{j:?}");
    assert_eq!(j.group_id, gid, "{j:?}");

    let name = format!("who-{TEST_USER}-{id}.out");
    let text = c.read_work_file(&name);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text:?}");
    assert_eq!(lines[0], TEST_USER);
    assert_eq!(lines[1], uid.to_string());
    assert_eq!(lines[2], gid.to_string());
    assert_eq!(
        std::path::Path::new(lines[3]).canonicalize().unwrap(),
        c.workdir().canonicalize().unwrap()
    );
    for f in [name.as_str(), "made-by-job"] {
        let meta = std::fs::metadata(c.work_file(f)).unwrap();
        assert_eq!(meta.uid(), uid, "{f} must belong to {TEST_USER}");
    }
}
