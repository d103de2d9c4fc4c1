//! The output formats squeue and sinfo share: `-o` takes `%[.][size]type[suffix]` fields
//! after an optional prefix (`.` right-justifies, a size pads and usually truncates, `%all`
//! prints every letter), `-O` takes `Name[:[.][size][suffix]]` (no `:` means width 20, `:`
//! without digits means width 0). Each command describes its columns with [`Kind`].

/// A command's column kinds and how its formats name them.
pub trait Kind: Copy + PartialEq + 'static {
    /// An unknown letter or name: the field prints only its suffix.
    const INVALID: Self;
    /// The `-o` letters.
    const LETTERS: &'static [(char, Self)];
    /// The `-O` names (matched in any case).
    const NAMES: &'static [(&'static str, Self)];
    /// The word in the `-o` error `Invalid <what> format specification: x`.
    const LETTER_WHAT: &'static str;
    /// Whether `%#x` asks for a computed width (sinfo); elsewhere `#` is a letter.
    const HASH_AUTO: bool = false;
    /// What `%all` puts after each uppercase letter.
    const ALL_UPPER_PAD: &'static str = "";
    /// Whether the `-O` name `all` stands for `%all`.
    const NAME_ALL: bool = false;

    /// Whether `%#x` gives this kind a computed width.
    fn auto_width(self) -> bool {
        false
    }

    /// The kind an `-O` name stands for.
    fn by_name(name: &str) -> Option<Self> {
        lookup(Self::NAMES, name)
    }

    /// The width at the start of an `-O` size and the suffix after it.
    fn name_width(spec: &str) -> (usize, &str);
}

/// The kind `name` has in a name table (any case).
pub fn lookup<K: Copy>(names: &[(&str, K)], name: &str) -> Option<K> {
    names
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, k)| *k)
}

/// One output column; `auto` means the width is computed (sinfo's `%#P`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<K> {
    pub kind: K,
    pub width: usize,
    pub right: bool,
    pub auto: bool,
    pub suffix: String,
}

/// A parsed output format: a prefix and the columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format<K> {
    pub prefix: String,
    pub fields: Vec<Field<K>>,
    /// Errors to print (`Invalid job format specification: x`); output goes on.
    pub errors: Vec<String>,
}

impl<K> Default for Format<K> {
    fn default() -> Self {
        Format {
            prefix: String::new(),
            fields: Vec::new(),
            errors: Vec::new(),
        }
    }
}

impl<K: Kind> Format<K> {
    /// Whether a column of one of `kinds` is shown.
    pub fn has(&self, kinds: &[K]) -> bool {
        self.fields.iter().any(|f| kinds.contains(&f.kind))
    }

    /// One output line with its newline: the prefix, then each field's cell (`cell` pads
    /// it; an invalid field has none) followed by the field's suffix.
    pub fn line(&self, mut cell: impl FnMut(&Field<K>) -> String) -> String {
        let mut s = self.prefix.clone();
        for f in &self.fields {
            if f.kind != K::INVALID {
                s.push_str(&cell(f));
            }
            s.push_str(&f.suffix);
        }
        s.push('\n');
        s
    }

    fn push(&mut self, kind: K, width: usize, right: bool, auto: bool, suffix: String) {
        self.fields.push(Field {
            kind,
            width,
            right,
            auto,
            suffix,
        });
    }

    /// An unknown letter or name: the error, and a field that prints `suffix`.
    fn push_invalid(&mut self, error: String, width: usize, right: bool, suffix: String) {
        self.errors.push(error);
        self.push(K::INVALID, width, right, false, suffix);
    }
}

