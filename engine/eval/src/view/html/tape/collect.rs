//! What a tape page shows, collected from the tape's timeline in one pass: the drawn slices
//! and instants (within the budget and the window), the lanes packed into rows, the
//! transcript, the file tree changes, the verifiers and the verdict.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};
use simtape::tape::{TapeHeader, TapeReader};

use crate::view::describe::{self, TranscriptMessage, FS_CHANGES};
use crate::view::timeline::{walk, Group, Item, Mark, Track};
use crate::view::ViewError;

/// At most this many slices and instants are drawn; the rest are counted per lane.
pub const ITEMS_MAX: usize = 20_000;
/// A payload longer than this (as JSON text) is cut to it in the page.
pub const PAYLOAD_BYTES_MAX: usize = 64 * 1024;
/// At most this many messages in the transcript.
const TRANSCRIPT_MAX: usize = 2_000;
/// At most this many rows of file-tree changes.
const FS_CHANGES_MAX: usize = 2_000;

/// A window of virtual time: the page draws only what overlaps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// From, virtual nanoseconds.
    pub from_ns: u64,
    /// To (included), virtual nanoseconds.
    pub to_ns: u64,
}

/// A lane of the timeline.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TrackData {
    /// `tasks`, or the actor's name.
    pub group: String,
    /// The lane's name.
    pub name: String,
}

/// What a lane holds beyond the drawing budget or outside the window.
#[derive(Debug, Clone, Serialize)]
pub struct Beyond {
    /// The lane.
    pub lane: TrackData,
    /// Slices and instants not drawn.
    pub items: u64,
    /// The first one's virtual time.
    pub from_ns: u64,
    /// The last one's virtual time.
    pub to_ns: u64,
}

/// The timeline as the page's script reads it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TimelineData {
    /// The run's last virtual time.
    pub end_ns: u64,
    /// The lanes, grouped: tasks first, then each actor in the tape's actor table order.
    pub tracks: Vec<TrackData>,
    /// `[track, start_ns, end_ns, name, category, payload, failed]`.
    pub slices: Vec<(usize, u64, u64, String, String, usize, u8)>,
    /// `[track, t_ns, name, category, payload]`.
    pub instants: Vec<(usize, u64, String, String, usize)>,
    /// What a click shows.
    pub payloads: Vec<Value>,
    /// The tape records of each slice: `[begin, end]` (end -1: never answered).
    pub slice_records: Vec<(u64, i64)>,
    /// The tape record of each instant.
    pub instant_records: Vec<u64>,
    /// Per lane, what was not drawn (lanes with nothing drawn are only here). Rendered as a
    /// table by the page, not handed to its script.
    #[serde(skip)]
    pub beyond: Vec<Beyond>,
}

/// A change to the file tree, in the order the run made it.
#[derive(Debug, Clone, Serialize)]
pub struct FsChange {
    /// When it was asked.
    pub t_ns: u64,
    /// `write`, `rename`, …
    pub operation: String,
    /// The path (the first string of the request).
    pub path: String,
    /// Whether it was answered: `false` when the run ended first.
    pub answered: bool,
    /// Whether it succeeded (`None`: the reply says neither `Ok` nor `Err`, or none came).
    pub ok: Option<bool>,
}

/// A verifier's finding.
#[derive(Debug, Clone, Serialize)]
pub struct VerifierFinding {
    /// The verifier's name.
    pub name: String,
    /// Whether it held.
    pub held: bool,
    /// What it saw.
    pub saw: String,
}

/// Everything a tape page shows.
#[derive(Debug, Clone)]
pub struct TapeView {
    /// The tape's header.
    pub header: TapeHeader,
    /// The timeline.
    pub timeline: TimelineData,
    /// The conversation, message by message, with the virtual time it entered the run.
    pub transcript: Vec<(u64, TranscriptMessage)>,
    /// The changes to the file tree.
    pub fs_changes: Vec<FsChange>,
    /// The verifiers.
    pub findings: Vec<VerifierFinding>,
    /// The footer's verdict line.
    pub verdict: String,
    /// Records in the tape.
    pub records: u64,
}

