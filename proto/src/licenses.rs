//! Licenses: cluster-wide counted resources (`Licenses=` in the config, `--licenses` of a
//! job), as Slurm's local licenses. A job starts only while enough of each license it names
//! is free; it holds them while it runs. Remote licenses (`name@db`, from slurmdbd) and
//! Slurm's `a|b` alternatives are refused with a message.

/// One license and a count: `name[:count]` (or `name*count`), count 1 when not given.
pub type License = (String, u32);

/// Parses `a:2,b,c*3` (names kept as written; duplicates added up, as a job's request).
pub fn parse(text: &str) -> Result<Vec<License>, String> {
    let mut out: Vec<License> = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!(
                "Invalid license specification {text:?}: an empty entry"
            ));
        }
        if item.contains('|') {
            return Err(format!(
                "Invalid license specification {text:?}: alternatives (a|b) are not supported by gsched; name the licenses to hold"
            ));
        }
        let (name, count) = match item.split_once([':', '*']) {
            Some((n, c)) => {
                let c: u32 = c.trim().parse().map_err(|_| {
                    format!("Invalid license specification {text:?}: {c:?} is no count")
                })?;
                (n.trim(), c)
            }
            None => (item, 1),
        };
        if name.contains('@') {
            return Err(format!(
                "Invalid license specification {text:?}: remote licenses ({name}) are not supported by gsched; use the cluster's Licenses= names"
            ));
        }
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c == '=') {
            return Err(format!(
                "Invalid license specification {text:?}: bad name {name:?}"
            ));
        }
        match out.iter_mut().find(|(n, _)| n == name) {
            Some(l) => l.1 = l.1.saturating_add(count),
            None => out.push((name.to_string(), count)),
        }
    }
    Ok(out)
}

/// `a:2,b:1`, as Slurm prints a job's licenses (`(null)` for none is the caller's).
pub fn format(list: &[License]) -> String {
    list.iter()
        .map(|(n, c)| format!("{n}:{c}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_default_to_one_and_repeats_add_up() {
        assert_eq!(
            parse("matlab:2, fluent,matlab*1").unwrap(),
            vec![("matlab".into(), 3), ("fluent".into(), 1)]
        );
        assert_eq!(format(&parse("a,b:4").unwrap()), "a:1,b:4");
        for bad in ["", "a,,b", "a:x", "a@db:1", "a|b", "a b:1"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
