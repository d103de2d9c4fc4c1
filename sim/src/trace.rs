//! Workload traces: what gssim replays, read from the formats admins and researchers have.
//!
//! Every reader turns its format into the same [`Trace`]: jobs with a submit time, the
//! runtime they really had, the limit their user asked for, their size, their user and a
//! name key (for runtime prediction). Jobs that cannot be replayed (no runtime, no size) are
//! counted in [`Trace::dropped`] with the reason, never silently lost.
//!
//! * **SWF** (Standard Workload Format of the Parallel Workloads Archive), plain or gzipped:
//!   the rules are RLScheduler's (see `literature.md` §1.1) so that figures compare: a runtime
//!   below zero becomes 10 s, a runtime of zero drops the job, the requested time is field 9
//!   or the runtime when field 9 is unknown, the size is the larger of the requested
//!   processors (field 8) and the allocated ones (field 5). The header's `MaxNodes`/`MaxProcs` give the
//!   machine.
//! * **Alibaba GPU v2023** (`openb_pod_list_*.csv`): see [`read_alibaba`].
//! * **gsched accounting history**: the JSON answer of `POST /v1/jobs/history` (what
//!   `gssim --export-history` saves): see [`read_history`].

use std::collections::BTreeMap;
use std::io::{BufReader, Read};
use std::path::Path;

use gsched_proto::api::JobsResponse;
use gsched_proto::job::JobState;

/// One job of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceJob {
    /// The id in the trace (for messages).
    pub trace_id: u64,
    /// Seconds, in the trace's clock.
    pub submit: i64,
    /// The runtime the job really had, seconds (at least 1).
    pub run: i64,
    /// The requested time (the user's estimate and kill time), seconds; `None` = unlimited.
    pub limit: Option<i64>,
    /// Tasks (`-n`); each takes `cpus_per_task` CPUs.
    pub tasks: u32,
    pub cpus_per_task: u32,
    /// Memory per node, MiB; `None` = not scheduled.
    pub mem_mb: Option<u64>,
    /// Whether all tasks must be on one node (`-N 1`).
    pub one_node: bool,
    pub user: u32,
    /// The executable or job name, as a number; `None` = unknown.
    pub name: Option<u64>,
    /// What the job asked of GPUs, when the trace says (the Alibaba GPU trace): used by
    /// `--gpu-sharing`, which schedules real GPUs instead of milli-GPUs as CPUs.
    pub gpu: Option<TraceGpu>,
}

/// A trace job's GPU request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceGpu {
    /// Whole GPUs (`num_gpu`).
    pub count: u32,
    /// With one GPU: the share of it, in thousandths (`gpu_milli`; 1000 = all of it).
    pub milli: u32,
    /// CPUs, in thousandths (`cpu_milli`).
    pub cpu_milli: u64,
}

impl TraceGpu {
    /// Whether the job could share a GPU (it asks for part of one).
    pub fn fractional(&self) -> bool {
        self.count == 1 && self.milli < 1000
    }
}

impl TraceJob {
    /// CPUs the job holds while it runs.
    pub fn cpus(&self) -> u64 {
        self.tasks as u64 * self.cpus_per_task.max(1) as u64
    }
}

/// The machine a trace describes, if it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MachineHint {
    pub nodes: Option<u32>,
    pub procs: Option<u32>,
}

/// Nodes of a trace that describes its own cluster (the Alibaba node list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceNode {
    pub name: String,
    pub cpus: u32,
    pub mem_mb: u64,
    /// Its GPUs and their model, and its real CPUs (`cpu_milli` / 1000), for `--gpu-sharing`.
    pub gpus: u32,
    pub gpu_model: String,
    pub real_cpus: u32,
}

/// A loaded trace.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Sorted by submit time, then trace order.
    pub jobs: Vec<TraceJob>,
    pub machine: MachineHint,
    /// The cluster the trace ran on, when the trace comes with one.
    pub nodes: Vec<TraceNode>,
    /// Jobs left out, by reason (sorted, so output is stable).
    pub dropped: BTreeMap<String, u64>,
    /// What the scheduled resource is ("CPU", or "milli-GPU" for the Alibaba trace).
    pub resource: &'static str,
    /// The SWF header's `UnixStartTime` (submit times count from it) and `TimeZoneString`
    /// (the site's zone), when it has both: the trace's own local clock.
    pub clock: Option<TraceClock>,
}

