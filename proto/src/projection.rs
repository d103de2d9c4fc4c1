//! Field projection of job records (`JobQuery::fields`).
//!
//! A listing command needs a few fields of each job (`squeue -o '%i %T'`: the id and the
//! state), while a whole record is some 600 bytes of JSON; at 10,000 jobs that is the
//! difference between a few milliseconds and a hundred spent writing and decoding JSON. A
//! [`FieldSet`] names the fields to keep (`"state"`, `"spec.account"`, or `"spec"` for all of
//! the spec) and [`Projected`] serializes a value through a filter that drops every other
//! struct field on the way out. The records read back as the same types: every field of
//! [`crate::job::JobInfo`] and [`crate::job::JobSpec`] has a default, so the missing ones come
//! back as defaults, and a command must ask for every field it reads (the squeue tests check
//! its choice against the whole record).

use serde::ser::{Serialize, SerializeStruct, Serializer};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Which fields of a struct to keep: all of them, or some, each with what to keep of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    all: bool,
    /// Few entries: a list, looked up by length and first byte before the bytes (a
    /// projected listing looks up every field of every job).
    fields: Vec<(String, FieldSet)>,
    /// Bit `n` set when a name of `n` bytes (mod 64) is in `fields`: most fields of a
    /// record are refused by this alone.
    lengths: u64,
}

/// A field name that is not a field of the job record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown job field {0:?} in the query's field list (fields are the JSON names of a job record, `spec.NAME` for a field of its spec; see /v1/openapi.json)")]
pub struct UnknownField(pub String);

impl FieldSet {
    /// Everything.
    pub fn everything() -> FieldSet {
        FieldSet {
            all: true,
            fields: Vec::new(),
            lengths: 0,
        }
    }

    /// The fields of a job record that `names` lists (dotted paths), checked against the
    /// record's schema.
    pub fn for_jobs<S: AsRef<str>>(names: &[S]) -> Result<FieldSet, UnknownField> {
        let (top, spec) = job_field_names();
        let mut set = FieldSet::default();
        for n in names {
            let n = n.as_ref();
            let known = match n.split_once('.') {
                None => top.contains(n),
                Some(("spec", f)) => spec.contains(f),
                Some(_) => false,
            };
            if !known {
                return Err(UnknownField(n.to_string()));
            }
            set.add(n);
        }
        Ok(set)
    }

    /// Adds a dotted path.
    fn add(&mut self, path: &str) {
        let (head, rest) = match path.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (path, None),
        };
        let at = match self.fields.iter().position(|(k, _)| k == head) {
            Some(i) => i,
            None => {
                self.fields.push((head.to_string(), FieldSet::default()));
                self.lengths |= length_bit(head);
                self.fields.len() - 1
            }
        };
        let sub = &mut self.fields[at].1;
        match rest {
            None => {
                sub.all = true;
                sub.fields.clear();
                sub.lengths = 0;
            }
            Some(r) if !sub.all => sub.add(r),
            Some(_) => {}
        }
    }

    /// Leaves out a job's batch script and environment (`JobQuery::brief`) when the whole
    /// spec is asked for: the spec then keeps all its other fields.
    pub fn without_script(mut self) -> FieldSet {
        let (top, spec) = job_field_names();
        if self.all {
            self.all = false;
            self.fields = top
                .iter()
                .map(|f| (f.clone(), FieldSet::everything()))
                .collect();
            self.lengths = top.iter().fold(0, |m, f| m | length_bit(f));
        }
        if let Some((_, s)) = self.fields.iter_mut().find(|(k, _)| k == "spec") {
            if s.all {
                s.all = false;
                s.fields = spec
                    .iter()
                    .map(|f| (f.clone(), FieldSet::everything()))
                    .collect();
                s.lengths = spec.iter().fold(0, |m, f| m | length_bit(f));
            }
            s.fields
                .retain(|(k, _)| k != "script" && k != "environment");
        }
        self
    }

    /// Whether the field at the dotted `path` (`"spec.name"`) is kept.
    pub fn keeps(&self, path: &str) -> bool {
        let mut set = self;
        for part in path.split('.') {
            if set.all {
                return true;
            }
            match set.get(part) {
                Some(sub) => set = sub,
                None => return false,
            }
        }
        true
    }

    /// Whether the field `name` is kept, and what of it.
    fn get(&self, name: &str) -> Option<&FieldSet> {
        if self.all {
            return Some(self);
        }
        if self.lengths & length_bit(name) == 0 {
            return None;
        }
        let (len, first) = (name.len(), name.as_bytes().first());
        self.fields
            .iter()
            .find(|(k, _)| k.len() == len && k.as_bytes().first() == first && k == name)
            .map(|(_, s)| s)
    }
}

