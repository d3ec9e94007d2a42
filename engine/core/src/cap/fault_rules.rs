//! Fault rules by call number or seeded rate: the one fault engine. The scenario's `[faults]`
//! gives rules to the llm, fs and process actors, and `simtape-mcp`'s world gives its
//! `[[faults.mcp]]` and world-spec rules to the same engine ([`FaultRules`], through the
//! [`FaultRule`] trait): one [`Trigger`] (`on_call = n` or `rate = "n/d"`/`"n%"`, read by
//! [`Ratio::parse`]), the call counts they fire on, and the one draw discipline. The scenario
//! decoder (`scenario::faults_table`) reads the core's rules into these types.
//!
//! A rule names a target (an fs operation, a program, or `*` for every call) and a
//! [`Trigger`]. Each call counts once for its own target and once for `*`. Every `rate` rule
//! whose target the call matches takes one `chance` from the actor's stream, in rule order,
//! whether or not an earlier rule fired (a rate of 0 draws nothing, as with every
//! [`RngStream::chance`]); `on_call` rules draw nothing. So the stream's position depends only
//! on the sequence of calls, never on which faults fired, and a plan without rate rules draws
//! nothing at all. The first rule in order that fires wins.
//!
//! In a swarm run (`simtape explore`) each `rate` rule may carry a setting ([`Swarm`], a
//! decision `swarm:<stream>#<rule>` the run's overrides give): off, or its rate scaled. An
//! `on_call` rule takes none: it is the scenario's script (a world that rate-limits its
//! first call), not a chance to vary. The settings are read at the first call. With any
//! setting given, every rate rule whose target matches draws once per call even when off or
//! at a zero rate, so a setting never moves a later draw of the stream (a shrinker turning a
//! rule off keeps the rest of the run's names).

use std::collections::BTreeMap;

use serde::Serialize;

pub use crate::cap::llm::faults::{LlmFaultKind, StreamFault, StreamMode};
use crate::decision::Swarm;
use crate::rng::{Ratio, RngStream};

/// The deprecated name of `rate` in world specs, still read: `"probability": "1/5"`.
pub const RATE_ALIAS_DEPRECATED: &str = "probability";

/// Returns the trigger a rule's `on_call` and `rate` fields give, or what is wrong with them:
/// exactly one, and calls count from 1. The scenario decoder and world specs share it.
///
/// ```
/// use simtape::cap::fault_rules::{trigger_of, Trigger};
/// assert_eq!(trigger_of(Some(2), None), Ok(Trigger::OnCall(2)));
/// assert!(trigger_of(Some(0), None).is_err());
/// assert!(trigger_of(None, None).is_err());
/// ```
pub fn trigger_of(on_call: Option<u64>, rate: Option<Ratio>) -> Result<Trigger, TriggerError> {
    match (on_call, rate) {
        (Some(0), None) => Err(TriggerError::CallZero),
        (Some(call), None) => Ok(Trigger::OnCall(call)),
        (None, Some(ratio)) => Ok(Trigger::Rate(ratio)),
        _ => Err(TriggerError::NotOne),
    }
}

/// Why a rule's trigger fields give no trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TriggerError {
    /// `on_call = 0`: calls count from 1.
    #[error("`on_call`: calls count from 1")]
    CallZero,
    /// Neither or both of `on_call` and `rate`.
    #[error("give exactly one of `on_call` and `rate`")]
    NotOne,
}

/// When a fault rule fires. Scenario files and world specs write it the same way: `on_call`
/// (a number from 1) or `rate` (a ratio `"n/d"` or a percentage `"n%"`, [`Ratio::parse`]);
/// world specs also read `probability`, the old name of `rate`, which is deprecated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// On this 1-based call (counted per rule target).
    OnCall(u64),
    /// On each call with this chance, drawn from the capability's own stream.
    Rate(Ratio),
}

/// `[faults]`: the fault plan of the llm, fs and process actors. (The overlay's own
/// EIO/ENOSPC ratios stay in `[fs]`; `[[faults.fs]]` adds rules by call number. A scenario
/// extension may add rule arrays of its own, such as `[[faults.mcp]]`.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FaultsSpec {
    /// `[[faults.llm]]`: model calls that fail.
    pub llm: Vec<LlmFault>,
    /// `[[faults.fs]]`: filesystem operations that fail.
    pub fs: Vec<FsFault>,
    /// `[[faults.process]]`: program runs that fail.
    pub process: Vec<ProcessFault>,
}

