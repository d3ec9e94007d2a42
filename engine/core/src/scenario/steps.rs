//! Decoding of steps: exactly one kind key per step, then the keys that kind takes. The
//! steps that call a capability are decoded in `cap_steps`.

use serde_json::Value as Json;

use super::cap_steps::call_step;
use super::decode::{Decoder, Use};
use super::fields::{one_of, Field, Fields};
use super::node::Value;
use super::schema::{ChannelEnd, TaskStep, STEP_KINDS};

pub(crate) fn step_list(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<TaskStep>> {
    let items = decoded.array(field, "an array of steps like [{ sleep = \"100ms\" }]")?;
    if items.is_empty() {
        decoded.expected(field, "at least one step");
        return None;
    }
    let steps: Vec<Option<TaskStep>> = items.iter().map(|item| step(decoded, item)).collect();
    steps.into_iter().collect()
}

/// Decodes one step: exactly one kind key, then the keys that kind takes.
fn step(decoded: &mut Decoder, field: &Field<'_>) -> Option<TaskStep> {
    let mut fields = decoded.table(field, "a step like { sleep = \"100ms\" }")?;
    let kinds: Vec<&str> = fields
        .entries
        .iter()
        .map(|e| e.key.as_str())
        .filter(|key| STEP_KINDS.contains(key))
        .collect();
    let kind = match kinds.as_slice() {
        [kind] => *kind,
        [] => {
            let keys: Vec<&str> = fields.entries.iter().map(|e| e.key.as_str()).collect();
            let found = if keys.is_empty() {
                "an empty table".to_string()
            } else {
                one_of(&keys)
            };
            let message = format!(
                "expected a step with one of the keys {}, found {found}",
                one_of(&STEP_KINDS)
            );
            decoded.problem(field.span.clone(), field.path.clone(), message);
            return None;
        }
        [first, second, ..] => {
            let message =
                format!("expected one kind per step, found both `{first}` and `{second}`");
            let second = fields
                .take(second)
                .expect("the key was found among the entries");
            decoded.problem(second.span, second.path, message);
            return None;
        }
    };
    let value = fields
        .take(kind)
        .expect("the key was found among the entries");
    let (step, extras): (Option<TaskStep>, &[&str]) = match kind {
        "sleep" => (
            decoded.duration(&value).map(|ns| TaskStep::Sleep { ns }),
            &[],
        ),
        "sleep_random" => (sleep_random(decoded, &value), &[]),
        "event" => (event(decoded, &value, &mut fields), &["fields"]),
        "send" => (send(decoded, &value, &mut fields), &["value"]),
        "recv" => (recv(decoded, &value, &mut fields), &["log"]),
        "outcome" => (outcome(decoded, &value, &mut fields), &["value"]),
        _ => call_step(decoded, kind, &value, &mut fields)
            .expect("every kind in STEP_KINDS has a decoder"),
    };
    let message = if extras.is_empty() {
        format!("unknown key (no other key goes with `{kind}`)")
    } else {
        format!(
            "unknown key, expected {} (no other key goes with `{kind}`)",
            one_of(extras)
        )
    };
    fields.finish(decoded, &message);
    step
}

fn sleep_random(decoded: &mut Decoder, field: &Field<'_>) -> Option<TaskStep> {
    let mut fields = decoded.table(field, "a range like { min = \"10ms\", max = \"50ms\" }")?;
    let mut bound = |key: &str, decoded: &mut Decoder| match fields.take(key) {
        Some(value) => decoded.duration(&value).map(|ns| (ns, value)),
        None => {
            decoded.missing(&fields, key, "a duration like \"250ms\"");
            None
        }
    };
    let min = bound("min", decoded);
    let max = bound("max", decoded);
    fields.finish(decoded, "unknown key, expected `min` or `max`");
    let ((min_ns, min), (max_ns, max)) = (min?, max?);
    if min_ns > max_ns {
        let message = format!(
            "expected min <= max, found min {} > max {}",
            min.node.value.found(),
            max.node.value.found()
        );
        decoded.problem(field.span.clone(), field.path.clone(), message);
        return None;
    }
    Some(TaskStep::SleepRandom { min_ns, max_ns })
}

fn event(decoded: &mut Decoder, field: &Field<'_>, fields: &mut Fields<'_>) -> Option<TaskStep> {
    let name = decoded.label(field);
    let values = match fields.take("fields") {
        Some(values) => match values.node.value {
            Value::Table(_) => decoded.json(&values),
            _ => {
                decoded.expected(&values, "a table like { bytes = 10 }");
                None
            }
        },
        None => Some(Json::Object(serde_json::Map::new())),
    };
    Some(TaskStep::Event {
        name: name?,
        fields: values?,
    })
}

/// Decodes the `value` of a `send` or `outcome` step, which is required.
fn required_value(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<Json> {
    match fields.take("value") {
        Some(value) => decoded.json(&value),
        None => {
            decoded.missing(fields, "value", "a value (any TOML value)");
            None
        }
    }
}

/// Decodes a channel name and remembers who uses it, even when the rest of the step is bad,
/// so the channel checks do not report a channel as unused because of an unrelated typo.
fn channel(decoded: &mut Decoder, field: &Field<'_>, role: ChannelEnd) -> Option<String> {
    let channel = decoded.name(field)?;
    let used = Use {
        name: channel.clone(),
        span: field.span.clone(),
        field: field.path.clone(),
    };
    decoded.channels.push((role, used));
    Some(channel)
}

fn send(decoded: &mut Decoder, field: &Field<'_>, fields: &mut Fields<'_>) -> Option<TaskStep> {
    let channel = channel(decoded, field, ChannelEnd::Send);
    let value = required_value(decoded, fields);
    Some(TaskStep::Send {
        channel: channel?,
        value: value?,
    })
}

fn recv(decoded: &mut Decoder, field: &Field<'_>, fields: &mut Fields<'_>) -> Option<TaskStep> {
    let channel = channel(decoded, field, ChannelEnd::Recv);
    let log = match fields.take("log") {
        Some(log) => decoded.label(&log).map(Some),
        None => Some(None),
    };
    Some(TaskStep::Recv {
        channel: channel?,
        log: log?,
    })
}

fn outcome(decoded: &mut Decoder, field: &Field<'_>, fields: &mut Fields<'_>) -> Option<TaskStep> {
    let name = decoded.label(field);
    let value = required_value(decoded, fields);
    Some(TaskStep::Outcome {
        name: name?,
        value: value?,
    })
}

/// Reports the first step at which a task's own sleeps (`start_after`, every `sleep`, the
/// least of every `sleep_random`, over every repetition) pass the run's virtual time cap: the
/// run would stop there, at its limit, whatever else happens. `field` is the steps array.
pub(crate) fn check_time(
    decoded: &mut Decoder,
    field: &Field<'_>,
    steps: &[TaskStep],
    start_ns: u64,
    repeat: u32,
) {
    let Some(cap_ns) = decoded.virtual_time_max_ns else {
        return;
    };
    let least = |step: &TaskStep| match step {
        TaskStep::Sleep { ns } => *ns,
        TaskStep::SleepRandom { min_ns, .. } => *min_ns,
        _ => 0,
    };
    let round_ns: u128 = steps.iter().map(|s| u128::from(least(s))).sum();
    let total_ns = u128::from(start_ns) + round_ns * u128::from(repeat);
    if total_ns <= u128::from(cap_ns) {
        return;
    }
    // The repetition in which the cap is passed, then the step within it.
    let before = u128::from(cap_ns).saturating_sub(u128::from(start_ns));
    let rounds = before.checked_div(round_ns).unwrap_or(0);
    let mut at_ns = u128::from(start_ns) + rounds * round_ns;
    let Some(items) = decoded.array(field, "an array of steps") else {
        return;
    };
    for (index, step) in steps.iter().enumerate() {
        at_ns += u128::from(least(step));
        if at_ns > u128::from(cap_ns) {
            let repetition = if repeat > 1 {
                format!(" (repetition {})", rounds + 1)
            } else {
                String::new()
            };
            let shown = u64::try_from(at_ns)
                .map(crate::time::format_ns)
                .unwrap_or_else(|_| format!("{at_ns}ns"));
            let message = format!(
                "this step takes the task to t={shown}{repetition}, past [limits] \
                 virtual_time_max_ns = {} ({cap_ns}ns): the run would stop at its limit \
                 (virtual time is kept in i64 nanoseconds: at most {}ns, about 292 years)",
                crate::time::format_ns(cap_ns),
                i64::MAX
            );
            decoded.problem(
                items[index].span.clone(),
                items[index].path.clone(),
                message,
            );
            return;
        }
    }
}
