//! Slurm hostlist expressions (`n[01-10,12]`, `rack[1-2]-n[1-3]`).
//!
//! Slurm writes sets of host names in a compact "hostlist" form everywhere: in
//! `slurm.conf` (`NodeName=`, `Nodes=`, `NodeAddr=`), on the command line
//! (`-w/--nodelist`, `-x/--exclude`), in job environments (`SLURM_JOB_NODELIST`) and in
//! command output (`squeue %N`, `scontrol show hostlist`). Clients such as submitit and
//! Lightning expand these strings themselves, so gsched must produce exactly the forms
//! Slurm produces and accept everything Slurm accepts. The config parser, the commands and
//! the daemons all share this one implementation.
//!
//! Expansion never panics and never allocates without bound: an expression that would
//! expand to more than [`MAX_HOSTS`] names is an error.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

/// Largest number of host names one expression may expand to.
pub const MAX_HOSTS: usize = 1_000_000;

/// Longest run of digits treated as a number (longer runs could overflow `u64`).
const MAX_DIGITS: usize = 18;

/// Why a hostlist expression could not be expanded. Every message names the expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    /// The expression is empty or only whitespace.
    #[error("invalid hostlist \"{expr}\": the expression is empty")]
    Empty { expr: String },
    /// Two commas in a row, or a leading/trailing comma.
    #[error("invalid hostlist \"{expr}\": empty item (two commas in a row, or a leading or trailing comma)")]
    EmptyItem { expr: String },
    /// A `[` without its `]`, a `]` without its `[`, or nested brackets.
    #[error("invalid hostlist \"{expr}\": unbalanced or nested brackets")]
    Unbalanced { expr: String },
    /// A range whose first number is larger than its last (`n[5-3]`).
    #[error("invalid hostlist \"{expr}\": range \"{range}\" is reversed (the first number must not be larger than the last)")]
    Reversed { expr: String, range: String },
    /// Something inside brackets that is not `N` or `N-M`.
    #[error("invalid hostlist \"{expr}\": \"{range}\" is not a number or a range of numbers (expected N or N-M inside brackets, at most {MAX_DIGITS} digits)")]
    NotNumeric { expr: String, range: String },
    /// The expression expands to more than [`MAX_HOSTS`] names.
    #[error("invalid hostlist \"{expr}\": it expands to more than {max} host names")]
    TooLarge { expr: String, max: usize },
}

/// One inclusive range of numbers inside brackets, printed zero-padded to `width`.
#[derive(Debug, Clone, Copy)]
struct Range {
    lo: u64,
    hi: u64,
    width: usize,
}

/// A piece of one item: literal text or a bracket group.
#[derive(Debug)]
enum Segment {
    Literal(String),
    Group(Vec<Range>),
}

/// Expands a hostlist expression into host names, in order.
///
/// Items are separated by commas (or whitespace) outside brackets; each item may hold any
/// number of bracket groups, expanded as a cartesian product from left to right
/// (`r[1-2]n[1-2]` → `r1n1 r1n2 r2n1 r2n2`). Zero padding follows the first number of a
/// range (`n[08-11]` → `n08 n09 n10 n11`). Duplicates are kept, as in Slurm.
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    let items = split_items(expr)?;
    let mut parsed = Vec::with_capacity(items.len());
    let mut total: usize = 0;
    for item in items {
        let segments = parse_item(expr, item)?;
        let count = segments.iter().try_fold(1usize, |acc, seg| match seg {
            Segment::Literal(_) => Some(acc),
            Segment::Group(ranges) => {
                let n = ranges.iter().try_fold(0usize, |sum, r| {
                    let len = usize::try_from(r.hi - r.lo).ok()?.checked_add(1)?;
                    sum.checked_add(len)
                })?;
                acc.checked_mul(n)
            }
        });
        total = count
            .and_then(|c| total.checked_add(c))
            .filter(|&t| t <= MAX_HOSTS)
            .ok_or_else(|| HostlistError::TooLarge {
                expr: expr.to_string(),
                max: MAX_HOSTS,
            })?;
        parsed.push(segments);
    }
    let mut out = Vec::with_capacity(total);
    for segments in &parsed {
        expand_item(segments, &mut out);
    }
    Ok(out)
}

