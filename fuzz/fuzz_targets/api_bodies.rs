//! Request bodies as the daemons decode them (`proto/src/api.rs`); a decoded body encodes
//! again. No panic on any bytes.
#![no_main]

use gsched_proto::api::*;
use libfuzzer_sys::fuzz_target;

fn decode<T: serde::de::DeserializeOwned + serde::Serialize>(b: &[u8]) -> Option<T> {
    let v: T = serde_json::from_slice(b).ok()?;
    let again = serde_json::to_vec(&v).expect("a decoded body encodes");
    let _: T = serde_json::from_slice(&again).expect("an encoded body decodes");
    Some(v)
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, b)) = data.split_first() else {
        return;
    };
    match which % 14 {
        0 => {
            let _ = decode::<SubmitRequest>(b);
        }
        1 => {
            let _ = decode::<JobQuery>(b);
        }
        2 => {
            let _ = decode::<SignalJobsRequest>(b);
        }
        3 => {
            let _ = decode::<HoldRequest>(b);
        }
        4 => {
            let _ = decode::<JobUpdateRequest>(b);
        }
        5 => {
            let _ = decode::<RequeueRequest>(b);
        }
        6 => {
            let _ = decode::<JobCompleteRequest>(b);
        }
        7 => {
            let _ = decode::<HistoryQuery>(b);
        }
        8 => {
            let _ = decode::<NodeUpdateRequest>(b);
        }
        9 => {
            let _ = decode::<RegisterRequest>(b);
        }
        10 => {
            let _ = decode::<HeartbeatRequest>(b);
        }
        11 => {
            let _ = decode::<LaunchRequest>(b);
        }
        12 => {
            let _ = decode::<NodeSignalRequest>(b);
        }
        _ => {
            let _ = decode::<TerminateRequest>(b);
        }
    }
});
