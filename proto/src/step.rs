//! Job steps (`srun` inside an allocation, gsched's `gsrun`): the records the controller
//! keeps, the messages of the step paths of the API, and the small helpers both ends share.
//!
//! Why this shape: a step is created by the controller (which owns the allocation and
//! numbers steps `N.0`, `N.1`, ...), launched by the controller on every node of the step
//! (`node/step_launch`, so gsnoded keeps obeying only the controller for anything that starts
//! processes), and its output is read by gsrun from each gsnoded directly (`node/step_io`,
//! allowed to the step's own user), so no output flows through the controller. gsrun reports
//! the step's end (`jobs/steps/complete`); steps still running when their job ends are closed
//! by the controller.

use crate::job::{JobId, JobState, JobUsage};
use serde::{Deserialize, Serialize};

/// A step id (`N.K`).
pub type StepId = u32;

/// What the controller records about a step (`gsacct` rows `N.K`, `gsqueue -s`,
/// `gscontrol show step`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepInfo {
    pub job_id: JobId,
    pub step_id: StepId,
    /// `-J`, else the command's basename (as srun names steps).
    pub name: String,
    pub user_id: u32,
    pub state: JobState,
    /// The nodes of the step, in the job's order.
    pub nodes: Vec<String>,
    /// Tasks on each node of `nodes`.
    pub tasks_per_node: Vec<u32>,
    pub ntasks: u32,
    pub cpus_per_task: u32,
    pub partition: String,
    pub start_time: i64,
    #[serde(default)]
    pub end_time: Option<i64>,
    /// The highest task exit code, and the signal that ended a task (0: none).
    #[serde(default)]
    pub exit_code: i32,
    #[serde(default)]
    pub signal: i32,
    /// The command line (`argv` joined by spaces).
    pub command: String,
    /// uid that cancelled the step (`CANCELLED by <uid>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_by: Option<u32>,
    /// The time limit in minutes (the job's), for `gsqueue -s`.
    #[serde(default)]
    pub time_limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<JobUsage>,
}

impl StepInfo {
    /// `N.K`.
    pub fn id_string(&self) -> String {
        format!("{}.{}", self.job_id, self.step_id)
    }

    /// CPUs of the step.
    pub fn cpus(&self) -> u32 {
        self.ntasks.saturating_mul(self.cpus_per_task.max(1))
    }
}

/// `POST /v1/jobs/steps`: create a step in a running job and launch its tasks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepCreateRequest {
    pub job_id: JobId,
    /// `-J`; `None`: the command's basename.
    #[serde(default)]
    pub name: Option<String>,
    /// `-n`; `None`: one task per node of the step.
    #[serde(default)]
    pub ntasks: Option<u32>,
    /// `-N` (an exact count; `None`: as many as the tasks need, up to the job's nodes).
    #[serde(default)]
    pub nodes: Option<u32>,
    /// `-w`: these nodes of the allocation (already expanded).
    #[serde(default)]
    pub nodelist: Vec<String>,
    /// `-c`; `None`: 1.
    #[serde(default)]
    pub cpus_per_task: Option<u32>,
    /// `--overlap`: share CPUs with other steps (gsched does not account CPUs between
    /// steps, so it is accepted and recorded only).
    #[serde(default)]
    pub overlap: bool,
    pub argv: Vec<String>,
    /// The environment of every task before the per-task `SLURM_*` variables.
    pub environment: Vec<(String, String)>,
    pub work_dir: String,
    /// `-o`/`-e` patterns (`%t %j %s %n %N ...`); `None`: forwarded to gsrun.
    #[serde(default)]
    pub stdout: Option<String>,
    #[serde(default)]
    pub stderr: Option<String>,
    /// The tasks read what gsrun streams to the nodes (`node/step_stdin`: gsrun's stdin, or
    /// `-i`'s file); `false`: `/dev/null`.
    #[serde(default)]
    pub stdin: bool,
    /// `-i N`: only task N reads it; `None`: every task (srun's default).
    #[serde(default)]
    pub stdin_rank: Option<u32>,
    /// `--open-mode=append` (or `SLURM_OPEN_MODE=a`, which sbatch sets for the job): the
    /// output files are appended to instead of truncated.
    #[serde(default)]
    pub open_append: bool,
}

