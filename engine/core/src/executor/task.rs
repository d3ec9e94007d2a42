//! Tasks: `spawn`, `JoinHandle`, the exit record of a task, and what a waiting task awaits.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::context::{schedule, try_with_core, with_core};
use super::TaskId;
use crate::actor::ENGINE_ACTOR;
use crate::tape::encode::SmallPayload;
use crate::tape::RecordKind;

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
    /// Input from outside the simulation, on the inbox with this actor id.
    Input(u16),
}

/// What a deadlock report says of a task waiting on a future simtape cannot see into.
pub(super) const UNSEEN: &str = "a future outside simtape's channels, timers and joins";

/// Something tasks wait on (a channel, a oneshot). At a deadlock the executor asks each live
/// probe which wakers it holds and matches them to tasks, so the hot paths (send, receive,
/// sleep) never spend a write on describing what a task awaits.
pub(crate) trait WaitProbe {
    /// Appends every waker this probe holds and what its owner awaits.
    fn waiting(&self, found: &mut Vec<(Waker, Awaiting)>);
}

/// Registers a probe with the running simulation.
pub(crate) fn register_probe(probe: std::rc::Weak<dyn WaitProbe>) {
    with_core(|core| core.register_probe(probe));
}

/// Writes a record of the engine actor caused by the current task.
pub(crate) fn record_engine<T: serde::Serialize + ?Sized>(kind: RecordKind, value: &T) {
    with_core(|core| core.record_value(ENGINE_ACTOR, kind, value));
}

/// Records a property's evaluation on the engine actor and folds it into the run's list.
pub(crate) fn record_property(kind: crate::property::PropertyKind, name: &str, condition: bool) {
    with_core(|core| {
        let payload = ("property", (name, kind.name(), condition));
        core.record_value(ENGINE_ACTOR, RecordKind::Request, &payload);
        crate::property::fold(&mut core.properties, kind, name, condition);
    });
}

/// Whether the fault point `site` fires now, taking its draws; a firing is recorded.
pub(crate) fn buggify(site: &'static str) -> bool {
    with_core(|core| {
        let (seed, book) = (core.seed, core.decisions.clone());
        let ordinal = core.recorder.records();
        let fires = core
            .buggify
            .entry(site)
            .or_insert_with(|| crate::buggify::Site::new(seed, site, book, ordinal))
            .fires(site, ordinal);
        if fires {
            core.record_value(ENGINE_ACTOR, RecordKind::Request, &("buggify", site));
        }
        fires
    })
}

/// A handle to a spawned task: await it for the task's output, or abort it. Dropping the
/// handle lets the task run on (it is detached, as with threads).
pub struct JoinHandle<T> {
    id: TaskId,
    pub(super) task: Option<async_task::Task<T, TaskId>>,
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle").field("id", &self.id).finish()
    }
}

/// Why a joined task produced no output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    pub(crate) fn is_finished(&self) -> bool {
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
                // What the task awaits stays `Join(id)`: a deadlock report renders a join of
                // a task that has ended as `UNSEEN` (see `Core::describe`), so the hot path
                // spends no visit to the core on it.
                // A finished `Task` must not be polled again; `None` now means "taken".
                // Dropping it (not forgetting it) releases the handle's claim on the task's
                // allocation, which is freed here if no waker of the task is left.
                drop(self.task.take());
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
/// dropped unfinished, "panicked" when it unwound. A task dropped before its first poll
/// ends unrecorded (and stays counted as live until teardown).
struct ExitGuard {
    id: TaskId,
    started: bool,
    completed: bool,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        if !self.started {
            return;
        }
        let status = if self.completed {
            "ok"
        } else if std::thread::panicking() {
            "panicked"
        } else {
            "aborted"
        };
        let id = self.id;
        let mut waker = None;
        try_with_core(|core| {
            if core.shutting_down {
                return;
            }
            if let Some(info) = core.tasks.get_mut(id as usize) {
                // The task ends: the core lets go of its waker (dropped below, outside the
                // borrow; the runnable that runs this drop still holds the task).
                waker = info.waker.take();
                core.tasks_alive -= 1;
            }
            let t_ns = core.now_ns;
            let written = if self.completed {
                core.recorder.exit_ok(t_ns, id)
            } else {
                let payload = SmallPayload::exit(status);
                core.recorder
                    .encoded(t_ns, ENGINE_ACTOR, id, RecordKind::Exit, payload.as_bytes())
            };
            if let Err(e) = written {
                core.fail(e);
            }
        });
        drop(waker);
    }
}

/// A task's future with its exit record: what async-task allocates and polls per task.
///
/// A struct, not an `async` block that awaits `future`: such a block keeps the captured
/// future *and* the awaited copy of it (rustc does not overlap the two), so each task's
/// allocation held its future twice (W3: 144 bytes of future instead of 72, and 40 bytes of
/// async-task's header on top). The behaviour is the block's: the first poll starts the
/// guard, and when the task ends the future is dropped first and the exit record written
/// after it (fields drop in declaration order), within the same `Runnable::run`.
struct Tracked<F> {
    future: F,
    guard: ExitGuard,
}

impl<F: Future> Future for Tracked<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `future` is structurally pinned and `guard` is not. `future` is never moved
        // out of a `Tracked`: nothing here moves it, `Tracked` has no `Drop` of its own (its
        // fields drop in place), and it is `Unpin` only when `F` is (the auto trait, as
        // `ExitGuard` is `Unpin`). So while `self` is pinned, `future` stays where it is
        // until it is dropped, which is what `Pin::new_unchecked` requires; `guard` is only
        // written through a plain `&mut`, never pinned.
        #[allow(unsafe_code)]
        let (future, guard) = unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.future), &mut this.guard)
        };
        guard.started = true;
        let poll = future.poll(cx);
        if poll.is_ready() {
            guard.completed = true;
        }
        poll
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
    // One visit to the core per spawn: registering the task, allocating it (which does not
    // touch the core) and keeping its waker.
    let (id, runnable, task) = with_core(|core| {
        let id = core.register_task(name);
        let wrapped = Tracked {
            future,
            guard: ExitGuard {
                id,
                started: false,
                completed: false,
            },
        };
        let (runnable, task) = async_task::Builder::new()
            .metadata(id)
            .spawn_local(move |_| wrapped, schedule);
        // The core keeps a waker of every live task: at teardown, waking each one and
        // dropping its runnable drops its future, which breaks reference cycles between
        // blocked tasks.
        core.tasks[id as usize].waker = Some(runnable.waker());
        (id, runnable, task)
    });
    runnable.schedule();
    JoinHandle {
        id,
        task: Some(task),
    }
}
