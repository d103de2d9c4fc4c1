//! `--json` and `--yaml` of `gsqueue`, `gsinfo`, `gsacct` and `gscontrol show
//! job|node|partition`, in the shapes Slurm 22.05's commands print: the OpenAPI plugins'
//! dumps (`openapi/v0.0.38` for jobs, nodes and partitions, `openapi/dbv0.0.38` for
//! accounting), under `meta` (plugin and Slurm version), `errors` and the list (`jobs`,
//! `nodes`, `partitions`). Tools that read `squeue --json` look up `jobs[].job_id`,
//! `job_state`, `state_reason`, `nodes`, times as epoch seconds; `sacct --json` readers
//! `jobs[].state.current`, `exit_code.return_code`, `time.*`, `steps[].step.id`.
//!
//! The documents are built as [`Data`], which keeps keys in Slurm's order (serde_json's map
//! would sort them, and turning on its order-keeping feature would change every JSON the
//! workspace writes), and is written as JSON (two-space indentation) or YAML (block style).
//! Values gsched does not track are what Slurm dumps for an unset one: `null`, `0`, `[]`.

use crate::common::name_or_id;
use gsched_proto::api::SLURM_COMPAT_VERSION;
use gsched_proto::hostlist;
use gsched_proto::job::{JobInfo, JobState, MemRequest};
use gsched_proto::node::{NodeBaseState, NodeInfo, PartitionInfo};
use gsched_proto::step::StepInfo;
use std::collections::HashMap;
use std::fmt::Write as _;

/// An ordered document.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Data>),
    Dict(Vec<(String, Data)>),
}

