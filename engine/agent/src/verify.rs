//! The verifiers: run inside the simulation once the agent and the scripted tasks are done,
//! in file order, each leaving a `verifier` record with what it saw.
//!
//! | kind          | reads                                                        |
//! |---------------|--------------------------------------------------------------|
//! | `fs`          | the overlay's diff and final content (the fs actor's state)  |
//! | `answer`      | the agent's final answer                                     |
//! | `tool_called` | the agent's tool calls, arguments matched as a subset        |
//! | `world_goal`  | an MCP world's report: goal assertions, collateral damage     |
//! | `gate`        | a program run through the process capability (on the tape)   |
//! | `outcome`     | the last value a scripted `outcome` step gave that name      |
//!
//! Each check returns `Ok(evidence)` when it holds and `Err(mismatch)` when it does not; both
//! become the result's `saw`.

use crate::spec::{Check, FsState, TextMatch, VerifySpec};
use serde_json::Value;
use simtape::actor::ActorRef;
use simtape::cap::fs::{FsActor, FsDiff, FsError};
use simtape::cap::process::{Command, ProcessError};

use crate::command::GateRun;
use crate::ctx::Ctx;
use crate::log::AgentEvent;
use simtape_eval::VerifierResult;

use crate::report::AgentError;
use crate::tools::process::{exit_code, stops_the_run};
use crate::transcript::Transcript;
use simtape_mcp::world::Scored;

/// Characters of a text that a verifier's `saw` quotes.
pub const SAW_CHARS_MAX: usize = 120;

/// What a check saw when it did not hold: what it expected and what it found instead. Not
/// an error of the run: it becomes the verifier's `saw`, and the verdict is `fail`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Mismatch(pub(crate) String);

/// What a check saw: evidence when it held, the mismatch when not.
pub(crate) type Seen = Result<String, Mismatch>;

/// Runs every verifier; the error is a gate's replay that cannot answer (it stops the run).
pub(crate) async fn run_all(
    ctx: &Ctx,
    outcomes: &[(String, Value)],
) -> Result<Vec<VerifierResult>, AgentError> {
    run_list(ctx, &ctx.shared.eval.verify, outcomes).await
}

/// Runs `verifiers` in order against the run as it stands (a harness validates features and
/// checks health with them between sessions).
pub(crate) async fn run_list(
    ctx: &Ctx,
    verifiers: &[VerifySpec],
    outcomes: &[(String, Value)],
) -> Result<Vec<VerifierResult>, AgentError> {
    let mut diff = None;
    let mut results = Vec::with_capacity(verifiers.len());
    let mut gates_run = 0;
    for spec in verifiers {
        let seen = match &spec.check {
            Check::Gate { exit_code, .. }
                if ctx.shared.eval.command.is_some() && ctx.shared.eval.harness.is_none() =>
            {
                gates_run += 1;
                recorded_gate(ctx, gates_run - 1, *exit_code)
            }
            Check::Gate {
                program,
                args,
                exit_code,
            } => gate(ctx, spec, program, args, *exit_code).await?,
            check => read_only(ctx, &spec.name, check, &mut diff, outcomes)?,
        };
        let held = seen.is_ok();
        let saw = seen.unwrap_or_else(|mismatch| mismatch.0);
        let event = AgentEvent::Verifier {
            name: spec.name.clone(),
            held,
            saw: saw.clone(),
        };
        ctx.record(event).await;
        results.push(VerifierResult {
            name: spec.name.clone(),
            line: spec.line,
            held,
            saw,
        });
    }
    Ok(results)
}

/// Runs a check that only reads the run (every kind but `gate`); `name` is the verifier's
/// or property's, for an fs escape. `diff` keeps the overlay's diff between checks.
pub(crate) fn read_only(
    ctx: &Ctx,
    name: &str,
    check: &Check,
    diff: &mut Option<Result<FsDiff, FsError>>,
    outcomes: &[(String, Value)],
) -> Result<Seen, AgentError> {
    Ok(match check {
        Check::Fs {
            path,
            state,
            content,
        } => fs(ctx, diff, path, *state, content).map_err(|error| AgentError::VerifierEscape {
            verifier: name.to_string(),
            error,
        })?,
        Check::Answer(expected) => answer(ctx, expected),
        Check::ToolCalled { tool, args, called } => tool_called(ctx, tool, args.as_ref(), *called),
        Check::WorldGoal {
            server,
            allow_collateral,
        } => world_goal(ctx, server, *allow_collateral),
        Check::Outcome { name, value } => outcome(outcomes, name, value),
        Check::Gate { .. } => Err(Mismatch(
            "a gate runs a program: it is a verifier, not a read-only check".into(),
        )),
    })
}