/// Where a trace's times are on the calendar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceClock {
    /// Unix time of submit time 0.
    pub unix_start: i64,
    /// The site's time zone (IANA name).
    pub zone: String,
}

impl Trace {
    fn drop_job(&mut self, why: &str) {
        *self.dropped.entry(why.to_string()).or_default() += 1;
    }

    fn finish(mut self) -> Trace {
        // A stable sort keeps trace order among jobs submitted in the same second.
        self.jobs.sort_by_key(|j| j.submit);
        self
    }
}

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} line {line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Format { path: String, message: String },
}

/// The formats gssim reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Swf,
    Alibaba,
    History,
}

impl Format {
    pub const NAMES: &'static [&'static str] = &["swf", "alibaba", "history"];

    pub fn from_name(s: &str) -> Option<Format> {
        match s {
            "swf" => Some(Format::Swf),
            "alibaba" => Some(Format::Alibaba),
            "history" => Some(Format::History),
            _ => None,
        }
    }

    /// The format a file name suggests: `.swf`/`.swf.gz`, `.csv`, `.json`.
    pub fn guess(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        if name.ends_with(".swf") {
            Some(Format::Swf)
        } else if name.ends_with(".csv") {
            Some(Format::Alibaba)
        } else if name.ends_with(".json") {
            Some(Format::History)
        } else {
            None
        }
    }
}

/// Reads a trace file of `format` (gzipped when its name ends in `.gz`).
pub fn load(path: &Path, format: Format) -> Result<Trace, TraceError> {
    let text = read_text(path)?;
    let name = path.display().to_string();
    match format {
        Format::Swf => parse_swf(&text, &name),
        Format::Alibaba => {
            let nodes = alibaba_node_list(path)?;
            read_alibaba(&text, &name, nodes)
        }
        Format::History => read_history(&text, &name),
    }
}

/// The file's text, gunzipped when its name ends in `.gz`.
pub fn read_text(path: &Path) -> Result<String, TraceError> {
    let io = |source| TraceError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut text = String::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::MultiGzDecoder::new(BufReader::new(file))
            .read_to_string(&mut text)
            .map_err(io)?;
    } else {
        BufReader::new(file).read_to_string(&mut text).map_err(io)?;
    }
    Ok(text)
}

