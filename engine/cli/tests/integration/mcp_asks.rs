//! What a server sends on its own, recorded and replayed with the official Python client
//! (`callbacks.py`): server-everything's sampling and elicitation tools ask the client, and
//! `simtape mcp replay` must ask again, wait for the answer, check it, and go on; the client's
//! callbacks are then called exactly as during recording, in both eras. Peers as in `mcp.rs`.

use std::path::Path;

use serde_json::{json, Value};

use crate::clients::python_peer;
use crate::common::{load_json, scratch};
use crate::mcp::{kinds, peers, verify_against_everything, Peers};

/// The tools that ask the client: one sampling, one elicitation.
pub(crate) fn calls() -> Value {
    json!([
        ["trigger-sampling-request", {"prompt": "hello"}],
        ["trigger-elicitation-request", {}],
    ])
}

/// Runs `callbacks.py` in `mode` against `server` and returns its report.
pub(crate) fn callbacks(
    peers: &Peers,
    mode: &str,
    server: &[String],
    env: &[(&str, &str)],
) -> Value {
    python_peer(&peers.python, "callbacks.py", mode, &calls(), server, env)
}

pub(crate) fn simtape_mcp(args: &[&str], cassette: &Path, server: &[String]) -> Vec<String> {
    let mut line = vec![env!("CARGO_BIN_EXE_simtape").to_string(), "mcp".into()];
    line.extend(args.iter().map(|a| a.to_string()));
    line.push(cassette.display().to_string());
    if !server.is_empty() {
        line.push("--".into());
        line.extend(server.iter().cloned());
    }
    line
}

fn methods(report: &Value) -> Vec<Value> {
    let notes = report["notifications"].as_array().unwrap();
    notes.iter().map(|n| n["method"].clone()).collect()
}

#[test]
fn sampling_and_elicitation_replay_with_the_clients_callbacks_called_as_recorded() {
    // Goal: through `mcp record` the Python client sees what it sees live; replaying the
    // cassette calls its sampling and elicitation callbacks with the same params in the same
    // order and returns the same tool results, with the same notifications (handshake era)
    // and through input_required rounds (2026-07-28); a different sampling answer is a named
    // replay miss; verify against the live server finds no drift, and finds a changed
    // server request.
    let Some(peers) = peers() else { return };
    let dir = scratch("mcp-tests", "asks");
    let cassette = dir.join("asks.json");
    let live = callbacks(&peers, "legacy", &peers.everything(), &[]);
    assert_eq!(live["callbacks"].as_array().unwrap().len(), 2, "{live}");
    let record = simtape_mcp(&["record", "--cassette"], &cassette, &peers.everything());
    let recorded = callbacks(&peers, "legacy", &record, &[]);
    assert_eq!(recorded["callbacks"], live["callbacks"]);
    assert_eq!(recorded["calls"], live["calls"]);

    let messages = load_json(&cassette)["messages"].clone();
    let asked: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["from"] == "server" && m["message"]["id"].is_number())
        .filter(|m| m["message"]["method"].is_string())
        .map(|m| &m["message"]["method"])
        .collect();
    assert_eq!(asked, ["sampling/createMessage", "elicitation/create"]);

    let replay = simtape_mcp(&["replay", "--cassette"], &cassette, &[]);
    for mode in ["legacy", "2026-07-28"] {
        let replayed = callbacks(&peers, mode, &replay, &[]);
        assert_eq!(replayed["callbacks"], live["callbacks"], "{mode}");
        assert_eq!(replayed["calls"], live["calls"], "{mode}");
        if mode == "legacy" {
            assert_eq!(methods(&replayed), methods(&live));
            assert!(!methods(&live).is_empty());
        }
    }

    let other = callbacks(
        &peers,
        "legacy",
        &replay,
        &[("CALLBACKS_SAMPLING_PREFIX", "other")],
    );
    let missed = &other["calls"][0]["error"];
    assert_eq!(missed["code"], -31000, "{other}");
    let message = missed["message"].as_str().unwrap();
    assert!(
        message.contains("sampling/createMessage") && message.contains("/result/content/text"),
        "{message}"
    );
    assert_eq!(other["calls"][1], live["calls"][1]);

    let (code, report) = verify_against_everything(&peers, &cassette);
    assert_eq!((code, &report["drift"]), (0, &json!(false)), "{report:#}");
    let edited = std::fs::read_to_string(&cassette)
        .unwrap()
        .replace("You are a helpful test server.", "You are someone else.");
    let edited_path = dir.join("edited.json");
    std::fs::write(&edited_path, edited).unwrap();
    let (code, report) = verify_against_everything(&peers, &edited_path);
    assert_eq!(code, 1, "{report:#}");
    assert!(
        kinds(&report)
            .iter()
            .any(|k| k == "server_requests_changed"),
        "{report:#}"
    );
}
