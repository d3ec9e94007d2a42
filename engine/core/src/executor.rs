//! The single-threaded executor: a FIFO run queue of `async-task` runnables and a timer queue
//! ordered by `(virtual_time_ns, seq)`.
//!
//! The loop pops one timer event, then drains the run queue, then pops the next: one total
//! order of events, and it is the order the tape records. Zero-delay wakes (channel sends,
//! joins) go straight to the run queue and never touch the timer queue.
//!
//! The state of the running simulation lives in thread-local cells that exist only while
//! [`crate::Sim::run`] runs; nothing outlives a run and two runs on two threads share nothing.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use async_task::Runnable;

use crate::actor::ActorSlot;
use crate::error::{SimError, WaitingTask};
use crate::limits::{LimitName, Limits};
use crate::recorder::Recorder;
use crate::tape::encode::SmallPayload;
use crate::tape::RecordKind;
use crate::timers::TimerQueue;

/// The actor id of the engine itself (spawns, exits, tape meta records).
pub const ENGINE_ACTOR: u16 = 0;
/// The actor id of the clock (timer wakes).
pub const CLOCK_ACTOR: u16 = 1;

type TaskId = u32;

struct RunQueue {
    queue: VecDeque<Runnable<TaskId>>,
    len_max: usize,
    overflowed: bool,
}

thread_local! {
    static RUN_QUEUE: RefCell<RunQueue> = const { RefCell::new(RunQueue {
        queue: VecDeque::new(),
        len_max: usize::MAX,
        overflowed: false,
    }) };
    static CORE: RefCell<Option<Core>> = const { RefCell::new(None) };
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// The task being polled (0 between polls). A plain cell, not a core field, so the hot
    /// loop does not borrow the core around every poll.
    static CURRENT_TASK: Cell<TaskId> = const { Cell::new(0) };
    /// Set when the run has failed or a task has ended: the loop then consults the core.
    static ATTENTION: Cell<bool> = const { Cell::new(false) };
}

/// Returns the id of the task being polled (0 = the engine).
#[inline]
pub(crate) fn current_task() -> TaskId {
    CURRENT_TASK.with(Cell::get)
}

fn raise_attention() {
    ATTENTION.with(|a| a.set(true));
}

fn schedule(runnable: Runnable<TaskId>) {
    RUN_QUEUE.with(|cell| {
        let mut run_queue = cell.borrow_mut();
        if run_queue.queue.len() >= run_queue.len_max {
            run_queue.overflowed = true;
        }
        run_queue.queue.push_back(runnable);
    });
}

/// What a task waits for, rendered only when a deadlock is reported.
#[derive(Debug, Clone)]
pub(crate) enum Awaiting {
    /// A fixed description.
    Static(&'static str),
    /// A receive on the named channel.
    Recv(Rc<str>),
    /// A send on the named channel, which is full.
    Send(Rc<str>),
    /// Another task's end.
    Join(TaskId),
}

/// What a deadlock report says of a task waiting on a future simtape cannot see into.
const UNSEEN: &str = "a future outside simtape's channels, timers and joins";

/// Something tasks wait on (a channel, a oneshot). At a deadlock the executor asks each live
/// probe which wakers it holds and matches them to tasks, so the hot paths (send, receive,
/// sleep) never spend a write on describing what a task awaits.
pub(crate) trait WaitProbe {
    /// Appends every waker this probe holds and what its owner awaits.
    fn waiting(&self, found: &mut Vec<(Waker, Awaiting)>);
}

/// Registers a probe with the running simulation.
pub(crate) fn register_probe(probe: std::rc::Weak<dyn WaitProbe>) {
    with_core(|core| {
        // Drop the probes of dropped channels now and then, so the list stays bounded.
        if core.probes.len() >= 64 && core.probes.len().is_power_of_two() {
            core.probes.retain(|p| p.strong_count() > 0);
        }
        core.probes.push(probe);
    });
}

struct TaskInfo {
    name: Cow<'static, str>,
    awaiting: Awaiting,
    alive: bool,
    /// A waker of the task, kept while it lives (see `spawn`).
    waker: Option<Waker>,
}

/// The state of one running simulation.
pub(crate) struct Core {
    pub(crate) now_ns: u64,
    pub(crate) start_unix_ns: i64,
    pub(crate) seed: u64,
    pub(crate) timers: TimerQueue,
    tasks: Vec<TaskInfo>,
    tasks_alive: u64,
    pub(crate) recorder: Recorder,
    pub(crate) limits: Limits,
    events: u64,
    failure: Option<SimError>,
    shutting_down: bool,
    pub(crate) actors: Vec<ActorSlot>,
    probes: Vec<std::rc::Weak<dyn WaitProbe>>,
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
                alive: false,
                waker: None,
            }],
            tasks_alive: 0,
            recorder,
            limits,
            events: 0,
            failure: None,
            shutting_down: false,
            actors,
            probes: Vec::new(),
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
}

