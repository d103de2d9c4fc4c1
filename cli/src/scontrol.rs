//! `gscontrol` (`scontrol`): show and change jobs, nodes and partitions.
//!
//! Commands and entities are matched like scontrol does: case-insensitive prefixes with a
//! minimum length per keyword, checked in scontrol's order (`show part`, `show hostname`).
//! The `show` layouts are Slurm 22.05's `Key=Value` blocks (three-space continuation lines
//! and a blank line between records; `-o` one line per record). Without a command, commands
//! are read from standard input, one per line, as in scontrol's interactive mode.

use crate::common::{self, make_time_str, name_or_id, opt_time_str, or_null, Fail};
use crate::getopt::{self, HasArg, Opt, Ordering};
use gsched_proto::api::{
    paths, Ack, ConfigResponse, ErrorCode, HoldRequest, JobActionResponse, JobFilter, JobQuery,
    JobUpdateRequest, JobsResponse, NodeStateUpdate, NodeUpdateRequest, NodesResponse,
    PartitionsResponse, PingResponse, RequeueRequest,
};
use gsched_proto::client::{Client, ClientError};
use gsched_proto::config::Config;
use gsched_proto::hostlist;
use gsched_proto::job::{JobInfo, JobState, MemRequest};
use gsched_proto::node::{NodeInfo, PartitionInfo};
use gsched_proto::units;

use HasArg::{No, Required as Req};

pub const OPTIONS: &[Opt] = &[
    Opt::new("all", Some('a'), &["all"], No),
    Opt::new("clusters", Some('M'), &["cluster", "clusters"], Req),
    Opt::new("details", Some('d'), &["details"], No),
    Opt::new("federation", None, &["federation"], No),
    Opt::new("future", Some('F'), &["future"], No),
    Opt::new("help", Some('h'), &["help", "usage"], No),
    Opt::new("hide", None, &["hide"], No),
    Opt::new("json", None, &["json"], No),
    Opt::new("local", None, &["local"], No),
    Opt::new("oneliner", Some('o'), &["oneliner"], No),
    Opt::new("quiet", Some('Q'), &["quiet"], No),
    Opt::new("sibling", None, &["sibling"], No),
    Opt::new("uid", Some('u'), &["uid"], Req),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
    Opt::new("yaml", None, &["yaml"], No),
];

/// scontrol's keyword test: `tag` is a case-insensitive prefix of `name` at least `min`
/// characters long (`xstrncasecmp(tag, name, MAX(strlen(tag), min))`).
pub fn kw(tag: &str, name: &str, min: usize) -> bool {
    tag.len() >= min
        && name.len() >= tag.len()
        && name.as_bytes()[..tag.len()].eq_ignore_ascii_case(tag.as_bytes())
}

/// Output produced by a command: stdout text, stderr lines, and whether it failed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Out {
    pub stdout: String,
    pub stderr: Vec<String>,
    pub failed: bool,
    /// `exit`/`quit` in interactive mode.
    pub quit: bool,
}

impl Out {
    fn print(&mut self, s: &str) {
        self.stdout.push_str(s);
    }
    fn err(&mut self, s: impl Into<String>) {
        self.stderr.push(s.into());
        self.failed = true;
    }
    fn fail(&mut self) {
        self.failed = true;
    }
}

/// `import-slurm-conf SLURM_CONF [GRES_CONF] [CGROUP_CONF]` (a gsched extension): the
/// gsched.conf on stdout, what was not carried over on stderr. gres.conf and cgroup.conf are
/// told apart by their names, as Slurm names them.
fn import_slurm_conf(out: &mut Out, args: &[String]) {
    let usage = "usage: import-slurm-conf SLURM_CONF [GRES_CONF] [CGROUP_CONF] (writes gsched.conf to standard output)";
    let Some((slurm, rest)) = args.split_first() else {
        out.err(usage);
        return;
    };
    let (mut gres, mut cgroup) = (None, None);
    for a in rest {
        let name = std::path::Path::new(a)
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let slot = if name.contains("gres") {
            &mut gres
        } else if name.contains("cgroup") {
            &mut cgroup
        } else {
            out.err(format!(
                "import-slurm-conf: cannot tell whether {a} is a gres.conf or a cgroup.conf (name it after one of them); {usage}"
            ));
            return;
        };
        if slot.is_some() {
            out.err(format!("import-slurm-conf: {a}: given twice; {usage}"));
            return;
        }
        *slot = Some(std::path::PathBuf::from(a));
    }
    match gsched_proto::slurm_import::import(
        std::path::Path::new(slurm),
        gres.as_deref(),
        cgroup.as_deref(),
    ) {
        Ok(imp) => {
            out.print(&imp.conf);
            for d in &imp.dropped {
                out.stderr.push(format!("not carried over: {d}"));
            }
            for f in imp.gres_conf.iter().chain(&imp.cgroup_conf) {
                out.stderr.push(format!(
                    "import-slurm-conf: {} is read by gsched as it is: copy it beside the new gsched.conf",
                    f.display()
                ));
            }
            out.stderr.push(format!(
                "import-slurm-conf: {} setting(s) not carried over{}",
                imp.dropped.len(),
                if imp.dropped.is_empty() {
                    ""
                } else {
                    " (those of slurm.conf are commented out with #[import] in the output)"
                }
            ));
        }
        Err(e) => out.err(format!("import-slurm-conf: {e}")),
    }
}

mod live;
mod resv;

/// Session flags (set by options or by the `oneliner`, `details`, ... commands).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub one_liner: bool,
    pub details: bool,
    /// `-a`, the `all` command: `show partition` lists partitions hidden from the user too
    /// (`Hidden=YES`, an `AllowGroups=` it is not in); `hide` undoes it.
    pub all: bool,
    /// 1 quiet, 0 normal, -1 verbose (scontrol's `quiet_flag`).
    pub quiet: i32,
    /// `--json`/`--yaml` (Slurm 23.02's): `show job|node|partition` print the records as
    /// `squeue --json`/`sinfo --json` do (`crate::slurm_json`).
    pub mime: Option<crate::slurm_json::Mime>,
}

/// The controller, when a command needs it.
pub trait Api {
    fn jobs(&self, filter: JobFilter) -> Result<JobsResponse, String>;
    fn nodes(&self) -> Result<NodesResponse, String>;
    fn partitions(&self) -> Result<PartitionsResponse, String>;
    fn config(&self) -> Result<ConfigResponse, String>;
    fn ping(&self) -> Result<PingResponse, String>;
    fn hold(&self, req: &HoldRequest) -> Result<JobActionResponse, String>;
    fn requeue(&self, _req: &RequeueRequest) -> Result<JobActionResponse, String> {
        Err("requeue is not available".into())
    }
    fn suspend(
        &self,
        _req: &gsched_proto::api::SuspendRequest,
    ) -> Result<JobActionResponse, String> {
        Err("suspend is not available".into())
    }
    fn update_job(&self, req: &JobUpdateRequest) -> Result<(), (Option<ErrorCode>, String)>;
    fn update_nodes(&self, req: &NodeUpdateRequest) -> Result<(), String>;
    fn reservations(&self) -> Result<gsched_proto::resv::ReservationsResponse, String> {
        Err("reservations are not available".into())
    }
    fn reservation_action(
        &self,
        _req: &gsched_proto::resv::ReservationAction,
    ) -> Result<String, String> {
        Err("reservations are not available".into())
    }
    fn reboot(&self, _req: &gsched_proto::resv::RebootRequest) -> Result<(), String> {
        Err("reboot is not available".into())
    }
    fn update_partition(
        &self,
        _req: &gsched_proto::api::PartitionUpdateRequest,
    ) -> Result<(), String> {
        Err("partition updates are not available".into())
    }
    fn reconfigure(&self) -> Result<(), String> {
        Err("reconfigure is not available".into())
    }
    fn shutdown(&self, _req: &gsched_proto::api::ShutdownRequest) -> Result<(), String> {
        Err("shutdown is not available".into())
    }
    fn setdebug(&self, _level: &str) -> Result<(), String> {
        Err("setdebug is not available".into())
    }
    /// A job with its script (the controller leaves it out for other users' jobs).
    fn job_with_script(&self, _id: u32) -> Result<Option<gsched_proto::job::JobInfo>, String> {
        Err("job scripts are not available".into())
    }
    /// Running job steps (`show step`).
    fn steps(
        &self,
        _q: &gsched_proto::step::StepQuery,
    ) -> Result<gsched_proto::step::StepsResponse, String> {
        Err("job steps are not available".into())
    }
    /// Running jobs' live usage (`show job`'s usage line).
    fn job_usage(
        &self,
        _q: &gsched_proto::api::JobUsageQuery,
    ) -> Result<gsched_proto::api::JobUsageResponse, String> {
        Err("job usage is not available".into())
    }
}

/// The real controller.
pub struct Remote {
    pub client: Client,
}

/// A call's failure as Slurm words it.
fn err_text<T>(r: Result<T, ClientError>) -> Result<T, String> {
    r.map_err(|e| common::client_error_text(&e))
}

impl Api for Remote {
    fn job_usage(
        &self,
        q: &gsched_proto::api::JobUsageQuery,
    ) -> Result<gsched_proto::api::JobUsageResponse, String> {
        err_text(self.client.post(paths::JOBS_USAGE, q))
    }
    fn steps(
        &self,
        q: &gsched_proto::step::StepQuery,
    ) -> Result<gsched_proto::step::StepsResponse, String> {
        err_text(self.client.post(paths::JOBS_STEPS_QUERY, q))
    }
    fn jobs(&self, filter: JobFilter) -> Result<JobsResponse, String> {
        err_text(self.client.post(
            paths::JOBS_QUERY,
            &JobQuery {
                filter,
                brief: true,
                fields: Vec::new(),
            },
        ))
    }
    fn nodes(&self) -> Result<NodesResponse, String> {
        err_text(self.client.get(paths::NODES))
    }
    fn partitions(&self) -> Result<PartitionsResponse, String> {
        err_text(self.client.get(paths::PARTITIONS))
    }
    fn config(&self) -> Result<ConfigResponse, String> {
        err_text(self.client.get(paths::CONFIG))
    }
    fn ping(&self) -> Result<PingResponse, String> {
        // At once, as `scontrol ping` (which asks each controller once).
        let once = self
            .client
            .clone()
            .with_connect_patience(std::time::Duration::ZERO);
        err_text(once.get(paths::PING))
    }
    fn hold(&self, req: &HoldRequest) -> Result<JobActionResponse, String> {
        err_text(self.client.post(paths::JOBS_HOLD, req))
    }
    fn requeue(&self, req: &RequeueRequest) -> Result<JobActionResponse, String> {
        err_text(self.client.post(paths::JOBS_REQUEUE, req))
    }
    fn suspend(
        &self,
        req: &gsched_proto::api::SuspendRequest,
    ) -> Result<JobActionResponse, String> {
        err_text(self.client.post(paths::JOBS_SUSPEND, req))
    }
    fn update_job(&self, req: &JobUpdateRequest) -> Result<(), (Option<ErrorCode>, String)> {
        self.client
            .post::<_, Ack>(paths::JOBS_UPDATE, req)
            .map(|_| ())
            .map_err(|e| (e.code(), common::client_error_text(&e)))
    }
    fn update_nodes(&self, req: &NodeUpdateRequest) -> Result<(), String> {
        err_text(self.client.post::<_, Ack>(paths::NODES_UPDATE, req)).map(|_| ())
    }
    fn update_partition(
        &self,
        req: &gsched_proto::api::PartitionUpdateRequest,
    ) -> Result<(), String> {
        err_text(self.client.post::<_, Ack>(paths::PARTITIONS_UPDATE, req)).map(|_| ())
    }
    fn job_with_script(&self, id: u32) -> Result<Option<gsched_proto::job::JobInfo>, String> {
        let r: JobsResponse = err_text(self.client.post(
            paths::JOBS_QUERY,
            &JobQuery {
                filter: JobFilter {
                    ids: vec![id],
                    ..JobFilter::default()
                },
                brief: false,
                fields: Vec::new(),
            },
        ))?;
        let mut jobs = r.jobs;
        let at = jobs.iter().position(|j| j.job_id == id).unwrap_or(0);
        Ok((!jobs.is_empty()).then(|| jobs.swap_remove(at)))
    }
    fn setdebug(&self, level: &str) -> Result<(), String> {
        let req = gsched_proto::api::SetDebugRequest {
            level: level.to_string(),
        };
        err_text(self.client.post::<_, Ack>(paths::SETDEBUG, &req)).map(|_| ())
    }
    fn shutdown(&self, req: &gsched_proto::api::ShutdownRequest) -> Result<(), String> {
        err_text(self.client.post::<_, Ack>(paths::SHUTDOWN, req)).map(|_| ())
    }
    fn reconfigure(&self) -> Result<(), String> {
        err_text(
            self.client
                .post::<_, Ack>(paths::RECONFIGURE, &serde_json::json!({})),
        )
        .map(|_| ())
    }
    fn reservations(&self) -> Result<gsched_proto::resv::ReservationsResponse, String> {
        err_text(self.client.get(paths::RESERVATIONS))
    }
    fn reservation_action(
        &self,
        req: &gsched_proto::resv::ReservationAction,
    ) -> Result<String, String> {
        err_text(
            self.client
                .post::<_, gsched_proto::resv::ReservationActionResponse>(
                    paths::RESERVATIONS_UPDATE,
                    req,
                ),
        )
        .map(|r| r.name)
    }
    fn reboot(&self, req: &gsched_proto::resv::RebootRequest) -> Result<(), String> {
        err_text(self.client.post::<_, Ack>(paths::NODES_REBOOT, req)).map(|_| ())
    }
}

/// What the commands need besides the controller.
pub struct Session<'a> {
    pub prog: String,
    pub flags: Flags,
    /// Lazily connects (so `version`, `show hostnames` work without a controller).
    pub api: &'a dyn Fn() -> Result<Box<dyn Api + 'a>, String>,
    /// `SlurmctldHost` name, `SlurmdPort`, for ping and node display.
    pub ctld_name: String,
    /// `ClusterName` (`--json` records).
    pub cluster: String,
    pub slurmd_port: u16,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub now: i64,
    pub uid: u32,
}

