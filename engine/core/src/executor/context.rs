//! The thread-local context of the running simulation, entered through [`Entered`].
//!
//! The core lives in a thread-local cell only while the executor works on it (a whole
//! [`crate::Sim::run`], or one step of a [`crate::run::Run`]); between steps the `Run` owns
//! it. Entering installs it and leaving takes it back, on every path: the guard's `Drop` also
//! runs on an early return or a panic, so a thread is never left believing a simulation runs.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use async_task::Runnable;

use super::core::Core;
use super::TaskId;

pub(super) struct RunQueue {
    pub(super) queue: VecDeque<Runnable<TaskId>>,
    pub(super) len_max: usize,
    pub(super) overflowed: bool,
}

thread_local! {
    pub(super) static RUN_QUEUE: RefCell<RunQueue> = const { RefCell::new(RunQueue {
        queue: VecDeque::new(),
        len_max: usize::MAX,
        overflowed: false,
    }) };
    static CORE: RefCell<Option<Core>> = const { RefCell::new(None) };
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// The task being polled (0 between polls). A plain cell, not a core field, so the hot
    /// loop does not borrow the core around every poll.
    pub(super) static CURRENT_TASK: Cell<TaskId> = const { Cell::new(0) };
    /// Set when the run has failed: the loop then consults the core.
    pub(super) static ATTENTION: Cell<bool> = const { Cell::new(false) };
}

/// Proof that a core is installed on this thread; leaving (or dropping) takes it back out.
pub(crate) struct Entered {
    left: bool,
}

impl Entered {
    /// Installs `core` on this thread.
    ///
    /// # Panics
    /// When a simulation is already entered on this thread: runs do not nest.
    pub(crate) fn enter(core: Core) -> Entered {
        assert!(
            !in_simulation(),
            "a simulation is already running on this thread; runs do not nest"
        );
        let mut core = core;
        let len_max = core.limits.run_queue_len_max;
        let parked = std::mem::take(&mut core.parked_runnables);
        RUN_QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            q.queue = parked;
            q.len_max = len_max;
            q.overflowed = false;
        });
        CORE.with(|cell| *cell.borrow_mut() = Some(core));
        ACTIVE.with(|a| a.set(true));
        ATTENTION.with(|a| a.set(false));
        CURRENT_TASK.with(|c| c.set(0));
        Entered { left: false }
    }

    /// Takes the core back out, with whatever the run queue still holds (nothing at
    /// quiescence; the runnables of a failed run, until its teardown drops them).
    pub(crate) fn leave(mut self) -> Core {
        self.left = true;
        let mut core = take_core();
        core.parked_runnables = RUN_QUEUE.with(|q| std::mem::take(&mut q.borrow_mut().queue));
        core
    }
}

fn take_core() -> Core {
    ACTIVE.with(|a| a.set(false));
    CORE.with(|cell| cell.borrow_mut().take())
        .expect("the core is installed while entered")
}

impl Drop for Entered {
    fn drop(&mut self) {
        if self.left {
            return;
        }
        // Unwinding (or an early return) out of an entered scope. The queued runnables and
        // the core may hold futures whose destructors reach for the core; dropping them here,
        // with the core half gone, could panic again and abort. Forget them: a run that
        // escaped its own panic handling is lost anyway, and the thread stays usable.
        let queue = RUN_QUEUE.with(|q| std::mem::take(&mut q.borrow_mut().queue));
        std::mem::forget(queue);
        std::mem::forget(take_core());
    }
}

/// Returns the id of the task being polled (0 = the engine).
#[inline]
pub(crate) fn current_task() -> TaskId {
    CURRENT_TASK.with(Cell::get)
}

pub(super) fn raise_attention() {
    ATTENTION.with(|a| a.set(true));
}

pub(super) fn schedule(runnable: Runnable<TaskId>) {
    RUN_QUEUE.with(|cell| {
        let mut run_queue = cell.borrow_mut();
        if run_queue.queue.len() >= run_queue.len_max {
            run_queue.overflowed = true;
        }
        run_queue.queue.push_back(runnable);
    });
}

/// Pops the next runnable, or `Err(len_max)` when the queue overflowed its bound.
#[inline]
pub(super) fn pop_runnable() -> Result<Option<Runnable<TaskId>>, usize> {
    RUN_QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        if q.overflowed {
            return Err(q.len_max);
        }
        Ok(q.queue.pop_front())
    })
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

/// Returns true while a simulation runs on this thread.
pub fn in_simulation() -> bool {
    ACTIVE.with(Cell::get)
}
