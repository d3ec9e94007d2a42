//! Replaying what the server sent on its own: a queue of messages to send in recorded order,
//! stopping at each request the server made of the client (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`, `ping`) until the client answers it, and the check of
//! that answer against the one recorded. Pure: messages in, messages out.

use std::collections::VecDeque;

use serde_json::{json, Value};

use crate::matching::{excerpt, first_difference, Difference};
use crate::script::{Segment, Step};

/// The prefix of the `requestState` replay hands out with an `input_required` result:
/// `simtape-replay/EXCHANGE/ANSWERED`.
pub const REQUEST_STATE_PREFIX: &str = "simtape-replay/";

/// The server requests of a segment that a client answers inside a result (2026-07-28, and
/// the agent of a simulation): each with the client's recorded answer, in order. A recorded
/// `ping` is left out (that era has none).
pub fn input_requests(segment: &Segment) -> Vec<(&Value, Option<&Value>)> {
    segment
        .before
        .iter()
        .filter_map(|step| match step {
            Step::Ask { request, answer } if request["method"] != "ping" => {
                Some((request, answer.as_ref()))
            }
            _ => None,
        })
        .collect()
}

/// The `input_required` result that asks the client `request`, the `answered`-th server
/// request of exchange `exchange` (its answer goes under key `answered`).
pub fn input_required(exchange: usize, answered: usize, request: &Value) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": { answered.to_string(): {"method": request["method"], "params": request["params"]} },
        "requestState": format!("{REQUEST_STATE_PREFIX}{exchange}/{}", answered + 1),
    })
}

/// Reads a `requestState` [`input_required`] issued: the exchange and how many of its server
/// requests the client has answered with this retry (at least one).
pub fn parse_request_state(state: &str) -> Option<(usize, usize)> {
    let (exchange, answered) = state.strip_prefix(REQUEST_STATE_PREFIX)?.split_once('/')?;
    let parsed = (exchange.parse().ok()?, answered.parse().ok()?);
    (parsed.1 > 0).then_some(parsed)
}

/// One thing to send, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// A message sent as it is.
    Send(Value),
    /// A recorded server request: sent, then the queue waits for the client's answer.
    Ask {
        /// The recorded request.
        request: Value,
        /// The client's recorded response.
        answer: Option<Value>,
    },
}

impl Out {
    /// Returns the step as something to send. A progress notification for the recorded
    /// request's token is rewritten to the live request's token, and left out when the live
    /// request asked for no progress.
    pub fn of_step(step: &Step, recorded: Option<&Value>, live: Option<&Value>) -> Option<Out> {
        match step {
            Step::Notify(message) => {
                let mut message = message.clone();
                let carried = message.pointer_mut("/params/progressToken");
                if let Some(token) = carried.filter(|t| recorded == Some(&**t)) {
                    *token = live?.clone();
                }
                Some(Out::Send(message))
            }
            Step::Ask { request, answer } => Some(Out::Ask {
                request: request.clone(),
                answer: answer.clone(),
            }),
        }
    }
}

/// A server request sent during replay, waiting for the client's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// The id it went out with.
    pub id: Value,
    /// Its method.
    pub method: String,
    /// The client's recorded response.
    pub answer: Value,
    /// The id of the live client request it belongs to, if it belongs to a request (a
    /// mismatch is then that request's error answer).
    pub for_request: Option<Value>,
    /// What is sent once the answer is in.
    pub rest: VecDeque<Out>,
}

/// The server requests of one replay that wait for answers.
#[derive(Debug, Clone, Default)]
pub struct Asks {
    waiting: Vec<Waiting>,
    /// How many ids were made up because a recorded id was still waiting.
    renamed: u64,
}

impl Asks {
    /// Sends `queue` until its first server request that the client must answer; the rest
    /// waits for that answer. A recorded request the client never answered is sent and not
    /// waited for (the recorded server did not get an answer either).
    pub fn run(&mut self, mut queue: VecDeque<Out>, for_request: Option<Value>) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(next) = queue.pop_front() {
            match next {
                Out::Send(message) => out.push(message),
                Out::Ask {
                    mut request,
                    answer,
                } => {
                    let Some(answer) = answer else {
                        out.push(request);
                        continue;
                    };
                    let id = self.fresh_id(&request["id"]);
                    request["id"] = id.clone();
                    let method = request["method"].as_str().unwrap_or("").to_string();
                    out.push(request);
                    self.waiting.push(Waiting {
                        id,
                        method,
                        answer,
                        for_request,
                        rest: queue,
                    });
                    return out;
                }
            }
        }
        out
    }

    /// Takes the client's answer to a waiting request: checks it against the recorded one and
    /// returns what to send next. `None` when no request waits for this id.
    pub fn answered(&mut self, live: &Value) -> Option<Answered> {
        let id = live.get("id")?;
        let position = self.waiting.iter().position(|w| &w.id == id)?;
        let waiting = self.waiting.remove(position);
        match answer_difference(&waiting.answer, live) {
            None => {
                let out = self.run(waiting.rest, waiting.for_request);
                Some(Answered::Matched(out))
            }
            Some(difference) => Some(Answered::Mismatch(Mismatch {
                method: waiting.method,
                for_request: waiting.for_request,
                difference,
            })),
        }
    }

    /// Forgets what waits on behalf of client request `id` (it was cancelled: nothing more
    /// may be sent for it).
    pub fn cancel(&mut self, id: &Value) {
        self.waiting.retain(|w| w.for_request.as_ref() != Some(id));
    }

    fn fresh_id(&mut self, recorded: &Value) -> Value {
        if !self.waiting.iter().any(|w| &w.id == recorded) {
            return recorded.clone();
        }
        self.renamed += 1;
        json!(format!("simtape-replay-{}", self.renamed))
    }
}

