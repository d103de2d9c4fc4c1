//! Filename patterns of `-o/--output`, `-e/--error` and `-i/--input` (`slurm-%j.out`).
//!
//! Workflow tools compute log paths themselves by substituting `%j`, `%A`, `%a` and `%t`
//! (submitit, snakemake), so gsched must expand patterns exactly like Slurm's
//! `expand_stdio_fields`: the same tokens, the same zero padding, the same treatment of
//! unknown tokens and of backslashes. Both the node daemon (batch step) and `srun`-style
//! step launch use this module.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What Slurm prints for `%a` of a job that is not part of an array (`NO_VAL`).
pub const NO_ARRAY_TASK: u32 = 0xffff_fffe;

/// Largest zero-padding width (`%12j` pads to 10).
const MAX_PAD: usize = 10;

/// The facts a pattern can refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatternContext<'a> {
    /// The job's own id (for an array task, the task's id, not the master's).
    pub job_id: u32,
    /// The array master job id, for array tasks.
    pub array_job_id: Option<u32>,
    /// The array index, for array tasks.
    pub array_task_id: Option<u32>,
    /// The step id; `None` is the batch step.
    pub step: Option<u32>,
    pub user: &'a str,
    pub job_name: &'a str,
    /// Name of the (first) node.
    pub node: &'a str,
    /// Node index within the job (0 for the batch step).
    pub node_index: u32,
    /// Task rank (0 for the batch step).
    pub task_id: u32,
    /// How many times the job was requeued.
    pub restart_count: u32,
}

/// Whether an `-o/-e` pattern names one file per task or node (`%t`, `%n`, `%N`, with or
/// without padding digits): those files are opened on the node; other patterns are written
/// by gsrun itself, as srun does.
pub fn pattern_is_per_task(pattern: &str) -> bool {
    if pattern.contains('\\') {
        return false;
    }
    let b = pattern.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            match b.get(j) {
                Some(b't' | b'n' | b'N') => return true,
                Some(b'%') => {
                    i = j + 1;
                    continue;
                }
                _ => {}
            }
        }
        i += 1;
    }
    false
}

/// Expands a stdio filename pattern.
///
/// Tokens: `%%` → `%`; `%A` array master id (else the job id); `%a` array index
/// (`4294967294` for non-array jobs); `%b` array index modulo 10; `%j` job id; `%J`
/// `jobid.stepid` (just the job id for the batch step); `%s` step id (`batch` for the
/// batch step); `%N` node name; `%n` node index; `%t` task rank; `%u` user; `%x` job
/// name; `%r` restart count. Digits between `%` and the letter zero-pad numbers (`%4j` →
/// `0128`, at most 10). Unknown tokens and a trailing `%` are kept as written. If the
/// pattern contains a backslash, nothing is expanded and the backslashes are removed.
pub fn expand_stdio(pattern: &str, ctx: &PatternContext<'_>) -> String {
    if pattern.contains('\\') {
        return pattern.replace('\\', "");
    }
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut rest = pattern;
    while let Some(pos) = rest.find('%') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let Some(letter) = after[digits..].chars().next() else {
            // A trailing `%` (possibly with digits) stays as written.
            out.push_str(&rest[pos..]);
            return out;
        };
        let token_end = pos + 1 + digits + letter.len_utf8();
        let pad = if digits == 0 {
            0
        } else {
            // More than MAX_PAD (even absurdly many digits) caps at MAX_PAD.
            after[..digits]
                .parse::<usize>()
                .map_or(MAX_PAD, |p| p.min(MAX_PAD))
        };
        if !push_token(&mut out, letter, digits == 0, pad, ctx) {
            out.push_str(&rest[pos..token_end]);
        }
        rest = &rest[token_end..];
    }
    out.push_str(rest);
    out
}

/// Appends one expanded token; returns false for an unknown token.
fn push_token(
    out: &mut String,
    letter: char,
    bare: bool,
    pad: usize,
    ctx: &PatternContext<'_>,
) -> bool {
    let mut num = |n: u32| {
        let _ = write!(out, "{n:0pad$}");
    };
    match letter {
        '%' if bare => out.push('%'),
        'A' => num(ctx.array_job_id.unwrap_or(ctx.job_id)),
        'a' => num(ctx.array_task_id.unwrap_or(NO_ARRAY_TASK)),
        'b' => num(ctx.array_task_id.unwrap_or(NO_ARRAY_TASK) % 10),
        'j' => num(ctx.job_id),
        'J' => {
            num(ctx.job_id);
            if let Some(step) = ctx.step {
                let _ = write!(out, ".{step}");
            }
        }
        's' => match ctx.step {
            Some(step) => num(step),
            None => out.push_str("batch"),
        },
        'n' => num(ctx.node_index),
        't' => num(ctx.task_id),
        'r' => num(ctx.restart_count),
        'N' => out.push_str(ctx.node),
        'u' => out.push_str(ctx.user),
        'x' => out.push_str(ctx.job_name),
        _ => return false,
    }
    true
}

