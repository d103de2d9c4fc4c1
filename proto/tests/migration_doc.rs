//! `docs/migrating-from-slurm.md` names every key the config parser implements, so the
//! migration guide cannot fall behind the code.

use gsched_proto::config::{GLOBAL_KEYS, NODE_KEYS, PARTITION_KEYS};

#[test]
fn migration_guide_names_every_implemented_key() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/migrating-from-slurm.md");
    let doc = std::fs::read_to_string(&path).expect("docs/migrating-from-slurm.md");
    let missing: Vec<&str> = GLOBAL_KEYS
        .iter()
        .chain(NODE_KEYS)
        .chain(PARTITION_KEYS)
        .copied()
        .filter(|k| !doc.contains(&format!("`{k}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/migrating-from-slurm.md does not mention these implemented keys (add them to its tables): {missing:?}"
    );
}