fn length_bit(name: &str) -> u64 {
    1 << (name.len() % 64)
}

/// The JSON field names of a job record and of its spec, from the API schema.
fn job_field_names() -> &'static (BTreeSet<String>, BTreeSet<String>) {
    static NAMES: OnceLock<(BTreeSet<String>, BTreeSet<String>)> = OnceLock::new();
    NAMES.get_or_init(|| {
        let props = |s: &schemars::schema::SchemaObject| -> BTreeSet<String> {
            s.object
                .as_ref()
                .map(|o| o.properties.keys().cloned().collect())
                .unwrap_or_default()
        };
        let root = schemars::schema_for!(crate::job::JobInfo);
        let top = props(&root.schema);
        let spec = match root.definitions.get("JobSpec") {
            Some(schemars::schema::Schema::Object(o)) => props(o),
            _ => BTreeSet::new(),
        };
        (top, spec)
    })
}

/// `value` serialized with only the fields `keep` names (of its outermost struct, and of the
/// structs inside those fields as `keep` says).
pub struct Projected<'a, T: ?Sized> {
    pub value: &'a T,
    pub keep: &'a FieldSet,
}

impl<T: Serialize + ?Sized> Serialize for Projected<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.keep.all {
            self.value.serialize(s)
        } else {
            self.value.serialize(Filter {
                inner: s,
                keep: self.keep,
            })
        }
    }
}

/// A serializer that passes everything through to `inner` except the fields of the first
/// struct it meets, which `keep` filters.
struct Filter<'a, S> {
    inner: S,
    keep: &'a FieldSet,
}

struct FilterStruct<'a, S> {
    inner: S,
    keep: &'a FieldSet,
}

impl<S: SerializeStruct> SerializeStruct for FilterStruct<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        match self.keep.get(key) {
            None => self.inner.skip_field(key),
            Some(sub) => self
                .inner
                .serialize_field(key, &Projected { value, keep: sub }),
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), Self::Error> {
        self.inner.skip_field(key)
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        self.inner.end()
    }
}

macro_rules! pass {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $name(self, $($arg: $ty),*) -> Result<Self::Ok, Self::Error> {
            self.inner.$name($($arg),*)
        })*
    };
}

