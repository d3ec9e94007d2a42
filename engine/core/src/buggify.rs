//! Fault points in a Rust pipeline's own code: [`buggify!`](crate::buggify!) marks a call
//! site that, in each run, is either off or fires with a probability drawn for the run, as in
//! FoundationDB's BUGGIFY. Code under test takes the rare branch (a short read, a dropped
//! reply, a slow path) on purpose, in some runs, so a sweep, `simtape_eval::shrink` and an
//! exploration meet it like any other fault.
//!
//! Each site draws from its own stream, `buggify:<file>:<line>:<column>`, so a site's draws
//! never move another's. At its first evaluation in a run the site decides whether it is on
//! (a chance of 1/4) and, if it is, its probability (1/16, 1/8, 1/4 or 1/2); each evaluation
//! of an on site then draws once. Every draw is a named decision (`buggify:…#n`): a shrink
//! turns a site off by setting its first decision to "does not fire". Each time a site fires,
//! the tape gets a `buggify` record with the site. Outside a simulation a site never fires,
//! so the macro can stay in production code.
//!
//! ```
//! let mut builder = simtape::Sim::builder();
//! builder.seed(3);
//! let report = builder.build().unwrap().run(|_host| async {
//!     (0..1_000).filter(|_| simtape::buggify!()).count()
//! }).unwrap();
//! // Off for this seed, or on at one probability: never every time.
//! assert!(report.output < 1_000);
//! assert!(!simtape::buggify!(), "outside a simulation a site never fires");
//! ```

use std::sync::Arc;

use crate::decision::DecisionBook;
use crate::rng::{Ratio, RngStream};

/// The chance a site is on in a run: 1 in this.
const ON_IN: u64 = 4;

/// The denominators of the probabilities an on site fires with: 1/16, 1/8, 1/4, 1/2.
const DENOMINATORS: [u64; 4] = [16, 8, 4, 2];

/// One site's state in a run.
#[derive(Debug)]
pub(crate) struct Site {
    stream: RngStream,
    /// The probability it fires with; `None` when off for the run.
    rate: Option<Ratio>,
}

impl Site {
    /// The site's state at its first evaluation in a run at `seed`, as the run's record
    /// `ordinal` is next (where its decisions are said to be taken).
    pub(crate) fn new(
        seed: u64,
        site: &str,
        book: Option<Arc<DecisionBook>>,
        ordinal: u64,
    ) -> Site {
        let mut stream = RngStream::fork_decided(seed, &format!("buggify:{site}"), book);
        stream.at_record(ordinal);
        let on = Ratio::new(1, ON_IN).expect("1/4 is a ratio");
        let rate = stream.chance(on).then(|| {
            let denominator = DENOMINATORS[stream.below(DENOMINATORS.len() as u64) as usize];
            Ratio::new(1, denominator).expect("1/d with d > 1 is a ratio")
        });
        Site { stream, rate }
    }

    /// Whether the site fires this time, as the run's record `ordinal` is next (an off site
    /// draws nothing). A firing is written at that ordinal, so an exploration forks just after
    /// it, as after any fault.
    pub(crate) fn fires(&mut self, site: &str, ordinal: u64) -> bool {
        self.stream.at_record(ordinal);
        let fires = self.rate.is_some_and(|rate| self.stream.chance(rate));
        if fires {
            self.stream.fired(0, site);
        }
        fires
    }
}

/// Whether the fault point `site` fires now (see the module docs); what
/// [`buggify!`](crate::buggify!) calls with its file, line and column.
pub fn fires(site: &'static str) -> bool {
    crate::executor::in_simulation() && crate::executor::buggify(site)
}

/// A fault point: `true` when this call site fires in this run (see [`mod@crate::buggify`]).
#[macro_export]
macro_rules! buggify {
    () => {
        $crate::buggify::fires(concat!(file!(), ":", line!(), ":", column!()))
    };
}

#[cfg(test)]
mod tests {
    use crate::decision::{Decision, DecisionBook};

    /// Runs 200 evaluations of one site at `seed` with `overrides`; returns how many fired,
    /// the run's records and the decisions it took.
    fn evaluate(seed: u64, overrides: &[Decision]) -> (usize, u64, Vec<Decision>) {
        let book = DecisionBook::new(overrides);
        let mut builder = crate::Sim::builder();
        builder
            .seed(seed)
            .decisions(std::sync::Arc::clone(&book), None);
        let report = builder
            .build()
            .unwrap()
            .run(|_host| async { (0..200).filter(|_| crate::buggify!()).count() })
            .unwrap();
        (report.output, report.summary.records, book.taken())
    }

    #[test]
    fn a_site_is_on_in_some_runs_and_a_shrink_turns_it_off() {
        // Goal: a site is on in about a quarter of the runs, each firing is on the tape, its
        // draws are decisions, and setting its first decision to its simplest value (does
        // not fire) turns it off for the run.
        let on: Vec<u64> = (0..40).filter(|seed| evaluate(*seed, &[]).0 > 0).collect();
        assert!((3..25).contains(&on.len()), "on in {} of 40 runs", on.len());
        let seed = on[0];
        let (fired, records, taken) = evaluate(seed, &[]);
        assert!(taken[0].name.starts_with("buggify:") && taken[0].name.ends_with("#0"));
        let off = Decision {
            name: taken[0].name.clone(),
            value: taken[0].draw.unwrap().simplest(),
            draw: None,
            record: None,
        };
        let (none, quiet_records, _) = evaluate(seed, &[off]);
        assert_eq!(none, 0);
        assert_eq!(
            records,
            quiet_records + fired as u64,
            "one record per firing"
        );
        assert_eq!(
            evaluate(seed, &[]).0,
            fired,
            "the same seed fires the same way"
        );
    }
}
