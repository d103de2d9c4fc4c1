//! Resource limits propagated from the submission to the job, as Slurm does: sbatch and srun
//! put their soft limits in the job's environment as `SLURM_RLIMIT_<NAME>` (the ones
//! `PropagateResourceLimits`/`PropagateResourceLimitsExcept` select, or `--propagate`'s,
//! marked with a leading `U`), and the node sets them as the job's soft limits just before
//! the job's program starts, then removes the variables (the job never sees them). A value
//! over the node's hard limit is lowered to it, unless the user asked with `--propagate`:
//! then it is not set at all, and the node says so.

/// The limits Slurm propagates, by its names (`RLIMIT_` left out), in its order.
pub const NAMES: [&str; 10] = [
    "CPU", "FSIZE", "DATA", "STACK", "CORE", "RSS", "NPROC", "NOFILE", "MEMLOCK", "AS",
];

/// The environment variable of limit `name`.
pub fn env_name(name: &str) -> String {
    format!("SLURM_RLIMIT_{name}")
}

/// A list as `PropagateResourceLimits=`, `PropagateResourceLimitsExcept=` and `--propagate=`
/// take it: `ALL`, `NONE`, or names (with or without `RLIMIT_`) separated by commas or
/// blanks. The names it selects, in [`NAMES`]' order.
pub fn parse_list(s: &str) -> Result<Vec<&'static str>, String> {
    let s = s.trim();
    if s == "ALL" {
        return Ok(NAMES.to_vec());
    }
    if s == "NONE" {
        return Ok(Vec::new());
    }
    let mut chosen = Vec::new();
    for tok in s.split([',', ' ', '\t', '\n']).filter(|t| !t.is_empty()) {
        let name = tok.strip_prefix("RLIMIT_").unwrap_or(tok);
        let Some(&n) = NAMES.iter().find(|&&n| n == name) else {
            return Err(format!(
                "Bad rlimit name: {tok} (use ALL, NONE or {})",
                NAMES.join(", ")
            ));
        };
        if !chosen.contains(&n) {
            chosen.push(n);
        }
    }
    chosen.sort_by_key(|n| NAMES.iter().position(|x| x == n));
    Ok(chosen)
}

/// The `libc` resource of a name of [`NAMES`].
pub fn resource(name: &str) -> Option<libc::c_int> {
    Some(match name {
        "CPU" => libc::RLIMIT_CPU,
        "FSIZE" => libc::RLIMIT_FSIZE,
        "DATA" => libc::RLIMIT_DATA,
        "STACK" => libc::RLIMIT_STACK,
        "CORE" => libc::RLIMIT_CORE,
        "RSS" => libc::RLIMIT_RSS,
        "NPROC" => libc::RLIMIT_NPROC,
        "NOFILE" => libc::RLIMIT_NOFILE,
        "MEMLOCK" => libc::RLIMIT_MEMLOCK,
        "AS" => libc::RLIMIT_AS,
        _ => return None,
    } as libc::c_int)
}

/// This process's `(soft, hard)` limit of `name` (`RLIM_INFINITY` is `u64::MAX`).
#[allow(unsafe_code)]
pub fn current(name: &str) -> Option<(u64, u64)> {
    let r = resource(name)?;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-parameter; getrlimit only writes it.
    if unsafe { libc::getrlimit(r as _, &mut lim) } != 0 {
        return None;
    }
    Some((lim.rlim_cur, lim.rlim_max))
}

/// This process's soft limits, each of [`NAMES`] it can read.
pub fn soft_limits() -> Vec<(&'static str, u64)> {
    NAMES
        .iter()
        .filter_map(|&n| Some((n, current(n)?.0)))
        .collect()
}

/// The `SLURM_RLIMIT_*` variables a submission adds to the job's environment: the soft
/// limits (`soft`, from [`soft_limits`]) of `names`, marked `U` when the user asked
/// (`--propagate`).
pub fn submission_env(
    soft: &[(&'static str, u64)],
    names: &[&str],
    user_asked: bool,
) -> Vec<(String, String)> {
    let mark = if user_asked { "U" } else { "" };
    soft.iter()
        .filter(|(n, _)| names.contains(n))
        .map(|(n, v)| (env_name(n), format!("{mark}{v}")))
        .collect()
}

/// One propagated limit as the node applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Propagated {
    pub name: &'static str,
    pub soft: u64,
    /// `--propagate`: set even when the node's config does not propagate it.
    pub user_asked: bool,
}

/// Takes the `SLURM_RLIMIT_*` variables out of a job's environment and returns the limits
/// to set: the user's (`U`) and those `conf` (the node's propagated names) lists. A value
/// that does not parse is dropped, as slurmstepd does.
pub fn take_from_env(env: &mut Vec<(String, String)>, conf: &[String]) -> Vec<Propagated> {
    let mut out = Vec::new();
    env.retain(|(k, v)| {
        let Some(name) = k.strip_prefix("SLURM_RLIMIT_") else {
            return true;
        };
        let Some(&name) = NAMES.iter().find(|&&n| n == name) else {
            return true;
        };
        let (user_asked, digits) = match v.strip_prefix('U') {
            Some(d) => (true, d),
            None => (false, v.as_str()),
        };
        if let Ok(soft) = digits.parse::<u64>() {
            if user_asked || conf.iter().any(|c| c == name) {
                out.push(Propagated {
                    name,
                    soft,
                    user_asked,
                });
            }
        }
        false
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_as_slurm_parses_them() {
        assert_eq!(parse_list("ALL").unwrap(), NAMES.to_vec());
        assert!(parse_list("NONE").unwrap().is_empty());
        assert_eq!(
            parse_list("RLIMIT_NOFILE, CORE,NOFILE").unwrap(),
            vec!["CORE", "NOFILE"]
        );
        let e = parse_list("CORE,nofile").unwrap_err();
        assert!(e.starts_with("Bad rlimit name: nofile"), "{e}");
    }

    #[test]
    fn the_node_takes_the_variables_out_and_keeps_what_it_propagates() {
        let mut env = vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("SLURM_RLIMIT_CORE".to_string(), "0".to_string()),
            ("SLURM_RLIMIT_NOFILE".to_string(), "U100".to_string()),
            ("SLURM_RLIMIT_STACK".to_string(), "8388608".to_string()),
            ("SLURM_RLIMIT_AS".to_string(), "bad".to_string()),
        ];
        let got = take_from_env(&mut env, &["CORE".to_string()]);
        assert_eq!(env, vec![("PATH".to_string(), "/bin".to_string())]);
        assert_eq!(
            got,
            vec![
                Propagated {
                    name: "CORE",
                    soft: 0,
                    user_asked: false
                },
                Propagated {
                    name: "NOFILE",
                    soft: 100,
                    user_asked: true
                },
            ]
        );
    }

    #[test]
    fn a_submission_reports_its_soft_limits() {
        let (soft, _) = current("NOFILE").unwrap();
        assert!(soft_limits().contains(&("NOFILE", soft)));
        let env = submission_env(&[("CORE", 0), ("NOFILE", 5)], &["NOFILE"], true);
        assert_eq!(
            env,
            vec![("SLURM_RLIMIT_NOFILE".to_string(), "U5".to_string())]
        );
    }
}