impl Session<'_> {
    fn connect(&self, out: &mut Out) -> Option<Box<dyn Api + '_>> {
        match (self.api)() {
            Ok(a) => Some(a),
            Err(e) => {
                out.err(format!("{}: error: {e}", self.prog));
                None
            }
        }
    }

    fn quiet(&self) -> bool {
        self.flags.quiet == 1
    }

    /// An error line unless quiet; the command fails either way.
    fn complain(&self, out: &mut Out, msg: impl Into<String>) {
        if self.quiet() {
            out.fail();
        } else {
            out.err(msg);
        }
    }

    /// `slurm_perror`: `<what>: <msg>` unless quiet.
    fn perror(&self, out: &mut Out, what: &str, msg: &str) {
        self.complain(out, format!("{what}: {msg}"));
    }

    /// Runs one command (argv without the program name and options).
    pub fn command(&mut self, argv: &[String]) -> Out {
        let mut out = Out::default();
        let Some(tag) = argv.first() else {
            out.fail();
            return out;
        };
        let tag = tag.as_str();
        let n = argv.len();
        let too_many = |out: &mut Out| out.err(format!("too many arguments for keyword:{tag}"));
        // Keywords in scontrol's order of tests, with their minimum lengths.
        if kw(tag, "abort", 5) {
            self.unsupported(&mut out, "abort");
        } else if kw(tag, "all", 2) {
            if n > 1 {
                too_many(&mut out);
            } else {
                self.flags.all = true;
            }
        } else if kw(tag, "cancel_reboot", 3) {
            self.unsupported(&mut out, "cancel_reboot");
        } else if kw(tag, "completing", 2) {
            self.unsupported(&mut out, "completing");
        } else if kw(tag, "cluster", 2) {
            self.unsupported(&mut out, "cluster");
        } else if kw(tag, "create", 2) {
            self.create(&mut out, &argv[1..]);
        } else if kw(tag, "details", 1) {
            if n > 1 {
                too_many(&mut out);
            } else {
                self.flags.details = true;
            }
        } else if kw(tag, "errnumstr", 2) || kw(tag, "errnostr", 2) {
            self.unsupported(&mut out, "errnumstr");
        } else if kw(tag, "exit", 2) {
            if n > 1 {
                too_many(&mut out);
            }
            out.quit = true;
        } else if kw(tag, "gethost", 7) {
            self.unsupported(&mut out, "gethost");
        } else if kw(tag, "help", 2) {
            if n > 1 {
                too_many(&mut out);
            }
            out.print(&usage_text());
        } else if kw(tag, "hide", 2) {
            self.flags.all = false;
            self.flags.details = false;
        } else if kw(tag, "oneliner", 1) {
            if n > 1 {
                too_many(&mut out);
            }
            self.flags.one_liner = true;
        } else if kw(tag, "pidinfo", 3) {
            self.unsupported(&mut out, "pidinfo");
        } else if kw(tag, "ping", 3) {
            if n > 1 {
                too_many(&mut out);
            } else {
                self.ping(&mut out);
            }
        } else if tag.len() >= 2 && tag[..2].eq_ignore_ascii_case("\\q") || kw(tag, "quiet", 4) {
            if n > 1 {
                too_many(&mut out);
            }
            self.flags.quiet = 1;
        } else if kw(tag, "quit", 4) {
            if n > 1 {
                too_many(&mut out);
            }
            out.quit = true;
        } else if kw(tag, "reboot_nodes", 3) {
            self.reboot(&mut out, &argv[1..]);
        } else if kw(tag, "reconfigure", 3) {
            if n > 1 {
                too_many(&mut out);
            } else if let Some(api) = self.connect(&mut out) {
                // Silent on success, as scontrol.
                if let Err(e) = api.reconfigure() {
                    out.err(format!("slurm_reconfigure error: {e}"));
                }
            }
        } else if (tag.len() >= 11 && tag[..11].eq_ignore_ascii_case("requeuehold"))
            || kw(tag, "requeue", 3)
        {
            if n < 2 {
                self.complain(&mut out, format!("too few arguments for keyword:{tag}"));
            } else {
                let hold = tag.len() >= 11;
                self.requeue(&mut out, &argv[1..], hold);
            }
        } else if (tag.len() >= 4 && tag[..4].eq_ignore_ascii_case("hold"))
            || (tag.len() >= 5
                && (tag[..5].eq_ignore_ascii_case("holdu")
                    || tag[..5].eq_ignore_ascii_case("uhold")))
            || kw(tag, "release", 3)
        {
            if n < 2 {
                self.complain(&mut out, format!("too few arguments for keyword:{tag}"));
            } else {
                let release = kw(tag, "release", 3);
                self.hold(&mut out, &argv[1..], release);
            }
        } else if kw(tag, "suspend", 2) || kw(tag, "resume", 3) {
            if n < 2 {
                self.complain(&mut out, format!("too few arguments for keyword:{tag}"));
            } else if n > 2 {
                self.complain(&mut out, format!("too many arguments for keyword:{tag}"));
            } else {
                self.suspend(&mut out, &argv[1], kw(tag, "resume", 3));
            }
        } else if kw(tag, "top", 3) {
            self.unsupported(&mut out, "top");
        } else if kw(tag, "token", 3) {
            self.unsupported(&mut out, "token");
        } else if kw(tag, "wait_job", 2) {
            if n > 2 {
                self.complain(&mut out, format!("too many arguments for keyword:{tag}"));
            } else if n < 2 {
                self.complain(&mut out, format!("too few arguments for keyword:{tag}"));
            } else {
                // Slurm waits only for nodes that power saving (SuspendTime) is booting;
                // without power saving it returns at once, and gsched has none. The job id
                // is checked as scontrol's atoi does.
                let digits: String = argv[1].chars().take_while(char::is_ascii_digit).collect();
                if digits.parse::<u32>().unwrap_or(0) == 0 {
                    out.err(format!("Invalid job_id {}", argv[1]));
                }
            }
        } else if kw(tag, "setdebugflags", 9) {
            self.unsupported(&mut out, "setdebugflags");
        } else if kw(tag, "fsdampeningfactor", 3) || kw(tag, "fairsharedampeningfactor", 3) {
            self.unsupported(&mut out, "fsdampeningfactor");
        } else if kw(tag, "setdebug", 2) {
            if n > 2 {
                self.complain(&mut out, format!("too many arguments for keyword:{tag}"));
            } else if n < 2 {
                self.complain(&mut out, format!("too few arguments for keyword:{tag}"));
            } else {
                self.setdebug(&mut out, &argv[1]);
            }
        } else if kw(tag, "schedloglevel", 3) {
            self.unsupported(&mut out, "schedloglevel");
        } else if kw(tag, "show", 3) {
            self.show(&mut out, argv);
        } else if kw(tag, "write", 5) {
            if n < 2 {
                self.complain(&mut out, format!("too few arguments for keyword:{tag}"));
            } else if kw(&argv[1], "batch_script", 5) {
                if n > 4 {
                    self.complain(&mut out, format!("too many arguments for keyword:{tag}"));
                } else if n < 3 {
                    out.fail();
                } else {
                    self.write_batch_script(&mut out, &argv[2], argv.get(3).map(String::as_str));
                }
            } else if kw(&argv[1], "config", 6) {
                self.unsupported(&mut out, "write config");
            } else {
                self.complain(&mut out, format!("invalid write argument:{}", argv[1]));
            }
        } else if kw(tag, "takeover", 8) {
            self.unsupported(&mut out, "takeover");
        } else if kw(tag, "shutdown", 8) {
            // Slurm requires the whole word.
            let controller_only = match argv.get(1).map(String::as_str) {
                None => Some(false),
                Some("slurmctld" | "controller") if n == 2 => Some(true),
                Some(_) if n > 2 => {
                    out.err(format!("too many arguments for keyword:{tag}"));
                    None
                }
                Some(a) => {
                    out.err(format!("invalid shutdown argument:{a}"));
                    None
                }
            };
            if let Some(controller_only) = controller_only {
                if let Some(api) = self.connect(&mut out) {
                    let req = gsched_proto::api::ShutdownRequest { controller_only };
                    if let Err(e) = api.shutdown(&req) {
                        self.perror(&mut out, "slurm_shutdown error", &e);
                    }
                }
            }
        } else if kw(tag, "update", 1) {
            if n < 2 {
                out.err(format!("too few arguments for {tag} keyword"));
            } else {
                self.update(&mut out, &argv[1..]);
            }
        } else if kw(tag, "delete", 1) {
            self.delete(&mut out, &argv[1..]);
        } else if kw(tag, "verbose", 4) {
            if n > 1 {
                out.err(format!("too many arguments for {tag} keyword"));
            }
            self.flags.quiet = -1;
        } else if kw(tag, "version", 4) {
            if n > 1 {
                out.err(format!("too many arguments for {tag} keyword"));
            }
            out.print(&format!("{}\n", common::version_line()));
        } else if kw(tag, "listpids", 1) {
            self.unsupported(&mut out, "listpids");
        } else if kw(tag, "getent", 6) {
            self.unsupported(&mut out, "getent");
        } else if kw(tag, "notify", 1) {
            self.unsupported(&mut out, "notify");
        } else if kw(tag, "callerid", 3) {
            self.unsupported(&mut out, "callerid");
        } else if tag.eq_ignore_ascii_case("import-slurm-conf") {
            import_slurm_conf(&mut out, &argv[1..]);
        } else {
            out.err(format!("invalid keyword: {tag}"));
        }
        out
    }

    fn unsupported(&self, out: &mut Out, what: &str) {
        out.err(format!(
            "{}: error: {what} is not supported by gsched yet",
            self.prog
        ));
    }

    fn ping(&self, out: &mut Out) {
        let up = (self.api)().ok().and_then(|a| a.ping().ok()).is_some();
        out.print(&format!(
            "Slurmctld(primary) at {} is {}\n",
            self.ctld_name,
            if up { "UP" } else { "DOWN" }
        ));
        if !up {
            out.fail();
            if self.uid == 0 {
                out.print(
                    "*****************************************\n\
                     ** RESTORE SLURMCTLD DAEMON TO SERVICE **\n\
                     *****************************************\n",
                );
            }
        }
    }

    fn show(&mut self, out: &mut Out, argv: &[String]) {
        if argv.len() < 2 {
            return self.complain(out, format!("too few arguments for keyword:{}", argv[0]));
        }
        if argv.len() > 3 {
            return self.complain(out, format!("too many arguments for keyword:{}", argv[0]));
        }
        let (tag, val) = match argv[1].split_once('=') {
            Some((t, v)) => (t, Some(v.to_string())),
            None => (argv[1].as_str(), argv.get(2).cloned()),
        };
        let entity_unsupported = |s: &Self, out: &mut Out, what: &str| {
            out.err(format!(
                "{}: error: show {what} is not supported by gsched yet",
                s.prog
            ))
        };
        // With --json/--yaml: jobs, nodes and partitions as data; config and host lists
        // print as they do without (Slurm ignores the option there); anything else is
        // refused rather than printed in another format.
        let data_form = kw(tag, "jobs", 1)
            || kw(tag, "jobid", 1)
            || kw(tag, "nodes", 1)
            || kw(tag, "partitions", 2)
            || kw(tag, "partitionname", 2)
            || kw(tag, "config", 1)
            || kw(tag, "hostnames", 5)
            || kw(tag, "hostlist", 5)
            || kw(tag, "hostlistsorted", 9);
        if self.flags.mime.is_some() && !data_form {
            return out.err(format!(
                "{}: error: --json and --yaml are supported by gsched for show job, node and partition only",
                self.prog
            ));
        }
        if kw(tag, "aliases", 1) {
            entity_unsupported(self, out, "aliases");
        } else if kw(tag, "bbstat", 2) || kw(tag, "dwstat", 2) || kw(tag, "burstbuffer", 2) {
            entity_unsupported(self, out, "burstbuffer");
        } else if kw(tag, "assoc_mgr", 2) || kw(tag, "cache", 2) {
            entity_unsupported(self, out, "assoc_mgr");
        } else if kw(tag, "config", 1) {
            self.show_config(out);
        } else if kw(tag, "daemons", 1) {
            entity_unsupported(self, out, "daemons");
        } else if kw(tag, "Federations", 1) || kw(tag, "FrontendName", 1) {
            entity_unsupported(self, out, tag);
        } else if kw(tag, "hostnames", 5) {
            let list = val
                .or_else(|| (self.env)("SLURM_NODELIST"))
                .or_else(|| (self.env)("SLURM_JOB_NODELIST"));
            match list {
                None => {
                    if !self.quiet() {
                        out.stderr
                            .push(format!("{}: error: host list is empty", self.prog));
                    }
                }
                Some(l) => match hostlist::expand(&l) {
                    Ok(hosts) => {
                        for h in hosts {
                            out.print(&format!("{h}\n"));
                        }
                    }
                    Err(_) => out.stderr.push(format!("Invalid hostlist: {l}")),
                },
            }
        } else if kw(tag, "hostlist", 5) || kw(tag, "hostlistsorted", 9) {
            let sorted = kw(tag, "hostlistsorted", 9) && !kw(tag, "hostlist", 5);
            match val {
                None => {
                    out.err("invalid encode argument");
                    out.stderr.push(usage_text().trim_end().to_string());
                }
                Some(v) => self.encode_hostlist(out, &v, sorted),
            }
        } else if kw(tag, "jobs", 1) || kw(tag, "jobid", 1) {
            self.show_job(out, val.as_deref());
        } else if kw(tag, "licenses", 2) {
            self.show_licenses(out, val.as_deref());
        } else if kw(tag, "nodes", 1) {
            self.show_nodes(out, val.as_deref());
        } else if kw(tag, "partitions", 2) || kw(tag, "partitionname", 2) {
            self.show_partitions(out, val.as_deref());
        } else if kw(tag, "reservations", 1) || kw(tag, "reservationname", 1) {
            self.show_reservations(out, val.as_deref());
        } else if kw(tag, "slurmd", 2) {
            entity_unsupported(self, out, "slurmd");
        } else if kw(tag, "steps", 2) {
            self.show_steps(out, val.as_deref());
        } else if kw(tag, "topology", 1) {
            entity_unsupported(self, out, "topology");
        } else {
            self.complain(
                out,
                format!("invalid entity:{tag} for keyword:{} ", argv[0]),
            );
        }
    }

    fn encode_hostlist(&self, out: &mut Out, v: &str, sorted: bool) {
        let text = if v.starts_with('/') {
            match std::fs::read_to_string(v) {
                Ok(t) => {
                    let joined: Vec<&str> = t
                        .split(['\n', ','])
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .collect();
                    joined.join(",")
                }
                Err(_) => {
                    out.err(format!("Can not open {v}"));
                    return;
                }
            }
        } else {
            v.to_string()
        };
        match hostlist::expand(&text) {
            Ok(hosts) => {
                let s = if sorted {
                    hostlist::compress_sorted(&hosts)
                } else {
                    hostlist::compress(&hosts)
                };
                out.print(&format!("{s}\n"));
            }
            Err(_) => out.err(format!("Invalid hostlist: {text}")),
        }
    }

    fn show_config(&self, out: &mut Out) {
        let Some(api) = self.connect(out) else { return };
        match api.config() {
            Ok(c) => {
                out.print(&format_config(&c));
                out.print("\n");
                self.ping(out);
            }
            Err(e) => self.perror(out, "slurm_load_ctl_conf error", &e),
        }
    }

    /// `show licenses [name]`: scontrol's `LicenseName=... Total= Used= Free= Reserved=
    /// Remote=`, sorted by name.
    fn show_licenses(&self, out: &mut Out, name: Option<&str>) {
        let Some(api) = self.connect(out) else { return };
        let mut lics = match api.config() {
            Ok(c) => c.licenses,
            Err(e) => return self.perror(out, "slurm_load_license error", &e),
        };
        if lics.is_empty() {
            out.print("No licenses configured in Slurm.\n");
            return;
        }
        lics.sort_by(|a, b| a.name.cmp(&b.name));
        let sep = if self.flags.one_liner { " " } else { "\n    " };
        for l in lics.iter().filter(|l| name.is_none_or(|n| n == l.name)) {
            out.print(&format!(
                "LicenseName={}{sep}Total={} Used={} Free={} Reserved=0 Remote=no\n",
                l.name,
                l.total,
                l.used,
                l.total.saturating_sub(l.used)
            ));
        }
    }

    fn show_job(&self, out: &mut Out, id: Option<&str>) {
        let mut filter = JobFilter::default();
        if let Some(s) = id {
            if !s
                .chars()
                .all(|c| c.is_ascii_digit() || c == '_' || c == '+')
                || s.is_empty()
            {
                self.perror(out, "scontrol_print_job error", "Invalid job id specified");
                return;
            }
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            let n: u32 = digits.parse().unwrap_or(0);
            let task = gsched_proto::array::parse_job_ref(s).and_then(|(n, k)| Some((n, k?)));
            let Some(api) = self.connect(out) else { return };
            let found_task = task.is_some_and(|t| {
                api.jobs(JobFilter {
                    array_tasks: vec![t],
                    ..Default::default()
                })
                .is_ok_and(|r| !r.jobs.is_empty())
            });
            if let Some(c) = gsched_proto::het::parse_component_ref(s) {
                filter.het_components = vec![c];
            } else if let (Some(t), true) = (task, found_task) {
                filter.array_tasks = vec![t];
            } else if digits.len() != s.len() {
                // Not an array task of job N.
                match api.jobs(JobFilter {
                    ids: vec![n],
                    ..Default::default()
                }) {
                    Ok(r) if !r.jobs.is_empty() => {
                        out.fail();
                        if !self.quiet() {
                            out.print(&format!("Job {s} not found\n"));
                        }
                    }
                    Ok(_) => self.perror(out, "slurm_load_jobs error", "Invalid job id specified"),
                    Err(e) => self.perror(out, "slurm_load_jobs error", &e),
                }
                return;
            } else {
                filter.ids = vec![n];
            }
        }
        // Every job: those of partitions hidden from the user only with -a (as scontrol).
        filter.visible_only = id.is_none() && !self.flags.all;
        let Some(api) = self.connect(out) else { return };
        match api.jobs(filter) {
            Ok(r) => {
                if r.jobs.is_empty() {
                    if id.is_some() {
                        self.perror(out, "slurm_load_jobs error", "Invalid job id specified");
                    } else if !self.quiet() {
                        out.print("No jobs in the system\n");
                    }
                    return;
                }
                let (mut jobs, ranges) = crate::arrays::collapse(r.jobs.clone());
                jobs.sort_by_key(|j| std::cmp::Reverse(j.job_id));
                if let Some(m) = self.flags.mime {
                    out.print(&m.render(&crate::slurm_json::jobs(&jobs, &ranges, &self.cluster)));
                    return;
                }
                // The live usage of the running ones (the caller's, or all for an admin);
                // a controller without it, or a refusal, just leaves the line out.
                let running: Vec<u32> = jobs
                    .iter()
                    .filter(|j| j.state == JobState::Running)
                    .map(|j| j.job_id)
                    .collect();
                let usage = if running.is_empty() {
                    Vec::new()
                } else {
                    api.job_usage(&gsched_proto::api::JobUsageQuery {
                        job_ids: running,
                        series: false,
                    })
                    .map(|u| u.jobs)
                    .unwrap_or_default()
                };
                for j in &jobs {
                    let live = usage
                        .iter()
                        .find(|u| u.job_id == j.job_id)
                        .and_then(live::usage_line);
                    out.print(&format_job_ranged(
                        j,
                        ranges.get(&j.job_id).map(String::as_str),
                        r.now,
                        self.flags.one_liner,
                        self.flags.details,
                        live.as_deref(),
                    ));
                }
            }
            Err(e) => self.perror(out, "slurm_load_jobs error", &e),
        }
    }

    /// `show step [N[.K]]`: running job steps (gsrun).
    fn show_steps(&self, out: &mut Out, id: Option<&str>) {
        let (job, step) = match id.map(|s| s.split_once('.').unwrap_or((s, ""))) {
            None => (None, None),
            Some((j, st)) => match (j.parse::<u32>(), st) {
                (Ok(j), "") => (Some(j), None),
                (Ok(j), st) => match st.parse::<u32>() {
                    Ok(k) => (Some(j), Some(k)),
                    Err(_) => {
                        return self.perror(
                            out,
                            "slurm_get_job_steps error",
                            "Invalid job id specified",
                        )
                    }
                },
                _ => {
                    return self.perror(
                        out,
                        "slurm_get_job_steps error",
                        "Invalid job id specified",
                    )
                }
            },
        };
        let Some(api) = self.connect(out) else { return };
        let q = gsched_proto::step::StepQuery {
            job_ids: job.into_iter().collect(),
            running_only: true,
        };
        match api.steps(&q) {
            Ok(r) => {
                let steps: Vec<_> = r
                    .steps
                    .iter()
                    .filter(|s| step.is_none_or(|k| s.step_id == k))
                    .collect();
                if steps.is_empty() {
                    if let Some(id) = id {
                        out.print(&format!("Job step {id} not found\n"));
                        out.fail();
                    } else if !self.quiet() {
                        out.print("No job steps in the system\n");
                    }
                    return;
                }
                for s in steps {
                    out.print(&crate::squeue_steps::scontrol_text(
                        s,
                        r.now,
                        self.flags.one_liner,
                    ));
                }
            }
            Err(e) => self.perror(out, "slurm_get_job_steps error", &e),
        }
    }

    fn show_nodes(&self, out: &mut Out, name: Option<&str>) {
        let Some(api) = self.connect(out) else { return };
        let r = match api.nodes() {
            Ok(r) => r,
            Err(e) => return self.perror(out, "slurm_load_node error", &e),
        };
        if let Some(m) = self.flags.mime {
            let names = name.map(|e| hostlist::expand(e).unwrap_or_else(|_| vec![e.to_string()]));
            let shown: Vec<NodeInfo> = r
                .nodes
                .iter()
                .filter(|n| names.as_ref().is_none_or(|l| l.contains(&n.name)))
                .cloned()
                .collect();
            if let (Some(e), true) = (name, shown.is_empty()) {
                out.fail();
                if !self.quiet() {
                    out.stderr.push(format!("Node {e} not found"));
                }
            }
            let d = crate::slurm_json::response(
                false,
                "nodes",
                shown.iter().map(crate::slurm_json::node).collect(),
            );
            out.print(&m.render(&d));
            return;
        }
        match name {
            None => {
                if r.nodes.is_empty() {
                    if !self.quiet() {
                        out.print("No nodes in the system\n");
                    }
                    return;
                }
                for n in &r.nodes {
                    out.print(&format_node(n, self.flags.one_liner, self.slurmd_port));
                }
            }
            Some(expr) => {
                let names = hostlist::expand(expr).unwrap_or_else(|_| vec![expr.to_string()]);
                for nm in names {
                    match r.nodes.iter().find(|n| n.name == nm) {
                        Some(n) => {
                            out.print(&format_node(n, self.flags.one_liner, self.slurmd_port))
                        }
                        None => {
                            out.fail();
                            if !self.quiet() {
                                out.print(&format!("Node {nm} not found\n"));
                            }
                        }
                    }
                }
            }
        }
    }

    fn show_partitions(&self, out: &mut Out, name: Option<&str>) {
        let Some(api) = self.connect(out) else { return };
        let parts = match api.partitions() {
            Ok(r) => r.partitions,
            Err(e) => return self.perror(out, "slurm_load_partitions error", &e),
        };
        // Node memory for the TRES line; a failure here only loses that detail.
        let nodes = api.nodes().map(|r| r.nodes).unwrap_or_default();
        let shown: Vec<&PartitionInfo> = parts
            .iter()
            .filter(|p| name.is_none_or(|n| n == p.name))
            .filter(|p| self.flags.all || !p.unlisted)
            .collect();
        if shown.is_empty() {
            if let Some(n) = name {
                out.fail();
                if !self.quiet() {
                    out.print(&format!("Partition {n} not found\n"));
                }
            } else if !self.quiet() {
                out.print("No partitions in the system\n");
            }
            return;
        }
        if let Some(m) = self.flags.mime {
            let d = crate::slurm_json::response(
                false,
                "partitions",
                shown
                    .iter()
                    .map(|p| crate::slurm_json::partition(p, &nodes))
                    .collect(),
            );
            out.print(&m.render(&d));
            return;
        }
        for p in shown {
            out.print(&format_partition(p, &nodes, self.flags.one_liner));
        }
    }

    fn hold(&self, out: &mut Out, args: &[String], release: bool) {
        let mut ids = Vec::new();
        let mut array_tasks = Vec::new();
        let mut names = Vec::new();
        for a in args {
            let mut s = a.as_str();
            for pre in ["JobID=", "Job="] {
                if s.len() >= pre.len() && s[..pre.len()].eq_ignore_ascii_case(pre) {
                    s = &s[pre.len()..];
                }
            }
            let refs: Option<Vec<_>> = (!s.is_empty())
                .then(|| {
                    s.split(',')
                        .map(gsched_proto::array::parse_job_ref)
                        .collect()
                })
                .flatten();
            if let Some(list) = refs {
                for (n, k) in list {
                    match k {
                        Some(k) => array_tasks.push((n, k)),
                        None => ids.push(n),
                    }
                }
            } else if s.len() >= 5 && s[..5].eq_ignore_ascii_case("Name=") {
                names.push(s[5..].to_string());
            } else if s.len() >= 8 && s[..8].eq_ignore_ascii_case("JobName=") {
                names.push(s[8..].to_string());
            } else {
                self.complain(out, format!("Invalid job id specified for job {s}"));
            }
        }
        if ids.is_empty() && array_tasks.is_empty() && names.is_empty() {
            return;
        }
        let Some(api) = self.connect(out) else { return };
        match api.hold(&HoldRequest {
            ids,
            array_tasks,
            names,
            release,
        }) {
            Ok(r) => {
                for res in &r.results {
                    if let Some(e) = &res.error {
                        self.complain(out, format!("{} for job {}", e.message, res.job_id));
                    }
                }
            }
            Err(e) => self.perror(out, "slurm_suspend error", &e),
        }
    }

    /// `requeue <job_list>`: comma or space separated ids.
    fn requeue(&self, out: &mut Out, args: &[String], hold: bool) {
        let mut ids = Vec::new();
        // Array tasks named `N_K` (submitit and Lightning requeue
        // `$SLURM_ARRAY_JOB_ID_$SLURM_ARRAY_TASK_ID`): resolved to the tasks' own ids.
        let mut tasks = Vec::new();
        // Leading flags, as scontrol's parse_requeue_flags: `Incomplete` (a prefix of it)
        // and `State=SpecialExit` (or `State=SE`).
        let mut req = RequeueRequest {
            hold,
            ..Default::default()
        };
        let mut first_job = 0;
        for a in args {
            let lower = a.to_ascii_lowercase();
            if !lower.is_empty() && "incomplete".starts_with(&lower) {
                req.incomplete = true;
            } else if lower
                .strip_prefix("state=")
                .is_some_and(|s| s.starts_with("specialexit") || s.starts_with("se"))
            {
                req.special_exit = true;
            } else {
                break;
            }
            first_job += 1;
        }
        for a in &args[first_job..] {
            let mut s = a.as_str();
            for pre in ["JobID=", "Job="] {
                if s.len() >= pre.len() && s[..pre.len()].eq_ignore_ascii_case(pre) {
                    s = &s[pre.len()..];
                }
            }
            for t in s.split(',') {
                match gsched_proto::array::parse_job_ref(t) {
                    Some((n, Some(k))) => tasks.push((n, k, t.to_string())),
                    _ => match job_id_list(t) {
                        Some(list) => ids.extend(list),
                        None => {
                            self.complain(out, format!("Invalid job id specified for job {s}"));
                            return;
                        }
                    },
                }
            }
        }
        let Some(api) = self.connect(out) else { return };
        if !tasks.is_empty() {
            let found = match api.jobs(JobFilter {
                array_tasks: tasks.iter().map(|(n, k, _)| (*n, *k)).collect(),
                ..Default::default()
            }) {
                Ok(r) => r.jobs,
                Err(e) => return self.perror(out, "slurm_requeue error", &e),
            };
            for (n, k, text) in &tasks {
                match found
                    .iter()
                    .find(|j| j.array.is_some_and(|a| (a.job_id, a.task_id) == (*n, *k)))
                {
                    Some(j) => ids.push(j.job_id),
                    None => {
                        self.complain(out, format!("Invalid job id specified for job {text}"));
                    }
                }
            }
            if ids.is_empty() {
                return;
            }
        }
        req.ids = ids;
        match api.requeue(&req) {
            Ok(r) => {
                for res in &r.results {
                    if let Some(e) = &res.error {
                        self.complain(out, format!("{} for job {}", e.message, res.job_id));
                    }
                }
            }
            Err(e) => self.perror(out, "slurm_requeue error", &e),
        }
    }

    /// `suspend|resume <job_list>` (root and SlurmUser): the job's processes are frozen
    /// and thawed on its node; it keeps its resources meanwhile.
    fn suspend(&self, out: &mut Out, list: &str, resume: bool) {
        let Some(ids) = job_id_list(list) else {
            self.complain(out, format!("Invalid job id specified for job {list}"));
            return;
        };
        let Some(api) = self.connect(out) else { return };
        let what = if resume { "resume" } else { "suspend" };
        match api.suspend(&gsched_proto::api::SuspendRequest { ids, resume }) {
            Ok(r) => {
                for res in &r.results {
                    if let Some(e) = &res.error {
                        self.complain(out, format!("{} for job {}", e.message, res.job_id));
                    }
                }
            }
            Err(e) => self.perror(out, &format!("slurm_{what} error"), &e),
        }
    }

    fn update(&self, out: &mut Out, args: &[String]) {
        // Identify the entity, as scontrol's _update_it.
        let (mut job, mut node, mut part, mut step, mut resv, mut front, mut debug) =
            (false, false, false, false, false, false, false);
        let mut i = 0;
        while i < args.len() {
            let tag = match args[i].split_once('=') {
                Some((t, _)) => t,
                None => {
                    // "Tag Value": the value is the next word.
                    i += 1;
                    args[i - 1].as_str()
                }
            };
            if kw(tag, "NodeName", 3) {
                node = true;
            } else if kw(tag, "PartitionName", 3) {
                part = true;
            } else if kw(tag, "JobId", 3) || kw(tag, "JobNAME", 3) {
                job = true;
            } else if kw(tag, "StepId", 4) {
                step = true;
            } else if kw(tag, "FrontendName", 2) {
                front = true;
            } else if kw(tag, "ReservationName", 3) {
                resv = true;
            } else if kw(tag, "SlurmctldDebug", 2) {
                debug = true;
            }
            i += 1;
        }
        let unsupported = |out: &mut Out, what: &str| {
            out.err(format!(
                "{}: error: update of {what} is not supported by gsched yet",
                self.prog
            ))
        };
        if job {
            self.update_job(out, args);
        } else if step {
            unsupported(out, "job steps");
        } else if resv {
            self.update_reservation(out, args);
        } else if node {
            self.update_node(out, args);
        } else if front {
            unsupported(out, "front end nodes");
        } else if part {
            self.update_partition(out, args);
        } else if debug {
            // `update SlurmctldDebug=<level>`: setdebug, as scontrol.
            let level = args.iter().find_map(|a| {
                a.split_once('=')
                    .filter(|(k, _)| kw(k, "SlurmctldDebug", 2))
                    .map(|(_, v)| v.to_string())
            });
            match level {
                Some(l) => self.setdebug(out, &l),
                None => {
                    out.err("Invalid input: SlurmctldDebug needs a value (SlurmctldDebug=<level>)")
                }
            }
        } else {
            out.err("No valid entity in update command");
            out.err("Input line must include \"NodeName\", \"PartitionName\", \"Reservation\", \"JobId\", or \"SlurmctldDebug\"");
        }
    }

    fn update_job(&self, out: &mut Out, args: &[String]) {
        let mut ids: Option<Vec<u32>> = None;
        let mut id_str = String::new();
        let mut limit: Option<(char, Option<u32>)> = None;
        let mut other = JobUpdateRequest::default();
        let mut i = 0;
        while i < args.len() {
            let (tag, val) = match args[i].split_once('=') {
                Some((t, v)) => (t.to_string(), v.to_string()),
                None if i + 1 < args.len() => {
                    i += 1;
                    (args[i - 1].clone(), args[i].clone())
                }
                None => {
                    out.err(format!("Invalid input: {}", args[i]));
                    out.stderr.push("Request aborted".into());
                    return;
                }
            };
            i += 1;
            if kw(&tag, "JobId", 3) {
                id_str = val.clone();
                ids = job_id_list(&val);
            } else if kw(&tag, "TimeLimit", 5) {
                let (sign, v) = match val.chars().next() {
                    Some(c @ ('+' | '-')) => (c, &val[1..]),
                    _ => ('=', val.as_str()),
                };
                match units::parse_time_minutes(v) {
                    Ok(m) => limit = Some((sign, m)),
                    Err(_) => {
                        out.err(format!("{}: error: Invalid TimeLimit value", self.prog));
                        return;
                    }
                }
            } else if kw(&tag, "JobNAME", 4) || kw(&tag, "Name", 4) {
                other.name = Some(val.clone());
            } else if kw(&tag, "Dependency", 3) {
                other.dependency = Some(val.clone());
            } else if kw(&tag, "StartTime", 3) || kw(&tag, "BeginTime", 3) {
                match gsched_proto::begin::parse_begin(&val, crate::common::now()) {
                    Ok(t) => other.begin_time = Some(t),
                    Err(_) => {
                        out.err(format!("Invalid {tag} value: {val}"));
                        out.stderr.push("Request aborted".into());
                        return;
                    }
                }
            } else if kw(&tag, "Priority", 2) {
                match val.parse::<u32>() {
                    Ok(p) => other.priority = Some(p),
                    Err(_) => {
                        out.err(format!("Invalid Priority value: {val}"));
                        out.stderr.push("Request aborted".into());
                        return;
                    }
                }
            } else if kw(&tag, "Nice", 2) {
                match val
                    .trim()
                    .parse::<i64>()
                    .map(gsched_proto::job::nice_in_range)
                {
                    Ok(Some(n)) => other.nice = Some(n),
                    Ok(None) => {
                        out.err(format!(
                            "{}: error: Nice value out of range (+/- {}). Value ignored",
                            self.prog,
                            gsched_proto::job::NICE_LIMIT
                        ));
                        return;
                    }
                    // (Slurm would read a word as 0.)
                    Err(_) => {
                        out.err(format!("{}: error: Invalid Nice value: {val}", self.prog));
                        return;
                    }
                }
            } else if kw(&tag, "Partition", 2) {
                other.partition = Some(val.clone());
            } else if kw(&tag, "QOS", 2) {
                other.qos = Some(val.trim().to_ascii_lowercase());
            } else if kw(&tag, "Account", 2) {
                other.account = Some(val.trim().to_ascii_lowercase());
            } else if kw(&tag, "TimeMin", 5) {
                match units::parse_time_minutes(&val) {
                    Ok(m) => other.time_min = Some(m.filter(|&m| m != 0)),
                    Err(_) => {
                        out.err(format!("{}: error: Invalid TimeMin value", self.prog));
                        return;
                    }
                }
            } else {
                out.err(format!(
                    "Update of this parameter is not supported: {}",
                    args[i - 1]
                ));
                out.stderr.push("Request aborted".into());
                return;
            }
        }
        let has_other = other.has_other_changes();
        if limit.is_none() && !has_other {
            out.err("No changes specified");
            return;
        }
        if id_str.is_empty() {
            if other.name.is_some() {
                out.err(format!(
                    "{}: error: update by JobName is not supported by gsched yet; use JobId",
                    self.prog
                ));
            } else {
                out.err(format!("{}: error: No job ID specified", self.prog));
            }
            return;
        }
        let Some(ids) = ids else {
            self.complain(out, format!("Invalid job id specified for job {id_str}"));
            return;
        };
        let Some(api) = self.connect(out) else { return };
        for id in ids {
            if has_other {
                let req = JobUpdateRequest {
                    job_id: id,
                    ..other.clone()
                };
                if let Err((_, msg)) = api.update_job(&req) {
                    self.complain(out, format!("{msg} for job {id}"));
                    continue;
                }
            }
            let Some((sign, new)) = limit else { continue };
            let value = if sign == '=' {
                new
            } else {
                // Relative change: needs the current limit.
                let cur = match api.jobs(JobFilter {
                    ids: vec![id],
                    ..Default::default()
                }) {
                    Ok(r) => r.jobs.first().map(|j| j.time_limit),
                    Err(_) => None,
                };
                match (cur, new) {
                    (None, _) => {
                        self.complain(out, format!("Invalid job id specified for job {id}"));
                        continue;
                    }
                    (Some(None), _) | (Some(_), None) => None,
                    (Some(Some(c)), Some(d)) => {
                        if sign == '+' {
                            Some(c.saturating_add(d))
                        } else if d > c {
                            out.err(format!(
                                "{}: error: TimeLimit decrement larger than current time limit ({d} > {c})",
                                self.prog
                            ));
                            continue;
                        } else {
                            Some(c - d)
                        }
                    }
                }
            };
            let req = JobUpdateRequest {
                job_id: id,
                time_limit: Some(value),
                ..JobUpdateRequest::default()
            };
            if let Err((_, msg)) = api.update_job(&req) {
                self.complain(out, format!("{msg} for job {id}"));
            }
        }
    }

    fn update_node(&self, out: &mut Out, args: &[String]) {
        let mut names: Option<String> = None;
        let mut state: Option<NodeStateUpdate> = None;
        let mut state_needs_reason = false;
        let mut reason: Option<String> = None;
        let mut migrate_by: Option<i64> = None;
        let mut count = 0;
        for a in args {
            let Some((tag, val)) = self.setting(out, a) else {
                return;
            };
            if kw(tag, "NodeAddr", 5)
                || kw(tag, "NodeHostName", 5)
                || kw(tag, "ActiveFeatures", 3)
                || kw(tag, "CpuBind", 7)
                || kw(tag, "Extra", 1)
                || kw(tag, "Features", 1)
                || kw(tag, "AvailableFeatures", 3)
                || kw(tag, "Gres", 1)
                || kw(tag, "Weight", 1)
                || kw(tag, "Comment", 2)
            {
                out.err(format!("Update of this parameter is not supported: {a}"));
                out.stderr.push("Request aborted".into());
                return;
            } else if kw(tag, "NodeName", 1) {
                names = Some(val.to_string());
            } else if kw(tag, "MigrateBy", 3) {
                match resv::parse_when(val, self.now) {
                    Ok(t) => migrate_by = Some(t),
                    Err(e) => {
                        out.err(format!("Invalid MigrateBy value: {val} ({e})"));
                        out.stderr.push("Request aborted".into());
                        return;
                    }
                }
            } else if kw(tag, "Reason", 1) {
                reason = Some(val.to_string());
                count += 1;
            } else if kw(tag, "State", 1) {
                match parse_node_state_update(val) {
                    Ok((s, needs)) => {
                        state = Some(s);
                        state_needs_reason = needs;
                        count += 1;
                    }
                    Err(Some(name)) => {
                        out.err(format!(
                            "{}: error: State={name} is not supported by gsched yet",
                            self.prog
                        ));
                        return;
                    }
                    Err(None) => {
                        out.err(format!("Invalid input: {a}"));
                        out.stderr.push("Request aborted".into());
                        out.stderr.push("Valid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN".into());
                        out.stderr
                            .push("Not all states are valid given a node's prior state".into());
                        return;
                    }
                }
            } else {
                out.err(format!("Update of this parameter is not supported: {a}"));
                out.stderr.push("Request aborted".into());
                return;
            }
        }
        if state_needs_reason && reason.as_deref().unwrap_or("").is_empty() {
            out.err("You must specify a reason when DOWNING or DRAINING a node. Request denied");
            return;
        }
        if count == 0 {
            out.err("No changes specified");
            return;
        }
        let Some(state) = state else {
            out.err(format!(
                "{}: error: updating a node's Reason without a State is not supported by gsched yet",
                self.prog
            ));
            return;
        };
        let Some(api) = self.connect(out) else { return };
        let req = NodeUpdateRequest {
            names: names.into_iter().collect(),
            state,
            reason,
            migrate_by,
        };
        if let Err(e) = api.update_nodes(&req) {
            out.err(format!("slurm_update error: {e}"));
        }
    }
}

