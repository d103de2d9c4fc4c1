//! A small view of `/proc`: which processes exist, their parents, command lines, working
//! directories and environments. Used to prove that no process of a job survives, and to
//! clean up whatever a failed test left behind.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// One process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    /// One-letter state (`R`, `S`, `Z`, ...).
    pub state: char,
    /// `comm`: the executable's short name.
    pub comm: String,
    /// The arguments, joined by spaces (empty for zombies and kernel threads).
    pub cmdline: String,
}

/// Parses `/proc/<pid>/stat`: `pid (comm) S ppid ...`; comm may hold spaces and parens.
pub fn parse_stat(stat: &str) -> Option<(i32, String, char, i32)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let pid = stat[..open].trim().parse().ok()?;
    let comm = stat.get(open + 1..close)?.to_string();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((pid, comm, state, ppid))
}

/// Reads one process; `None` when it is gone (or unreadable).
pub fn read_proc(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (pid, comm, state, ppid) = parse_stat(&stat)?;
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmdline = raw
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    Some(Proc {
        pid,
        ppid,
        state,
        comm,
        cmdline,
    })
}

/// Every process visible now.
pub fn all() -> Vec<Proc> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_proc)
        .collect()
}

/// Live (non-zombie) processes whose command line contains `needle`, except this process.
pub fn find_by_cmdline(needle: &str) -> Vec<Proc> {
    let me = std::process::id() as i32;
    all()
        .into_iter()
        .filter(|p| p.pid != me && p.state != 'Z' && p.cmdline.contains(needle))
        .collect()
}

/// Whether process `pid` refers to the directory `path` (given with a trailing `/`) through
/// its working directory or environment.
fn touches_path(pid: i32, path: &str) -> bool {
    if let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd")) {
        let cwd = format!("{}/", cwd.to_string_lossy());
        if cwd.starts_with(path) {
            return true;
        }
    }
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(env) => env
            .split(|b| *b == 0)
            .any(|kv| String::from_utf8_lossy(kv).contains(path)),
        Err(_) => false,
    }
}

/// `pids` and all their descendants in `procs`.
pub fn with_descendants(procs: &[Proc], pids: &BTreeSet<i32>) -> BTreeSet<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut out = BTreeSet::new();
    let mut stack: Vec<i32> = pids.iter().copied().collect();
    while let Some(pid) = stack.pop() {
        if out.insert(pid) {
            if let Some(c) = children.get(&pid) {
                stack.extend(c.iter().copied());
            }
        }
    }
    out
}

/// This process and its ancestors: never to be killed.
fn protected() -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    let mut pid = std::process::id() as i32;
    while pid > 1 && out.insert(pid) {
        match read_proc(pid) {
            Some(p) => pid = p.ppid,
            None => break,
        }
    }
    out.insert(1);
    out
}

/// Kills (SIGSTOP, then SIGKILL, so nothing forks in between) every process that belongs to
/// a test cluster living in `dir`: every process whose command line names `dir` (gsstepd is
/// started with its job folder inside the cluster's spool dir; the daemons with the config
/// path), every process whose working directory or environment refers to `dir` (job
/// processes that escaped their gsstepd), and all their descendants (found by walking ppids).
/// Repeats until nothing is left (bounded). Returns the pids it signalled.
pub fn kill_everything_under(dir: &Path) -> Vec<i32> {
    // With a trailing slash, so that /tmp/x-ab never matches /tmp/x-abc.
    let path = format!("{}/", dir.to_string_lossy().trim_end_matches('/'));
    if path.len() < 6 {
        // Never match broad paths like "/" or "/tmp".
        return Vec::new();
    }
    let keep = protected();
    let mut killed = Vec::new();
    for _round in 0..20 {
        let procs = all();
        let roots: BTreeSet<i32> = procs
            .iter()
            .filter(|p| !keep.contains(&p.pid) && p.state != 'Z')
            .filter(|p| p.cmdline.contains(&path) || touches_path(p.pid, &path))
            .map(|p| p.pid)
            .collect();
        let targets: Vec<i32> = with_descendants(&procs, &roots)
            .into_iter()
            .filter(|pid| !keep.contains(pid))
            .filter(|pid| procs.iter().any(|p| p.pid == *pid && p.state != 'Z'))
            .collect();
        if targets.is_empty() {
            break;
        }
        for pid in &targets {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGSTOP);
        }
        for pid in &targets {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        killed.extend(targets);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    killed.sort_unstable();
    killed.dedup();
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_odd_comm() {
        let s = "4242 (my (odd) proc) S 17 4242 4242 0 -1 4194560 ...";
        assert_eq!(
            parse_stat(s),
            Some((4242, "my (odd) proc".to_string(), 'S', 17))
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn sees_itself() {
        let me = read_proc(std::process::id() as i32).expect("own /proc entry");
        assert_eq!(me.pid, std::process::id() as i32);
        assert!(me.ppid > 0);
        assert!(!me.cmdline.is_empty());
    }

    #[test]
    fn descendants_follow_ppids() {
        let p = |pid, ppid| Proc {
            pid,
            ppid,
            state: 'S',
            comm: String::new(),
            cmdline: String::new(),
        };
        let procs = vec![p(10, 1), p(11, 10), p(12, 11), p(13, 1), p(14, 13)];
        let got = with_descendants(&procs, &[10].into_iter().collect());
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![10, 11, 12]);
    }

    #[test]
    fn kills_a_tree_marked_by_its_cwd() {
        let dir = tempfile::Builder::new()
            .prefix("gsched-procs-test-")
            .tempdir()
            .unwrap();
        // A shell in `dir` with a child; both must go.
        let mut child = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg("sleep 300 & sleep 300; wait")
            .current_dir(dir.path())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while all().iter().filter(|p| p.ppid == child.id() as i32).count() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "children never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let killed = kill_everything_under(dir.path());
        assert!(killed.contains(&(child.id() as i32)), "{killed:?}");
        assert!(killed.len() >= 3, "{killed:?}");
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(!killed.contains(&(std::process::id() as i32)));
    }
}
