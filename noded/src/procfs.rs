//! What the node side reads from `/proc`: a process's parent and start time (to find every
//! process of a job and to tell a live gsstepd from a recycled pid), its memory and I/O
//! counters (the heartbeats' live usage), and the boot time.
//!
//! A job's processes are found by walking parent links down from its gsstepd. gsstepd is a
//! child subreaper, so a double-forked daemon of the job is re-parented to gsstepd rather than
//! to init and stays findable. (cgroups, added separately, make this exact; until then the
//! walk is what bounds a job.)

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;

/// The fields of `/proc/<pid>/stat` the node side uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    /// Field 3: `R`, `S`, `Z`, ...
    pub state: char,
    /// Field 4.
    pub ppid: i32,
    /// Field 22: start time in clock ticks after boot. With the pid it identifies a process
    /// for its whole life, across pid reuse.
    pub start_ticks: u64,
    /// Fields 14 to 17: CPU time of the process and of its reaped children, in clock ticks.
    pub cpu_ticks: u64,
}

impl ProcStat {
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Parses the text of `/proc/<pid>/stat`. The command name (field 2) is in parentheses and
/// may itself contain spaces and parentheses, so fields are counted after the *last* `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let pid: i32 = text[..open].trim().parse().ok()?;
    let mut fields = text[close + 1..].split_ascii_whitespace();
    // Fields from 3 on: state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8) flags(9)
    // minflt(10) cminflt(11) majflt(12) cmajflt(13) utime(14) stime(15) cutime(16)
    // cstime(17) priority(18) nice(19) num_threads(20) itrealvalue(21) starttime(22).
    let state = fields.next()?.chars().next()?;
    let ppid: i32 = fields.next()?.parse().ok()?;
    let mut rest = fields.skip(14 - 5);
    let mut cpu_ticks = 0u64;
    for _ in 14..=17 {
        // cutime and cstime are signed in the kernel's format; never negative in practice.
        cpu_ticks += rest.next()?.parse::<i64>().ok()?.max(0) as u64;
    }
    let start_ticks: u64 = rest.nth(22 - 18)?.parse().ok()?;
    Some(ProcStat {
        pid,
        state,
        ppid,
        start_ticks,
        cpu_ticks,
    })
}

/// Reads `/proc/<pid>/stat`.
pub fn read_stat(pid: i32) -> io::Result<ProcStat> {
    read_stat_in(Path::new("/proc"), pid)
}

fn read_stat_in(proc_root: &Path, pid: i32) -> io::Result<ProcStat> {
    let path = proc_root.join(pid.to_string()).join("stat");
    let text = std::fs::read_to_string(&path)?;
    parse_stat(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("cannot parse {}", path.display()),
        )
    })
}

/// Start ticks of a process, if it exists.
pub fn start_ticks(pid: i32) -> Option<u64> {
    read_stat(pid).ok().map(|s| s.start_ticks)
}

/// Whether `pid` is alive (not a zombie) and is the process that started at `start_ticks`
/// (not a later process that got the same pid).
pub fn is_same_live_process(pid: i32, start_ticks: u64) -> bool {
    pid > 0 && read_stat(pid).is_ok_and(|s| s.start_ticks == start_ticks && !s.is_zombie())
}

/// The pids under a proc root (its numeric entries).
fn pids_in(proc_root: &Path) -> io::Result<impl Iterator<Item = i32>> {
    Ok(std::fs::read_dir(proc_root)?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()))
}

/// Every process's `(pid, ppid)` under a proc root. Processes that vanish while being read
/// are skipped.
pub fn process_table(proc_root: &Path) -> io::Result<Vec<(i32, i32)>> {
    Ok(pids_in(proc_root)?
        .filter_map(|pid| read_stat_in(proc_root, pid).ok())
        .map(|st| (st.pid, st.ppid))
        .collect())
}