impl Session<'_> {
    /// One `Key=Value` of an update, the value without surrounding double quotes; `None`
    /// (with scontrol's message) for a word without `=`.
    fn setting<'a>(&self, out: &mut Out, a: &'a str) -> Option<(&'a str, &'a str)> {
        let Some((tag, val)) = a.split_once('=') else {
            out.err(format!(
                "{}: error: Invalid input: {a}  Request aborted",
                self.prog
            ));
            return None;
        };
        let val = val.strip_prefix('"').unwrap_or(val);
        Some((tag, val.strip_suffix('"').unwrap_or(val)))
    }

    /// `setdebug <level>`: gsctld's log level until it reads its config again.
    fn setdebug(&self, out: &mut Out, level: &str) {
        if gsched_proto::config::level_name(level).is_err() {
            out.err(format!("invalid debug level: {level}"));
            return;
        }
        let Some(api) = self.connect(out) else { return };
        if let Err(e) = api.setdebug(level) {
            self.perror(out, "slurm_set_debug_level error", &e);
        }
    }

    /// `write batch_script <job_id> [<file>|-]`: the job's script to `slurm-<id>.sh` (or
    /// the file named, `-` for stdout); the job's owner and admins only, as slurmctld.
    fn write_batch_script(&self, out: &mut Out, id: &str, file: Option<&str>) {
        // As scontrol's atoll: the leading digits (`12_3` is job 12).
        let digits: String = id.chars().take_while(char::is_ascii_digit).collect();
        let id: u32 = digits.parse().unwrap_or(0);
        let file = file.map_or_else(|| format!("slurm-{id}.sh"), str::to_string);
        let Some(api) = self.connect(out) else { return };
        let fail = |out: &mut Out, msg: &str| {
            self.perror(out, "job script retrieval failed", msg);
        };
        let job = match api.job_with_script(id) {
            Ok(Some(j)) => j,
            Ok(None) => return fail(out, "Invalid job id specified"),
            Err(e) => return fail(out, &e),
        };
        if job.spec.script.is_empty() {
            let msg = if job.user_id != self.uid {
                "Invalid user id"
            } else {
                "Job script not specified"
            };
            return fail(out, msg);
        }
        if file == "-" {
            out.print(&job.spec.script);
            return;
        }
        if let Err(e) = std::fs::write(&file, &job.spec.script) {
            out.err(format!("failed to open file `{file}`: {e}"));
            return;
        }
        if !self.quiet() {
            out.print(&format!("batch script for job {id} written to {file}\n"));
        }
    }

    /// `update PartitionName=<name> Key=Value ...`: the controller checks the keys and
    /// values (those of a `PartitionName=` config line) and applies all or none.
    fn update_partition(&self, out: &mut Out, args: &[String]) {
        let mut name: Option<String> = None;
        let mut settings = Vec::new();
        for a in args {
            let Some((tag, val)) = self.setting(out, a) else {
                return;
            };
            if kw(tag, "PartitionName", 3) {
                name = Some(val.to_string());
            } else {
                settings.push((tag.to_string(), val.to_string()));
            }
        }
        let Some(name) = name else {
            out.err("PartitionName must be given.");
            return;
        };
        if settings.is_empty() {
            out.err("No changes specified");
            return;
        }
        let Some(api) = self.connect(out) else { return };
        let req = gsched_proto::api::PartitionUpdateRequest { name, settings };
        if let Err(e) = api.update_partition(&req) {
            out.err(format!("slurm_update error: {e}"));
        }
    }
}