/// A slice whose reply has not come yet.
struct Open {
    item: Item,
    fs_change: Option<usize>,
}

/// Collects a [`TapeView`] from the marks of a tape.
struct Collector {
    view: TapeView,
    window: Option<Window>,
    ids: BTreeMap<Track, usize>,
    open: BTreeMap<Track, Vec<Open>>,
    beyond: BTreeMap<usize, Beyond>,
}

impl TapeView {
    /// Reads the tape `reader` reads; with a `window`, the timeline draws only what
    /// overlaps it (the transcript, changes and verifiers are always whole).
    pub fn read<R: std::io::Read>(
        reader: &mut TapeReader<R>,
        window: Option<Window>,
    ) -> Result<TapeView, ViewError> {
        let mut collector = Collector {
            view: TapeView {
                header: reader.header().clone(),
                timeline: TimelineData::default(),
                transcript: Vec::new(),
                fs_changes: Vec::new(),
                findings: Vec::new(),
                verdict: String::new(),
                records: 0,
            },
            window,
            ids: BTreeMap::new(),
            open: BTreeMap::new(),
            beyond: BTreeMap::new(),
        };
        walk(reader, |record, marks| {
            collector.view.records = record.index + 1;
            collector.view.timeline.end_ns = record.t_ns;
            for mark in marks.drain(..) {
                collector.mark(mark);
            }
            Ok(())
        })?;
        Ok(collector.finish())
    }
}

impl Collector {
    fn track(&mut self, track: Track) -> usize {
        let next = self.ids.len();
        *self.ids.entry(track).or_insert(next)
    }

    fn mark(&mut self, mark: Mark) {
        match mark {
            Mark::Track {
                track,
                group_name,
                name,
            } => {
                let id = self.track(track);
                // The engine's lane (the verdict) is drawn last, apart from the tasks.
                let engine = track.group == Group::Tasks && track.task == 0;
                if id == self.view.timeline.tracks.len() {
                    self.view.timeline.tracks.push(TrackData {
                        group: if engine { "run".into() } else { group_name },
                        name,
                    });
                }
            }
            Mark::Begin(item) => self.begin(item),
            Mark::End {
                track,
                t_ns,
                index,
                args,
            } => self.end(track, t_ns, index, args),
            Mark::Instant(item) => self.instant(item),
            Mark::FlowStart { .. } | Mark::FlowEnd { .. } => {}
        }
    }

    fn begin(&mut self, item: Item) {
        let mut fs_change = None;
        if item.category == "llm" {
            // The model's own messages come back in later requests; the transcript has
            // them from the replies, at the time they were made.
            for message in describe::request_messages(&item.args["request"]) {
                if message.role != "assistant" {
                    self.transcript(item.t_ns, message);
                }
            }
        }
        let operation = describe::operation(&item.args["request"]).to_string();
        if item.category == "fs"
            && FS_CHANGES.contains(&operation.as_str())
            && self.view.fs_changes.len() < FS_CHANGES_MAX
        {
            fs_change = Some(self.view.fs_changes.len());
            self.view.fs_changes.push(FsChange {
                t_ns: item.t_ns,
                operation,
                path: item.args["subject"].as_str().unwrap_or("").to_string(),
                answered: false,
                ok: None,
            });
        }
        self.open
            .entry(item.track)
            .or_default()
            .push(Open { item, fs_change });
    }

    fn end(&mut self, track: Track, t_ns: u64, index: Option<u64>, args: Value) {
        let Some(Open { item, fs_change }) = self.open.get_mut(&track).and_then(Vec::pop) else {
            return;
        };
        let ok = args.get("ok").and_then(Value::as_bool);
        if let Some(change) = fs_change {
            self.view.fs_changes[change].answered = index.is_some();
            self.view.fs_changes[change].ok = ok;
        }
        if item.category == "llm" {
            if let Some(message) = describe::reply_message(&args["reply"]) {
                self.transcript(t_ns, message);
            }
        }
        let id = self.track(track);
        if !self.drawn(id, item.t_ns, t_ns) {
            return;
        }
        let mut payload = item.args;
        if let (Some(into), Value::Object(reply)) = (payload.as_object_mut(), args) {
            into.extend(reply);
        }
        payload["task"] = Value::from(track.task);
        let payload = self.payload(payload);
        let failed = u8::from(ok == Some(false));
        let slice = (
            id,
            item.t_ns,
            t_ns,
            item.name,
            item.category,
            payload,
            failed,
        );
        self.view.timeline.slices.push(slice);
        let end = index.map_or(-1, |i| i as i64);
        self.view.timeline.slice_records.push((item.index, end));
    }

