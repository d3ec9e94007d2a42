//! `Core`: the state of one running simulation (time, timers, tasks, actors, the recorder,
//! limits) and the operations on it that do not poll tasks.

use std::borrow::Cow;
use std::task::Waker;

use super::context::{current_task, raise_attention};
use super::task::{Awaiting, WaitProbe, UNSEEN};
use super::TaskId;
use crate::actor::{ActorSlot, ENGINE_ACTOR};
use crate::error::{SimError, WaitingTask};
use crate::limits::{LimitName, Limits};
use crate::recorder::Recorder;
use crate::tape::encode::SmallPayload;
use crate::tape::RecordKind;
use crate::timers::TimerQueue;

pub(super) struct TaskInfo {
    pub(super) name: Cow<'static, str>,
    pub(super) awaiting: Awaiting,
    /// A waker of the task, kept while it lives (see `spawn`): `Some` exactly while the task
    /// lives, so it also says whether it does (one field less per task: W3 keeps 100,000).
    pub(super) waker: Option<Waker>,
}

impl TaskInfo {
    /// Returns true from the task's spawn until its future ends (or teardown cancels it).
    pub(super) fn alive(&self) -> bool {
        self.waker.is_some()
    }
}

/// The state of one running simulation.
pub(crate) struct Core {
    pub(crate) now_ns: u64,
    pub(crate) start_unix_ns: i64,
    pub(crate) seed: u64,
    pub(crate) timers: TimerQueue,
    pub(super) tasks: Vec<TaskInfo>,
    pub(super) tasks_alive: u64,
    pub(crate) recorder: Recorder,
    pub(crate) limits: Limits,
    events: u64,
    pub(super) failure: Option<SimError>,
    pub(super) shutting_down: bool,
    pub(crate) actors: Vec<ActorSlot>,
    /// The actor ids of the run's inboxes (see [`crate::inbox`]), asked at idle moments
    /// whether a task awaits input.
    pub(crate) inboxes: Vec<u16>,
    probes: Vec<std::rc::Weak<dyn WaitProbe>>,
    /// The run queue while the core is not entered (empty unless the run failed).
    pub(super) parked_runnables: std::collections::VecDeque<async_task::Runnable<TaskId>>,
    /// The properties the pipeline evaluated (`crate::property`), by first evaluation.
    pub(crate) properties: Vec<crate::property::Evaluated>,
    /// The run's decision book, when it has one (the fault points draw through it).
    pub(crate) decisions: Option<std::sync::Arc<crate::decision::DecisionBook>>,
    /// The fault points evaluated so far (`crate::buggify`), by site.
    pub(crate) buggify: std::collections::BTreeMap<&'static str, crate::buggify::Site>,
}

impl Core {
    pub(crate) fn new(
        seed: u64,
        start_unix_ns: i64,
        limits: Limits,
        recorder: Recorder,
        actors: Vec<ActorSlot>,
    ) -> Core {
        Core {
            now_ns: 0,
            start_unix_ns,
            seed,
            timers: TimerQueue::default(),
            // Task 0 is the engine: records that no task caused carry it.
            tasks: vec![TaskInfo {
                name: "engine".into(),
                awaiting: Awaiting::Static("nothing"),
                waker: None,
            }],
            tasks_alive: 0,
            recorder,
            limits,
            events: 0,
            failure: None,
            shutting_down: false,
            actors,
            inboxes: Vec::new(),
            probes: Vec::new(),
            parked_runnables: std::collections::VecDeque::new(),
            properties: Vec::new(),
            decisions: None,
            buggify: std::collections::BTreeMap::new(),
        }
    }

    /// Records a failure; the first one wins and ends the run.
    pub(crate) fn fail(&mut self, error: SimError) {
        raise_attention();
        if self.failure.is_none() {
            self.failure = Some(error);
        }
    }

    /// Writes a record caused by the current task, failing the run on a tape error.
    pub(crate) fn record_value<T: serde::Serialize + ?Sized>(
        &mut self,
        actor: u16,
        kind: RecordKind,
        value: &T,
    ) {
        let (t_ns, task) = (self.now_ns, current_task());
        if let Err(e) = self.recorder.value(t_ns, actor, task, kind, value) {
            self.fail(e);
        }
    }

    /// Writes an actor record `[operation, body]` whose body is already MessagePack.
    pub(crate) fn record_operation_body(
        &mut self,
        actor: u16,
        kind: RecordKind,
        operation: &str,
        body: &[u8],
    ) {
        let (t_ns, task) = (self.now_ns, current_task());
        if let Err(e) = self
            .recorder
            .operation_body(t_ns, actor, task, kind, operation, body)
        {
            self.fail(e);
        }
    }

    /// Sets what the current task awaits (shown in a deadlock report).
    pub(crate) fn set_awaiting(&mut self, awaiting: Awaiting) {
        let task = current_task() as usize;
        if let Some(info) = self.tasks.get_mut(task) {
            info.awaiting = awaiting;
        }
    }

    /// Registers a probe (a channel, a oneshot) that a deadlock report asks for its wakers.
    pub(crate) fn register_probe(&mut self, probe: std::rc::Weak<dyn WaitProbe>) {
        // Drop the probes of dropped channels now and then, so the list stays bounded.
        if self.probes.len() >= 64 && self.probes.len().is_power_of_two() {
            self.probes.retain(|p| p.strong_count() > 0);
        }
        self.probes.push(probe);
    }

