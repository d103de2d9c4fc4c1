//! `gscontrol import-slurm-conf`: turns a site's `slurm.conf` (with its `Include`s, and the
//! `gres.conf` and `cgroup.conf` beside it) into a `gsched.conf`, and lists what could not be
//! carried over and why.
//!
//! gsched reads slurm.conf syntax and most of its keys mean the same, so the import keeps
//! every line it can unchanged (comments included) and only comments out what gsched would
//! ignore with a warning or refuse: Slurm settings it does not implement yet, and node or
//! partition attributes of that kind (the rest of such a line is kept). `Include`d files are
//! inlined, so the result is one self-contained file. The result is parsed again before it
//! is returned: an import never hands out a config gsched cannot load.
//!
//! The tables of implemented and ignored keys are the parser's own ([`crate::config`]), so
//! the import cannot drift from what gsched actually does.

use std::path::{Path, PathBuf};

use crate::config::{
    canonical, logical_lines, tokenize, Config, ConfigError, Line, GLOBAL_KEYS, IGNORED_KEYS,
    IGNORED_LINE_KEYS, IGNORED_NODE_KEYS, IGNORED_PARTITION_KEYS, NODE_KEYS, PARTITION_KEYS,
};

/// Why an import failed: slurm.conf (or gres.conf) could not be read or parsed, or cgroup.conf
/// is not valid.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Cgroup(#[from] crate::cgroup_conf::CgroupConfError),
    #[error(transparent)]
    Gres(#[from] crate::gres_conf::GresConfError),
}

/// The outcome of an import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// The gsched.conf text.
    pub conf: String,
    /// One line per setting not carried over: `file:line: what: why`.
    pub dropped: Vec<String>,
    /// A cgroup.conf that gsched reads as it is: copy it beside the new gsched.conf.
    pub cgroup_conf: Option<PathBuf>,
    /// A gres.conf that gsched reads as it is (checked): copy it beside the new gsched.conf.
    pub gres_conf: Option<PathBuf>,
}

/// What happens to one `Key=Value` of a line.
enum Fate {
    Keep,
    Drop(String),
}

/// How deep `Include`s may nest (the parser's limit).
const MAX_DEPTH: usize = 16;

const NOT_YET: &str = "a Slurm setting gsched does not implement yet";

/// Imports `slurm_conf`; `gres_conf` and `cgroup_conf` are read when given, else from
/// slurm.conf's directory when present there (where Slurm looks for them).
pub fn import(
    slurm_conf: &Path,
    gres_conf: Option<&Path>,
    cgroup_conf: Option<&Path>,
) -> Result<Import, ImportError> {
    let text = read(slurm_conf, None)?;
    let mut out = Import {
        conf: format!(
            "# gsched.conf imported from {} by `gscontrol import-slurm-conf`.\n\
             # Lines starting with \"#[import]\" were not carried over; see the list it printed.\n",
            slurm_conf.display()
        ),
        dropped: Vec::new(),
        cgroup_conf: None,
        gres_conf: None,
    };
    convert(&text, slurm_conf, 0, &mut out)?;
    let dir = slurm_conf.parent().unwrap_or(Path::new("."));
    let find = |given: Option<&Path>, name: &str| match given {
        Some(p) => Some(p.to_path_buf()),
        None => Some(dir.join(name)).filter(|p| p.exists()),
    };
    if let Some(path) = find(gres_conf, "gres.conf") {
        // gsched reads gres.conf itself (beside gsched.conf), in Slurm's syntax: checked here.
        let text = read(&path, None)?;
        crate::gres_conf::GresConf::parse(&text, &path)?;
        out.gres_conf = Some(path);
    }
    if let Some(path) = find(cgroup_conf, "cgroup.conf") {
        // gsched reads cgroup.conf itself (beside gsched.conf), in Slurm's syntax: it is
        // checked here, and its settings gsched does not use are listed.
        let text = read(&path, None)?;
        let cg = crate::cgroup_conf::CgroupConf::parse(&text, &path)?;
        out.dropped.extend(cg.warnings.iter().cloned());
        out.cgroup_conf = Some(path);
    }
    // Never hand out a config gsched cannot load.
    Config::parse(&out.conf, Path::new("imported gsched.conf"))?;
    Ok(out)
}

fn read(path: &Path, from: Option<(&Path, usize)>) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| match from {
        None => ConfigError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
            source: e,
        },
        Some((file, line)) => ConfigError::Value {
            file: file.to_path_buf(),
            line,
            key: "Include".into(),
            message: format!("cannot read {}: {e}", path.display()),
        },
    })
}