    fn instant(&mut self, item: Item) {
        let args = &item.args;
        if item.name == "agent verifier" {
            self.view.findings.push(VerifierFinding {
                name: args["name"].as_str().unwrap_or("").to_string(),
                held: args["held"].as_bool().unwrap_or(false),
                saw: args["saw"].as_str().unwrap_or("").to_string(),
            });
        }
        if item.name == "verdict" {
            self.view.verdict = args["verdict"].as_str().unwrap_or("").to_string();
        }
        // A [harness] run's sessions divide the transcript into sections.
        if item.name == "agent session" {
            let features: Vec<&str> = args["features"]
                .as_array()
                .map(|ids| ids.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let message = TranscriptMessage {
                role: "session".into(),
                text: format!(
                    "session {} ({}): {}",
                    args["session"],
                    args["phase"].as_str().unwrap_or(""),
                    features.join(", ")
                ),
                calls: Vec::new(),
            };
            self.transcript(item.t_ns, message);
        }
        let id = self.track(item.track);
        if !self.drawn(id, item.t_ns, item.t_ns) {
            return;
        }
        let payload = self.payload(item.args);
        let instant = (id, item.t_ns, item.name, item.category, payload);
        self.view.timeline.instants.push(instant);
        self.view.timeline.instant_records.push(item.index);
    }

    /// Returns whether an item from `from_ns` to `to_ns` on lane `id` is drawn; counts it
    /// per lane when it is not.
    fn drawn(&mut self, id: usize, from_ns: u64, to_ns: u64) -> bool {
        let timeline = &self.view.timeline;
        if let Some(window) = self.window {
            if to_ns < window.from_ns || from_ns > window.to_ns {
                return false;
            }
        }
        if timeline.slices.len() + timeline.instants.len() < ITEMS_MAX {
            return true;
        }
        let beyond = self.beyond.entry(id).or_insert(Beyond {
            lane: TrackData::default(),
            items: 0,
            from_ns,
            to_ns,
        });
        beyond.items += 1;
        beyond.to_ns = to_ns;
        false
    }

    fn payload(&mut self, payload: Value) -> usize {
        let text = payload.to_string();
        let payload = if text.len() > PAYLOAD_BYTES_MAX {
            let mut cut = PAYLOAD_BYTES_MAX;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            json!({ "cut_at_bytes": PAYLOAD_BYTES_MAX, "bytes": text.len(), "head": &text[..cut] })
        } else {
            payload
        };
        self.view.timeline.payloads.push(payload);
        self.view.timeline.payloads.len() - 1
    }

    fn transcript(&mut self, t_ns: u64, message: TranscriptMessage) {
        if self.view.transcript.len() < TRANSCRIPT_MAX {
            self.view.transcript.push((t_ns, message));
        }
    }

    /// Orders the lanes (tasks, then actors in table order, the engine last), keeps those
    /// with something drawn, and packs the lanes of a group whose drawn spans do not overlap
    /// into one row (short-lived tasks one after another share a row, so the rows of a group
    /// are as many as its tasks at once); renumbers the items to match.
    fn finish(mut self) -> TapeView {
        let timeline = &mut self.view.timeline;
        let mut spans: Vec<Option<(u64, u64)>> = vec![None; timeline.tracks.len()];
        let items = timeline.slices.iter().map(|s| (s.0, s.1, s.2));
        for (id, from_ns, to_ns) in items.chain(timeline.instants.iter().map(|i| (i.0, i.1, i.1))) {
            let span = spans[id].get_or_insert((from_ns, to_ns));
            *span = (span.0.min(from_ns), span.1.max(to_ns));
        }
        let mut order: Vec<(Track, usize, (u64, u64))> = self
            .ids
            .iter()
            .filter_map(|(track, id)| Some((*track, *id, spans[*id]?)))
            .collect();
        let engine = |track: &Track| track.group == Group::Tasks && track.task == 0;
        order.sort_by_key(|(track, _, span)| (engine(track), track.group, span.0, *track));
        let tracks = std::mem::take(&mut timeline.tracks);
        let mut new_id = vec![0; tracks.len()];
        // Per row: its group, where its last span ends, its first lane and how many share it.
        let mut rows: Vec<(Group, u64, usize, usize)> = Vec::new();
        let mut group_start = 0;
        for (track, old, (from_ns, to_ns)) in &order {
            if rows.last().is_some_and(|row| row.0 != track.group) {
                group_start = rows.len();
            }
            let free = (group_start..rows.len()).find(|&r| rows[r].1 < *from_ns);
            let row = free.unwrap_or_else(|| {
                rows.push((track.group, 0, *old, 0));
                rows.len() - 1
            });
            rows[row].1 = *to_ns;
            rows[row].3 += 1;
            new_id[*old] = row;
        }
        timeline.tracks = rows
            .iter()
            .map(|&(_, _, first, lanes)| {
                let mut lane = tracks[first].clone();
                if lanes > 1 {
                    lane.name = format!("{} (+{} more, one after another)", lane.name, lanes - 1);
                }
                lane
            })
            .collect();
        for slice in &mut timeline.slices {
            slice.0 = new_id[slice.0];
        }
        for instant in &mut timeline.instants {
            instant.0 = new_id[instant.0];
        }
        let mut all: Vec<(&Track, &usize)> = self.ids.iter().collect();
        all.sort_by_key(|(track, _)| (engine(track), **track));
        for (_, old) in all {
            if let Some(mut beyond) = self.beyond.remove(old) {
                beyond.lane = tracks[*old].clone();
                timeline.beyond.push(beyond);
            }
        }
        self.view
    }
}

#[cfg(test)]
mod tests {
    use simtape::tape::{
        BlobMode, RecordKind, ScenarioStamp, TapeHeader, TapeReader, TapeSink, TapeWriter,
        CHECKPOINT_INTERVAL_RECORDS, FORMAT_VERSION,
    };

