//! A GNU `getopt_long` work-alike.
//!
//! Slurm's commands parse their command lines (and sbatch its `#SBATCH` lines) with glibc's
//! `getopt_long`, and scripts rely on its details: short options clustered (`-hv`), values
//! attached (`-N2`, `--nodes=2`) or separate (`-N 2`, `--nodes 2`), optional arguments only
//! attached, unambiguous prefixes of long options (`--part=debug`), permutation of options
//! and operands (`scancel 12 --signal USR1`) unless the option string starts with `+`, and
//! `--` ending the options. Error messages follow glibc's wording so that `gsbatch --foo`
//! prints what `sbatch --foo` prints.

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HasArg {
    No,
    Required,
    /// Only attached: `-kVALUE`, `--opt=VALUE`.
    Optional,
}

/// One option: its canonical id (usually the long name), its short letter, its long names.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    pub id: &'static str,
    pub short: Option<char>,
    pub long: &'static [&'static str],
    pub arg: HasArg,
}

impl Opt {
    pub const fn new(
        id: &'static str,
        short: Option<char>,
        long: &'static [&'static str],
        arg: HasArg,
    ) -> Opt {
        Opt {
            id,
            short,
            long,
            arg,
        }
    }
}

/// A parsed command-line element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// An option: its id, its value, and how it was spelled (`-N`, `--nodes`).
    Opt {
        id: &'static str,
        arg: Option<String>,
        spelled: String,
    },
    /// An operand (non-option argument).
    Operand(String),
}

/// A command-line error, worded like glibc's `getopt_long`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetoptError {
    /// `--foo` (the whole argument after `--`, including `=value`).
    Unrecognized(String),
    /// `-x`.
    InvalidShort(char),
    /// `--par` matching several options.
    Ambiguous {
        given: String,
        candidates: Vec<String>,
    },
    /// `-N` at the end.
    ShortNeedsArg(char),
    /// `--nodes` at the end.
    LongNeedsArg(String),
    /// `--hold=yes`.
    LongNoArg(String),
}

impl GetoptError {
    /// The message glibc prints (without the trailing newline), `prog` being argv[0].
    pub fn message(&self, prog: &str) -> String {
        match self {
            GetoptError::Unrecognized(s) => format!("{prog}: unrecognized option '--{s}'"),
            GetoptError::InvalidShort(c) => format!("{prog}: invalid option -- '{c}'"),
            GetoptError::Ambiguous { given, candidates } => {
                let mut m = format!("{prog}: option '--{given}' is ambiguous; possibilities:");
                for c in candidates {
                    m.push_str(&format!(" '--{c}'"));
                }
                m
            }
            GetoptError::ShortNeedsArg(c) => {
                format!("{prog}: option requires an argument -- '{c}'")
            }
            GetoptError::LongNeedsArg(n) => format!("{prog}: option '--{n}' requires an argument"),
            GetoptError::LongNoArg(n) => {
                format!("{prog}: option '--{n}' doesn't allow an argument")
            }
        }
    }
}

/// How operands and options may mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// GNU default: options may follow operands (unless `POSIXLY_CORRECT` is set).
    Permute,
    /// `+` in the option string: the first operand ends the options; the rest are operands.
    RequireOrder,
}

/// Parses `args` (without argv[0]). On success returns the items in command-line order
/// (with `Permute`, operands keep their relative order among themselves but options are
/// reported where they appear).
pub fn parse(args: &[String], opts: &[Opt], ordering: Ordering) -> Result<Vec<Item>, GetoptError> {
    let (items, err) = parse_partial(args, opts, ordering);
    match err {
        Some(e) => Err(e),
        None => Ok(items),
    }
}

/// Like [`parse`], but returns the items parsed before an error too, so that a command can
/// act on options in order (`--help --bogus` prints the help, as with getopt's loop).
pub fn parse_partial(
    args: &[String],
    opts: &[Opt],
    ordering: Ordering,
) -> (Vec<Item>, Option<GetoptError>) {
    let mut out = Vec::new();
    let err = parse_into(args, opts, ordering, &mut out).err();
    (out, err)
}

/// A command line with its options and operands apart (see [`parse_split`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The options (id and value), in command-line order.
    pub opts: Vec<(&'static str, Option<String>)>,
    /// The operands, in command-line order.
    pub operands: Vec<String>,
    /// The error that stopped the parse.
    pub err: Option<GetoptError>,
}

