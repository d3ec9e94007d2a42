//! Inboxes and outboxes: the one door between an open run and the world outside it.
//!
//! A closed run (`Sim::run`) gets nothing from outside: every input is in its configuration,
//! and "no task runnable, no timer pending" is a deadlock. An open run ([`crate::run::Run`])
//! also takes input while it runs: requests from agent processes, arriving in wall-clock
//! time. Each input enters through an [`Inbox`] that the builder registered, and every
//! delivery is an `input` record on the tape, at the virtual instant and the step it was
//! delivered at, so a replay feeds the same inputs at the same points
//! ([`crate::run::Run::replay_inputs`]). A task blocked on an inbox makes the run
//! **awaiting input**, not deadlocked.
//!
//! Output goes the other way through an [`Outbox`]: a task sends, the driver takes after a
//! step. Outputs are not recorded: they follow from the tape's inputs and records.
//!
//! ```
//! use simtape::run::Progress;
//! let mut builder = simtape::Sim::builder();
//! builder.tape_in_memory();
//! let requests = builder.inbox::<String>("requests");
//! let answers = builder.outbox::<String>("answers");
//! let mut run = builder.build().unwrap().start(move |host| async move {
//!     while let Some(text) = requests.recv().await {
//!         host.sleep(std::time::Duration::from_secs(30)).await; // a slow model call
//!         answers.send(text.to_uppercase());
//!     }
//! });
//! assert!(matches!(run.run_until_idle(), Progress::AwaitingInput));
//! run.deliver(requests, "hello".to_string()).unwrap();
//! assert!(matches!(run.run_until_idle(), Progress::AwaitingInput));
//! assert_eq!(run.take(answers), ["HELLO"]);
//! assert_eq!(run.now_ns(), 30_000_000_000); // virtual time: the 30 s took no wall time
//! run.close(requests).unwrap();
//! let report = run.finish().unwrap();
//! assert_eq!(report.summary.end_ns, 30_000_000_000);
//! ```

use std::any::Any;
use std::collections::VecDeque;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::actor::ActorSlot;
use crate::error::SimError;
use crate::executor::{with_core, Awaiting, Core};
use crate::limits::LimitName;
use crate::run::DeliverError;

/// The tag of an `input` record that carries a message.
pub(crate) const INPUT_MESSAGE: &str = "message";
/// The tag of an `input` record that closes its inbox.
pub(crate) const INPUT_CLOSE: &str = "close";
/// The tag of the engine's `input` record that stops an open run before its main task ended.
pub(crate) const INPUT_STOP: &str = "stop";

/// A message type an inbox can carry: it goes on the tape and comes back from it.
pub trait Input: Serialize + DeserializeOwned + 'static {}
impl<M: Serialize + DeserializeOwned + 'static> Input for M {}

/// Where input from outside enters an open run (see the module docs). A `Copy` handle,
/// valid in runs built by the builder that registered it.
pub struct Inbox<M> {
    id: u16,
    marker: PhantomData<fn() -> M>,
}

/// Where a run's tasks leave output for the driver of an open run (see the module docs).
pub struct Outbox<M> {
    id: u16,
    marker: PhantomData<fn() -> M>,
}

macro_rules! copy_handle {
    ($name:ident) => {
        impl<M> Clone for $name<M> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<M> Copy for $name<M> {}
        impl<M> std::fmt::Debug for $name<M> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("id", &self.id)
                    .finish()
            }
        }
        impl<M> $name<M> {
            pub(crate) fn new(id: u16) -> Self {
                $name {
                    id,
                    marker: PhantomData,
                }
            }

            /// Returns the actor id, as in the tape's actor table.
            pub fn id(&self) -> u16 {
                self.id
            }
        }
    };
}
copy_handle!(Inbox);
copy_handle!(Outbox);

/// The type-erased face of an inbox's state, so the run can replay encoded inputs into it
/// and ask whether a task awaits it without knowing its message type.
pub(crate) trait InboxSlot {
    fn has_waiter(&self) -> bool;
    fn len(&self) -> usize;
    /// Decodes a recorded `[events, "message", message]` payload and queues the message.
    fn push_encoded(&mut self, payload: &[u8]) -> Result<Option<Waker>, RedeliverError>;
    fn close(&mut self) -> Vec<Waker>;
    fn as_any(&mut self) -> &mut dyn Any;
}

