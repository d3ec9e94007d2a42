//! Open runs: a simulation driven from outside, step by step, with input delivered while it
//! runs (nexosim's `step_until`, turmoil's `Sim::step`).
//!
//! [`crate::Sim::start`] spawns the pipeline and returns a [`Run`]. Its driver (a gateway
//! to agent processes, a test) then alternates: [`Run::step`] / [`Run::run_until`] /
//! [`Run::run_until_idle`] advance virtual time through the timer queue; [`Run::deliver`]
//! feeds an [`Inbox`]; [`Run::take`] collects an [`Outbox`]; [`Run::finish`] writes the
//! footer and returns the same report `Sim::run` does. Between two calls the run is
//! quiescent (no task runnable), and the simulation stays single-threaded: the driver may
//! live on any thread, but it owns the `Run` and is the only one touching it.
//!
//! Every delivery is an `input` record, so [`Run::replay_inputs`] can drive a second run
//! from a tape's inputs alone and produce the same tape bytes. A run whose tasks wait only
//! for input is [`Progress::AwaitingInput`], not deadlocked; a closed run (`Sim::run`) that
//! gets there is still a deadlock.

use std::path::PathBuf;

use crate::actor::ENGINE_ACTOR;
use crate::capabilities::Capabilities;
use crate::error::{SimError, WaitingTask};
use crate::executor::{self, Core, JoinHandle, LoopEnd};
use crate::inbox::{self, Inbox, Input, Outbox, INPUT_CLOSE, INPUT_MESSAGE, INPUT_STOP};
use crate::sim::{finish_run, RunError, RunReport};
use crate::tape::{RecordKind, TapeError, TapeReader};

/// Where an open run stands after a call that advanced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The run went as far as it was asked; tasks go on.
    Paused,
    /// Nothing is runnable and no timer is pending; some task waits on an inbox.
    AwaitingInput,
    /// The main task finished.
    Finished,
    /// The run failed; [`Run::finish`] returns the error.
    Failed,
}

/// Why a delivery to an open run was refused. The run is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeliverError {
    /// The main task has finished or the run failed: nothing will read the input.
    #[error("the run has ended")]
    Ended,
    /// Input may not arrive before the current virtual time.
    #[error("input at t={at_ns}ns is before the run's current time t={now_ns}ns")]
    InThePast {
        /// The asked instant.
        at_ns: u64,
        /// The run's virtual time.
        now_ns: u64,
    },
    /// Input may not arrive after a pending timer: the driver must run the timer first.
    #[error("input at t={at_ns}ns is after the next pending timer at t={timer_ns}ns")]
    AfterNextTimer {
        /// The asked instant.
        at_ns: u64,
        /// The next pending timer.
        timer_ns: u64,
    },
    /// The inbox was closed.
    #[error("the inbox is closed")]
    Closed,
    /// The inbox holds `mailbox_len_max` undelivered messages.
    #[error("the inbox holds {len_max} messages (limit mailbox_len_max)")]
    Full {
        /// The limit.
        len_max: usize,
    },
}

/// Why [`Run::replay_inputs`] could not feed a tape's inputs into a run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayInputError {
    /// The tape could not be read.
    #[error(transparent)]
    Tape(#[from] TapeError),
    /// An `input` record's payload is not `[events, tag, …]`.
    #[error("input record #{index}: {detail}")]
    BadInput {
        /// The record's index in the tape.
        index: u64,
        /// What is wrong with it.
        detail: String,
    },
    /// The run has no inbox of the name the tape's input names.
    #[error("input record #{index} is for inbox {inbox:?}, which this run does not have")]
    NoSuchInbox {
        /// The record's index in the tape.
        index: u64,
        /// The inbox name in the tape's actor table.
        inbox: String,
    },
    /// The run reached a point the recorded run never reached before this input.
    #[error(
        "input record #{index} was delivered after {events} timer events, but the replay {found}"
    )]
    Diverged {
        /// The record's index in the tape.
        index: u64,
        /// Timer events before the recorded delivery.
        events: u64,
        /// What the replay did instead.
        found: String,
    },
}

/// One input of a recorded open run, as [`recorded_inputs`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedInput {
    /// The record's index in the tape.
    pub index: u64,
    /// Virtual time of the delivery, in nanoseconds.
    pub t_ns: u64,
    /// Timer events popped before the delivery.
    pub events: u64,
    /// The inbox's name (`"engine"` for a stop).
    pub actor: String,
    /// What it was.
    pub kind: InputKind,
    /// The whole record payload (`[events, tag, message]`).
    pub payload: Vec<u8>,
}

