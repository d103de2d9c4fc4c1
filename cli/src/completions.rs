//! Shell completions (bash, zsh, fish) for the commands, made from the very option tables
//! their parsers use, so a completion can only offer what the command accepts.
//!
//! The commands parse with our own `getopt_long` work-alike rather than clap, so clap_complete
//! cannot see them; these generators are the small equivalent. `cargo run -p gsched-xtask --
//! completions` writes the scripts under `packaging/completions/`, and
//! `tests/tests/completions.rs` fails when the committed ones drift and drives the bash ones.
//! Each script also completes the Slurm name of its command (`sbatch` for `gsbatch`).
//! Values that only the cluster knows (partitions, nodes, job ids) are asked of the cluster
//! with `gsinfo`/`gsqueue` when the user presses TAB.

use crate::getopt::{HasArg, Opt};

/// What the values of an option (or a command's operands) are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// Free text: nothing to offer.
    Free,
    Files,
    Dirs,
    Partitions,
    Nodes,
    Users,
    /// The caller's own job ids.
    Jobs,
    Signals,
    JobStates,
    NodeStates,
    /// A fixed list of words.
    Words(&'static [&'static str]),
}

/// One command: its name, Slurm's name for it, its option table, its operands.
pub struct Command {
    pub name: &'static str,
    pub slurm: &'static str,
    pub options: &'static [Opt],
    pub operands: Values,
}

/// `scontrol`'s first words that gsched implements.
const SCONTROL_WORDS: &[&str] = &[
    "show",
    "hold",
    "uhold",
    "release",
    "requeue",
    "update",
    "ping",
    "version",
    "import-slurm-conf",
    "create",
    "delete",
    "reboot",
    "reservation",
];

pub const COMMANDS: &[Command] = &[
    Command {
        name: "gsbatch",
        slurm: "sbatch",
        options: crate::sbatch::OPTIONS,
        operands: Values::Files,
    },
    Command {
        name: "gsqueue",
        slurm: "squeue",
        options: crate::squeue::OPTIONS,
        operands: Values::Free,
    },
    Command {
        name: "gscancel",
        slurm: "scancel",
        options: crate::scancel::OPTIONS,
        operands: Values::Jobs,
    },
    Command {
        name: "gsinfo",
        slurm: "sinfo",
        options: crate::sinfo::OPTIONS,
        operands: Values::Free,
    },
    Command {
        name: "gscontrol",
        slurm: "scontrol",
        options: crate::scontrol::OPTIONS,
        operands: Values::Words(SCONTROL_WORDS),
    },
    Command {
        name: "gsacct",
        slurm: "sacct",
        options: crate::sacct::OPTIONS,
        operands: Values::Free,
    },
    Command {
        name: "gsacctmgr",
        slurm: "sacctmgr",
        options: crate::sacctmgr::OPTIONS,
        operands: Values::Words(SACCTMGR_WORDS),
    },
    Command {
        name: "gsprio",
        slurm: "sprio",
        options: crate::sprio::OPTIONS,
        operands: Values::Free,
    },
    Command {
        name: "gseff",
        slurm: "seff",
        options: crate::seff::OPTIONS,
        operands: Values::Free,
    },
    Command {
        name: "gsrun",
        slurm: "srun",
        options: crate::srun::OPTIONS,
        operands: Values::Files,
    },
    Command {
        name: "gsstat",
        slurm: "sstat",
        options: crate::sstat::OPTIONS,
        operands: Values::Jobs,
    },
    Command {
        name: "gsshare",
        slurm: "sshare",
        options: crate::sshare::OPTIONS,
        operands: Values::Free,
    },
];

/// `sacctmgr`'s commands and entities that gsched implements.
const SACCTMGR_WORDS: &[&str] = &[
    "add",
    "create",
    "modify",
    "update",
    "delete",
    "remove",
    "show",
    "list",
    "account",
    "user",
    "qos",
    "association",
];

const SIGNALS: &str = "HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP";
const JOB_STATES: &str = "PENDING RUNNING SUSPENDED COMPLETING COMPLETED CANCELLED FAILED \
                          TIMEOUT NODE_FAIL PREEMPTED BOOT_FAIL DEADLINE OUT_OF_MEMORY all";
const NODE_STATES: &str = "ALLOC IDLE MIX DOWN DRAIN DRAINED DRAINING RESERVED";

/// What the values of option `o` of `cmd` are.
pub fn values_of(cmd: &str, o: &Opt) -> Values {
    match o.id {
        "chdir" | "workdir" => Values::Dirs,
        "output" | "error" | "input" | "export-file" => Values::Files,
        "partition" | "partitions" => Values::Partitions,
        "nodelist" | "exclude" => Values::Nodes,
        "user" | "users" | "uid" => Values::Users,
        "jobs" | "jobid" => Values::Jobs,
        "signal" => Values::Signals,
        "state" | "states" if cmd == "gsinfo" => Values::NodeStates,
        "state" | "states" => Values::JobStates,
        _ => Values::Free,
    }
}