impl<'a, S: Serializer> Serializer for Filter<'a, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = S::SerializeSeq;
    type SerializeTuple = S::SerializeTuple;
    type SerializeTupleStruct = S::SerializeTupleStruct;
    type SerializeTupleVariant = S::SerializeTupleVariant;
    type SerializeMap = S::SerializeMap;
    type SerializeStruct = FilterStruct<'a, S::SerializeStruct>;
    type SerializeStructVariant = S::SerializeStructVariant;

    pass! {
        serialize_bool(v: bool);
        serialize_i8(v: i8);
        serialize_i16(v: i16);
        serialize_i32(v: i32);
        serialize_i64(v: i64);
        serialize_i128(v: i128);
        serialize_u8(v: u8);
        serialize_u16(v: u16);
        serialize_u32(v: u32);
        serialize_u64(v: u64);
        serialize_u128(v: u128);
        serialize_f32(v: f32);
        serialize_f64(v: f64);
        serialize_char(v: char);
        serialize_str(v: &str);
        serialize_bytes(v: &[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(name: &'static str);
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str);
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Self::Ok, Self::Error> {
        self.inner.serialize_some(&Projected {
            value,
            keep: self.keep,
        })
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Self::Error> {
        self.inner.serialize_newtype_struct(
            name,
            &Projected {
                value,
                keep: self.keep,
            },
        )
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Self::Error> {
        self.inner
            .serialize_newtype_variant(name, index, variant, value)
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        self.inner.serialize_seq(len)
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Self::Error> {
        self.inner.serialize_tuple(len)
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        self.inner.serialize_tuple_struct(name, len)
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<<Self as Serializer>::SerializeTupleVariant, Self::Error> {
        self.inner
            .serialize_tuple_variant(name, index, variant, len)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        self.inner.serialize_map(len)
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        Ok(FilterStruct {
            inner: self.inner.serialize_struct(name, len)?,
            keep: self.keep,
        })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<<Self as Serializer>::SerializeStructVariant, Self::Error> {
        self.inner
            .serialize_struct_variant(name, index, variant, len)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_answers_for_dotted_paths() {
        let some = FieldSet::for_jobs(&["state", "spec.name"]).unwrap();
        assert!(some.keeps("spec.name"));
        assert!(some.keeps("state"));
        assert!(!some.keeps("spec.submit_line"));
        assert!(!some.keeps("name"));
        let spec = FieldSet::for_jobs(&["spec"]).unwrap();
        assert!(spec.keeps("spec.submit_line"));
        assert!(FieldSet::everything().keeps("spec.name"));
        assert!(!FieldSet::default().keeps("spec.name"));
    }

    use crate::job::{JobInfo, JobState};

    fn job() -> JobInfo {
        let mut j: JobInfo = serde_json::from_str(r#"{"job_id": 7}"#).expect("defaults");
        j.name = "train".into();
        j.state = JobState::Running;
        j.user_name = "ana".into();
        j.start_time = Some(100);
        j.nodes = vec!["n1".into(), "n2".into()];
        j.spec.account = Some("physics".into());
        j.spec.script = "#!/bin/sh\ntrue\n".into();
        j.spec.environment = [("A", "1")].into_iter().collect();
        j.spec.work_dir = "/home/ana".into();
        j
    }

    fn round_trip(j: &JobInfo, keep: &FieldSet) -> (serde_json::Value, JobInfo) {
        let text = serde_json::to_string(&Projected { value: j, keep }).expect("serializes");
        (
            serde_json::from_str(&text).expect("a value"),
            serde_json::from_str(&text).expect("reads back as a job"),
        )
    }

    #[test]
    fn keeps_only_the_named_fields() {
        let j = job();
        let keep = FieldSet::for_jobs(&["job_id", "state", "spec.account"]).unwrap();
        let (v, back) = round_trip(&j, &keep);
        assert_eq!(
            v,
            serde_json::json!({"job_id": 7, "state": "RUNNING", "spec": {"account": "physics"}})
        );
        assert_eq!(back.job_id, 7);
        assert_eq!(back.state, JobState::Running);
        assert_eq!(back.spec.account.as_deref(), Some("physics"));
        assert_eq!(back.name, "");
        assert!(back.nodes.is_empty());
        assert_eq!(back.spec.script, "");
    }

    #[test]
    fn options_and_lists_are_kept_whole() {
        let j = job();
        let keep = FieldSet::for_jobs(&["start_time", "nodes", "end_time"]).unwrap();
        let (v, back) = round_trip(&j, &keep);
        assert_eq!(
            v,
            serde_json::json!({"start_time": 100, "nodes": ["n1", "n2"]})
        );
        assert_eq!(back.nodes, j.nodes);
    }

    #[test]
    fn everything_and_brief() {
        let j = job();
        let (_, back) = round_trip(&j, &FieldSet::everything());
        assert_eq!(back, j);
        let brief = FieldSet::everything().without_script();
        let (_, back) = round_trip(&j, &brief);
        let mut want = j.clone();
        want.spec.script.clear();
        want.spec.environment = Default::default();
        assert_eq!(back, want);
        let spec_brief = FieldSet::for_jobs(&["spec"]).unwrap().without_script();
        let (v, _) = round_trip(&j, &spec_brief);
        assert_eq!(v["spec"]["work_dir"], "/home/ana");
        assert!(v["spec"].get("script").is_none());
        assert!(v.get("job_id").is_none());
    }

    #[test]
    fn a_whole_field_wins_over_its_parts() {
        let a = FieldSet::for_jobs(&["spec.account", "spec"]).unwrap();
        let b = FieldSet::for_jobs(&["spec", "spec.account"]).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, FieldSet::for_jobs(&["spec"]).unwrap());
    }

    /// Records read without their spec share one empty spec; writing to one copies it.
    #[test]
    fn records_without_a_spec_share_one_until_written() {
        let keep = FieldSet::for_jobs(&["job_id"]).unwrap();
        let (_, a) = round_trip(&job(), &keep);
        let (_, mut b) = round_trip(&job(), &keep);
        assert!(std::ptr::eq(&*a.spec, &*b.spec));
        b.spec.account = Some("x".into());
        assert!(!std::ptr::eq(&*a.spec, &*b.spec));
        assert_eq!(a.spec.account, None);
        assert_eq!(b.clone().spec.into_inner().account.as_deref(), Some("x"));
    }

    #[test]
    fn unknown_names_are_refused() {
        for bad in ["jobid", "spec.nope", "nodes.x", "spec.account.x", ""] {
            let e = FieldSet::for_jobs(&[bad]).unwrap_err();
            assert_eq!(e.0, bad);
            assert!(e.to_string().contains("openapi"), "{e}");
        }
    }
}