/// Converts one file's text, appending to `out`.
fn convert(text: &str, file: &Path, depth: usize, out: &mut Import) -> Result<(), ConfigError> {
    let physical: Vec<&str> = text.split('\n').collect();
    let groups = logical_lines(text);
    for (i, (start, content)) in groups.iter().enumerate() {
        let end = groups
            .get(i + 1)
            .map(|(s, _)| s - 1)
            .unwrap_or(physical.len());
        let original = &physical[start - 1..end.min(physical.len())];
        if content.trim().is_empty() {
            push_lines(&mut out.conf, original, "");
            continue;
        }
        let line = tokenize(content).map_err(|message| ConfigError::Syntax {
            file: file.to_path_buf(),
            line: *start,
            message,
        })?;
        let loc = format!("{}:{start}", file.display());
        match line {
            Line::Include(target) => {
                if depth >= MAX_DEPTH {
                    return Err(ConfigError::Value {
                        file: file.to_path_buf(),
                        line: *start,
                        key: "Include".into(),
                        message: format!("includes are nested more than {MAX_DEPTH} deep"),
                    });
                }
                let path: PathBuf = file.parent().unwrap_or(Path::new("")).join(&target);
                let text = read(&path, Some((file, *start)))?;
                push_lines(&mut out.conf, original, "#[import] inlined: ");
                convert(&text, &path, depth + 1, out)?;
                out.conf
                    .push_str(&format!("#[import] end of {}\n", path.display()));
            }
            Line::Pairs(pairs) => {
                let fates = fates(&pairs);
                let dropped: Vec<(usize, String)> = fates
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| match f {
                        Fate::Drop(why) => Some((i, why.clone())),
                        Fate::Keep => None,
                    })
                    .collect();
                if dropped.is_empty() {
                    push_lines(&mut out.conf, original, "");
                    continue;
                }
                if let Some(k) = canonical(IGNORED_LINE_KEYS, &pairs[0].0) {
                    // A whole line of a kind gsched skips: one entry for it.
                    out.dropped.push(format!(
                        "{loc}: {}: {k} lines are {NOT_YET}",
                        content.trim()
                    ));
                } else {
                    for (i, why) in &dropped {
                        out.dropped
                            .push(format!("{loc}: {}={}: {why}", pairs[*i].0, pairs[*i].1));
                    }
                }
                push_lines(&mut out.conf, original, "#[import] ");
                // A node or partition line keeps its other attributes; a line whose first
                // key goes, goes whole.
                let first_dropped = matches!(fates[0], Fate::Drop(_));
                if !first_dropped {
                    let kept: Vec<String> = pairs
                        .iter()
                        .zip(&fates)
                        .filter(|(_, f)| matches!(f, Fate::Keep))
                        .map(|((k, v), _)| format!("{k}={}", quote(v)))
                        .collect();
                    out.conf.push_str(&kept.join(" "));
                    out.conf.push('\n');
                }
            }
        }
    }
    Ok(())
}

/// The fate of every pair of a line, by the kind of line its first key makes it.
fn fates(pairs: &[(String, String)]) -> Vec<Fate> {
    let first = pairs[0].0.as_str();
    let attr = |table: &[&'static str], ignored: &[&'static str], kind: &str, key: &str| {
        if canonical(table, key).is_some() {
            Fate::Keep
        } else if canonical(ignored, key).is_some() {
            Fate::Drop(format!("{NOT_YET} on {kind} lines"))
        } else {
            Fate::Drop(format!(
                "not a {kind} attribute Slurm or gsched knows (check the spelling)"
            ))
        }
    };
    if first.eq_ignore_ascii_case("NodeName") {
        return pairs
            .iter()
            .map(|(k, _)| attr(NODE_KEYS, IGNORED_NODE_KEYS, "NodeName", k))
            .collect();
    }
    if first.eq_ignore_ascii_case("PartitionName") {
        return pairs
            .iter()
            .map(|(k, _)| attr(PARTITION_KEYS, IGNORED_PARTITION_KEYS, "PartitionName", k))
            .collect();
    }
    if let Some(k) = canonical(IGNORED_LINE_KEYS, first) {
        return pairs
            .iter()
            .map(|_| Fate::Drop(format!("{k} lines are {NOT_YET}")))
            .collect();
    }
    pairs
        .iter()
        .map(|(k, _)| {
            if canonical(GLOBAL_KEYS, k).is_some() {
                Fate::Keep
            } else if canonical(IGNORED_KEYS, k).is_some() {
                Fate::Drop(NOT_YET.to_string())
            } else {
                Fate::Drop("not a setting Slurm or gsched knows (check the spelling)".into())
            }
        })
        .collect()
}

fn quote(v: &str) -> String {
    if v.is_empty() || v.contains(char::is_whitespace) {
        format!("\"{v}\"")
    } else {
        v.to_string()
    }
}

