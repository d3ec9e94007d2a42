//! The Trace Event Format (the JSON that Perfetto and `chrome://tracing` open), written as the
//! tape is read: memory stays flat however long the tape.
//!
//! The mapping (docs/viewing.md has it for readers):
//!
//! * process 1 `tasks`: a thread per task, one `B`/`E` slice from spawn to exit;
//! * process `2 + actor id` per actor: a thread per task that called it (id `task`, or
//!   `lane << 32 | task` for a second call open at once), one `B`/`E` slice per
//!   request/reply pair;
//! * `i` instants (thread scope) for the harness's log, failed replies, inputs, outcomes
//!   and the verdict; `s`/`f` flow events from a spawning task to the task it spawned;
//! * `ts` is virtual time in microseconds with three decimals (exact nanoseconds);
//!   `displayTimeUnit` is `ns`; the tape's header is `otherData`.

use std::io::Write;

use serde::Serialize;
use serde_json::{json, Value};
use simtape::tape::TapeReader;

use super::timeline::{walk, Group, Item, Mark, Track};
use super::ViewError;

/// Returns the trace's process id of a track's group.
pub fn pid(group: Group) -> u64 {
    match group {
        Group::Tasks => 1,
        Group::Actor(actor) => 2 + u64::from(actor),
    }
}

/// Returns the trace's thread id of a track.
pub fn tid(track: Track) -> u64 {
    (u64::from(track.lane) << 32) | u64::from(track.task)
}

/// Converts virtual nanoseconds to the format's microseconds. Exact for any run shorter
/// than 104 days (2^53 ns): the shortest decimal that reads back as the quotient has at most
/// three decimals.
fn ts(t_ns: u64) -> f64 {
    t_ns as f64 / 1000.0
}

/// One trace event as written; a field the phase does not use is left out. (Serialized
/// straight from the struct: building a JSON map per event cost a third of the export.)
#[derive(Debug, Default, Serialize)]
struct Event<'a> {
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    pid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Value>,
}

/// Writes the trace of the tape `reader` reads to `out`; returns the number of trace events.
pub fn write<R: std::io::Read, W: Write>(
    reader: &mut TapeReader<R>,
    out: &mut W,
) -> Result<u64, ViewError> {
    let header = reader.header().clone();
    let other = json!({
        "seed": header.seed,
        "scenario": header.scenario.name,
        "scenario_sha256": header.scenario.digest,
        "engine_version": header.engine_version,
        "start_unix_ns": header.start_unix_ns,
        "time": "virtual",
    });
    write!(
        out,
        "{{\"displayTimeUnit\":\"ns\",\"otherData\":{other},\"traceEvents\":["
    )?;
    let mut events = 0u64;
    let mut groups_named = std::collections::BTreeSet::new();
    let mut emit = |out: &mut W, event: &Event<'_>| -> std::io::Result<()> {
        out.write_all(if events > 0 { b",\n" } else { b"\n" })?;
        events += 1;
        serde_json::to_writer(&mut *out, event).map_err(std::io::Error::other)
    };
    walk(reader, |_, marks| {
        for mut mark in marks.drain(..) {
            if let Mark::Track {
                track, group_name, ..
            } = &mark
            {
                if groups_named.insert(track.group) {
                    for event in process_events(track.group, group_name) {
                        emit(out, &event)?;
                    }
                }
            }
            emit(out, &event(&mut mark))?;
        }
        Ok(())
    })?;
    out.write_all(b"\n]}\n")?;
    out.flush()?;
    Ok(events)
}

/// The metadata that names a group's process and keeps the processes in actor order.
fn process_events(group: Group, name: &str) -> [Event<'_>; 2] {
    let pid = pid(group);
    [
        Event {
            ph: "M",
            name: Some("process_name"),
            pid,
            args: Some(json!({ "name": name })),
            ..Event::default()
        },
        Event {
            ph: "M",
            name: Some("process_sort_index"),
            pid,
            args: Some(json!({ "sort_index": pid })),
            ..Event::default()
        },
    ]
}