/// What a driver outside the eval pipeline saw of a run (`simtape serve`'s in-process
/// agent, a test function): its transcript as the model traffic shows it, the tools its
/// requests offered, and each MCP world's score.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// The agent's turns, tool calls and final answer.
    pub transcript: &'a Transcript,
    /// The tools the agent offered the model (`None`: unknown, not checked).
    pub offered: Option<&'a [String]>,
    /// Each `[[mcp]]` server by name: the score of the world behind it, `None` for a
    /// cassette.
    pub worlds: &'a std::collections::BTreeMap<String, Option<Scored>>,
}

/// One verifier as a driver outside the pipeline judged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// It was judged: held or not, with what it saw.
    Result(VerifierResult),
    /// Its kind reads what the driver cannot see (`fs`, `gate`, `outcome`: the agent's files
    /// and programs are its own), so it was not judged.
    Unseen {
        /// The verifier's name.
        name: String,
        /// Its kind.
        kind: &'static str,
        /// Why that kind cannot be judged from what the driver sees.
        why: &'static str,
    },
}

/// Judges `verifiers` in file order against what `observed` holds: `answer`, `tool_called`
/// and `world_goal` read it exactly as the pipeline's verifiers read a run; the other kinds
/// are [`Judged::Unseen`].
pub fn judge_observed(verifiers: &[VerifySpec], observed: &Observed<'_>) -> Vec<Judged> {
    let judged = |spec: &VerifySpec, seen: Seen| {
        let held = seen.is_ok();
        Judged::Result(VerifierResult {
            name: spec.name.clone(),
            line: spec.line,
            held,
            saw: seen.unwrap_or_else(|mismatch| mismatch.0),
        })
    };
    let unseen = |spec: &VerifySpec, kind, why| Judged::Unseen {
        name: spec.name.clone(),
        kind,
        why,
    };
    verifiers
        .iter()
        .map(|spec| match &spec.check {
            Check::Answer(expected) => judged(spec, answer_in(observed.transcript, expected)),
            Check::ToolCalled { tool, args, called } => {
                let seen = calls_in(
                    observed.transcript,
                    observed.offered,
                    tool,
                    args.as_ref(),
                    *called,
                );
                judged(spec, seen)
            }
            Check::WorldGoal {
                server,
                allow_collateral,
            } => {
                let seen = match observed.worlds.get(server) {
                    None => Err(Mismatch(format!("no [[mcp]] server is named {server:?}"))),
                    Some(scored) => goal_in(server, scored.as_ref(), *allow_collateral),
                };
                judged(spec, seen)
            }
            Check::Fs { .. } => unseen(
                spec,
                "fs",
                "it reads the agent's files, which an in-process agent keeps on the host",
            ),
            Check::Gate { .. } => unseen(
                spec,
                "gate",
                "it runs a program where the agent worked, which serve does not see",
            ),
            Check::Outcome { .. } => unseen(
                spec,
                "outcome",
                "it reads a scripted task's outcome, and an in-process session runs none",
            ),
        })
        .collect()
}

/// Checks `text` against every expectation given, the first that fails named.
pub(crate) fn text_match(expected: &TextMatch, text: &str) -> Result<(), Mismatch> {
    if let Some(equals) = &expected.equals {
        if text != equals {
            return Err(Mismatch(format!(
                "expected {}, found {}",
                quote(equals),
                quote(text)
            )));
        }
    }
    if let Some(contains) = &expected.contains {
        if !text.contains(contains.as_str()) {
            return Err(Mismatch(format!(
                "expected to contain {contains:?}, found {}",
                quote(text)
            )));
        }
    }
    if let Some(excludes) = &expected.excludes {
        if text.contains(excludes.as_str()) {
            return Err(Mismatch(format!(
                "expected not to contain {excludes:?}, found {}",
                quote(text)
            )));
        }
    }
    if let Some(pattern) = &expected.matches {
        if !pattern.is_match(text) {
            return Err(Mismatch(format!(
                "expected to match /{}/, found {}",
                pattern.as_str(),
                quote(text)
            )));
        }
    }
    Ok(())
}