pub(crate) struct InboxState<M> {
    queue: VecDeque<M>,
    closed: bool,
    /// Tasks blocked in `recv`, FIFO, each with the token of its `InboxRecv`.
    waiters: VecDeque<(u64, Waker)>,
    next_token: u64,
}

impl<M> InboxState<M> {
    pub(crate) fn new() -> Self {
        InboxState {
            queue: VecDeque::new(),
            closed: false,
            waiters: VecDeque::new(),
            next_token: 0,
        }
    }

    fn push(&mut self, message: M) -> Option<Waker> {
        self.queue.push_back(message);
        self.waiters.pop_front().map(|(_, waker)| waker)
    }
}

impl<M: Input> InboxSlot for InboxState<M> {
    fn has_waiter(&self) -> bool {
        !self.waiters.is_empty()
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn push_encoded(&mut self, payload: &[u8]) -> Result<Option<Waker>, RedeliverError> {
        let (_, _, message): (u64, String, M) =
            rmp_serde::from_slice(payload).map_err(|e| RedeliverError::Decode {
                detail: e.to_string(),
            })?;
        Ok(self.push(message))
    }

    fn close(&mut self) -> Vec<Waker> {
        self.closed = true;
        self.waiters.drain(..).map(|(_, waker)| waker).collect()
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}

/// The state an inbox's actor slot holds: boxed twice so it downcasts to the erased face.
pub(crate) type ErasedInbox = Box<dyn InboxSlot>;

pub(crate) fn erased(slot: &mut ActorSlot) -> &mut dyn InboxSlot {
    slot.state
        .as_mut()
        .and_then(|state| state.downcast_mut::<ErasedInbox>())
        .expect("an inbox's actor slot holds an inbox")
        .as_mut()
}

pub(crate) fn slot_has_waiter(slot: &mut ActorSlot) -> bool {
    erased(slot).has_waiter()
}

fn typed<M: Input>(core: &mut Core, id: u16) -> &mut InboxState<M> {
    erased(&mut core.actors[usize::from(id)])
        .as_any()
        .downcast_mut::<InboxState<M>>()
        .expect("an Inbox handle's message type matches its state")
}

impl<M: Input> Inbox<M> {
    /// Receives the next input; `None` once the driver closed the inbox and it is empty.
    pub fn recv(&self) -> InboxRecv<M> {
        InboxRecv {
            id: self.id,
            token: None,
            marker: PhantomData,
        }
    }

    /// Queues `message` at the current instant, recording it (the driver's side).
    pub(crate) fn deliver(&self, core: &mut Core, message: M) -> Result<(), DeliverError> {
        let len_max = core.limits.mailbox_len_max;
        let state = typed::<M>(core, self.id);
        if state.closed {
            return Err(DeliverError::Closed);
        }
        if state.queue.len() >= len_max {
            return Err(DeliverError::Full { len_max });
        }
        let events = core.events();
        core.record_value(
            self.id,
            crate::tape::RecordKind::Input,
            &(events, INPUT_MESSAGE, &message),
        );
        if let Some(waker) = typed::<M>(core, self.id).push(message) {
            waker.wake();
        }
        Ok(())
    }
}

fn mailbox_full(core: &Core, len_max: usize) -> SimError {
    SimError::LimitExceeded {
        limit: LimitName::MailboxLenMax,
        value: len_max as u64,
        t_ns: core.now_ns,
    }
}

/// Closes the inbox with actor id `id`, recording it; waiting receivers get `None`.
pub(crate) fn close(core: &mut Core, id: u16) {
    let events = core.events();
    core.record_value(
        id,
        crate::tape::RecordKind::Input,
        &(events, INPUT_CLOSE, ()),
    );
    let wakers = erased(&mut core.actors[usize::from(id)]).close();
    wakers.into_iter().for_each(Waker::wake);
}

/// Why a recorded input could not be delivered again (`Run::replay_inputs`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RedeliverError {
    /// The payload does not decode as the inbox's message type.
    #[error("{detail}")]
    Decode { detail: String },
    /// The inbox already holds as many messages as it may.
    #[error("inbox holds {len_max} messages (mailbox_len_max)")]
    Full { len_max: usize },
}

/// Queues a recorded message payload into the inbox with actor id `id`, recording it again.
pub(crate) fn deliver_encoded(
    core: &mut Core,
    id: u16,
    payload: &[u8],
) -> Result<(), RedeliverError> {
    let len_max = core.limits.mailbox_len_max;
    let slot = erased(&mut core.actors[usize::from(id)]);
    if slot.len() >= len_max {
        return Err(RedeliverError::Full { len_max });
    }
    let waker = slot.push_encoded(payload)?;
    let (t_ns, task) = (core.now_ns, 0);
    if let Err(e) = core
        .recorder
        .encoded(t_ns, id, task, crate::tape::RecordKind::Input, payload)
    {
        core.fail(e);
    }
    if let Some(waker) = waker {
        waker.wake();
    }
    Ok(())
}

/// The future of [`Inbox::recv`].
#[must_use = "futures do nothing unless awaited"]
pub struct InboxRecv<M: 'static> {
    id: u16,
    token: Option<u64>,
    marker: PhantomData<fn() -> M>,
}