/// A `State=` value of a node update: the request and whether a reason is required.
/// `Err(Some(name))`: a Slurm state gsched does not support; `Err(None)`: invalid.
pub fn parse_node_state_update(val: &str) -> Result<(NodeStateUpdate, bool), Option<&'static str>> {
    let v3 = |name: &str| kw(val, name, 3);
    if v3("NoResp") {
        return Err(Some("NoResp"));
    }
    if v3("CANCEL_REBOOT") {
        return Err(Some("CANCEL_REBOOT"));
    }
    if v3("DRAIN") {
        return Ok((NodeStateUpdate::Drain, true));
    }
    if v3("FAIL") {
        return Err(Some("FAIL"));
    }
    if v3("FUTURE") {
        return Err(Some("FUTURE"));
    }
    if v3("RESUME") {
        return Ok((NodeStateUpdate::Resume, false));
    }
    if kw(val, "POWER_DOWN_ASAP", 12) || kw(val, "POWER_DOWN_FORCE", 12) || kw(val, "POWER_DOWN", 7)
    {
        return Err(Some("POWER_DOWN"));
    }
    if kw(val, "POWER_UP", 7) {
        return Err(Some("POWER_UP"));
    }
    if v3("UNDRAIN") {
        return Err(Some("UNDRAIN"));
    }
    // Base node state names, in Slurm's order.
    for (name, res) in [
        ("UNKNOWN", Err(Some("UNKNOWN"))),
        ("DOWN", Ok((NodeStateUpdate::Down, true))),
        ("IDLE", Ok((NodeStateUpdate::Idle, false))),
        ("ALLOCATED", Err(Some("ALLOCATED"))),
        ("ERROR", Err(Some("ERROR"))),
        ("MIXED", Err(Some("MIXED"))),
    ] {
        if v3(name) {
            return res;
        }
    }
    Err(None)
}