/// Splits at commas and whitespace outside brackets; checks bracket balance.
fn split_items(expr: &str) -> Result<Vec<&str>, HostlistError> {
    if expr.trim().is_empty() {
        return Err(HostlistError::Empty {
            expr: expr.to_string(),
        });
    }
    let unbalanced = || HostlistError::Unbalanced {
        expr: expr.to_string(),
    };
    let mut items = Vec::new();
    let mut depth = 0u32;
    let mut start = 0usize;
    // First pass: bracket balance and comma-separated pieces.
    let mut comma_items = Vec::new();
    for (i, c) in expr.char_indices() {
        match c {
            '[' => {
                if depth > 0 {
                    return Err(unbalanced());
                }
                depth += 1;
            }
            ']' => {
                if depth == 0 {
                    return Err(unbalanced());
                }
                depth -= 1;
            }
            ',' if depth == 0 => {
                comma_items.push(&expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(unbalanced());
    }
    comma_items.push(&expr[start..]);
    for piece in comma_items {
        if piece.trim().is_empty() {
            return Err(HostlistError::EmptyItem {
                expr: expr.to_string(),
            });
        }
        // Whitespace outside brackets also separates items (as in Slurm).
        let mut depth = 0u32;
        let mut begin: Option<usize> = None;
        for (i, c) in piece.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if c.is_whitespace() && depth == 0 {
                if let Some(b) = begin.take() {
                    items.push(&piece[b..i]);
                }
            } else if begin.is_none() {
                begin = Some(i);
            }
        }
        if let Some(b) = begin {
            items.push(&piece[b..]);
        }
    }
    Ok(items)
}

/// Parses one item (no top-level commas) into literal text and bracket groups.
fn parse_item(expr: &str, item: &str) -> Result<Vec<Segment>, HostlistError> {
    let mut segments = Vec::new();
    let mut rest = item;
    while let Some(open) = rest.find('[') {
        if open > 0 {
            segments.push(Segment::Literal(rest[..open].to_string()));
        }
        let after = &rest[open + 1..];
        let close = after.find(']').ok_or_else(|| HostlistError::Unbalanced {
            expr: expr.to_string(),
        })?;
        segments.push(Segment::Group(parse_group(expr, &after[..close])?));
        rest = &after[close + 1..];
    }
    if rest.contains(']') {
        return Err(HostlistError::Unbalanced {
            expr: expr.to_string(),
        });
    }
    if !rest.is_empty() {
        segments.push(Segment::Literal(rest.to_string()));
    }
    Ok(segments)
}

/// Parses the inside of one bracket group: `01-10,12`.
fn parse_group(expr: &str, body: &str) -> Result<Vec<Range>, HostlistError> {
    let mut ranges = Vec::new();
    for part in body.split(',') {
        let part = part.trim();
        let not_numeric = || HostlistError::NotNumeric {
            expr: expr.to_string(),
            range: part.to_string(),
        };
        let (lo_s, hi_s) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo = parse_number(lo_s).ok_or_else(not_numeric)?;
        let hi = parse_number(hi_s).ok_or_else(not_numeric)?;
        if lo > hi {
            return Err(HostlistError::Reversed {
                expr: expr.to_string(),
                range: part.to_string(),
            });
        }
        ranges.push(Range {
            lo,
            hi,
            width: lo_s.len(),
        });
    }
    Ok(ranges)
}

fn parse_number(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > MAX_DIGITS || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Appends every name of one parsed item (cartesian product, leftmost group slowest).
fn expand_item(segments: &[Segment], out: &mut Vec<String>) {
    let mut partial = vec![String::new()];
    for seg in segments {
        match seg {
            Segment::Literal(text) => partial.iter_mut().for_each(|p| p.push_str(text)),
            Segment::Group(ranges) => {
                let mut next = Vec::new();
                for p in &partial {
                    for r in ranges {
                        for n in r.lo..=r.hi {
                            let mut s = p.clone();
                            let _ = write!(s, "{n:0width$}", width = r.width);
                            next.push(s);
                        }
                    }
                }
                partial = next;
            }
        }
    }
    out.extend(partial);
}

/// How one host name takes part in compression.
enum Parsed<'a> {
    /// Trailing number: prefix, digit string, value.
    Numbered(&'a str, &'a str, u64),
    /// No usable trailing number: printed as is.
    Plain(&'a str),
}

fn split_host(host: &str) -> Parsed<'_> {
    let digits = host
        .bytes()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 || digits > MAX_DIGITS {
        return Parsed::Plain(host);
    }
    let (prefix, num) = host.split_at(host.len() - digits);
    match num.parse() {
        Ok(v) => Parsed::Numbered(prefix, num, v),
        Err(_) => Parsed::Plain(host),
    }
}

/// A compression group: hosts with one prefix printed at one zero-padding width,
/// or a single plain name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum GroupKey {
    /// Sorts by name first (see [`compress_sorted`]).
    Plain(String),
    Numbered(String, usize),
}

impl GroupKey {
    fn sort_key(&self) -> (&str, u8, usize) {
        match self {
            GroupKey::Plain(name) => (name, 0, 0),
            GroupKey::Numbered(prefix, width) => (prefix, 1, *width),
        }
    }
}

/// Groups hosts by (prefix, width) in order of first appearance.
fn group_hosts<S: AsRef<str>>(hosts: &[S]) -> Vec<(GroupKey, BTreeSet<u64>)> {
    let parsed: Vec<Parsed<'_>> = hosts
        .iter()
        .map(|h| h.as_ref())
        .filter(|h| !h.is_empty())
        .map(split_host)
        .collect();
    // Zero-padded widths seen per prefix. A number without leading zeros can join any
    // group whose width is not larger than its own digit count (printing it at that
    // width changes nothing), so `n08,n09,n10` stays one group: `n[08-10]`.
    let mut padded: HashMap<&str, BTreeSet<usize>> = HashMap::new();
    for p in &parsed {
        if let Parsed::Numbered(prefix, num, _) = p {
            if num.len() > 1 && num.starts_with('0') {
                padded.entry(prefix).or_default().insert(num.len());
            }
        }
    }
    let mut groups: Vec<(GroupKey, BTreeSet<u64>)> = Vec::new();
    let mut index: HashMap<GroupKey, usize> = HashMap::new();
    let mut seen_plain: HashSet<&str> = HashSet::new();
    for p in &parsed {
        let (key, value) = match *p {
            Parsed::Plain(name) => {
                if !seen_plain.insert(name) {
                    continue;
                }
                (GroupKey::Plain(name.to_string()), None)
            }
            Parsed::Numbered(prefix, num, value) => {
                let width = if num.len() > 1 && num.starts_with('0') {
                    num.len()
                } else {
                    padded
                        .get(prefix)
                        .and_then(|ws| ws.range(..=num.len()).next_back().copied())
                        .unwrap_or(1)
                };
                (GroupKey::Numbered(prefix.to_string(), width), Some(value))
            }
        };
        let slot = match index.get(&key) {
            Some(&i) => i,
            None => {
                index.insert(key.clone(), groups.len());
                groups.push((key, BTreeSet::new()));
                groups.len() - 1
            }
        };
        if let (Some(v), Some(group)) = (value, groups.get_mut(slot)) {
            group.1.insert(v);
        }
    }
    groups
}

fn render(groups: &[(GroupKey, BTreeSet<u64>)]) -> String {
    let mut out = String::new();
    for (key, numbers) in groups {
        if !out.is_empty() {
            out.push(',');
        }
        match key {
            GroupKey::Plain(name) => out.push_str(name),
            GroupKey::Numbered(prefix, width) => {
                out.push_str(prefix);
                let width = *width;
                if numbers.len() == 1 {
                    if let Some(n) = numbers.first() {
                        let _ = write!(out, "{n:0width$}");
                    }
                    continue;
                }
                out.push('[');
                let mut first = true;
                let mut iter = numbers.iter().copied().peekable();
                while let Some(lo) = iter.next() {
                    let mut hi = lo;
                    while let Some(&next) = iter.peek() {
                        if hi.checked_add(1) == Some(next) {
                            hi = next;
                            iter.next();
                        } else {
                            break;
                        }
                    }
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    if lo == hi {
                        let _ = write!(out, "{lo:0width$}");
                    } else {
                        let _ = write!(out, "{lo:0width$}-{hi:0width$}");
                    }
                }
                out.push(']');
            }
        }
    }
    out
}

/// Compresses host names into Slurm's ranged form (`n01,n02,n03,n05` → `n[01-03,05]`).
///
/// Hosts are grouped by prefix (the text before the trailing digits) and zero-padding
/// width; groups keep the order in which they first appear, numbers within a group are
/// sorted and de-duplicated, and consecutive numbers merge into ranges. A group with one
/// host prints without brackets (`n1`); names without a trailing number print as is
/// (once). Empty names are skipped. Names must not contain `,`, `[`, `]` or whitespace
/// for the result to expand back to the same names.
pub fn compress<S: AsRef<str>>(hosts: &[S]) -> String {
    render(&group_hosts(hosts))
}

/// Like [`compress`], but the groups are sorted by prefix (`scontrol show hostlistsorted`).
pub fn compress_sorted<S: AsRef<str>>(hosts: &[S]) -> String {
    let mut groups = group_hosts(hosts);
    groups.sort_by(|a, b| a.0.sort_key().cmp(&b.0.sort_key()));
    render(&groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ex(s: &str) -> Vec<String> {
        match expand(s) {
            Ok(v) => v,
            Err(e) => panic!("expand({s:?}) failed: {e}"),
        }
    }

    #[test]
    fn expands_plain_lists() {
        assert_eq!(ex("a,b,c"), ["a", "b", "c"]);
        assert_eq!(ex("node1"), ["node1"]);
        assert_eq!(ex(" a , b "), ["a", "b"]);
        assert_eq!(ex("a b\tc"), ["a", "b", "c"]);
    }

    #[test]
    fn expands_ranges_with_padding() {
        assert_eq!(ex("n[08-11]"), ["n08", "n09", "n10", "n11"]);
        assert_eq!(ex("n[8-11]"), ["n8", "n9", "n10", "n11"]);
        assert_eq!(ex("n[01-03,05]"), ["n01", "n02", "n03", "n05"]);
        assert_eq!(ex("n[5]"), ["n5"]);
        assert_eq!(ex("n[1-3]x"), ["n1x", "n2x", "n3x"]);
        assert_eq!(ex("[1-2]"), ["1", "2"]);
        assert_eq!(ex("10.0.0.[1-2]"), ["10.0.0.1", "10.0.0.2"]);
        assert_eq!(ex("n[ 1 - 2 , 4 ]"), ["n1", "n2", "n4"]);
    }

    #[test]
    fn expands_cartesian_left_to_right() {
        assert_eq!(
            ex("rack[1-2]-n[1-3]"),
            ["rack1-n1", "rack1-n2", "rack1-n3", "rack2-n1", "rack2-n2", "rack2-n3"]
        );
        assert_eq!(ex("a[1-2]b[3,5]"), ["a1b3", "a1b5", "a2b3", "a2b5"]);
    }

    #[test]
    fn commas_inside_brackets_do_not_split() {
        assert_eq!(ex("n[1,3],m[2-3],x"), ["n1", "n3", "m2", "m3", "x"]);
    }

    #[test]
    fn keeps_duplicates() {
        assert_eq!(ex("n1,n[1-2]"), ["n1", "n1", "n2"]);
    }

    #[test]
    fn errors_name_the_expression() {
        let cases: &[(&str, &str)] = &[
            ("", "empty"),
            ("  ", "empty"),
            ("a,,b", "empty item"),
            ("a,", "empty item"),
            (",a", "empty item"),
            ("n[1-3", "unbalanced"),
            ("n1-3]", "unbalanced"),
            ("n[1-[2]]", "unbalanced"),
            ("n]1[", "unbalanced"),
            ("n[5-3]", "reversed"),
            ("n[a-c]", "not a number"),
            ("n[]", "not a number"),
            ("n[1,,2]", "not a number"),
            ("n[1-]", "not a number"),
            ("n[-1]", "not a number"),
            ("n[1-2-3]", "not a number"),
            ("n[1234567890123456789]", "not a number"),
            ("n[0-1000000]", "more than"),
            ("a[0-999]b[0-999]c[0-9]", "more than"),
            ("n[0-99999999999999999]", "more than"),
        ];
        for (input, want) in cases {
            let err = match expand(input) {
                Ok(v) => panic!("{input:?} should fail, got {} hosts", v.len()),
                Err(e) => e.to_string(),
            };
            assert!(err.contains(want), "{input:?}: {err}");
            assert!(err.contains(&format!("\"{input}\"")), "{input:?}: {err}");
        }
    }

    #[test]
    fn limit_is_inclusive() {
        assert_eq!(expand("n[1-1000000]").map(|v| v.len()), Ok(MAX_HOSTS));
        assert!(expand("n[1-1000000],x").is_err());
    }

    #[test]
    fn compresses_like_slurm() {
        assert_eq!(compress(&["n01", "n02", "n03", "n05"]), "n[01-03,05]");
        assert_eq!(compress(&["n1"]), "n1");
        assert_eq!(compress(&["login"]), "login");
        assert_eq!(compress(&["n3", "n1", "n2", "n2"]), "n[1-3]");
        assert_eq!(compress(&["n9", "n10", "n11"]), "n[9-11]");
        assert_eq!(compress(&["n08", "n09", "n10"]), "n[08-10]");
        assert_eq!(compress(&["n1", "n01"]), "n1,n01");
        assert_eq!(
            compress(&["b1", "a1", "b2", "login", "a2", "login"]),
            "b[1-2],a[1-2],login"
        );
        assert_eq!(
            compress(&["rack1-n1", "rack1-n2", "rack2-n1"]),
            "rack1-n[1-2],rack2-n1"
        );
        assert_eq!(compress::<&str>(&[]), "");
        assert_eq!(compress(&["", "n1"]), "n1");
        let owned: Vec<String> = vec!["x1".into(), "x2".into()];
        assert_eq!(compress(&owned), "x[1-2]");
    }

    #[test]
    fn compress_sorted_orders_groups() {
        assert_eq!(
            compress_sorted(&["b1", "a1", "b2", "login", "a2"]),
            "a[1-2],b[1-2],login"
        );
        assert_eq!(compress_sorted(&["n10", "n2", "m1"]), "m1,n[2,10]");
    }

    #[test]
    fn compress_handles_huge_numbers_as_plain() {
        let long = "n1234567890123456789012";
        assert_eq!(compress(&[long, long]), long);
        assert_eq!(
            compress(&["n18446744073709551615"]),
            "n18446744073709551615"
        );
    }

    #[test]
    fn round_trip_of_a_large_cluster() {
        let hosts = ex("gpu[001-512],cpu[1-2000]");
        assert_eq!(compress(&hosts), "gpu[001-512],cpu[1-2000]");
        assert_eq!(ex(&compress(&hosts)), hosts);
    }

    fn host_strategy() -> impl Strategy<Value = String> {
        let prefix = prop::sample::select(vec!["n", "rack1-n", "gpu", "a.b", "", "x-"]);
        let numbered = (prefix, 0u64..300, 0usize..4)
            .prop_map(|(p, n, w)| format!("{p}{n:0w$}"))
            .boxed();
        let plain = prop::sample::select(vec!["login", "head", "x-", "gpu"])
            .prop_map(str::to_string)
            .boxed();
        prop_oneof![4 => numbered, 1 => plain]
    }

    proptest! {
        #[test]
        fn compress_round_trips(hosts in prop::collection::vec(host_strategy(), 0..60)) {
            let compressed = compress(&hosts);
            let want: BTreeSet<&str> = hosts.iter().map(String::as_str).filter(|h| !h.is_empty()).collect();
            if want.is_empty() {
                prop_assert_eq!(compressed, "");
                return Ok(());
            }
            let back = expand(&compressed).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let got: BTreeSet<&str> = back.iter().map(String::as_str).collect();
            prop_assert_eq!(back.len(), got.len(), "duplicates in {}", compressed);
            prop_assert_eq!(&got, &want);
            // Idempotent: compressing the expansion gives the same string.
            prop_assert_eq!(compress(&back), compressed.clone());
            // Sorted variant expands to the same set.
            let sorted = compress_sorted(&hosts);
            let back_sorted = expand(&sorted).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let got_sorted: BTreeSet<&str> = back_sorted.iter().map(String::as_str).collect();
            prop_assert_eq!(&got_sorted, &want);
        }

        #[test]
        fn single_prefix_round_trip_is_sorted(mut nums in prop::collection::vec(0u64..5000, 1..80)) {
            let hosts: Vec<String> = nums.iter().map(|n| format!("node{n:04}")).collect();
            nums.sort_unstable();
            nums.dedup();
            let want: Vec<String> = nums.iter().map(|n| format!("node{n:04}")).collect();
            let back = expand(&compress(&hosts)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(back, want);
        }

        #[test]
        fn expand_never_panics(s in "[a-z0-9\\[\\]\\-, ]{0,40}") {
            let _ = expand(&s);
        }

        #[test]
        fn compress_never_panics(hosts in prop::collection::vec(".{0,12}", 0..10)) {
            let _ = compress(&hosts);
            let _ = compress_sorted(&hosts);
        }
    }
}