/// Quotes the first [`SAW_CHARS_MAX`] characters of `text`, with `…` when it goes on.
pub(crate) fn quote(text: &str) -> String {
    match text.char_indices().nth(SAW_CHARS_MAX) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

/// Returns a path the way the overlay's diff spells it (`/`-separated, no `.` parts).
fn diff_key(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    parts.join("/")
}

fn state_name(state: FsState) -> &'static str {
    match state {
        FsState::Added => "added",
        FsState::Modified => "modified",
        FsState::Deleted => "deleted",
        FsState::Unchanged => "unchanged",
        FsState::Exists => "exists",
        FsState::Absent => "absent",
    }
}

/// The error is an escape out of the root: the verifier cannot look, and the run is blocked.
fn fs(
    ctx: &Ctx,
    diff: &mut Option<Result<FsDiff, FsError>>,
    path: &str,
    state: FsState,
    content: &TextMatch,
) -> Result<Seen, FsError> {
    let Some(actor) = ctx.host.capabilities().fs() else {
        return Ok(Err(Mismatch(
            "the scenario has no [fs] overlay".to_string(),
        )));
    };
    let key = diff_key(path);
    let exists = match actor.with_state(|fs| fs.overlay().stat(&key)) {
        Ok(_) => true,
        Err(FsError::NotFound { .. } | FsError::NotADirectory { .. }) => false,
        Err(error @ FsError::Escape { .. }) => return Err(error),
        Err(error) => return Ok(Err(Mismatch(format!("cannot look at the path: {error}")))),
    };
    Ok(fs_state(&actor, diff, &key, exists, state, content))
}

fn fs_state(
    actor: &ActorRef<FsActor>,
    diff: &mut Option<Result<FsDiff, FsError>>,
    key: &str,
    exists: bool,
    state: FsState,
    content: &TextMatch,
) -> Seen {
    let diff = diff.get_or_insert_with(|| actor.with_state(|fs| fs.diff()));
    let diff = diff
        .as_ref()
        .map_err(|error| Mismatch(format!("the fs diff could not be computed: {error}")))?;
    let change = if diff.added.iter().any(|file| file.path == key) {
        Some("added")
    } else if diff.modified.iter().any(|file| file.path == key) {
        Some("modified")
    } else if diff.deleted.iter().any(|file| file.path == key) {
        Some("deleted")
    } else {
        None
    };
    let found = change.unwrap_or(if exists { "unchanged" } else { "absent" });
    let holds = match state {
        FsState::Added | FsState::Modified | FsState::Deleted => change == Some(state_name(state)),
        // A path that exists on neither side is not "unchanged": a misspelt path would
        // make the check hold whatever the run did (`absent` says that one on purpose).
        FsState::Unchanged => change.is_none() && exists,
        FsState::Exists => exists,
        FsState::Absent => !exists,
    };
    if !holds {
        let expected = state_name(state);
        let found = match state {
            FsState::Exists if !exists => "absent",
            FsState::Unchanged if change.is_none() => {
                "absent (the path exists neither before nor after the run)"
            }
            _ => found,
        };
        return Err(Mismatch(format!("expected {expected}, found {found}")));
    }
    if content.is_empty() {
        return Ok(format!("found {found}"));
    }
    let bytes = actor
        .with_state(|fs| fs.overlay().read(key))
        .map_err(|error| {
            Mismatch(format!(
                "expected content, found an unreadable file: {error}"
            ))
        })?;
    let text = String::from_utf8_lossy(&bytes);
    match text_match(content, &text) {
        Ok(()) => Ok(format!("found {found}, content as expected")),
        Err(mismatch) => Err(Mismatch(format!("content {mismatch}"))),
    }
}

