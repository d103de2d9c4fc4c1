//! File helpers shared by both versions: control files are written with one `write` call
//! (the kernel takes a value per write), folders are walked depth-first, and errors name
//! the file.

use crate::CgroupError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub(crate) fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    // On a cgroup file system a missing control file is a missing controller: never create
    // one. A fake tree (tests) is a plain folder, whose files are created.
    use std::io::Write;
    let fake = path.parent().is_some_and(|d| !is_cgroup_dir(d));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(fake)
        .truncate(fake)
        .open(path)
        .map_err(|e| CgroupError::io("open", path, e))?;
    f.write_all(value.as_bytes())
        .map_err(|e| CgroupError::io("write", path, e))
}

pub(crate) fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

pub(crate) fn read_u64(path: &Path) -> Option<u64> {
    read(path)?.trim().parse().ok()
}

/// The value of `key` in a flat keyed file (`key value` lines: `memory.events`,
/// `memory.oom_control`, `cpu.stat`, `cpuacct.stat`).
pub(crate) fn keyed(path: &Path, key: &str) -> Option<u64> {
    let text = read(path)?;
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next()? == key).then(|| it.next()?.parse().ok())?
    })
}

pub(crate) fn mkdir(path: &Path) -> Result<(), CgroupError> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(CgroupError::io("create", path, e)),
    }
}

/// `dir` and every folder below it, children before parents.
pub(crate) fn subtree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(subtree(&e.path()));
            }
        }
    }
    if dir.is_dir() {
        out.push(dir.to_path_buf());
    }
    out
}

/// The pids in `cgroup.procs` of `dir` and every folder below it.
pub(crate) fn procs_below(dir: &Path) -> Vec<i32> {
    let mut pids: Vec<i32> = subtree(dir)
        .iter()
        .filter_map(|d| read(&d.join("cgroup.procs")))
        .flat_map(|t| {
            t.lines()
                .filter_map(|l| l.trim().parse::<i32>().ok())
                .collect::<Vec<_>>()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Removes `dir` and the folders below it (children first). On a cgroup file system only
/// folders can be removed (the control files go with them); in a fake tree the files are
/// removed first. A folder still busy (a process not yet gone) is retried for a moment.
pub(crate) fn remove_tree(dir: &Path) -> Result<(), CgroupError> {
    let deadline = Instant::now() + Duration::from_secs(2);
    for d in subtree(dir) {
        loop {
            let r = std::fs::remove_dir(&d);
            match r {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) if e.raw_os_error() == Some(nix::libc::ENOTEMPTY) && !is_cgroup_dir(&d) => {
                    // A fake tree: plain files inside.
                    if let Ok(entries) = std::fs::read_dir(&d) {
                        for f in entries.flatten() {
                            if f.file_type().is_ok_and(|t| !t.is_dir()) {
                                let _ = std::fs::remove_file(f.path());
                            }
                        }
                    }
                }
                // Busy: a task that was just killed is not released yet.
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(CgroupError::io("remove", &d, e)),
            }
        }
    }
    Ok(())
}

/// Whether `d` is a folder of a real cgroup file system (its files are the kernel's).
fn is_cgroup_dir(d: &Path) -> bool {
    nix::sys::statfs::statfs(d)
        .map(|s| {
            let t = s.filesystem_type();
            t == nix::sys::statfs::CGROUP_SUPER_MAGIC || t == nix::sys::statfs::CGROUP2_SUPER_MAGIC
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_files_and_procs() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("memory.events");
        std::fs::write(&f, "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n").unwrap();
        assert_eq!(keyed(&f, "oom_kill"), Some(2));
        assert_eq!(keyed(&f, "oom"), Some(1));
        assert_eq!(keyed(&f, "nothing"), None);
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        std::fs::write(t.path().join("a/cgroup.procs"), "5\n3\n").unwrap();
        std::fs::write(t.path().join("a/b/cgroup.procs"), "9\n3\n").unwrap();
        assert_eq!(procs_below(&t.path().join("a")), vec![3, 5, 9]);
        remove_tree(&t.path().join("a")).unwrap();
        assert!(!t.path().join("a").exists());
    }
}
