//! Decoding of the capability tables: `[fs]` (the overlay root, its faults and latency),
//! `[network]` (the allow-list), `[llm]` (the replay fixture) and `[process]` (the process
//! tape and the mode of each program).
//!
//! Decoding only reads the text: the files these tables name are opened later, by
//! `resources`, so a problem with a file is reported at the field that names it.

use std::collections::BTreeMap;

use super::decode::Decoder;
use super::fields::{one_of, Field};
use super::schema::{
    FsSpec, HandoverSpec, LlmSpec, PathField, ProcessSpec, FS_KEYS, FS_LATENCY_KEYS, PROCESS_KEYS,
};
use crate::cap::fs::{FsFaults, FsLatency};
use crate::cap::net::{Network, Rule};
use crate::cap::process::ProcessMode;
use crate::rng::Ratio;

/// Decodes `[fs]`.
pub(crate) fn fs(decoded: &mut Decoder, field: &Field<'_>) -> Option<FsSpec> {
    let mut fields = decoded.table(field, "an [fs] table like { root = \"data/worktree\" }")?;
    let root = match fields.take("root") {
        Some(root) => path(
            decoded,
            &root,
            "a directory path relative to the scenario file",
        ),
        None => {
            decoded.missing(
                &fields,
                "root",
                "a directory path relative to the scenario file",
            );
            None
        }
    };
    let allow_outside = match fields.take("allow_outside") {
        Some(field) => {
            let flag = field.boolean();
            if flag.is_none() {
                decoded.expected(&field, "true or false");
            }
            flag
        }
        None => Some(false),
    };
    let mut ratio = |key: &str, decoded: &mut Decoder| match fields.take(key) {
        Some(value) => self::ratio(decoded, &value),
        None => Some(Ratio::ZERO),
    };
    let enospc = ratio("enospc", decoded);
    let eio = ratio("eio", decoded);
    let partial_write = ratio("partial_write", decoded);
    let latency = match fields.take("latency") {
        Some(latency) => self::latency(decoded, &latency),
        None => Some(FsLatency::default()),
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&FS_KEYS)),
    );
    Some(FsSpec {
        root: root?,
        allow_outside: allow_outside?,
        faults: FsFaults {
            enospc: enospc?,
            eio: eio?,
            partial_write: partial_write?,
        },
        latency: latency?,
    })
}

/// A chance per operation: `"1/10"`, `"5%"`, `"0"` or `"1"`. Strings only, so no float ever
/// reaches the random stream.
pub fn ratio(decoded: &mut Decoder, field: &Field<'_>) -> Option<Ratio> {
    const WHAT: &str = "a ratio like \"1/10\" or \"5%\" (at most 1)";
    let text = decoded.string(field, WHAT)?;
    let ratio = Ratio::parse(text);
    if ratio.is_none() {
        decoded.expected(field, WHAT);
    }
    ratio
}

/// `[fs] latency = { base = "20us", per_kib = "1us", jitter = "5us" }`; each key defaults to
/// the default model's value.
fn latency(decoded: &mut Decoder, field: &Field<'_>) -> Option<FsLatency> {
    let what = "a table like { base = \"20us\", per_kib = \"1us\", jitter = \"5us\" }";
    let mut fields = decoded.table(field, what)?;
    let default = FsLatency::default();
    let mut duration = |key: &str, value: u64, decoded: &mut Decoder| match fields.take(key) {
        Some(field) => decoded.duration(&field),
        None => Some(value),
    };
    let base_ns = duration("base", default.base_ns, decoded);
    let per_kib_ns = duration("per_kib", default.per_kib_ns, decoded);
    let jitter_ns = duration("jitter", default.jitter_ns, decoded);
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&FS_LATENCY_KEYS)),
    );
    Some(FsLatency {
        base_ns: base_ns?,
        per_kib_ns: per_kib_ns?,
        jitter_ns: jitter_ns?,
    })
}

