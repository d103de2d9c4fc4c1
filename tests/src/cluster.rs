//! [`TestCluster`]: one gsctld and N gsnoded processes on loopback ports, in a fresh temporary
//! directory, torn down (daemons, every leftover job process, the directory) when dropped,
//! also when the test panics.

use crate::bins;
use crate::munge::{self, PrivateMunged};
use crate::ports;
use crate::procs;
use gsched_auth::NoneAuth;
use gsched_proto::api::{paths, JobFilter, JobQuery, JobsResponse, NodesResponse, PingResponse};
use gsched_proto::auth::Authenticator;
use gsched_proto::client::{Client, ClientError};
use gsched_proto::job::{JobId, JobInfo, JobState};
use gsched_proto::node::{NodeBaseState, NodeInfo};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Set to keep a cluster's directory (config, logs, state, spool, job outputs) after the test.
pub const KEEP_DIR_ENV: &str = "GSCHED_KEEP_TEST_DIR";
/// Multiplies every timeout of the harness (slow or loaded machines): `GSCHED_TEST_TIMEOUT_SCALE=3`.
pub const TIMEOUT_SCALE_ENV: &str = "GSCHED_TEST_TIMEOUT_SCALE";

/// How long daemons get to come up, and the default for waits on jobs.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// `d` multiplied by `$GSCHED_TEST_TIMEOUT_SCALE` (default 1).
pub fn scaled(d: Duration) -> Duration {
    let f = std::env::var(TIMEOUT_SCALE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|f| *f > 0.0)
        .unwrap_or(1.0);
    d.mul_f64(f)
}

/// What a test cluster looks like.
#[derive(Debug, Clone)]
pub struct ClusterOpts {
    /// Used in the temporary directory's name (helps when it is kept).
    pub name: String,
    /// `ClusterName=` (lower case, as the config parser folds it).
    pub cluster_name: String,
    /// Number of nodes, named `n1`, `n2`, ...
    pub nodes: usize,
    /// `CPUs=` of every node.
    pub cpus: u32,
    /// `RealMemory=` of every node, MiB.
    pub real_memory_mb: u64,
    /// `KillWait=` seconds.
    pub kill_wait: u32,
    /// `MinJobAge=` seconds.
    pub min_job_age: u32,
    /// Lines appended to the generated config.
    pub extra_config: Vec<String>,
    /// `Features=` of some nodes, by node name.
    pub node_features: Vec<(String, String)>,
    /// The nodes' names, when not `n1`, `n2`, ... (see [`ClusterOpts::named_nodes`]).
    pub custom_node_names: Vec<String>,
    /// The text of a `cgroup.conf` written beside gsched.conf (none by default: no cgroups).
    pub cgroup_conf: Option<String>,
    /// Use `AuthType=auth/none` even where MUNGE is available (tests of the local mode).
    pub auth_none: bool,
    /// The private munged's socket, set by the harness when the cluster uses auth/munge.
    pub munge_socket: Option<PathBuf>,
    /// Other files written beside gsched.conf (`topology.conf`, ...): (name, text).
    pub files: Vec<(String, String)>,
    /// `Gres=` of every node line (`gpu:a100:2`).
    pub node_gres: Option<String>,
    /// Extra environment of the daemons (fake GPU libraries and tools); a `PATH` entry is
    /// put in front of the harness's `PATH`.
    pub daemon_env: Vec<(String, String)>,
    /// More attributes of some nodes' `NodeName=` lines (`Gres=gpu:a100:2 GpuMemory=80G`).
    pub node_attrs: Vec<(String, String)>,
}

impl Default for ClusterOpts {
    fn default() -> Self {
        ClusterOpts {
            name: "cluster".into(),
            cluster_name: "gstest".into(),
            nodes: 2,
            cpus: 2,
            real_memory_mb: 1000,
            kill_wait: 2,
            min_job_age: 300,
            extra_config: Vec::new(),
            node_features: Vec::new(),
            custom_node_names: Vec::new(),
            cgroup_conf: None,
            auth_none: false,
            munge_socket: None,
            files: Vec::new(),
            node_gres: None,
            daemon_env: Vec::new(),
            node_attrs: Vec::new(),
        }
    }
}

