//! A tape as an indented tree for a terminal: model turns, then each turn's calls, then what
//! each tool's task did, with virtual times. `simtape tape show --tree` prints it and chooses
//! the colours; this module says only what each line is ([`Style`]).

use std::collections::BTreeMap;

use serde_json::Value;
use simtape::tape::TapeReader;
use simtape::time::format_ns;

use super::timeline::{walk, Item, Mark};
use super::ViewError;

/// What a line is, for the colour a terminal gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A model turn starts.
    Turn,
    /// A call to an actor, or a tool call, that succeeded or has no result.
    Call,
    /// Something that held or passed.
    Good,
    /// Something that failed: an error reply, a fault, a retry, a failed verifier or verdict.
    Bad,
    /// Anything else.
    Plain,
}

/// One line of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The virtual time it happened (a call: when it was asked).
    pub t_ns: u64,
    /// Indentation: 0 turns and verdicts, 1 the main task's calls, 2 and deeper the tasks
    /// it spawned.
    pub depth: usize,
    /// What it is.
    pub style: Style,
    /// The text.
    pub text: String,
}

impl Line {
    /// Returns the line as plain text: the time, then the text indented by depth.
    pub fn plain(&self) -> String {
        format!(
            "{:>14}  {}{}",
            format_ns(self.t_ns),
            "  ".repeat(self.depth),
            self.text
        )
    }
}

/// Reads the tape and hands `visit` its tree, line by line, in tape order (a call's line
/// comes when its reply does).
pub fn walk_tree<R: std::io::Read>(
    reader: &mut TapeReader<R>,
    mut visit: impl FnMut(&Line) -> std::io::Result<()>,
) -> Result<(), ViewError> {
    // The nesting level of each live task: main is 1, a task it spawns 2, …
    let mut levels: BTreeMap<u32, usize> = BTreeMap::new();
    let mut open: BTreeMap<(u16, u32, u32), Vec<(u64, String)>> = BTreeMap::new();
    walk(reader, |_, marks| {
        for mark in marks.drain(..) {
            if let Some(line) = line(mark, &mut levels, &mut open) {
                visit(&line)?;
            }
        }
        Ok(())
    })
}

type OpenCalls = BTreeMap<(u16, u32, u32), Vec<(u64, String)>>;

fn line(mark: Mark, levels: &mut BTreeMap<u32, usize>, open: &mut OpenCalls) -> Option<Line> {
    use super::timeline::Group;
    match mark {
        Mark::Begin(item) if item.track.group == Group::Tasks => {
            let parent = item.args["spawned_by"]
                .as_u64()
                .and_then(|t| u32::try_from(t).ok());
            let level = parent.and_then(|p| levels.get(&p)).map_or(1, |l| l + 1);
            levels.insert(item.track.task, level);
            None
        }
        Mark::End { track, .. } if track.group == Group::Tasks => {
            levels.remove(&track.task);
            None
        }
        Mark::Begin(Item {
            track,
            t_ns,
            name,
            args,
            ..
        }) => {
            let Group::Actor(actor) = track.group else {
                return None;
            };
            let subject = args
                .get("subject")
                .and_then(Value::as_str)
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            open.entry((actor, track.task, track.lane))
                .or_default()
                .push((t_ns, format!("{name}{subject}")));
            None
        }
        Mark::End {
            track, t_ns, args, ..
        } => {
            let Group::Actor(actor) = track.group else {
                return None;
            };
            let (start, text) = open.get_mut(&(actor, track.task, track.lane))?.pop()?;
            let failed = args.get("ok") == Some(&Value::Bool(false));
            Some(Line {
                t_ns: start,
                depth: levels.get(&track.task).copied().unwrap_or(1),
                style: if failed { Style::Bad } else { Style::Call },
                text: format!("{text} ({}){}", format_ns(t_ns - start), reply_note(&args)),
            })
        }
        Mark::Instant(Item {
            track,
            t_ns,
            name,
            args,
            ..
        }) => {
            let depth = levels.get(&track.task).copied().unwrap_or(0);
            let (depth, style, text) = instant(&name, &args, depth)?;
            Some(Line {
                t_ns,
                depth,
                style,
                text,
            })
        }
        Mark::Track { .. } | Mark::FlowStart { .. } | Mark::FlowEnd { .. } => None,
    }
}

/// What a reply adds to its call's line: a model call's tokens and stop reason, an error.
fn reply_note(args: &Value) -> String {
    let mut note = String::new();
    if let (Some(input), Some(output)) = (args.get("input_tokens"), args.get("output_tokens")) {
        note.push_str(&format!("  tokens {input} in, {output} out"));
    }
    if let Some(stop) = args.get("stop_reason").and_then(Value::as_str) {
        note.push_str(&format!("  {stop}"));
    }
    if args.get("ok") == Some(&Value::Bool(false)) {
        let error = args["reply"]
            .get(1)
            .and_then(|b| b.get("Err"))
            .map(Value::to_string);
        note.push_str(&format!("  error {}", error.unwrap_or_default()));
    }
    note
}