/// What a recorded input did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A message into an inbox.
    Message,
    /// The inbox was closed.
    Close,
    /// The driver stopped the run before its main task ended.
    Stop,
}

/// Reads every `input` record of a tape, in order.
pub fn recorded_inputs<R: std::io::Read>(
    mut reader: TapeReader<R>,
) -> Result<Vec<RecordedInput>, ReplayInputError> {
    let mut inputs = Vec::new();
    while let Some(record) = reader.next_record()? {
        if record.kind != RecordKind::Input {
            continue;
        }
        let payload = reader.resolve(&record)?;
        let bad = |detail: String| ReplayInputError::BadInput {
            index: record.index,
            detail,
        };
        let (events, tag): (u64, String) = match rmpv::decode::read_value(&mut &payload[..]) {
            Ok(rmpv::Value::Array(items)) if items.len() == 3 => (
                items[0]
                    .as_u64()
                    .ok_or_else(|| bad("events is not a count".into()))?,
                items[1]
                    .as_str()
                    .ok_or_else(|| bad("tag is not text".into()))?
                    .to_string(),
            ),
            Ok(other) => return Err(bad(format!("expected [events, tag, value], found {other}"))),
            Err(e) => return Err(bad(e.to_string())),
        };
        let kind = match tag.as_str() {
            INPUT_MESSAGE => InputKind::Message,
            INPUT_CLOSE => InputKind::Close,
            INPUT_STOP => InputKind::Stop,
            other => return Err(bad(format!("unknown input tag {other:?}"))),
        };
        inputs.push(RecordedInput {
            index: record.index,
            t_ns: record.t_ns,
            events,
            actor: reader.actor_name(record.actor).to_string(),
            kind,
            payload,
        });
    }
    Ok(inputs)
}

/// A run in progress, driven from outside (see the module docs).
pub struct Run<T> {
    /// `None` only while a call moves it in and out of the executor.
    core: Option<Core>,
    main: Option<JoinHandle<T>>,
    ended: Option<Ended>,
    tape_path: Option<PathBuf>,
    capabilities: Capabilities,
    actor_names: Vec<String>,
}

enum Ended {
    Finished,
    Failed(SimError),
}

impl<T> std::fmt::Debug for Run<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("now_ns", &self.core.as_ref().map(|core| core.now_ns))
            .finish_non_exhaustive()
    }
}