/// Runs `f` with the running simulation's state.
///
/// # Panics
/// Outside a simulation run: simulation primitives only work inside [`crate::Sim::run`].
#[inline]
pub(crate) fn with_core<R>(f: impl FnOnce(&mut Core) -> R) -> R {
    CORE.with(|cell| {
        let mut guard = cell.borrow_mut();
        let core = guard
            .as_mut()
            .expect("simtape primitives must be used inside Sim::run (no simulation is running)");
        f(core)
    })
}

/// Runs `f` with the running simulation's state, if there is one and it is not borrowed.
pub(crate) fn try_with_core(f: impl FnOnce(&mut Core)) {
    let _ = CORE.try_with(|cell| {
        if let Ok(mut guard) = cell.try_borrow_mut() {
            if let Some(core) = guard.as_mut() {
                f(core);
            }
        }
    });
}

/// Writes a record of the engine actor caused by the current task.
pub(crate) fn record_engine<T: serde::Serialize + ?Sized>(kind: RecordKind, value: &T) {
    with_core(|core| core.record_value(ENGINE_ACTOR, kind, value));
}

/// Returns true while a simulation runs on this thread.
pub fn in_simulation() -> bool {
    ACTIVE.with(Cell::get)
}

/// A handle to a spawned task: await it for the task's output, or abort it. Dropping the
/// handle lets the task run on (it is detached, as with threads).
pub struct JoinHandle<T> {
    id: TaskId,
    task: Option<async_task::Task<T, TaskId>>,
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle").field("id", &self.id).finish()
    }
}

/// Why a joined task produced no output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// The task was aborted.
    #[error("task #{0} was aborted")]
    Aborted(u32),
}

impl<T> JoinHandle<T> {
    /// Returns the task id, as it appears on the tape.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Aborts the task: its future is dropped at the next turn of the executor (recorded as
    /// an `exit` with status `aborted`) and awaiting this handle gives [`JoinError::Aborted`].
    pub fn abort(&mut self) {
        // Dropping an async-task `Task` cancels it; the executor then drops the future.
        self.task.take();
    }

    /// Lets the task run on with nobody waiting for it (the same as dropping the handle).
    pub fn detach(self) {}

    /// Returns true when the task has completed or was aborted.
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(|task| task.is_finished())
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.detach();
        }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = self.id;
        let Some(task) = self.task.as_mut() else {
            return Poll::Ready(Err(JoinError::Aborted(id)));
        };
        match Pin::new(task).poll(cx) {
            Poll::Ready(output) => {
                with_core(|core| core.set_awaiting(Awaiting::Static(UNSEEN)));
                // A finished `Task` must not be polled again; `None` now means "taken".
                std::mem::forget(self.task.take());
                Poll::Ready(Ok(output))
            }
            Poll::Pending => {
                with_core(|core| core.set_awaiting(Awaiting::Join(id)));
                Poll::Pending
            }
        }
    }
}

