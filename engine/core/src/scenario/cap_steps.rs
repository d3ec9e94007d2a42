//! Decoding of the steps that call a capability: the fs steps (`write`, `append`, `read`,
//! `remove`, `rename`, `mkdir`), `connect`, `ask` and `run`.
//!
//! Each records which capability it uses, so `validate` can report a step whose table is
//! missing at the step itself.

use super::decode::{Decoder, Use};
use super::fields::{Field, Fields};
use super::schema::{Call, Capability, RunCall, TaskStep, RUN_KEYS};
use crate::cap::net::{NetError, Network};

/// The most bytes a `write`/`append` content or an `ask` prompt may hold: far more than a
/// scenario needs, and a bound like every other.
pub(crate) const TEXT_BYTES_MAX: usize = 1 << 20;

/// Decodes the step of `kind`, whose kind key holds `field`; `None` when `kind` calls no
/// capability. The second value lists the other keys the kind takes.
pub(crate) fn call_step(
    decoded: &mut Decoder,
    kind: &str,
    field: &Field<'_>,
    fields: &mut Fields<'_>,
) -> Option<(Option<TaskStep>, &'static [&'static str])> {
    let (capability, call, extras): (_, _, &'static [&'static str]) = match kind {
        "write" => (
            Capability::Fs,
            write(decoded, field, fields, false),
            &["content"],
        ),
        "append" => (
            Capability::Fs,
            write(decoded, field, fields, true),
            &["content"],
        ),
        "read" => (
            Capability::Fs,
            fs_path(decoded, field).map(|path| Call::Read { path }),
            &[],
        ),
        "remove" => (
            Capability::Fs,
            fs_path(decoded, field).map(|path| Call::Remove { path }),
            &[],
        ),
        "mkdir" => (
            Capability::Fs,
            fs_path(decoded, field).map(|path| Call::Mkdir { path }),
            &[],
        ),
        "rename" => (Capability::Fs, rename(decoded, field, fields), &["to"]),
        "connect" => (Capability::Network, connect(decoded, field), &[]),
        "ask" => (Capability::Llm, ask(decoded, field), &[]),
        "run" => (Capability::Process, run(decoded, field, fields), &RUN_KEYS),
        _ => return None,
    };
    decoded.capability_uses.push((
        capability,
        Use {
            name: kind.to_string(),
            span: field.span.clone(),
            field: field.path.clone(),
        },
    ));
    Some((call.map(TaskStep::Call), extras))
}

/// A path inside the overlay. Whether it stays inside the root is the overlay's decision at
/// run time (a `..` that escapes is a run error, as it would be for a real pipeline).
pub fn fs_path(decoded: &mut Decoder, field: &Field<'_>) -> Option<String> {
    const WHAT: &str = "a path inside the [fs] root like \"src/lib.rs\"";
    let text = decoded.string(field, WHAT)?;
    if text.is_empty() || text.contains('\0') {
        decoded.expected(field, WHAT);
        return None;
    }
    Some(text.to_string())
}

/// A string of at most [`TEXT_BYTES_MAX`] bytes.
fn text(decoded: &mut Decoder, field: &Field<'_>, what: &str) -> Option<String> {
    let text = decoded.string(field, what)?;
    if text.len() > TEXT_BYTES_MAX {
        decoded.expected(field, &format!("{what} of at most {TEXT_BYTES_MAX} bytes"));
        return None;
    }
    Some(text.to_string())
}

fn write(
    decoded: &mut Decoder,
    field: &Field<'_>,
    fields: &mut Fields<'_>,
    append: bool,
) -> Option<Call> {
    let path = fs_path(decoded, field);
    let content = match fields.take("content") {
        Some(content) => text(decoded, &content, "a string"),
        None => {
            decoded.missing(fields, "content", "a string");
            None
        }
    };
    let (path, content) = (path?, content?);
    Some(match append {
        false => Call::Write { path, content },
        true => Call::Append { path, content },
    })
}

fn rename(decoded: &mut Decoder, field: &Field<'_>, fields: &mut Fields<'_>) -> Option<Call> {
    let from = fs_path(decoded, field);
    let to = match fields.take("to") {
        Some(to) => fs_path(decoded, &to),
        None => {
            decoded.missing(
                fields,
                "to",
                "a path inside the [fs] root like \"src/lib.rs\"",
            );
            None
        }
    };
    Some(Call::Rename {
        from: from?,
        to: to?,
    })
}

/// `"host:port"`, with an IPv6 literal in brackets (`"[::1]:8080"`). The host is checked as
/// the policy will check it, so a target that could never be dialled is a check error.
fn connect(decoded: &mut Decoder, field: &Field<'_>) -> Option<Call> {
    const WHAT: &str = "a target like \"api.github.com:443\" or \"[::1]:8080\"";
    let text = decoded.string(field, WHAT)?;
    let Some((host, port)) = text.rsplit_once(':') else {
        decoded.expected(field, WHAT);
        return None;
    };
    let bracketed = host.starts_with('[') && host.ends_with(']');
    let port = port.parse::<u16>().ok().filter(|&port| port > 0);
    let (Some(port), false) = (port, host.is_empty() || (host.contains(':') && !bracketed)) else {
        decoded.expected(field, WHAT);
        return None;
    };
    if let Err(NetError::InvalidTarget { reason, .. }) = Network::deny().check(host, port) {
        let message = format!("expected {WHAT}, found {text:?}: {reason}");
        decoded.problem(field.span.clone(), field.path.clone(), message);
        return None;
    }
    Some(Call::Connect {
        host: host.to_string(),
        port,
    })
}

fn ask(decoded: &mut Decoder, field: &Field<'_>) -> Option<Call> {
    let prompt = text(decoded, field, "a prompt string")?;
    Some(Call::Ask { prompt })
}

/// `{ run = "git", args = ["status"], cwd = "…", stdin = "…", log = "name" }`: the program
/// exactly as the `[process]` modes and the process tape name it.
fn run(decoded: &mut Decoder, field: &Field<'_>, fields: &mut Fields<'_>) -> Option<Call> {
    const WHAT: &str = "a program name like \"git\"";
    let program = match decoded.string(field, WHAT) {
        Some(text) if !text.is_empty() && !text.contains('\0') => Some(text.to_string()),
        Some(_) => {
            decoded.expected(field, WHAT);
            None
        }
        None => None,
    };
    let args = match fields.take("args") {
        Some(args) => run_args(decoded, &args),
        None => Some(Vec::new()),
    };
    let cwd = match fields.take("cwd") {
        Some(cwd) => text(decoded, &cwd, "a working directory string").map(Some),
        None => Some(None),
    };
    let stdin = match fields.take("stdin") {
        Some(stdin) => text(decoded, &stdin, "a string"),
        None => Some(String::new()),
    };
    let log = match fields.take("log") {
        Some(log) => decoded.label(&log).map(Some),
        None => Some(None),
    };
    Some(Call::Run(RunCall {
        program: program?,
        args: args?,
        cwd: cwd?,
        stdin: stdin?,
        log: log?,
    }))
}

fn run_args(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<String>> {
    let items = decoded.array(
        field,
        "an array of arguments like [\"status\", \"--short\"]",
    )?;
    let args: Vec<Option<String>> = items
        .iter()
        .map(|item| text(decoded, item, "an argument string"))
        .collect();
    args.into_iter().collect()
}