impl FaultsSpec {
    /// Returns whether the plan has no rule.
    pub fn is_empty(&self) -> bool {
        self.llm.is_empty() && self.fs.is_empty() && self.process.is_empty()
    }
}

/// A model call that fails: answered with an HTTP error, or answered with a stream that
/// breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LlmFault {
    /// When it fires (counting model calls).
    pub trigger: Trigger,
    /// What happens.
    pub kind: LlmFaultKind,
}

/// A filesystem operation that fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsFault {
    /// The operation (`read`, `write`, `append`, `remove`, `rename`, `mkdir`, `list`, `stat`)
    /// or `*` for every operation (calls are counted per `op`).
    pub op: String,
    /// When it fires.
    pub trigger: Trigger,
    /// What happens.
    pub kind: FsFaultKind,
}

/// What an fs fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FsFaultKind {
    /// EIO: the operation fails and changes nothing.
    Eio,
    /// ENOSPC: the operation fails and changes nothing.
    Enospc,
}

/// A program run that fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessFault {
    /// The program, or `*` for every program (runs are counted per `program`).
    pub program: String,
    /// When it fires.
    pub trigger: Trigger,
    /// The exit code the run reports instead of running (stdout empty, stderr names the
    /// fault).
    pub exit_code: i32,
}

/// The keys of one fault rule, as a capability's own kind decoder reads them (the scenario
/// decoder implements it over a `[[faults.*]]` table, placing each problem at its file, line
/// and field). So a capability keeps its kinds, their keys and what they do in one module,
/// and the scenario format reads them without knowing them. Each read takes its key; a
/// `None` result means a problem was reported.
pub trait RuleKeys {
    /// Returns whether `key` is given.
    fn has(&self, key: &str) -> bool;
    /// Takes an integer in `low..=high`; `what` says what was expected.
    fn integer(&mut self, key: &str, range: (i64, i64), what: &str) -> Option<Option<i64>>;
    /// Takes a non-empty string; `what` says what was expected.
    fn text(&mut self, key: &str, what: &str) -> Option<Option<String>>;
    /// Takes a duration in whole milliseconds (`"250ms"`, `"2s"`).
    fn duration_ms(&mut self, key: &str) -> Option<Option<u64>>;
    /// Takes one of `choices`; `what` says what was expected.
    fn choice(
        &mut self,
        key: &str,
        choices: &[&'static str],
        what: &str,
    ) -> Option<Option<&'static str>>;
    /// Takes `key` and reports `message` at it (when it is given).
    fn refuse(&mut self, key: &str, message: &str);
}

/// The target a rule gives to match every call.
pub const ANY_TARGET: &str = "*";

/// A fault rule as an actor sees it: what it counts, and when it fires. Each capability's rule
/// type implements it (the llm, fs and process rules here, an MCP world's in `simtape-mcp`),
/// so every one fires by the same engine.
pub trait FaultRule {
    /// The calls the rule counts: an fs operation, a program, or [`ANY_TARGET`].
    fn target(&self) -> &str;
    /// When it fires.
    fn trigger(&self) -> Trigger;
}

impl FaultRule for LlmFault {
    fn target(&self) -> &str {
        ANY_TARGET
    }

    fn trigger(&self) -> Trigger {
        self.trigger
    }
}

impl FaultRule for FsFault {
    fn target(&self) -> &str {
        &self.op
    }

    fn trigger(&self) -> Trigger {
        self.trigger
    }
}

impl FaultRule for ProcessFault {
    fn target(&self) -> &str {
        &self.program
    }