/// The leading whole number of a header value (`338 (batch partition; 512 total)` → 338).
fn leading_number(v: &str) -> Option<u32> {
    let digits: String = v
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// Parses SWF text (see the module documentation for the rules).
pub fn parse_swf(text: &str, path: &str) -> Result<Trace, TraceError> {
    let mut t = Trace {
        resource: "CPU",
        ..Trace::default()
    };
    let (mut unix_start, mut zone) = (None, None);
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(h) = line.strip_prefix(';') {
            if let Some((k, v)) = h.split_once(':') {
                match k.trim() {
                    "MaxNodes" => t.machine.nodes = leading_number(v),
                    "MaxProcs" => t.machine.procs = leading_number(v),
                    "UnixStartTime" => unix_start = v.trim().parse::<i64>().ok(),
                    "TimeZoneString" => zone = Some(v.trim().to_string()),
                    _ => {}
                }
            }
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let err = |message: String| TraceError::Parse {
            path: path.to_string(),
            line: n + 1,
            message,
        };
        if f.len() < 18 {
            return Err(err(format!(
                "an SWF job line has 18 fields, this one has {}; is this an SWF file? (--format)",
                f.len()
            )));
        }
        let num = |i: usize| -> Result<f64, TraceError> {
            f[i].parse::<f64>()
                .map_err(|_| err(format!("field {} is \"{}\", not a number", i + 1, f[i])))
        };
        let id = num(0)? as u64;
        let submit = num(1)? as i64;
        let mut run = num(3)? as i64;
        let alloc = num(4)? as i64;
        let req_procs = num(7)? as i64;
        let req_time = num(8)? as i64;
        let user = num(11)? as i64;
        let exe = num(13)? as i64;
        if run == 0 {
            t.drop_job("runtime 0");
            continue;
        }
        if run < 0 {
            run = 10;
        }
        // The processors the job held: the larger of requested and allocated (RLScheduler's
        // rule; the two differ in a few traces, HPC2N for 729 jobs).
        let procs = req_procs.max(alloc);
        if procs <= 0 {
            t.drop_job("no processor count");
            continue;
        }
        t.jobs.push(TraceJob {
            gpu: None,
            trace_id: id,
            submit,
            run,
            limit: Some(if req_time > 0 { req_time } else { run }),
            tasks: procs.min(u32::MAX as i64) as u32,
            cpus_per_task: 1,
            mem_mb: None,
            one_node: false,
            user: user.max(0) as u32,
            name: (exe >= 0).then_some(exe as u64),
        });
    }
    if let (Some(unix_start), Some(zone)) = (unix_start, zone) {
        t.clock = Some(TraceClock { unix_start, zone });
    }
    Ok(t.finish())
}

/// The node list next to an Alibaba pod list: `openb_node_list_gpu_node.csv` in the same
/// folder, if present.
fn alibaba_node_list(pod_list: &Path) -> Result<Vec<TraceNode>, TraceError> {
    let Some(dir) = pod_list.parent() else {
        return Ok(Vec::new());
    };
    let path = dir.join("openb_node_list_gpu_node.csv");
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text = read_text(&path)?;
    let name = path.display().to_string();
    let mut nodes = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        let bad = |message: String| TraceError::Parse {
            path: name.clone(),
            line: n + 1,
            message,
        };
        if f.len() < 4 {
            return Err(bad("expected sn,cpu_milli,memory_mib,gpu,model".into()));
        }
        let gpus: u32 = f[3]
            .trim()
            .parse()
            .map_err(|_| bad(format!("gpu is \"{}\", not a number", f[3])))?;
        let mem: u64 = f[2]
            .trim()
            .parse()
            .map_err(|_| bad(format!("memory_mib is \"{}\", not a number", f[2])))?;
        let cpu_milli: u64 = f[1].trim().parse().unwrap_or(0);
        nodes.push(TraceNode {
            name: f[0].trim().to_string(),
            cpus: gpus * 1000,
            mem_mb: mem,
            gpus,
            gpu_model: f
                .get(4)
                .map(|m| m.trim().to_ascii_lowercase())
                .unwrap_or_default(),
            real_cpus: (cpu_milli / 1000).min(u32::MAX as u64) as u32,
        });
    }
    Ok(nodes)
}

