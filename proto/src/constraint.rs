//! `--constraint` (`-C`) expressions over node features, in Slurm's syntax:
//!
//! * `a`, `a&b` (AND), `a|b` (OR), and parentheses `(a|b)&c`: every allocated node must
//!   satisfy the expression. As in Slurm, `&` and `|` are applied from left to right
//!   (`a|b&c` is `(a|b)&c`); parentheses group.
//! * `[a|b|c]` (matching OR): every allocated node has the same one of the alternatives (all
//!   on rack1, or all on rack2, ...); an alternative may be a parenthesized expression.
//! * `a*2`, `[a*2&b*4]`, `[(a&b)*2&c*1]` (node counts): at least that many allocated nodes
//!   satisfy each counted term, distinct nodes for distinct terms. Counted terms may only be
//!   joined with `&`; an uncounted term joined with them applies to every node (`a*2&b`:
//!   every node has `b`, two of them also `a`). Counts raise the job's node count to their
//!   sum when `-N` is not given, as Slurm's minimum node count.
//!
//! Anything else (counts joined by `|`, `&` inside brackets without counts, nested brackets,
//! `,`) is refused with a message that says what is supported.

use std::fmt;

/// A per-node feature expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeExpr {
    Feature(String),
    And(Box<NodeExpr>, Box<NodeExpr>),
    Or(Box<NodeExpr>, Box<NodeExpr>),
}

impl NodeExpr {
    /// Whether a node with `features` satisfies the expression.
    pub fn matches(&self, features: &[String]) -> bool {
        match self {
            NodeExpr::Feature(f) => features.iter().any(|x| x == f),
            NodeExpr::And(a, b) => a.matches(features) && b.matches(features),
            NodeExpr::Or(a, b) => a.matches(features) || b.matches(features),
        }
    }

    /// Every feature named, in order of appearance.
    pub fn features(&self) -> Vec<&str> {
        match self {
            NodeExpr::Feature(f) => vec![f.as_str()],
            NodeExpr::And(a, b) | NodeExpr::Or(a, b) => {
                let mut v = a.features();
                v.extend(b.features());
                v
            }
        }
    }
}

impl fmt::Display for NodeExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeExpr::Feature(x) => f.write_str(x),
            NodeExpr::And(a, b) => write!(f, "({a}&{b})"),
            NodeExpr::Or(a, b) => write!(f, "({a}|{b})"),
        }
    }
}

/// A parsed `--constraint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConstraintSpec {
    /// Every node satisfies the expression.
    Each(NodeExpr),
    /// `[a|b|...]`: every node satisfies the same one alternative.
    MatchingOr(Vec<NodeExpr>),
    /// Node counts: every node satisfies `each` (if any), and for every `(expr, n)` at least
    /// `n` nodes satisfy `expr` (distinct nodes for distinct terms).
    Counts {
        each: Option<NodeExpr>,
        counts: Vec<(NodeExpr, u32)>,
    },
}

impl ConstraintSpec {
    /// The sum of the node counts (0 without counts): the least node count of the job.
    pub fn min_nodes(&self) -> u32 {
        match self {
            ConstraintSpec::Counts { counts, .. } => {
                counts.iter().map(|c| c.1).fold(0u32, u32::saturating_add)
            }
            _ => 0,
        }
    }
}

/// Slurm's message for a constraint it cannot parse.
pub const INVALID_FEATURE: &str = "Invalid feature specification";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

/// One term of a list: an expression and its node count.
type Term = (NodeExpr, Option<u32>);

fn name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':' | b'+')
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// `term (op term)*`, stopping before `)` or `]` or the end.
    fn list(&mut self) -> Result<(Vec<Term>, Vec<Op>), String> {
        let mut terms = vec![self.term()?];
        let mut ops = Vec::new();
        loop {
            match self.peek() {
                Some(b'&') => ops.push(Op::And),
                Some(b'|') => ops.push(Op::Or),
                _ => return Ok((terms, ops)),
            }
            self.pos += 1;
            terms.push(self.term()?);
        }
    }

    fn term(&mut self) -> Result<Term, String> {
        let expr = match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let (terms, ops) = self.list()?;
                if self.peek() != Some(b')') {
                    return Err("unbalanced parentheses".into());
                }
                self.pos += 1;
                if terms.iter().any(|t| t.1.is_some()) {
                    return Err(
                        "node counts (*N) go after a parenthesized group, not inside".into(),
                    );
                }
                fold(terms.into_iter().map(|t| t.0).collect(), &ops)
            }
            Some(c) if name_char(c) => {
                let start = self.pos;
                while self.peek().is_some_and(name_char) {
                    self.pos += 1;
                }
                let name = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                NodeExpr::Feature(name)
            }
            Some(b'[') => return Err("brackets may only enclose the whole constraint".into()),
            Some(b',') => {
                return Err("',' is not an operator here: use '&' (AND) or '|' (OR)".into())
            }
            Some(c) => return Err(format!("unexpected '{}'", c as char)),
            None => return Err("a feature is missing".into()),
        };
        let count = if self.peek() == Some(b'*') {
            self.pos += 1;
            let start = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
            let n: u32 = std::str::from_utf8(&self.s[start..self.pos])
                .ok()
                .and_then(|d| d.parse().ok())
                .filter(|&n| n > 0)
                .ok_or("a node count (*N) must be a positive number")?;
            Some(n)
        } else {
            None
        };
        Ok((expr, count))
    }
}

