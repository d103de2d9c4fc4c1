//! The `gres.conf` and `gsched.conf` examples of docs/gpu-sharing.md are accepted as written.

use gsched_proto::config::Config;
use gsched_proto::gres_conf::GresConf;
use std::path::Path;

fn blocks<'a>(doc: &'a str, lang: &str) -> Vec<&'a str> {
    doc.split(&format!("```{lang}\n"))
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect()
}

#[test]
fn the_documented_examples_parse() {
    let doc = include_str!("../../docs/gpu-sharing.md");
    let gres = blocks(doc, "gres.conf");
    assert_eq!(gres.len(), 1);
    let g = GresConf::parse(gres[0], Path::new("/etc/gsched/gres.conf"))
        .unwrap_or_else(|e| panic!("{e}\n{}", gres[0]));
    assert!(format!("{g:?}").contains("a100"), "{g:?}");
    let conf = blocks(doc, "gsched.conf");
    assert_eq!(conf.len(), 1);
    let c = Config::parse(
        &format!("SlurmctldHost=h\n{}", conf[0]),
        Path::new("/etc/gsched/gsched.conf"),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", conf[0]));
    assert_eq!(c.partitions.len(), 2);
    assert!(c.partitions.iter().any(|p| p.gpu_multiuser));
}
