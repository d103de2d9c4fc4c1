//! The OpenAPI 3.0 document of the `/v1` API, made from the very types the servers and the
//! client use (their JSON schemas come from `schemars`, which follows their serde
//! attributes), so the reference cannot say something the API does not do.
//!
//! gsctld serves it at `/v1/openapi.json` (no credential needed, like `/metrics`);
//! `cargo run -p gsched-xtask -- openapi` writes the committed copy `docs/openapi.json`, and
//! tests keep the three equal.

use crate::acct::{AcctChange, AcctChangeResponse, AcctResponse};
use crate::api;
use schemars::gen::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

/// One operation: path, method, who calls it, what it does, request and response schemas.
struct Op {
    path: &'static str,
    method: &'static str,
    server: &'static str,
    summary: &'static str,
    request: Option<Value>,
    response: Value,
}

fn op<Req: JsonSchema, Resp: JsonSchema>(
    g: &mut SchemaGenerator,
    path: &'static str,
    method: &'static str,
    server: &'static str,
    summary: &'static str,
) -> Op {
    // A POST without a body (`()`, whose schema is `null`) has no requestBody.
    let request = (method == "post")
        .then(|| schema_value(g.subschema_for::<Req>()))
        .filter(|s| *s != json!({"type": "null"}));
    Op {
        path,
        method,
        server,
        summary,
        request,
        response: schema_value(g.subschema_for::<Resp>()),
    }
}

fn schema_value(s: schemars::schema::Schema) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    openapi30(&mut v);
    v
}

/// Rewrites what JSON Schema allows and OpenAPI 3.0 does not: tuples (`items` as a list,
/// from Rust tuples) become arrays of the one item type, or of `oneOf` the item types.
fn openapi30(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(items)) = m.get("items").cloned() {
                let first = items.first().cloned().unwrap_or(json!({}));
                let one = if items.iter().all(|i| *i == first) {
                    first
                } else {
                    json!({ "oneOf": items })
                };
                m.insert("items".into(), one);
            }
            for (_, x) in m.iter_mut() {
                openapi30(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(openapi30),
        _ => {}
    }
}

