//! `--mail-type` and the job events it asks to be told about, as Slurm defines them.
//!
//! Slurm's mail types are flags: `BEGIN`, `END`, `FAIL`, `REQUEUE`, `INVALID_DEPEND`,
//! `STAGE_OUT`, `TIME_LIMIT`, `TIME_LIMIT_90/80/50`, `ARRAY_TASKS`, with `ALL` meaning
//! `BEGIN,END,FAIL,INVALID_DEPEND,REQUEUE,STAGE_OUT` and `NONE` none. The controller sends a
//! notice for each event a job asked for (mail through `MailProg` or SMTP, and webhooks).

use serde::{Deserialize, Serialize};

/// A set of mail types (Slurm's `MAIL_*` flags).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct MailTypes(pub u32);

impl MailTypes {
    pub const BEGIN: u32 = 1;
    pub const END: u32 = 1 << 1;
    pub const FAIL: u32 = 1 << 2;
    pub const REQUEUE: u32 = 1 << 3;
    pub const TIME100: u32 = 1 << 4;
    pub const TIME90: u32 = 1 << 5;
    pub const TIME80: u32 = 1 << 6;
    pub const TIME50: u32 = 1 << 7;
    pub const STAGE_OUT: u32 = 1 << 8;
    pub const ARRAY_TASKS: u32 = 1 << 9;
    pub const INVALID_DEPEND: u32 = 1 << 10;
    /// gsched: a step of the invalid-job ladder (hung or idle-GPU job). Mail about these
    /// steps goes to the job's user whatever `--mail-type` says; webhooks ask for them with
    /// `Events=INVALID_JOB`. Not part of `ALL`, which keeps Slurm's meaning.
    pub const INVALID_JOB: u32 = 1 << 11;
    /// What `ALL` stands for.
    pub const ALL: u32 = Self::BEGIN
        | Self::END
        | Self::FAIL
        | Self::INVALID_DEPEND
        | Self::REQUEUE
        | Self::STAGE_OUT;

    /// The names, in the order Slurm prints them (`scontrol show job`'s `MailType=`).
    const NAMES: &'static [(&'static str, u32)] = &[
        ("INVALID_DEPEND", Self::INVALID_DEPEND),
        ("BEGIN", Self::BEGIN),
        ("END", Self::END),
        ("FAIL", Self::FAIL),
        ("REQUEUE", Self::REQUEUE),
        ("STAGE_OUT", Self::STAGE_OUT),
        ("TIME_LIMIT", Self::TIME100),
        ("TIME_LIMIT_90", Self::TIME90),
        ("TIME_LIMIT_80", Self::TIME80),
        ("TIME_LIMIT_50", Self::TIME50),
        ("ARRAY_TASKS", Self::ARRAY_TASKS),
        ("INVALID_JOB", Self::INVALID_JOB),
    ];

    /// Parses `--mail-type` as Slurm's `parse_mail_type` does: comma-separated words,
    /// case-insensitive; `NONE` ends the list with nothing; words it does not know are passed
    /// over ([`MailTypes::unknown_words`] names them); `None` (Slurm's "Invalid --mail-type
    /// specification") when nothing valid was given.
    pub fn parse(text: &str) -> Option<MailTypes> {
        let mut bits = 0;
        for word in text.split(',') {
            let w = word.trim();
            if w.eq_ignore_ascii_case("NONE") {
                return Some(MailTypes(0));
            } else if w.eq_ignore_ascii_case("ALL") {
                bits |= Self::ALL;
            } else if let Some((_, b)) = Self::NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(w))
            {
                bits |= b;
            }
        }
        (bits != 0).then_some(MailTypes(bits))
    }

    /// The words of `text` that are not mail types (before any `NONE`).
    pub fn unknown_words(text: &str) -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .take_while(|w| !w.eq_ignore_ascii_case("NONE"))
            .filter(|w| {
                !w.eq_ignore_ascii_case("ALL")
                    && !Self::NAMES.iter().any(|(n, _)| n.eq_ignore_ascii_case(w))
            })
            .map(str::to_string)
            .collect()
    }

    pub fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// `BEGIN,END,...` (`NONE` when empty), as `scontrol show job` prints `MailType=`.
    pub fn names(self) -> String {
        if self.0 == 0 {
            return "NONE".into();
        }
        Self::NAMES
            .iter()
            .filter(|(_, b)| self.0 & b != 0)
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// One job event a notice is sent for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MailEvent {
    Begin,
    End,
    Fail,
    Requeue,
    InvalidDepend,
    /// Reached the time limit.
    Time100,
    Time90,
    Time80,
    Time50,
    /// A step of the invalid-job ladder (gsched).
    InvalidJob,
}

impl MailEvent {
    /// The flag that asks for this event.
    pub fn flag(self) -> u32 {
        match self {
            MailEvent::Begin => MailTypes::BEGIN,
            MailEvent::End => MailTypes::END,
            MailEvent::Fail => MailTypes::FAIL,
            MailEvent::Requeue => MailTypes::REQUEUE,
            MailEvent::InvalidDepend => MailTypes::INVALID_DEPEND,
            MailEvent::Time100 => MailTypes::TIME100,
            MailEvent::Time90 => MailTypes::TIME90,
            MailEvent::Time80 => MailTypes::TIME80,
            MailEvent::Time50 => MailTypes::TIME50,
            MailEvent::InvalidJob => MailTypes::INVALID_JOB,
        }
    }

    /// Slurm's words for it in the mail subject (`SLURM_JOB_MAIL_TYPE`).
    pub fn words(self) -> &'static str {
        match self {
            MailEvent::Begin => "Began",
            MailEvent::End => "Ended",
            MailEvent::Fail => "Failed",
            MailEvent::Requeue => "Requeued",
            MailEvent::InvalidDepend => "Invalid dependency",
            MailEvent::Time100 => "Reached time limit",
            MailEvent::Time90 => "Reached 90% of time limit",
            MailEvent::Time80 => "Reached 80% of time limit",
            MailEvent::Time50 => "Reached 50% of time limit",
            MailEvent::InvalidJob => "Flagged by the invalid-job policy",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print_like_slurm() {
        let m = MailTypes::parse("begin,END").unwrap();
        assert!(m.has(MailTypes::BEGIN) && m.has(MailTypes::END) && !m.has(MailTypes::FAIL));
        assert_eq!(m.names(), "BEGIN,END");
        assert_eq!(
            MailTypes::parse("ALL").unwrap().names(),
            "INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT"
        );
        assert_eq!(
            MailTypes::parse("TIME_LIMIT_80,ARRAY_TASKS")
                .unwrap()
                .names(),
            "TIME_LIMIT_80,ARRAY_TASKS"
        );
        assert_eq!(MailTypes::parse("END,NONE").unwrap(), MailTypes(0));
        assert_eq!(MailTypes::parse("NONE,END").unwrap(), MailTypes(0));
        assert_eq!(MailTypes::parse("NONE").unwrap().names(), "NONE");
        // As Slurm: unknown words are passed over; nothing valid is an error.
        assert_eq!(MailTypes::parse("END,bogus").unwrap().names(), "END");
        assert_eq!(MailTypes::unknown_words("END,bogus,none,x"), ["bogus"]);
        assert_eq!(MailTypes::parse("bogus"), None);
        assert_eq!(MailTypes::parse(""), None);
    }
}
