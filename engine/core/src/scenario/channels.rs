//! The named channels of a scenario run, shared by every task that mentions them.
//!
//! Each channel is one [`crate::sync`] channel of JSON values. Every task with a `send` step
//! on it holds its own sender until the task ends, and the main task drops the original as
//! soon as the tasks are spawned: so a `recv` returns "closed" exactly when every task that
//! could still send has ended, and waits (or deadlocks) while one could.
//!
//! `sync` channels have one receiver; several tasks may `recv` from one scenario channel, so
//! they take turns holding it, first come first served ([`SharedReceiver`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use serde_json::Value as Json;

use crate::executor::{with_core, Awaiting};
use crate::sync::{Receiver, Sender};

/// Every channel of one run, by name.
pub(crate) struct Channels {
    /// The original senders, held only while the tasks are spawned.
    senders: BTreeMap<String, Sender<Json>>,
    receivers: BTreeMap<String, Rc<SharedReceiver>>,
}

impl Channels {
    /// Opens the channels named `names`, each with the run's `channel_capacity`. Must run
    /// inside the simulation.
    pub(crate) fn open<'a>(names: impl IntoIterator<Item = &'a str>) -> Channels {
        let mut senders = BTreeMap::new();
        let mut receivers = BTreeMap::new();
        for name in names {
            let (sender, receiver) = crate::sync::channel(name);
            senders.insert(name.to_string(), sender);
            receivers.insert(
                name.to_string(),
                Rc::new(SharedReceiver::new(name, receiver)),
            );
        }
        Channels { senders, receivers }
    }

    /// Returns a new sender on `name`.
    pub(crate) fn sender(&self, name: &str) -> Sender<Json> {
        self.senders
            .get(name)
            .expect("every channel a step names was opened")
            .clone()
    }

    /// Returns the shared receiving end of `name`.
    pub(crate) fn receiver(&self, name: &str) -> Rc<SharedReceiver> {
        Rc::clone(
            self.receivers
                .get(name)
                .expect("every channel a step names was opened"),
        )
    }

    /// Drops the original senders: from now on only the tasks' own senders keep a channel
    /// open. The receivers stay until the run ends, so a send never finds its channel gone.
    pub(crate) fn close_senders(&mut self) {
        self.senders.clear();
    }
}

/// The receiving end of one channel, held by one receiving task at a time.
pub(crate) struct SharedReceiver {
    name: Rc<str>,
    turn: RefCell<Turn>,
}

/// Whose turn it is. Tickets are handed out in the order the `recv` steps start and are served
/// in that order, so which task gets a message is decided by the run's event order alone.
struct Turn {
    /// The receiver; `None` while a task holds it.
    receiver: Option<Receiver<Json>>,
    ticket_next: u64,
    ticket_serving: u64,
    waiting: BTreeMap<u64, Waker>,
}

impl SharedReceiver {
    fn new(name: &str, receiver: Receiver<Json>) -> SharedReceiver {
        let turn = Turn {
            receiver: Some(receiver),
            ticket_next: 0,
            ticket_serving: 0,
            waiting: BTreeMap::new(),
        };
        SharedReceiver {
            name: Rc::from(name),
            turn: RefCell::new(turn),
        }
    }

    /// Receives the next message; `None` once every sender has ended and the queue is empty.
    ///
    /// When the future is dropped mid-wait (only when a failed run tears down), the receiver
    /// is not handed on; nothing runs after that anyway.
    pub(crate) async fn recv(&self) -> Option<Json> {
        let ticket = {
            let mut turn = self.turn.borrow_mut();
            turn.ticket_next += 1;
            turn.ticket_next - 1
        };
        let mut receiver = WaitTurn {
            shared: self,
            ticket,
        }
        .await;
        let value = receiver.recv().await;
        let next = {
            let mut turn = self.turn.borrow_mut();
            turn.receiver = Some(receiver);
            turn.ticket_serving += 1;
            let serving = turn.ticket_serving;
            turn.waiting.remove(&serving)
        };
        if let Some(waker) = next {
            waker.wake();
        }
        value
    }
}

/// Waits until `ticket` is served, then takes the receiver.
struct WaitTurn<'a> {
    shared: &'a SharedReceiver,
    ticket: u64,
}

impl Future for WaitTurn<'_> {
    type Output = Receiver<Json>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Receiver<Json>> {
        let mut turn = self.shared.turn.borrow_mut();
        if turn.ticket_serving == self.ticket {
            let receiver = turn
                .receiver
                .take()
                .expect("the receiver is handed back before the next ticket is served");
            return Poll::Ready(receiver);
        }
        turn.waiting.insert(self.ticket, cx.waker().clone());
        drop(turn);
        let name = Rc::clone(&self.shared.name);
        with_core(|core| core.set_awaiting(Awaiting::Recv(name)));
        Poll::Pending
    }
}
