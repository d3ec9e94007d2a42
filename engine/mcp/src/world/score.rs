//! Scoring a final state: does it meet the goal, and what else changed?
//!
//! * Each goal assertion is checked at its JSON pointer (`equals`, `exists`, `absent`).
//! * Collateral damage is every leaf path whose value differs between the initial and the
//!   final state and that nothing the goal pins or allows covers. Leaves are scalars and
//!   empty containers; an added or removed subtree counts leaf by leaf, so allowing
//!   `/tickets/T-9` allows creating that whole ticket. Paths are listed in document order
//!   (object keys sorted), so reports compare byte for byte.
//! * An assertion exempts only what it asserts: `equals` its path's subtree (whose final value
//!   it fixes), `absent` the removal of its subtree; `exists` exempts nothing, since it says
//!   nothing about the value there. Assertion paths are exact pointers (a `*` token in one is
//!   a key named `*`); only `allow` entries are patterns.
//!
//! A state passes when every assertion holds and there is no collateral damage.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::pointer::{join, tokens, tokens_cover};
use super::spec::{Assertion, GoalSpec};

/// The outcome of one goal assertion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssertionOutcome {
    /// The asserted path.
    pub path: String,
    /// `equals`, `exists` or `absent`.
    pub check: String,
    /// The expected value (for `equals`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    /// What the final state holds there (`null` when nothing is).
    pub actual: Option<Value>,
    /// Whether the assertion holds.
    pub passed: bool,
}

/// One changed leaf outside what the goal allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The leaf's JSON pointer.
    pub path: String,
    /// The initial value (`null` when the leaf was added).
    pub before: Option<Value>,
    /// The final value (`null` when the leaf was removed).
    pub after: Option<Value>,
}

/// A scored final state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// Goal met and no collateral damage.
    pub passed: bool,
    /// Every assertion holds.
    pub goal_met: bool,
    /// One outcome per assertion, in spec order.
    pub assertions: Vec<AssertionOutcome>,
    /// Changed leaves nothing allowed.
    pub collateral_damage: Vec<Change>,
}

impl Scored {
    /// Returns the paths this state failed on: failed assertions, then collateral damage.
    pub fn failed_paths(&self) -> Vec<String> {
        let failed = self
            .assertions
            .iter()
            .filter(|a| !a.passed)
            .map(|a| a.path.clone());
        failed
            .chain(self.collateral_damage.iter().map(|c| c.path.clone()))
            .collect()
    }
}

/// Scores `final_state` against `goal`, starting from `initial`.
pub fn score(goal: &GoalSpec, initial: &Value, final_state: &Value) -> Scored {
    let assertions: Vec<AssertionOutcome> = goal
        .assertions
        .iter()
        .map(|a| check(a, final_state))
        .collect();
    let mut changed = Vec::new();
    diff("", Some(initial), Some(final_state), &mut changed);
    // A pointer that does not split (the spec loader rejects those) covers nothing, as in
    // `pattern_covers`.
    let pinned: Vec<(Vec<String>, Pin)> = goal
        .assertions
        .iter()
        .filter_map(|a| Some((tokens(&a.path).ok()?, Pin::of(a)?)))
        .collect();
    let allowed: Vec<Vec<String>> = goal
        .allow
        .iter()
        .filter_map(|pattern| tokens(pattern).ok())
        .collect();
    let collateral_damage: Vec<Change> = changed
        .into_iter()
        .filter(|change| match tokens(&change.path) {
            Ok(path) => {
                let pins = pinned
                    .iter()
                    .any(|(at, pin)| path.starts_with(at) && pin.exempts(change));
                !pins && !allowed.iter().any(|p| tokens_cover(p, &path))
            }
            Err(_) => true,
        })
        .collect();
    let goal_met = assertions.iter().all(|a| a.passed);
    Scored {
        passed: goal_met && collateral_damage.is_empty(),
        goal_met,
        assertions,
        collateral_damage,
    }
}

/// What an assertion fixes below its path, and so may exempt from the damage check.
#[derive(Debug, Clone, Copy)]
enum Pin {
    /// `equals`: every leaf below holds the asserted value.
    Value,
    /// `absent`: every leaf below is gone.
    Removal,
}

impl Pin {
    /// `None` for `exists`: it fixes no value, so it exempts nothing.
    fn of(assertion: &Assertion) -> Option<Pin> {
        match (&assertion.equals, assertion.absent) {
            (Some(_), _) => Some(Pin::Value),
            (None, Some(true)) => Some(Pin::Removal),
            _ => None,
        }
    }

    /// Whether this pin accounts for `change`, a leaf at or below the asserted path. A value
    /// pin accounts for any change there (a wrong value fails the assertion itself); a
    /// removal pin only for leaves that went away.
    fn exempts(self, change: &Change) -> bool {
        match self {
            Pin::Value => true,
            Pin::Removal => change.after.is_none(),
        }
    }
}

