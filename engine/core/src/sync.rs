//! Channels between simulation tasks: bounded mpsc and oneshot.
//!
//! A send that finds room wakes the receiver through the run queue at once (a zero-delay
//! wake, never a timer). Channel names appear in deadlock reports.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::executor::{register_probe, with_core, Awaiting, WaitProbe};

struct Shared<T> {
    queue: VecDeque<T>,
    capacity: usize,
    receiver_waker: Option<Waker>,
    sender_wakers: VecDeque<Waker>,
    senders: usize,
    receiver_alive: bool,
    name: Rc<str>,
}

/// The sending half of a channel. Clone it for more senders.
pub struct Sender<T> {
    shared: Rc<RefCell<Shared<T>>>,
}

/// The receiving half of a channel.
pub struct Receiver<T> {
    shared: Rc<RefCell<Shared<T>>>,
}

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("channel", &self.shared.borrow().name)
            .finish()
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("channel", &self.shared.borrow().name)
            .finish()
    }
}

/// The receiver is gone; the message comes back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the receiver of the channel is gone")]
pub struct SendError<T>(pub T);

/// Why [`Sender::try_send`] did not send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrySendError<T> {
    /// The channel is full.
    #[error("the channel is full")]
    Full(T),
    /// The receiver is gone.
    #[error("the receiver of the channel is gone")]
    Closed(T),
}

/// Creates a named channel holding at most the run's `channel_capacity` messages.
///
/// ```
/// let report = simtape::Sim::builder().build().unwrap().run(|_host| async {
///     let (tx, mut rx) = simtape::sync::channel("jobs");
///     simtape::spawn("producer", async move { tx.send(7).await.unwrap() }).detach();
///     rx.recv().await
/// }).unwrap();
/// assert_eq!(report.output, Some(7));
/// ```
pub fn channel<T: 'static>(name: &str) -> (Sender<T>, Receiver<T>) {
    let capacity = with_core(|core| core.limits.channel_capacity);
    bounded(name, capacity)
}

/// Creates a named channel holding at most `capacity` messages (at least one).
pub fn bounded<T: 'static>(name: &str, capacity: usize) -> (Sender<T>, Receiver<T>) {
    let shared = Rc::new(RefCell::new(Shared {
        queue: VecDeque::new(),
        capacity: capacity.max(1),
        receiver_waker: None,
        sender_wakers: VecDeque::new(),
        senders: 1,
        receiver_alive: true,
        name: Rc::from(name),
    }));
    let probe: Rc<dyn WaitProbe> = Rc::clone(&shared) as Rc<RefCell<Shared<T>>>;
    register_probe(Rc::downgrade(&probe));
    (
        Sender {
            shared: Rc::clone(&shared),
        },
        Receiver { shared },
    )
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.borrow_mut().senders += 1;
        Sender {
            shared: Rc::clone(&self.shared),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut shared = self.shared.borrow_mut();
            shared.senders -= 1;
            if shared.senders > 0 {
                return;
            }
            shared.receiver_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let wakers = {
            let mut shared = self.shared.borrow_mut();
            shared.receiver_alive = false;
            std::mem::take(&mut shared.sender_wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}

impl<T> Sender<T> {
    /// Sends `value`, waiting while the channel is full.
    pub fn send(&self, value: T) -> Send<'_, T> {
        Send {
            sender: self,
            value: Some(value),
        }
    }

    /// Sends `value` if there is room now.
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        let waker = {
            let mut shared = self.shared.borrow_mut();
            if !shared.receiver_alive {
                return Err(TrySendError::Closed(value));
            }
            if shared.queue.len() >= shared.capacity {
                return Err(TrySendError::Full(value));
            }
            shared.queue.push_back(value);
            shared.receiver_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }
}

/// The future returned by [`Sender::send`].
#[must_use = "futures do nothing unless awaited"]
pub struct Send<'a, T> {
    sender: &'a Sender<T>,
    value: Option<T>,
}

impl<T> std::fmt::Debug for Send<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Send").finish_non_exhaustive()
    }
}

impl<T> Unpin for Send<'_, T> {}

