//! The run loop: drain the run queue, pop one timer, drain again. Closed runs go to the end
//! in one entry ([`run_to_end`]); open runs are stepped from outside ([`step`]), entering
//! and leaving the thread-local context each time, quiescent in between.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::context::with_core;
use super::context::{pop_runnable, Entered, ATTENTION, CURRENT_TASK, RUN_QUEUE};
use super::core::Core;
use super::task::{spawn, JoinHandle};
use crate::error::SimError;
use crate::limits::LimitName;

/// How a stretch of the event loop ended.
#[derive(Debug)]
pub(crate) enum LoopEnd {
    /// The main task finished.
    Finished,
    /// Nothing is runnable and no timer is pending, but a task awaits input from outside:
    /// an open run waits for its driver. The error is the deadlock this would be in a closed
    /// run (it names every waiting task).
    AwaitingInput(SimError),
    /// The stretch ran as far as it was asked to; the main task goes on.
    Paused,
    /// The run failed.
    Failed(SimError),
}

/// Installs `core`, runs `f` inside the simulation, and takes the core back out. A task that
/// `f` makes runnable must have been drained before `f` returns (the context is left only at
/// quiescence).
pub(crate) fn entered<R>(core: Core, f: impl FnOnce() -> R) -> (Core, R) {
    let entry = Entered::enter(core);
    let result = f();
    (entry.leave(), result)
}

/// Spawns `main` as task `main` and runs until nothing is runnable at time zero.
pub(crate) fn start<T: 'static>(
    core: Core,
    main: impl Future<Output = T> + 'static,
) -> (Core, JoinHandle<T>, Option<SimError>) {
    let (core, (handle, failure)) = entered(core, || {
        let handle = spawn("main", main);
        let failure = drain_run_queue();
        (handle, failure)
    });
    (core, handle, failure)
}

/// Runs the loop until `main` finishes or the run fails (a closed run: no input can come, so
/// idle with tasks waiting is a deadlock). The hot loop of every `Sim::run`.
pub(crate) fn run_to_end<T>(core: Core, main: &JoinHandle<T>) -> (Core, LoopEnd) {
    entered(core, || match drive(main, None) {
        LoopEnd::AwaitingInput(deadlock) => LoopEnd::Failed(deadlock),
        end => end,
    })
}

/// Runs the loop until `main` finishes, the run fails, it awaits input, or (with
/// `until_ns`) the next timer lies after it (then virtual time stays where the last event
/// left it).
pub(crate) fn run_until<T>(
    core: Core,
    main: &JoinHandle<T>,
    until_ns: Option<u64>,
) -> (Core, LoopEnd) {
    entered(core, || drive(main, until_ns))
}

/// Pops one timer event (or skips one cancelled timer) and drains what it made runnable.
pub(crate) fn step<T>(core: Core, main: &JoinHandle<T>) -> (Core, LoopEnd) {
    entered(core, || {
        if main.is_finished() {
            return LoopEnd::Finished;
        }
        match with_core(Core::next_timer) {
            Ok(Some(waker)) => waker.wake(),
            Ok(None) => {}
            Err(error) => return idle_or_failed(error),
        }
        if let Some(error) = drain_run_queue() {
            return LoopEnd::Failed(error);
        }
        if main.is_finished() {
            LoopEnd::Finished
        } else {
            LoopEnd::Paused
        }
    })
}

/// Runs `f` inside the simulation (it may wake tasks), then drains the run queue.
pub(crate) fn poke<R>(core: Core, f: impl FnOnce(&mut Core) -> R) -> (Core, R, Option<SimError>) {
    let (core, (result, failure)) = entered(core, || {
        let result = with_core(f);
        (result, drain_run_queue())
    });
    (core, result, failure)
}

/// A deadlock in an open run where some task awaits input is "awaiting input".
fn idle_or_failed(error: SimError) -> LoopEnd {
    if matches!(error, SimError::Deadlock { .. }) && with_core(Core::awaiting_input) {
        LoopEnd::AwaitingInput(error)
    } else {
        LoopEnd::Failed(error)
    }
}

fn drive<T>(main: &JoinHandle<T>, until_ns: Option<u64>) -> LoopEnd {
    loop {
        if let Some(error) = drain_run_queue() {
            return LoopEnd::Failed(error);
        }
        if main.is_finished() {
            return LoopEnd::Finished;
        }
        if let Some(until_ns) = until_ns {
            if with_core(|core| core.timers.next_live_ns()).is_some_and(|t| t > until_ns) {
                return LoopEnd::Paused;
            }
        }
        match with_core(Core::next_timer) {
            Ok(Some(waker)) => waker.wake(),
            Ok(None) => {}
            Err(error) => return idle_or_failed(error),
        }
    }
}

fn drain_run_queue() -> Option<SimError> {
    loop {
        let runnable = match pop_runnable() {
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
            if let Some(error) = with_core(|core| core.failure.take()) {
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

/// Ends the run: takes `main`'s output when it finished, then cancels every task while the
/// core is installed (so their destructors can reach it; their exits are not recorded).
/// Cancelling breaks the reference cycles between tasks blocked on each other's channels,
/// so nothing leaks into the next run.
pub(crate) fn teardown<T>(core: Core, main: JoinHandle<T>) -> (Core, Option<T>) {
    entered(core, || {
        let output = take_output(main);
        let wakers: Vec<Waker> = with_core(|core| {
            core.shutting_down = true;
            core.tasks
                .iter_mut()
                .filter_map(|t| t.waker.take())
                .collect()
        });
        // Each wake schedules the task's runnable; dropping a runnable drops its future.
        wakers.into_iter().for_each(Waker::wake);
        drop_queued();
        let wakers = with_core(|core| core.timers.drain_wakers());
        drop(wakers);
        drop_queued();
        output
    })
}

fn drop_queued() {
    loop {
        let next = RUN_QUEUE.with(|q| q.borrow_mut().queue.pop_front());
        match next {
            Some(runnable) => drop(runnable),
            None => break,
        }
    }
}

fn take_output<T>(mut handle: JoinHandle<T>) -> Option<T> {
    let task = handle.task.take()?;
    if !task.is_finished() {
        // Dropping an unfinished task cancels it (its future is dropped with the others).
        drop(task);
        return None;
    }
    // Finished means completed or closed (a panic, a cancel); a closed task has no output,
    // which the fallible form says instead of panicking. No waker is needed: it is ready.
    let mut task = task.fallible();
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(&mut task).poll(&mut cx) {
        Poll::Ready(value) => value,
        Poll::Pending => None,
    }
}

/// Returns the virtual time of the next pending timer, if any (it may be a cancelled one,
/// which fires nothing).
pub(crate) fn next_timer_ns(core: &mut Core) -> Option<u64> {
    core.timers.next_live_ns()
}