/// One mark as one trace event (its arguments moved out of the mark).
fn event(mark: &mut Mark) -> Event<'_> {
    let at = |phase: &'static str, track: Track, t_ns: u64| Event {
        ph: phase,
        ts: Some(ts(t_ns)),
        pid: pid(track.group),
        tid: Some(tid(track)),
        ..Event::default()
    };
    match mark {
        Mark::Track { track, name, .. } => Event {
            ph: "M",
            name: Some("thread_name"),
            pid: pid(track.group),
            tid: Some(tid(*track)),
            args: Some(json!({ "name": &*name })),
            ..Event::default()
        },
        Mark::Begin(item) => item_event("B", item),
        Mark::Instant(item) => Event {
            s: Some("t"),
            ..item_event("i", item)
        },
        Mark::End {
            track,
            t_ns,
            index,
            args,
        } => Event {
            args: Some(with_record(args, json!(index))),
            ..at("E", *track, *t_ns)
        },
        Mark::FlowStart { track, t_ns, id } => Event {
            name: Some("spawn"),
            cat: Some("flow"),
            id: Some(*id),
            ..at("s", *track, *t_ns)
        },
        // Bound to the slice that opens here, the spawned task's.
        Mark::FlowEnd { track, t_ns, id } => Event {
            name: Some("spawn"),
            cat: Some("flow"),
            id: Some(*id),
            bp: Some("e"),
            ..at("f", *track, *t_ns)
        },
    }
}

/// A slice's start (`B`) or an instant (`i`).
fn item_event<'a>(phase: &'static str, item: &'a mut Item) -> Event<'a> {
    let Item {
        track,
        t_ns,
        name,
        category,
        index,
        args,
    } = item;
    Event {
        ph: phase,
        name: Some(name),
        cat: Some(category),
        ts: Some(ts(*t_ns)),
        pid: pid(track.group),
        tid: Some(tid(*track)),
        args: Some(with_record(args, json!(*index))),
        ..Event::default()
    }
}