impl Data {
    /// A dictionary from `(key, value)` pairs, in that order.
    pub fn dict<K: Into<String>>(items: impl IntoIterator<Item = (K, Data)>) -> Data {
        Data::Dict(items.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A serde value (gsched's own documents, e.g. `--prices`), keys in serde_json's order.
    pub fn from_json(v: &serde_json::Value) -> Data {
        match v {
            serde_json::Value::Null => Data::Null,
            serde_json::Value::Bool(b) => Data::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Data::Int(i),
                None => Data::Float(n.as_f64().unwrap_or(0.0)),
            },
            serde_json::Value::String(t) => Data::Str(t.clone()),
            serde_json::Value::Array(a) => Data::List(a.iter().map(Data::from_json).collect()),
            serde_json::Value::Object(m) => Data::Dict(
                m.iter()
                    .map(|(k, v)| (k.clone(), Data::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// The value under `key` of a dictionary.
    pub fn get(&self, key: &str) -> Option<&Data> {
        match self {
            Data::Dict(items) => items.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

fn s(v: impl Into<String>) -> Data {
    Data::Str(v.into())
}

fn i(v: impl Into<i64>) -> Data {
    Data::Int(v.into())
}

/// A string, or `null` when empty (Slurm's unset `char *`).
fn opt_s(v: Option<&str>) -> Data {
    match v {
        Some(v) if !v.is_empty() => s(v),
        _ => Data::Null,
    }
}

fn opt_i<T: Into<i64>>(v: Option<T>) -> Data {
    v.map_or(Data::Null, |v| Data::Int(v.into()))
}

/// `--json` or `--yaml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mime {
    Json,
    Yaml,
}

impl Mime {
    /// The option id (`json`/`yaml`) as the commands' option tables name it.
    pub fn from_option(id: &str) -> Option<Mime> {
        match id {
            "json" => Some(Mime::Json),
            "yaml" => Some(Mime::Yaml),
            _ => None,
        }
    }

    /// The whole document in this format, with a final newline.
    pub fn render(self, d: &Data) -> String {
        let mut out = String::new();
        match self {
            Mime::Json => {
                write_json(&mut out, d, 0);
                out.push('\n');
            }
            Mime::Yaml => {
                out.push_str("---\n");
                write_yaml_block(&mut out, d, 0);
            }
        }
        out
    }
}

fn indent(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push_str("  ");
    }
}

fn json_str(out: &mut String, v: &str) {
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            // json-c, which Slurm writes with, escapes slashes.
            '/' => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn float_text(f: f64) -> String {
    if f.is_finite() {
        let t = format!("{f}");
        if t.contains(['.', 'e']) {
            t
        } else {
            format!("{t}.0")
        }
    } else {
        // Neither JSON nor YAML readers agree on infinities: Slurm prints them as null.
        "null".to_string()
    }
}

fn write_json(out: &mut String, d: &Data, level: usize) {
    match d {
        Data::Null => out.push_str("null"),
        Data::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Data::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Data::Float(f) => out.push_str(&float_text(*f)),
        Data::Str(v) => json_str(out, v),
        Data::List(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                out.push_str(if n == 0 { "\n" } else { ",\n" });
                indent(out, level + 1);
                write_json(out, item, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
        Data::Dict(items) => {
            out.push('{');
            for (n, (k, v)) in items.iter().enumerate() {
                out.push_str(if n == 0 { "\n" } else { ",\n" });
                indent(out, level + 1);
                json_str(out, k);
                out.push_str(": ");
                write_json(out, v, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
    }
}

/// A YAML scalar: plain when that reads back as the same string, else double-quoted.
fn yaml_scalar(d: &Data) -> String {
    match d {
        Data::Null => "null".into(),
        Data::Bool(b) => (if *b { "true" } else { "false" }).into(),
        Data::Int(n) => n.to_string(),
        Data::Float(f) => float_text(*f),
        Data::Str(v) => yaml_str(v),
        Data::List(l) if l.is_empty() => "[]".into(),
        Data::Dict(m) if m.is_empty() => "{}".into(),
        _ => unreachable!("collections are written as blocks"),
    }
}

fn yaml_str(v: &str) -> String {
    let plain = !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./()+@,=%".contains(c))
        && !v.starts_with(['-', '.', '@', '%'])
        && v.parse::<f64>().is_err()
        && !matches!(
            v.to_ascii_lowercase().as_str(),
            "null" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "~"
        );
    if plain {
        return v.to_string();
    }
    let mut out = String::from("\"");
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn is_block(d: &Data) -> bool {
    match d {
        Data::List(l) => !l.is_empty(),
        Data::Dict(m) => !m.is_empty(),
        _ => false,
    }
}

fn write_yaml_block(out: &mut String, d: &Data, level: usize) {
    match d {
        Data::Dict(items) if !items.is_empty() => {
            for (k, v) in items {
                indent(out, level);
                out.push_str(&yaml_str(k));
                out.push(':');
                if is_block(v) {
                    out.push('\n');
                    write_yaml_block(out, v, level + 1);
                } else {
                    out.push(' ');
                    out.push_str(&yaml_scalar(v));
                    out.push('\n');
                }
            }
        }
        Data::List(items) if !items.is_empty() => {
            for v in items {
                indent(out, level);
                out.push('-');
                if is_block(v) {
                    out.push('\n');
                    write_yaml_block(out, v, level + 1);
                } else {
                    out.push(' ');
                    out.push_str(&yaml_scalar(v));
                    out.push('\n');
                }
            }
        }
        scalar => {
            indent(out, level);
            out.push_str(&yaml_scalar(scalar));
            out.push('\n');
        }
    }
}

/// Slurm's response frame (`populate_response_format`): `meta` with the plugin and the
/// Slurm version, `errors`, then `key` with the records.
pub fn response(db: bool, key: &str, records: Vec<Data>) -> Data {
    let (plugin, name) = if db {
        ("openapi/dbv0.0.38", "Slurm OpenAPI slurmdbd v0.0.38")
    } else {
        ("openapi/v0.0.38", "Slurm OpenAPI v0.0.38")
    };
    let mut parts = SLURM_COMPAT_VERSION
        .split('.')
        .map(|p| p.parse::<i64>().unwrap_or(0));
    let (major, minor, micro) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    Data::dict([
        (
            "meta",
            Data::dict([
                (
                    "plugin",
                    Data::dict([("type", s(plugin)), ("name", s(name))]),
                ),
                (
                    "Slurm",
                    Data::dict([
                        (
                            "version",
                            Data::dict([
                                ("major", i(major)),
                                ("micro", i(micro)),
                                ("minor", i(minor)),
                            ]),
                        ),
                        ("release", s(SLURM_COMPAT_VERSION)),
                    ]),
                ),
            ]),
        ),
        ("errors", Data::List(Vec::new())),
        (key, Data::List(records)),
    ])
}

/// The wait status Slurm keeps for a job (`exit_code << 8 | signal`).
fn wait_status(code: i32, signal: i32) -> i64 {
    i64::from((code & 0xff) << 8 | (signal & 0x7f))
}

/// TRES text (`cpu=N,mem=M,node=K,billing=N`) with a GPU part.
fn tres_text(cpus: u32, mem_mb: u64, nodes: u32, gres: String) -> String {
    let mut t = crate::scontrol::tres(cpus, mem_mb, nodes);
    if !gres.is_empty() {
        t.push(',');
        t.push_str(&gres);
    }
    t
}

/// When a job ends or is expected to (`EndTime=` of `scontrol show job`), 0 if unknown.
fn end_time(j: &JobInfo) -> i64 {
    match (j.state, j.time_limit, j.start_time) {
        (JobState::Pending, Some(m), _) => j.expected_start.map_or(0, |t| t + i64::from(m) * 60),
        (JobState::Pending, None, _) => 0,
        (JobState::Running | JobState::Completing, None, _) => 0,
        (JobState::Running | JobState::Completing, Some(m), Some(s)) => {
            s + i64::from(m) * 60 + j.suspended_secs
        }
        _ => j.end_time.unwrap_or(0),
    }
}

/// What `squeue --json` and `scontrol --json show job` print for one job
/// (`openapi/v0.0.38`'s `dump_job_info`). `range`: an array's collapsed pending tasks.
pub fn job(j: &JobInfo, range: Option<&str>, cluster: &str) -> Data {
    let spec = &j.spec;
    let gpu = spec.gpu.as_ref();
    let running = matches!(j.state, JobState::Running | JobState::Completing);
    let status = wait_status(j.exit_code, j.exit_signal);
    let nodes = hostlist::compress_sorted(&j.nodes);
    let (mem_node, mem_cpu) = match spec.mem {
        Some(MemRequest::PerCpu(m)) => (Data::Null, i(m as i64)),
        Some(MemRequest::PerNode(m)) => (i(m as i64), Data::Null),
        None if j.mem_per_node_mb > 0 => (i(j.mem_per_node_mb as i64), Data::Null),
        None => (Data::Null, Data::Null),
    };
    let pre_suspend = match (j.suspended_since, j.start_time) {
        (Some(t), Some(st)) if j.is_suspended() => (t - st - j.suspended_secs).max(0),
        _ => 0,
    };
    let job_resources = if j.nodes.is_empty() {
        None
    } else {
        let per_node: Vec<Data> = j
            .nodes
            .iter()
            .enumerate()
            .map(|(n, name)| {
                Data::dict([
                    ("nodename", s(name.clone())),
                    ("cpus", i(j.cpus_per_node.get(n).copied().unwrap_or(0))),
                    ("memory", i(j.mem_per_node_mb as i64)),
                ])
            })
            .collect();
        Some(Data::dict([
            ("nodes", s(nodes.clone())),
            ("allocated_cpus", i(j.num_cpus)),
            ("allocated_hosts", i(j.nodes.len() as i64)),
            ("allocated_nodes", Data::List(per_node)),
        ]))
    };
    let user = name_or_id(&j.user_name, j.user_id);
    let stdout = crate::scontrol::stdout_path(j);
    let mut d: Vec<(String, Data)> = Vec::new();
    let mut put = |k: &str, v: Data| d.push((k.to_string(), v));
    put("account", s(j.account()));
    put("accrue_time", i(j.eligible_time.unwrap_or(0)));
    put("admin_comment", Data::Null);
    put("array_job_id", i(j.array.map_or(0, |a| a.job_id)));
    put(
        "array_task_id",
        match (j.array, range) {
            (Some(a), None) => i(a.task_id),
            _ => Data::Null,
        },
    );
    put(
        "array_max_tasks",
        i(j.array.and_then(|a| a.throttle).unwrap_or(0)),
    );
    put("array_task_string", opt_s(range));
    put("association_id", i(0));
    put("batch_features", Data::Null);
    put("batch_flag", Data::Bool(true));
    put(
        "batch_host",
        opt_s(j.nodes.first().map(String::as_str).filter(|_| running)),
    );
    put("flags", Data::List(Vec::new()));
    put("burst_buffer", Data::Null);
    put("burst_buffer_state", Data::Null);
    put("cluster", s(cluster));
    put("cluster_features", Data::Null);
    put("command", opt_s(Some(&spec.command)));
    put("comment", opt_s(spec.comment.as_deref()));
    put("contiguous", Data::Bool(false));
    put("core_spec", Data::Null);
    put("thread_spec", Data::Null);
    put("cores_per_socket", Data::Null);
    put("billable_tres", Data::Float(f64::from(j.num_cpus)));
    put("cpus_per_task", i(spec.cpus_per_task()));
    put("cpu_frequency_minimum", Data::Null);
    put("cpu_frequency_maximum", Data::Null);
    put("cpu_frequency_governor", Data::Null);
    put(
        "cpus_per_tres",
        opt_s(
            gpu.and_then(|g| g.cpus_per_gpu.map(|c| format!("gres:gpu:{c}")))
                .as_deref(),
        ),
    );
    put("deadline", i(spec.deadline.unwrap_or(0)));
    put("delay_boot", i(0));
    put("dependency", opt_s(j.dependency.as_deref()));
    put("derived_exit_code", i(status));
    put("eligible_time", i(j.eligible_time.unwrap_or(0)));
    put("end_time", i(end_time(j)));
    put("excluded_nodes", opt_s(spec.exclude.as_deref()));
    put("exit_code", i(status));
    put("features", opt_s(spec.constraint.as_deref()));
    put("federation_origin", Data::Null);
    put("federation_siblings_active", Data::Null);
    put("federation_siblings_viable", Data::Null);
    put("gres_detail", Data::List(Vec::new()));
    put("group_id", i(j.group_id));
    put("job_id", i(j.job_id));
    if let Some(r) = job_resources {
        put("job_resources", r);
    }
    put("job_state", s(j.state_long()));
    put(
        "last_sched_evaluation",
        i(j.start_time.or(j.eligible_time).unwrap_or(j.submit_time)),
    );
    put(
        "licenses",
        if j.spec.licenses.is_empty() {
            Data::Null
        } else {
            s(gsched_proto::licenses::format(&j.spec.licenses))
        },
    );
    put("max_cpus", i(0));
    put("max_nodes", i(0));
    put("mcs_label", Data::Null);
    put(
        "memory_per_tres",
        opt_s(
            gpu.and_then(|g| g.mem_per_gpu_mb.map(|m| format!("gres:gpu:{m}")))
                .as_deref(),
        ),
    );
    put("name", s(j.name.clone()));
    put("nodes", opt_s(Some(&nodes)));
    put(
        "nice",
        match j.nice() {
            0 => Data::Null,
            n => i(n),
        },
    );
    put("tasks_per_core", Data::Null);
    put("tasks_per_node", i(spec.ntasks_per_node.unwrap_or(0)));
    put("tasks_per_socket", Data::Null);
    put("tasks_per_board", i(0));
    put("cpus", i(j.num_cpus));
    put("node_count", i(j.num_nodes));
    put("tasks", i(j.num_tasks));
    put("het_job_id", i(j.het.map_or(0, |h| h.job_id)));
    put(
        "het_job_id_set",
        opt_s(j.het.map(|h| h.id_set()).as_deref()),
    );
    put("het_job_offset", i(j.het.map_or(0, |h| h.offset)));
    put("partition", s(j.partition.clone()));
    put("memory_per_node", mem_node);
    put("memory_per_cpu", mem_cpu);
    put(
        "minimum_cpus_per_node",
        i(spec.cpus_per_task() * spec.ntasks_per_node.unwrap_or(1).max(1)),
    );
    put("minimum_tmp_disk_per_node", i(0));
    put("preempt_time", i(0));
    put("pre_sus_time", i(pre_suspend));
    put("priority", i(j.priority));
    put("profile", Data::Null);
    put("qos", s(j.qos()));
    put("reboot", Data::Bool(false));
    put("required_nodes", opt_s(spec.nodelist.as_deref()));
    put("requeue", Data::Bool(j.requeue));
    put("resize_time", i(0));
    put("restart_cnt", i(j.restarts));
    put("resv_name", opt_s(spec.reservation.as_deref()));
    put(
        "shared",
        if spec.exclusive {
            s("none")
        } else {
            Data::Null
        },
    );
    put(
        "show_flags",
        Data::List(vec![s("SHOW_ALL"), s("SHOW_DETAIL"), s("SHOW_LOCAL")]),
    );
    put("sockets_per_board", i(0));
    put("sockets_per_node", Data::Null);
    put(
        "start_time",
        i(j.start_time.or(j.expected_start).unwrap_or(0)),
    );
    put("state_description", Data::Null);
    put("state_reason", s(j.reason.as_str()));
    put(
        "standard_error",
        s(crate::scontrol::stderr_path(j, &stdout)),
    );
    put("standard_input", s(crate::scontrol::stdin_path(j)));
    put("standard_output", s(stdout));
    put("submit_time", i(j.submit_time));
    put(
        "suspend_time",
        i(j.suspended_since.filter(|_| j.is_suspended()).unwrap_or(0)),
    );
    put("system_comment", Data::Null);
    put("time_limit", opt_i(j.time_limit));
    put("time_minimum", i(spec.time_min.unwrap_or(0)));
    put("threads_per_core", Data::Null);
    put("tres_bind", Data::Null);
    put("tres_freq", Data::Null);
    put(
        "tres_per_job",
        opt_s(gpu.and_then(|g| g.tres_per_job()).as_deref()),
    );
    put(
        "tres_per_node",
        opt_s(gpu.and_then(|g| g.tres_per_node()).as_deref()),
    );
    put("tres_per_socket", Data::Null);
    put(
        "tres_per_task",
        opt_s(gpu.and_then(|g| g.tres_per_task()).as_deref()),
    );
    let req_nodes = spec.nodes.unwrap_or(j.num_nodes.max(1));
    put(
        "tres_req_str",
        s(tres_text(
            j.num_cpus,
            j.mem_per_node_mb * u64::from(req_nodes),
            req_nodes,
            gsched_proto::gpu_tres::req_tres(j),
        )),
    );
    put(
        "tres_alloc_str",
        if j.nodes.is_empty() {
            Data::Null
        } else {
            s(tres_text(
                j.num_cpus,
                j.mem_per_node_mb * u64::from(j.num_nodes),
                j.num_nodes,
                gsched_proto::gpu_tres::alloc_tres(j),
            ))
        },
    );
    put("user_id", i(j.user_id));
    put("user_name", s(user));
    put("wckey", Data::Null);
    put("current_working_directory", s(spec.work_dir.clone()));
    Data::Dict(d)
}

/// The `jobs` document of `squeue --json` / `scontrol --json show job`.
pub fn jobs(jobs: &[JobInfo], ranges: &HashMap<u32, String>, cluster: &str) -> Data {
    response(
        false,
        "jobs",
        jobs.iter()
            .map(|j| job(j, ranges.get(&j.job_id).map(String::as_str), cluster))
            .collect(),
    )
}

/// Node state as the v0.0.38 plugin names it (lower-case base state) and its flags.
fn node_state(n: &NodeInfo) -> (String, Vec<Data>) {
    let base = match n.base {
        NodeBaseState::Unknown => "unknown",
        NodeBaseState::Idle => "idle",
        NodeBaseState::Mixed => "mixed",
        NodeBaseState::Allocated => "allocated",
        NodeBaseState::Down => "down",
    };
    let mut flags = Vec::new();
    if n.drain {
        flags.push(s("DRAIN"));
    }
    if n.life.maint {
        flags.push(s("MAINTENANCE"));
    }
    if n.not_responding {
        flags.push(s("NOT_RESPONDING"));
    }
    if n.life.reboot_issued {
        flags.push(s("REBOOT_ISSUED"));
    } else if n.life.reboot_requested {
        flags.push(s("REBOOT_REQUESTED"));
    }
    (base.to_string(), flags)
}

/// One node as `sinfo --json` / `scontrol --json show node` print it.
pub fn node(n: &NodeInfo) -> Data {
    let (state, flags) = node_state(n);
    let mem = gsched_proto::units::format_memory_mb(n.real_memory_mb);
    let alloc_tres = if n.alloc_cpus > 0 {
        let mut t = format!("cpu={}", n.alloc_cpus);
        if n.alloc_mem_mb > 0 {
            t.push_str(&format!(
                ",mem={}",
                gsched_proto::units::format_memory_mb(n.alloc_mem_mb)
            ));
        }
        s(t)
    } else {
        Data::Null
    };
    let features = opt_s(Some(&n.features.join(",")));
    Data::dict([
        ("architecture", Data::Null),
        ("burstbuffer_network_address", Data::Null),
        ("boards", i(1)),
        ("boot_time", i(n.boot_time.unwrap_or(0))),
        ("comment", Data::Null),
        ("cores", i(1)),
        ("cpu_binding", i(0)),
        (
            "cpu_load",
            i(n.life.cpu_load.map_or(0, |l| (l * 100.0).round() as i64)),
        ),
        ("extra", Data::Null),
        ("free_memory", opt_i(n.life.free_mem_mb.map(|m| m as i64))),
        ("cpus", i(n.cpus)),
        ("last_busy", i(0)),
        ("features", features.clone()),
        ("active_features", features),
        ("gres", opt_s(Some(&n.gres))),
        ("gres_drained", s("N/A")),
        ("gres_used", opt_s(Some(&n.gres_used))),
        ("mcs_label", Data::Null),
        ("name", s(n.name.clone())),
        ("next_state_after_reboot", s("invalid")),
        ("address", s(n.addr.clone())),
        ("hostname", s(n.name.clone())),
        ("state", s(state)),
        ("state_flags", Data::List(flags)),
        ("next_state_after_reboot_flags", Data::List(Vec::new())),
        ("operating_system", Data::Null),
        ("owner", Data::Null),
        (
            "partitions",
            Data::List(n.partitions.iter().map(|p| s(p.clone())).collect()),
        ),
        ("port", i(n.port)),
        ("real_memory", i(n.real_memory_mb as i64)),
        ("reason", opt_s(n.reason.as_deref())),
        ("reason_changed_at", i(n.reason_time.unwrap_or(0))),
        (
            "reason_set_by_user",
            opt_s(n.reason_uid.map(gsched_proto::users::user_name).as_deref()),
        ),
        ("slurmd_start_time", i(n.slurmd_start_time.unwrap_or(0))),
        ("sockets", i(n.cpus)),
        ("threads", i(1)),
        ("temporary_disk", i(0)),
        ("weight", i(n.weight)),
        (
            "tres",
            s(format!("cpu={},mem={mem},billing={}", n.cpus, n.cpus)),
        ),
        ("slurmd_version", opt_s(n.version.as_deref())),
        ("alloc_memory", i(n.alloc_mem_mb as i64)),
        ("alloc_cpus", i(n.alloc_cpus)),
        ("idle_cpus", i(n.cpus.saturating_sub(n.alloc_cpus))),
        ("tres_used", alloc_tres),
        ("tres_weighted", Data::Float(f64::from(n.alloc_cpus))),
    ])
}

/// One partition as `sinfo --json` / `scontrol --json show partition` print it.
pub fn partition(p: &PartitionInfo, nodes: &[NodeInfo]) -> Data {
    let mut flags = Vec::new();
    if p.default {
        flags.push(s("default"));
    }
    let list = |v: &Option<Vec<String>>| opt_s(v.as_ref().map(|v| v.join(",")).as_deref());
    let mem: u64 = nodes
        .iter()
        .filter(|n| p.nodes.contains(&n.name))
        .map(|n| n.real_memory_mb)
        .sum();
    let minutes = |m: Option<u32>| m.map_or(-1, i64::from);
    Data::dict([
        ("flags", Data::List(flags)),
        ("preemption_mode", Data::List(vec![s("disabled")])),
        ("allowed_allocation_nodes", s("")),
        ("allowed_accounts", list(&p.access.allow_accounts)),
        ("allowed_groups", s("")),
        ("allowed_qos", list(&p.access.allow_qos)),
        ("alternative", Data::Null),
        ("billing_weights", Data::Null),
        ("default_memory_per_cpu", i(0)),
        ("default_time_limit", p.default_time.map_or(Data::Null, i)),
        ("denied_accounts", list(&p.access.deny_accounts)),
        ("denied_qos", list(&p.access.deny_qos)),
        ("preemption_grace_time", i(0)),
        ("maximum_cpus_per_node", i(-1)),
        ("maximum_memory_per_node", i(0)),
        ("maximum_nodes_per_job", i(-1)),
        ("max_time_limit", i(minutes(p.max_time))),
        ("min nodes per job", i(0)),
        ("name", s(p.name.clone())),
        ("nodes", opt_s(Some(&hostlist::compress(&p.nodes)))),
        ("over_time_limit", Data::Null),
        ("priority_job_factor", i(1)),
        ("priority_tier", i(1)),
        ("qos", Data::Null),
        ("state", s(p.state.as_str())),
        ("total_cpus", i(p.total_cpus)),
        ("total_nodes", i(p.total_nodes)),
        (
            "tres",
            s(crate::scontrol::tres(p.total_cpus, mem, p.total_nodes)),
        ),
    ])
}

/// `sinfo --json`: the nodes and the partitions.
pub fn nodes_and_partitions(nodes: &[NodeInfo], parts: &[PartitionInfo]) -> Data {
    let mut d = response(false, "nodes", nodes.iter().map(node).collect());
    if let Data::Dict(items) = &mut d {
        items.push((
            "partitions".to_string(),
            Data::List(parts.iter().map(|p| partition(p, nodes)).collect()),
        ));
    }
    d
}

/// dbv0.0.38's exit code record: `status` (`SUCCESS`, `ERROR` with `return_code`,
/// `SIGNALED` with `signal`), as `_dump_job_exit_code`.
fn exit_code(code: i32, signal: i32, pending: bool) -> Data {
    if pending {
        return Data::dict([("status", s("PENDING")), ("return_code", Data::Null)]);
    }
    if signal != 0 {
        return Data::dict([
            ("status", s("SIGNALED")),
            ("return_code", Data::Null),
            (
                "signal",
                Data::dict([
                    ("signal_id", i(signal)),
                    ("name", s(crate::sys::signal_description(signal))),
                ]),
            ),
        ]);
    }
    Data::dict([
        ("status", s(if code == 0 { "SUCCESS" } else { "ERROR" })),
        ("return_code", i(code)),
    ])
}

/// CPU seconds and microseconds (`time/user`, `time/system`, `time/total`).
fn cpu_time(usec: Option<u64>) -> Data {
    let u = usec.unwrap_or(0);
    Data::dict([
        ("seconds", i((u / 1_000_000) as i64)),
        ("microseconds", i((u % 1_000_000) as i64)),
    ])
}

/// A TRES list (`[{type, name, id, count}]`).
fn tres_list(cpus: u32, mem_mb: u64, nodes: u32) -> Data {
    let one = |ty: &str, id: i64, count: i64| {
        Data::dict([
            ("type", s(ty)),
            ("name", Data::Null),
            ("id", i(id)),
            ("count", i(count)),
        ])
    };
    let mut v = vec![one("cpu", 1, i64::from(cpus))];
    if mem_mb > 0 {
        v.push(one("mem", 2, mem_mb as i64));
    }
    v.push(one("node", 4, i64::from(nodes)));
    v.push(one("billing", 5, i64::from(cpus)));
    Data::List(v)
}

/// One step record of `sacct --json` (the batch step or a gsrun step).
#[allow(clippy::too_many_arguments)]
fn db_step(
    job_id: u32,
    id: String,
    name: String,
    state: String,
    (start, end, now): (i64, Option<i64>, i64),
    (code, signal): (i32, i32),
    nodes: &[String],
    tasks: u32,
    cpus: u32,
    mem_mb: u64,
    usage: Option<gsched_proto::job::JobUsage>,
    killed_by: Option<u32>,
) -> Data {
    let elapsed = (end.unwrap_or(now) - start).max(0);
    let u = usage.unwrap_or_default();
    Data::dict([
        (
            "time",
            Data::dict([
                ("elapsed", i(elapsed)),
                ("end", i(end.unwrap_or(0))),
                ("start", i(start)),
                ("suspended", i(0)),
                ("system", cpu_time(u.system_cpu_usec)),
                ("total", cpu_time(u.total_cpu_usec())),
                ("user", cpu_time(u.user_cpu_usec)),
            ]),
        ),
        ("exit_code", exit_code(code, signal, false)),
        (
            "nodes",
            Data::dict([
                ("count", i(nodes.len() as i64)),
                ("range", s(hostlist::compress(nodes))),
                (
                    "list",
                    Data::List(nodes.iter().map(|n| s(n.clone())).collect()),
                ),
            ]),
        ),
        ("tasks", Data::dict([("count", i(tasks))])),
        ("pid", Data::Null),
        (
            "CPU",
            Data::dict([
                (
                    "requested_frequency",
                    Data::dict([("min", i(0)), ("max", i(0))]),
                ),
                ("governor", Data::List(Vec::new())),
            ]),
        ),
        (
            "kill_request_user",
            opt_s(killed_by.map(gsched_proto::users::user_name).as_deref()),
        ),
        ("state", s(state)),
        (
            "statistics",
            Data::dict([
                ("CPU", Data::dict([("actual_frequency", i(0))])),
                ("energy", Data::dict([("consumed", i(0))])),
            ]),
        ),
        (
            "step",
            Data::dict([
                ("job_id", i(job_id)),
                ("het", Data::dict([("component", Data::Null)])),
                ("id", s(id)),
                ("name", s(name)),
            ]),
        ),
        ("task", Data::dict([("distribution", s("Block"))])),
        (
            "tres",
            Data::dict([
                (
                    "requested",
                    Data::dict([
                        ("average", Data::List(Vec::new())),
                        ("total", Data::List(Vec::new())),
                    ]),
                ),
                (
                    "consumed",
                    Data::dict([
                        ("average", Data::List(Vec::new())),
                        ("total", Data::List(Vec::new())),
                    ]),
                ),
                ("allocated", tres_list(cpus, mem_mb, nodes.len() as u32)),
            ]),
        ),
    ])
}

/// What `sacct --json` prints for one job (dbv0.0.38's `parse_job`): the job's record with
/// its batch step (when it ran) and its gsrun steps.
pub fn db_job(
    j: &JobInfo,
    range: Option<&str>,
    steps: &[&StepInfo],
    with_steps: bool,
    cluster: &str,
    now: i64,
) -> Data {
    let spec = &j.spec;
    let ran = crate::sacct::ran(j);
    let elapsed = crate::sacct::elapsed(j, now, (None, None), false);
    let u = j.usage.unwrap_or_default();
    let mut step_list = Vec::new();
    if with_steps && ran && j.het.is_none_or(|h| h.offset == 0) {
        let batch = j.nodes.first().cloned().unwrap_or_default();
        step_list.push(db_step(
            j.job_id,
            format!("{}.batch", j.job_id),
            "batch".into(),
            crate::sacct::step_state(j),
            (j.start_time.unwrap_or(0), j.end_time, now),
            (j.exit_code, j.exit_signal),
            std::slice::from_ref(&batch),
            1,
            j.cpus_per_node.first().copied().unwrap_or(j.num_cpus),
            j.mem_per_node_mb,
            j.usage,
            None,
        ));
    }
    if with_steps {
        for st in steps {
            let state = match (st.state, st.cancelled_by) {
                (JobState::Cancelled, Some(_)) => "CANCELLED".to_string(),
                (s, _) => s.long().to_string(),
            };
            step_list.push(db_step(
                j.job_id,
                st.id_string(),
                st.name.clone(),
                state,
                (st.start_time, st.end_time, now),
                (st.exit_code, st.signal),
                &st.nodes,
                st.ntasks,
                st.cpus(),
                0,
                st.usage,
                st.cancelled_by,
            ));
        }
    }
    let started = ran;
    let alloc = if started {
        tres_list(
            j.num_cpus,
            j.mem_per_node_mb * u64::from(j.num_nodes),
            j.num_nodes,
        )
    } else {
        Data::List(Vec::new())
    };
    let req_nodes = spec.nodes.unwrap_or(1);
    let group = if j.group_name.is_empty() {
        j.group_id.to_string()
    } else {
        j.group_name.clone()
    };
    let pending = j.state == JobState::Pending;
    Data::dict([
        ("account", s(j.account())),
        (
            "comment",
            Data::dict([
                ("administrator", Data::Null),
                ("job", opt_s(spec.comment.as_deref())),
                ("system", Data::Null),
            ]),
        ),
        ("allocation_nodes", i(if started { j.num_nodes } else { 0 })),
        (
            "array",
            Data::dict([
                ("job_id", i(j.array.map_or(0, |a| a.job_id))),
                (
                    "limits",
                    Data::dict([(
                        "max",
                        Data::dict([(
                            "running",
                            Data::dict([(
                                "tasks",
                                i(j.array.and_then(|a| a.throttle).unwrap_or(0)),
                            )]),
                        )]),
                    )]),
                ),
                ("task", opt_s(range)),
                (
                    "task_id",
                    match (j.array, range) {
                        (Some(a), None) => i(a.task_id),
                        _ => Data::Null,
                    },
                ),
            ]),
        ),
        (
            "association",
            Data::dict([
                ("account", s(j.account())),
                ("cluster", s(cluster)),
                ("partition", Data::Null),
                ("user", s(name_or_id(&j.user_name, j.user_id))),
            ]),
        ),
        ("cluster", s(cluster)),
        (
            "constraints",
            s(spec.constraint.clone().unwrap_or_default()),
        ),
        ("container", Data::Null),
        (
            "derived_exit_code",
            exit_code(j.exit_code, j.exit_signal, pending),
        ),
        (
            "time",
            Data::dict([
                ("elapsed", i(elapsed)),
                ("eligible", i(j.eligible_time.unwrap_or(0))),
                ("end", i(j.end_time.unwrap_or(0))),
                ("start", i(j.start_time.filter(|_| started).unwrap_or(0))),
                ("submission", i(j.submit_time)),
                ("suspended", i(j.suspended_total(now))),
                ("system", cpu_time(u.system_cpu_usec)),
                ("limit", opt_i(j.time_limit)),
                ("total", cpu_time(u.total_cpu_usec())),
                ("user", cpu_time(u.user_cpu_usec)),
            ]),
        ),
        ("exit_code", exit_code(j.exit_code, j.exit_signal, pending)),
        ("flags", Data::List(Vec::new())),
        ("group", s(group)),
        (
            "het",
            Data::dict([
                ("job_id", i(j.het.map_or(0, |h| h.job_id))),
                ("job_offset", opt_i(j.het.map(|h| h.offset))),
            ]),
        ),
        ("job_id", i(j.job_id)),
        ("name", s(j.name.clone())),
        ("mcs", Data::dict([("label", Data::Null)])),
        (
            "nodes",
            s(if started {
                hostlist::compress(&j.nodes)
            } else {
                "None assigned".to_string()
            }),
        ),
        ("partition", s(j.partition.clone())),
        ("priority", i(j.priority)),
        ("qos", s(j.qos())),
        (
            "required",
            Data::dict([
                ("CPUs", i(j.num_tasks.max(1) * spec.cpus_per_task())),
                ("memory", i(j.mem_per_node_mb as i64)),
            ]),
        ),
        (
            "kill_request_user",
            opt_s(
                j.cancelled_by
                    .map(gsched_proto::users::user_name)
                    .as_deref(),
            ),
        ),
        (
            "reservation",
            Data::dict([("id", i(0)), ("name", opt_s(spec.reservation.as_deref()))]),
        ),
        (
            "state",
            Data::dict([
                ("current", s(j.state_long())),
                ("reason", s(j.reason.as_str())),
            ]),
        ),
        ("steps", Data::List(step_list)),
        (
            "tres",
            Data::dict([
                ("allocated", alloc),
                (
                    "requested",
                    tres_list(
                        j.num_tasks.max(1) * spec.cpus_per_task(),
                        j.mem_per_node_mb * u64::from(req_nodes),
                        req_nodes,
                    ),
                ),
            ]),
        ),
        ("user", s(name_or_id(&j.user_name, j.user_id))),
        ("wckey", Data::Null),
        ("working_directory", s(spec.work_dir.clone())),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::squeue::tests::job as test_job;

    fn parse(text: &str) -> serde_json::Value {
        serde_json::from_str(text).expect("valid JSON")
    }

    #[test]
    fn json_keeps_order_and_escapes_like_json_c() {
        let d = Data::dict([
            ("b", s("x/y\"z\n")),
            ("a", Data::List(vec![i(1), Data::Float(2.0), Data::Null])),
            ("e", Data::List(Vec::new())),
            ("d", Data::dict(Vec::<(String, Data)>::new())),
        ]);
        let t = Mime::Json.render(&d);
        assert_eq!(
            t,
            "{\n  \"b\": \"x\\/y\\\"z\\n\",\n  \"a\": [\n    1,\n    2.0,\n    null\n  ],\n  \"e\": [\n  ],\n  \"d\": {\n  }\n}\n"
        );
        let v = parse(&t);
        assert_eq!(v["b"], "x/y\"z\n");
        assert_eq!(v["a"][1], 2.0);
    }

    #[test]
    fn yaml_blocks_and_quoting() {
        let d = Data::dict([
            ("plain", s("openapi/v0.0.38")),
            ("number_like", s("22.05")),
            ("word", s("yes")),
            ("space", s("two words")),
            ("empty", s("")),
            ("list", Data::List(vec![s("a"), Data::dict([("k", i(1))])])),
            ("none", Data::List(Vec::new())),
            ("null", Data::Null),
        ]);
        assert_eq!(
            Mime::Yaml.render(&d),
            "---\nplain: openapi/v0.0.38\nnumber_like: \"22.05\"\nword: \"yes\"\n\
             space: \"two words\"\nempty: \"\"\nlist:\n  - a\n  -\n    k: 1\nnone: []\n\"null\": null\n"
        );
    }

    #[test]
    fn squeue_json_shape() {
        let mut j = test_job(42, JobState::Running);
        j.nodes = vec!["n1".into(), "n2".into()];
        j.cpus_per_node = vec![2, 2];
        j.num_nodes = 2;
        j.num_cpus = 4;
        j.start_time = Some(1_000);
        j.time_limit = Some(10);
        let t = Mime::Json.render(&jobs(&[j], &HashMap::new(), "cl"));
        let v = parse(&t);
        assert_eq!(v["meta"]["plugin"]["type"], "openapi/v0.0.38");
        assert_eq!(v["meta"]["Slurm"]["release"], SLURM_COMPAT_VERSION);
        assert_eq!(v["meta"]["Slurm"]["version"]["major"], 22);
        assert_eq!(v["meta"]["Slurm"]["version"]["minor"], 5);
        assert_eq!(v["errors"], serde_json::json!([]));
        let job = &v["jobs"][0];
        assert_eq!(job["job_id"], 42);
        assert_eq!(job["job_state"], "RUNNING");
        assert_eq!(job["nodes"], "n[1-2]");
        assert_eq!(job["batch_host"], "n1");
        assert_eq!(job["node_count"], 2);
        assert_eq!(job["cpus"], 4);
        assert_eq!(job["start_time"], 1_000);
        assert_eq!(job["end_time"], 1_600);
        assert_eq!(job["time_limit"], 10);
        assert_eq!(job["cluster"], "cl");
        assert_eq!(job["job_resources"]["allocated_hosts"], 2);
        assert_eq!(job["tres_alloc_str"], "cpu=4,mem=8G,node=2,billing=4");
        // Keys come in Slurm's order.
        let first = t.find("\"account\"").unwrap();
        let last = t.find("\"current_working_directory\"").unwrap();
        assert!(first < t.find("\"job_id\"").unwrap() && t.find("\"job_id\"").unwrap() < last);
        // A pending array's collapsed record.
        let mut p = test_job(50, JobState::Pending);
        p.array = Some(gsched_proto::array::ArrayTask {
            job_id: 50,
            task_id: 0,
            count: 4,
            min: 0,
            max: 3,
            step: 1,
            throttle: Some(2),
        });
        let ranges = HashMap::from([(50, "0-3%2".to_string())]);
        let v = parse(&Mime::Json.render(&jobs(&[p], &ranges, "cl")));
        assert_eq!(v["jobs"][0]["array_task_string"], "0-3%2");
        assert_eq!(v["jobs"][0]["array_task_id"], serde_json::Value::Null);
        assert_eq!(v["jobs"][0]["array_max_tasks"], 2);
        assert_eq!(v["jobs"][0]["job_state"], "PENDING");
        assert_eq!(v["jobs"][0]["nodes"], serde_json::Value::Null);
    }

    #[test]
    fn sacct_json_exit_codes_and_steps() {
        let mut j = test_job(7, JobState::Failed);
        j.nodes = vec!["n1".into()];
        j.num_nodes = 1;
        j.start_time = Some(100);
        j.end_time = Some(160);
        j.exit_code = 3;
        let st = StepInfo {
            job_id: 7,
            step_id: 0,
            name: "hostname".into(),
            user_id: 1000,
            state: JobState::Completed,
            nodes: vec!["n1".into()],
            tasks_per_node: vec![1],
            ntasks: 1,
            cpus_per_task: 1,
            partition: "debug".into(),
            start_time: 110,
            end_time: Some(120),
            exit_code: 0,
            signal: 0,
            command: "hostname".into(),
            cancelled_by: None,
            time_limit: None,
            usage: None,
        };
        let d = response(
            true,
            "jobs",
            vec![db_job(&j, None, &[&st], true, "cl", 200)],
        );
        let v = parse(&Mime::Json.render(&d));
        assert_eq!(v["meta"]["plugin"]["type"], "openapi/dbv0.0.38");
        let job = &v["jobs"][0];
        assert_eq!(job["state"]["current"], "FAILED");
        assert_eq!(job["exit_code"]["status"], "ERROR");
        assert_eq!(job["exit_code"]["return_code"], 3);
        assert_eq!(job["time"]["elapsed"], 60);
        assert_eq!(job["time"]["start"], 100);
        assert_eq!(job["steps"][0]["step"]["id"], "7.batch");
        assert_eq!(job["steps"][1]["step"]["id"], "7.0");
        assert_eq!(job["steps"][1]["step"]["name"], "hostname");
        assert_eq!(job["steps"][1]["exit_code"]["status"], "SUCCESS");
        assert_eq!(job["steps"][1]["nodes"]["list"][0], "n1");
        // Killed by a signal.
        j.exit_code = 0;
        j.exit_signal = 9;
        let v = parse(&Mime::Json.render(&db_job(&j, None, &[], false, "cl", 200)));
        assert_eq!(v["exit_code"]["status"], "SIGNALED");
        assert_eq!(v["exit_code"]["signal"]["signal_id"], 9);
        assert_eq!(v["exit_code"]["signal"]["name"], "Killed");
        assert_eq!(v["steps"], serde_json::json!([]));
    }

    #[test]
    fn nodes_and_partitions_shape() {
        let n = NodeInfo {
            name: "n1".into(),
            addr: "127.0.0.1".into(),
            port: 6818,
            cpus: 4,
            real_memory_mb: 1000,
            alloc_cpus: 1,
            alloc_mem_mb: 0,
            features: vec![],
            gres: String::new(),
            base: NodeBaseState::Mixed,
            drain: true,
            not_responding: false,
            reason: Some("maint".into()),
            reason_time: Some(5),
            reason_uid: None,
            partitions: vec!["debug".into()],
            boot_time: None,
            slurmd_start_time: None,
            version: Some("0.1.0".into()),
            weight: 1,
            gres_used: String::new(),
            life: Default::default(),
        };
        let p = PartitionInfo {
            name: "debug".into(),
            nodes: vec!["n1".into()],
            default: true,
            max_time: None,
            default_time: None,
            state: gsched_proto::node::PartitionStateInfo::Up,
            total_cpus: 4,
            total_nodes: 1,
            ..Default::default()
        };
        let v = parse(&Mime::Json.render(&nodes_and_partitions(&[n], &[p])));
        assert_eq!(v["nodes"][0]["name"], "n1");
        assert_eq!(v["nodes"][0]["state"], "mixed");
        assert_eq!(v["nodes"][0]["state_flags"], serde_json::json!(["DRAIN"]));
        assert_eq!(v["nodes"][0]["idle_cpus"], 3);
        assert_eq!(v["nodes"][0]["partitions"][0], "debug");
        assert_eq!(v["partitions"][0]["name"], "debug");
        assert_eq!(v["partitions"][0]["flags"][0], "default");
        assert_eq!(v["partitions"][0]["max_time_limit"], -1);
        assert_eq!(v["partitions"][0]["state"], "UP");
    }
}
