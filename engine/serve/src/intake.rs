//! Reading requests off the wire within bounds: how long a client may take to send its
//! headers (an idle keep-alive connection counts: it is waiting to send them) and its body,
//! and one memory budget shared by every request body held at once, from the first byte read
//! until the request is answered. A body over the remaining budget is refused with 503 and
//! `retry-after`, as providers answer when they are overloaded, so an agent's own retry logic
//! waits and sends it again.
//!
//! All of this happens outside the simulation: a refused request or a closed connection is
//! never delivered, so it is on no tape.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::limits::{BODY_READ_TIMEOUT, REQUEST_BODIES_BYTES_MAX, REQUEST_BYTES_MAX};

/// hyper's timer on smol's: what makes its header read timeout fire (without a timer, hyper
/// has none, and a half-open connection is held for ever).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SmolTimer;

struct SmolSleep(smol::Timer);

impl Future for SmolSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(drop)
    }
}

impl hyper::rt::Sleep for SmolSleep {}

impl hyper::rt::Timer for SmolTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(SmolSleep(smol::Timer::after(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(SmolSleep(smol::Timer::at(deadline)))
    }
}

/// The bytes of request bodies a session holds at once, shared by its connections (they all
/// run on the driver's one thread).
#[derive(Debug, Clone, Default)]
pub(crate) struct BodyBudget {
    held: Rc<Cell<usize>>,
}

/// Bytes taken from a [`BodyBudget`], given back when dropped (the request answered, or
/// refused, or its connection gone).
#[derive(Debug)]
pub(crate) struct Held {
    budget: BodyBudget,
    bytes: usize,
}

impl BodyBudget {
    /// Takes `bytes` more for `held`, or says no when the budget has not that much left.
    fn grow(&self, held: &mut Held, bytes: usize) -> bool {
        let now = self.held.get();
        if now + bytes > REQUEST_BODIES_BYTES_MAX {
            return false;
        }
        self.held.set(now + bytes);
        held.bytes += bytes;
        true
    }

    /// Returns the bytes held now, by every body.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.held.get()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.held.set(self.budget.held.get() - self.bytes);
    }
}

/// Why a body was not read.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Over [`REQUEST_BYTES_MAX`], or it broke off: 413.
    TooLarge,
    /// Over what the budget has left: 503 with `retry-after`.
    Busy,
    /// Not whole within [`BODY_READ_TIMEOUT`]: 408, and the connection closes.
    Slow,
}

impl Refused {
    /// The status, message and headers of the refusal.
    pub(crate) fn answer(&self) -> (u16, String, Vec<(String, String)>) {
        match self {
            Refused::TooLarge => (
                413,
                format!("the request body is over {REQUEST_BYTES_MAX} bytes or broke off"),
                Vec::new(),
            ),
            Refused::Busy => (
                503,
                format!(
                    "simtape serve holds {REQUEST_BODIES_BYTES_MAX} bytes of request bodies at \
                     most, and this one does not fit beside those it is answering; retry"
                ),
                vec![("retry-after".into(), "1".into())],
            ),
            Refused::Slow => (
                408,
                format!(
                    "the request body did not arrive within {} s",
                    BODY_READ_TIMEOUT.as_secs()
                ),
                vec![("connection".into(), "close".into())],
            ),
        }
    }
}

/// Reads a whole request body as text (invalid UTF-8 replaced), holding its bytes in
/// `budget` until the returned [`Held`] is dropped. `declared` is the `content-length`, when
/// the client sent one: a body that declares more than fits is refused before it is read.
pub(crate) async fn read_body(
    body: Incoming,
    declared: Option<u64>,
    budget: &BodyBudget,
) -> Result<(String, Held), Refused> {
    let read = async {
        let mut held = Held {
            budget: budget.clone(),
            bytes: 0,
        };
        let declared = match declared {
            Some(bytes) if bytes > REQUEST_BYTES_MAX as u64 => return Err(Refused::TooLarge),
            Some(bytes) => bytes as usize,
            None => 0,
        };
        if !budget.grow(&mut held, declared) {
            return Err(Refused::Busy);
        }
        let mut bytes = Vec::with_capacity(declared);
        let mut body = body;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| Refused::TooLarge)?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            let total = bytes.len() + data.len();
            if total > REQUEST_BYTES_MAX {
                return Err(Refused::TooLarge);
            }
            let more = total.saturating_sub(held.bytes);
            if more > 0 && !budget.grow(&mut held, more) {
                return Err(Refused::Busy);
            }
            bytes.extend_from_slice(&data);
        }
        // Without a copy when the body is UTF-8, as every JSON body is.
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
        Ok((text, held))
    };
    let slow = async {
        smol::Timer::after(BODY_READ_TIMEOUT).await;
        Err(Refused::Slow)
    };
    smol::future::or(read, slow).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_shared_and_given_back_when_a_body_is_done() {
        // Goal: what one body holds, another cannot take until it is dropped.
        let budget = BodyBudget::default();
        let mut first = Held {
            budget: budget.clone(),
            bytes: 0,
        };
        assert!(budget.grow(&mut first, REQUEST_BODIES_BYTES_MAX - 10));
        let mut second = Held {
            budget: budget.clone(),
            bytes: 0,
        };
        assert!(!budget.grow(&mut second, 11));
        assert!(budget.grow(&mut second, 10));
        drop(first);
        assert_eq!(budget.held(), 10);
        assert!(budget.grow(&mut second, REQUEST_BODIES_BYTES_MAX - 10));
        drop(second);
        assert_eq!(budget.held(), 0);
    }
}
