//! A response body as hyper sends it: whole, or broken as a stream fault asks ([`BodyEnd`]).
//! Outside the simulation: the gateway decided what is sent and how it ends; this only does
//! it on the connection.

use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, SizeHint};

use crate::gateway::BodyEnd;

/// The body of one response.
#[derive(Debug)]
pub(crate) struct ResponseBody {
    data: Option<Bytes>,
    /// The body's length, for a whole body's `content-length`.
    len: u64,
    ending: BodyEnd,
    /// Whether a cut body has let hyper flush what it sent before the cut.
    flushed: bool,
}

impl ResponseBody {
    /// Returns a body of `data` that ends as `ending` says.
    pub(crate) fn new(data: String, ending: BodyEnd) -> ResponseBody {
        ResponseBody {
            len: data.len() as u64,
            data: Some(Bytes::from(data)).filter(|data| !data.is_empty()),
            ending,
            flushed: false,
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        match self.ending {
            BodyEnd::Complete => Poll::Ready(None),
            // An error from the body makes hyper close the connection without the chunked
            // body's last chunk: the client reads a body that broke off.
            // hyper drops what it has buffered when the body fails: first let it flush (a
            // pending poll makes it write out), then fail.
            BodyEnd::Cut if !self.flushed => {
                self.flushed = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            BodyEnd::Cut => {
                self.ending = BodyEnd::Complete;
                let cut = std::io::Error::other("stream cut by a [[faults.llm]] stream rule");
                Poll::Ready(Some(Err(cut)))
            }
            // Never ready and never woken: the connection stays open, sending nothing, until
            // the client closes it or the session drops it.
            BodyEnd::Stall => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.ending == BodyEnd::Complete
    }

    fn size_hint(&self) -> SizeHint {
        match self.ending {
            BodyEnd::Complete => SizeHint::with_exact(self.len),
            // A broken stream declares no length, as a streamed answer (chunked) does.
            BodyEnd::Cut | BodyEnd::Stall => SizeHint::default(),
        }
    }
}