/// The live processes under a proc root whose command line is a program followed by exactly
/// `arg` (how gsnoded starts gsstepd: `gsstepd <job-folder>`), for finding a gsstepd that
/// has not recorded its pid yet.
pub fn processes_started_with(proc_root: &Path, arg: &std::ffi::OsStr) -> Vec<i32> {
    use std::os::unix::ffi::OsStrExt;
    let started_with = |pid: i32| {
        let Ok(cmdline) = std::fs::read(proc_root.join(pid.to_string()).join("cmdline")) else {
            return false;
        };
        let mut words = cmdline
            .strip_suffix(b"\0")
            .unwrap_or(&cmdline)
            .split(|&b| b == 0);
        words.next().is_some_and(|w| !w.is_empty())
            && words.next() == Some(arg.as_bytes())
            && words.next().is_none()
    };
    let Ok(pids) = pids_in(proc_root) else {
        return Vec::new();
    };
    pids.filter(|&pid| started_with(pid))
        .filter(|&pid| read_stat_in(proc_root, pid).is_ok_and(|st| !st.is_zombie()))
        .collect()
}

/// All descendants of `root` in a `(pid, ppid)` table, excluding `root` itself, in
/// breadth-first order (parents before children). Cycles (impossible in a real table, but
/// a table read while processes come and go can be odd) do not loop.
pub fn descendants_of(table: &[(i32, i32)], root: i32) -> Vec<i32> {
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for &(pid, ppid) in table {
        if pid != ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut seen = BTreeSet::from([root]);
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([root]);
    while let Some(p) = queue.pop_front() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            if seen.insert(c) {
                out.push(c);
                queue.push_back(c);
            }
        }
    }
    out
}

/// All live descendants of `root` (excluding `root`), read from `/proc` now.
pub fn descendants(root: i32) -> Vec<i32> {
    match process_table(Path::new("/proc")) {
        Ok(t) => descendants_of(&t, root),
        Err(_) => Vec::new(),
    }
}

/// Virtual size and resident memory of a process, bytes, from the text of
/// `/proc/<pid>/statm` (its first two fields, in pages of `page_size` bytes).
pub fn parse_statm(text: &str, page_size: u64) -> Option<(u64, u64)> {
    let mut f = text.split_ascii_whitespace();
    let size: u64 = f.next()?.parse().ok()?;
    let resident: u64 = f.next()?.parse().ok()?;
    Some((
        size.saturating_mul(page_size),
        resident.saturating_mul(page_size),
    ))
}

/// Characters read and written by a process (`rchar`, `wchar` of `/proc/<pid>/io`): every
/// byte of `read`/`write`-like calls, the page cache's included, which is what Slurm's
/// accounting reports as disk read and write.
pub fn parse_io(text: &str) -> Option<(u64, u64)> {
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    Some((field("rchar")?, field("wchar")?))
}

/// The memory page size, bytes.
pub fn page_size() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
        Ok(Some(p)) if p > 0 => p as u64,
        _ => 4096,
    }
}

/// What one process uses; each `None` when the process is gone or its file unreadable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessUsage {
    /// `(vsize, rss)`, bytes, from `statm`.
    pub mem: Option<(u64, u64)>,
    /// `(rchar, wchar)` from `io`.
    pub io: Option<(u64, u64)>,
}

/// Reads what process `pid` uses.
pub fn read_process_usage(pid: i32, page_size: u64) -> ProcessUsage {
    let dir = Path::new("/proc").join(pid.to_string());
    ProcessUsage {
        mem: std::fs::read_to_string(dir.join("statm"))
            .ok()
            .and_then(|t| parse_statm(&t, page_size)),
        io: std::fs::read_to_string(dir.join("io"))
            .ok()
            .and_then(|t| parse_io(&t)),
    }
}