/// Plain job ids, comma separated (`12`, `12,13`); `None` for anything else.
/// Job ids, comma separated; `N+K` (het job component K) is its own id, N + K.
fn job_id_list(s: &str) -> Option<Vec<u32>> {
    if s.is_empty() {
        return None;
    }
    s.split(',')
        .map(|t| match gsched_proto::het::parse_component_ref(t) {
            Some((n, k)) => n.checked_add(k),
            None => t.parse::<u32>().ok().filter(|n| *n > 0),
        })
        .collect()
}

/// `Configuration data as of ...` and the `%-23s = %s` lines.
pub fn format_config(c: &ConfigResponse) -> String {
    let mut s = format!("Configuration data as of {}\n", make_time_str(c.now));
    for (k, v) in &c.entries {
        s.push_str(&format!("{k:<23} = {v}\n"));
    }
    s
}

/// scontrol's limited output-path expansion (`%A %a %j %u %x`), made absolute.
fn fname(job: &JobInfo, pat: &str) -> String {
    let user = name_or_id(&job.user_name, job.user_id);
    let task = job
        .array
        .map_or(gsched_proto::patterns::NO_ARRAY_TASK, |a| a.task_id);
    let t = pat
        .replace("%A", &job.array_job_id().to_string())
        .replace("%a", &task.to_string())
        .replace("%j", &job.job_id.to_string())
        .replace("%u", &user)
        .replace("%x", &job.name);
    if t.starts_with('/') {
        t
    } else {
        format!("{}/{t}", job.spec.work_dir)
    }
}

/// `StdOut=`: the `-o` file (patterns expanded as scontrol does), else `slurm-%j.out`.
pub(crate) fn stdout_path(j: &JobInfo) -> String {
    let spec = &j.spec;
    spec.stdout
        .as_deref()
        .map(|p| fname(j, p))
        .unwrap_or_else(|| match &j.array {
            Some(a) => format!("{}/slurm-{}_{}.out", spec.work_dir, a.job_id, a.task_id),
            None => format!("{}/slurm-{}.out", spec.work_dir, j.job_id),
        })
}

/// `StdErr=`: the `-e` file, else the output file.
pub(crate) fn stderr_path(j: &JobInfo, stdout: &str) -> String {
    j.spec
        .stderr
        .as_deref()
        .map(|p| fname(j, p))
        .unwrap_or_else(|| stdout.to_string())
}

/// `StdIn=`: the `-i` file, else `/dev/null`.
pub(crate) fn stdin_path(j: &JobInfo) -> String {
    j.spec
        .stdin
        .as_deref()
        .map(|p| fname(j, p))
        .unwrap_or_else(|| "/dev/null".to_string())
}

/// TRES string: `cpu=N,mem=M,node=K,billing=N`.
pub(crate) fn tres(cpus: u32, mem_mb: u64, nodes: u32) -> String {
    let mut s = format!("cpu={cpus}");
    if mem_mb > 0 {
        s.push_str(&format!(",mem={}", units::format_memory_mb(mem_mb)));
    }
    s.push_str(&format!(",node={nodes},billing={cpus}"));
    s
}

/// `scontrol show job` for one job.
pub fn format_job(j: &JobInfo, now: i64, one_liner: bool, details: bool) -> String {
    format_job_ranged(j, None, now, one_liner, details, None)
}

/// `scontrol show job` for one job or, with `range`, for an array's collapsed pending tasks
/// (`ArrayTaskId=1-7%4`); `live`, a running job's usage line (gsched's, `scontrol/live.rs`).
pub fn format_job_ranged(
    j: &JobInfo,
    range: Option<&str>,
    now: i64,
    one_liner: bool,
    details: bool,
    live: Option<&str>,
) -> String {
    let le = if one_liner { " " } else { "\n   " };
    let spec = &j.spec;
    let mut o = String::new();
    o.push_str(&format!("JobId={} ", j.job_id));
    if let Some(a) = &j.array {
        let task = range.map_or_else(|| a.task_id.to_string(), str::to_string);
        o.push_str(&format!(
            "ArrayJobId={} ArrayTaskId={task} ArrayTaskThrottle={} ",
            a.job_id,
            a.throttle.unwrap_or(0)
        ));
    } else if let Some(h) = &j.het {
        o.push_str(&format!("HetJobId={} HetJobOffset={} ", h.job_id, h.offset));
    }
    o.push_str(&format!("JobName={}{le}", j.name));
    if let Some(h) = &j.het {
        o.push_str(&format!("HetJobIdSet={}{le}", h.id_set()));
    }
    let user = name_or_id(&j.user_name, j.user_id);
    let group = name_or_id(&j.group_name, j.group_id);
    o.push_str(&format!(
        "UserId={user}({}) GroupId={group}({}) MCS_label=N/A{le}",
        j.user_id, j.group_id
    ));
    o.push_str(&format!(
        "Priority={} Nice={} Account={} QOS={}{le}",
        j.priority,
        j.nice(),
        j.account(),
        j.qos()
    ));
    if let Some(f) = &j.priority_factors {
        // A gsched extension (Slurm shows these with sprio).
        o.push_str(&format!(
            "PriorityFactors=age:{:.0} fairshare:{:.0} jobsize:{:.0} partition:{:.0} qos:{:.0} nice:{}{le}",
            f.age, f.fairshare, f.job_size, f.partition, f.qos, f.nice
        ));
    }
    o.push_str(&format!(
        "JobState={} Reason={} Dependency={}{le}",
        j.state_long(),
        j.reason.as_str().replace(char::is_whitespace, "_"),
        j.dependency.as_deref().unwrap_or("(null)")
    ));
    o.push_str(&format!(
        "Requeue={} Restarts={} BatchFlag=1 Reboot=0 ExitCode={}{le}",
        u8::from(j.requeue),
        j.restarts,
        j.exit_code_string()
    ));
    if details {
        o.push_str(&format!("DerivedExitCode={}{le}", j.exit_code_string()));
    }
    let run = if j.state == JobState::Pending {
        0
    } else {
        // Time suspended is not run time (Slurm).
        (j.run_time(now) - j.suspended_total(now)).max(0) as u64
    };
    o.push_str(&format!(
        "RunTime={} TimeLimit={} TimeMin={}{le}",
        units::format_secs_scontrol(run),
        units::format_time_limit_scontrol(j.time_limit),
        j.spec
            .time_min
            .map_or("N/A".to_string(), |m| units::format_time_limit_scontrol(
                Some(m)
            ))
    ));
    o.push_str(&format!(
        "SubmitTime={} EligibleTime={}{le}",
        make_time_str(j.submit_time),
        opt_time_str(j.eligible_time)
    ));
    o.push_str(&format!("AccrueTime={}{le}", opt_time_str(j.eligible_time)));
    let end = match (j.state, j.time_limit, j.start_time) {
        (JobState::Pending, Some(m), _) if j.expected_start.is_some() => {
            make_time_str(j.expected_start.unwrap_or(0) + i64::from(m) * 60)
        }
        (JobState::Pending, _, _) => "Unknown".to_string(),
        (JobState::Running | JobState::Completing, None, _) => "Unknown".to_string(),
        (JobState::Running | JobState::Completing, Some(m), Some(s)) => {
            // Time suspended does not count against the limit.
            make_time_str(s + i64::from(m) * 60 + j.suspended_secs)
        }
        _ => opt_time_str(j.end_time),
    };
    o.push_str(&format!(
        "StartTime={} EndTime={end} Deadline=N/A{le}",
        opt_time_str(j.start_time.or(j.expected_start))
    ));
    let (suspend_time, pre_suspend) = match (j.suspended_since, j.start_time) {
        (Some(t), Some(s)) if j.is_suspended() => {
            (make_time_str(t), (t - s - j.suspended_secs).max(0))
        }
        _ => ("None".to_string(), 0),
    };
    o.push_str(&format!(
        "SuspendTime={suspend_time} SecsPreSuspend={pre_suspend} LastSchedEval={} Scheduler=Main{le}",
        opt_time_str(j.start_time.or(j.eligible_time).or(Some(j.submit_time)))
    ));
    o.push_str(&format!(
        "Partition={} AllocNode:Sid={}:0{le}",
        j.partition,
        or_null(&spec.submit_host)
    ));
    o.push_str(&format!(
        "ReqNodeList={} ExcNodeList={}{le}",
        or_null(spec.nodelist.as_deref().unwrap_or("")),
        or_null(spec.exclude.as_deref().unwrap_or(""))
    ));
    // Slurm 22.05: empty until the job has nodes; a pending job's planned nodes follow.
    o.push_str(&format!("NodeList={}", hostlist::compress_sorted(&j.nodes)));
    if j.state == JobState::Pending && !j.sched_nodes.is_empty() {
        o.push_str(&format!(
            " SchedNodeList={}",
            hostlist::compress_sorted(&j.sched_nodes)
        ));
    }
    o.push_str(le);
    if let Some(b) = j.nodes.first() {
        o.push_str(&format!("BatchHost={b}{le}"));
    }
    o.push_str(&format!(
        "NumNodes={} NumCPUs={} NumTasks={} CPUs/Task={} ReqB:S:C:T=0:0:*:*{le}",
        j.num_nodes,
        j.num_cpus,
        // Slurm 22.05 drops the task count of a job that ended without running.
        if j.state.is_terminal() && j.nodes.is_empty() {
            "N/A".to_string()
        } else {
            j.num_tasks.to_string()
        },
        spec.cpus_per_task()
    ));
    let gres = gsched_proto::gpu_tres::alloc_tres(j);
    o.push_str(&format!(
        "TRES={}{}{le}",
        tres(
            j.num_cpus,
            j.mem_per_node_mb.saturating_mul(u64::from(j.num_nodes)),
            j.num_nodes
        ),
        if gres.is_empty() {
            String::new()
        } else {
            format!(",{gres}")
        }
    ));
    o.push_str(&format!(
        "Socks/Node=* NtasksPerN:B:S:C={}:0:*:* CoreSpec=*{le}",
        spec.ntasks_per_node.unwrap_or(0)
    ));
    let (mem_kind, mem) = match spec.mem {
        Some(MemRequest::PerCpu(m)) => ("CPU", m),
        Some(MemRequest::PerNode(m)) => ("Node", m),
        None => ("Node", j.mem_per_node_mb),
    };
    o.push_str(&format!(
        "MinCPUsNode={} MinMemory{mem_kind}={} MinTmpDiskNode=0{le}",
        spec.cpus_per_task() * spec.ntasks_per_node.unwrap_or(1).max(1),
        units::format_memory_mb(mem)
    ));
    o.push_str(&format!(
        "Features={} DelayBoot=00:00:00{le}",
        or_null(spec.constraint.as_deref().unwrap_or(""))
    ));
    o.push_str(&format!(
        "OverSubscribe={} Contiguous=0 Licenses={} Network=(null){le}",
        if spec.exclusive { "NO" } else { "OK" },
        or_null(&gsched_proto::licenses::format(&spec.licenses))
    ));
    o.push_str(&format!("Command={}{le}", or_null(&spec.command)));
    o.push_str(&format!("SubmitLine={}{le}", or_null(&spec.submit_line)));
    o.push_str(&format!("WorkDir={}", spec.work_dir));
    let stdout = stdout_path(j);
    let stderr = stderr_path(j, &stdout);
    let stdin = stdin_path(j);
    if let Some(c) = &spec.comment {
        o.push_str(&format!("{le}Comment={c} "));
    }
    o.push_str(&format!("{le}StdErr={stderr}"));
    o.push_str(&format!("{le}StdIn={stdin}"));
    o.push_str(&format!("{le}StdOut={stdout}"));
    if let Some(u) = j.usage {
        // Not in Slurm's scontrol (its numbers live in sacct): what the job's cgroup
        // measured, once it ended, in sacct's formats.
        let rss = u.max_rss_bytes.map(|b| crate::sacct::bytes_str(b, None));
        let cpu = u.total_cpu_usec().map(crate::sacct::cpu_time_str);
        o.push_str(&format!(
            "{le}MaxRSS={} TotalCPU={}",
            rss.as_deref().unwrap_or("(null)"),
            cpu.as_deref().unwrap_or("(null)")
        ));
    }
    if let Some(l) = live {
        o.push_str(&format!("{le}{l}"));
    }
    o.push_str(&format!("{le}Power="));
    if let Some(g) = &spec.gpu {
        // Slurm's lines for a job with GPUs.
        let ty = g
            .type_name
            .as_ref()
            .map(|t| format!(":{t}"))
            .unwrap_or_default();
        if let Some(c) = g.cpus_per_gpu {
            o.push_str(&format!("{le}CpusPerTres=gres/gpu{ty}:{c}"));
        }
        if let Some(m) = g.mem_per_gpu_mb {
            o.push_str(&format!("{le}MemPerTres=gres/gpu{ty}:{m}"));
        }
        for (k, v) in [
            ("TresPerJob", g.tres_per_job()),
            ("TresPerNode", g.tres_per_node()),
            ("TresPerTask", g.tres_per_task()),
        ] {
            if let Some(v) = v {
                o.push_str(&format!("{le}{k}={v}"));
            }
        }
        if !j.gpus.is_empty() {
            let ty = g.type_name.clone();
            let gres: Vec<String> = j
                .nodes
                .iter()
                .zip(&j.gpus)
                .map(|(n, a)| format!("{n}:{}", gsched_proto::gpu_tres::node_gres(a, &ty)))
                .collect();
            o.push_str(&format!("{le}GRES={}", gres.join(" ")));
        }
    }
    if !j.spec.mail_type.is_empty() {
        // Slurm's optional mail line (the user's name when --mail-user was not given).
        o.push_str(&format!(
            "{le}MailUser={} MailType={}",
            j.spec.mail_user.as_deref().unwrap_or(&j.user_name),
            j.spec.mail_type.names()
        ));
    }
    o.push_str(le);
    o.push_str(if one_liner { "\n" } else { "\n\n" });
    o
}