/// Where one node's share of a step runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepNode {
    pub name: String,
    /// gsnoded's `host:port` (for `node/step_io`).
    pub endpoint: String,
    /// Global task ranks on this node.
    pub tasks: Vec<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepCreateResponse {
    pub step: StepInfo,
    pub nodes: Vec<StepNode>,
}

/// `POST /v1/jobs/steps/complete`: gsrun reports that every task ended.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepCompleteRequest {
    pub job_id: JobId,
    pub step_id: StepId,
    pub exit_code: i32,
    pub signal: i32,
    #[serde(default)]
    pub usage: Option<JobUsage>,
}

/// `POST /v1/jobs/steps/query`: steps of some jobs (`gsacct`), or every running step
/// (`gsqueue -s`, `gscontrol show step`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepQuery {
    /// Empty: every job's.
    #[serde(default)]
    pub job_ids: Vec<JobId>,
    #[serde(default)]
    pub running_only: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepsResponse {
    pub now: i64,
    pub steps: Vec<StepInfo>,
}

/// `POST /v1/jobs/steps/signal`: `gscancel N.K` (no signal: cancel the step) and
/// `gscancel --signal=SIG N.K`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepSignalRequest {
    pub job_id: JobId,
    pub step_id: StepId,
    pub signal: Option<i32>,
}

/// One task of a step on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepTask {
    /// `SLURM_PROCID`.
    pub rank: u32,
    /// `SLURM_LOCALID`.
    pub local_id: u32,
}

/// `POST /v1/node/step_launch` (from gsctld): start one node's tasks of a step.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepLaunchRequest {
    pub job_id: JobId,
    pub step_id: StepId,
    pub uid: u32,
    pub gid: u32,
    pub user_name: String,
    pub job_name: String,
    pub argv: Vec<String>,
    pub work_dir: String,
    /// The environment, the step-wide `SLURM_*` variables set; gsnoded adds the per-task ones.
    pub environment: Vec<(String, String)>,
    /// Index of this node within the step (`SLURM_NODEID`).
    pub node_id: u32,
    pub tasks: Vec<StepTask>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// Tasks read the input gsrun streams (see [`StepCreateRequest::stdin`]).
    #[serde(default)]
    pub stdin: bool,
    #[serde(default)]
    pub stdin_rank: Option<u32>,
    /// The array master id and index, for `%A`/`%a` in patterns.
    #[serde(default)]
    pub array: Option<(JobId, u32)>,
    /// Append to the per-task output files (srun `--open-mode=append`).
    #[serde(default)]
    pub open_append: bool,
    /// The `Prolog`'s environment on this node, for the job's first step there; empty when
    /// the controller has no `Prolog` configured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prolog_env: Vec<(String, String)>,
}

/// `POST /v1/node/step_signal` (from gsctld): signal a step's tasks on this node, or with
/// `step_id: None` every step of the job. `terminate`: SIGCONT+SIGTERM, SIGKILL after
/// `kill_wait` seconds.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeStepSignalRequest {
    pub job_id: JobId,
    #[serde(default)]
    pub step_id: Option<StepId>,
    pub signal: i32,
    #[serde(default)]
    pub terminate: bool,
    #[serde(default)]
    pub kill_wait: u32,
}

/// `POST /v1/node/step_stdin` (from the step's user, i.e. gsrun): the next bytes of the
/// tasks' input, and its end.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepStdinRequest {
    pub job_id: JobId,
    pub step_id: StepId,
    /// Where these bytes start in the input (a repeated request is not appended twice).
    pub offset: u64,
    pub data_b64: String,
    #[serde(default)]
    pub eof: bool,
}

/// Which output stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How far gsrun has read one task's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IoOffset {
    pub rank: u32,
    pub stream: Stream,
    pub offset: u64,
}

/// `POST /v1/node/step_io` (from the step's user, i.e. gsrun): new output of the tasks on
/// this node and, once they all ended, how each ended.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepIoRequest {
    pub job_id: JobId,
    pub step_id: StepId,
    /// Streams not listed are read from offset 0.
    #[serde(default)]
    pub offsets: Vec<IoOffset>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IoChunk {
    pub rank: u32,
    pub stream: Stream,
    pub offset: u64,
    pub data_b64: String,
}