/// Marks a task's end on the tape: "ok" when it completed, "aborted" when its future was
/// dropped unfinished, "panicked" when it unwound.
struct ExitGuard {
    id: TaskId,
    completed: bool,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let status = if self.completed {
            "ok"
        } else if std::thread::panicking() {
            "panicked"
        } else {
            "aborted"
        };
        let id = self.id;
        try_with_core(|core| {
            if core.shutting_down {
                return;
            }
            if let Some(info) = core.tasks.get_mut(id as usize) {
                info.alive = false;
                core.tasks_alive -= 1;
                // The loop drops the task's waker after this poll returns.
                raise_attention();
            }
            let t_ns = core.now_ns;
            let payload = SmallPayload::exit(status);
            let written =
                core.recorder
                    .encoded(t_ns, ENGINE_ACTOR, id, RecordKind::Exit, payload.as_bytes());
            if let Err(e) = written {
                core.fail(e);
            }
        });
    }
}

/// Spawns a named task on the running simulation.
///
/// ```
/// let report = simtape::Sim::builder().build().unwrap().run(|_host| async {
///     let child = simtape::spawn("child", async { 6 * 7 });
///     child.await.unwrap()
/// }).unwrap();
/// assert_eq!(report.output, 42);
/// ```
pub fn spawn<F>(name: impl Into<Cow<'static, str>>, future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let name = name.into();
    let id = with_core(|core| core.register_task(name));
    let wrapped = async move {
        let mut guard = ExitGuard {
            id,
            completed: false,
        };
        let output = future.await;
        guard.completed = true;
        output
    };
    let (runnable, task) = async_task::Builder::new()
        .metadata(id)
        .spawn_local(move |_| wrapped, schedule);
    // The core keeps a waker of every live task: at teardown, waking each one and dropping
    // its runnable drops its future, which breaks reference cycles between blocked tasks.
    let waker = runnable.waker();
    with_core(|core| core.tasks[id as usize].waker = Some(waker));
    runnable.schedule();
    JoinHandle {
        id,
        task: Some(task),
    }
}

impl Core {
    fn register_task(&mut self, name: Cow<'static, str>) -> TaskId {
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
            alive: true,
            waker: None,
        });
        self.tasks_alive += 1;
        id
    }

    fn task_name(&self, id: TaskId) -> String {
        self.tasks
            .get(id as usize)
            .map_or_else(|| "?".into(), |t| t.name.to_string())
    }

    fn describe(&self, awaiting: &Awaiting) -> String {
        match awaiting {
            Awaiting::Static(text) => (*text).to_string(),
            Awaiting::Recv(channel) => format!("recv on channel {channel:?}"),
            Awaiting::Send(channel) => format!("send on full channel {channel:?}"),
            Awaiting::Join(id) => format!("join of task {:?} (#{id})", self.task_name(*id)),
        }
    }

    fn waiting_tasks(&self) -> Vec<WaitingTask> {
        let mut held = Vec::new();
        for probe in self.probes.iter().filter_map(std::rc::Weak::upgrade) {
            probe.waiting(&mut held);
        }
        self.tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.alive)
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
}

/// How a run of the event loop ended.
pub(crate) enum LoopEnd {
    /// The main task finished.
    Finished,
    /// The run failed.
    Failed(SimError),
}

/// Installs `core` on this thread, runs the event loop until `main` finishes, and returns the
/// core (with its recorder) and how the loop ended.
pub(crate) fn run_loop<T: 'static>(
    core: Core,
    main: impl Future<Output = T> + 'static,
) -> (Core, LoopEnd, Option<T>) {
    assert!(
        !in_simulation(),
        "a simulation is already running on this thread; runs do not nest"
    );
    let len_max = core.limits.run_queue_len_max;
    RUN_QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        q.queue.clear();
        q.len_max = len_max;
        q.overflowed = false;
    });
    CORE.with(|cell| *cell.borrow_mut() = Some(core));
    ACTIVE.with(|a| a.set(true));
    ATTENTION.with(|a| a.set(false));
    CURRENT_TASK.with(|c| c.set(0));
    let handle = spawn("main", main);
    let end = drive(&handle);
    let output = match &end {
        LoopEnd::Finished => take_output(handle),
        LoopEnd::Failed(_) => None,
    };
    let core = teardown();
    (core, end, output)
}

