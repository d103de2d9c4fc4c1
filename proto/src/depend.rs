//! `--dependency` specifications: `type:id[+min][:id...]` items joined by `,` (all must be
//! satisfied) or `?` (any one suffices), never both. Types: `after`, `afterany` (the default
//! when only ids are given), `afterok`, `afternotok`, `aftercorr`, `singleton`.
//! The controller evaluates them (see `gsched-ctld`'s `depend` module).

use crate::job::JobId;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DepKind {
    /// After the target started (or was cancelled), plus an optional delay.
    After,
    /// After the target ended, however.
    AfterAny,
    /// After the target completed with exit code 0.
    AfterOk,
    /// After the target failed (non-zero exit, signal, timeout, node failure, cancel).
    AfterNotOk,
    /// Array task K after task K of another array completed successfully.
    AfterCorr,
    /// After every earlier job of the same name and user ended.
    Singleton,
}

impl DepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DepKind::After => "after",
            DepKind::AfterAny => "afterany",
            DepKind::AfterOk => "afterok",
            DepKind::AfterNotOk => "afternotok",
            DepKind::AfterCorr => "aftercorr",
            DepKind::Singleton => "singleton",
        }
    }
}

/// One target of a dependency item: a job id and a delay in minutes (`id+min`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DepTarget {
    pub job_id: JobId,
    pub delay_min: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepItem {
    pub kind: DepKind,
    /// Empty for `singleton`.
    pub targets: Vec<DepTarget>,
}

/// A parsed `--dependency` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependencySpec {
    /// `?`-joined: any item suffices; otherwise all must be satisfied.
    pub any: bool,
    pub items: Vec<DepItem>,
}

/// Why a dependency was refused (the submission fails with `Job dependency problem`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid dependency \"{input}\": {reason}")]
pub struct DependencyError {
    pub input: String,
    pub reason: String,
}

impl DependencySpec {
    /// Parses a `--dependency` value. An empty value is an error (callers treat "no
    /// dependency" as `None`).
    pub fn parse(input: &str) -> Result<DependencySpec, DependencyError> {
        let err = |reason: &str| DependencyError {
            input: input.to_string(),
            reason: reason.to_string(),
        };
        let s = input.trim();
        if s.is_empty() {
            return Err(err("the dependency list is empty"));
        }
        let (has_all, has_any) = (s.contains(','), s.contains('?'));
        if has_all && has_any {
            return Err(err(
                "use either ',' (all) or '?' (any) between dependencies, not both",
            ));
        }
        let sep = if has_any { '?' } else { ',' };
        let mut items = Vec::new();
        for part in s.split(sep) {
            let part = part.trim();
            if part.is_empty() {
                return Err(err("empty dependency between separators"));
            }
            if part.eq_ignore_ascii_case("singleton") {
                items.push(DepItem {
                    kind: DepKind::Singleton,
                    targets: Vec::new(),
                });
                continue;
            }
            let mut fields = part.split(':');
            let first = fields.next().unwrap_or_default();
            let (kind, ids): (DepKind, Vec<&str>) = if first
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_digit())
            {
                (DepKind::AfterAny, part.split(':').collect())
            } else {
                let kind = match first.to_ascii_lowercase().as_str() {
                        "after" => DepKind::After,
                        "afterany" => DepKind::AfterAny,
                        "afterok" => DepKind::AfterOk,
                        "afternotok" => DepKind::AfterNotOk,
                        "aftercorr" => DepKind::AfterCorr,
                        "afterburstbuffer" => {
                            return Err(err("afterburstbuffer needs burst buffers, which gsched does not have"))
                        }
                        _ => return Err(err(&format!("unknown dependency type \"{first}\"; use after, afterany, afterok, afternotok, aftercorr or singleton"))),
                    };
                (kind, fields.collect())
            };
            if ids.is_empty() {
                return Err(err(&format!("{} needs at least one job id", kind.as_str())));
            }
            let mut targets = Vec::new();
            for id in ids {
                let (num, delay) = match id.split_once('+') {
                    Some((n, d)) => (n, Some(d)),
                    None => (id, None),
                };
                let job_id: JobId = num
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| err(&format!("\"{id}\" is not a job id")))?;
                let delay_min = match delay {
                    None => 0,
                    Some(d) => d
                        .parse()
                        .map_err(|_| err(&format!("\"{id}\": the delay must be whole minutes")))?,
                };
                targets.push(DepTarget { job_id, delay_min });
            }
            items.push(DepItem { kind, targets });
        }
        Ok(DependencySpec {
            any: has_any,
            items,
        })
    }
}

impl fmt::Display for DependencySpec {
    /// The canonical form (`afterok:12:13,singleton`), as `Dependency=` shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sep = if self.any { "?" } else { "," };
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(sep)?;
            }
            f.write_str(item.kind.as_str())?;
            for t in &item.targets {
                write!(f, ":{}", t.job_id)?;
                if t.delay_min > 0 {
                    write!(f, "+{}", t.delay_min)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(job_id: JobId) -> DepTarget {
        DepTarget {
            job_id,
            delay_min: 0,
        }
    }

    #[test]
    fn parses_lists_and_separators() {
        let d = DependencySpec::parse("afterok:12:13,afternotok:14").unwrap();
        assert!(!d.any);
        assert_eq!(d.items.len(), 2);
        assert_eq!(d.items[0].kind, DepKind::AfterOk);
        assert_eq!(d.items[0].targets, vec![t(12), t(13)]);
        assert_eq!(d.to_string(), "afterok:12:13,afternotok:14");
        let d = DependencySpec::parse("afterany:3?singleton").unwrap();
        assert!(d.any);
        assert_eq!(d.items[1].kind, DepKind::Singleton);
        assert_eq!(d.to_string(), "afterany:3?singleton");
        // Bare ids mean afterany.
        let d = DependencySpec::parse("7:8").unwrap();
        assert_eq!(d.items[0].kind, DepKind::AfterAny);
        assert_eq!(d.to_string(), "afterany:7:8");
        let d = DependencySpec::parse("after:5+10").unwrap();
        assert_eq!(
            d.items[0].targets,
            vec![DepTarget {
                job_id: 5,
                delay_min: 10
            }]
        );
        assert_eq!(d.to_string(), "after:5+10");
        assert_eq!(
            DependencySpec::parse("AfterOK:1").unwrap().items[0].kind,
            DepKind::AfterOk
        );
    }

    #[test]
    fn refuses_bad_specs() {
        for bad in [
            "",
            "afterok",
            "afterok:",
            "afterok:x",
            "afterok:1,afterany:2?afterok:3",
            "before:1",
            "afterok:1,,afterok:2",
            "after:1+x",
            "afterok:0",
            "afterburstbuffer:1",
        ] {
            assert!(DependencySpec::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