impl ClusterOpts {
    /// Defaults, with `name` in the directory name.
    pub fn named(name: &str) -> Self {
        ClusterOpts {
            name: name.into(),
            ..Default::default()
        }
    }
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = n;
        self
    }
    pub fn cpus(mut self, cpus: u32) -> Self {
        self.cpus = cpus;
        self
    }
    pub fn real_memory_mb(mut self, mb: u64) -> Self {
        self.real_memory_mb = mb;
        self
    }
    pub fn kill_wait(mut self, secs: u32) -> Self {
        self.kill_wait = secs;
        self
    }
    pub fn min_job_age(mut self, secs: u32) -> Self {
        self.min_job_age = secs;
        self
    }
    pub fn config_line(mut self, line: &str) -> Self {
        self.extra_config.push(line.into());
        self
    }
    /// Gives node `name` the features `features` (`Features=` on its NodeName line).
    pub fn node_features(mut self, name: &str, features: &str) -> Self {
        self.node_features.push((name.into(), features.into()));
        self
    }
    /// Names the nodes (their number is the number of names), for clusters whose
    /// partitions are told apart by node names (`cpu1`, `gpu1`, ...).
    /// Adds `attrs` to node `name`'s `NodeName=` line.
    pub fn node_attrs(mut self, name: &str, attrs: &str) -> Self {
        self.node_attrs.push((name.into(), attrs.into()));
        self
    }

    pub fn named_nodes(mut self, names: &[&str]) -> Self {
        self.custom_node_names = names.iter().map(|n| n.to_string()).collect();
        self.nodes = names.len();
        self
    }

    /// Writes `text` as the cluster's `cgroup.conf` (jobs get cgroups).
    pub fn cgroup_conf(mut self, text: &str) -> Self {
        self.cgroup_conf = Some(text.into());
        self
    }

    /// Writes `text` as `name` beside gsched.conf (`topology.conf`, ...).
    pub fn file(mut self, name: &str, text: &str) -> Self {
        self.files.push((name.into(), text.into()));
        self
    }

    /// `Gres=gres` on every node line.
    pub fn node_gres(mut self, gres: &str) -> Self {
        self.node_gres = Some(gres.into());
        self
    }

    /// Sets `key=value` in the daemons' environment (`PATH`: put in front of the harness's).
    pub fn daemon_env(mut self, key: &str, value: &str) -> Self {
        self.daemon_env.push((key.into(), value.into()));
        self
    }

    /// `AuthType=auth/none` even where MUNGE is available.
    pub fn auth_none(mut self) -> Self {
        self.auth_none = true;
        self
    }
    pub fn node_names(&self) -> Vec<String> {
        if !self.custom_node_names.is_empty() {
            return self.custom_node_names.clone();
        }
        (1..=self.nodes).map(|i| format!("n{i}")).collect()
    }
}

/// The gsched.conf text for a test cluster living in `root`.
pub fn render_config(
    opts: &ClusterOpts,
    root: &Path,
    ctld_port: u16,
    node_ports: &[u16],
    slurm_user: &str,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Written by gsched-tests for one test cluster.");
    let _ = writeln!(s, "ClusterName={}", opts.cluster_name);
    let _ = writeln!(s, "SlurmctldHost=localhost(127.0.0.1)");
    let _ = writeln!(s, "SlurmctldPort={ctld_port}");
    match &opts.munge_socket {
        Some(sock) => {
            let _ = writeln!(s, "AuthType=auth/munge");
            let _ = writeln!(s, "AuthInfo=socket={}", sock.display());
        }
        None => {
            let _ = writeln!(s, "AuthType=auth/none");
        }
    }
    let _ = writeln!(s, "SlurmUser={slurm_user}");
    let _ = writeln!(s, "StateSaveLocation={}", root.join("state").display());
    let _ = writeln!(s, "SlurmdSpoolDir={}/%n", root.join("spool").display());
    let _ = writeln!(s, "KillWait={}", opts.kill_wait);
    let _ = writeln!(s, "MinJobAge={}", opts.min_job_age);
    for (name, port) in opts.node_names().iter().zip(node_ports) {
        let _ = writeln!(
            s,
            "NodeName={name} NodeAddr=127.0.0.1 Port={port} CPUs={} RealMemory={} State=UNKNOWN{}{}{}",
            opts.cpus,
            opts.real_memory_mb,
            opts.node_gres
                .as_ref()
                .map(|g| format!(" Gres={g}"))
                .unwrap_or_default(),
            opts.node_features
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, f)| format!(" Features={f}"))
                .unwrap_or_default(),
            opts.node_attrs
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, a)| format!(" {a}"))
                .collect::<String>()
        );
    }
    let _ = writeln!(
        s,
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    );
    for l in &opts.extra_config {
        let _ = writeln!(s, "{l}");
    }
    s
}

