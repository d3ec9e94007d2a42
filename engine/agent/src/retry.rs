//! Retries: the run-wide budget and the back-off, waited in virtual time.
//!
//! The back-off of the n-th consecutive failure of one call is
//! `max(retry_after_ms, min(backoff_base_ms · 2^(n−1), backoff_max_ms))`: exponential up to a
//! ceiling, and never shorter than what the server asked for. Model calls and MCP tool calls
//! draw on one budget for the whole run, as a harness with one rate-limit policy would (in a
//! `[harness]` run, for the whole session: each session is a fresh agent).

use std::cell::Cell;
use std::time::Duration;

use crate::spec::AgentSpec;

/// The run's retry budget and back-off settings.
#[derive(Debug)]
pub(crate) struct Retries {
    budget: u32,
    left: Cell<u32>,
    taken: Cell<u32>,
    base_ms: u64,
    max_ms: u64,
}

impl Retries {
    /// Returns the agent's budget and back-off; without an agent, nothing to retry with.
    pub(crate) fn new(agent: Option<&AgentSpec>) -> Retries {
        let budget = agent.map_or(0, |agent| agent.retry_budget);
        Retries {
            budget,
            left: Cell::new(budget),
            taken: Cell::new(0),
            base_ms: agent.map_or(0, |agent| agent.backoff_base_ms),
            max_ms: agent.map_or(0, |agent| agent.backoff_max_ms),
        }
    }

    /// Takes one retry from the budget; `false` when it is spent.
    pub(crate) fn take(&self) -> bool {
        let left = self.left.get();
        if left == 0 {
            return false;
        }
        self.left.set(left - 1);
        self.taken.set(self.taken.get() + 1);
        true
    }

    /// Gives the whole budget back: a `[harness]` session is a fresh agent, with a budget
    /// of its own (the retries taken still count).
    pub(crate) fn refill(&self) {
        self.left.set(self.budget);
    }

    /// Returns the retries taken so far.
    pub(crate) fn taken(&self) -> u32 {
        self.taken.get()
    }

    /// Returns the back-off before retrying the `consecutive`-th failure (1-based) of a call,
    /// in milliseconds.
    pub(crate) fn backoff_ms(&self, consecutive: u32, retry_after_ms: Option<u64>) -> u64 {
        backoff_ms(self.base_ms, self.max_ms, consecutive, retry_after_ms)
    }
}

/// See the module docs; saturates instead of overflowing.
pub(crate) fn backoff_ms(
    base_ms: u64,
    max_ms: u64,
    consecutive: u32,
    retry_after_ms: Option<u64>,
) -> u64 {
    let doublings = consecutive.saturating_sub(1);
    let exponential = base_ms.saturating_mul(2u64.saturating_pow(doublings));
    exponential.min(max_ms).max(retry_after_ms.unwrap_or(0))
}

/// Sleeps `ms` virtual milliseconds (a clock `wake` record on the tape).
pub(crate) async fn wait_ms(ms: u64) {
    simtape::time::sleep(Duration::from_millis(ms)).await;
}

#[cfg(test)]
mod tests {
    use super::backoff_ms;

    #[test]
    fn backoff_doubles_up_to_the_ceiling_and_honours_the_hint() {
        // Goal: the formula of the module docs, including saturation on huge attempts.
        assert_eq!(backoff_ms(100, 1_000, 1, None), 100);
        assert_eq!(backoff_ms(100, 1_000, 2, None), 200);
        assert_eq!(backoff_ms(100, 1_000, 4, None), 800);
        assert_eq!(backoff_ms(100, 1_000, 5, None), 1_000);
        assert_eq!(backoff_ms(100, 1_000, 200, None), 1_000);
        assert_eq!(backoff_ms(100, 1_000, 1, Some(5_000)), 5_000);
        assert_eq!(backoff_ms(100, 1_000, 3, Some(50)), 400);
    }
}
