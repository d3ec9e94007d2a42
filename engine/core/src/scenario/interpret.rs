//! The interpreter: runs a decoded scenario as the main task of a simulation.
//!
//! The main task opens the channels, spawns one task per `[[task]]` in file order, and joins
//! them all in that order. Each task runs its steps `repeat` times; every step maps onto one
//! engine call, so the tape shows exactly what the scenario asks for:
//!
//! | step           | engine call                                  | tape records           |
//! |----------------|----------------------------------------------|------------------------|
//! | `sleep`        | [`crate::time::sleep`]                       | `wake` (clock)         |
//! | `sleep_random` | `sleep` of a draw from the task's own stream | `wake` (clock)         |
//! | `event`        | [`Host::event`]                              | `request`, `reply`     |
//! | `send`, `recv` | a [`crate::sync`] channel                    | none (a `recv` with `log` adds an event) |
//! | `outcome`      | [`Host::outcome`]                            | `outcome`              |
//! | `write`, `append`, `read`, `remove`, `rename`, `mkdir` | the [`crate::cap::fs::FsHandle`] call | `request`, `reply` (fs) |
//! | `connect`      | [`crate::cap::net::NetHandle::connect`]      | `request`, `reply` (net) |
//! | `ask`          | [`crate::cap::llm::LlmHandle::complete`] of a one-message request | `request`, `reply` (llm) |
//! | `run`          | [`crate::cap::process::ProcessHandle::run`]  | `request`, `reply` (process); with `log`, an event |
//!
//! A capability step that fails ends the run: its task reports a [`StepError`] and stops,
//! and the main task returns it as soon as it hears (see `failure`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;

use super::channels::{Channels, SharedReceiver};
use super::failure::{CallError, FirstFailure, StepError};
use super::schema::{Call, RunCall, Spec, TaskStep, ASK_MODEL};
use crate::cap::llm::{ChatRequest, Message};
use crate::cap::process::{Command, Output};
use crate::rng::RngStream;
use crate::sim::Host;
use crate::sync::Sender;

/// The outcomes a run declared, in the order it declared them.
pub(crate) type Outcomes = Vec<(String, Json)>;

/// Returns the name of the random stream of the task `task`.
pub(crate) fn task_stream_name(task: &str) -> String {
    format!("scenario/task/{task}")
}

/// Runs the scenario: the body of the main task. The error is the first failed step.
pub(crate) async fn run(host: Host, spec: Arc<Spec>) -> Result<Outcomes, Box<StepError>> {
    let failures = FirstFailure::default();
    let outcomes = Rc::new(RefCell::new(Vec::new()));
    let channels_used = spec.channels();
    let mut channels = Channels::open(channels_used.keys().copied());
    let mut handles = Vec::with_capacity(spec.tasks.len());
    for (index, task) in spec.tasks.iter().enumerate() {
        let mut senders = BTreeMap::new();
        let mut receivers = BTreeMap::new();
        for (name, ends) in &channels_used {
            if ends.senders.contains(&index) {
                senders.insert(name.to_string(), channels.sender(name));
            }
            if ends.receivers.contains(&index) {
                receivers.insert(name.to_string(), channels.receiver(name));
            }
        }
        let runner = TaskRunner {
            host: host.clone(),
            rng: host.rng(&task_stream_name(&task.name)),
            senders,
            receivers,
            outcomes: Rc::clone(&outcomes),
            failures: failures.clone(),
        };
        handles.push(crate::spawn(
            task.name.clone(),
            runner.run(Arc::clone(&spec), index),
        ));
    }
    channels.close_senders();
    for handle in handles {
        failures.join(handle).await?;
    }
    if let Some(error) = failures.take() {
        return Err(error);
    }
    // The receivers live until here, so no send ever finds its channel gone.
    drop(channels);
    Ok(outcomes.take())
}

/// What one task needs to run its steps.
struct TaskRunner {
    host: Host,
    rng: RngStream,
    /// The task's own senders: dropped when the task ends, which may close the channel.
    senders: BTreeMap<String, Sender<Json>>,
    receivers: BTreeMap<String, Rc<SharedReceiver>>,
    outcomes: Rc<RefCell<Outcomes>>,
    failures: FirstFailure,
}