impl<T> Future for Send<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let value = self.value.take().expect("Send polled after completion");
        match self.sender.try_send(value) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(TrySendError::Closed(value)) => Poll::Ready(Err(SendError(value))),
            Err(TrySendError::Full(value)) => {
                self.value = Some(value);
                self.sender
                    .shared
                    .borrow_mut()
                    .sender_wakers
                    .push_back(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<T> Receiver<T> {
    /// Receives the next message; `None` once every sender is gone and the queue is empty.
    pub fn recv(&mut self) -> Recv<'_, T> {
        Recv { receiver: self }
    }

    /// Receives a message if one is queued.
    pub fn try_recv(&mut self) -> Option<T> {
        let (value, waker) = {
            let mut shared = self.shared.borrow_mut();
            let value = shared.queue.pop_front()?;
            (value, shared.sender_wakers.pop_front())
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Some(value)
    }

    /// Returns the number of queued messages.
    pub fn len(&self) -> usize {
        self.shared.borrow().queue.len()
    }

    /// Returns true when no message is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The future returned by [`Receiver::recv`].
#[must_use = "futures do nothing unless awaited"]
pub struct Recv<'a, T> {
    receiver: &'a mut Receiver<T>,
}

impl<T> std::fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recv").finish_non_exhaustive()
    }
}

impl<T> Future for Recv<'_, T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if let Some(value) = self.receiver.try_recv() {
            return Poll::Ready(Some(value));
        }
        let mut shared = self.receiver.shared.borrow_mut();
        if shared.senders == 0 {
            return Poll::Ready(None);
        }
        shared.receiver_waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

struct OneshotShared<T> {
    value: Option<T>,
    waker: Option<Waker>,
    sender_alive: bool,
    name: Rc<str>,
}

/// Sends one value to a [`OneshotReceiver`].
pub struct OneshotSender<T> {
    shared: Rc<RefCell<OneshotShared<T>>>,
}

/// Awaits one value; `Err(Canceled)` when the sender is dropped without sending.
pub struct OneshotReceiver<T> {
    shared: Rc<RefCell<OneshotShared<T>>>,
}

impl<T> std::fmt::Debug for OneshotSender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneshotSender").finish_non_exhaustive()
    }
}

impl<T> std::fmt::Debug for OneshotReceiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneshotReceiver").finish_non_exhaustive()
    }
}

/// The oneshot sender was dropped without sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the oneshot sender was dropped without sending")]
pub struct Canceled;

/// Creates a named oneshot channel.
pub fn oneshot<T: 'static>(name: &str) -> (OneshotSender<T>, OneshotReceiver<T>) {
    let shared = Rc::new(RefCell::new(OneshotShared {
        value: None,
        waker: None,
        sender_alive: true,
        name: Rc::from(name),
    }));
    let probe: Rc<dyn WaitProbe> = Rc::clone(&shared) as Rc<RefCell<OneshotShared<T>>>;
    register_probe(Rc::downgrade(&probe));
    (
        OneshotSender {
            shared: Rc::clone(&shared),
        },
        OneshotReceiver { shared },
    )
}

impl<T> OneshotSender<T> {
    /// Sends the value and wakes the receiver.
    pub fn send(self, value: T) {
        let waker = {
            let mut shared = self.shared.borrow_mut();
            shared.value = Some(value);
            shared.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Drop for OneshotSender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut shared = self.shared.borrow_mut();
            shared.sender_alive = false;
            shared.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Future for OneshotReceiver<T> {
    type Output = Result<T, Canceled>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut shared = self.shared.borrow_mut();
        if let Some(value) = shared.value.take() {
            return Poll::Ready(Ok(value));
        }
        if !shared.sender_alive {
            return Poll::Ready(Err(Canceled));
        }
        shared.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl<T> WaitProbe for RefCell<Shared<T>> {
    fn waiting(&self, found: &mut Vec<(Waker, Awaiting)>) {
        let shared = self.borrow();
        if let Some(waker) = &shared.receiver_waker {
            found.push((waker.clone(), Awaiting::Recv(Rc::clone(&shared.name))));
        }
        for waker in &shared.sender_wakers {
            found.push((waker.clone(), Awaiting::Send(Rc::clone(&shared.name))));
        }
    }
}

impl<T> WaitProbe for RefCell<OneshotShared<T>> {
    fn waiting(&self, found: &mut Vec<(Waker, Awaiting)>) {
        let shared = self.borrow();
        if let Some(waker) = &shared.waker {
            found.push((waker.clone(), Awaiting::Recv(Rc::clone(&shared.name))));
        }
    }
}
