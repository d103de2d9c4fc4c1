//! Slurm's value formats: times, memory sizes, timestamps, `--begin`, array specs,
//! dependency specs and hostlists. No panic on any input; a hostlist that expands compresses
//! back to the same hosts.
#![no_main]

use gsched_proto::{array, begin, depend, hostlist, units};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let s = String::from_utf8_lossy(rest);
    // A fixed "now": 2026-01-01T00:00:00Z.
    let now = 1_767_225_600;
    match which % 8 {
        0 => {
            let _ = units::parse_time_minutes(&s);
        }
        1 => {
            let _ = units::parse_time_limit(&s);
        }
        2 => {
            let _ = units::parse_memory_mb(&s);
        }
        3 => {
            let _ = units::parse_timestamp(&s);
        }
        4 => {
            let _ = begin::parse_begin(&s, now);
            let _ = begin::parse_past(&s, now);
        }
        5 => {
            let _ = array::parse(&s, Some(1001));
            let _ = array::parse_job_ref(&s);
        }
        6 => {
            let _ = depend::DependencySpec::parse(&s);
        }
        _ => {
            if let Ok(hosts) = hostlist::expand(&s) {
                if hosts.len() <= 2000 && hosts.iter().all(|h| !h.is_empty()) {
                    let c = hostlist::compress(&hosts);
                    let back = hostlist::expand(&c).expect("a compressed hostlist expands");
                    let mut a = hosts.clone();
                    let mut b = back;
                    a.sort();
                    a.dedup();
                    b.sort();
                    b.dedup();
                    assert_eq!(a, b, "{s:?} -> {c:?}");
                }
            }
        }
    }
});
