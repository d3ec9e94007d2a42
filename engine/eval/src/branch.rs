//! Branching a run: the decisions a fork keeps from its parent, and the seeds its futures
//! draw from. `simtape fork`, `simtape explain` and `simtape explore` branch the same way.
//!
//! ```
//! use simtape::decision::{Decision, Draw};
//! use simtape_eval::branch::prefix;
//! let taken = |name: &str, record, draw| Decision { name: name.into(), value: 1, draw, record };
//! let run = [
//!     taken("llm#0", Some(2), None),
//!     taken("fs#0", Some(5), None),
//!     taken("swarm:fs#0", None, Some(Draw::Swarm)),
//! ];
//! let kept: Vec<String> = prefix(&run, 5).into_iter().map(|d| d.name).collect();
//! assert_eq!(kept, ["llm#0", "swarm:fs#0"]);
//! ```

use simtape::decision::{Decision, Draw};

/// The decisions a run took before its record `ordinal`, in its order, as overrides:
/// everything up to the first decision taken at or after it (a decision drawn outside an
/// actor has no record and goes with those before it), and every swarm setting, which holds
/// for the whole run wherever its rules were first called.
pub fn prefix(taken: &[Decision], ordinal: u64) -> Vec<Decision> {
    let before = taken
        .iter()
        .take_while(|d| d.record.is_none_or(|record| record < ordinal))
        .count();
    let settings = taken[before..]
        .iter()
        .filter(|d| d.draw == Some(Draw::Swarm));
    taken[..before]
        .iter()
        .chain(settings)
        .map(|d| Decision {
            draw: None,
            record: None,
            ..d.clone()
        })
        .collect()
}

/// A seed for one future of a branch, fixed by `parts` (the parent's seed, the branch point,
/// the future's number…): a hash, so no two branch points share their futures' draws and
/// every rerun of a search draws the same.
pub fn future_seed(domain: &str, parts: &[u64]) -> u64 {
    let mut text = format!("simtape.{domain}.v1");
    for part in parts {
        text.push(':');
        text.push_str(&part.to_string());
    }
    let digest = simtape::tape::sha256_hex(text.as_bytes());
    u64::from_str_radix(&digest[..16], 16).unwrap_or(0)
}