/// The last `n` lines of a file (or a note that it cannot be read).
pub fn tail(path: &Path, n: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// One daemon process and its log.
#[derive(Debug)]
struct Daemon {
    label: String,
    log: PathBuf,
    child: Option<Child>,
    /// How it ended, when it ended on its own (not by the harness).
    exited: Option<ExitStatus>,
}

impl Daemon {
    fn new(label: String, log: PathBuf) -> Daemon {
        Daemon {
            label,
            log,
            child: None,
            exited: None,
        }
    }

    /// Reaps the process if it ended; returns its status the first time.
    fn poll_exit(&mut self) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(st)) => {
                self.child = None;
                self.exited = Some(st);
                Some(st)
            }
            _ => None,
        }
    }

    fn signal(&self, sig: Signal) {
        if let Some(c) = &self.child {
            let _ = kill(Pid::from_raw(c.id() as i32), sig);
        }
    }

    fn kill_and_reap(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[derive(Debug)]
struct Daemons {
    ctld: Daemon,
    noded: Vec<Daemon>,
}

impl Daemons {
    fn all_mut(&mut self) -> impl Iterator<Item = &mut Daemon> {
        std::iter::once(&mut self.ctld).chain(self.noded.iter_mut())
    }
    fn all(&self) -> impl Iterator<Item = &Daemon> {
        std::iter::once(&self.ctld).chain(self.noded.iter())
    }
}

/// Why launching the daemons failed.
enum LaunchError {
    /// A daemon could not bind its port: try again with other ports.
    PortInUse(String),
    Failed(String),
}

/// A running test cluster. See the crate documentation for an example.
pub struct TestCluster {
    opts: ClusterOpts,
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
    conf: PathBuf,
    ctld_port: u16,
    node_ports: Vec<u16>,
    user: String,
    daemons: Mutex<Daemons>,
    /// The cluster's own munged, when it uses auth/munge.
    munged: Option<PrivateMunged>,
    /// How the harness's own API calls authenticate (as the cluster is configured).
    auth: Arc<dyn Authenticator>,
}

impl std::fmt::Debug for TestCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCluster")
            .field("root", &self.root)
            .field("ctld_port", &self.ctld_port)
            .field("node_ports", &self.node_ports)
            .finish()
    }
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn is_root() -> bool {
    nix::unistd::getuid().is_root()
}

/// The name of the user running the tests.
pub fn current_user() -> String {
    let (uid, _) = gsched_proto::users::current_ids();
    gsched_proto::users::user_name(uid)
}

impl TestCluster {
    /// Writes a config, starts gsctld and the node daemons, and waits until the controller
    /// answers and every node is registered. Panics (with the daemons' logs) when that fails.
    pub fn start(opts: ClusterOpts) -> TestCluster {
        let mut needed: Vec<&str> = bins::DAEMONS.to_vec();
        needed.extend_from_slice(bins::COMMANDS);
        bins::require(&needed);
        let mut c = TestCluster::prepare(opts);
        let attempts = 4;
        for attempt in 1..=attempts {
            match c.launch() {
                Ok(()) => return c,
                Err(LaunchError::PortInUse(why)) if attempt < attempts => {
                    eprintln!(
                        "gsched-tests: a port was taken ({why}); retrying with new ports ({attempt}/{attempts})"
                    );
                    c.stop_daemons(Duration::from_secs(2));
                    c.reset_for_retry();
                }
                Err(LaunchError::PortInUse(why)) | Err(LaunchError::Failed(why)) => {
                    panic!(
                        "{}",
                        c.failure(&format!("starting the test cluster: {why}"))
                    )
                }
            }
        }
        unreachable!("the loop returns or panics")
    }

    /// Writes the config and the directories but starts no daemon: for tests of the commands'
    /// own checks (bad options, bad scripts) that never reach the controller.
    pub fn config_only(opts: ClusterOpts) -> TestCluster {
        bins::require(bins::COMMANDS);
        TestCluster::prepare(ClusterOpts {
            auth_none: true,
            ..opts
        })
    }

    fn prepare(mut opts: ClusterOpts) -> TestCluster {
        let safe_name: String = opts
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let dir = tempfile::Builder::new()
            .prefix(&format!("gsched-test-{safe_name}-"))
            .tempdir()
            .expect("cannot create a temporary directory");
        let root = dir.path().to_path_buf();
        let conf = root.join("gsched.conf");
        let mut munged = None;
        let mut auth: Arc<dyn Authenticator> = Arc::new(NoneAuth::current());
        if !opts.auth_none && munge::wanted() {
            // munged wants every directory above its socket searchable by all.
            let _ = fs::set_permissions(&root, fs::Permissions::from_mode(0o711));
            let m = PrivateMunged::start(&root.join("munge"))
                .unwrap_or_else(|e| panic!("cannot start the test cluster's munged: {e}"));
            let info = format!("socket={}", m.socket().display());
            auth = gsched_auth::by_name_with("auth/munge", Some(&info))
                .unwrap_or_else(|e| panic!("auth/munge: {e}"));
            opts.munge_socket = Some(m.socket().to_path_buf());
            munged = Some(m);
        }
        let ctld = Daemon::new("gsctld".into(), root.join("log").join("gsctld.log"));
        let noded = opts
            .node_names()
            .into_iter()
            .map(|n| {
                let log = root.join("log").join(format!("gsnoded-{n}.log"));
                Daemon::new(format!("gsnoded {n}"), log)
            })
            .collect();
        let mut c = TestCluster {
            user: current_user(),
            node_ports: Vec::new(),
            ctld_port: 0,
            opts,
            dir: Some(dir),
            root,
            conf,
            daemons: Mutex::new(Daemons { ctld, noded }),
            munged,
            auth,
        };
        c.make_dirs();
        c.pick_ports();
        c
    }

    fn make_dirs(&self) {
        for d in ["log", "state", "spool", "work"] {
            fs::create_dir_all(self.root.join(d)).expect("cannot create cluster directories");
        }
        if is_root() {
            // Jobs may run as another user (setuid tests): they must reach and write the
            // working directory.
            let _ = fs::set_permissions(&self.root, fs::Permissions::from_mode(0o755));
            let _ = fs::set_permissions(self.workdir(), fs::Permissions::from_mode(0o777));
        }
    }