/// `scontrol show node` for one node.
pub fn format_node(n: &NodeInfo, one_liner: bool, slurmd_port: u16) -> String {
    let le = if one_liner { " " } else { "\n   " };
    let mut o = String::new();
    o.push_str(&format!("NodeName={} CoresPerSocket=1 {le}", n.name));
    let load = n
        .life
        .cpu_load
        .map_or_else(|| "N/A".to_string(), |l| format!("{l:.2}"));
    o.push_str(&format!(
        "CPUAlloc={} CPUEfctv={} CPUTot={} CPULoad={load}{le}",
        n.alloc_cpus, n.cpus, n.cpus
    ));
    let feats = if n.features.is_empty() {
        "(null)".to_string()
    } else {
        n.features.join(",")
    };
    o.push_str(&format!("AvailableFeatures={feats}{le}"));
    o.push_str(&format!("ActiveFeatures={feats}{le}"));
    o.push_str(&format!("Gres={}{le}", or_null(&n.gres)));
    if !n.gres.is_empty() && n.gres != "(null)" {
        o.push_str(&format!("GresUsed={}{le}", or_null(&n.gres_used)));
    }
    o.push_str(&format!("NodeAddr={} NodeHostName={} ", n.addr, n.name));
    if n.port != slurmd_port {
        o.push_str(&format!("Port={} ", n.port));
    }
    if let Some(v) = &n.version {
        o.push_str(&format!("Version={v}"));
    }
    o.push_str(le);
    // FreeMem: the node's MemAvailable from its last load sample, as slurmd reports it.
    let free = n
        .life
        .free_mem_mb
        .map_or_else(|| "N/A".to_string(), |m| m.to_string());
    o.push_str(&format!(
        "RealMemory={} AllocMem={} FreeMem={free} Sockets={} Boards=1{le}",
        n.real_memory_mb, n.alloc_mem_mb, n.cpus
    ));
    o.push_str(&format!(
        "State={} ThreadsPerCore=1 TmpDisk=0 Weight={} Owner=N/A MCS_label=N/A{le}",
        n.state_scontrol(),
        n.weight
    ));
    if !n.partitions.is_empty() {
        o.push_str(&format!("Partitions={} {le}", n.partitions.join(",")));
    }
    let boot = n
        .boot_time
        .filter(|t| *t != 0)
        .map(make_time_str)
        .unwrap_or_else(|| "None".to_string());
    let start = n
        .slurmd_start_time
        .filter(|t| *t != 0)
        .map(make_time_str)
        .unwrap_or_else(|| "None".to_string());
    o.push_str(&format!("BootTime={boot} SlurmdStartTime={start}{le}"));
    o.push_str(&format!("LastBusyTime=Unknown{le}"));
    o.push_str(&format!(
        "CfgTRES=cpu={},mem={},billing={}{le}",
        n.cpus,
        units::format_memory_mb(n.real_memory_mb),
        n.cpus
    ));
    let alloc_tres = if n.alloc_cpus > 0 {
        let mut s = format!("cpu={}", n.alloc_cpus);
        if n.alloc_mem_mb > 0 {
            s.push_str(&format!(",mem={}", units::format_memory_mb(n.alloc_mem_mb)));
        }
        s
    } else {
        String::new()
    };
    o.push_str(&format!("AllocTRES={alloc_tres}{le}"));
    o.push_str(&format!("CapWatts=n/a{le}"));
    o.push_str(&format!("CurrentWatts=0 AveWatts=0{le}"));
    o.push_str("ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s");
    if let Some(r) = n.reason.as_ref().filter(|r| !r.is_empty()) {
        o.push_str(le);
        for (i, line) in r.split('\n').filter(|l| !l.is_empty()).enumerate() {
            if i == 0 {
                o.push_str(&format!("Reason={line}"));
                if let Some(t) = n.reason_time.filter(|t| *t != 0) {
                    let who = n
                        .reason_uid
                        .map(gsched_proto::users::user_name)
                        .unwrap_or_else(|| "Unknown".into());
                    o.push_str(&format!(" [{who}@{}]", make_time_str(t)));
                }
            } else {
                o.push_str(&format!("{le}       {line}"));
            }
        }
    }
    o.push_str(if one_liner { "\n" } else { "\n\n" });
    o
}

/// `scontrol show partition` for one partition.
pub fn format_partition(p: &PartitionInfo, nodes: &[NodeInfo], one_liner: bool) -> String {
    let le = if one_liner { " " } else { "\n   " };
    let mut o = String::new();
    o.push_str(&format!("PartitionName={}{le}", p.name));
    let (accounts, qos) = p.access.scontrol_items();
    let groups = p.access.allow_groups_item();
    o.push_str(&format!("AllowGroups={groups} {accounts} {qos}{le}"));
    o.push_str(&format!(
        "AllocNodes=ALL Default={} QoS=N/A{le}",
        if p.default { "YES" } else { "NO" }
    ));
    let default_time = match p.default_time {
        None => "NONE".to_string(),
        Some(m) => units::format_secs_scontrol(u64::from(m) * 60),
    };
    o.push_str(&format!(
        "DefaultTime={default_time} DisableRootJobs={} ExclusiveUser=NO GraceTime=0 Hidden={}{le}",
        if p.disable_root_jobs { "YES" } else { "NO" },
        if p.hidden { "YES" } else { "NO" }
    ));
    let max_time = match p.max_time {
        None => "UNLIMITED".to_string(),
        Some(m) => units::format_secs_scontrol(u64::from(m) * 60),
    };
    o.push_str(&format!(
        "MaxNodes=UNLIMITED MaxTime={max_time} MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED{le}"
    ));
    let nodelist = if p.nodes.is_empty() {
        "(null)".to_string()
    } else {
        hostlist::compress(&p.nodes)
    };
    o.push_str(&format!("Nodes={nodelist}{le}"));
    o.push_str(&format!(
        "PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO{le}"
    ));
    let over = match p.over_time_limit {
        None => "NONE".to_string(),
        Some(gsched_proto::node::OverTimeLimit::Unlimited) => "UNLIMITED".to_string(),
        Some(gsched_proto::node::OverTimeLimit::Minutes(m)) => m.to_string(),
    };
    o.push_str(&format!("OverTimeLimit={over} PreemptMode=OFF{le}"));
    o.push_str(&format!(
        "State={} TotalCPUs={} TotalNodes={} SelectTypeParameters=NONE{le}",
        p.state.as_str(),
        p.total_cpus,
        p.total_nodes
    ));
    o.push_str(&format!("JobDefaults=(null){le}"));
    let def_mem = match p.def_mem {
        Some(gsched_proto::job::MemRequest::PerCpu(m)) => format!("DefMemPerCPU={m}"),
        Some(gsched_proto::job::MemRequest::PerNode(m)) => format!("DefMemPerNode={m}"),
        None => "DefMemPerNode=UNLIMITED".to_string(),
    };
    let max_mem = match p.max_mem {
        Some(gsched_proto::job::MemRequest::PerCpu(m)) => format!("MaxMemPerCPU={m}"),
        Some(gsched_proto::job::MemRequest::PerNode(m)) => format!("MaxMemPerNode={m}"),
        None => "MaxMemPerNode=UNLIMITED".to_string(),
    };
    o.push_str(&format!("{def_mem} {max_mem}{le}"));
    let mem: u64 = nodes
        .iter()
        .filter(|n| p.nodes.contains(&n.name))
        .map(|n| n.real_memory_mb)
        .sum();
    o.push_str(&format!("TRES={}", tres(p.total_cpus, mem, p.total_nodes)));
    o.push_str(if one_liner { "\n" } else { "\n\n" });
    o
}

/// Splits an interactive input line like scontrol: blanks separate words, quotes keep
/// blanks inside a word (and stay in it).
pub fn split_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut dq, mut sq) = (false, false);
    let mut in_word = false;
    for c in line.chars() {
        if !in_word {
            if c.is_whitespace() {
                continue;
            }
            in_word = true;
        }
        match c {
            '"' => dq = !dq,
            '\'' => sq = !sq,
            c if c.is_whitespace() && !dq && !sq => {
                out.push(std::mem::take(&mut cur));
                in_word = false;
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// Parsed global options.
#[derive(Debug)]
pub enum Parsed {
    Print(String),
    Run {
        flags: Flags,
        command: Vec<String>,
        clusters: Option<String>,
    },
}

pub fn parse_args(prog: &str, args: &[String]) -> Result<Parsed, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    let mut flags = Flags::default();
    let mut clusters = None;
    for (id, arg) in split.opts {
        // scontrol's help is its usage text (`--usage` is a name of `--help`).
        if let Some(text) = common::info_text(id, usage_text, usage_text) {
            return Ok(Parsed::Print(text));
        }
        match id {
            "oneliner" => flags.one_liner = true,
            "details" => flags.details = true,
            "all" => flags.all = true,
            "quiet" => flags.quiet = 1,
            "verbose" => flags.quiet = -1,
            "json" | "yaml" => flags.mime = crate::slurm_json::Mime::from_option(id),
            "clusters" => clusters = arg,
            "uid" => {
                let u = arg.unwrap_or_default();
                if common::resolve_uid(&u).is_none() {
                    return Err(Fail::error(prog, format!("--uid=\"{u}\" invalid")));
                }
            }
            _ => {}
        }
    }
    if let Some(e) = split.err {
        return Err(Fail::usage(prog, &e, 1));
    }
    Ok(Parsed::Run {
        flags,
        command: split.operands,
        clusters,
    })
}

/// `gscontrol` entry point.
pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "scontrol", run)
}

fn emit(out: &Out) {
    if !out.stdout.is_empty() {
        common::out(&out.stdout);
    }
    for l in &out.stderr {
        common::err_line(l);
    }
}

fn run(prog: &str, args: &[String]) -> Result<i32, Fail> {
    let (flags, command, clusters) = match parse_args(prog, args)? {
        Parsed::Print(s) => {
            common::out(&s);
            return Ok(0);
        }
        Parsed::Run {
            flags,
            command,
            clusters,
        } => (flags, command, clusters),
    };
    // The config is optional for commands that need no controller (version, hostnames).
    let cfg: Result<Config, String> = common::load_config();
    if let (Some(c), Ok(cfg)) = (&clusters, &cfg) {
        common::check_clusters(prog, c, &cfg.cluster_name)?;
    }
    let cfg_err = cfg.as_ref().err().cloned();
    let cfg_ok = cfg.as_ref().ok();
    let api = move || -> Result<Box<dyn Api>, String> {
        match (cfg_ok, &cfg_err) {
            (Some(c), _) => Ok(Box::new(Remote {
                client: common::client_for(c)?,
            }) as Box<dyn Api>),
            (None, Some(e)) => Err(e.clone()),
            (None, None) => Err("no configuration".into()),
        }
    };
    let mut session = Session {
        prog: prog.to_string(),
        flags,
        api: &api,
        ctld_name: cfg
            .as_ref()
            .map(|c| c.ctld_host.name.clone())
            .unwrap_or_else(|_| "(null)".into()),
        cluster: cfg
            .as_ref()
            .map(|c| c.cluster_name.clone())
            .unwrap_or_default(),
        slurmd_port: cfg.as_ref().map(|c| c.slurmd_port).unwrap_or(6818),
        env: &common::env_var,
        now: common::now(),
        uid: common::current_uid(),
    };
    let mut failed = false;
    if !command.is_empty() {
        let out = session.command(&command);
        emit(&out);
        failed = out.failed;
    } else {
        // Interactive mode: one command per line from standard input.
        let tty = crate::sys::stdin_is_tty();
        let stdin = std::io::stdin();
        loop {
            if tty {
                common::out(&format!("{prog}: "));
            }
            let mut line = String::new();
            match std::io::BufRead::read_line(&mut stdin.lock(), &mut line) {
                Ok(0) | Err(_) => {
                    if tty {
                        common::out("\n");
                    }
                    break;
                }
                Ok(_) => {}
            }
            let words = split_line(&line);
            if words.is_empty() {
                continue;
            }
            let out = session.command(&words);
            emit(&out);
            failed |= out.failed;
            if out.quit {
                break;
            }
        }
    }
    Ok(i32::from(failed))
}