impl<T: 'static> Run<T> {
    pub(crate) fn new(
        core: Core,
        main: JoinHandle<T>,
        failure: Option<SimError>,
        tape_path: Option<PathBuf>,
        capabilities: Capabilities,
    ) -> Run<T> {
        let actor_names = core.actors.iter().map(|slot| slot.name.clone()).collect();
        let mut run = Run {
            core: Some(core),
            main: Some(main),
            ended: None,
            tape_path,
            capabilities,
            actor_names,
        };
        if let Some(error) = failure {
            run.ended = Some(Ended::Failed(error));
        } else if run.main().is_finished() {
            run.ended = Some(Ended::Finished);
        }
        run
    }

    fn core(&self) -> &Core {
        self.core.as_ref().expect("the core is back between calls")
    }

    fn main(&self) -> &JoinHandle<T> {
        self.main
            .as_ref()
            .expect("the main task is kept until finish")
    }

    /// Returns virtual time, in nanoseconds since the start of the run.
    pub fn now_ns(&self) -> u64 {
        self.core().now_ns
    }

    /// Returns the number of timer events popped so far.
    pub fn events(&self) -> u64 {
        self.core().events()
    }

    /// Returns the virtual time of the next pending timer, if any.
    pub fn next_timer_ns(&mut self) -> Option<u64> {
        executor::next_timer_ns(self.core.as_mut().expect("the core is back between calls"))
    }

    /// Returns every live task and what it awaits.
    pub fn waiting_tasks(&self) -> Vec<WaitingTask> {
        self.core().waiting_tasks()
    }

    /// Returns where the run stands without advancing it.
    pub fn progress(&self) -> Progress {
        match &self.ended {
            Some(Ended::Finished) => Progress::Finished,
            Some(Ended::Failed(_)) => Progress::Failed,
            None => Progress::Paused,
        }
    }

    /// Pops one timer event and runs everything it makes runnable.
    pub fn step(&mut self) -> Progress {
        self.advance(executor::step)
    }

    /// Runs every event up to and including virtual time `t_ns`; stops early when the run
    /// awaits input, finishes or fails. Virtual time stays at the last event's.
    pub fn run_until(&mut self, t_ns: u64) -> Progress {
        self.advance(|core, main| executor::run_until(core, main, Some(t_ns)))
    }

    /// Runs until the run awaits input, finishes or fails.
    pub fn run_until_idle(&mut self) -> Progress {
        self.advance(|core, main| executor::run_until(core, main, None))
    }

    fn advance(&mut self, f: impl FnOnce(Core, &JoinHandle<T>) -> (Core, LoopEnd)) -> Progress {
        if self.ended.is_some() {
            return self.progress();
        }
        let core = self.core.take().expect("the core is back between calls");
        let (mut core, end) = f(core, self.main.as_ref().expect("kept until finish"));
        // Waiting for input may last as long as the outside world likes (an agent thinking,
        // a user away): what the run wrote so far goes to the tape file now, so killing the
        // process then loses nothing.
        let flushed = match end {
            LoopEnd::AwaitingInput(_) => core.recorder.flush(core.now_ns),
            _ => Ok(()),
        };
        self.core = Some(core);
        if let Err(error) = flushed {
            self.ended = Some(Ended::Failed(error));
            return Progress::Failed;
        }
        match end {
            LoopEnd::Paused => Progress::Paused,
            LoopEnd::AwaitingInput(_) => Progress::AwaitingInput,
            LoopEnd::Finished => {
                self.ended = Some(Ended::Finished);
                Progress::Finished
            }
            LoopEnd::Failed(error) => {
                self.ended = Some(Ended::Failed(error));
                Progress::Failed
            }
        }
    }

    /// Delivers `message` to `inbox` at the current virtual time (recorded), then runs what
    /// it makes runnable at that instant.
    pub fn deliver<M: Input>(&mut self, inbox: Inbox<M>, message: M) -> Result<(), DeliverError> {
        let now_ns = self.now_ns();
        self.deliver_at(now_ns, inbox, message)
    }

    /// Moves virtual time to `t_ns` (no earlier than now, no later than the next pending
    /// timer) and delivers `message` there.
    pub fn deliver_at<M: Input>(
        &mut self,
        t_ns: u64,
        inbox: Inbox<M>,
        message: M,
    ) -> Result<(), DeliverError> {
        self.check_delivery(t_ns)?;
        self.poke(t_ns, |core| inbox.deliver(core, message))
    }

    /// Closes `inbox` (recorded): tasks waiting on it, and every later `recv`, get `None`.
    pub fn close<M: Input>(&mut self, inbox: Inbox<M>) -> Result<(), DeliverError> {
        let now_ns = self.now_ns();
        self.check_delivery(now_ns)?;
        self.poke(now_ns, |core| {
            inbox::close(core, inbox.id());
            Ok(())
        })
    }

    fn check_delivery(&mut self, at_ns: u64) -> Result<(), DeliverError> {
        if self.ended.is_some() {
            return Err(DeliverError::Ended);
        }
        let now_ns = self.now_ns();
        if at_ns < now_ns {
            return Err(DeliverError::InThePast { at_ns, now_ns });
        }
        match self.next_timer_ns() {
            Some(timer_ns) if at_ns > timer_ns => {
                Err(DeliverError::AfterNextTimer { at_ns, timer_ns })
            }
            _ => Ok(()),
        }
    }

    fn poke(
        &mut self,
        t_ns: u64,
        f: impl FnOnce(&mut Core) -> Result<(), DeliverError>,
    ) -> Result<(), DeliverError> {
        let mut core = self.core.take().expect("the core is back between calls");
        let now_ns = core.now_ns;
        core.now_ns = t_ns;
        let (mut core, result, failure) = executor::poke(core, f);
        if result.is_err() {
            // Refused before anything was recorded or woken: time stays where it was.
            core.now_ns = now_ns;
        }
        self.core = Some(core);
        result?;
        if let Some(error) = failure {
            self.ended = Some(Ended::Failed(error));
        } else if self.main().is_finished() {
            self.ended = Some(Ended::Finished);
        }
        Ok(())
    }

    /// Takes every output the run's tasks left in `outbox` so far.
    pub fn take<M: 'static>(&mut self, outbox: Outbox<M>) -> Vec<M> {
        let core = self.core.as_mut().expect("the core is back between calls");
        let state = inbox::outbox_state::<M>(&mut core.actors[usize::from(outbox.id())]);
        state.queue.drain(..).collect()
    }

    /// Drives the run to its end from a recorded open run's inputs: each is delivered at the
    /// step and instant it was recorded at, so the run writes the same records. Ends when
    /// the main task finishes, the run fails, or the recorded run was stopped; returns the
    /// progress then (`AwaitingInput` when the recording ended with input awaited).
    pub fn replay_inputs(
        &mut self,
        inputs: &[RecordedInput],
    ) -> Result<Progress, ReplayInputError> {
        for input in inputs {
            self.run_to_input(input)?;
            if self.ended.is_some() {
                return Ok(self.progress());
            }
            let id = self.inbox_id(input)?;
            let mut core = self.core.take().expect("the core is back between calls");
            core.now_ns = input.t_ns;
            let (core, result, failure) = executor::poke(core, |core| match input.kind {
                InputKind::Message => inbox::deliver_encoded(core, id, &input.payload),
                InputKind::Close => {
                    inbox::close(core, id);
                    Ok(())
                }
                InputKind::Stop => Ok(()),
            });
            self.core = Some(core);
            result.map_err(|error| ReplayInputError::BadInput {
                index: input.index,
                detail: error.to_string(),
            })?;
            if let Some(error) = failure {
                self.ended = Some(Ended::Failed(error));
            }
            if input.kind == InputKind::Stop {
                return Ok(self.progress());
            }
        }
        Ok(self.run_until_idle())
    }

    /// Steps until the timer-event count reaches the input's, or the run ends.
    fn run_to_input(&mut self, input: &RecordedInput) -> Result<(), ReplayInputError> {
        while self.events() < input.events {
            match self.step() {
                Progress::Paused => {}
                Progress::Finished | Progress::Failed => return Ok(()),
                Progress::AwaitingInput => {
                    return Err(ReplayInputError::Diverged {
                        index: input.index,
                        events: input.events,
                        found: format!("awaits input after {} timer events", self.events()),
                    })
                }
            }
        }
        if self.events() > input.events {
            return Err(ReplayInputError::Diverged {
                index: input.index,
                events: input.events,
                found: format!("was already at {} timer events", self.events()),
            });
        }
        Ok(())
    }

    fn inbox_id(&self, input: &RecordedInput) -> Result<u16, ReplayInputError> {
        if input.kind == InputKind::Stop {
            return Ok(ENGINE_ACTOR);
        }
        let core = self.core();
        self.actor_names
            .iter()
            .position(|name| *name == input.actor)
            .map(|id| id as u16)
            .filter(|&id| core.inboxes.contains(&id))
            .ok_or_else(|| ReplayInputError::NoSuchInbox {
                index: input.index,
                inbox: input.actor.clone(),
            })
    }

    /// Ends the run: writes the footer (verdict `ok`, or the error) and returns the report.
    /// A run whose main task has not finished is stopped: a `stop` input is recorded and the
    /// run ends in error [`SimError::Stopped`], naming what every task awaited.
    pub fn finish(self) -> Result<RunReport<T>, RunError> {
        self.finish_with_verdict(|outcome| match outcome {
            Ok(_) => "ok".to_string(),
            Err(error) => format!("error: {error}"),
        })
    }

    /// Ends the run like [`Run::finish`], with `verdict(outcome)` as the footer's verdict.
    pub fn finish_with_verdict(
        mut self,
        verdict: impl FnOnce(Result<&T, &SimError>) -> String,
    ) -> Result<RunReport<T>, RunError> {
        let mut core = self.core.take().expect("the core is back between calls");
        let main = self.main.take().expect("kept until finish");
        let end = match self.ended.take() {
            Some(Ended::Finished) => LoopEnd::Finished,
            Some(Ended::Failed(error)) => LoopEnd::Failed(error),
            None => {
                let waiting = core.waiting_tasks();
                let events = core.events();
                core.record_value(ENGINE_ACTOR, RecordKind::Input, &(events, INPUT_STOP, ()));
                LoopEnd::Failed(SimError::Stopped {
                    t_ns: core.now_ns,
                    waiting,
                })
            }
        };
        finish_run(
            core,
            main,
            end,
            self.tape_path.take(),
            self.capabilities.clone(),
            verdict,
        )
    }
}