    use super::{TapeView, Window, ITEMS_MAX};

    /// Returns a writer of a tape in memory with the actors engine, clock, events, fs.
    fn writer() -> TapeWriter {
        let header = TapeHeader {
            format_version: FORMAT_VERSION,
            engine_version: "test".into(),
            seed: 1,
            start_unix_ns: 0,
            scenario: ScenarioStamp::default(),
            actors: ["engine", "clock", "events", "fs"]
                .map(String::from)
                .to_vec(),
            blob_mode: "embedded".into(),
            blob_threshold_bytes: 4096,
            checkpoint_interval_records: CHECKPOINT_INTERVAL_RECORDS,
            sandbox: None,
            decisions: None,
        };
        let sink = TapeSink::Memory(Vec::new());
        TapeWriter::new(sink, &header, BlobMode::Embedded, u64::MAX).unwrap()
    }

    /// Writes `record` (time, actor, task, kind, payload) or fails the test.
    fn put<T: serde::Serialize>(writer: &mut TapeWriter, record: (u64, u16, u32, RecordKind, T)) {
        let (t_ns, actor, task, kind, payload) = record;
        writer
            .write_value(t_ns, actor, task, kind, &payload)
            .unwrap();
    }

    /// Returns a tape in memory: task 1 writes `calls` files, one request/reply pair each,
    /// a millisecond apart.
    fn tape(calls: u64) -> Vec<u8> {
        let mut writer = writer();
        put(&mut writer, (0, 0, 0, RecordKind::Spawn, (1u32, "main")));
        for call in 0..calls {
            let t_ns = call * 1_000_000;
            let request = ("write", (format!("f{call}"), 1u32));
            put(&mut writer, (t_ns, 3, 1, RecordKind::Request, request));
            put(
                &mut writer,
                (t_ns + 500_000, 3, 1, RecordKind::Reply, ("write", "Ok")),
            );
        }
        let end_ns = calls * 1_000_000;
        put(&mut writer, (end_ns, 0, 1, RecordKind::Exit, ("ok",)));
        writer.finish(end_ns, "ok").unwrap().memory.unwrap()
    }

