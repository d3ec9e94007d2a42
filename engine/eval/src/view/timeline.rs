//! A tape as a timeline, streamed: tracks, slices, instants and flows, one record at a time.
//!
//! Both the trace export ([`super::chrome_trace`]) and the HTML pages ([`super::html`]) read a
//! tape through [`Timeline`], so a slice means the same thing in Perfetto and in a report:
//!
//! * a **task track** per task (group [`Group::Tasks`]): one slice from its `spawn` to its
//!   `exit`, named after the task;
//! * an **actor track** per (actor, task) (group [`Group::Actor`]): one slice per
//!   `request`/`reply` pair, from the request's virtual time to the reply's; when one task has
//!   two calls to one actor open at once the second gets a lane of its own, so slices on a
//!   track always nest;
//! * **instants**: the `agent` actor's log records (turns, tool calls and results, retries,
//!   verifiers), failed replies (`{"Err": …}`: an injected fault or a refused call), input,
//!   outcome records and the verdict;
//! * **flows**: from the spawning task to the task it spawned (so a model reply that asks
//!   for tools points at each tool's task).
//!
//! Memory stays flat: only the calls and tasks still open are held.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use simtape::tape::{payload_to_json, RawRecord, RecordKind, TapeError, TapeHeader, TapeReader};

use super::describe;

/// Which kind of track.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// The tasks' lifetimes.
    Tasks,
    /// One actor's calls, by the index in the tape's actor table.
    Actor(u16),
}

/// One track: a task's lifetime, or one task's calls to one actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Track {
    /// Tasks or an actor.
    pub group: Group,
    /// The task.
    pub task: u32,
    /// 0, or the lane of a call made while another call of the task to the actor was open.
    pub lane: u32,
}

/// What the timeline shows, in tape order (so virtual time never decreases).
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    /// A track appears for the first time.
    Track {
        /// The track.
        track: Track,
        /// Its group's name (`tasks`, or the actor's name).
        group_name: String,
        /// The track's own name (`task 3 tool edit_file call_1_1`).
        name: String,
    },
    /// A slice opens.
    Begin(Item),
    /// The innermost open slice of a track closes.
    End {
        /// Where.
        track: Track,
        /// When, virtual nanoseconds.
        t_ns: u64,
        /// The record that closed it (`None`: the tape ended with it open).
        index: Option<u64>,
        /// The reply's payload and the fields read from it.
        args: Value,
    },
    /// A point in time.
    Instant(Item),
    /// A flow arrow starts (inside the slice open on `track`).
    FlowStart {
        /// Where.
        track: Track,
        /// When.
        t_ns: u64,
        /// Pairs it with its [`Mark::FlowEnd`].
        id: u64,
    },
    /// A flow arrow ends (at the slice that opens on `track` at `t_ns`).
    FlowEnd {
        /// Where.
        track: Track,
        /// When.
        t_ns: u64,
        /// Pairs it with its [`Mark::FlowStart`].
        id: u64,
    },
}

/// A slice's start or an instant: what, where and when, and the record it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Where.
    pub track: Track,
    /// When, virtual nanoseconds.
    pub t_ns: u64,
    /// What (`fs write`, `task main`, `agent retry`, `verdict`).
    pub name: String,
    /// The category (`llm`, `fs`, `task`, `retry`, `fault`, `verdict`, …).
    pub category: String,
    /// The record.
    pub index: u64,
    /// Its payload and the fields read from it.
    pub args: Value,
}

/// The actor whose records are the harness's log: drawn as instants, not calls.
const AGENT_ACTOR: &str = "agent";

/// Turns records into [`Mark`]s, holding only what is open.
#[derive(Debug)]
pub struct Timeline {
    actors: Vec<String>,
    /// Open calls per (actor, task): the lane of each, innermost last.
    open_calls: BTreeMap<(u16, u32), Vec<u32>>,
    /// Live tasks and their names (a task's track opens at its spawn).
    tasks: BTreeMap<u32, String>,
    /// Actor tracks already announced.
    announced: std::collections::BTreeSet<Track>,
    flows: u64,
    last_t_ns: u64,
}

impl Timeline {
    /// Starts a timeline for a tape with `header`.
    pub fn new(header: &TapeHeader) -> Timeline {
        Timeline {
            actors: header.actors.clone(),
            open_calls: BTreeMap::new(),
            tasks: BTreeMap::new(),
            announced: std::collections::BTreeSet::new(),
            flows: 0,
            last_t_ns: 0,
        }
    }

    /// Returns the name of actor `id` (`?` when the table has none).
    pub fn actor_name(&self, id: u16) -> &str {
        self.actors.get(usize::from(id)).map_or("?", String::as_str)
    }