/// The whole document.
pub fn document() -> Value {
    let mut g = SchemaSettings::openapi3().into_generator();
    use crate::api::*;
    let ops = vec![
        op::<(), PingResponse>(&mut g, paths::PING, "get", "gsctld", "Is the controller up; its version and start time"),
        op::<SubmitRequest, SubmitResponse>(&mut g, paths::JOBS, "post", "gsctld", "Submit a job (stored before its id is returned); with test_only, validate and estimate only"),
        op::<JobQuery, JobsResponse>(&mut g, paths::JOBS_QUERY, "post", "gsctld", "Jobs the controller knows (gsqueue, gscontrol show job)"),
        op::<SignalJobsRequest, JobActionResponse>(&mut g, paths::JOBS_SIGNAL, "post", "gsctld", "Cancel or signal jobs (gscancel)"),
        op::<HoldRequest, JobActionResponse>(&mut g, paths::JOBS_HOLD, "post", "gsctld", "Hold or release pending jobs"),
        op::<JobUpdateRequest, Ack>(&mut g, paths::JOBS_UPDATE, "post", "gsctld", "Change a job (gscontrol update JobId=...)"),
        op::<RequeueRequest, JobActionResponse>(&mut g, paths::JOBS_REQUEUE, "post", "gsctld", "Requeue jobs"),
        op::<SuspendRequest, JobActionResponse>(&mut g, paths::JOBS_SUSPEND, "post", "gsctld", "Suspend or resume running jobs (administrators)"),
        op::<JobCompleteRequest, Ack>(&mut g, paths::JOBS_COMPLETE, "post", "gsctld", "A job ended on a node (gsnoded only)"),
        op::<crate::api::EpilogCompleteRequest, Ack>(&mut g, paths::NODES_EPILOG_COMPLETE, "post", "gsctld", "A job's Epilog finished on a node (gsnoded only)"),
        op::<api::JobCompleteBatch, api::BatchResponse>(&mut g, paths::JOBS_COMPLETE_BATCH, "post", "gsctld", "Several jobs ended on a node: one result per report, in order (gsnoded only)"),
        op::<HistoryQuery, JobsResponse>(&mut g, paths::JOBS_HISTORY, "post", "gsctld", "Finished and active jobs from the store (gsacct)"),
        op::<JobUsageQuery, JobUsageResponse>(&mut g, paths::JOBS_USAGE, "post", "gsctld", "Live usage of running jobs per node, from the heartbeats (gsstat, gscontrol show job; owners and administrators)"),
        op::<NodeUsageQuery, NodeUsageResponse>(&mut g, paths::NODES_USAGE, "post", "gsctld", "The nodes' recent load samples (memory, network) and stored hourly usage"),
        op::<(), NodesResponse>(&mut g, paths::NODES, "get", "gsctld", "Nodes and their states (gsinfo, gscontrol show node)"),
        op::<NodeUpdateRequest, Ack>(&mut g, paths::NODES_UPDATE, "post", "gsctld", "Drain, resume or down nodes (administrators)"),
        op::<RegisterRequest, RegisterResponse>(&mut g, paths::NODES_REGISTER, "post", "gsctld", "A node daemon registers (root or SlurmUser only)"),
        op::<HeartbeatRequest, HeartbeatResponse>(&mut g, paths::NODES_HEARTBEAT, "post", "gsctld", "A node daemon's heartbeat with the jobs it runs"),
        op::<(), PartitionsResponse>(&mut g, paths::PARTITIONS, "get", "gsctld", "Partitions"),
        op::<crate::api::PartitionUpdateRequest, Ack>(&mut g, paths::PARTITIONS_UPDATE, "post", "gsctld", "Change a partition until the controller reads its config again (administrators)"),
        op::<(), Ack>(&mut g, paths::RECONFIGURE, "post", "gsctld", "Check the config file, have every daemon read it again (administrators)"),
        op::<crate::api::SetDebugRequest, Ack>(&mut g, paths::SETDEBUG, "post", "gsctld", "Set the controller's log level until it reads its config again (administrators)"),
        op::<crate::api::ShutdownRequest, Ack>(&mut g, paths::SHUTDOWN, "post", "gsctld", "Stop the controller and the node daemons; jobs keep running (administrators)"),
        op::<(), ConfigResponse>(&mut g, paths::CONFIG, "get", "gsctld", "The running configuration (gscontrol show config)"),
        op::<(), AcctResponse>(&mut g, paths::ACCT, "get", "gsctld", "Accounts, users, associations, QOS and fair-share usage (gsacctmgr, gsprio)"),
        op::<AcctChange, AcctChangeResponse>(&mut g, paths::ACCT_UPDATE, "post", "gsctld", "Change the association table (administrators)"),
        op::<(), api::PricesResponse>(&mut g, paths::PRICES, "get", "gsctld", "Time-of-use prices of the next 24 hours and learned low-load hours (gsinfo --prices, --lowload)"),
        op::<(), PingResponse>(&mut g, paths::NODE_PING, "get", "gsnoded", "Is the node daemon up"),
        op::<LaunchRequest, Ack>(&mut g, paths::NODE_LAUNCH, "post", "gsnoded", "Start a job (from gsctld)"),
        op::<api::LaunchBatch, api::BatchResponse>(&mut g, paths::NODE_LAUNCH_BATCH, "post", "gsnoded", "Start several jobs of one scheduling pass: one result per job, in order (from gsctld)"),
        op::<NodeSignalRequest, Ack>(&mut g, paths::NODE_SIGNAL, "post", "gsnoded", "Signal a job's processes (from gsctld)"),
        op::<TerminateRequest, Ack>(&mut g, paths::NODE_TERMINATE, "post", "gsnoded", "End a job: SIGTERM, then SIGKILL after KillWait (from gsctld)"),
        op::<NodeSuspendRequest, Ack>(&mut g, paths::NODE_SUSPEND, "post", "gsnoded", "Freeze or thaw a job (from gsctld)"),
        op::<(), crate::resv::ReservationsResponse>(&mut g, paths::RESERVATIONS, "get", "gsctld", "Reservations (gscontrol show reservation, gsinfo -T)"),
        op::<crate::resv::ReservationAction, crate::resv::ReservationActionResponse>(&mut g, paths::RESERVATIONS_UPDATE, "post", "gsctld", "Create, update or delete a reservation (administrators)"),
        op::<crate::resv::RebootRequest, Ack>(&mut g, paths::NODES_REBOOT, "post", "gsctld", "Reboot nodes with RebootProgram (gscontrol reboot; administrators)"),
        op::<crate::resv::NodeRebootRequest, Ack>(&mut g, paths::NODE_REBOOT, "post", "gsnoded", "Run RebootProgram (from gsctld)"),
        op::<crate::resv::NodeHealthCheckRequest, Ack>(&mut g, paths::NODE_HEALTH_CHECK, "post", "gsnoded", "Run HealthCheckProgram (from gsctld)"),
        op::<crate::api::NodeEpilogRequest, Ack>(&mut g, paths::NODE_EPILOG, "post", "gsnoded", "Run the Epilog of an ended job (from gsctld)"),
        op::<(), Ack>(&mut g, paths::NODE_RECONFIGURE, "post", "gsnoded", "Read the config again in place; jobs keep running (from gsctld)"),
        op::<(), Ack>(&mut g, paths::NODE_SHUTDOWN, "post", "gsnoded", "Stop; jobs keep running (from gsctld)"),
        op::<crate::step::StepCreateRequest, crate::step::StepCreateResponse>(&mut g, paths::JOBS_STEPS, "post", "gsctld", "Create a job step in a running job and start its tasks (gsrun)"),
        op::<crate::step::StepCompleteRequest, Ack>(&mut g, paths::JOBS_STEPS_COMPLETE, "post", "gsctld", "A step's tasks all ended (gsrun)"),
        op::<crate::step::StepQuery, crate::step::StepsResponse>(&mut g, paths::JOBS_STEPS_QUERY, "post", "gsctld", "Job steps of some jobs, or the running ones (gsacct, gsqueue -s)"),
        op::<crate::step::StepSignalRequest, Ack>(&mut g, paths::JOBS_STEPS_SIGNAL, "post", "gsctld", "Cancel or signal one step (gscancel N.K)"),
        op::<crate::step::StepLaunchRequest, Ack>(&mut g, paths::NODE_STEP_LAUNCH, "post", "gsnoded", "Start one node's tasks of a step (from gsctld)"),
        op::<crate::step::NodeStepSignalRequest, Ack>(&mut g, paths::NODE_STEP_SIGNAL, "post", "gsnoded", "Signal or end a step's tasks, or every step of a job (from gsctld)"),
        op::<crate::step::StepIoRequest, crate::step::StepIoResponse>(&mut g, paths::NODE_STEP_IO, "post", "gsnoded", "New output of a step's tasks and how they ended (the step's user: gsrun)"),
        op::<crate::step::StepStdinRequest, Ack>(&mut g, paths::NODE_STEP_STDIN, "post", "gsnoded", "The next bytes of a step's input, or its end (the step's user: gsrun)"),
    ];
    let error = schema_value(g.subschema_for::<api::ApiError>());
    let mut paths_obj = Map::new();
    for o in ops {
        let mut operation = json!({
            "summary": o.summary,
            "tags": [o.server],
            "parameters": [{
                "name": api::PROTOCOL_HEADER,
                "in": "header",
                "required": true,
                "description": "The protocol version of the caller (see MIN_PROTOCOL_VERSION..PROTOCOL_VERSION)",
                "schema": {"type": "integer", "example": api::PROTOCOL_VERSION}
            }],
            "security": [{"munge": []}],
            "responses": {
                "200": {"description": "Success", "content": {"application/json": {"schema": o.response}}},
                "default": {"description": "An error in Slurm's words", "content": {"application/json": {"schema": error}}}
            }
        });
        if let Some(req) = o.request {
            operation["requestBody"] = json!({
                "required": true,
                "content": {"application/json": {"schema": req}}
            });
        }
        let entry = paths_obj
            .entry(o.path.to_string())
            .or_insert_with(|| json!({}));
        entry[o.method] = operation;
    }
    paths_obj.insert(
        paths::METRICS.to_string(),
        json!({"get": {
            "summary": "Prometheus metrics (OpenMetrics text; no credential)",
            "tags": ["gsctld"],
            "security": [],
            "responses": {"200": {"description": "OpenMetrics text", "content": {"application/openmetrics-text": {"schema": {"type": "string"}}}}}
        }}),
    );
    paths_obj.insert(
        paths::OPENAPI.to_string(),
        json!({"get": {
            "summary": "This document (no credential)",
            "tags": ["gsctld"],
            "security": [],
            "responses": {"200": {"description": "OpenAPI 3.0 document", "content": {"application/json": {"schema": {"type": "object"}}}}}
        }}),
    );
    let schemas: Map<String, Value> = g
        .definitions()
        .iter()
        .map(|(k, v)| (k.clone(), schema_value(v.clone())))
        .collect();
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "gsched API",
            "version": format!("{} (protocol {})", api::GSCHED_VERSION, api::PROTOCOL_VERSION),
            "description": "The one API of gsched: used by the commands, by gsnoded and by users' own scripts. HTTP/1.1 with JSON bodies; every request carries `authorization: Gsched <credential>` (a MUNGE credential under AuthType=auth/munge) and the protocol header. Errors are ApiError objects with Slurm's wording."
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "munge": {"type": "apiKey", "in": "header", "name": api::AUTH_HEADER, "description": "`Gsched <credential>`: a MUNGE credential (auth/munge) or the caller's ids (auth/none, loopback only)"}
            }
        },
        "paths": paths_obj
    })
}

/// The document as committed: pretty JSON with a final newline.
pub fn document_text() -> String {
    let mut s = serde_json::to_string_pretty(&document()).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_path_has_its_types() {
        let d = super::document();
        let paths = d["paths"].as_object().unwrap();
        assert!(paths.len() >= 25, "{}", paths.len());
        let submit = &d["paths"]["/v1/jobs"]["post"];
        assert_eq!(
            submit["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/SubmitRequest"
        );
        let schemas = d["components"]["schemas"].as_object().unwrap();
        for t in [
            "JobSpec",
            "JobInfo",
            "JobState",
            "ApiError",
            "LaunchRequest",
            "ArrayTask",
        ] {
            assert!(schemas.contains_key(t), "{t} missing");
        }
        // Deterministic: the same text every time.
        assert_eq!(super::document_text(), super::document_text());
    }
}