/// Left to right, as Slurm applies the operators.
fn fold(exprs: Vec<NodeExpr>, ops: &[Op]) -> NodeExpr {
    let mut it = exprs.into_iter();
    let mut acc = it.next().expect("a list has a term");
    for (e, op) in it.zip(ops) {
        acc = match op {
            Op::And => NodeExpr::And(Box::new(acc), Box::new(e)),
            Op::Or => NodeExpr::Or(Box::new(acc), Box::new(e)),
        };
    }
    acc
}

/// Parses a `--constraint` value. The error is `Invalid feature specification` followed by
/// what is wrong.
pub fn parse(input: &str) -> Result<ConstraintSpec, String> {
    let err = |why: &str| format!("{INVALID_FEATURE}: \"{}\": {why}", input.trim());
    let s = input.trim();
    if s.is_empty() {
        return Err(INVALID_FEATURE.into());
    }
    let (body, bracket) = match s.strip_prefix('[') {
        Some(rest) => match rest.strip_suffix(']') {
            Some(b) => (b, true),
            None => return Err(err("'[' without a closing ']' at the end")),
        },
        None => (s, false),
    };
    let mut p = Parser {
        s: body.as_bytes(),
        pos: 0,
    };
    let (terms, ops) = p.list().map_err(|e| err(&e))?;
    if p.pos != body.len() {
        let rest = &body[p.pos..];
        if rest.starts_with(',') {
            return Err(err(
                "',' is not an operator here: use '&' (AND) or '|' (OR)",
            ));
        }
        return Err(err(&format!("unexpected \"{rest}\"")));
    }
    let counted = terms.iter().any(|t| t.1.is_some());
    if counted {
        if ops.contains(&Op::Or) {
            return Err(err(
                "constraints with node counts may only be combined with AND (&)",
            ));
        }
        let mut each = Vec::new();
        let mut counts = Vec::new();
        for (e, n) in terms {
            match n {
                Some(n) => counts.push((e, n)),
                None => each.push(e),
            }
        }
        let each = (!each.is_empty()).then(|| {
            let ands = vec![Op::And; each.len() - 1];
            fold(each, &ands)
        });
        return Ok(ConstraintSpec::Counts { each, counts });
    }
    if bracket {
        if ops.contains(&Op::And) {
            return Err(err(
                "inside brackets use '|' (matching OR) or counts for every feature ([a*2&b*1])",
            ));
        }
        return Ok(ConstraintSpec::MatchingOr(
            terms.into_iter().map(|t| t.0).collect(),
        ));
    }
    Ok(ConstraintSpec::Each(fold(
        terms.into_iter().map(|t| t.0).collect(),
        &ops,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> NodeExpr {
        NodeExpr::Feature(s.into())
    }
    fn feats(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn per_node_expressions() {
        assert_eq!(parse("a").unwrap(), ConstraintSpec::Each(f("a")));
        let ConstraintSpec::Each(e) = parse("(a|b)&c").unwrap() else {
            panic!()
        };
        assert_eq!(e.to_string(), "((a|b)&c)");
        assert!(e.matches(&feats(&["b", "c"])));
        assert!(!e.matches(&feats(&["a", "b"])));
        // Left to right, as Slurm: a|b&c is (a|b)&c.
        let ConstraintSpec::Each(e) = parse("a|b&c").unwrap() else {
            panic!()
        };
        assert_eq!(e.to_string(), "((a|b)&c)");
        assert!(!e.matches(&feats(&["a"])));
        let ConstraintSpec::Each(e) = parse("a|(b&c)").unwrap() else {
            panic!()
        };
        assert!(e.matches(&feats(&["a"])));
        assert_eq!(e.features(), vec!["a", "b", "c"]);
    }

    #[test]
    fn matching_or_and_counts() {
        assert_eq!(
            parse("[rack1|rack2|(big&fast)]").unwrap(),
            ConstraintSpec::MatchingOr(vec![
                f("rack1"),
                f("rack2"),
                NodeExpr::And(Box::new(f("big")), Box::new(f("fast")))
            ])
        );
        let c = parse("a*2&b").unwrap();
        assert_eq!(
            c,
            ConstraintSpec::Counts {
                each: Some(f("b")),
                counts: vec![(f("a"), 2)]
            }
        );
        assert_eq!(c.min_nodes(), 2);
        let c = parse("[(knl&flat)*4&haswell*1]").unwrap();
        assert_eq!(c.min_nodes(), 5);
        assert_eq!(parse("graphics*4").unwrap().min_nodes(), 4);
    }

    #[test]
    fn refusals_say_why() {
        for (bad, why) in [
            ("", ""),
            ("a&", "missing"),
            ("a|b*2", "only be combined with AND"),
            ("[a&b]", "inside brackets"),
            ("[a|b", "closing"),
            ("(a|b", "parentheses"),
            ("(a*2)", "after a parenthesized"),
            ("a*0", "positive"),
            ("a*x", "positive"),
            ("a,b", "','"),
            ("a&[b|c]", "whole constraint"),
            ("a b", "unexpected"),
            ("a$", "unexpected"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.starts_with(INVALID_FEATURE), "{bad}: {e}");
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
