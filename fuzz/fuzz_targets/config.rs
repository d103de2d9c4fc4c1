//! gsched.conf text (slurm.conf syntax), and the values parsed behind `AuthInfo=` and
//! `PrivateData=`. `Include` lines are dropped: they read other files, and the config is
//! written by the administrator, who may include what they like.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text: String = text
        .lines()
        .filter(|l| !l.trim_start().to_ascii_lowercase().starts_with("include"))
        .collect::<Vec<_>>()
        .join("\n");
    let _ = gsched_proto::config::Config::parse(&text, Path::new("/nonexistent/gsched.conf"));
    let _ = gsched_proto::config::PrivateData::parse(&text);
    let _ = gsched_auth::munge::MungeOptions::parse(&text);
});