/// Makes an expanded path absolute: a relative path is taken relative to `workdir`.
pub fn resolve_output_path(expanded: &str, workdir: &Path) -> PathBuf {
    let path = Path::new(expanded);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        workdir.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn batch() -> PatternContext<'static> {
        PatternContext {
            job_id: 128,
            array_job_id: None,
            array_task_id: None,
            step: None,
            user: "alice",
            job_name: "train",
            node: "gpu01",
            node_index: 0,
            task_id: 0,
            restart_count: 0,
        }
    }

    fn array_step() -> PatternContext<'static> {
        PatternContext {
            job_id: 131,
            array_job_id: Some(128),
            array_task_id: Some(23),
            step: Some(2),
            node_index: 3,
            task_id: 7,
            restart_count: 2,
            ..batch()
        }
    }

    #[test]
    fn default_patterns() {
        assert_eq!(expand_stdio("slurm-%j.out", &batch()), "slurm-128.out");
        assert_eq!(
            expand_stdio("slurm-%A_%a.out", &array_step()),
            "slurm-128_23.out"
        );
    }

    #[test]
    fn every_token_for_the_batch_step() {
        let ctx = batch();
        let cases = [
            ("%%", "%"),
            ("%A", "128"),
            ("%a", "4294967294"),
            ("%b", "4"),
            ("%j", "128"),
            ("%J", "128"),
            ("%s", "batch"),
            ("%N", "gpu01"),
            ("%n", "0"),
            ("%t", "0"),
            ("%u", "alice"),
            ("%x", "train"),
            ("%r", "0"),
        ];
        for (pattern, want) in cases {
            assert_eq!(expand_stdio(pattern, &ctx), want, "{pattern}");
        }
    }

    #[test]
    fn every_token_for_an_array_step() {
        let ctx = array_step();
        let cases = [
            ("%A", "128"),
            ("%a", "23"),
            ("%b", "3"),
            ("%j", "131"),
            ("%J", "131.2"),
            ("%s", "2"),
            ("%n", "3"),
            ("%t", "7"),
            ("%r", "2"),
        ];
        for (pattern, want) in cases {
            assert_eq!(expand_stdio(pattern, &ctx), want, "{pattern}");
        }
    }

    #[test]
    fn submitit_and_snakemake_paths() {
        let ctx = array_step();
        assert_eq!(
            expand_stdio("/logs/%A_%a_%t_log.out", &ctx),
            "/logs/128_23_7_log.out"
        );
        assert_eq!(
            expand_stdio("/logs/%j_0_log.err", &batch()),
            "/logs/128_0_log.err"
        );
        assert_eq!(
            expand_stdio("logs/%x-%J.err", &batch()),
            "logs/train-128.err"
        );
    }

    #[test]
    fn zero_padding() {
        let ctx = batch();
        assert_eq!(expand_stdio("%4j", &ctx), "0128");
        assert_eq!(expand_stdio("%2j", &ctx), "128");
        assert_eq!(expand_stdio("%0j", &ctx), "128");
        assert_eq!(expand_stdio("%10j", &ctx), "0000000128");
        assert_eq!(expand_stdio("%12j", &ctx), "0000000128");
        assert_eq!(
            expand_stdio("%99999999999999999999999j", &ctx),
            "0000000128"
        );
        assert_eq!(expand_stdio("%3t", &ctx), "000");
        assert_eq!(expand_stdio("%6J", &array_step()), "000131.2");
        assert_eq!(expand_stdio("%3s", &array_step()), "002");
        assert_eq!(expand_stdio("%3s", &ctx), "batch");
        assert_eq!(expand_stdio("%5x", &ctx), "train");
        assert_eq!(expand_stdio("%8u", &ctx), "alice");
    }

    #[test]
    fn unknown_and_trailing_tokens_stay() {
        let ctx = batch();
        assert_eq!(expand_stdio("%q", &ctx), "%q");
        assert_eq!(expand_stdio("a%3qb", &ctx), "a%3qb");
        assert_eq!(expand_stdio("out%", &ctx), "out%");
        assert_eq!(expand_stdio("out%12", &ctx), "out%12");
        assert_eq!(expand_stdio("%5%j", &ctx), "%5%j");
        assert_eq!(expand_stdio("%é%j", &ctx), "%é128");
        assert_eq!(expand_stdio("100%%-%j", &ctx), "100%-128");
        assert_eq!(expand_stdio("", &ctx), "");
        assert_eq!(expand_stdio("none", &ctx), "none");
    }

    #[test]
    fn backslash_disables_expansion() {
        let ctx = batch();
        assert_eq!(expand_stdio("out\\%j.txt", &ctx), "out%j.txt");
        assert_eq!(expand_stdio("a\\b-%j", &ctx), "ab-%j");
        assert_eq!(expand_stdio("\\\\", &ctx), "");
    }

    #[test]
    fn resolves_relative_paths() {
        let wd = Path::new("/home/alice/run");
        assert_eq!(
            resolve_output_path("slurm-1.out", wd),
            PathBuf::from("/home/alice/run/slurm-1.out")
        );
        assert_eq!(
            resolve_output_path("logs/x.out", wd),
            PathBuf::from("/home/alice/run/logs/x.out")
        );
        assert_eq!(
            resolve_output_path("/tmp/x.out", wd),
            PathBuf::from("/tmp/x.out")
        );
        assert_eq!(
            resolve_output_path("/dev/null", wd),
            PathBuf::from("/dev/null")
        );
    }

    proptest! {
        #[test]
        fn never_panics(p in "[%0-9a-zA-Z\\\\é/._-]{0,30}") {
            let _ = expand_stdio(&p, &batch());
            let _ = expand_stdio(&p, &array_step());
        }

        #[test]
        fn text_without_percent_is_unchanged(p in "[a-zA-Z0-9/._-]{0,30}") {
            prop_assert_eq!(expand_stdio(&p, &batch()), p);
        }
    }
}