/// A shell word list for the values, or the command that prints them (one per line).
fn dynamic(v: Values) -> Option<&'static str> {
    match v {
        Values::Partitions => Some("gsinfo -h -o %R 2>/dev/null"),
        Values::Nodes => Some("gsinfo -h -N -o %N 2>/dev/null | sort -u"),
        Values::Jobs => Some("gsqueue -h --me -o %i 2>/dev/null"),
        _ => None,
    }
}

fn words(v: Values) -> Option<String> {
    match v {
        Values::Signals => Some(SIGNALS.to_string()),
        Values::JobStates => Some(JOB_STATES.to_string()),
        Values::NodeStates => Some(NODE_STATES.to_string()),
        Values::Words(w) => Some(w.join(" ")),
        _ => None,
    }
}

fn fn_name(cmd: &Command) -> String {
    format!("_gsched_{}", cmd.name)
}

/// The bash completion of `cmd` (`complete -F` for its name and Slurm's).
pub fn bash(cmd: &Command) -> String {
    let mut s = format!(
        "# bash completion for {} ({}), generated by `cargo run -p gsched-xtask -- completions`\n\
         # from the command's option table: do not edit.\n\n",
        cmd.name, cmd.slurm
    );
    s.push_str(&format!("{}_values() {{\n", fn_name(cmd)));
    s.push_str("    # $1: the option, $2: the word typed so far\n    case \"$1\" in\n");
    let mut arms: Vec<(Values, Vec<String>)> = Vec::new();
    for o in cmd.options.iter().filter(|o| o.arg != HasArg::No) {
        let v = values_of(cmd.name, o);
        let mut spellings: Vec<String> = o.long.iter().map(|l| format!("--{l}")).collect();
        if let Some(c) = o.short {
            spellings.insert(0, format!("-{c}"));
        }
        match arms.iter_mut().find(|(av, _)| *av == v) {
            Some((_, sp)) => sp.extend(spellings),
            None => arms.push((v, spellings)),
        }
    }
    for (v, spellings) in &arms {
        let body = bash_values(*v);
        s.push_str(&format!(
            "        {})\n            {body}\n            ;;\n",
            spellings.join("|")
        ));
    }
    s.push_str("        *) return 1 ;;\n    esac\n    return 0\n}\n\n");
    let mut opts: Vec<String> = Vec::new();
    for o in cmd.options {
        if let Some(c) = o.short {
            opts.push(format!("-{c}"));
        }
        for l in o.long {
            opts.push(match o.arg {
                HasArg::No => format!("--{l}"),
                _ => format!("--{l}="),
            });
        }
    }
    s.push_str(&format!("{}() {{\n", fn_name(cmd)));
    s.push_str(
        "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n",
    );
    s.push_str("    COMPREPLY=()\n");
    s.push_str("    # --opt=value: bash splits at '=' (COMP_WORDBREAKS), so the option is two words back.\n");
    s.push_str("    if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then\n");
    s.push_str(&format!(
        "        {}_values \"${{COMP_WORDS[COMP_CWORD-2]}}\" \"$cur\"\n        return\n    fi\n",
        fn_name(cmd)
    ));
    s.push_str("    if [[ $cur == --*=* ]]; then\n");
    s.push_str(&format!(
        "        {}_values \"${{cur%%=*}}\" \"${{cur#*=}}\"\n        return\n    fi\n",
        fn_name(cmd)
    ));
    s.push_str(&format!(
        "    if [[ $prev == -* && $cur != -* ]] && {}_values \"$prev\" \"$cur\"; then\n        return\n    fi\n",
        fn_name(cmd)
    ));
    s.push_str("    if [[ $cur == -* ]]; then\n");
    s.push_str(&format!(
        "        COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))\n",
        opts.join(" ")
    ));
    s.push_str("        [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null\n");
    s.push_str("        return\n    fi\n");
    let operand = match cmd.operands {
        Values::Free => String::new(),
        v => format!(
            "    local word=\"$cur\"\n    {}\n",
            bash_values(v).replace("$2", "$word")
        ),
    };
    s.push_str(&operand);
    s.push_str("}\n");
    s.push_str(&format!(
        "complete -F {} {} {}\n",
        fn_name(cmd),
        cmd.name,
        cmd.slurm
    ));
    s
}

/// Sets COMPREPLY to the values matching `$2`.
fn bash_values(v: Values) -> String {
    match v {
        Values::Free => "COMPREPLY=()".to_string(),
        Values::Files => "COMPREPLY=($(compgen -f -- \"$2\"))".to_string(),
        Values::Dirs => "COMPREPLY=($(compgen -d -- \"$2\"))".to_string(),
        Values::Users => "COMPREPLY=($(compgen -u -- \"$2\"))".to_string(),
        v => match (dynamic(v), words(v)) {
            (Some(cmd), _) => format!("COMPREPLY=($(compgen -W \"$({cmd})\" -- \"$2\"))"),
            (None, Some(w)) => format!("COMPREPLY=($(compgen -W \"{w}\" -- \"$2\"))"),
            (None, None) => "COMPREPLY=()".to_string(),
        },
    }
}