fn take_output<T>(mut handle: JoinHandle<T>) -> Option<T> {
    let mut task = handle.task.take()?;
    // A finished task's output is ready at the first poll; no waker is needed.
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(&mut task).poll(&mut cx) {
        Poll::Ready(value) => Some(value),
        Poll::Pending => None,
    }
}

fn teardown() -> Core {
    // Cancel every task while the core is still installed, so their destructors can reach
    // it; their exits are not recorded (the run is over). Cancelling breaks the reference
    // cycles between tasks blocked on each other's channels, so nothing leaks into the next run.
    let wakers: Vec<Waker> = with_core(|core| {
        core.shutting_down = true;
        core.tasks
            .iter_mut()
            .filter_map(|t| t.waker.take())
            .collect()
    });
    // Each wake schedules the task's runnable; dropping a runnable drops its future.
    wakers.into_iter().for_each(Waker::wake);
    loop {
        let next = RUN_QUEUE.with(|q| q.borrow_mut().queue.pop_front());
        match next {
            Some(runnable) => drop(runnable),
            None => break,
        }
    }
    let wakers = with_core(|core| core.timers.drain_wakers());
    drop(wakers);
    loop {
        let next = RUN_QUEUE.with(|q| q.borrow_mut().queue.pop_front());
        match next {
            Some(runnable) => drop(runnable),
            None => break,
        }
    }
    ACTIVE.with(|a| a.set(false));
    CORE.with(|cell| cell.borrow_mut().take())
        .expect("the core is installed during a run")
}

fn drive<T>(main: &JoinHandle<T>) -> LoopEnd {
    loop {
        if let Some(error) = drain_run_queue() {
            return LoopEnd::Failed(error);
        }
        if main.is_finished() {
            return LoopEnd::Finished;
        }
        match with_core(Core::next_timer) {
            Ok(Some(waker)) => waker.wake(),
            Ok(None) => {}
            Err(error) => return LoopEnd::Failed(error),
        }
    }
}

fn drain_run_queue() -> Option<SimError> {
    loop {
        let next = RUN_QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            if q.overflowed {
                return Err(q.len_max);
            }
            Ok(q.queue.pop_front())
        });
        let runnable = match next {
            Ok(Some(runnable)) => runnable,
            Ok(None) => return None,
            Err(len_max) => {
                return Some(with_core(|core| SimError::LimitExceeded {
                    limit: LimitName::RunQueueLenMax,
                    value: len_max as u64,
                    t_ns: core.now_ns,
                }))
            }
        };
        let id = *runnable.metadata();
        CURRENT_TASK.with(|c| c.set(id));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runnable.run()));
        CURRENT_TASK.with(|c| c.set(0));
        if let Err(panic) = result {
            let message = panic_message(&panic);
            return Some(with_core(|core| SimError::TaskPanicked {
                task: id,
                name: core.task_name(id),
                t_ns: core.now_ns,
                message,
            }));
        }
        if ATTENTION.with(|a| a.replace(false)) {
            let (failure, finished) = with_core(|core| {
                let info = &mut core.tasks[id as usize];
                let finished = if info.alive { None } else { info.waker.take() };
                (core.failure.take(), finished)
            });
            drop(finished);
            if let Some(error) = failure {
                return Some(error);
            }
        }
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

impl Core {
    /// Pops the next live timer, advances virtual time, records the wake and returns the
    /// waker. `Ok(None)` means a cancelled timer was skipped.
    fn next_timer(&mut self) -> Result<Option<Waker>, SimError> {
        let Some(fired) = self.timers.pop() else {
            return Err(SimError::Deadlock {
                t_ns: self.now_ns,
                waiting: self.waiting_tasks(),
            });
        };
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
}