/// Parses an `-o` format (squeue's and sinfo's `parse_format`).
pub fn parse<K: Kind>(fmt: &str) -> Format<K> {
    let mut out = Format::default();
    let (prefix, rest) = match fmt.find('%') {
        None => (fmt, ""),
        Some(i) => (&fmt[..i], &fmt[i..]),
    };
    out.prefix = prefix.to_string();
    let all;
    let (body, format_all) = if fmt.eq_ignore_ascii_case("%all") {
        let mut s = String::from("%a");
        for c in 'b'..='z' {
            s.push_str(&format!("|%{c}"));
        }
        for c in 'A'..='Z' {
            s.push_str(&format!("|%{c}{}", K::ALL_UPPER_PAD));
        }
        all = s;
        (all.as_str(), true)
    } else {
        (rest, false)
    };
    for token in body.split('%').filter(|t| !t.is_empty()) {
        let b = token.as_bytes();
        let mut i = 0;
        let right = if b.first() == Some(&b'.') {
            i = 1;
            true
        } else {
            false
        };
        let auto = if K::HASH_AUTO && b.get(i) == Some(&b'#') {
            i += 1;
            true
        } else {
            false
        };
        let mut width: usize = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            width = width
                .saturating_mul(10)
                .saturating_add(usize::from(b[i] - b'0'));
            i += 1;
        }
        let letter = token[i..].chars().next();
        let suffix = letter
            .map(|c| token[i + c.len_utf8()..].to_string())
            .unwrap_or_default();
        match letter.and_then(|c| K::LETTERS.iter().find(|(l, _)| *l == c)) {
            Some((_, kind)) => out.push(*kind, width, right, auto && kind.auto_width(), suffix),
            None if format_all => {}
            None => out.push_invalid(
                format!(
                    "Invalid {} format specification: {}",
                    K::LETTER_WHAT,
                    letter.map(String::from).unwrap_or_default()
                ),
                width,
                right,
                format!("%{token}"),
            ),
        }
    }
    out
}

/// Parses an `-O` format (`name[:[.][width][suffix]]`, default width 20). An unknown name
/// is a `job` format error in sinfo too.
pub fn parse_names<K: Kind>(fmt: &str) -> Format<K> {
    let mut out = Format::default();
    for token in fmt.split(',').filter(|t| !t.is_empty()) {
        let (name, width, right, suffix) = match token.split_once(':') {
            None => (token, 20usize, false, String::new()),
            Some((name, spec)) => {
                let (right, spec) = match spec.strip_prefix('.') {
                    Some(s) => (true, s),
                    None => (false, spec),
                };
                let (w, rest) = K::name_width(spec);
                (name, w, right, rest.to_string())
            }
        };
        if K::NAME_ALL && name.eq_ignore_ascii_case("all") {
            out.fields.extend(parse::<K>("%all").fields);
            continue;
        }
        match K::by_name(name) {
            Some(kind) => out.push(kind, width, right, false, suffix),
            None => out.push_invalid(
                format!("Invalid job format specification: {name}"),
                width,
                right,
                suffix,
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum K {
        A,
        B,
        Bad,
    }

    impl Kind for K {
        const INVALID: K = K::Bad;
        const LETTERS: &'static [(char, K)] = &[('a', K::A), ('B', K::B)];
        const NAMES: &'static [(&'static str, K)] = &[("alpha", K::A)];
        const LETTER_WHAT: &'static str = "test";

        fn name_width(spec: &str) -> (usize, &str) {
            let digits = spec.bytes().take_while(u8::is_ascii_digit).count();
            (spec[..digits].parse().unwrap_or(0), &spec[digits..])
        }
    }

    #[test]
    fn letters_widths_suffixes_and_errors() {
        let f = parse::<K>("pre%.5a|%#B%3x.");
        assert_eq!(f.prefix, "pre");
        assert_eq!(
            f.fields,
            vec![
                Field {
                    kind: K::A,
                    width: 5,
                    right: true,
                    auto: false,
                    suffix: "|".into()
                },
                Field {
                    kind: K::Bad,
                    width: 0,
                    right: false,
                    auto: false,
                    suffix: "%#B".into()
                },
                Field {
                    kind: K::Bad,
                    width: 3,
                    right: false,
                    auto: false,
                    suffix: "%3x.".into()
                },
            ]
        );
        assert_eq!(
            f.errors,
            vec![
                "Invalid test format specification: #",
                "Invalid test format specification: x"
            ]
        );
        let all = parse::<K>("%all");
        assert!(all.errors.is_empty());
        assert_eq!(all.fields.len(), 2);
        assert_eq!(all.line(|f| format!("{:?}", f.kind)), "A|B|\n");
    }

    #[test]
    fn names() {
        let f = parse_names::<K>("ALPHA,alpha:.3|,beta:2");
        assert_eq!(f.fields[0].width, 20);
        assert_eq!((f.fields[1].width, f.fields[1].right), (3, true));
        assert_eq!(f.fields[1].suffix, "|");
        assert_eq!(f.fields[2].kind, K::Bad);
        assert_eq!(f.errors, vec!["Invalid job format specification: beta"]);
        assert!(f.has(&[K::A]) && !f.has(&[K::B]));
    }
}