pub fn usage_text() -> String {
    "scontrol [<OPTION>] [<COMMAND>]\n\
     \x20   Valid <OPTION> values are:\n\
     \x20    -a or --all: equivalent to \"all\" command\n\
     \x20    -d or --details: equivalent to \"details\" command\n\
     \x20    -h or --help: equivalent to \"help\" command\n\
     \x20    --json: show job, node and partition records as JSON (as squeue --json)\n\
     \x20    -M or --cluster: equivalent to \"cluster\" command (local cluster only)\n\
     \x20    -o or --oneliner: equivalent to \"oneliner\" command\n\
     \x20    -Q or --quiet: equivalent to \"quiet\" command\n\
     \x20    -v or --verbose: equivalent to \"verbose\" command\n\
     \x20    -V or --version: equivalent to \"version\" command\n\
     \x20    --yaml: show job, node and partition records as YAML\n\
     \n\
     \x20 <keyword> may be omitted from the execute line and scontrol will execute\n\
     \x20 in interactive mode. It will process commands as entered until explicitly\n\
     \x20 terminated.\n\
     \n\
     \x20   Valid <COMMAND> values are:\n\
     \x20    create reservation <SPECIFICATIONS>\n\
     \x20                             create a reservation (StartTime= Duration=|EndTime=\n\
     \x20                             Nodes= Users= [Flags=MAINT,IGNORE_JOBS]\n\
     \x20                             [ReservationName=]).\n\
     \x20    delete ReservationName=<name>  delete a reservation.\n\
     \x20    details                  display job details with \"show job\".\n\
     \x20    exit                     terminate scontrol.\n\
     \x20    help                     print this description of use.\n\
     \x20    hold <job_list>          prevent specified job from starting.\n\
     \x20    import-slurm-conf <slurm.conf> [gres.conf] [cgroup.conf]\n\
     \x20                             write a gsched.conf made from Slurm's files to\n\
     \x20                             stdout, listing what is not carried over.\n\
     \x20    oneliner                 report output one record per line.\n\
     \x20    ping                     print status of slurmctld daemon.\n\
     \x20    quiet                    print no messages other than error messages.\n\
     \x20    quit                     terminate this command.\n\
     \x20    reboot [ASAP] [nextstate=resume|down] [reason=<reason>] <node_list>|ALL\n\
     \x20                             reboot nodes with RebootProgram once they are idle\n\
     \x20                             (ASAP: drain them meanwhile).\n\
     \x20    reconfigure              make every daemon read the config file again\n\
     \x20                             (checked first; running jobs go on).\n\
     \x20    release <job_list>       permit specified job to start.\n\
     \x20    requeue [Incomplete] <job_list>\n\
     \x20                             re-queue a batch job (Incomplete: only running ones).\n\
     \x20    requeuehold [State=SpecialExit] <job_list>\n\
     \x20                             re-queue and hold a batch job (in SPECIAL_EXIT).\n\
     \x20    resume <job_list>        resume previously suspended job.\n\
     \x20    setdebug <level>         set gsctld's log level (quiet, error, info, verbose,\n\
     \x20                             debug ... debug5 or 0-9) until it reads its config.\n\
     \x20    show <ENTITY> [<ID>]     display state of identified entity, default\n\
     \x20                             is all records.\n\
     \x20    shutdown [slurmctld|controller]\n\
     \x20                             stop gsctld and every gsnoded (or gsctld only);\n\
     \x20                             running jobs go on.\n\
     \x20    suspend <job_list>       suspend specified job (root/SlurmUser only).\n\
     \x20    uhold <job_list>         place user hold on specified job.\n\
     \x20    update <SPECIFICATIONS>  update job, node or partition configuration\n\
     \x20                             (JobId=<id> with TimeLimit= TimeMin= Partition=\n\
     \x20                             QOS= Account= Name= Dependency= StartTime= Nice=\n\
     \x20                             Priority= (root/SlurmUser),\n\
     \x20                             NodeName=<list> State=DRAIN|RESUME|DOWN|IDLE Reason=...\n\
     \x20                             [MigrateBy=<time>], ReservationName=<name> ...,\n\
     \x20                             PartitionName=<name> State=UP|DOWN|DRAIN|INACTIVE\n\
     \x20                             MaxTime= DefaultTime= Default= Nodes= Hidden= ...\n\
     \x20                             (admins; until the next restart or reconfigure)).\n\
     \x20    verbose                  enable detailed logging.\n\
     \x20    version                  display tool version number.\n\
     \x20    wait_job <job_id>        wait until the job's nodes are booted (at once:\n\
     \x20                             gsched has no power saving).\n\
     \x20    write batch_script <job_id> [<file>|-]\n\
     \x20                             write a job's script to slurm-<job_id>.sh, <file>\n\
     \x20                             or stdout (its owner and admins only).\n\
     \n\
     \x20 <ENTITY> may be \"config\", \"hostnames\", \"hostlist\", \"hostlistsorted\",\n\
     \x20      \"job\", \"node\", \"partition\", \"reservation\" or \"step\".\n\
     \n\
     \x20 Other scontrol commands are recognized but not supported by gsched yet.\n"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::squeue::tests::job;
    use gsched_proto::api::{ApiError, JobActionResult};
    use gsched_proto::node::{NodeBaseState, PartitionStateInfo};
    use std::cell::RefCell;

    struct Fake {
        jobs: Vec<JobInfo>,
        nodes: Vec<NodeInfo>,
        parts: Vec<PartitionInfo>,
        sent: RefCell<Vec<String>>,
    }

    impl Api for Fake {
        fn jobs(&self, f: JobFilter) -> Result<JobsResponse, String> {
            Ok(JobsResponse {
                now: 1_003_761,
                jobs: self.jobs.iter().filter(|j| f.names(j)).cloned().collect(),
                energy: Vec::new(),
                gpu_usage: Vec::new(),
            })
        }
        fn nodes(&self) -> Result<NodesResponse, String> {
            Ok(NodesResponse {
                now: 0,
                nodes: self.nodes.clone(),
            })
        }
        fn partitions(&self) -> Result<PartitionsResponse, String> {
            Ok(PartitionsResponse {
                partitions: self.parts.clone(),
            })
        }
        fn config(&self) -> Result<ConfigResponse, String> {
            Ok(ConfigResponse {
                now: 0,
                entries: vec![("MinJobAge".into(), "300 sec".into())],
                licenses: vec![
                    gsched_proto::api::LicenseInfo {
                        name: "matlab".into(),
                        total: 5,
                        used: 2,
                    },
                    gsched_proto::api::LicenseInfo {
                        name: "fluent".into(),
                        total: 1,
                        used: 0,
                    },
                ],
            })
        }
        fn ping(&self) -> Result<PingResponse, String> {
            Err("down".into())
        }
        fn hold(&self, req: &HoldRequest) -> Result<JobActionResponse, String> {
            self.sent.borrow_mut().push(format!("{req:?}"));
            Ok(JobActionResponse {
                results: req
                    .ids
                    .iter()
                    .map(|id| JobActionResult {
                        job_id: *id,
                        error: (*id == 99).then(|| ApiError::plain(ErrorCode::InvalidJobId)),
                    })
                    .collect(),
            })
        }
        fn requeue(&self, req: &RequeueRequest) -> Result<JobActionResponse, String> {
            self.sent.borrow_mut().push(format!("{req:?}"));
            Ok(JobActionResponse {
                results: Vec::new(),
            })
        }
        fn update_job(&self, req: &JobUpdateRequest) -> Result<(), (Option<ErrorCode>, String)> {
            self.sent.borrow_mut().push(format!("{req:?}"));
            Ok(())
        }
        fn update_nodes(&self, req: &NodeUpdateRequest) -> Result<(), String> {
            self.sent.borrow_mut().push(format!("{req:?}"));
            Err("Access/permission denied".into())
        }
    }

    fn node(name: &str) -> NodeInfo {
        NodeInfo {
            gres_used: String::new(),
            name: name.into(),
            addr: "127.0.0.1".into(),
            port: 7001,
            cpus: 4,
            real_memory_mb: 8192,
            alloc_cpus: 2,
            alloc_mem_mb: 1024,
            features: vec![],
            gres: String::new(),
            base: NodeBaseState::Mixed,
            drain: true,
            not_responding: false,
            reason: Some("bad disk".into()),
            reason_time: Some(1_700_000_000),
            reason_uid: Some(0),
            partitions: vec!["debug".into()],
            boot_time: None,
            slurmd_start_time: None,
            version: Some("0.1.0".into()),
            weight: 1,
            life: Default::default(),
        }
    }

    fn part() -> PartitionInfo {
        PartitionInfo {
            name: "debug".into(),
            nodes: vec!["n1".into(), "n2".into()],
            default: true,
            max_time: Some(60),
            default_time: None,
            state: PartitionStateInfo::Up,
            total_cpus: 8,
            total_nodes: 2,
            ..Default::default()
        }
    }

    fn fake() -> Fake {
        Fake {
            jobs: vec![job(42, JobState::Running), job(43, JobState::Pending)],
            nodes: vec![node("n1"), node("n2")],
            parts: vec![part()],
            sent: RefCell::new(vec![]),
        }
    }

    fn with_session<R>(f: impl FnOnce(&mut Session, &Fake) -> R) -> R {
        let fk = fake();
        let fk_ref = &fk;
        let api = move || -> Result<Box<dyn Api + '_>, String> {
            Ok(Box::new(FakeRef(fk_ref)) as Box<dyn Api>)
        };
        let env = |k: &str| (k == "SLURM_NODELIST").then(|| "n[1-2]".to_string());
        let mut s = Session {
            prog: "scontrol".into(),
            flags: Flags::default(),
            api: &api,
            ctld_name: "ctl".into(),
            cluster: "cl".into(),
            slurmd_port: 6818,
            env: &env,
            now: 1_003_761,
            uid: 1000,
        };
        f(&mut s, &fk)
    }

    struct FakeRef<'a>(&'a Fake);
    impl Api for FakeRef<'_> {
        fn jobs(&self, f: JobFilter) -> Result<JobsResponse, String> {
            self.0.jobs(f)
        }
        fn nodes(&self) -> Result<NodesResponse, String> {
            self.0.nodes()
        }
        fn partitions(&self) -> Result<PartitionsResponse, String> {
            self.0.partitions()
        }
        fn config(&self) -> Result<ConfigResponse, String> {
            self.0.config()
        }
        fn ping(&self) -> Result<PingResponse, String> {
            self.0.ping()
        }
        fn hold(&self, r: &HoldRequest) -> Result<JobActionResponse, String> {
            self.0.hold(r)
        }
        fn requeue(&self, r: &RequeueRequest) -> Result<JobActionResponse, String> {
            self.0.requeue(r)
        }
        fn update_job(&self, r: &JobUpdateRequest) -> Result<(), (Option<ErrorCode>, String)> {
            self.0.update_job(r)
        }
        fn update_nodes(&self, r: &NodeUpdateRequest) -> Result<(), String> {
            self.0.update_nodes(r)
        }
    }

    fn cmd(s: &mut Session, line: &str) -> Out {
        s.command(&split_line(line))
    }

    #[test]
    fn wait_job_returns_at_once_and_checks_the_id() {
        with_session(|s, _| {
            let out = cmd(s, "wait_job 42");
            assert!(!out.failed && out.stderr.is_empty(), "{:?}", out.stderr);
            let out = cmd(s, "wait_job abc");
            assert!(out.failed);
            assert_eq!(out.stderr, ["Invalid job_id abc"]);
            assert!(cmd(s, "wait_job").failed);
            assert!(cmd(s, "wait_job 1 2").failed);
        });
    }

    #[test]
    fn keywords() {
        assert!(!kw("sh", "show", 3));
        assert!(kw("sho", "show", 3));
        assert!(kw("SHOW", "show", 3));
        assert!(!kw("shows", "show", 3));
        assert!(kw("part", "partitions", 2));
        assert!(kw("hostname", "hostnames", 5));
    }

    #[test]
    fn show_job_layout_snapshot() {
        let j = job(42, JobState::Running);
        let t = |x: i64| units::format_timestamp(x);
        let expected = format!(
            "JobId=42 JobName=job.sh\n   \
             UserId=alice(1000) GroupId=users(1000) MCS_label=N/A\n   \
             Priority=4294901760 Nice=0 Account=(null) QOS=(null)\n   \
             JobState=RUNNING Reason=None Dependency=(null)\n   \
             Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0\n   \
             RunTime=01:01:01 TimeLimit=00:30:00 TimeMin=N/A\n   \
             SubmitTime={s} EligibleTime={s}\n   \
             AccrueTime={s}\n   \
             StartTime={st} EndTime={e} Deadline=N/A\n   \
             SuspendTime=None SecsPreSuspend=0 LastSchedEval={st} Scheduler=Main\n   \
             Partition=debug AllocNode:Sid=(null):0\n   \
             ReqNodeList=(null) ExcNodeList=(null)\n   \
             NodeList=node[01-02]\n   \
             BatchHost=node01\n   \
             NumNodes=2 NumCPUs=8 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n   \
             TRES=cpu=8,mem=8G,node=2,billing=8\n   \
             Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*\n   \
             MinCPUsNode=1 MinMemoryNode=4G MinTmpDiskNode=0\n   \
             Features=(null) DelayBoot=00:00:00\n   \
             OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)\n   \
             Command=/home/alice/job.sh\n   \
             SubmitLine=(null)\n   \
             WorkDir=/home/alice\n   \
             StdErr=/home/alice/slurm-42.out\n   \
             StdIn=/dev/null\n   \
             StdOut=/home/alice/slurm-42.out\n   \
             Power=\n   \n\n",
            s = t(1_000_000),
            st = t(1_000_100),
            e = t(1_000_100 + 1800)
        );
        assert_eq!(format_job(&j, 1_003_761, false, false), expected);
        let one = format_job(&j, 1_003_761, true, true);
        assert!(one.starts_with("JobId=42 JobName=job.sh UserId=alice(1000) "));
        assert!(one.contains(" DerivedExitCode=0:0 "));
        assert!(one.ends_with("Power= \n"));
        assert_eq!(one.lines().count(), 1);
    }

    /// Pending jobs as Slurm 22.05 shows them (bench/results/format-diff): a job submitted
    /// held is not eligible yet, no node list until it runs, the planned nodes of a job that
    /// waits for resources.
    #[test]
    fn show_pending_job_like_slurm() {
        let t = |x: i64| units::format_timestamp(x);
        let mut held = job(43, JobState::Pending);
        held.eligible_time = None;
        held.held = true;
        let text = format_job(&held, 1_003_761, false, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[6],
            format!("   SubmitTime={} EligibleTime=Unknown", t(1_000_000))
        );
        assert_eq!(lines[7], "   AccrueTime=Unknown");
        assert_eq!(
            lines[9],
            format!(
                "   SuspendTime=None SecsPreSuspend=0 LastSchedEval={} Scheduler=Main",
                t(1_000_000)
            )
        );
        assert_eq!(lines[12], "   NodeList=");
        assert!(
            lines[13].starts_with("   NumNodes="),
            "no BatchHost: {text}"
        );
        let mut big = job(44, JobState::Pending);
        big.expected_start = Some(1_005_000);
        big.sched_nodes = vec!["node02".into(), "node01".into()];
        let text = format_job(&big, 1_003_761, false, false);
        assert!(
            text.contains("\n   NodeList= SchedNodeList=node[01-02]\n"),
            "{text}"
        );
        let one = format_job(&big, 1_003_761, true, false);
        assert!(
            one.contains(" NodeList= SchedNodeList=node[01-02] NumNodes="),
            "{one}"
        );
        assert!(one.contains(" NumTasks=2 "), "{one}");
        // Cancelled while pending: no nodes, no task count.
        held.state = JobState::Cancelled;
        held.start_time = Some(1_000_050);
        held.end_time = Some(1_000_050);
        let one = format_job(&held, 1_003_761, true, false);
        assert!(
            one.contains(" NodeList= NumNodes=2 NumCPUs=8 NumTasks=N/A "),
            "{one}"
        );
    }

    #[test]
    fn show_job_cases() {
        with_session(|s, _| {
            let o = cmd(s, "show job 42");
            assert!(o.stdout.starts_with("JobId=42 "));
            assert!(!o.failed);
            let o = cmd(s, "show jobs");
            assert!(o.stdout.starts_with("JobId=43 "), "newest first");
            let o = cmd(s, "sho job=7");
            assert_eq!(
                o.stderr,
                vec!["slurm_load_jobs error: Invalid job id specified"]
            );
            assert!(o.failed);
            let o = cmd(s, "show job abc");
            assert_eq!(
                o.stderr,
                vec!["scontrol_print_job error: Invalid job id specified"]
            );
            let o = cmd(s, "show job 42_1");
            assert_eq!(o.stdout, "Job 42_1 not found\n");
            assert!(o.failed);
            s.flags.one_liner = true;
            let o = cmd(s, "show job 42");
            assert_eq!(o.stdout.lines().count(), 1);
        });
    }

    #[test]
    fn show_licenses_as_scontrol() {
        with_session(|s, _| {
            let o = cmd(s, "show licenses");
            assert_eq!(
                o.stdout,
                "LicenseName=fluent\n    Total=1 Used=0 Free=1 Reserved=0 Remote=no\n\
                 LicenseName=matlab\n    Total=5 Used=2 Free=3 Reserved=0 Remote=no\n"
            );
            s.flags.one_liner = true;
            let o = cmd(s, "show lic matlab");
            assert_eq!(
                o.stdout,
                "LicenseName=matlab Total=5 Used=2 Free=3 Reserved=0 Remote=no\n"
            );
        });
    }

    #[test]
    fn requeue_ids_and_array_tasks() {
        with_session(|s, fk| {
            let o = cmd(s, "requeue 42,43");
            assert!(!o.failed, "{o:?}");
            // An array task is looked up; 42 is no array, so 42_1 names nothing.
            let o = cmd(s, "requeue 42_1");
            assert!(o.failed);
            assert_eq!(o.stderr, vec!["Invalid job id specified for job 42_1"]);
            let o = cmd(s, "requeue x");
            assert!(o.failed);
            // Leading flags, as scontrol's parse_requeue_flags.
            let o = cmd(s, "requeuehold State=SpecialExit 44");
            assert!(!o.failed, "{o:?}");
            let o = cmd(s, "requeue inc 45");
            assert!(!o.failed, "{o:?}");
            let o = cmd(s, "requeuehold 46");
            assert!(!o.failed, "{o:?}");
            assert_eq!(
                fk.sent.borrow().as_slice(),
                [
                    "RequeueRequest { ids: [42, 43], hold: false, special_exit: false, incomplete: false }",
                    "RequeueRequest { ids: [44], hold: true, special_exit: true, incomplete: false }",
                    "RequeueRequest { ids: [45], hold: false, special_exit: false, incomplete: true }",
                    "RequeueRequest { ids: [46], hold: true, special_exit: false, incomplete: false }",
                ]
            );
        });
    }

    #[test]
    fn json_and_yaml_records() {
        with_session(|s, _| {
            s.flags.mime = Some(crate::slurm_json::Mime::Json);
            let o = cmd(s, "show job 42");
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
            assert_eq!(v["meta"]["plugin"]["type"], "openapi/v0.0.38");
            assert_eq!(v["jobs"].as_array().unwrap().len(), 1);
            assert_eq!(v["jobs"][0]["job_id"], 42);
            assert_eq!(v["jobs"][0]["cluster"], "cl");
            let o = cmd(s, "show nodes");
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
            assert!(!v["nodes"].as_array().unwrap().is_empty());
            let o = cmd(s, "show partition");
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
            assert!(v["partitions"][0]["name"].is_string());
            let o = cmd(s, "show node nosuch");
            assert!(o.failed);
            // Host lists have no data form: printed as they are.
            let o = cmd(s, "show hostnames n[1-2]");
            assert_eq!(o.stdout, "n1\nn2\n");
            let o = cmd(s, "show steps");
            assert!(o.failed);
            assert!(o.stderr[0].contains("--json and --yaml"), "{:?}", o.stderr);
            s.flags.mime = Some(crate::slurm_json::Mime::Yaml);
            let o = cmd(s, "show job 42");
            assert!(o.stdout.starts_with("---\nmeta:\n"), "{}", o.stdout);
            assert!(o.stdout.contains("\n    job_id: 42\n"), "{}", o.stdout);
        });
        let a = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let Parsed::Run { flags, .. } =
            parse_args("scontrol", &a(&["--json", "show", "job"])).unwrap()
        else {
            panic!()
        };
        assert_eq!(flags.mime, Some(crate::slurm_json::Mime::Json));
    }

    #[test]
    fn show_node_and_partition_snapshot() {
        let when = units::format_timestamp(1_700_000_000);
        assert_eq!(
            format_node(&node("n1"), false, 6818),
            format!(
                "NodeName=n1 CoresPerSocket=1 \n   \
                 CPUAlloc=2 CPUEfctv=4 CPUTot=4 CPULoad=N/A\n   \
                 AvailableFeatures=(null)\n   \
                 ActiveFeatures=(null)\n   \
                 Gres=(null)\n   \
                 NodeAddr=127.0.0.1 NodeHostName=n1 Port=7001 Version=0.1.0\n   \
                 RealMemory=8192 AllocMem=1024 FreeMem=N/A Sockets=4 Boards=1\n   \
                 State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n   \
                 Partitions=debug \n   \
                 BootTime=None SlurmdStartTime=None\n   \
                 LastBusyTime=Unknown\n   \
                 CfgTRES=cpu=4,mem=8G,billing=4\n   \
                 AllocTRES=cpu=2,mem=1G\n   \
                 CapWatts=n/a\n   \
                 CurrentWatts=0 AveWatts=0\n   \
                 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n   \
                 Reason=bad disk [root@{when}]\n\n"
            )
        );
        assert_eq!(
            format_partition(&part(), &[node("n1"), node("n2")], false),
            "PartitionName=debug\n   \
             AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n   \
             AllocNodes=ALL Default=YES QoS=N/A\n   \
             DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO\n   \
             MaxNodes=UNLIMITED MaxTime=01:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED\n   \
             Nodes=n[1-2]\n   \
             PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO\n   \
             OverTimeLimit=NONE PreemptMode=OFF\n   \
             State=UP TotalCPUs=8 TotalNodes=2 SelectTypeParameters=NONE\n   \
             JobDefaults=(null)\n   \
             DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED\n   \
             TRES=cpu=8,mem=16G,node=2,billing=8\n\n"
        );
    }

    #[test]
    fn show_misc() {
        with_session(|s, _| {
            let o = cmd(s, "show part");
            assert!(o.stdout.starts_with("PartitionName=debug\n"));
            let o = cmd(s, "show partition nope");
            assert_eq!(o.stdout, "Partition nope not found\n");
            assert!(o.failed);
            let o = cmd(s, "show node n9");
            assert_eq!(o.stdout, "Node n9 not found\n");
            assert!(o.failed);
            let o = cmd(s, "show nodes n[1-2]");
            assert_eq!(o.stdout.matches("NodeName=").count(), 2);
            let o = cmd(s, "show hostname");
            assert_eq!(o.stdout, "n1\nn2\n");
            let o = cmd(s, "show hostnames a[01-03],b");
            assert_eq!(o.stdout, "a01\na02\na03\nb\n");
            let o = cmd(s, "show hostlist b3,b1,a2,b2");
            assert_eq!(o.stdout, "b[1-3],a2\n");
            let o = cmd(s, "show hostlistsorted b3,b1,a2,b2");
            assert_eq!(o.stdout, "a2,b[1-3]\n");
            let o = cmd(s, "show bogus");
            assert_eq!(o.stderr, vec!["invalid entity:bogus for keyword:show "]);
            let o = cmd(s, "show config");
            assert!(o.stdout.starts_with("Configuration data as of "));
            assert!(o.stdout.contains(
                "\nMinJobAge               = 300 sec\n\nSlurmctld(primary) at ctl is DOWN\n"
            ));
            let o = cmd(s, "ping");
            assert_eq!(o.stdout, "Slurmctld(primary) at ctl is DOWN\n");
            assert!(o.failed);
            let o = cmd(s, "version");
            assert_eq!(o.stdout, "slurm 22.05.8\n");
            let o = cmd(s, "frobnicate");
            assert_eq!(o.stderr, vec!["invalid keyword: frobnicate"]);
            let o = cmd(s, "requeue x1");
            assert_eq!(o.stderr, vec!["Invalid job id specified for job x1"]);
        });
    }

    #[test]
    fn hold_release_update() {
        with_session(|s, fk| {
            let o = cmd(s, "hold 42,43 JobName=x");
            assert!(!o.failed);
            let o = cmd(s, "release 99");
            assert_eq!(o.stderr, vec!["Invalid job id specified for job 99"]);
            assert!(o.failed);
            let o = cmd(s, "hold x1");
            assert_eq!(o.stderr, vec!["Invalid job id specified for job x1"]);
            let o = cmd(s, "update JobId=42 TimeLimit=1:00:00");
            assert!(!o.failed, "{o:?}");
            let o = cmd(s, "update JobId=42 TimeLimit=+10");
            assert!(!o.failed);
            let o = cmd(s, "update jobid=42 Frobnicate=x");
            assert_eq!(
                o.stderr,
                vec![
                    "Update of this parameter is not supported: Frobnicate=x",
                    "Request aborted"
                ]
            );
            let o = cmd(s, "update JobId=42 TimeLimit=bogus");
            assert_eq!(o.stderr, vec!["scontrol: error: Invalid TimeLimit value"]);
            let o = cmd(s, "update NodeName=n1 State=DRAIN");
            assert_eq!(
                o.stderr,
                vec!["You must specify a reason when DOWNING or DRAINING a node. Request denied"]
            );
            let o = cmd(s, "update NodeName=n[1-2] State=drain Reason=\"bad disk\"");
            assert_eq!(
                o.stderr,
                vec!["slurm_update error: Access/permission denied"]
            );
            let o = cmd(s, "update NodeName=n1 State=BOGUS");
            assert_eq!(o.stderr[0], "Invalid input: State=BOGUS");
            let o = cmd(s, "update NodeName=n1 State=UNDRAIN");
            assert!(o.stderr[0].contains("State=UNDRAIN is not supported"));
            let o = cmd(s, "update Foo=1");
            assert_eq!(o.stderr[0], "No valid entity in update command");
            let sent = fk.sent.borrow();
            assert!(
                sent[0].contains("ids: [42, 43], array_tasks: [], names: [\"x\"], release: false")
            );
            assert!(sent
                .iter()
                .any(|x| x.contains("time_limit: Some(Some(60))")));
            assert!(sent
                .iter()
                .any(|x| x.contains("time_limit: Some(Some(40))")));
            assert!(sent.iter().any(
                |x| x.contains("names: [\"n[1-2]\"], state: Drain, reason: Some(\"bad disk\")")
            ));
        });
    }

    /// `Nice=` sets the value (negative ones are the controller's to refuse); out of Slurm's
    /// range or not a number, nothing is sent.
    #[test]
    fn update_nice() {
        with_session(|s, fk| {
            assert!(!cmd(s, "update JobId=42 Nice=100").failed);
            assert!(!cmd(s, "update JobId=43 ni -5").failed);
            let o = cmd(s, "update JobId=42 Nice=2147483646");
            assert_eq!(
                o.stderr,
                vec!["scontrol: error: Nice value out of range (+/- 2147483645). Value ignored"]
            );
            assert!(o.failed);
            let o = cmd(s, "update JobId=42 Nice=low");
            assert_eq!(o.stderr, vec!["scontrol: error: Invalid Nice value: low"]);
            let sent = fk.sent.borrow();
            assert_eq!(sent.len(), 2, "{sent:?}");
            assert!(sent[0].contains("job_id: 42") && sent[0].contains("nice: Some(100)"));
            assert!(sent[1].contains("job_id: 43") && sent[1].contains("nice: Some(-5)"));
        });
    }

    #[test]
    fn node_state_values() {
        assert_eq!(
            parse_node_state_update("drain"),
            Ok((NodeStateUpdate::Drain, true))
        );
        assert_eq!(
            parse_node_state_update("RES"),
            Ok((NodeStateUpdate::Resume, false))
        );
        assert_eq!(
            parse_node_state_update("down"),
            Ok((NodeStateUpdate::Down, true))
        );
        assert_eq!(
            parse_node_state_update("idle"),
            Ok((NodeStateUpdate::Idle, false))
        );
        assert_eq!(parse_node_state_update("dr"), Err(None));
        assert_eq!(parse_node_state_update("fail"), Err(Some("FAIL")));
    }

    #[test]
    fn global_options_and_splitting() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match parse_args("scontrol", &a(&["show", "job", "5", "-o"])).unwrap() {
            Parsed::Run { flags, command, .. } => {
                assert!(flags.one_liner);
                assert_eq!(command, a(&["show", "job", "5"]));
            }
            Parsed::Print(_) => panic!(),
        }
        assert!(
            matches!(parse_args("scontrol", &a(&["-V"])).unwrap(), Parsed::Print(s) if s == "slurm 22.05.8\n")
        );
        let e = parse_args("scontrol", &a(&["--bogus"])).unwrap_err();
        assert_eq!(e.lines[0], "scontrol: unrecognized option '--bogus'");
        assert_eq!(
            split_line("update NodeName=n1 Reason=\"bad disk\"  State=drain\n"),
            a(&[
                "update",
                "NodeName=n1",
                "Reason=\"bad disk\"",
                "State=drain"
            ])
        );
    }
}