impl TaskRunner {
    async fn run(mut self, spec: Arc<Spec>, index: usize) {
        let task = &spec.tasks[index];
        if task.start_after_ns > 0 {
            crate::time::sleep(Duration::from_nanos(task.start_after_ns)).await;
        }
        for _ in 0..task.repeat {
            for (step, field) in task.steps.iter().zip(&task.step_fields) {
                let TaskStep::Call(call) = step else {
                    self.step(step).await;
                    continue;
                };
                if let Err(error) = self.call(call).await {
                    self.failures.report(Box::new(StepError {
                        task: task.name.clone(),
                        step: field.clone(),
                        kind: call.kind().to_string(),
                        error,
                    }));
                    return;
                }
            }
        }
    }

    /// Runs a capability step. The checks guarantee the scenario configures the capability,
    /// so the host has its actor.
    async fn call(&self, call: &Call) -> Result<(), CallError> {
        match call {
            Call::Write { path, content } => self.host.fs().write(path, content.as_bytes()).await?,
            Call::Append { path, content } => {
                self.host.fs().append(path, content.as_bytes()).await?
            }
            Call::Read { path } => drop(self.host.fs().read(path).await?),
            Call::Remove { path } => self.host.fs().remove(path).await?,
            Call::Rename { from, to } => self.host.fs().rename(from, to).await?,
            Call::Mkdir { path } => self.host.fs().create_dir(path).await?,
            Call::Connect { host, port } => drop(self.host.net().connect(host, *port).await?),
            Call::Ask { prompt } => {
                let request = ChatRequest::new(ASK_MODEL, vec![Message::user(prompt.clone())]);
                drop(self.host.llm().complete(request).await?);
            }
            Call::Run(run) => self.run_program(run).await?,
        }
        Ok(())
    }

    /// Runs a program through the process actor; with `log`, logs its status and output.
    async fn run_program(&self, run: &RunCall) -> Result<(), CallError> {
        let mut command = Command::new(run.program.clone())
            .args(run.args.iter().cloned())
            .stdin(run.stdin.as_bytes());
        if let Some(cwd) = &run.cwd {
            command = command.cwd(cwd.clone());
        }
        let output: Output = self.host.process().run(command).await?;
        if let Some(log) = &run.log {
            let fields = serde_json::json!({
                "status": output.status,
                "stdout": String::from_utf8_lossy(&output.stdout),
                "stderr": String::from_utf8_lossy(&output.stderr),
            });
            self.host.event(log, fields).await;
        }
        Ok(())
    }

    async fn step(&mut self, step: &TaskStep) {
        match step {
            TaskStep::Sleep { ns } => crate::time::sleep(Duration::from_nanos(*ns)).await,
            TaskStep::SleepRandom { min_ns, max_ns } => {
                let ns = self.rng.range_inclusive(*min_ns, *max_ns);
                crate::time::sleep(Duration::from_nanos(ns)).await;
            }
            TaskStep::Event { name, fields } => {
                self.host.event(name, fields.clone()).await;
            }
            TaskStep::Send { channel, value } => {
                let sender = self
                    .senders
                    .get(channel)
                    .expect("a task holds a sender for each channel it sends on");
                sender
                    .send(value.clone())
                    .await
                    .expect("the receivers outlive every task");
            }
            TaskStep::Recv { channel, log } => {
                let receiver = self
                    .receivers
                    .get(channel)
                    .expect("a task holds each channel it receives from");
                let value = receiver.recv().await;
                if let Some(log) = log {
                    // TOML has no null, so a null value can only mean the channel was closed.
                    let fields = serde_json::json!({ "channel": channel, "value": value });
                    self.host.event(log, fields).await;
                }
            }
            TaskStep::Outcome { name, value } => {
                self.host.outcome(name, value);
                self.outcomes
                    .borrow_mut()
                    .push((name.clone(), value.clone()));
            }
            TaskStep::Call(_) => unreachable!("capability steps run through `call`"),
        }
    }
}