    pub(super) fn register_task(&mut self, name: Cow<'static, str>) -> TaskId {
        let id = self.tasks.len() as TaskId;
        if u64::from(id) > self.limits.tasks_max {
            self.fail(SimError::LimitExceeded {
                limit: LimitName::TasksMax,
                value: self.limits.tasks_max,
                t_ns: self.now_ns,
            });
        }
        let (t_ns, parent) = (self.now_ns, current_task());
        let written = match SmallPayload::spawn(id, &name) {
            Some(payload) => {
                let bytes = payload.as_bytes();
                self.recorder
                    .encoded(t_ns, ENGINE_ACTOR, parent, RecordKind::Spawn, bytes)
            }
            None => {
                let value = (id, &*name);
                self.recorder
                    .value(t_ns, ENGINE_ACTOR, parent, RecordKind::Spawn, &value)
            }
        };
        if let Err(e) = written {
            self.fail(e);
        }
        self.tasks.push(TaskInfo {
            name,
            awaiting: Awaiting::Static("its first poll"),
            // Set by `spawn` under the same borrow, once the task is allocated.
            waker: None,
        });
        self.tasks_alive += 1;
        id
    }

    pub(super) fn task_name(&self, id: TaskId) -> String {
        self.tasks
            .get(id as usize)
            .map_or_else(|| "?".into(), |t| t.name.to_string())
    }

    fn describe(&self, awaiting: &Awaiting) -> String {
        match awaiting {
            Awaiting::Static(text) => (*text).to_string(),
            Awaiting::Recv(channel) => format!("recv on channel {channel:?}"),
            Awaiting::Send(channel) => format!("send on full channel {channel:?}"),
            // The join of a task that has ended is over (the joining task went on to await
            // something simtape cannot see into; a join that completes leaves this behind).
            Awaiting::Join(id) if !self.tasks.get(*id as usize).is_some_and(TaskInfo::alive) => {
                UNSEEN.to_string()
            }
            Awaiting::Join(id) => format!("join of task {:?} (#{id})", self.task_name(*id)),
            Awaiting::Input(actor) => {
                let name = self
                    .actors
                    .get(usize::from(*actor))
                    .map_or("?", |slot| slot.name.as_str());
                format!("input on inbox {name:?}")
            }
        }
    }

    /// Returns every live task and what it awaits.
    pub(crate) fn waiting_tasks(&self) -> Vec<WaitingTask> {
        let mut held = Vec::new();
        for probe in self.probes.iter().filter_map(std::rc::Weak::upgrade) {
            probe.waiting(&mut held);
        }
        self.tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.alive())
            .map(|(id, t)| {
                let probed = t.waker.as_ref().and_then(|waker| {
                    held.iter()
                        .find(|(w, _)| w.will_wake(waker))
                        .map(|(_, awaiting)| awaiting)
                });
                WaitingTask {
                    id: id as u32,
                    name: t.name.to_string(),
                    awaiting: self.describe(probed.unwrap_or(&t.awaiting)),
                }
            })
            .collect()
    }

    /// Pops the next live timer, advances virtual time, records the wake and returns the
    /// waker. `Ok(None)` means a cancelled timer was skipped; no timer at all is a deadlock
    /// (which an open run's driver may read as "awaiting input", see `awaiting_input`).
    pub(super) fn next_timer(&mut self) -> Result<Option<Waker>, SimError> {
        let Some(fired) = self.timers.pop() else {
            return Err(SimError::Deadlock {
                t_ns: self.now_ns,
                waiting: self.waiting_tasks(),
            });
        };
        if let Some(task) = self.timers.prefetch_ahead() {
            // The task a timer a few places on wakes will likely end or wait in this loop:
            // its `TaskInfo` is read then (see `TimerQueue::prefetch_ahead`).
            if let Some(info) = self.tasks.get(task as usize) {
                crate::prefetch::read_soon(&info.waker);
            }
        }
        let Some(waker) = fired.waker else {
            return Ok(None);
        };
        if fired.t_ns > self.limits.virtual_time_max_ns {
            return Err(SimError::LimitExceeded {
                limit: LimitName::VirtualTimeMaxNs,
                value: self.limits.virtual_time_max_ns,
                t_ns: self.now_ns,
            });
        }
        self.events += 1;
        if self.events > self.limits.events_max {
            return Err(SimError::LimitExceeded {
                limit: LimitName::EventsMax,
                value: self.limits.events_max,
                t_ns: self.now_ns,
            });
        }
        debug_assert!(fired.t_ns >= self.now_ns, "timers never fire in the past");
        self.now_ns = fired.t_ns;
        if fired.recorded {
            self.recorder
                .empty(fired.t_ns, fired.actor, fired.task, RecordKind::Wake)?;
        }
        Ok(Some(waker))
    }

    /// Returns the number of timer events popped so far.
    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    /// Returns true when some task awaits input on one of the run's inboxes.
    pub(crate) fn awaiting_input(&mut self) -> bool {
        let inboxes = std::mem::take(&mut self.inboxes);
        let awaiting = inboxes
            .iter()
            .any(|&id| crate::inbox::slot_has_waiter(&mut self.actors[usize::from(id)]));
        self.inboxes = inboxes;
        awaiting
    }
}