    fn trigger(&self) -> Trigger {
        self.trigger
    }
}

/// One actor's fault rules and the calls counted so far, per target and in all.
#[derive(Debug, Clone)]
pub struct FaultRules<R> {
    rules: Vec<R>,
    per_target: BTreeMap<String, u64>,
    all: u64,
    /// The swarm settings, read at the first call: `None` before it, `Some(None)` for a run
    /// that gives none.
    swarm: Option<Option<Vec<Swarm>>>,
}

impl<R> Default for FaultRules<R> {
    fn default() -> Self {
        FaultRules::new(Vec::new())
    }
}

impl<R> FaultRules<R> {
    /// Returns the rules' state before the first call.
    pub fn new(rules: Vec<R>) -> FaultRules<R> {
        FaultRules {
            rules,
            per_target: BTreeMap::new(),
            all: 0,
            swarm: None,
        }
    }
}

/// The indices of the `rate` rules among `rules`: the ones a swarm run sets.
pub fn rate_rules<R: FaultRule>(rules: &[R]) -> Vec<usize> {
    rules
        .iter()
        .enumerate()
        .filter(|(_, rule)| matches!(rule.trigger(), Trigger::Rate(_)))
        .map(|(index, _)| index)
        .collect()
}

impl<R: FaultRule> FaultRules<R> {
    /// Returns the rules, in order.
    pub fn rules(&self) -> &[R] {
        &self.rules
    }

