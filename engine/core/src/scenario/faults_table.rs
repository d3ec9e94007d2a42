//! Decoding of `[faults]`: the fault plan, one array of rules per capability
//! (`[[faults.llm]]`, `[[faults.fs]]`, `[[faults.process]]`; an extension adds its own, such
//! as `[[faults.mcp]]`). The rule types are `cap::fault_rules`'s.
//!
//! Every rule has one trigger, `on_call = n` (the n-th call it counts, from 1) or
//! `rate = "1/10"` (a seeded chance per call), and names what fails and how. The value
//! decoders here ([`trigger`], [`text`], [`required_text`], [`integer`], [`retry_after`])
//! are public, so an extension's rules read the same way.

use super::decode::Decoder;
use super::extension::{listed, Listed};
use super::fields::{one_of, Field, Fields};
use super::schema::Capability;
use super::tables::ratio;
use crate::cap::fault_rules::{
    FaultsSpec, FsFault, FsFaultKind, LlmFault, ProcessFault, RuleKeys, Trigger,
};

/// The keys of `[faults]` the core decodes.
const FAULTS_KEYS: [&str; 3] = ["llm", "fs", "process"];
/// The keys of a `[[faults.fs]]` rule.
const FS_KEYS: [&str; 4] = ["op", "on_call", "rate", "kind"];
/// The keys of a `[[faults.process]]` rule.
const PROCESS_KEYS: [&str; 4] = ["program", "on_call", "rate", "exit_code"];
/// The operations a `[[faults.fs]]` rule may name (`remove` covers files and directories).
pub(crate) const FS_OPS: [&str; 9] = [
    "read", "write", "append", "remove", "rename", "mkdir", "list", "stat", "*",
];
const PROCESS_EXIT_CODE_DEFAULT: i64 = 1;

/// The extension's rule arrays, as the file gives them.
type Added<'a> = Vec<(&'static str, Field<'a>)>;

/// Decodes `[faults]`: the core's rule arrays, and the arrays `added` names handed back for
/// the extension that decodes them.
pub(crate) fn faults<'a>(
    decoded: &mut Decoder,
    field: &Field<'a>,
    added: &[Listed],
) -> (Option<FaultsSpec>, Added<'a>) {
    let what = "a [faults] table of rule arrays like [[faults.llm]]";
    let Some(mut fields) = decoded.table(field, what) else {
        return (None, Vec::new());
    };
    let llm = rules(decoded, &mut fields, "llm", Some(Capability::Llm), llm_rule);
    let extension = added
        .iter()
        .filter_map(|(key, _)| fields.take(key).map(|field| (*key, field)))
        .collect();
    let fs = rules(decoded, &mut fields, "fs", Some(Capability::Fs), fs_rule);
    let process = rules(
        decoded,
        &mut fields,
        "process",
        Some(Capability::Process),
        process_rule,
    );
    fields.finish(
        decoded,
        &format!(
            "unknown key, expected one of {}",
            one_of(&listed(&FAULTS_KEYS, added))
        ),
    );
    let spec = (|| {
        Some(FaultsSpec {
            llm: llm?,
            fs: fs?,
            process: process?,
        })
    })();
    (spec, extension)
}