/// [`parse_partial`] with the options and operands apart: the commands act on the options
/// in order and look at the operands afterwards.
pub fn parse_split(args: &[String], opts: &[Opt], ordering: Ordering) -> Split {
    let (items, err) = parse_partial(args, opts, ordering);
    let mut split = Split {
        err,
        ..Split::default()
    };
    for it in items {
        match it {
            Item::Opt { id, arg, .. } => split.opts.push((id, arg)),
            Item::Operand(o) => split.operands.push(o),
        }
    }
    split
}

fn parse_into(
    args: &[String],
    opts: &[Opt],
    ordering: Ordering,
    out: &mut Vec<Item>,
) -> Result<(), GetoptError> {
    let ordering = if ordering == Ordering::Permute && std::env::var_os("POSIXLY_CORRECT").is_some()
    {
        Ordering::RequireOrder
    } else {
        ordering
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            out.extend(args[i..].iter().cloned().map(Item::Operand));
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let opt = find_long(opts, name, body)?;
            let canonical = opt
                .long
                .iter()
                .find(|l| **l == name)
                .copied()
                .unwrap_or_else(|| {
                    // Prefix match: glibc names the option by the matched entry's name.
                    opt.long
                        .iter()
                        .find(|l| l.starts_with(name))
                        .copied()
                        .unwrap_or(opt.id)
                });
            let arg = match opt.arg {
                HasArg::No => {
                    if attached.is_some() {
                        return Err(GetoptError::LongNoArg(canonical.to_string()));
                    }
                    None
                }
                HasArg::Optional => attached,
                HasArg::Required => match attached {
                    Some(v) => Some(v),
                    None => {
                        if i < args.len() {
                            i += 1;
                            Some(args[i - 1].clone())
                        } else {
                            return Err(GetoptError::LongNeedsArg(canonical.to_string()));
                        }
                    }
                },
            };
            out.push(Item::Opt {
                id: opt.id,
                arg,
                spelled: format!("--{canonical}"),
            });
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let opt = opts
                    .iter()
                    .find(|o| o.short == Some(c))
                    .ok_or(GetoptError::InvalidShort(c))?;
                let rest: String = chars[j..].iter().collect();
                let arg = match opt.arg {
                    HasArg::No => None,
                    HasArg::Optional => {
                        j = chars.len();
                        if rest.is_empty() {
                            None
                        } else {
                            Some(rest)
                        }
                    }
                    HasArg::Required => {
                        j = chars.len();
                        if !rest.is_empty() {
                            Some(rest)
                        } else if i < args.len() {
                            i += 1;
                            Some(args[i - 1].clone())
                        } else {
                            return Err(GetoptError::ShortNeedsArg(c));
                        }
                    }
                };
                out.push(Item::Opt {
                    id: opt.id,
                    arg,
                    spelled: format!("-{c}"),
                });
            }
            continue;
        }
        // An operand ("-" alone is one too).
        out.push(Item::Operand(a.clone()));
        if ordering == Ordering::RequireOrder {
            out.extend(args[i..].iter().cloned().map(Item::Operand));
            break;
        }
    }
    Ok(())
}