/// zsh's action for the values.
fn zsh_action(v: Values) -> String {
    match v {
        Values::Free => " ".to_string(),
        Values::Files => "_files".to_string(),
        Values::Dirs => "_files -/".to_string(),
        Values::Users => "_users".to_string(),
        v => match (dynamic(v), words(v)) {
            (Some(cmd), _) => format!("{{compadd -- ${{(f)\"$({cmd})\"}}}}"),
            (None, Some(w)) => format!("({w})"),
            (None, None) => " ".to_string(),
        },
    }
}

/// The zsh completion of `cmd` (`#compdef` for its name and Slurm's).
pub fn zsh(cmd: &Command) -> String {
    let mut s = format!(
        "#compdef {} {}\n# zsh completion for {}, generated by `cargo run -p gsched-xtask -- completions`\n\
         # from the command's option table: do not edit.\n\n",
        cmd.name, cmd.slurm, cmd.name
    );
    s.push_str("_arguments -s -S \\\n");
    for o in cmd.options {
        let v = values_of(cmd.name, o);
        let what = o.id.replace(['[', ']', ':', '\''], "");
        let tail = match o.arg {
            HasArg::No => String::new(),
            HasArg::Required => format!(":{what}:{}", zsh_action(v)),
            HasArg::Optional => format!("::{what}:{}", zsh_action(v)),
        };
        if let Some(c) = o.short {
            let flag = match o.arg {
                HasArg::No => format!("-{c}"),
                HasArg::Required => format!("-{c}+"),
                HasArg::Optional => format!("-{c}-"),
            };
            s.push_str(&format!("  '{flag}[{what}]{tail}' \\\n"));
        }
        for l in o.long {
            let flag = match o.arg {
                HasArg::No => format!("--{l}"),
                _ => format!("--{l}="),
            };
            s.push_str(&format!("  '{flag}[{what}]{tail}' \\\n"));
        }
    }
    match cmd.operands {
        Values::Free => s.push_str("  '*::argument: '\n"),
        v => s.push_str(&format!("  '*::argument:{}'\n", zsh_action(v))),
    }
    s
}

/// The fish completion of `cmd` (its name and Slurm's, in one `complete` per option).
pub fn fish(cmd: &Command) -> String {
    let mut s = format!(
        "# fish completion for {} ({}), generated by `cargo run -p gsched-xtask -- completions`\n\
         # from the command's option table: do not edit.\n\n",
        cmd.name, cmd.slurm
    );
    let names = format!("-c {} -c {}", cmd.name, cmd.slurm);
    match cmd.operands {
        Values::Files => {}
        Values::Free => s.push_str(&format!("complete {names} -f\n")),
        v => s.push_str(&format!("complete {names} -f -a {}\n", fish_args(v))),
    }
    for o in cmd.options {
        let mut line = format!("complete {names}");
        if let Some(c) = o.short {
            line.push_str(&format!(" -s {c}"));
        }
        for l in o.long {
            line.push_str(&format!(" -l {l}"));
        }
        if o.arg != HasArg::No {
            line.push_str(" -r");
            match values_of(cmd.name, o) {
                Values::Files | Values::Dirs => line.push_str(" -F"),
                Values::Free => line.push_str(" -f"),
                v => line.push_str(&format!(" -f -a {}", fish_args(v))),
            }
        }
        line.push_str(&format!(" -d '{}'\n", o.id.replace('\'', "")));
        s.push_str(&line);
    }
    s
}

fn fish_args(v: Values) -> String {
    match v {
        Values::Users => "'(__fish_complete_users)'".to_string(),
        v => match (dynamic(v), words(v)) {
            (Some(cmd), _) => format!("'({cmd})'"),
            (None, Some(w)) => format!("'{w}'"),
            (None, None) => "''".to_string(),
        },
    }
}

/// Every script: (path under `packaging/completions/`, text).
pub fn scripts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in COMMANDS {
        out.push((format!("bash/{}", c.name), bash(c)));
        out.push((format!("zsh/_{}", c.name), zsh(c)));
        out.push((format!("fish/{}.fish", c.name), fish(c)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_of_every_command_is_offered() {
        for c in COMMANDS {
            let b = bash(c);
            let f = fish(c);
            for o in c.options {
                for l in o.long {
                    assert!(
                        b.contains(&format!(" --{l}")),
                        "{} --{l} not in bash",
                        c.name
                    );
                    assert!(
                        f.contains(&format!(" -l {l}")),
                        "{} --{l} not in fish",
                        c.name
                    );
                }
            }
            assert!(b.contains(&format!(
                "complete -F _gsched_{} {} {}",
                c.name, c.name, c.slurm
            )));
        }
    }

    #[test]
    fn values_follow_the_option() {
        let sbatch = COMMANDS.iter().find(|c| c.name == "gsbatch").unwrap();
        let b = bash(sbatch);
        assert!(b.contains("-p|--partition"), "{b}");
        assert!(b.contains("gsinfo -h -o %R"));
        let sinfo = COMMANDS.iter().find(|c| c.name == "gsinfo").unwrap();
        assert!(bash(sinfo).contains("DRAIN"));
    }
}