/// A gate of an agent program: its run in the agent's working directory is on the tape (the
/// driver ran it after the agent ended); `index` counts the gates in file order.
fn recorded_gate(ctx: &Ctx, index: usize, expected: i32) -> Seen {
    let gates = ctx.state.gates.borrow();
    let Some(run) = gates.get(index) else {
        return Err(Mismatch(
            "the gate did not run: the agent's session ended first".into(),
        ));
    };
    match (run.exit_code, &run.error) {
        (_, Some(error)) => Err(Mismatch(format!("cannot run the gate: {error}"))),
        (Some(code), None) if code == expected => Ok(format!("exit code {code}")),
        (Some(code), None) => Err(Mismatch(format!(
            "expected exit code {expected}, found {code}"
        ))),
        (None, None) => Err(Mismatch("the gate was ended by a signal".to_string())),
    }
}

fn answer(ctx: &Ctx, expected: &TextMatch) -> Seen {
    if ctx.shared.eval.agent.is_none() && ctx.shared.eval.command.is_none() {
        return Err(Mismatch(
            "no final answer: the scenario has no [agent]".to_string(),
        ));
    }
    answer_in(&ctx.state.transcript.borrow(), expected)
}

/// The `answer` check against a transcript.
fn answer_in(transcript: &Transcript, expected: &TextMatch) -> Seen {
    let Some(answer) = &transcript.answer else {
        return Err(Mismatch(format!(
            "no final answer (ended: {})",
            transcript.end_label()
        )));
    };
    text_match(expected, answer)?;
    Ok(format!("found {}", quote(answer)))
}

/// Returns whether `actual` holds everything `expected` holds: objects key by key (extra
/// keys allowed), everything else equal.
fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => expected
            .iter()
            .all(|(key, value)| actual.get(key).is_some_and(|found| subset(value, found))),
        _ => expected == actual,
    }
}

fn tool_called(ctx: &Ctx, tool: &str, args: Option<&Value>, called: bool) -> Seen {
    // Without an agent, `called = false` would hold whatever the run did.
    if ctx.shared.eval.agent.is_none() && ctx.shared.eval.command.is_none() {
        return Err(Mismatch(
            "no tool calls: the scenario has no [agent]".to_string(),
        ));
    }
    let offered = ctx.state.offered_tools.borrow();
    calls_in(
        &ctx.state.transcript.borrow(),
        offered.as_deref(),
        tool,
        args,
        called,
    )
}

/// The `tool_called` check against a transcript and, when known, the tools the agent was
/// offered (for a tool never offered, `called = false` would hold whatever the run did).
fn calls_in(
    transcript: &Transcript,
    offered: Option<&[String]>,
    tool: &str,
    args: Option<&Value>,
    called: bool,
) -> Seen {
    if let Some(offered) = offered {
        if !offered.iter().any(|name| name == tool) {
            return Err(Mismatch(format!(
                "no tool named {tool:?} is offered to the agent (tools: {})",
                offered.join(", ")
            )));
        }
    }
    let calls: Vec<&Value> = transcript
        .calls()
        .filter(|call| call.name == tool)
        .map(|call| &call.arguments)
        .collect();
    let matching: Vec<&Value> = calls
        .iter()
        .copied()
        .filter(|arguments| args.is_none_or(|expected| subset(expected, arguments)))
        .collect();
    let wanted = args.map_or(String::new(), |args| format!(" with arguments {args}"));
    match (called, matching.first()) {
        (true, Some(_)) => Ok(format!("found {} matching call(s)", matching.len())),
        (true, None) if calls.is_empty() => {
            Err(Mismatch(format!("expected a call{wanted}, found none")))
        }
        (true, None) => Err(Mismatch(format!(
            "expected a call{wanted}, found {} call(s), none matching (first arguments {})",
            calls.len(),
            calls[0]
        ))),
        (false, None) => Ok(format!("found no call{wanted}")),
        (false, Some(first)) => Err(Mismatch(format!(
            "expected no call{wanted}, found {} (first arguments {first})",
            matching.len()
        ))),
    }
}

fn world_goal(ctx: &Ctx, server: &str, allow_collateral: bool) -> Seen {
    let Some(index) = ctx.shared.server_index(server) else {
        return Err(Mismatch(format!("no [[mcp]] server is named {server:?}")));
    };
    let scored = ctx.shared.refs.mcp[index].with_state(|actor| actor.world_score());
    goal_in(server, scored.as_ref(), allow_collateral)
}