fn push_lines(out: &mut String, lines: &[&str], prefix: &str) {
    for l in lines {
        let l = l.strip_suffix('\r').unwrap_or(l);
        out.push_str(prefix);
        out.push_str(l);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn keeps_what_gsched_reads_and_comments_out_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let conf = write(
            d.path(),
            "slurm.conf",
            "# site config\nClusterName=c1\nSlurmctldHost=head(10.0.0.1)\n\
             AccountingStorageHost=dbd\nSchedulerType=sched/backfill\n\
             NodeName=n[1-2] CPUs=8 RealMemory=1000 TmpDisk=5000 State=UNKNOWN\n\
             PartitionName=batch Nodes=ALL Default=YES \\\n  MaxTime=1-00:00:00 State=UP\n\
             DownNodes=n2 State=DOWN\nInclude extra.conf\n",
        );
        write(d.path(), "extra.conf", "MinJobAge=100\n");
        write(
            d.path(),
            "gres.conf",
            "# gpus\nNodeName=n1 Name=gpu File=/dev/nvidia0\n",
        );
        let imp = import(&conf, None, None).unwrap();
        let text = &imp.conf;
        // Unchanged lines stay as written, comments and continuations included.
        assert!(text.contains("# site config\nClusterName=c1\n"), "{text}");
        assert!(
            text.contains(
                "PartitionName=batch Nodes=ALL Default=YES \\\n  MaxTime=1-00:00:00 State=UP\n"
            ),
            "{text}"
        );
        // A node line loses only its unused attribute.
        assert!(
            text.contains("NodeName=n[1-2] CPUs=8 RealMemory=1000 State=UNKNOWN\n"),
            "{text}"
        );
        assert!(
            text.contains("#[import] AccountingStorageHost=dbd\n"),
            "{text}"
        );
        assert!(
            text.contains("#[import] DownNodes=n2 State=DOWN\n"),
            "{text}"
        );
        // Includes are inlined.
        assert!(text.contains("MinJobAge=100\n"), "{text}");
        assert!(
            text.contains("#[import] inlined: Include extra.conf\n"),
            "{text}"
        );
        let d0 = d.path().display();
        assert_eq!(
            imp.dropped,
            vec![
                format!("{d0}/slurm.conf:4: AccountingStorageHost=dbd: {NOT_YET}"),
                format!("{d0}/slurm.conf:6: TmpDisk=5000: {NOT_YET} on NodeName lines"),
                format!(
                    "{d0}/slurm.conf:9: DownNodes=n2 State=DOWN: DownNodes lines are {NOT_YET}"
                ),
            ]
        );
        assert_eq!(imp.gres_conf, Some(d.path().join("gres.conf")));
        // What comes out loads without a single warning.
        let cfg = Config::parse(text, Path::new("x")).unwrap();
        assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
        assert_eq!(cfg.nodes.len(), 2);
    }

    #[test]
    fn unreadable_and_broken_inputs_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let e = import(&d.path().join("nope.conf"), None, None).unwrap_err();
        assert!(e.to_string().starts_with("cannot read"), "{e}");
        let conf = write(
            d.path(),
            "slurm.conf",
            "ClusterName=c\nInclude missing.conf\n",
        );
        let e = import(&conf, None, None).unwrap_err();
        assert!(e.to_string().contains(":2: Include: cannot read"), "{e}");
        let conf = write(d.path(), "bad.conf", "ClusterName c\n");
        let e = import(&conf, None, None).unwrap_err();
        assert!(e.to_string().contains(":1: "), "{e}");
        // A typo is not carried over (gsched would refuse to start on it) but listed.
        let conf = write(
            d.path(),
            "typo.conf",
            "SlurmctldHost=h\nNodeName=n1 CPUs=2\nPartitionName=p Nodes=n1\nMinJobAg=5\n",
        );
        let imp = import(&conf, None, None).unwrap();
        assert!(
            imp.dropped[0].contains("MinJobAg=5: not a setting"),
            "{:?}",
            imp.dropped
        );
        // A cgroup.conf gsched could not read stops the import, in the cgroup parser's words.
        let cg = write(d.path(), "cgroup.conf", "ConstrainCores=yes\nBogusKey=1\n");
        let e = import(&conf, None, Some(&cg)).unwrap_err();
        assert!(e.to_string().contains("cgroup.conf:2"), "{e}");
        write(d.path(), "cgroup.conf", "ConstrainCores=yes\n");
        let imp = import(&conf, None, None).unwrap();
        assert_eq!(imp.cgroup_conf, Some(d.path().join("cgroup.conf")));
    }
}