/// Decodes `[network]`: deny by default, `allow` lists the exceptions, each a rule of
/// `docs/network.md` reported at its own place when it does not parse.
pub(crate) fn network(decoded: &mut Decoder, field: &Field<'_>) -> Option<Network> {
    let what = "a [network] table like { allow = [\"api.github.com\"] }";
    let mut fields = decoded.table(field, what)?;
    let network = match fields.take("allow") {
        Some(allow) => allow_list(decoded, &allow),
        None => Some(Network::deny()),
    };
    fields.finish(decoded, "unknown key, expected `allow`");
    network
}

fn allow_list(decoded: &mut Decoder, field: &Field<'_>) -> Option<Network> {
    const WHAT: &str = "a network rule like \"api.github.com\" or \"10.0.0.0/8\"";
    let items = decoded.array(field, "an array of network rules like [\"api.github.com\"]")?;
    let mut network = Some(Network::deny());
    for item in &items {
        let Some(text) = decoded.string(item, WHAT) else {
            network = None;
            continue;
        };
        // `Rule::parse` first, so a bad rule is reported without consuming the policy.
        match Rule::parse(text) {
            Ok(_) => {
                network = network.and_then(|n| n.try_allow(text).ok());
            }
            Err(error) => {
                decoded.problem(item.span.clone(), item.path.clone(), error.to_string());
                network = None;
            }
        }
    }
    network
}

/// Decodes `[llm]`.
pub(crate) fn llm(decoded: &mut Decoder, field: &Field<'_>) -> Option<LlmSpec> {
    let what = "an [llm] table like { fixture = \"data/llm.jsonl\" }";
    let mut fields = decoded.table(field, what)?;
    const FIXTURE: &str = "a fixture file path relative to the scenario file";
    let fixture = match fields.take("fixture") {
        Some(fixture) => path(decoded, &fixture, FIXTURE),
        None => {
            decoded.missing(&fields, "fixture", FIXTURE);
            None
        }
    };
    let record = match fields.take("record") {
        Some(record) => super::llm_record::decode(decoded, &record, fixture.as_ref()).map(Some),
        None => Some(None),
    };
    let handover = match fields.take("handover") {
        Some(handover) => llm_handover(decoded, &handover).map(Some),
        None => Some(None),
    };
    fields.finish(
        decoded,
        "unknown key, expected `fixture`, `record` or `handover`",
    );
    Some(LlmSpec {
        fixture: fixture?,
        record: record?,
        handover: handover?,
    })
}

/// Decodes `[llm.handover]`.
fn llm_handover(decoded: &mut Decoder, field: &Field<'_>) -> Option<HandoverSpec> {
    let what = "an [llm.handover] table like { from_call = 2, fixture = \"data/other.jsonl\" }";
    let mut fields = decoded.table(field, what)?;
    const FROM_CALL: &str = "the run's model call the other fixture answers from, 1 or more";
    const FIXTURE: &str = "a fixture file path relative to the scenario file";
    let from_call = match fields.take("from_call") {
        Some(call) => decoded
            .integer(&call, 1, i64::MAX, FROM_CALL)
            .map(|n| n.unsigned_abs()),
        None => {
            decoded.missing(&fields, "from_call", FROM_CALL);
            None
        }
    };
    let fixture = match fields.take("fixture") {
        Some(fixture) => path(decoded, &fixture, FIXTURE),
        None => {
            decoded.missing(&fields, "fixture", FIXTURE);
            None
        }
    };
    fields.finish(decoded, "unknown key, expected `from_call` or `fixture`");
    Some(HandoverSpec {
        from_call: from_call?,
        fixture: fixture?,
    })
}

