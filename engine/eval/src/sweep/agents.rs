//! One sweep across agents: the same scenario and seeds run by each of several agents
//! (`simtape sweep S --agents a,b`, or the scenario's `[[agent.variant]]` tables). A seed
//! draws the same faults whichever agent runs it, so each seed is a pair for every two
//! agents: the seeds where one passed and the other did not are what tells them apart, and
//! the exact sign (McNemar) test of [`crate::paired`] says whether the difference is beyond
//! chance. Each agent's own pass rate, pass@k and pass^k are its scenario entry's summary
//! (`S@AGENT` in the report).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ScenarioResults;
use crate::paired::{sign_test, Shift, SignTest};
use crate::VerdictKind;

/// Two agents of one scenario compared seed by seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentPair {
    /// The scenario's name.
    pub scenario: String,
    /// The first agent (in name order).
    pub a: String,
    /// The second agent.
    pub b: String,
    /// The seeds both agents ran.
    pub seeds: u64,
    /// The seeds `a` passed and `b` did not, in order.
    pub only_a: Vec<u64>,
    /// The seeds `b` passed and `a` did not, in order.
    pub only_b: Vec<u64>,
    /// The exact sign test with `a` as "before" and `b` as "after": `b` counts `only_a`,
    /// `c` counts `only_b` (`more_robust` means `b` passes more).
    pub test: SignTest,
}

impl AgentPair {
    /// Returns what the test says, naming the agent that passes more when it is beyond
    /// chance at the 5 % level.
    pub fn finding(&self) -> String {
        match self.test.direction {
            Shift::MoreRobust => format!("{} passes more", self.b),
            Shift::LessRobust => format!("{} passes more", self.a),
            Shift::NoDifference => Shift::NoDifference.label().to_string(),
        }
    }
}

/// The scenario name and agent of an entry run by a named agent (`S@AGENT`).
pub fn agent_of(entry: &ScenarioResults) -> Option<(&str, &str)> {
    let agent = entry.agent.as_deref()?;
    let scenario = entry.name.strip_suffix(agent)?.strip_suffix('@')?;
    Some((scenario, agent))
}

/// Compares every two agents of each scenario run by several, in name order.
pub fn compare(scenarios: &[ScenarioResults]) -> Vec<AgentPair> {
    let mut by_scenario: BTreeMap<&str, Vec<(&str, &ScenarioResults)>> = BTreeMap::new();
    for entry in scenarios {
        if let Some((scenario, agent)) = agent_of(entry) {
            by_scenario
                .entry(scenario)
                .or_default()
                .push((agent, entry));
        }
    }
    let mut pairs = Vec::new();
    for (scenario, mut agents) in by_scenario {
        agents.sort_by_key(|(agent, _)| *agent);
        for (index, (a, first)) in agents.iter().enumerate() {
            for (b, second) in &agents[index + 1..] {
                pairs.push(pair(scenario, (a, first), (b, second)));
            }
        }
    }
    pairs
}

fn pair(scenario: &str, a: (&str, &ScenarioResults), b: (&str, &ScenarioResults)) -> AgentPair {
    let passed = |entry: &ScenarioResults| -> BTreeMap<u64, bool> {
        let results = entry.results.iter();
        results
            .map(|r| (r.seed, r.verdict == VerdictKind::Pass))
            .collect()
    };
    let (first, second) = (passed(a.1), passed(b.1));
    let (mut only_a, mut only_b, mut seeds) = (Vec::new(), Vec::new(), 0);
    for (seed, a_passed) in &first {
        let Some(b_passed) = second.get(seed) else {
            continue;
        };
        seeds += 1;
        match (a_passed, b_passed) {
            (true, false) => only_a.push(*seed),
            (false, true) => only_b.push(*seed),
            _ => {}
        }
    }
    AgentPair {
        scenario: scenario.to_string(),
        a: a.0.to_string(),
        b: b.0.to_string(),
        seeds,
        test: sign_test(only_a.len() as u64, only_b.len() as u64),
        only_a,
        only_b,
    }
}

/// The k the agents table shows pass@k and pass^k for, when an agent ran that many seeds.
const TABLE_K: u64 = 5;