/// A harness event's features, comma-separated (`none` when empty).
fn feature_list(args: &Value) -> String {
    let ids: Vec<&str> = args
        .get("features")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if ids.is_empty() {
        "none".into()
    } else {
        ids.join(", ")
    }
}

/// An instant's line, if it has one: (depth, style, text).
// Long because: one match arm per instant kind, each its line's depth, style and text; a
// new kind is one arm.
fn instant(name: &str, args: &Value, depth: usize) -> Option<(usize, Style, String)> {
    let field = |key: &str| match args.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    Some(match name {
        "agent turn" => (0, Style::Turn, format!("turn {}", field("turn"))),
        // A tool call and its result sit beside the model call of the turn; the tool task's
        // own calls one level below them.
        "agent call" => (
            depth.saturating_sub(1).max(1),
            Style::Call,
            format!(
                "call {} {}({})",
                field("id"),
                field("tool"),
                field("arguments")
            ),
        ),
        "agent result" => {
            let ok = args.get("ok") == Some(&Value::Bool(true));
            let style = if ok { Style::Good } else { Style::Bad };
            let word = if ok { "ok" } else { "failed" };
            let depth = depth.saturating_sub(1).max(1);
            (
                depth,
                style,
                format!("result {} {word}, {} bytes", field("id"), field("size")),
            )
        }
        "agent retry" => (
            depth,
            Style::Bad,
            format!(
                "retry {} (attempt {}) after {} ms: {}",
                field("what"),
                field("attempt"),
                field("wait_ms"),
                field("error")
            ),
        ),
        "agent end" => (
            0,
            Style::Plain,
            format!(
                "agent ends: {} after {} turn(s)",
                field("reason"),
                field("turns")
            ),
        ),
        // A [harness] run's sessions are the tree's sections.
        "agent session" => (
            0,
            Style::Turn,
            format!(
                "== session {} ({}): {}",
                field("session"),
                field("phase"),
                feature_list(args)
            ),
        ),
        "agent crash" => (
            0,
            Style::Bad,
            format!("session {} crashed at {}", field("session"), field("at")),
        ),
        "agent health_check" => (
            0,
            Style::Bad,
            format!(
                "session {} health check failed: {}",
                field("session"),
                field("saw")
            ),
        ),
        "agent resume" => (
            0,
            Style::Plain,
            format!(
                "session {} resumes from the checkpoint of session {}",
                field("session"),
                field("checkpoint")
            ),
        ),
        "agent checkpoint" => {
            let status = field("status");
            let style = if status == "succeeded" {
                Style::Good
            } else {
                Style::Bad
            };
            (
                0,
                style,
                format!(
                    "checkpoint of session {}: {status} ({})",
                    field("session"),
                    field("note")
                ),
            )
        }
        "agent verifier" => {
            let held = args.get("held") == Some(&Value::Bool(true));
            let (style, word) = if held {
                (Style::Good, "held")
            } else {
                (Style::Bad, "FAILED")
            };
            (
                0,
                style,
                format!("verifier {:?} {word}: {}", field("name"), field("saw")),
            )
        }
        "verdict" => {
            let verdict = field("verdict");
            let style = if verdict == "ok" || verdict.starts_with("pass") {
                Style::Good
            } else {
                Style::Bad
            };
            (0, style, format!("verdict {verdict}"))
        }
        _ if args.get("error").is_some() => {
            (depth + 1, Style::Bad, format!("{name}: {}", field("error")))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use simtape::tape::TapeReader;

    #[test]
    fn the_race_reads_as_turns_calls_and_nested_file_operations() {
        // Goal: turns at depth 0, the model call under the main task, the tool tasks' fs
        // operations one level deeper, and the failed verifier marked bad.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tapes/race-edit/seed-0.tape");
        let mut reader = TapeReader::open(&path).expect("a tape");
        let mut lines = Vec::new();
        super::walk_tree(&mut reader, |line| {
            lines.push(line.clone());
            Ok(())
        })
        .expect("a tree");
        let text: Vec<String> = lines.iter().map(super::Line::plain).collect();
        let find = |needle: &str| {
            lines
                .iter()
                .find(|l| l.text.starts_with(needle))
                .unwrap_or_else(|| panic!("no line {needle:?} in\n{}", text.join("\n")))
        };
        assert_eq!(find("turn 1").depth, 0);
        let model = find("llm complete");
        assert_eq!(model.depth, 1);
        assert!(
            model.text.contains("tokens 359 in, 44 out"),
            "{}",
            model.text
        );
        assert_eq!(find("fs write config.toml").depth, 2);
        assert_eq!(
            find("verifier \"both edits landed\" FAILED").style,
            super::Style::Bad
        );
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.text.starts_with("fs write"))
                .count(),
            2
        );
    }
}
