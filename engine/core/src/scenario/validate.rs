//! Checks across the whole scenario: unique task names, channels with both ends, and a
//! table for every capability a step uses.
//!
//! They run on what decoding gathered even when some fields were bad, so `simtape check`
//! reports them together with every other problem.

use std::collections::BTreeMap;

use super::decode::{Decoder, Use};
use super::error::Problem;
use super::schema::ChannelEnd;

/// Returns the problems of the whole-scenario checks, in no particular order.
pub(crate) fn check(decoded: &Decoder) -> Vec<Problem> {
    let mut problems = duplicate_task_names(&decoded.task_names);
    problems.extend(one_sided_channels(&decoded.channels));
    problems.extend(unconfigured_capabilities(decoded));
    problems
}

/// A step that calls a capability the scenario does not configure could only fail when it
/// runs; the check reports it at the step instead.
fn unconfigured_capabilities(decoded: &Decoder) -> Vec<Problem> {
    decoded
        .capability_uses
        .iter()
        .filter(|(capability, _)| !decoded.has_table(*capability))
        .map(|(capability, used)| Problem {
            span: used.span.clone(),
            field: used.field.clone(),
            message: format!("step `{}` needs {}", used.name, capability.table()),
        })
        .collect()
}

/// Task names key the tasks' random streams and name them in tapes and deadlock reports, so
/// two tasks may not share one.
fn duplicate_task_names(names: &[Use]) -> Vec<Problem> {
    let mut first: BTreeMap<&str, &Use> = BTreeMap::new();
    let mut problems = Vec::new();
    for name in names {
        match first.get(name.name.as_str()) {
            Some(earlier) => problems.push(Problem {
                span: name.span.clone(),
                field: name.field.clone(),
                message: format!(
                    "expected a task name not used before, found {:?}, which `{}` already names",
                    name.name, earlier.field
                ),
            }),
            None => drop(first.insert(&name.name, name)),
        }
    }
    problems
}

/// A channel that only one side uses is almost always a misspelt name: a `recv` on it could
/// never get a message, and its sends would never be read.
fn one_sided_channels(channels: &[(ChannelEnd, Use)]) -> Vec<Problem> {
    let mut roles: BTreeMap<&str, (bool, bool)> = BTreeMap::new();
    for (role, used) in channels {
        let (sends, recvs) = roles.entry(&used.name).or_default();
        match role {
            ChannelEnd::Send => *sends = true,
            ChannelEnd::Recv => *recvs = true,
        }
    }
    let mut problems = Vec::new();
    for (role, used) in channels {
        let (sends, recvs) = roles[used.name.as_str()];
        let message = match role {
            ChannelEnd::Recv if !sends => format!(
                "no task sends on channel {:?}, so this recv could never get a message",
                used.name
            ),
            ChannelEnd::Send if !recvs => format!(
                "no task receives from channel {:?}, so this message would never be read",
                used.name
            ),
            _ => continue,
        };
        problems.push(Problem {
            span: used.span.clone(),
            field: used.field.clone(),
            message,
        });
    }
    problems
}