fn check(assertion: &Assertion, state: &Value) -> AssertionOutcome {
    let actual = state.pointer(&assertion.path).cloned();
    let (check, passed) = match &assertion.equals {
        Some(expected) => ("equals", actual.as_ref() == Some(expected)),
        None if assertion.exists == Some(true) => ("exists", actual.is_some()),
        None => ("absent", actual.is_none()),
    };
    AssertionOutcome {
        path: assertion.path.clone(),
        check: check.into(),
        expected: assertion.equals.clone(),
        actual,
        passed,
    }
}

/// Appends every differing leaf under `path`; a missing side counts as an empty container of
/// the other side's kind, so additions and removals are listed leaf by leaf.
fn diff(path: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Change>) {
    match (before, after) {
        (Some(Value::Object(a)), Some(Value::Object(b))) if !(a.is_empty() && b.is_empty()) => {
            diff_objects(path, a, b, out)
        }
        (Some(Value::Object(a)), None) if !a.is_empty() => diff_objects(path, a, &Map::new(), out),
        (None, Some(Value::Object(b))) if !b.is_empty() => diff_objects(path, &Map::new(), b, out),
        (Some(Value::Array(a)), Some(Value::Array(b))) if !(a.is_empty() && b.is_empty()) => {
            diff_arrays(path, a, b, out)
        }
        (Some(Value::Array(a)), None) if !a.is_empty() => diff_arrays(path, a, &[], out),
        (None, Some(Value::Array(b))) if !b.is_empty() => diff_arrays(path, &[], b, out),
        _ if before == after => {}
        _ => out.push(Change {
            path: path.to_string(),
            before: before.cloned(),
            after: after.cloned(),
        }),
    }
}

fn diff_objects(path: &str, a: &Map<String, Value>, b: &Map<String, Value>, out: &mut Vec<Change>) {
    // Sorted, whatever order serde_json's map keeps, so the report is stable.
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for key in keys {
        diff(&join(path, key), a.get(key), b.get(key), out);
    }
}

fn diff_arrays(path: &str, a: &[Value], b: &[Value], out: &mut Vec<Change>) {
    for index in 0..a.len().max(b.len()) {
        diff(
            &join(path, &index.to_string()),
            a.get(index),
            b.get(index),
            out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn goal_and_collateral_damage() {
        // Goal: assertions pass or fail per path; changes outside goal and allow are damage.
        let goal: GoalSpec = serde_json::from_value(json!({
            "assertions": [{"path": "/t/a/s", "equals": "closed"},
                           {"path": "/t/gone", "absent": true}],
            "allow": ["/log/*"]}))
        .unwrap();
        let initial =
            json!({"t": {"a": {"s": "open"}, "b": {"s": "open"}, "gone": {"x": 1}}, "log": []});
        let good = json!({"t": {"a": {"s": "closed"}, "b": {"s": "open"}}, "log": [{"m": 1}]});
        let scored = score(&goal, &initial, &good);
        assert!(scored.passed, "{scored:?}");
        let bad = json!({"t": {"a": {"s": "open"}, "b": {}, "gone": {"x": 1}}, "log": []});
        let scored = score(&goal, &initial, &bad);
        assert!(!scored.passed && !scored.goal_met);
        assert_eq!(scored.failed_paths(), vec!["/t/a/s", "/t/gone", "/t/b/s"]);
        assert_eq!(scored.collateral_damage[0].after, None);
    }

    #[test]
    fn an_assertion_exempts_only_what_it_asserts() {
        // Goal: `exists` on a ticket does not hide changes inside it (the task done, then T-2
        // assigned and closed as wontfix FAILs naming T-2's fields); `equals` and `absent`
        // exempt what they fix; a `*` in an assertion path is a key, not a wildcard.
        let goal: GoalSpec = serde_json::from_value(json!({
            "assertions": [{"path": "/t/T-1/s", "equals": "closed"},
                           {"path": "/t/T-2", "exists": true},
                           {"path": "/t/T-3", "absent": true},
                           {"path": "/t/*", "absent": true}]}))
        .unwrap();
        let initial = json!({"t": {"T-1": {"s": "open"}, "T-2": {"s": "open", "who": null},
                                   "T-3": {"s": "open"}, "T-4": {"s": "open"}}});
        let done = json!({"t": {"T-1": {"s": "closed"}, "T-2": {"s": "open", "who": null},
                                "T-4": {"s": "open"}}});
        assert!(score(&goal, &initial, &done).passed);
        let mut meddled = done.clone();
        meddled["t"]["T-2"] = json!({"s": "closed", "who": "ann", "resolution": "wontfix"});
        meddled["t"]["T-4"]["s"] = json!("closed");
        let scored = score(&goal, &initial, &meddled);
        assert!(scored.goal_met && !scored.passed, "{scored:?}");
        assert_eq!(
            scored.failed_paths(),
            ["/t/T-2/resolution", "/t/T-2/s", "/t/T-2/who", "/t/T-4/s"]
        );
    }
}