/// Decodes `[process]`: an optional process tape (required once some mode is replay), the
/// default mode, the mode of each named program, and the WASI modules' directory (required
/// once some mode is wasi).
pub(crate) fn process(decoded: &mut Decoder, field: &Field<'_>) -> Option<ProcessSpec> {
    let what = "a [process] table like { tape = \"data/process.jsonl\", default = \"replay\" }";
    let mut fields = decoded.table(field, what)?;
    const TAPE: &str = "a process tape path relative to the scenario file";
    let tape = match fields.take("tape") {
        Some(tape) => path(decoded, &tape, TAPE).map(Some),
        None => Some(None),
    };
    let default = match fields.take("default") {
        Some(default) => process_mode(decoded, &default),
        None => Some(None),
    };
    let (programs, wasi_programs, complete) = match fields.take("programs") {
        Some(programs) => program_modes(decoded, &programs),
        None => (BTreeMap::new(), Vec::new(), true),
    };
    const WASI_DIR: &str = "a directory of WASI modules relative to the scenario file";
    let wasi_dir = match fields.take("wasi_dir") {
        Some(dir) => path(decoded, &dir, WASI_DIR).map(Some),
        None => Some(None),
    };
    let wasi = default == Some(Some(ProcessMode::Wasi)) || !wasi_programs.is_empty();
    let wasi_dir = match wasi_dir {
        // A program in wasi mode runs `<wasi_dir>/<program>.wasm`.
        Some(None) if wasi => {
            let what = format!("{WASI_DIR} (a program is in wasi mode)");
            decoded.missing(&fields, "wasi_dir", &what);
            None
        }
        wasi_dir => wasi_dir,
    };
    let replays = default == Some(Some(ProcessMode::Replay))
        || programs
            .values()
            .any(|mode| *mode == Some(ProcessMode::Replay));
    let tape = match tape {
        // Replay answers from the tape, so a replayed program needs one.
        Some(None) if replays => {
            let what = format!("{TAPE} (a program is in replay mode)");
            decoded.missing(&fields, "tape", &what);
            None
        }
        tape => tape,
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&PROCESS_KEYS)),
    );
    Some(ProcessSpec {
        tape: tape?,
        default: default?,
        programs: complete.then_some(programs)?,
        wasi_dir: wasi_dir?,
        wasi_programs,
    })
}

/// `programs = { git = "replay", echo = "real" }`: each key is a program exactly as the
/// steps name it. Returns the modes that decoded, the entries in wasi mode, and whether all
/// decoded.
fn program_modes(
    decoded: &mut Decoder,
    field: &Field<'_>,
) -> (BTreeMap<String, Option<ProcessMode>>, Vec<PathField>, bool) {
    let what = "a table of program modes like { git = \"replay\" }";
    let mut programs = BTreeMap::new();
    let mut wasi_programs = Vec::new();
    let Some(mut fields) = decoded.table(field, what) else {
        return (programs, wasi_programs, false);
    };
    let keys: Vec<String> = fields.entries.iter().map(|e| e.key.clone()).collect();
    let mut complete = true;
    for key in keys {
        let value = fields
            .take(&key)
            .expect("the key is one of the table's entries");
        match process_mode(decoded, &value) {
            Some(mode) => {
                if mode == Some(ProcessMode::Wasi) {
                    wasi_programs.push(PathField {
                        path: key.clone(),
                        span: value.span.clone(),
                        field: value.path.clone(),
                    });
                }
                programs.insert(key, mode);
            }
            None => complete = false,
        }
    }
    (programs, wasi_programs, complete)
}

/// A scenario's process mode: `hermetic` (`None`), `replay`, `record`, `real` or `wasi`.
fn process_mode(decoded: &mut Decoder, field: &Field<'_>) -> Option<Option<ProcessMode>> {
    let what = format!(
        "a process mode `hermetic`, {}",
        crate::cap::process::scenario_modes()
    );
    match decoded.string(field, &what)? {
        "hermetic" => Some(None),
        "replay" => Some(Some(ProcessMode::Replay)),
        // The program runs for real and is written to a process tape that `simtape run`
        // creates (`--record-dir`); sweeps and ci refuse such a scenario.
        "record" => Some(Some(ProcessMode::Record)),
        "real" => Some(Some(ProcessMode::Real)),
        "wasi" => Some(Some(ProcessMode::Wasi)),
        _ => {
            decoded.expected(field, &what);
            None
        }
    }
}

/// A non-empty path string, remembered with its place.
pub fn path(decoded: &mut Decoder, field: &Field<'_>, what: &str) -> Option<PathField> {
    let text = decoded.string(field, what)?;
    if text.is_empty() || text.contains('\0') {
        decoded.expected(field, what);
        return None;
    }
    Some(PathField {
        path: text.to_string(),
        span: field.span.clone(),
        field: field.path.clone(),
    })
}