impl<M: 'static> std::fmt::Debug for InboxRecv<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxRecv")
            .field("inbox", &self.id)
            .finish()
    }
}

impl<M: Input> Future for InboxRecv<M> {
    type Output = Option<M>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<M>> {
        let (id, token) = (self.id, self.token);
        let (ready, token) = with_core(|core| {
            let state = typed::<M>(core, id);
            if let Some(message) = state.queue.pop_front() {
                return (Poll::Ready(Some(message)), None);
            }
            if state.closed {
                return (Poll::Ready(None), None);
            }
            let token = match token {
                Some(token) => {
                    // Polled again (spuriously, or by another waker): refresh the waker.
                    match state.waiters.iter_mut().find(|(t, _)| *t == token) {
                        Some((_, waker)) => waker.clone_from(cx.waker()),
                        None => state.waiters.push_back((token, cx.waker().clone())),
                    }
                    token
                }
                None => {
                    let token = state.next_token;
                    state.next_token += 1;
                    state.waiters.push_back((token, cx.waker().clone()));
                    token
                }
            };
            core.set_awaiting(Awaiting::Input(id));
            (Poll::Pending, Some(token))
        });
        self.token = token;
        ready
    }
}

impl<M: 'static> Drop for InboxRecv<M> {
    fn drop(&mut self) {
        let (id, Some(token)) = (self.id, self.token) else {
            return;
        };
        crate::executor::try_with_core(|core| {
            let slot = &mut core.actors[usize::from(id)];
            if let Some(inbox) = slot
                .state
                .as_mut()
                .and_then(|state| state.downcast_mut::<ErasedInbox>())
            {
                if let Some(state) = inbox.as_any().downcast_mut::<InboxState<M>>() {
                    state.waiters.retain(|(t, _)| *t != token);
                }
            }
        });
    }
}

pub(crate) struct OutboxState<M> {
    pub(crate) queue: VecDeque<M>,
}

impl<M: 'static> Outbox<M> {
    /// Leaves `message` for the driver of the run.
    ///
    /// # Panics
    /// Outside a simulation run.
    pub fn send(&self, message: M) {
        with_core(|core| {
            let len_max = core.limits.mailbox_len_max;
            let state = outbox_state::<M>(&mut core.actors[usize::from(self.id)]);
            if state.queue.len() >= len_max {
                let error = mailbox_full(core, len_max);
                core.fail(error);
                return;
            }
            state.queue.push_back(message);
        });
    }
}

pub(crate) fn outbox_state<M: 'static>(slot: &mut ActorSlot) -> &mut OutboxState<M> {
    slot.state
        .as_mut()
        .and_then(|state| state.downcast_mut::<OutboxState<M>>())
        .expect("an Outbox handle's message type matches its state")
}