    fn pick_ports(&mut self) {
        self.ctld_port = ports::free_port();
        self.node_ports = ports::free_ports(self.opts.nodes);
        let text = render_config(
            &self.opts,
            &self.root,
            self.ctld_port,
            &self.node_ports,
            &self.user,
        );
        fs::write(&self.conf, text).expect("cannot write gsched.conf");
        if let Some(cg) = &self.opts.cgroup_conf {
            fs::write(self.root.join("cgroup.conf"), cg).expect("cannot write cgroup.conf");
        }
        for (name, text) in &self.opts.files {
            let path = self.root.join(name);
            fs::write(&path, text).expect("cannot write a file beside gsched.conf");
            if name.ends_with(".sh") {
                let _ = fs::set_permissions(&path, fs::Permissions::from_mode(0o755));
            }
        }
    }

    fn reset_for_retry(&mut self) {
        for d in ["state", "spool"] {
            let _ = fs::remove_dir_all(self.root.join(d));
        }
        self.make_dirs();
        self.pick_ports();
    }

    fn launch(&self) -> Result<(), LaunchError> {
        let since = now_secs();
        self.spawn_ctld();
        self.wait_daemon_ready(None, since)?;
        let since = now_secs();
        for i in 0..self.opts.nodes {
            self.spawn_noded(i);
        }
        for i in 0..self.opts.nodes {
            self.wait_daemon_ready(Some(i), since)?;
        }
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, Daemons> {
        self.daemons.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ------------------------------------------------------------------ accessors

    /// The cluster's directory (config, `log/`, `state/`, `spool/`, `work/`).
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// The config file (what `$GSCHED_CONF` names for the commands).
    pub fn conf_path(&self) -> &Path {
        &self.conf
    }

    /// A directory for job scripts and outputs; the commands run here. World-writable when
    /// the tests run as root, so that jobs of another user can write their output.
    pub fn workdir(&self) -> PathBuf {
        self.root.join("work")
    }

    /// The options the cluster was made with.
    pub fn opts(&self) -> &ClusterOpts {
        &self.opts
    }

    /// The node names (`n1`, `n2`, ...).
    pub fn node_names(&self) -> Vec<String> {
        self.opts.node_names()
    }

    pub fn ctld_port(&self) -> u16 {
        self.ctld_port
    }

    pub fn node_port(&self, i: usize) -> u16 {
        self.node_ports[i]
    }

    /// The user the tests (and so the daemons and the jobs) run as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The log file of gsctld.
    pub fn ctld_log(&self) -> PathBuf {
        self.lock().ctld.log.clone()
    }

    /// The log file of node `i`'s gsnoded.
    pub fn noded_log(&self, i: usize) -> PathBuf {
        self.lock().noded[i].log.clone()
    }

    /// An API client for the controller, acting as the current user.
    pub fn client(&self) -> Client {
        Client::new(format!("127.0.0.1:{}", self.ctld_port), self.auth.clone())
            .with_timeout(Duration::from_secs(10))
    }

    /// The cluster's private munged, when it runs with auth/munge.
    pub fn munged(&self) -> Option<&PrivateMunged> {
        self.munged.as_ref()
    }

    /// The same, to stop and restart it.
    pub fn munged_mut(&mut self) -> Option<&mut PrivateMunged> {
        self.munged.as_mut()
    }

    /// How the harness authenticates its own API calls (`auth/munge` or `auth/none`).
    pub fn auth(&self) -> Arc<dyn Authenticator> {
        self.auth.clone()
    }

    // ------------------------------------------------------------------ commands

    /// The environment every command and daemon of this cluster starts with (nothing else
    /// of the test's environment leaks in).
    pub fn base_env(&self) -> Vec<(String, String)> {
        let home = std::env::var("HOME").unwrap_or_else(|_| "/".into());
        // The static gsbatch first, as installed (scripts/build-static.sh).
        let statics = bins::static_commands_dir()
            .map(|d| format!("{}:", d.display()))
            .unwrap_or_default();
        let mut env = vec![
            (
                "PATH".into(),
                format!(
                    "{statics}{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    bins::bin_dir().display()
                ),
            ),
            ("HOME".into(), home),
            ("USER".into(), self.user.clone()),
            ("LOGNAME".into(), self.user.clone()),
            ("SHELL".into(), "/bin/sh".into()),
            ("LANG".into(), "C".into()),
            ("GSCHED_CONF".into(), self.conf.display().to_string()),
            // Test nodes share one host and one /proc/loadavg: a test gives a node a load
            // of its own by writing this file (gsnoded reads /proc/loadavg without it).
            (
                "GSCHED_LOADAVG_FILE".into(),
                self.root.join("loadavg-%n").display().to_string(),
            ),
        ];
        for k in ["RUST_BACKTRACE", "GSCHED_DEBUG", "RUST_LOG"] {
            if let Ok(v) = std::env::var(k) {
                env.push((k.into(), v));
            }
        }
        if !env.iter().any(|(k, _)| k == "RUST_BACKTRACE") {
            env.push(("RUST_BACKTRACE".into(), "1".into()));
        }
        env
    }

    /// A command binary (`gsbatch`, ...) ready to run: clean environment with
    /// `GSCHED_CONF` and `PATH` set (the binaries under test first), working directory
    /// [`TestCluster::workdir`].
    pub fn command(&self, name: &str) -> Command {
        // Checked here for a clear message; run by name through PATH (the binary directory
        // comes first), so that argv[0] is what a user types and messages say `gsbatch: `.
        bins::bin(name);
        let mut c = Command::new(name);
        c.env_clear()
            .envs(self.base_env())
            .current_dir(self.workdir())
            .stdin(Stdio::null());
        c
    }

    /// Like [`TestCluster::command`], run as the user `user` (the tests must run as root):
    /// its uid and primary gid, and its `USER`, `LOGNAME` and `HOME`.
    pub fn command_as(&self, name: &str, user: &str) -> Command {
        let u = gsched_proto::users::user_by_name(user)
            .unwrap_or_else(|| panic!("no such user {user}"));
        let mut c = self.command(name);
        std::os::unix::process::CommandExt::uid(&mut c, u.uid);
        std::os::unix::process::CommandExt::gid(&mut c, u.gid);
        c.env("USER", user)
            .env("LOGNAME", user)
            .env("HOME", &u.home);
        c
    }

    /// Runs a command binary and returns what it did (any exit status).
    pub fn cmd<I, S>(&self, name: &str, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = self.command(name);
        c.args(args);
        c.output()
            .unwrap_or_else(|e| panic!("cannot run {name}: {e}"))
    }

    /// Runs a command that must succeed; returns its stdout.
    pub fn cmd_ok<I, S>(&self, name: &str, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<std::ffi::OsString> =
            args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let out = self.cmd(name, &args);
        if !out.status.success() {
            panic!(
                "{}",
                self.failure(&format!(
                    "`{name} {}` failed with {}\nstdout: {}\nstderr: {}",
                    args.iter()
                        .map(|a| a.to_string_lossy())
                        .collect::<Vec<_>>()
                        .join(" "),
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ))
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `gsbatch --parsable ARGS...`; returns the job id (panics when the submission fails).
    pub fn submit<I, S>(&self, args: I) -> JobId
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.submit_env(args, &[])
    }

    /// Like [`TestCluster::submit`], with extra environment variables for gsbatch.
    pub fn submit_env<I, S>(&self, args: I, env: &[(&str, &str)]) -> JobId
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = self.command("gsbatch");
        c.arg("--parsable").args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        self.submit_command(c)
    }

    /// Runs a prepared `gsbatch --parsable ...` command and returns the job id.
    pub fn submit_command(&self, mut c: Command) -> JobId {
        let out = c
            .output()
            .unwrap_or_else(|e| panic!("cannot run gsbatch: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let id = stdout
            .trim()
            .split(';')
            .next()
            .and_then(|s| s.parse::<JobId>().ok());
        match (out.status.success(), id) {
            (true, Some(id)) => id,
            _ => panic!(
                "{}",
                self.failure(&format!(
                    "gsbatch ({c:?}) did not submit: {}\nstdout: {stdout}\nstderr: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ))
            ),
        }
    }

    /// Writes `text` as an executable script `name` in the work directory; returns its path.
    pub fn write_script(&self, name: &str, text: &str) -> PathBuf {
        let p = self.workdir().join(name);
        fs::write(&p, text).expect("cannot write script");
        let _ = fs::set_permissions(&p, fs::Permissions::from_mode(0o755));
        p
    }

    /// The path of a file in the work directory.
    pub fn work_file(&self, name: &str) -> PathBuf {
        self.workdir().join(name)
    }

    /// The text of a file in the work directory (panics if it is missing).
    pub fn read_work_file(&self, name: &str) -> String {
        let p = self.work_file(name);
        fs::read_to_string(&p).unwrap_or_else(|e| {
            let listing: Vec<String> = fs::read_dir(self.workdir())
                .map(|rd| {
                    rd.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                        .collect()
                })
                .unwrap_or_default();
            panic!(
                "{}",
                self.failure(&format!(
                    "cannot read {}: {e}; the work directory holds {listing:?}",
                    p.display()
                ))
            )
        })
    }

    // ------------------------------------------------------------------ API

    /// The job record, or `None` when the controller does not know the id.
    pub fn try_job(&self, id: JobId) -> Result<Option<JobInfo>, ClientError> {
        let q = JobQuery {
            filter: JobFilter {
                ids: vec![id],
                ..Default::default()
            },
            brief: false,
            fields: Vec::new(),
        };
        let r: JobsResponse = self.client().post(paths::JOBS_QUERY, &q)?;
        Ok(r.jobs.into_iter().find(|j| j.job_id == id))
    }

    /// The job record (panics when it cannot be had).
    pub fn job(&self, id: JobId) -> JobInfo {
        match self.try_job(id) {
            Ok(Some(j)) => j,
            Ok(None) => panic!("{}", self.failure(&format!("job {id} is unknown"))),
            Err(e) => panic!("{}", self.failure(&format!("querying job {id}: {e}"))),
        }
    }

    /// Every job the controller knows.
    pub fn jobs(&self) -> Vec<JobInfo> {
        let r: JobsResponse = self
            .client()
            .post(paths::JOBS_QUERY, &JobQuery::default())
            .unwrap_or_else(|e| panic!("{}", self.failure(&format!("querying jobs: {e}"))));
        r.jobs
    }

    /// Every node the controller knows.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.try_nodes()
            .unwrap_or_else(|e| panic!("{}", self.failure(&format!("querying nodes: {e}"))))
    }

    fn try_nodes(&self) -> Result<Vec<NodeInfo>, ClientError> {
        let r: NodesResponse = self.client().get(paths::NODES)?;
        Ok(r.nodes)
    }

    /// Whether the controller answers `GET /v1/ping`.
    pub fn ping(&self) -> Option<PingResponse> {
        self.client()
            .with_timeout(Duration::from_secs(2))
            .get(paths::PING)
            .ok()
    }

    // ------------------------------------------------------------------ waiting

    /// Polls `f` (short sleeps, growing from 5 to 100 ms) until it returns `Some`, or
    /// `timeout` (scaled) passes. Never panics.
    pub fn poll<T>(&self, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + scaled(timeout);
        let mut pause = Duration::from_millis(5);
        loop {
            if let Some(v) = f() {
                return Some(v);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// Waits until `f` returns `Some`; on timeout panics with `what` and the tail of every
    /// daemon log.
    pub fn wait_for<T>(&self, timeout: Duration, what: &str, f: impl FnMut() -> Option<T>) -> T {
        match self.poll(timeout, f) {
            Some(v) => v,
            None => panic!(
                "{}",
                self.failure(&format!(
                    "timed out after {:?} waiting for {what}",
                    scaled(timeout)
                ))
            ),
        }
    }

    /// Waits until `cond` holds; on timeout panics with `what` and the daemon logs.
    pub fn wait_until(&self, timeout: Duration, what: &str, mut cond: impl FnMut() -> bool) {
        self.wait_for(timeout, what, || cond().then_some(()))
    }

    /// Waits until job `id` satisfies `pred`; returns the record. API errors while waiting
    /// (a controller restarting) are retried.
    pub fn wait_job(
        &self,
        id: JobId,
        timeout: Duration,
        what: &str,
        mut pred: impl FnMut(&JobInfo) -> bool,
    ) -> JobInfo {
        let mut last: Option<String> = None;
        let got = self.poll(timeout, || match self.try_job(id) {
            Ok(Some(j)) => {
                last = Some(format!(
                    "{} reason={} exit={} nodes={:?}",
                    j.state,
                    j.reason,
                    j.exit_code_string(),
                    j.nodes
                ));
                pred(&j).then_some(j)
            }
            Ok(None) => {
                last = Some("unknown to the controller".into());
                None
            }
            Err(e) => {
                last = Some(format!("query failed: {e}"));
                None
            }
        });
        match got {
            Some(j) => j,
            None => panic!(
                "{}",
                self.failure(&format!(
                    "timed out after {:?} waiting for job {id} to be {what}; last seen: {}",
                    scaled(timeout),
                    last.unwrap_or_else(|| "never".into())
                ))
            ),
        }
    }

    /// Waits until job `id` is in `state`.
    pub fn wait_state(&self, id: JobId, state: JobState, timeout: Duration) -> JobInfo {
        self.wait_job(id, timeout, state.long(), |j| j.state == state)
    }

    /// Waits until job `id` has ended (any terminal state).
    pub fn wait_terminal(&self, id: JobId, timeout: Duration) -> JobInfo {
        self.wait_job(id, timeout, "finished", |j| j.state.is_terminal())
    }

    /// Waits until the work-directory file `name` exists and contains `needle`.
    pub fn wait_file_contains(&self, name: &str, needle: &str, timeout: Duration) -> String {
        let p = self.work_file(name);
        self.wait_for(
            timeout,
            &format!("{} to contain {needle:?}", p.display()),
            || fs::read_to_string(&p).ok().filter(|t| t.contains(needle)),
        )
    }

    // ------------------------------------------------------------------ daemons

    fn spawn(&self, d: &mut Daemon, args: &[String], binary: &str) {
        if let Some(parent) = d.log.parent() {
            let _ = fs::create_dir_all(parent);
        }
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&d.log)
            .expect("cannot open daemon log");
        let _ = writeln!(
            log,
            "=== gsched-tests: starting {binary} {} at {} ===",
            args.join(" "),
            now_secs()
        );
        let err = log.try_clone().expect("cannot clone log handle");
        let mut env = self.base_env();
        if binary == "gsnoded" {
            env.push(("GSCHED_STEPD".into(), bins::stepd().display().to_string()));
        }
        for (k, v) in &self.opts.daemon_env {
            let v = match env.iter().find(|(x, _)| x == "PATH") {
                Some((_, base)) if k == "PATH" => format!("{v}:{base}"),
                _ => v.clone(),
            };
            env.retain(|(x, _)| x != k);
            env.push((k.clone(), v));
        }
        let child = Command::new(bins::bin(binary))
            .args(args)
            .env_clear()
            .envs(env)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
        d.child = Some(child);
        d.exited = None;
    }

    fn spawn_ctld(&self) {
        let args = vec!["-D".into(), "-f".into(), self.conf.display().to_string()];
        let mut g = self.lock();
        self.spawn(&mut g.ctld, &args, "gsctld");
    }

    fn spawn_noded(&self, i: usize) {
        let name = self.node_names()[i].clone();
        let args = vec![
            "-D".into(),
            "-f".into(),
            self.conf.display().to_string(),
            "-N".into(),
            name,
        ];
        let mut g = self.lock();
        self.spawn(&mut g.noded[i], &args, "gsnoded");
    }

    /// Waits until the controller (`node == None`) answers, or node `i` is registered (by a
    /// daemon started at or after `since`, taken before the spawn) and its daemon listens.
    /// Fails fast when the daemon exits.
    fn wait_daemon_ready(&self, node: Option<usize>, since: i64) -> Result<(), LaunchError> {
        let deadline = Instant::now() + scaled(DEFAULT_TIMEOUT);
        let mut pause = Duration::from_millis(5);
        loop {
            let (exited, label, log) = {
                let mut g = self.lock();
                let d = match node {
                    None => &mut g.ctld,
                    Some(i) => &mut g.noded[i],
                };
                (d.poll_exit(), d.label.clone(), d.log.clone())
            };
            if let Some(st) = exited {
                let text = fs::read_to_string(&log).unwrap_or_default();
                let why = format!("{label} exited with {st} before it was ready");
                return Err(if text.contains("in use") || text.contains("EADDRINUSE") {
                    LaunchError::PortInUse(why)
                } else {
                    LaunchError::Failed(why)
                });
            }
            let ready = match node {
                // Our controller, not one of another cluster that holds the port meanwhile.
                None => self.ping().is_some_and(|p| p.start_time >= since),
                Some(i) => self.node_ready(i, since),
            };
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(LaunchError::Failed(format!(
                    "{label} not ready after {:?}",
                    scaled(DEFAULT_TIMEOUT)
                )));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// Node `i` listens on its port and the controller lists it as registered and responding
    /// (with a daemon start time not before `since`, when the controller reports one).
    fn node_ready(&self, i: usize, since: i64) -> bool {
        let name = &self.node_names()[i];
        if !ports::is_listening(self.node_ports[i]) {
            return false;
        }
        match self.try_nodes() {
            Ok(nodes) => nodes.iter().any(|n| {
                &n.name == name
                    && n.base != NodeBaseState::Unknown
                    && !n.not_responding
                    && n.slurmd_start_time.is_none_or(|t| t >= since)
            }),
            Err(_) => false,
        }
    }

    /// SIGKILLs gsctld (no chance to clean up), and reaps it.
    pub fn kill_ctld(&self) {
        self.lock().ctld.kill_and_reap();
    }

    /// Starts gsctld again (after [`TestCluster::kill_ctld`]) and waits until it answers and
    /// every running node daemon has registered with it again.
    pub fn start_ctld(&self) {
        assert!(
            self.lock().ctld.child.is_none(),
            "start_ctld: gsctld is still running"
        );
        let since = now_secs();
        self.spawn_ctld();
        if let Err(LaunchError::PortInUse(w) | LaunchError::Failed(w)) =
            self.wait_daemon_ready(None, since)
        {
            panic!("{}", self.failure(&format!("restarting gsctld: {w}")));
        }
        let running: Vec<usize> = {
            let g = self.lock();
            (0..g.noded.len())
                .filter(|i| g.noded[*i].child.is_some())
                .collect()
        };
        self.wait_until(
            DEFAULT_TIMEOUT,
            "the node daemons to register with the restarted gsctld",
            || running.iter().all(|i| self.node_ready(*i, i64::MIN)),
        );
    }

    /// SIGKILLs node `i`'s gsnoded (its jobs keep running), and reaps it.
    pub fn kill_noded(&self, i: usize) {
        self.lock().noded[i].kill_and_reap();
    }

    /// Waits until every daemon has exited by itself (`scontrol shutdown`); their exit
    /// statuses, gsctld's first. Panics after `timeout`.
    pub fn wait_daemons_exit(&self, timeout: Duration) -> Vec<std::process::ExitStatus> {
        let until = Instant::now() + timeout;
        let mut g = self.lock();
        let mut out = Vec::new();
        for d in g.all_mut() {
            let Some(c) = d.child.as_mut() else { continue };
            loop {
                if let Some(st) = c.try_wait().expect("try_wait on a daemon") {
                    out.push(st);
                    d.child = None;
                    break;
                }
                assert!(
                    Instant::now() < until,
                    "a daemon did not exit within {timeout:?}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        out
    }

    /// Starts node `i`'s gsnoded again and waits until it listens and is registered.
    pub fn start_noded(&self, i: usize) {
        assert!(
            self.lock().noded[i].child.is_none(),
            "start_noded: gsnoded {i} is still running"
        );
        let since = now_secs();
        self.spawn_noded(i);
        if let Err(LaunchError::PortInUse(w) | LaunchError::Failed(w)) =
            self.wait_daemon_ready(Some(i), since)
        {
            panic!("{}", self.failure(&format!("restarting gsnoded: {w}")));
        }
    }

    /// The pid of gsctld, when running.
    pub fn ctld_pid(&self) -> Option<u32> {
        self.lock().ctld.child.as_ref().map(|c| c.id())
    }

    /// The pid of node `i`'s gsnoded, when running.
    pub fn noded_pid(&self, i: usize) -> Option<u32> {
        self.lock().noded[i].child.as_ref().map(|c| c.id())
    }

    /// SIGTERM to every daemon, SIGKILL to those still alive after `grace`.
    fn stop_daemons(&self, grace: Duration) {
        let mut g = self.lock();
        for d in g.all_mut() {
            d.signal(Signal::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && g.all_mut().any(|d| d.child.is_some()) {
            for d in g.all_mut() {
                d.poll_exit();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for d in g.all_mut() {
            d.kill_and_reap();
        }
    }

    /// A failure report: `what`, the daemons' status, and the tail of every daemon log.
    pub fn failure(&self, what: &str) -> String {
        let mut s = format!("{what}\n\ncluster directory: {}\n", self.root.display());
        let mut g = self.lock();
        for d in g.all_mut() {
            d.poll_exit();
        }
        for d in g.all() {
            let status = match (&d.child, d.exited) {
                (Some(c), _) => format!("running (pid {})", c.id()),
                (None, Some(st)) => format!("EXITED on its own: {st}"),
                (None, None) => "not running".to_string(),
            };
            let _ = write!(
                s,
                "\n----- {} [{status}]: last 40 lines of {} -----\n{}\n",
                d.label,
                d.log.display(),
                tail(&d.log, 40)
            );
        }
        s
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.stop_daemons(Duration::from_secs(5));
        self.munged.take();
        let killed = procs::kill_everything_under(&self.root);
        if !killed.is_empty() {
            eprintln!(
                "gsched-tests: killed {} leftover process(es) of the cluster in {}: {killed:?}",
                killed.len(),
                self.root.display()
            );
        }
        let keep = std::env::var_os(KEEP_DIR_ENV).is_some_and(|v| !v.is_empty());
        if let Some(dir) = self.dir.take() {
            if keep {
                let p = dir.keep();
                eprintln!("gsched-tests: kept the cluster directory {}", p.display());
            } else {
                if std::thread::panicking() {
                    eprintln!(
                        "gsched-tests: removing the cluster directory {}; set {KEEP_DIR_ENV}=1 to keep it",
                        self.root.display()
                    );
                }
                drop(dir);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::config::Config;

    #[test]
    fn rendered_config_parses() {
        let opts = ClusterOpts::named("x")
            .nodes(3)
            .cpus(4)
            .real_memory_mb(2048)
            .kill_wait(1);
        let root = Path::new("/tmp/gsched-test-x-abc");
        let text = render_config(&opts, root, 40000, &[40001, 40002, 40003], "root");
        let cfg = Config::parse(&text, &root.join("gsched.conf"))
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(cfg.cluster_name, "gstest");
        assert_eq!(cfg.ctld_port, 40000);
        assert_eq!(cfg.kill_wait, 1);
        assert_eq!(cfg.nodes.len(), 3);
        assert_eq!(cfg.node_port("n2"), 40002);
        assert_eq!(cfg.node("n3").unwrap().cpus, 4);
        assert_eq!(cfg.node("n1").unwrap().real_memory_mb, 2048);
        assert_eq!(cfg.spool_dir_for("n1"), root.join("spool").join("n1"));
        assert_eq!(cfg.state_save_location, root.join("state"));
        assert_eq!(cfg.default_partition().unwrap().nodes.len(), 3);
        assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
    }

    #[test]
    fn tail_keeps_last_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("l");
        fs::write(&p, "a\nb\nc\nd\n").unwrap();
        assert_eq!(tail(&p, 2), "c\nd");
        assert_eq!(tail(&p, 10), "a\nb\nc\nd");
        assert!(tail(&d.path().join("none"), 3).contains("cannot read"));
    }

    #[test]
    fn timeouts_scale() {
        // Without the variable (the test environment does not set it in CI) the scale is 1.
        if std::env::var_os(TIMEOUT_SCALE_ENV).is_none() {
            assert_eq!(scaled(Duration::from_secs(3)), Duration::from_secs(3));
        }
    }
}