/// Reads the Alibaba GPU v2023 pod list (`name,cpu_milli,memory_mib,num_gpu,gpu_milli,
/// gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time`).
///
/// By default (without `--gpu-sharing`, see [`crate::gpu`], which schedules real GPUs with
/// each job's [`TraceGpu`]) this trace is replayed with the **GPU as the scheduled resource**,
/// in milli-GPUs, to compare the CPU policies on it: a node of `g`
/// GPUs (from `openb_node_list_gpu_node.csv` next to the pod list) has `1000 g` "CPUs", a pod
/// asking for `n` whole GPUs needs `1000 n` of them and a GPU-sharing pod `gpu_milli`, all on
/// one node; node memory and pod memory are scheduled as they are. A fractional pod may
/// straddle two GPUs of a node in this model, which a real GPU-sharing scheduler would not
/// allow, so packing is slightly optimistic. CPU-only pods (`num_gpu` 0) and pods that were
/// never scheduled are left out (and counted). The submit time is `creation_time`, the runtime
/// `deletion_time - scheduled_time` (right-censored for pods still running when the trace
/// ends), and the trace has no time limits, so the runtime is the limit (perfect
/// estimates: backfill policies differ little on it).
pub fn read_alibaba(text: &str, path: &str, nodes: Vec<TraceNode>) -> Result<Trace, TraceError> {
    let mut t = Trace {
        resource: "milli-GPU",
        nodes,
        ..Trace::default()
    };
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l).unwrap_or("");
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let col = |name: &str| -> Result<usize, TraceError> {
        cols.iter()
            .position(|c| *c == name)
            .ok_or_else(|| TraceError::Format {
                path: path.to_string(),
                message: format!(
                    "no column \"{name}\" in the header; expected the Alibaba GPU v2023 pod list"
                ),
            })
    };
    col("name")?;
    let c_cpu = col("cpu_milli")?;
    let c_mem = col("memory_mib")?;
    let c_ngpu = col("num_gpu")?;
    let c_milli = col("gpu_milli")?;
    let c_create = col("creation_time")?;
    let c_delete = col("deletion_time")?;
    let c_sched = col("scheduled_time")?;
    let mut names: BTreeMap<String, u64> = BTreeMap::new();
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = |message: String| TraceError::Parse {
            path: path.to_string(),
            line: n + 1,
            message,
        };
        if f.len() < cols.len() {
            return Err(bad(format!(
                "{} fields, the header has {}",
                f.len(),
                cols.len()
            )));
        }
        let int = |i: usize| -> Result<Option<i64>, TraceError> {
            if f[i].is_empty() {
                return Ok(None);
            }
            f[i].parse::<i64>()
                .map(Some)
                .map_err(|_| bad(format!("{} is \"{}\", not a number", cols[i], f[i])))
        };
        let ngpu = int(c_ngpu)?.unwrap_or(0);
        if ngpu <= 0 {
            t.drop_job("CPU-only pod");
            continue;
        }
        let (Some(create), Some(sched), Some(delete)) =
            (int(c_create)?, int(c_sched)?, int(c_delete)?)
        else {
            t.drop_job("never scheduled");
            continue;
        };
        if delete <= sched {
            t.drop_job("runtime 0");
            continue;
        }
        let milli = int(c_milli)?.unwrap_or(1000);
        let need = if ngpu == 1 {
            milli.clamp(1, 1000)
        } else {
            ngpu * 1000
        };
        // Pods of one "job" share a name prefix in other Alibaba traces; here each pod has
        // its own name, so the name key is the request shape, which repeats.
        let shape = format!("{need}/{}", f[c_mem]);
        let next = names.len() as u64;
        let key = *names.entry(shape).or_insert(next);
        let run = delete - sched;
        t.jobs.push(TraceJob {
            trace_id: n as u64,
            submit: create,
            run,
            limit: Some(run),
            tasks: 1,
            cpus_per_task: need as u32,
            mem_mb: int(c_mem)?.map(|m| m.max(0) as u64),
            one_node: true,
            user: 0,
            name: Some(key),
            gpu: Some(TraceGpu {
                count: ngpu.min(u32::MAX as i64) as u32,
                milli: milli.clamp(1, 1000) as u32,
                cpu_milli: int(c_cpu)?.unwrap_or(0).max(0) as u64,
            }),
        });
    }
    Ok(t.finish())
}