/// Decodes the rule array `faults.<key>`, each rule with `rule`; `needs` is the table the
/// rules' capability needs, reported once at the first rule when it is missing.
fn rules<T>(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    key: &str,
    needs: Option<Capability>,
    rule: impl FnMut(&mut Decoder, &Field<'_>) -> Option<T>,
) -> Option<Vec<T>> {
    let Some(field) = fields.take(key) else {
        return Some(Vec::new());
    };
    rule_array(decoded, &field, key, needs, rule)
}

/// Decodes the rule array `field` (`faults.<key>`): each rule with `rule`; `needs` is the
/// table the rules' capability needs, reported once at the first rule when it is missing.
pub fn rule_array<T>(
    decoded: &mut Decoder,
    field: &Field<'_>,
    key: &str,
    needs: Option<Capability>,
    mut rule: impl FnMut(&mut Decoder, &Field<'_>) -> Option<T>,
) -> Option<Vec<T>> {
    let items = decoded.array(field, &format!("an array of [[faults.{key}]] tables"))?;
    if let (Some(capability), Some(first)) = (needs, items.first()) {
        if !decoded.has_table(capability) {
            let message = format!("[[faults.{key}]] needs {}", capability.table());
            decoded.problem(first.span.clone(), first.path.clone(), message);
        }
    }
    let decoded_rules: Vec<Option<T>> = items.iter().map(|item| rule(decoded, item)).collect();
    decoded_rules.into_iter().collect()
}

/// A rule's trigger: exactly one of `on_call` and `rate`.
pub fn trigger(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<Trigger> {
    match (fields.take("on_call"), fields.take("rate")) {
        (Some(on_call), None) => decoded
            .integer(&on_call, 1, i64::MAX, "a call number from 1")
            .map(|n| Trigger::OnCall(n as u64)),
        (None, Some(rate)) => ratio(decoded, &rate).map(Trigger::Rate),
        (Some(_), Some(rate)) => {
            let message = "expected either `on_call` or `rate`, found both".to_string();
            decoded.problem(rate.span, rate.path, message);
            None
        }
        (None, None) => {
            let what = "a trigger: `on_call = 2` or `rate = \"1/10\"`";
            decoded.missing(fields, "on_call", what);
            None
        }
    }
}

/// An optional string key (`None` when absent); `""` refused.
pub fn text(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    key: &str,
    what: &str,
) -> Option<Option<String>> {
    let Some(field) = fields.take(key) else {
        return Some(None);
    };
    let text = decoded.string(&field, what)?;
    if text.is_empty() {
        decoded.expected(&field, what);
        return None;
    }
    Some(Some(text.to_string()))
}

/// A required string key; `""` refused.
pub fn required_text(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    key: &str,
    what: &str,
) -> Option<String> {
    let text = text(decoded, fields, key, what)?;
    if text.is_none() {
        decoded.missing(fields, key, what);
    }
    text
}

/// An optional `retry_after` duration, in milliseconds.
pub fn retry_after(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<Option<u64>> {
    match fields.take("retry_after") {
        Some(field) => decoded.duration_ms(&field).map(Some),
        None => Some(None),
    }
}

/// An integer key in `low..=high`, `default` when absent.
pub fn integer(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    key: &str,
    (low, high): (i64, i64),
    default: i64,
) -> Option<i64> {
    match fields.take(key) {
        Some(field) => decoded.integer(
            &field,
            low,
            high,
            &format!("an integer from {low} to {high}"),
        ),
        None => Some(default),
    }
}

fn llm_rule(decoded: &mut Decoder, field: &Field<'_>) -> Option<LlmFault> {
    let what = "a [[faults.llm]] table like { on_call = 2, status = 429 }";
    let mut fields = decoded.table(field, what)?;
    let trigger = trigger(decoded, &mut fields);
    // The kinds, their keys and what they do are the LLM capability's (`cap/llm/faults.rs`).
    let (kind, keys) = crate::cap::llm::faults::decode_kind(&mut Keys {
        decoded,
        fields: &mut fields,
    });
    let expected = match keys.marker {
        Some(marker) => format!("{} (for a `{marker}` rule)", one_of(keys.keys)),
        None => one_of(keys.keys),
    };
    fields.finish(decoded, &format!("unknown key, expected one of {expected}"));
    Some(LlmFault {
        trigger: trigger?,
        kind: kind?,
    })
}

/// A rule's table as a capability's kind decoder reads it, problems placed at their fields.
struct Keys<'d, 'f, 'a> {
    decoded: &'d mut Decoder,
    fields: &'f mut Fields<'a>,
}

impl RuleKeys for Keys<'_, '_, '_> {
    fn has(&self, key: &str) -> bool {
        self.fields.entries.iter().any(|entry| entry.key == key)
    }

    fn integer(&mut self, key: &str, (low, high): (i64, i64), what: &str) -> Option<Option<i64>> {
        match self.fields.take(key) {
            Some(field) => self.decoded.integer(&field, low, high, what).map(Some),
            None => Some(None),
        }
    }

    fn text(&mut self, key: &str, what: &str) -> Option<Option<String>> {
        text(self.decoded, self.fields, key, what)
    }

    fn duration_ms(&mut self, key: &str) -> Option<Option<u64>> {
        match self.fields.take(key) {
            Some(field) => self.decoded.duration_ms(&field).map(Some),
            None => Some(None),
        }
    }

    fn choice(
        &mut self,
        key: &str,
        choices: &[&'static str],
        what: &str,
    ) -> Option<Option<&'static str>> {
        let Some(field) = self.fields.take(key) else {
            return Some(None);
        };
        let given = self.decoded.string(&field, what)?;
        match choices.iter().find(|choice| **choice == given) {
            Some(choice) => Some(Some(choice)),
            None => {
                self.decoded.expected(&field, what);
                None
            }
        }
    }

    fn refuse(&mut self, key: &str, message: &str) {
        if let Some(field) = self.fields.take(key) {
            self.decoded
                .problem(field.span, field.path, message.to_string());
        }
    }
}

fn fs_rule(decoded: &mut Decoder, field: &Field<'_>) -> Option<FsFault> {
    let what = "a [[faults.fs]] table like { op = \"write\", on_call = 1, kind = \"enospc\" }";
    let mut fields = decoded.table(field, what)?;
    let op = match fields.take("op") {
        Some(op) => {
            let what = format!("an operation {}", one_of(&FS_OPS));
            match decoded.string(&op, &what) {
                Some(name) if FS_OPS.contains(&name) => Some(name.to_string()),
                Some(_) => {
                    decoded.expected(&op, &what);
                    None
                }
                None => None,
            }
        }
        None => Some("*".to_string()),
    };
    let trigger = trigger(decoded, &mut fields);
    const KIND: &str = "a fault kind `eio` or `enospc`";
    let kind = match fields.take("kind") {
        Some(kind) => match decoded.string(&kind, KIND) {
            Some("eio") => Some(FsFaultKind::Eio),
            Some("enospc") => Some(FsFaultKind::Enospc),
            Some(_) => {
                decoded.expected(&kind, KIND);
                None
            }
            None => None,
        },
        None => {
            decoded.missing(&fields, "kind", KIND);
            None
        }
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&FS_KEYS)),
    );
    Some(FsFault {
        op: op?,
        trigger: trigger?,
        kind: kind?,
    })
}

fn process_rule(decoded: &mut Decoder, field: &Field<'_>) -> Option<ProcessFault> {
    let what = "a [[faults.process]] table like { program = \"cargo\", on_call = 1 }";
    let mut fields = decoded.table(field, what)?;
    let program = text(
        decoded,
        &mut fields,
        "program",
        "a program name like \"cargo\" or \"*\"",
    );
    let trigger = trigger(decoded, &mut fields);
    let exit_code = integer(
        decoded,
        &mut fields,
        "exit_code",
        (0, 255),
        PROCESS_EXIT_CODE_DEFAULT,
    );
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&PROCESS_KEYS)),
    );
    Some(ProcessFault {
        program: program?.unwrap_or_else(|| "*".to_string()),
        trigger: trigger?,
        exit_code: exit_code? as i32,
    })
}