    /// Returns whether a record of `kind` shows on the timeline (the others need no payload
    /// decoded: wakes, checkpoints, blobs).
    pub fn shows(kind: RecordKind) -> bool {
        !matches!(
            kind,
            RecordKind::Wake | RecordKind::Checkpoint | RecordKind::Blob
        )
    }

    /// Adds one record (its payload decoded to JSON) and appends what it shows to `out`.
    pub fn push(&mut self, record: &RawRecord, payload: Value, out: &mut Vec<Mark>) {
        self.last_t_ns = record.t_ns;
        match record.kind {
            RecordKind::Spawn => self.spawn(record, &payload, out),
            RecordKind::Exit => self.exit(record, payload, out),
            RecordKind::Request if self.actor_name(record.actor) == AGENT_ACTOR => {
                self.agent_event(record, payload, out);
            }
            RecordKind::Request => self.request(record, payload, out),
            RecordKind::Reply if self.actor_name(record.actor) == AGENT_ACTOR => {}
            RecordKind::Reply => self.reply(record, payload, out),
            RecordKind::Footer => self.footer(record, payload, out),
            RecordKind::Outcome | RecordKind::Input => {
                let name = record.kind.name().to_string();
                let track = self.task_track(record.task, out);
                out.push(Mark::Instant(Item {
                    track,
                    t_ns: record.t_ns,
                    name,
                    category: "run".into(),
                    index: record.index,
                    args: json!({ "payload": payload }),
                }));
            }
            RecordKind::Wake | RecordKind::Checkpoint | RecordKind::Blob => {}
        }
    }

    /// Closes whatever is still open at the end of the tape (a tape cut short, or tasks the
    /// run cancelled when its main task ended), innermost first.
    pub fn finish(&mut self, out: &mut Vec<Mark>) {
        let t_ns = self.last_t_ns;
        for ((actor, task), lanes) in std::mem::take(&mut self.open_calls) {
            for lane in lanes.into_iter().rev() {
                let track = Track {
                    group: Group::Actor(actor),
                    task,
                    lane,
                };
                out.push(Mark::End {
                    track,
                    t_ns,
                    index: None,
                    args: json!({ "unfinished": true }),
                });
            }
        }
        for task in std::mem::take(&mut self.tasks).into_keys() {
            out.push(Mark::End {
                track: Self::lifetime(task),
                t_ns,
                index: None,
                args: json!({ "status": "cancelled at the end of the run" }),
            });
        }
    }

    fn lifetime(task: u32) -> Track {
        Track {
            group: Group::Tasks,
            task,
            lane: 0,
        }
    }

    /// The task's lifetime track, announced (as a task the tape never spawned) if needed.
    fn task_track(&mut self, task: u32, out: &mut Vec<Mark>) -> Track {
        let track = Self::lifetime(task);
        if self.announced.insert(track) {
            out.push(Mark::Track {
                track,
                group_name: "tasks".into(),
                name: if task == 0 {
                    "engine".into()
                } else {
                    format!("task {task}")
                },
            });
        }
        track
    }

    fn spawn(&mut self, record: &RawRecord, payload: &Value, out: &mut Vec<Mark>) {
        let Some(child) = payload.get(0).and_then(Value::as_u64) else {
            return;
        };
        let child = u32::try_from(child).unwrap_or(u32::MAX);
        let name = payload.get(1).and_then(Value::as_str).unwrap_or("?");
        let track = Self::lifetime(child);
        self.announced.insert(track);
        out.push(Mark::Track {
            track,
            group_name: "tasks".into(),
            name: format!("task {child} {name}"),
        });
        self.tasks.insert(child, name.to_string());
        let flow = (record.task != 0 && self.tasks.contains_key(&record.task)).then(|| {
            self.flows += 1;
            self.flows
        });
        if let Some(id) = flow {
            out.push(Mark::FlowStart {
                track: Self::lifetime(record.task),
                t_ns: record.t_ns,
                id,
            });
        }
        out.push(Mark::Begin(Item {
            track,
            t_ns: record.t_ns,
            name: format!("task {name}"),
            category: "task".into(),
            index: record.index,
            args: json!({ "task": child, "spawned_by": record.task }),
        }));
        if let Some(id) = flow {
            out.push(Mark::FlowEnd {
                track,
                t_ns: record.t_ns,
                id,
            });
        }
    }

    fn exit(&mut self, record: &RawRecord, payload: Value, out: &mut Vec<Mark>) {
        if self.tasks.remove(&record.task).is_none() {
            return;
        }
        out.push(Mark::End {
            track: Self::lifetime(record.task),
            t_ns: record.t_ns,
            index: Some(record.index),
            args: json!({ "status": payload.get(0).cloned().unwrap_or(Value::Null) }),
        });
    }