/// Moves `args` out, with the tape record's index added as `record`.
fn with_record(args: &mut Value, record: Value) -> Value {
    let mut args = std::mem::take(args);
    args["record"] = record;
    args
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use serde_json::Value;
    use simtape::tape::{RecordKind, TapeReader};

    /// The golden tapes of the repository's scenarios.
    fn golden_tapes() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tapes");
        let mut tapes = Vec::new();
        for scenario in std::fs::read_dir(&root).expect("tapes/") {
            for tape in std::fs::read_dir(scenario.expect("entry").path()).expect("a dir") {
                let path = tape.expect("entry").path();
                if path.extension().is_some_and(|e| e == "tape") {
                    tapes.push(path);
                }
            }
        }
        tapes.sort();
        tapes
    }

    /// What a trace holds, once the format's rules are checked.
    #[derive(Debug, Default)]
    struct Checked {
        slices_by_process: BTreeMap<String, u64>,
        flows: u64,
    }

    /// Checks the Trace Event Format's rules: every event has a phase, a pid and (but for
    /// process metadata) a tid; on each (pid, tid) `ts` never decreases and every `B` has its
    /// `E` in stack order; every flow start has its finish.
    fn check(trace: &Value) -> Result<Checked, String> {
        let events = trace["traceEvents"].as_array().ok_or("no traceEvents")?;
        let mut names = BTreeMap::new();
        let mut last_ts: BTreeMap<(u64, u64), f64> = BTreeMap::new();
        let mut open: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        let mut flows: BTreeMap<u64, i32> = BTreeMap::new();
        let mut checked = Checked::default();
        for (i, event) in events.iter().enumerate() {
            let phase = event["ph"].as_str().ok_or(format!("event {i}: no ph"))?;
            let pid = event["pid"].as_u64().ok_or(format!("event {i}: no pid"))?;
            if phase == "M" {
                if event["name"] == "process_name" {
                    names.insert(
                        pid,
                        event["args"]["name"].as_str().unwrap_or("").to_string(),
                    );
                }
                continue;
            }
            let tid = event["tid"].as_u64().ok_or(format!("event {i}: no tid"))?;
            let ts = event["ts"].as_f64().ok_or(format!("event {i}: no ts"))?;
            let last = last_ts.entry((pid, tid)).or_insert(ts);
            if ts < *last {
                return Err(format!(
                    "event {i}: ts {ts} before {last} on ({pid}, {tid})"
                ));
            }
            *last = ts;
            match phase {
                "B" => {
                    *open.entry((pid, tid)).or_default() += 1;
                    let process = names.get(&pid).cloned().unwrap_or_default();
                    *checked.slices_by_process.entry(process).or_default() += 1;
                }
                "E" => {
                    let depth = open.entry((pid, tid)).or_default();
                    if *depth == 0 {
                        return Err(format!("event {i}: E without B on ({pid}, {tid})"));
                    }
                    *depth -= 1;
                }
                "s" | "f" => {
                    let id = event["id"]
                        .as_u64()
                        .ok_or(format!("event {i}: flow without id"))?;
                    *flows.entry(id).or_default() += if phase == "s" { 1 } else { -1 };
                    checked.flows += u64::from(phase == "s");
                }
                "i" => {}
                other => return Err(format!("event {i}: unexpected phase {other}")),
            }
        }
        if let Some((track, depth)) = open.iter().find(|(_, depth)| **depth > 0) {
            return Err(format!("{depth} B without E on {track:?}"));
        }
        if let Some((id, _)) = flows.iter().find(|(_, n)| **n != 0) {
            return Err(format!("flow {id} is not paired"));
        }
        Ok(checked)
    }

    /// Counts a tape's request/reply pairs per actor (the harness's log is not a call).
    fn pairs_by_actor(path: &Path) -> BTreeMap<String, u64> {
        let mut reader = TapeReader::open(path).expect("a tape");
        let mut pairs = BTreeMap::new();
        while let Some(record) = reader.next_record().expect("a record") {
            let actor = reader.actor_name(record.actor).to_string();
            if record.kind == RecordKind::Reply && actor != "agent" {
                *pairs.entry(actor).or_default() += 1;
            }
        }
        pairs
    }

    #[test]
    fn every_golden_tape_exports_a_valid_trace_with_one_slice_per_call() {
        // Goal: the export keeps the format's rules and draws each request/reply pair once.
        let tapes = golden_tapes();
        assert!(tapes.len() >= 10, "the golden tapes are found");
        for path in tapes {
            let mut reader = TapeReader::open(&path).expect("a tape").keep_blobs(true);
            let mut bytes = Vec::new();
            super::write(&mut reader, &mut bytes).expect("the export");
            let trace: Value = serde_json::from_slice(&bytes).expect("JSON");
            let checked = check(&trace).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut slices = checked.slices_by_process.clone();
            slices.remove("tasks");
            assert_eq!(slices, pairs_by_actor(&path), "{}", path.display());
        }
    }

    #[test]
    fn the_race_shows_two_tool_tasks_spawned_from_the_model_turn() {
        // Goal: the race-edit tape has flows to both tool tasks and their fs calls overlap.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tapes/race-edit/seed-0.tape");
        let mut reader = TapeReader::open(&path).expect("a tape");
        let mut bytes = Vec::new();
        super::write(&mut reader, &mut bytes).expect("the export");
        let trace: Value = serde_json::from_slice(&bytes).expect("JSON");
        let checked = check(&trace).expect("valid");
        assert_eq!(checked.flows, 2);
        let events = trace["traceEvents"].as_array().expect("events");
        let fs_pid = 2 + 3; // the fs actor is id 3 in this tape's table
        let writes: Vec<(u64, f64)> = events
            .iter()
            .filter(|e| e["pid"] == fs_pid && e["name"] == "fs write" && e["ph"] == "B")
            .map(|e| {
                (
                    e["tid"].as_u64().expect("tid"),
                    e["ts"].as_f64().expect("ts"),
                )
            })
            .collect();
        assert_eq!(writes.len(), 2, "one write per tool task");
        assert_ne!(writes[0].0, writes[1].0, "on the two tasks' tracks");
        let verdicts = events.iter().filter(|e| e["cat"] == "verdict").count();
        assert!(verdicts >= 3, "two verifiers and the verdict: {verdicts}");
    }
}