/// The `world_goal` check against a server's world score (`None`: the server is a
/// cassette).
fn goal_in(server: &str, scored: Option<&Scored>, allow_collateral: bool) -> Seen {
    let Some(scored) = scored else {
        return Err(Mismatch(format!(
            "server {server:?} is a cassette, not a world"
        )));
    };
    if let Some(failed) = scored.assertions.iter().find(|a| !a.passed) {
        let found = failed
            .actual
            .as_ref()
            .map_or("nothing".to_string(), Value::to_string);
        let expected = match &failed.expected {
            Some(value) => value.to_string(),
            None => failed.check.clone(),
        };
        return Err(Mismatch(format!(
            "goal not met: {}: expected {expected}, found {found}",
            failed.path
        )));
    }
    let damage = &scored.collateral_damage;
    match damage.first() {
        None => Ok("goal met, no collateral damage".to_string()),
        Some(_) if allow_collateral => Ok(format!(
            "goal met; {} collateral change(s) allowed",
            damage.len()
        )),
        Some(change) => {
            let show = |value: &Option<Value>| {
                value
                    .as_ref()
                    .map_or("nothing".to_string(), Value::to_string)
            };
            let more = match damage.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            };
            Err(Mismatch(format!(
                "collateral damage: {} changed from {} to {}{more}",
                change.path,
                show(&change.before),
                show(&change.after)
            )))
        }
    }
}