    fn request(&mut self, record: &RawRecord, payload: Value, out: &mut Vec<Mark>) {
        let lanes = self
            .open_calls
            .entry((record.actor, record.task))
            .or_default();
        let lane = (0..).find(|l| !lanes.contains(l)).expect("a free lane");
        lanes.push(lane);
        let track = Track {
            group: Group::Actor(record.actor),
            task: record.task,
            lane,
        };
        let actor = self.actor_name(record.actor).to_string();
        if self.announced.insert(track) {
            let task_name = self.tasks.get(&record.task).map_or("", String::as_str);
            let suffix = if lane == 0 {
                String::new()
            } else {
                format!(" (lane {lane})")
            };
            out.push(Mark::Track {
                track,
                group_name: actor.clone(),
                name: format!("task {} {task_name}{suffix}", record.task)
                    .trim_end()
                    .to_string(),
            });
        }
        let operation = describe::operation(&payload).to_string();
        let mut args = describe::request_fields(&actor, &payload);
        args["request"] = payload;
        out.push(Mark::Begin(Item {
            track,
            t_ns: record.t_ns,
            name: format!("{actor} {operation}"),
            category: actor,
            index: record.index,
            args,
        }));
    }

    fn reply(&mut self, record: &RawRecord, payload: Value, out: &mut Vec<Mark>) {
        let key = (record.actor, record.task);
        // Calls of one task to one actor are answered in the order they were made.
        let Some(lane) = self.open_calls.get_mut(&key).and_then(|lanes| {
            let lane = *lanes.first()?;
            lanes.remove(0);
            Some(lane)
        }) else {
            return;
        };
        if self.open_calls.get(&key).is_some_and(Vec::is_empty) {
            self.open_calls.remove(&key);
        }
        let actor = self.actor_name(record.actor).to_string();
        let track = Track {
            group: Group::Actor(record.actor),
            task: record.task,
            lane,
        };
        let error = describe::reply_error(&payload);
        let mut args = describe::reply_fields(&actor, &payload);
        args["reply"] = payload;
        out.push(Mark::End {
            track,
            t_ns: record.t_ns,
            index: Some(record.index),
            args,
        });
        if let Some(error) = error {
            let track = self.task_track(record.task, out);
            out.push(Mark::Instant(Item {
                track,
                t_ns: record.t_ns,
                name: format!("{actor} error"),
                category: "fault".into(),
                index: record.index,
                args: json!({ "error": error }),
            }));
        }
    }

    fn agent_event(&mut self, record: &RawRecord, payload: Value, out: &mut Vec<Mark>) {
        let operation = describe::operation(&payload).to_string();
        let category = match operation.as_str() {
            "retry" => "retry",
            "crash" | "health_check" => "fault",
            "verifier" | "end" => "verdict",
            _ => "agent",
        };
        let track = self.task_track(record.task, out);
        let mut args = describe::agent_fields(&payload);
        args["payload"] = payload;
        out.push(Mark::Instant(Item {
            track,
            t_ns: record.t_ns,
            name: format!("agent {operation}"),
            category: category.into(),
            index: record.index,
            args,
        }));
    }

    fn footer(&mut self, record: &RawRecord, payload: Value, out: &mut Vec<Mark>) {
        self.finish(out);
        let track = self.task_track(0, out);
        out.push(Mark::Instant(Item {
            track,
            t_ns: record.t_ns,
            name: "verdict".into(),
            category: "verdict".into(),
            index: record.index,
            args: json!({ "verdict": payload.get(2).cloned().unwrap_or(Value::Null) }),
        }));
    }
}

/// Reads a whole tape through a [`Timeline`], handing `visit` each record's marks (and the
/// record, for callers that keep more of it); the reader is left after the footer.
pub fn walk<R: std::io::Read>(
    reader: &mut TapeReader<R>,
    mut visit: impl FnMut(&RawRecord, &mut Vec<Mark>) -> std::io::Result<()>,
) -> Result<(), super::ViewError> {
    let mut timeline = Timeline::new(reader.header());
    let mut marks = Vec::new();
    while let Some(record) = reader.next_record()? {
        marks.clear();
        if Timeline::shows(record.kind) {
            let payload = decode(reader, &record)?;
            timeline.push(&record, payload, &mut marks);
        }
        visit(&record, &mut marks)?;
    }
    Ok(())
}

/// Decodes a record's payload (from the content store when it is a reference); a payload
/// that does not decode shows as `{"payload_error": …}` rather than stopping the view.
pub fn decode<R: std::io::Read>(
    reader: &TapeReader<R>,
    record: &RawRecord,
) -> Result<Value, TapeError> {
    let bytes = reader.resolve(record)?;
    Ok(payload_to_json(&bytes).unwrap_or_else(|e| json!({ "payload_error": e.to_string() })))
}