    /// Counts one call of `target`, then returns the first rule that fires on it, taking the
    /// draws the module documents.
    pub fn fire(&mut self, target: &str, rng: &mut RngStream) -> Option<&R> {
        if self.rules.is_empty() {
            return None;
        }
        self.all = self.all.saturating_add(1);
        let calls = self.per_target.entry(target.to_string()).or_insert(0);
        *calls = calls.saturating_add(1);
        let rules = &self.rules;
        let swarm = self.swarm.get_or_insert_with(|| {
            let settings: Vec<Option<Swarm>> = rules
                .iter()
                .enumerate()
                .map(|(index, rule)| match rule.trigger() {
                    Trigger::Rate(_) => rng.swarm(index),
                    Trigger::OnCall(_) => None,
                })
                .collect();
            settings.iter().any(Option::is_some).then(|| {
                settings
                    .into_iter()
                    .map(|setting| setting.unwrap_or(Swarm::AS_WRITTEN))
                    .collect()
            })
        });
        let mut fired = None;
        for (index, rule) in self.rules.iter().enumerate() {
            let counted = match rule.target() {
                ANY_TARGET => self.all,
                named if named == target => self.per_target[target],
                _ => continue,
            };
            let setting = swarm.as_ref().map(|settings| settings[index]);
            let fires = match (rule.trigger(), setting) {
                (Trigger::OnCall(call), _) => counted == call,
                (Trigger::Rate(ratio), None) => rng.chance(ratio),
                (Trigger::Rate(ratio), Some(setting)) => rng.chance_drawn(setting.scale(ratio)),
            };
            if fires && fired.is_none() {
                fired = Some(index);
            }
        }
        let index = fired?;
        rng.fired(index, target);
        Some(&self.rules[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A rule for the tests: a target, a trigger, and a number that names it.
    #[derive(Debug, Clone, Copy)]
    struct Rule(&'static str, Trigger, usize);

    impl FaultRule for Rule {
        fn target(&self) -> &str {
            self.0
        }

        fn trigger(&self) -> Trigger {
            self.1
        }
    }

    /// Returns, for each call (a target), the number of the rule that fired on it.
    fn fired(rules: &[Rule], calls: &[&str], seed: u64) -> Vec<Option<usize>> {
        let mut plan = FaultRules::new(rules.to_vec());
        let mut rng = RngStream::fork(seed, "test");
        calls
            .iter()
            .map(|call| plan.fire(call, &mut rng).map(|rule| rule.2))
            .collect()
    }

    #[test]
    fn on_call_counts_per_target_and_star_counts_all() {
        // Goal: a named rule counts its target's calls only; `*` counts every call; the first
        // rule that fires wins.
        let rules = [
            Rule("write", Trigger::OnCall(2), 0),
            Rule("*", Trigger::OnCall(3), 1),
            Rule("*", Trigger::OnCall(4), 2),
        ];
        let calls = ["write", "read", "read", "write", "write"];
        assert_eq!(
            fired(&rules, &calls, 0),
            [None, None, Some(1), Some(0), None]
        );
    }

    #[test]
    fn rate_rules_draw_once_per_matching_call_whatever_fires() {
        // Goal: the stream's position after each call depends only on the calls: an on_call
        // rule that fires (or not) never changes what a later rate rule draws.
        let half = Trigger::Rate(Ratio::new(1, 2).unwrap());
        let with = [Rule("*", Trigger::OnCall(1), 0), Rule("*", half, 1)];
        let without = [Rule("*", Trigger::OnCall(1_000), 0), Rule("*", half, 1)];
        let calls = ["a"; 64];
        let positions = |rules: &[Rule]| -> Vec<u64> {
            let mut plan = FaultRules::new(rules.to_vec());
            let mut rng = RngStream::fork(9, "test");
            calls
                .iter()
                .map(|call| {
                    plan.fire(call, &mut rng);
                    rng.clone().next_u64()
                })
                .collect()
        };
        assert_eq!(positions(&with), positions(&without));
        let hits = fired(&without, &calls, 9).iter().flatten().count();
        assert!((16..48).contains(&hits), "{hits} of 64 at 1/2");
        assert_ne!(fired(&without, &calls, 9), fired(&without, &calls, 10));
    }

    #[test]
    fn swarm_settings_turn_rules_off_and_scale_rates_without_moving_later_draws() {
        // Goal: with settings in the run's overrides, an `off` rule never fires, a scaled rate
        // fires more often, and the stream's position after each call is the same whatever the
        // settings say (a shrinker turning a rule off keeps every later decision's name).
        use crate::decision::{swarm_name, Decision, DecisionBook, Draw, Swarm};
        let rules = [
            Rule("*", Trigger::OnCall(2), 0),
            Rule("*", Trigger::Rate(Ratio::new(1, 40).unwrap()), 1),
        ];
        let calls = ["a"; 200];
        let setting = |rule: usize, level: u64| Decision {
            name: swarm_name("test", rule),
            value: level,
            draw: None,
            record: None,
        };
        let run = |settings: &[Decision]| {
            let book = DecisionBook::new(settings);
            let mut plan = FaultRules::new(rules.to_vec());
            let mut rng = RngStream::fork_decided(9, "test", Some(Arc::clone(&book)));
            let mut positions = Vec::new();
            let fired: Vec<Option<usize>> = calls
                .iter()
                .map(|call| {
                    let fired = plan.fire(call, &mut rng).map(|rule| rule.2);
                    positions.push(rng.clone().next_u64());
                    fired
                })
                .collect();
            (fired, positions, book)
        };
        let (plain, _, book) = run(&[]);
        assert!(book.taken().iter().all(|d| d.draw != Some(Draw::Swarm)));
        assert_eq!(plain[1], Some(0));
        // Rule 0 (by call number) takes no setting: it is the scenario's script.
        let (off, off_positions, book) = run(&[setting(0, 0), setting(1, 0)]);
        assert_eq!(off.iter().flatten().collect::<Vec<_>>(), [&0], "{off:?}");
        let swarm: Vec<_> = book
            .taken()
            .into_iter()
            .filter(|d| d.draw == Some(Draw::Swarm))
            .collect();
        assert_eq!(swarm.len(), 1);
        assert_eq!(rate_rules(&rules), [1]);
        assert!(swarm.iter().all(|d| d.record.is_none()));
        let (loud, loud_positions, book) = run(&[setting(1, 7)]);
        assert_eq!(off_positions, loud_positions);
        let count = |fired: &[Option<usize>]| fired.iter().filter(|f| **f == Some(1)).count();
        assert!(
            count(&loud) > count(&plain) + 10,
            "{} vs {}",
            count(&loud),
            count(&plain)
        );
        assert_eq!(loud[1], Some(0));
        assert_eq!(book.fired().len(), loud.iter().flatten().count());
        assert_eq!(Swarm::from_value(99), Swarm::from_value(7));
    }

    #[test]
    fn a_rate_rule_for_another_target_draws_nothing() {
        // Goal: a rule whose target the call does not match takes no draw, so the stream is
        // where a plan without it leaves it.
        let mut plan = FaultRules::new(vec![Rule("write", Trigger::Rate(Ratio::ONE), 0)]);
        let mut rng = RngStream::fork(3, "test");
        assert!(plan.fire("read", &mut rng).is_none());
        assert_eq!(rng.next_u64(), RngStream::fork(3, "test").next_u64());
    }
}