/// How one task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskEnd {
    pub rank: u32,
    pub exit_code: i32,
    pub signal: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepIoResponse {
    pub chunks: Vec<IoChunk>,
    /// Set once every task on the node ended and all output was returned before it.
    #[serde(default)]
    pub ended: Option<Vec<TaskEnd>>,
    /// Why the tasks could not be started (then `ended` is set too).
    #[serde(default)]
    pub launch_error: Option<String>,
    #[serde(default)]
    pub usage: Option<JobUsage>,
}

/// srun's exit status for tasks that ended with these (exit code, signal) pairs, as Slurm's
/// `_task_finish` keeps it: a task killed by a signal outranks any exit code and the highest
/// signal wins (`128 + signal`); otherwise the highest exit code.
pub fn srun_exit_status(ends: &[(i32, i32)]) -> i32 {
    let sig = ends.iter().map(|&(_, s)| s).max().unwrap_or(0);
    if sig != 0 {
        return 128 + sig;
    }
    ends.iter().map(|&(e, _)| e).max().unwrap_or(0)
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (output bytes travel in JSON).
pub fn b64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes [`b64_encode`]'s output; `None` for anything else.
pub fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if s.len() % 4 != 0 {
        return None;
    }
    let val = |c: u8| B64.iter().position(|&x| x == c).map(|p| p as u32);
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (i, q) in s.chunks(4).enumerate() {
        let last = i + 1 == s.len() / 4;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = (n << 6) | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// Spreads `ntasks` tasks over `nodes` nodes with `cpus[i]` CPUs each, as Slurm's default
/// block distribution does: every node gets at least one task, then tasks fill nodes in
/// order up to their CPUs (`cpus_per_task` each), any remainder goes round-robin. Returns
/// the task count of each node; `None` when there are fewer tasks than nodes.
pub fn block_layout(ntasks: u32, cpus: &[u32], cpus_per_task: u32) -> Option<Vec<u32>> {
    let n = cpus.len() as u32;
    if n == 0 || ntasks < n {
        return None;
    }
    let cpt = cpus_per_task.max(1);
    let cap: Vec<u32> = cpus.iter().map(|&c| (c / cpt).max(1)).collect();
    let mut per = vec![1u32; cpus.len()];
    let mut left = ntasks - n;
    for (i, c) in cap.iter().enumerate() {
        let add = (c - 1).min(left);
        per[i] += add;
        left -= add;
    }
    let mut i = 0;
    while left > 0 {
        per[i % cpus.len()] += 1;
        left -= 1;
        i += 1;
    }
    Some(per)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for data in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"abcd",
            b"hello\nworld\xff\x00",
        ] {
            let e = b64_encode(data);
            assert_eq!(b64_decode(&e).unwrap(), data, "{e}");
        }
        assert_eq!(b64_encode(b"Man"), "TWFu");
        assert_eq!(b64_encode(b"Ma"), "TWE=");
        assert_eq!(b64_encode(b"M"), "TQ==");
        assert_eq!(b64_decode("TQ=").as_deref(), None);
        assert_eq!(b64_decode("T=Q=").as_deref(), None);
        assert_eq!(b64_decode("TQ==TQ==").as_deref(), None);
    }

    #[test]
    fn exit_status_is_the_worst_task() {
        assert_eq!(srun_exit_status(&[]), 0);
        assert_eq!(srun_exit_status(&[(0, 0), (3, 0), (1, 0)]), 3);
        assert_eq!(srun_exit_status(&[(0, 0), (0, 9)]), 137);
        assert_eq!(srun_exit_status(&[(2, 0), (0, 15)]), 143);
        assert_eq!(srun_exit_status(&[(0, 15), (0, 9), (5, 0)]), 143);
    }

    #[test]
    fn block_layout_fills_nodes_in_order() {
        assert_eq!(block_layout(4, &[2, 2], 1), Some(vec![2, 2]));
        assert_eq!(block_layout(3, &[2, 2], 1), Some(vec![2, 1]));
        assert_eq!(block_layout(2, &[4, 4], 1), Some(vec![1, 1]));
        assert_eq!(block_layout(5, &[4, 4], 2), Some(vec![3, 2]));
        assert_eq!(block_layout(9, &[2, 2], 1), Some(vec![5, 4]));
        assert_eq!(block_layout(1, &[2, 2], 1), None);
    }
}
