//! The REST API reference: gsctld serves at `/v1/openapi.json`, without a credential, exactly
//! the document the API types make today, and that is the committed `docs/openapi.json`.

use gsched_tests::{ClusterOpts, TestCluster};
use std::io::{Read, Write};
use std::net::TcpStream;

#[test]
fn served_committed_and_generated_documents_are_equal() {
    let generated = gsched_proto::openapi::document_text();
    let committed = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json"),
    )
    .expect("docs/openapi.json");
    assert!(
        committed == generated,
        "docs/openapi.json differs from the API types; regenerate with `cargo run -p gsched-xtask -- openapi`"
    );
    // A real OpenAPI 3.0 validator, from the clients' venv (tests/clients/setup.sh).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let py = root.join(".clients-venv/bin/python");
    if py.exists() {
        let o = std::process::Command::new(&py)
            .arg("-c")
            .arg("import json,sys; from openapi_spec_validator import validate; validate(json.load(open(sys.argv[1])))")
            .arg(root.join("docs/openapi.json"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "docs/openapi.json is not valid OpenAPI 3.0: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    } else {
        eprintln!("no .clients-venv (run tests/clients/setup.sh): openapi-spec-validator not run");
    }
    let c = TestCluster::start(ClusterOpts::named("openapi").nodes(1));
    let mut s = TcpStream::connect(("127.0.0.1", c.ctld_port())).unwrap();
    write!(
        s,
        "GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    assert!(
        body == generated,
        "gsctld serves another document than the API types make (rebuild gsctld?)"
    );
    let doc: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(doc["openapi"], "3.0.3");
    // Every path the commands use is described.
    for p in [
        "/v1/jobs",
        "/v1/jobs/query",
        "/v1/jobs/signal",
        "/v1/nodes",
        "/v1/acct",
        "/v1/jobs/usage",
        "/v1/nodes/usage",
    ] {
        assert!(doc["paths"][p].is_object(), "{p} missing");
    }
    // Other paths still need a credential.
    let mut s = TcpStream::connect(("127.0.0.1", c.ctld_port())).unwrap();
    write!(
        s,
        "GET /v1/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(!resp.starts_with("HTTP/1.1 200"), "{resp}");
}