/// What a client's answer to a server request led to.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// It matched the recording: these messages follow.
    Matched(Vec<Value>),
    /// It differs from the recording: a replay miss.
    Mismatch(Mismatch),
}

/// A client answered a replayed server request other than it did while recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// The server request's method.
    pub method: String,
    /// The live client request it belonged to, if any.
    pub for_request: Option<Value>,
    /// Where the answers first differ (pointer into the answer: `/result/…` or `/error/…`).
    pub difference: Difference,
}

impl Mismatch {
    /// Returns the one-line message naming the request and the first difference.
    pub fn message(&self) -> String {
        format!(
            "the client's answer to the recorded {} request differs from the recorded answer at {}: recorded {}, got {}",
            self.method,
            self.difference.pointer,
            excerpt(self.difference.left.as_ref()),
            excerpt(self.difference.right.as_ref()),
        )
    }

    /// Returns the error `data`: the request and the differing field, as JSON.
    pub fn data(&self) -> Value {
        json!({
            "serverRequest": self.method,
            "firstDifference": {
                "pointer": self.difference.pointer,
                "recorded": self.difference.left,
                "answered": self.difference.right,
            },
        })
    }
}

/// Returns where a client's answer to a server request first differs from the recorded
/// answer, comparing the `result` (without `_meta`, per-request metadata) or the `error`'s
/// code and message; ids and `jsonrpc` never matter.
pub fn answer_difference(recorded: &Value, live: &Value) -> Option<Difference> {
    first_difference(&comparable(recorded), &comparable(live))
}

fn comparable(answer: &Value) -> Value {
    if let Some(error) = answer.get("error") {
        return json!({"error": {"code": error.get("code"), "message": error.get("message")}});
    }
    let mut result = answer.get("result").cloned().unwrap_or(Value::Null);
    if let Some(object) = result.as_object_mut() {
        object.remove("_meta");
    }
    json!({ "result": result })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(id: i64, method: &str, answer: Value) -> Out {
        Out::Ask {
            request: json!({"jsonrpc":"2.0","id":id,"method":method,"params":{}}),
            answer: Some(json!({"jsonrpc":"2.0","id":id,"result":answer})),
        }
    }

    #[test]
    fn the_queue_stops_at_each_request_and_goes_on_after_a_matching_answer() {
        // Goal: messages after a server request are held until the client answers it as
        // recorded (another id, extra `_meta` do not matter); then they follow in order.
        let mut asks = Asks::default();
        let queue = VecDeque::from([
            Out::Send(json!({"n": 1})),
            ask(0, "sampling/createMessage", json!({"model": "m"})),
            Out::Send(json!({"n": 2})),
        ]);
        let first = asks.run(queue, Some(json!(7)));
        assert_eq!(first.len(), 2);
        assert_eq!(first[1]["method"], "sampling/createMessage");
        assert!(asks.answered(&json!({"id": 99, "result": {}})).is_none());
        let live = json!({"jsonrpc":"2.0","id":0,"result":{"model":"m","_meta":{"x":1}}});
        assert_eq!(
            asks.answered(&live),
            Some(Answered::Matched(vec![json!({"n": 2})]))
        );
    }

    #[test]
    fn a_different_answer_is_a_named_mismatch() {
        // Goal: a changed field or an error instead of a result names the request and the
        // first differing pointer.
        let mut asks = Asks::default();
        asks.run(
            VecDeque::from([ask(3, "elicitation/create", json!({"action": "accept"}))]),
            Some(json!("call")),
        );
        let live = json!({"jsonrpc":"2.0","id":3,"result":{"action":"decline"}});
        let Some(Answered::Mismatch(miss)) = asks.answered(&live) else {
            panic!("expected a mismatch")
        };
        assert_eq!(miss.difference.pointer, "/result/action");
        assert_eq!(miss.for_request, Some(json!("call")));
        assert!(
            miss.message().contains("elicitation/create"),
            "{}",
            miss.message()
        );
        let error = json!({"id":1,"error":{"code":-1,"message":"no"}});
        assert!(answer_difference(&json!({"id":1,"result":{}}), &error).is_some());
    }

    #[test]
    fn a_recorded_id_still_waiting_is_not_reused() {
        // Goal: two replays of the same recorded request waiting at once go out with distinct
        // ids, and cancelling the client request drops what waits for it.
        let mut asks = Asks::default();
        let a = asks.run(VecDeque::from([ask(0, "ping", json!({}))]), Some(json!(1)));
        let b = asks.run(VecDeque::from([ask(0, "ping", json!({}))]), Some(json!(2)));
        assert_ne!(a[0]["id"], b[0]["id"]);
        asks.cancel(&json!(1));
        assert!(asks.answered(&json!({"id": 0, "result": {}})).is_none());
    }
}