/// The agents' table and their paired comparisons, as the text summary shows them: for each
/// scenario run by several agents, one line per agent (pass rate, pass@k, pass^k at
/// k = 5, or fewer when fewer seeds ran), then one line per pair.
pub fn text(report: &super::SweepReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut by_scenario: BTreeMap<&str, Vec<(&str, &ScenarioResults)>> = BTreeMap::new();
    for entry in &report.scenarios {
        if let Some((scenario, agent)) = agent_of(entry) {
            by_scenario
                .entry(scenario)
                .or_default()
                .push((agent, entry));
        }
    }
    for (scenario, agents) in by_scenario {
        let _ = writeln!(
            out,
            "agents of scenario {scenario} (each ran the same seeds, which drew the same faults):"
        );
        let width = agents
            .iter()
            .map(|(agent, _)| agent.len())
            .max()
            .unwrap_or(0);
        let _ = writeln!(
            out,
            "  {:<width$}  {:>4}  {:>6}  {:<20}  {:<26}  pass^k",
            "agent", "runs", "passed", "pass rate", "pass@k"
        );
        for (agent, entry) in &agents {
            let summary = &entry.summary;
            let rate = match (&summary.pass_rate, summary.pass_rate_value) {
                (Some(exact), Some(value)) => format!("{exact} = {value:.4}"),
                _ => "no runs".to_string(),
            };
            let row = summary.k.iter().rfind(|row| row.k <= TABLE_K);
            let (at, hat) = row.map_or_else(Default::default, |row| {
                let (at, hat) = row.cells();
                (format!("k={} {at}", row.k), hat)
            });
            let _ = writeln!(
                out,
                "  {agent:<width$}  {:>4}  {:>6}  {rate:<20}  {at:<26}  {hat}",
                summary.runs, summary.passed
            );
        }
    }
    for pair in &report.agents {
        let p = pair.test.p_value.as_deref().unwrap_or("not computed");
        let _ = writeln!(
            out,
            "paired: {} vs {} on {}: {} seed(s), only {} passed {}, only {} passed {}; exact sign test p = {p}: {}",
            pair.a,
            pair.b,
            pair.scenario,
            pair.seeds,
            pair.a,
            seeds_text(&pair.only_a),
            pair.b,
            seeds_text(&pair.only_b),
            pair.finding()
        );
    }
    out
}

/// `N seed(s) [s, …]`, the list cut at ten.
fn seeds_text(seeds: &[u64]) -> String {
    let shown: Vec<String> = seeds.iter().take(10).map(u64::to_string).collect();
    let more = match seeds.len() > 10 {
        true => ", …",
        false => "",
    };
    format!("{} seed(s) [{}{more}]", seeds.len(), shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::SeedResult;
    use crate::Verdict;

    fn entry(agent: &str, failing: &[u64]) -> ScenarioResults {
        let results = (0..10)
            .map(|seed| {
                let verdict = match failing.contains(&seed) {
                    true => Verdict::Fail {
                        verifier: "v".into(),
                        saw: "x".into(),
                    },
                    false => Verdict::Pass,
                };
                SeedResult::of(&simtape::RunSummary::unstarted(seed), &verdict, None)
            })
            .collect();
        ScenarioResults::new(format!("s@{agent}"), "s.toml".into(), "ab".into(), results)
            .with_agent(agent)
    }

    #[test]
    fn the_discordant_seeds_decide_the_comparison() {
        // Goal: the seeds one agent passed and the other did not are counted each way, and
        // the exact test names the agent that passes more only beyond chance.
        let robust = entry("robust", &[]);
        let fragile = entry("fragile", &[0, 1, 2, 3, 4, 5]);
        let even = entry("even", &[2]);
        let pairs = compare(&[even, fragile, robust]);
        let shape: Vec<(&str, &str, usize, usize)> = pairs
            .iter()
            .map(|p| (p.a.as_str(), p.b.as_str(), p.only_a.len(), p.only_b.len()))
            .collect();
        assert_eq!(
            shape,
            [
                ("even", "fragile", 5, 0),
                ("even", "robust", 0, 1),
                ("fragile", "robust", 0, 6)
            ]
        );
        assert_eq!(pairs[2].seeds, 10);
        assert_eq!(pairs[2].test.p_value.as_deref(), Some("0.03125"));
        assert_eq!(pairs[2].finding(), "robust passes more");
        assert_eq!(pairs[0].finding(), "no significant difference");
    }
}