/// Reads gsched's accounting history: the JSON of `POST /v1/jobs/history` (an object with
/// `now` and `jobs`, as `gssim --export-history` saves it). Jobs that started and ended are
/// replayed with their submit time, their runtime (end − start), their limit, CPUs, memory
/// per node and user; the name key is the job name. Jobs that never ran (cancelled while
/// pending, still pending or running) are counted and left out.
pub fn read_history(text: &str, path: &str) -> Result<Trace, TraceError> {
    let resp: JobsResponse = serde_json::from_str(text).map_err(|e| TraceError::Format {
        path: path.to_string(),
        message: format!(
            "not the JSON of /v1/jobs/history ({e}); save it with gssim --export-history"
        ),
    })?;
    let mut t = Trace {
        resource: "CPU",
        ..Trace::default()
    };
    let mut names: BTreeMap<String, u64> = BTreeMap::new();
    for j in &resp.jobs {
        let (Some(start), Some(end)) = (j.start_time, j.end_time) else {
            t.drop_job("never ran or still running");
            continue;
        };
        if !j.state.is_terminal() || j.state == JobState::Pending {
            t.drop_job("never ran or still running");
            continue;
        }
        let next = names.len() as u64;
        let key = *names.entry(j.name.clone()).or_insert(next);
        let cpus = j.num_cpus.max(1);
        t.jobs.push(TraceJob {
            gpu: None,
            trace_id: j.job_id as u64,
            submit: j.submit_time,
            run: (end - start).max(1),
            limit: j.time_limit.map(|m| m as i64 * 60),
            tasks: cpus,
            cpus_per_task: 1,
            mem_mb: (j.mem_per_node_mb > 0).then_some(j.mem_per_node_mb),
            one_node: j.num_nodes <= 1,
            user: j.user_id,
            name: Some(key),
        });
    }
    Ok(t.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
; Version: 2.2
; MaxNodes: 338 (batch partition; 512 total)
; MaxProcs: 338
;
    1        0 5   937  306 142.00    -1   -1  35100    -1  1  97  -1 307  3 -1 -1 -1
    2       10 5    75   17   2.00    -1   16    300    -1  1  81  -1 195  3 -1 -1 -1
    3        5 5     0    8     -1    -1    8    300    -1  1  81  -1 195  3 -1 -1 -1
    4       20 5    -1    8     -1    -1    8     -1    -1  1  81  -1  -1  3 -1 -1 -1
    5       20 5    30   -1     -1    -1   -1    600    -1  1  81  -1 195  3 -1 -1 -1
";

    #[test]
    fn swf_header_fields_and_rules() {
        let t = parse_swf(SAMPLE, "s.swf").unwrap();
        assert_eq!(t.machine.nodes, Some(338));
        assert_eq!(t.machine.procs, Some(338));
        let ids: Vec<u64> = t.jobs.iter().map(|j| j.trace_id).collect();
        assert_eq!(
            ids,
            vec![1, 2, 4],
            "sorted by submit; job 3 (run 0), 5 (no size) out"
        );
        let j1 = &t.jobs[0];
        assert_eq!((j1.submit, j1.run, j1.limit), (0, 937, Some(35100)));
        assert_eq!(j1.tasks, 306, "allocated procs when requested is -1");
        assert_eq!((j1.user, j1.name), (97, Some(307)));
        assert_eq!(t.jobs[1].tasks, 17, "the larger of requested and allocated");
        let j4 = &t.jobs[2];
        assert_eq!((j4.run, j4.limit, j4.name), (10, Some(10), None));
        assert_eq!(t.dropped.get("runtime 0"), Some(&1));
        assert_eq!(t.dropped.get("no processor count"), Some(&1));
    }

    #[test]
    fn swf_errors_name_the_line() {
        let e = parse_swf("; MaxProcs: 4\n1 2 3\n", "x.swf").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.swf line 2: an SWF job line has 18 fields, this one has 3; is this an SWF file? (--format)"
        );
        let e = parse_swf("1 0 0 abc 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n", "y.swf").unwrap_err();
        assert_eq!(
            e.to_string(),
            "y.swf line 1: field 4 is \"abc\", not a number"
        );
    }

    #[test]
    fn gzipped_swf_reads_like_plain() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.swf.gz");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&p).unwrap(),
            flate2::Compression::default(),
        );
        enc.write_all(SAMPLE.as_bytes()).unwrap();
        enc.finish().unwrap();
        let t = load(&p, Format::guess(&p).unwrap()).unwrap();
        assert_eq!(t.jobs, parse_swf(SAMPLE, "s").unwrap().jobs);
    }

    #[test]
    fn alibaba_rows() {
        let text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,12000,16384,1,460,,LS,Running,100,700,150
p1,6000,12288,0,0,,LS,Running,0,50,0
p2,6000,12288,8,1000,V100,LS,Succeeded,10,110,20
p3,6000,12288,1,1000,,LS,Pending,10,,
";
        let t = read_alibaba(text, "a.csv", Vec::new()).unwrap();
        assert_eq!(t.jobs.len(), 2);
        assert_eq!(t.jobs[0].submit, 10);
        assert_eq!((t.jobs[0].cpus_per_task, t.jobs[0].run), (8000, 90));
        assert_eq!((t.jobs[1].cpus_per_task, t.jobs[1].run), (460, 550));
        assert_eq!(t.jobs[1].mem_mb, Some(16384));
        assert_eq!(t.dropped.get("CPU-only pod"), Some(&1));
        assert_eq!(t.dropped.get("never scheduled"), Some(&1));
        let e = read_alibaba("a,b\n", "a.csv", Vec::new()).unwrap_err();
        assert!(e.to_string().contains("no column \"name\""), "{e}");
    }
}
