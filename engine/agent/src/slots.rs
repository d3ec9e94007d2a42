//! Running one turn's tool calls concurrently: at most `tool_concurrency` at a time, each its
//! own simulation task, joined in call order but stopped at the first fatal error.
//!
//! The slots are handed out strictly first come, first served (tickets), and every call task
//! is spawned, so asks for its slot, in call order: which call runs when depends only on the
//! order of the calls and on their latencies, both fixed by the seed.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Poll, Waker};

use simtape::JoinHandle;

/// A counting semaphore with FIFO tickets, for tasks of one simulation.
#[derive(Debug)]
pub(crate) struct Slots {
    /// Tickets handed out so far; the next one gets this number.
    issued: Cell<u64>,
    /// Tickets below this number may run.
    admitted: Cell<u64>,
    /// Waiting tickets and their tasks' wakers.
    waiting: RefCell<BTreeMap<u64, Waker>>,
}

/// A held slot; dropping it lets the next ticket run.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Rc<Slots>,
}

impl Slots {
    /// Returns `capacity` slots (at least one).
    pub(crate) fn new(capacity: u32) -> Rc<Slots> {
        Rc::new(Slots {
            issued: Cell::new(0),
            admitted: Cell::new(u64::from(capacity.max(1))),
            waiting: RefCell::new(BTreeMap::new()),
        })
    }

    /// Waits for a slot, after every earlier ticket.
    pub(crate) async fn acquire(self: Rc<Self>) -> Slot {
        let ticket = self.issued.get();
        self.issued.set(ticket + 1);
        poll_fn(|cx| {
            if ticket < self.admitted.get() {
                self.waiting.borrow_mut().remove(&ticket);
                Poll::Ready(())
            } else {
                self.waiting.borrow_mut().insert(ticket, cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        Slot { slots: self }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let next = self.slots.admitted.get();
        self.slots.admitted.set(next + 1);
        let waker = self.slots.waiting.borrow_mut().remove(&next);
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Awaits every handle and returns their outputs in handle order; returns the first error
/// (in completion order) as soon as it comes, leaving the other tasks to be cancelled with
/// the run.
pub(crate) async fn join_all<T, E>(handles: Vec<JoinHandle<Result<T, E>>>) -> Result<Vec<T>, E> {
    let mut pending: Vec<Option<JoinHandle<Result<T, E>>>> =
        handles.into_iter().map(Some).collect();
    let mut outputs: Vec<Option<T>> = pending.iter().map(|_| None).collect();
    let mut left = pending.len();
    poll_fn(|cx| {
        for (slot, output) in pending.iter_mut().zip(outputs.iter_mut()) {
            let Some(handle) = slot else { continue };
            if let Poll::Ready(joined) = Pin::new(handle).poll(cx) {
                *slot = None;
                left -= 1;
                match joined.expect("tool call tasks are never aborted") {
                    Ok(value) => *output = Some(value),
                    Err(error) => return Poll::Ready(Err(error)),
                }
            }
        }
        if left == 0 {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    })
    .await?;
    Ok(outputs
        .into_iter()
        .map(|output| output.expect("every joined task left its output"))
        .collect())
}