async fn gate(
    ctx: &Ctx,
    spec: &VerifySpec,
    program: &str,
    args: &[String],
    expected: i32,
) -> Result<Seen, AgentError> {
    if ctx.host.capabilities().process().is_none() {
        return Ok(Err(Mismatch(
            "the scenario has no [process] to run the gate".to_string(),
        )));
    }
    let command = Command::new(program).args(args.iter().cloned());
    // The host's handle: a WASI gate's root is the run's filesystem, as the agent left it.
    let ran = ctx.host.process().run(command).await;
    ctx.state.gates.borrow_mut().push(GateRun {
        exit_code: ran.as_ref().ok().map(|output| exit_code(output.status)),
        error: ran.as_ref().err().map(ToString::to_string),
    });
    let output = match ran {
        Ok(output) => output,
        // A program the process policy leaves out is a disabled tool: the gate cannot say
        // anything, so the run is blocked rather than failed.
        Err(error) if stops_the_run(&error) || matches!(error, ProcessError::NotCovered { .. }) => {
            return Err(AgentError::Gate {
                verifier: spec.name.clone(),
                error: Box::new(error),
            })
        }
        Err(error) => return Ok(Err(Mismatch(format!("cannot run {program:?}: {error}")))),
    };
    let code = exit_code(output.status);
    if code == expected {
        return Ok(Ok(format!("exit code {code}")));
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stderr = match stderr.trim() {
        "" => String::new(),
        text => format!(" (stderr {})", quote(text)),
    };
    Ok(Err(Mismatch(format!(
        "expected exit code {expected}, found {code}{stderr}"
    ))))
}

fn outcome(outcomes: &[(String, Value)], name: &str, expected: &Value) -> Seen {
    match outcomes.iter().rev().find(|(declared, _)| declared == name) {
        None => Err(Mismatch(format!(
            "expected {expected}, found no outcome {name:?}"
        ))),
        Some((_, value)) if value == expected => Ok(format!("found {value}")),
        Some((_, value)) => Err(Mismatch(format!("expected {expected}, found {value}"))),
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::{Pattern, TextMatch};
    use serde_json::json;

    use super::{quote, subset, text_match, Mismatch};

    #[test]
    fn a_driver_outside_the_pipeline_judges_what_it_saw_and_names_what_it_cannot() {
        // Goal: serve's in-process judgement reads a transcript, the offered tools and the
        // worlds as the pipeline's checks read a run; fs, gate and outcome are unseen.
        use super::{judge_observed, Judged, Observed};
        use crate::spec::{Check, VerifySpec};
        use crate::transcript::{Transcript, TranscriptCall, TranscriptTurn};
        let spec = |name: &str, line, check| VerifySpec {
            name: name.to_string(),
            line,
            check,
        };
        let verifiers = [
            spec(
                "multiplied",
                1,
                Check::ToolCalled {
                    tool: "multiply".into(),
                    args: Some(json!({"a": 6})),
                    called: true,
                },
            ),
            spec(
                "divides",
                2,
                Check::ToolCalled {
                    tool: "divide".into(),
                    args: None,
                    called: false,
                },
            ),
            spec(
                "answers",
                3,
                Check::Answer(TextMatch {
                    contains: Some("42".into()),
                    ..TextMatch::default()
                }),
            ),
            spec(
                "goal",
                4,
                Check::WorldGoal {
                    server: "tickets".into(),
                    allow_collateral: false,
                },
            ),
            spec(
                "kept",
                5,
                Check::Outcome {
                    name: "kept".into(),
                    value: json!(true),
                },
            ),
        ];
        let transcript = Transcript {
            turns: vec![TranscriptTurn {
                turn: 1,
                text: String::new(),
                tool_calls: vec![TranscriptCall {
                    id: "c1".into(),
                    name: "multiply".into(),
                    arguments: json!({"a": 6, "b": 7}),
                    ok: true,
                    result: "42".into(),
                }],
            }],
            answer: None,
            ..Transcript::default()
        };
        let offered = vec!["multiply".to_string()];
        let mut worlds = std::collections::BTreeMap::new();
        worlds.insert("tickets".to_string(), None);
        let observed = Observed {
            transcript: &transcript,
            offered: Some(&offered),
            worlds: &worlds,
        };
        let saw: Vec<String> = judge_observed(&verifiers, &observed)
            .into_iter()
            .map(|judged| match judged {
                Judged::Result(result) => {
                    format!("{} {}: {}", result.name, result.held, result.saw)
                }
                Judged::Unseen { name, kind, .. } => format!("{name} unseen ({kind})"),
            })
            .collect();
        assert_eq!(
            saw,
            [
                "multiplied true: found 1 matching call(s)",
                "divides false: no tool named \"divide\" is offered to the agent (tools: multiply)",
                "answers false: no final answer (ended: running)",
                "goal false: server \"tickets\" is a cassette, not a world",
                "kept unseen (outcome)",
            ]
        );
    }

    #[test]
    fn text_matches_name_the_first_expectation_that_fails() {
        // Goal: each expectation fails with its own wording; all given must hold.
        let expected = TextMatch {
            contains: Some("done".into()),
            excludes: Some("TODO".into()),
            ..TextMatch::default()
        };
        assert_eq!(text_match(&expected, "all done"), Ok(()));
        assert_eq!(
            text_match(&expected, "working"),
            Err(Mismatch(
                "expected to contain \"done\", found \"working\"".to_string()
            ))
        );
        assert_eq!(
            text_match(&expected, "done, TODO: tests"),
            Err(Mismatch(
                "expected not to contain \"TODO\", found \"done, TODO: tests\"".to_string()
            ))
        );
        let matches = TextMatch {
            matches: Some(Pattern::new("^v[0-9]+$").unwrap()),
            ..TextMatch::default()
        };
        assert_eq!(text_match(&matches, "v12"), Ok(()));
        assert_eq!(
            text_match(&matches, "v1.2"),
            Err(Mismatch(
                "expected to match /^v[0-9]+$/, found \"v1.2\"".to_string()
            ))
        );
    }

    #[test]
    fn quotes_are_cut_at_120_characters() {
        // Goal: long texts are quoted by their head, with an ellipsis.
        let long = "é".repeat(130);
        assert_eq!(quote(&long), format!("{:?}…", "é".repeat(120)));
        assert_eq!(quote("a\nb"), "\"a\\nb\"");
    }

    #[test]
    fn arguments_match_as_a_subset() {
        // Goal: extra keys are fine, nested objects recurse, other values must be equal.
        let actual = json!({"path": "a.txt", "opts": {"mode": "w", "sync": true}, "n": [1, 2]});
        assert!(subset(&json!({"path": "a.txt"}), &actual));
        assert!(subset(&json!({"opts": {"mode": "w"}}), &actual));
        assert!(!subset(&json!({"opts": {"mode": "r"}}), &actual));
        assert!(!subset(&json!({"n": [1]}), &actual));
        assert!(!subset(&json!({"missing": null}), &actual));
    }
}
