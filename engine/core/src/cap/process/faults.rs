//! Injected program failures (`[[faults.process]]`): a run a rule picks reports the rule's
//! exit code, empty stdout and `injected fault: exit <n>` on stderr, in no virtual time,
//! without running or replaying anything (no process starts, no replay entry is used).
//!
//! A rule names a program exactly as the pipeline passes it, or `*`, and counts the runs of
//! that program (`*`: all runs). Draws follow `cap/fault_rules.rs`: one `chance` from the
//! process actor's stream per `rate` rule that matches the run, whatever fires. The actor
//! draws nothing else, so only rate rules touch its stream.

use super::actor::{Output, ProcessActor, Truncation};
use super::tape::ExitStatus;
use super::Command;
use crate::cap::fault_rules::FaultRules;
use crate::cap::fault_rules::ProcessFault;
use crate::rng::RngStream;

/// Returns what a run that `rule` fires on reports.
fn fault_output(rule: &ProcessFault) -> Output {
    let code = rule.exit_code;
    Output {
        status: ExitStatus::Code(code),
        stdout: Vec::new(),
        stderr: format!("injected fault: exit {code}").into_bytes(),
        duration_ns: 0,
        truncated: Truncation::default(),
        timed_out: false,
        fuel_consumed: None,
    }
}

impl ProcessActor {
    /// Counts one run of `command` and returns the output of the fault rule that fires on
    /// it, if any (before the program's mode is consulted, whatever it is).
    pub(super) fn injected(&mut self, command: &Command, rng: &mut RngStream) -> Option<Output> {
        self.faults.fire(&command.program, rng).map(fault_output)
    }

    /// Sets the injected failures (`[[faults.process]]`): a run a rule picks ends at once
    /// with the rule's exit code, empty stdout and `injected fault: exit <n>` on stderr,
    /// before the program's mode is consulted.
    ///
    /// ```
    /// use simtape::cap::process::{Command, ExitStatus, ProcessActor};
    /// use simtape::cap::fault_rules::{ProcessFault, Trigger};
    /// let fault = ProcessFault { program: "cargo".into(), trigger: Trigger::OnCall(1), exit_code: 101 };
    /// let mut builder = simtape::Sim::builder();
    /// builder.process(ProcessActor::hermetic().with_faults(vec![fault]));
    /// let report = builder.build().unwrap().run(|host| async move {
    ///     host.process().run(Command::new("cargo").arg("test")).await.unwrap()
    /// }).unwrap();
    /// assert_eq!(report.output.status, ExitStatus::Code(101));
    /// assert_eq!(report.output.stderr, b"injected fault: exit 101");
    /// ```
    pub fn with_faults(mut self, faults: Vec<ProcessFault>) -> ProcessActor {
        self.faults = FaultRules::new(faults);
        self
    }
}
