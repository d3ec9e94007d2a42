//! The single-threaded executor: a FIFO run queue of `async-task` runnables and a timer queue
//! ordered by `(virtual_time_ns, seq)`.
//!
//! The loop pops one timer event, then drains the run queue, then pops the next: one total
//! order of events, and it is the order the tape records. Zero-delay wakes (channel sends,
//! joins) go straight to the run queue and never touch the timer queue.
//!
//! - `context` — the thread-local cells, entered through the `Entered` guard only while the
//!   executor works on a run; nothing outlives a run and two runs on two threads share nothing.
//! - `core` — `Core`, the state of one run, and what it does without polling tasks.
//! - `task` — `spawn`, `JoinHandle`, task exits, what a waiting task awaits.
//! - `run` — the loop: to the end for a closed run, step by step for an open one.

mod context;
mod core;
mod run;
mod task;

pub(crate) use self::core::Core;
pub use context::in_simulation;
pub(crate) use context::{current_task, try_with_core, with_core};
pub(crate) use run::{next_timer_ns, poke, run_to_end, run_until, start, step, teardown, LoopEnd};
pub(crate) use task::{
    buggify, record_engine, record_property, register_probe, Awaiting, WaitProbe,
};
pub use task::{spawn, JoinError, JoinHandle};

type TaskId = u32;