/// Parses `btime` (boot time, seconds since the epoch) from the text of `/proc/stat`.
pub fn parse_btime(text: &str) -> Option<i64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The boot time of this machine (seconds since the epoch).
pub fn boot_time() -> io::Result<i64> {
    let text = std::fs::read_to_string("/proc/stat")?;
    parse_btime(&text)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no btime line in /proc/stat"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (my (odd) prog) S 17 4242 4242 0 -1 4194560 135 0 0 0 1 2 0 0 20 0 1 0 987654 1234 56 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

    #[test]
    fn stat_with_parentheses_in_name() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(
            s,
            ProcStat {
                pid: 4242,
                state: 'S',
                ppid: 17,
                start_ticks: 987654,
                cpu_ticks: 3,
            }
        );
        assert!(!s.is_zombie());
        assert!(parse_stat("garbage").is_none());
        assert!(parse_stat("1 (x) S").is_none());
        assert!(parse_stat(") 1 (x").is_none());
    }

    #[test]
    fn statm_and_io() {
        assert_eq!(
            parse_statm("2560 300 120 10 0 200 0\n", 4096),
            Some((2560 * 4096, 300 * 4096))
        );
        assert_eq!(parse_statm("x 1", 4096), None);
        assert_eq!(parse_statm("12", 4096), None);
        let io = "rchar: 209715200\nwchar: 1234\nsyscr: 51\nsyscw: 3\nread_bytes: 0\n\
                  write_bytes: 4096\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io(io), Some((209_715_200, 1234)));
        assert_eq!(parse_io("rchar: 5\n"), None);
        assert_eq!(parse_io("rchar: x\nwchar: 1\n"), None);
        // Our own process: some memory, and the reads of this very test.
        let u = read_process_usage(std::process::id() as i32, page_size());
        let (vsize, rss) = u.mem.unwrap();
        assert!(vsize >= rss && rss > 0, "{vsize} {rss}");
        assert!(u.io.unwrap().0 > 0);
        assert_eq!(read_process_usage(-1, 4096), ProcessUsage::default());
    }

    #[test]
    fn own_stat_matches() {
        let me = std::process::id() as i32;
        let s = read_stat(me).unwrap();
        assert_eq!(s.pid, me);
        assert_eq!(s.ppid as u32, std::os::unix::process::parent_id());
        assert!(is_same_live_process(me, s.start_ticks));
        assert!(!is_same_live_process(me, s.start_ticks + 1));
        assert!(!is_same_live_process(0, s.start_ticks));
    }

    #[test]
    fn descendant_walk() {
        // 1 ─ 10 ─ 11 ─ 12
        //        └ 13      20 ─ 21 (unrelated)
        let table = [
            (1, 0),
            (10, 1),
            (11, 10),
            (12, 11),
            (13, 10),
            (20, 1),
            (21, 20),
            (30, 30),
        ];
        assert_eq!(descendants_of(&table, 10), vec![11, 13, 12]);
        assert_eq!(descendants_of(&table, 12), Vec::<i32>::new());
        assert_eq!(descendants_of(&table, 99), Vec::<i32>::new());
        // A (bogus) cycle does not loop.
        assert_eq!(descendants_of(&[(2, 3), (3, 2)], 2), vec![3]);
    }

    #[test]
    fn real_children_are_descendants() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let me = std::process::id() as i32;
        let pid = child.id() as i32;
        // Wait until the grandchild exists (up to 20 s: a loaded machine starts `sleep` late).
        let mut found = Vec::new();
        let mut kids = Vec::new();
        for _ in 0..2000 {
            // The grandchild first: a table read after it includes it.
            kids = descendants(pid);
            found = descendants(me);
            if found.contains(&pid) && !kids.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(found.contains(&pid), "{found:?}");
        assert_eq!(kids.len(), 1, "{kids:?}");
        assert!(found.contains(&kids[0]));
        let _ = child.kill();
        for k in kids {
            let _ = crate::sys::send_signal(k, libc::SIGKILL);
        }
        let _ = child.wait();
    }

    #[test]
    fn btime() {
        assert_eq!(
            parse_btime("cpu 1 2 3\nbtime 1767225600\nprocesses 5\n"),
            Some(1767225600)
        );
        assert_eq!(parse_btime("cpu 1\n"), None);
        assert!(boot_time().unwrap() > 1_000_000_000);
    }

    #[test]
    fn finds_a_process_by_its_one_argument() {
        let t = tempfile::tempdir().unwrap();
        let folder = t.path().join("job_7");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // Until the child has exec'ed, /proc shows the test program's command line.
        let mut mine = Vec::new();
        for _ in 0..500 {
            mine = processes_started_with(Path::new("/proc"), std::ffi::OsStr::new("30"));
            if mine.contains(&pid) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(mine.contains(&pid), "{mine:?} lacks {pid}");
        assert!(processes_started_with(Path::new("/proc"), folder.as_os_str()).is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
        let after = processes_started_with(Path::new("/proc"), std::ffi::OsStr::new("30"));
        assert!(!after.contains(&pid));
    }
}