/// Finds a long option by exact name or unambiguous prefix, as glibc does: several
/// prefix matches are fine when they all denote the same option with the same argument
/// kind.
fn find_long<'a>(opts: &'a [Opt], name: &str, body: &str) -> Result<&'a Opt, GetoptError> {
    if name.is_empty() {
        return Err(GetoptError::Unrecognized(body.to_string()));
    }
    for o in opts {
        if o.long.contains(&name) {
            return Ok(o);
        }
    }
    let mut found: Option<&Opt> = None;
    let mut candidates = Vec::new();
    let mut ambiguous = false;
    for o in opts {
        for l in o.long {
            if l.starts_with(name) {
                candidates.push(l.to_string());
                match found {
                    None => found = Some(o),
                    Some(f) if f.id == o.id && f.arg == o.arg => {}
                    Some(_) => ambiguous = true,
                }
            }
        }
    }
    if ambiguous {
        return Err(GetoptError::Ambiguous {
            given: name.to_string(),
            candidates,
        });
    }
    found.ok_or_else(|| GetoptError::Unrecognized(body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
        Opt::new("nodes", Some('N'), &["nodes"], HasArg::Required),
        Opt::new("ntasks", Some('n'), &["ntasks"], HasArg::Required),
        Opt::new("hold", Some('H'), &["hold"], HasArg::No),
        Opt::new("verbose", Some('v'), &["verbose"], HasArg::No),
        Opt::new("partition", Some('p'), &["partition"], HasArg::Required),
        Opt::new("parsable", None, &["parsable"], HasArg::No),
        Opt::new("no-kill", Some('k'), &["no-kill"], HasArg::Optional),
        Opt::new("user", Some('u'), &["user", "users"], HasArg::Required),
    ];

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn opt(id: &'static str, arg: Option<&str>, spelled: &str) -> Item {
        Item::Opt {
            id,
            arg: arg.map(str::to_string),
            spelled: spelled.into(),
        }
    }

    #[test]
    fn short_forms() {
        let r = parse(&s(&["-N2", "-n", "4", "-Hv"]), OPTS, Ordering::Permute).unwrap();
        assert_eq!(
            r,
            vec![
                opt("nodes", Some("2"), "-N"),
                opt("ntasks", Some("4"), "-n"),
                opt("hold", None, "-H"),
                opt("verbose", None, "-v"),
            ]
        );
        let r = parse(&s(&["-vN", "3"]), OPTS, Ordering::Permute).unwrap();
        assert_eq!(r[1], opt("nodes", Some("3"), "-N"));
        assert_eq!(
            parse(&s(&["-k"]), OPTS, Ordering::Permute).unwrap(),
            vec![opt("no-kill", None, "-k")]
        );
        assert_eq!(
            parse(&s(&["-k", "x"]), OPTS, Ordering::Permute).unwrap()[1],
            Item::Operand("x".into())
        );
    }

    #[test]
    fn long_forms_and_prefixes() {
        let r = parse(
            &s(&["--nodes=2", "--ntasks", "3", "--ho", "--partit=a"]),
            OPTS,
            Ordering::Permute,
        )
        .unwrap();
        assert_eq!(
            r,
            vec![
                opt("nodes", Some("2"), "--nodes"),
                opt("ntasks", Some("3"), "--ntasks"),
                opt("hold", None, "--hold"),
                opt("partition", Some("a"), "--partition"),
            ]
        );
        // "--n" matches nodes, ntasks, no-kill: ambiguous.
        let e = parse(&s(&["--n=1"]), OPTS, Ordering::Permute).unwrap_err();
        assert_eq!(
            e.message("sbatch"),
            "sbatch: option '--n' is ambiguous; possibilities: '--nodes' '--ntasks' '--no-kill'"
        );
        // "--use" matches user and users of the same option: not ambiguous.
        assert_eq!(
            parse(&s(&["--use", "bob"]), OPTS, Ordering::Permute).unwrap()[0],
            opt("user", Some("bob"), "--user")
        );
        // --par: partition and parsable.
        assert!(matches!(
            parse(&s(&["--par"]), OPTS, Ordering::Permute),
            Err(GetoptError::Ambiguous { .. })
        ));
    }

    #[test]
    fn errors_read_like_glibc() {
        let m = |v: &[&str]| {
            parse(&s(v), OPTS, Ordering::Permute)
                .unwrap_err()
                .message("squeue")
        };
        assert_eq!(m(&["--foo"]), "squeue: unrecognized option '--foo'");
        assert_eq!(m(&["--foo=bar"]), "squeue: unrecognized option '--foo=bar'");
        assert_eq!(m(&["-x"]), "squeue: invalid option -- 'x'");
        assert_eq!(m(&["-N"]), "squeue: option requires an argument -- 'N'");
        assert_eq!(
            m(&["--nodes"]),
            "squeue: option '--nodes' requires an argument"
        );
        assert_eq!(
            m(&["--hold=1"]),
            "squeue: option '--hold' doesn't allow an argument"
        );
    }

    #[test]
    fn ordering() {
        let r = parse(&s(&["12", "-v", "--", "-H"]), OPTS, Ordering::Permute).unwrap();
        assert_eq!(
            r,
            vec![
                Item::Operand("12".into()),
                opt("verbose", None, "-v"),
                Item::Operand("-H".into())
            ]
        );
        let r = parse(&s(&["-v", "job.sh", "-H"]), OPTS, Ordering::RequireOrder).unwrap();
        assert_eq!(
            r,
            vec![
                opt("verbose", None, "-v"),
                Item::Operand("job.sh".into()),
                Item::Operand("-H".into())
            ]
        );
        let r = parse(&s(&["-"]), OPTS, Ordering::Permute).unwrap();
        assert_eq!(r, vec![Item::Operand("-".into())]);
    }
}