    #[test]
    fn tasks_one_after_another_share_a_row_and_tasks_at_once_do_not() {
        // Goal: the rows of a group are as many as its tasks at once, not as its tasks.
        let mut writer = writer();
        put(&mut writer, (0, 0, 0, RecordKind::Spawn, (1u32, "main")));
        // Tasks 2, 3, 4 one after another; task 5 beside task 4.
        for (task, start_ms) in [(2u32, 0u64), (3, 10), (4, 20), (5, 20)] {
            let (t_ns, end_ns) = (start_ms * 1_000_000, start_ms * 1_000_000 + 5_000_000);
            put(&mut writer, (t_ns, 0, 1, RecordKind::Spawn, (task, "tool")));
            put(
                &mut writer,
                (t_ns, 3, task, RecordKind::Request, ("write", ("f",))),
            );
            put(
                &mut writer,
                (end_ns, 3, task, RecordKind::Reply, ("write", "Ok")),
            );
            put(&mut writer, (end_ns, 0, task, RecordKind::Exit, ("ok",)));
        }
        put(&mut writer, (30_000_000, 0, 1, RecordKind::Exit, ("ok",)));
        let bytes = writer.finish(30_000_000, "ok").unwrap().memory.unwrap();
        let view = view(&bytes, None);
        let tracks = &view.timeline.tracks;
        let rows = |group: &str| tracks.iter().filter(|t| t.group == group).count();
        assert_eq!(rows("fs"), 2, "{tracks:?}");
        assert_eq!(rows("tasks"), 3, "main, and two rows of tools: {tracks:?}");
        let fs_rows: Vec<usize> = fs_slices(&view).map(|s| s.0).collect();
        assert_eq!(fs_rows[0], fs_rows[1], "tasks 2 and 3 share a row");
        assert_eq!(fs_rows[1], fs_rows[2], "and task 4 after them");
        assert_ne!(fs_rows[2], fs_rows[3], "task 5 beside task 4 does not");
    }

    /// The page's slices of the fs actor.
    fn fs_slices(
        view: &TapeView,
    ) -> impl Iterator<Item = &(usize, u64, u64, String, String, usize, u8)> {
        view.timeline.slices.iter().filter(|s| s.4 == "fs")
    }

    fn view(bytes: &[u8], window: Option<Window>) -> TapeView {
        let mut reader = TapeReader::new(bytes).unwrap();
        TapeView::read(&mut reader, window).unwrap()
    }

    #[test]
    fn a_long_tape_is_drawn_up_to_the_budget_and_the_rest_counted_per_lane() {
        // Goal: past ITEMS_MAX nothing more is drawn; the rest is counted on its lane.
        let calls = ITEMS_MAX as u64 + 500;
        let view = view(&tape(calls), None);
        let timeline = &view.timeline;
        assert_eq!(timeline.slices.len() + timeline.instants.len(), ITEMS_MAX);
        let counted: u64 = timeline.beyond.iter().map(|b| b.items).sum();
        // Every call, the task's lifetime and the verdict are either drawn or counted.
        assert_eq!(ITEMS_MAX as u64 + counted, calls + 2);
        let fs = timeline
            .beyond
            .iter()
            .find(|b| b.lane.group == "fs")
            .expect("the fs lane");
        assert!(fs.items >= 500, "{fs:?}");
        assert_eq!(
            view.fs_changes.len(),
            2_000,
            "the change list has its own cap"
        );
    }

    #[test]
    fn a_window_draws_only_what_overlaps_it() {
        // Goal: --from/--to keep the slices that overlap the window, and the lanes they are on.
        let view = view(
            &tape(100),
            Some(Window {
                from_ns: 10_200_000,
                to_ns: 12_000_000,
            }),
        );
        let starts: Vec<u64> = fs_slices(&view).map(|s| s.1).collect();
        assert_eq!(starts, vec![10_000_000, 11_000_000, 12_000_000]);
        assert!(view.timeline.tracks.iter().any(|t| t.group == "fs"));
    }
}
