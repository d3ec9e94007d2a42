//! The guest's clocks: `clock_time_get` and `clock_res_get` read virtual time, and fuel the
//! guest burned since the last read turns into virtual time first (when a ratio is set).
//!
//! REALTIME is the run's start instant plus virtual time; MONOTONIC is virtual nanoseconds
//! since the start of the run. The two CPU-time clocks read the same as MONOTONIC: a guest
//! has no CPU time of its own apart from the fuel charge, which moves every clock alike.

use wasmtime::Caller;

use super::abi::{
    WasiResult, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME, CLOCK_REALTIME, CLOCK_THREAD_CPUTIME,
    EINVAL,
};
use super::run::Guest;
use super::NsPerFuel;

/// What the guest's fuel has cost in virtual time so far.
#[derive(Debug)]
pub(super) struct FuelCharge {
    /// The fuel the invocation started with.
    pub(super) budget: u64,
    /// Fuel already turned into virtual time.
    charged_fuel: u64,
    ratio: Option<NsPerFuel>,
}

impl FuelCharge {
    pub(super) fn new(budget: u64, ratio: Option<NsPerFuel>) -> FuelCharge {
        FuelCharge {
            budget,
            charged_fuel: 0,
            ratio,
        }
    }

    /// Returns the virtual nanoseconds owed for the fuel burned since the last charge, given
    /// the fuel left now. Totals are converted, not deltas, so no rounding accumulates.
    pub(super) fn due_ns(&mut self, remaining_fuel: u64) -> u64 {
        let Some(ratio) = self.ratio else {
            return 0;
        };
        let used = self.budget.saturating_sub(remaining_fuel);
        let before = ratio.ns_for(self.charged_fuel);
        self.charged_fuel = used;
        ratio.ns_for(used).saturating_sub(before)
    }
}

/// Moves virtual time by the fuel the guest burned since the last charge. The wait is a
/// simulation timer, so other tasks run meanwhile.
pub(super) async fn charge_fuel(caller: &mut Caller<'_, Guest>) {
    let remaining = caller.get_fuel().unwrap_or(0);
    let due = caller.data_mut().fuel.due_ns(remaining);
    if due > 0 {
        crate::time::sleep_until(crate::time::now_ns().saturating_add(due)).await;
    }
}

/// Returns the value of clock `id` now, in nanoseconds (`EINVAL` for an unknown clock).
pub(super) fn time_ns(id: u32) -> WasiResult<u64> {
    match id {
        CLOCK_REALTIME => Ok(u64::try_from(crate::time::wall_clock_unix_ns()).unwrap_or(0)),
        CLOCK_MONOTONIC | CLOCK_PROCESS_CPUTIME | CLOCK_THREAD_CPUTIME => Ok(crate::time::now_ns()),
        _ => Err(EINVAL),
    }
}

/// Returns the resolution of clock `id`: one nanosecond for each.
pub(super) fn resolution_ns(id: u32) -> WasiResult<u64> {
    time_ns(id).map(|_| 1)
}

/// Returns the deadline on the monotonic axis of a clock subscription made now.
pub(super) fn deadline_ns(id: u32, timeout: u64, absolute: bool) -> WasiResult<u64> {
    let now = crate::time::now_ns();
    match (id, absolute) {
        (_, false) => time_ns(id).map(|_| now.saturating_add(timeout)),
        (CLOCK_REALTIME, true) => {
            let start = crate::time::wall_clock_unix_ns().saturating_sub(now as i64);
            Ok(timeout.saturating_sub(u64::try_from(start).unwrap_or(0)))
        }
        (_, true) => time_ns(id).map(|_| timeout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuel_turns_into_time_without_drift() {
        // Goal: charging in many small steps costs exactly what one big step would.
        let mut charge = FuelCharge::new(1_000, Some(NsPerFuel { ns: 1, fuel: 3 }));
        let steps: u64 = (1..=10).map(|i| charge.due_ns(1_000 - i * 10)).sum();
        assert_eq!(steps, 100 / 3);
        let mut off = FuelCharge::new(1_000, None);
        assert_eq!(off.due_ns(0), 0);
    }
}
