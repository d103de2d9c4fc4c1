//! A job's environment as the controller keeps it: one string per job.
//!
//! A batch job carries the whole environment of the shell it was submitted from (35
//! variables, 1.3 KB in a plain login shell; several KB on real clusters), and the controller
//! keeps every pending job in memory. As a list of pairs of strings that was 70 allocations
//! and about 5 KB a job, most of the controller's memory at 50,000 pending jobs (issue 12);
//! here it is one allocation of the text itself, each name and value ended by a NUL byte
//! (which no environment variable can contain: `execve` takes C strings). JSON and schema
//! are unchanged: a list of `[name, value]` pairs.

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Environment variables in order (`NAME`, `value`), names not necessarily unique.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// `name\0value\0name\0value\0...`
    text: String,
}

impl Environment {
    pub fn new() -> Environment {
        Environment::default()
    }

    /// The variables in order.
    pub fn iter(&self) -> Pairs<'_> {
        Pairs {
            rest: self.text.as_str(),
        }
    }

    pub fn len(&self) -> usize {
        self.text.bytes().filter(|&b| b == 0).count() / 2
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Whether `name` is set to `value` (by any of its entries).
    pub fn has(&self, name: &str, value: &str) -> bool {
        self.iter().any(|p| p == (name, value))
    }

    /// Adds a variable at the end. A NUL byte cannot be passed to a program, so a name or
    /// value is cut at the first one.
    pub fn push(&mut self, name: &str, value: &str) {
        let cut = |s: &str| s.split('\0').next().unwrap_or("").to_string();
        self.text.push_str(&cut(name));
        self.text.push('\0');
        self.text.push_str(&cut(value));
        self.text.push('\0');
    }

    /// The variables as owned pairs.
    pub fn to_vec(&self) -> Vec<(String, String)> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Bytes of text held (names, values and their ends).
    pub fn text_len(&self) -> usize {
        self.text.len()
    }
}

/// The variables of an [`Environment`] in order.
pub struct Pairs<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<(&'a str, &'a str)> {
        let (k, rest) = self.rest.split_once('\0')?;
        let (v, rest) = rest.split_once('\0')?;
        self.rest = rest;
        Some((k, v))
    }
}

impl<'a> IntoIterator for &'a Environment {
    type Item = (&'a str, &'a str);
    type IntoIter = Pairs<'a>;
    fn into_iter(self) -> Pairs<'a> {
        self.iter()
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Environment {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Environment {
        let mut e = Environment::new();
        for (k, v) in pairs {
            e.push(k.as_ref(), v.as_ref());
        }
        e.text.shrink_to_fit();
        e
    }
}

impl From<Vec<(String, String)>> for Environment {
    fn from(pairs: Vec<(String, String)>) -> Environment {
        pairs.into_iter().collect()
    }
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Environment {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for pair in self.iter() {
            seq.serialize_element(&pair)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Environment {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Environment, D::Error> {
        struct PairsVisitor;
        impl<'de> Visitor<'de> for PairsVisitor {
            type Value = Environment;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of [name, value] pairs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Environment, A::Error> {
                let mut e = Environment::new();
                while let Some((k, v)) =
                    seq.next_element::<(std::borrow::Cow<str>, std::borrow::Cow<str>)>()?
                {
                    if k.contains('\0') || v.contains('\0') {
                        return Err(A::Error::custom(format!(
                            "environment variable {:?} contains a NUL byte, which no program can be given; remove it from the environment",
                            k.replace('\0', "\\0")
                        )));
                    }
                    e.push(&k, &v);
                }
                // A queued job keeps its environment for as long as it waits: not the
                // spare room the string grew by.
                e.text.shrink_to_fit();
                Ok(e)
            }
        }
        d.deserialize_seq(PairsVisitor)
    }
}

impl schemars::JsonSchema for Environment {
    fn schema_name() -> String {
        <Vec<(String, String)>>::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        <Vec<(String, String)>>::schema_id()
    }
    fn json_schema(g: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        <Vec<(String, String)>>::json_schema(g)
    }
    fn is_referenceable() -> bool {
        <Vec<(String, String)>>::is_referenceable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(e: &Environment) -> Vec<(String, String)> {
        e.to_vec()
    }

    #[test]
    fn keeps_order_duplicates_and_empty_values() {
        let e: Environment = vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("EMPTY".into(), String::new()),
            ("A".into(), "x=y z".into()),
            ("A".into(), "again".into()),
        ]
        .into();
        assert_eq!(e.len(), 4);
        assert_eq!(e.get("A"), Some("x=y z"));
        assert_eq!(e.get("EMPTY"), Some(""));
        assert_eq!(e.get("NOPE"), None);
        assert_eq!(pairs(&e)[3], ("A".to_string(), "again".to_string()));
        assert!(Environment::new().is_empty());
        assert_eq!(Environment::new().len(), 0);
        assert_eq!(Environment::new().iter().count(), 0);
    }

    #[test]
    fn json_is_a_list_of_pairs() {
        let e: Environment = [("A", "1"), ("B", "")].into_iter().collect();
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(text, r#"[["A","1"],["B",""]]"#);
        let back: Environment = serde_json::from_str(&text).unwrap();
        assert_eq!(back, e);
        // As the list of pairs it replaces.
        let old: Vec<(String, String)> = serde_json::from_str(&text).unwrap();
        assert_eq!(old, pairs(&e));
        assert_eq!(format!("{e:?}"), r#"[("A", "1"), ("B", "")]"#);
    }

    #[test]
    fn a_nul_byte_is_refused_when_read_and_cut_when_pushed() {
        let err = serde_json::from_str::<Environment>(r#"[["A\u0000B","1"]]"#).unwrap_err();
        assert!(err.to_string().contains("NUL byte"), "{err}");
        let err = serde_json::from_str::<Environment>(r#"[["A","1\u0000"]]"#).unwrap_err();
        assert!(err.to_string().contains("\"A\""), "{err}");
        let mut e = Environment::new();
        e.push("X\0Y", "v\0w");
        assert_eq!(pairs(&e), [("X".to_string(), "v".to_string())]);
    }

    #[test]
    fn one_allocation_of_the_text() {
        let e: Environment = (0..35)
            .map(|i| (format!("VAR{i}"), "v".repeat(30)))
            .collect();
        assert_eq!(
            e.text_len(),
            (0..35).map(|i| format!("VAR{i}").len() + 32).sum::<usize>()
        );
    }
}
