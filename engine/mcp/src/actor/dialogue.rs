//! What a recorded server said on its own during a `tools/call` (or a `tools/list`), replayed
//! inside a simulation: the call's *dialogue*.
//!
//! A recorded call may hold, before its response, notifications (log lines, list changes,
//! resource updates) and requests to the client (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`, `ping`) with the client's recorded answers
//! ([`crate::script`] finds which call owns each). Inside a simulation each of them is one step
//! of the call, in recorded order and at its recorded time:
//!
//! * the call's reply is the first step instead of the result: a *notification*
//!   (`resultType: "notification"`) or an *input request* (`resultType: "input_required"`,
//!   the shape a 2026-07-28 server answers with), each with a `requestState`;
//! * the pipeline goes on with [`McpRequest::Continue`](super::McpRequest::Continue) after a
//!   notification and [`McpRequest::Answer`](super::McpRequest::Answer) after a request; an
//!   answer other than the recorded one is [`McpCallError::AnswerMismatch`], a replay miss;
//! * after the last step the reply is the recorded result.
//!
//! Every step and every answer is a request/reply pair of the MCP actor on the tape. Latencies
//! follow the recording: a step comes as long after the previous one (or after the client's
//! answer to it) as it did while recording, and so does the result, so the time the pipeline
//! takes to answer (a model call) adds to the call's time as it did for the recorded client.
//!
//! Progress notifications are left out: the simulated call asks for no progress. Messages the
//! server sent after the call's response belong to no step.

use serde_json::{json, Value};

use super::McpCallError;
use crate::asks::answer_difference;
use crate::asks::Mismatch;
use crate::cassette::{Cassette, CassetteEntry, Party};
use crate::jsonrpc::method_of;
use crate::script::{Segment, Step};

/// The prefix of the `requestState` of a step: `simtape-sim/EXCHANGE/STEP`.
const STATE_PREFIX: &str = "simtape-sim/";

/// One step of a dialogue, with its recorded times.
#[derive(Debug, Clone, PartialEq)]
struct Timed {
    /// The notification or request the server sent.
    message: Value,
    /// The client's recorded answer, when the step is a request the client answered.
    answer: Option<Value>,
    /// When the server sent it, in recorded milliseconds.
    at_ms: u64,
    /// When the step was done with: the client's answer, or the step itself.
    done_ms: u64,
}

/// The steps of one recorded call, before its response.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Dialogue {
    steps: Vec<Timed>,
    /// When the client sent the call.
    request_ms: u64,
    /// When the response came (the request's time when there was none).
    response_ms: u64,
}

/// One step as the pipeline gets it: the reply's result and its latency.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StepReply {
    pub(super) latency_ms: u64,
    pub(super) result: Value,
}

/// What the pipeline sent to go on after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Resumed<'a> {
    /// It took a notification.
    Continue,
    /// It answered a request with this result.
    Answer(&'a Value),
}

/// What comes after a step.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Next {
    /// Another step.
    Step(StepReply),
    /// The recorded result, this long after the last step.
    Result { latency_ms: u64 },
}

impl Dialogue {
    /// Returns the dialogue of the call `segment` belongs to, whose request is `request`
    /// (an entry of `cassette`), or `None` when the server said nothing during the call.
    pub(super) fn of(
        cassette: &Cassette,
        request: &CassetteEntry,
        segment: &Segment,
    ) -> Option<Dialogue> {
        let messages = &cassette.messages;
        let start = messages.iter().position(|entry| entry.seq == request.seq)?;
        let mut cursor = start;
        let mut steps = Vec::new();
        for step in &segment.before {
            let (message, answer) = match step {
                Step::Notify(message) => (message, None),
                Step::Ask { request, answer } => (request, answer.as_ref()),
            };
            // Past the previous step: a server may send the same notification twice.
            let sent = find(messages, cursor, Party::Server, message)?;
            cursor = sent + 1;
            let at_ms = messages[sent].at_ms;
            if method_of(message) == Some("notifications/progress") {
                continue;
            }
            let answered = answer.and_then(|a| find(messages, cursor, Party::Client, a));
            steps.push(Timed {
                message: message.clone(),
                answer: answer.cloned(),
                at_ms,
                done_ms: answered.map_or(at_ms, |at| messages[at].at_ms),
            });
        }
        if steps.is_empty() {
            return None;
        }
        let request_ms = request.at_ms;
        let response = crate::cassette::pair_requests(messages)[start];
        let response_ms = response.map_or(request_ms, |at| messages[at].at_ms);
        Some(Dialogue {
            steps,
            request_ms,
            response_ms,
        })
    }

    /// Returns the first step, for the call of exchange `exchange`.
    pub(super) fn first(&self, exchange: usize) -> StepReply {
        self.step(exchange, 0, self.request_ms)
    }

    /// Goes on after step `state` names, as `resumed`: the next step or the result. The
    /// error is a `requestState` this dialogue did not issue, a resumption of the wrong kind,
    /// or an answer other than the recorded one (`request_seq`: the recorded call's).
    pub(super) fn resume(
        &self,
        exchange: usize,
        step: usize,
        resumed: Resumed<'_>,
        request_seq: u64,
    ) -> Result<Next, McpCallError> {
        let Some(timed) = self.steps.get(step) else {
            return Err(malformed(format!("step {step} of exchange {exchange}")));
        };
        let method = method_of(&timed.message).unwrap_or("").to_string();
        match (resumed, &timed.answer) {
            (Resumed::Answer(result), Some(recorded)) => {
                let live = json!({ "result": result });
                if let Some(difference) = answer_difference(recorded, &live) {
                    let mismatch = Mismatch {
                        method: method.clone(),
                        for_request: None,
                        difference,
                    };
                    return Err(McpCallError::AnswerMismatch {
                        request_seq,
                        method,
                        pointer: mismatch.difference.pointer.clone(),
                        message: mismatch.message(),
                    });
                }
            }
            (Resumed::Continue, None) => {}
            (Resumed::Answer(_), None) => {
                let reason = format!("step {step} is a {method} the client does not answer");
                return Err(malformed(reason));
            }
            (Resumed::Continue, Some(_)) => {
                let reason = format!("step {step} is a {method} request that waits for an answer");
                return Err(malformed(reason));
            }
        }
        let since_ms = timed.done_ms;
        if step + 1 < self.steps.len() {
            return Ok(Next::Step(self.step(exchange, step + 1, since_ms)));
        }
        let latency_ms = self.response_ms.saturating_sub(since_ms);
        Ok(Next::Result { latency_ms })
    }

    fn step(&self, exchange: usize, step: usize, since_ms: u64) -> StepReply {
        let timed = &self.steps[step];
        let state = format!("{STATE_PREFIX}{exchange}/{step}");
        let mut message = json!({ "method": timed.message["method"] });
        if let Some(params) = timed.message.get("params") {
            message["params"] = params.clone();
        }
        let result = match timed.answer {
            Some(_) => json!({
                "resultType": "input_required",
                "inputRequests": { step.to_string(): message },
                "requestState": state,
            }),
            None => json!({
                "resultType": "notification",
                "notification": message,
                "requestState": state,
            }),
        };
        StepReply {
            latency_ms: timed.at_ms.saturating_sub(since_ms),
            result,
        }
    }
}

/// Reads a step's `requestState`: the exchange and the step.
pub(super) fn parse_state(state: &str) -> Option<(usize, usize)> {
    let (exchange, step) = state.strip_prefix(STATE_PREFIX)?.split_once('/')?;
    Some((exchange.parse().ok()?, step.parse().ok()?))
}

/// Returns the error for a `requestState` that names no step of this server.
pub(super) fn malformed(what: String) -> McpCallError {
    McpCallError::Malformed {
        request_seq: 0,
        reason: format!("the requestState names no recorded server message ({what})"),
    }
}

/// Returns the index of the first message from `from` equal to `message` at or after `from_index`.
fn find(
    messages: &[CassetteEntry],
    from_index: usize,
    from: Party,
    message: &Value,
) -> Option<usize> {
    (from_index..messages.len())
        .find(|&at| messages[at].from == from && &messages[at].message == message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::Party::{Client, Server};

    fn asking() -> Cassette {
        let mut c = Cassette::new(vec!["s".into()]);
        let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}});
        c.push(Client, 10, call);
        let log = json!({"jsonrpc":"2.0","method":"notifications/message","params":{"data":"a"}});
        c.push(Server, 12, log);
        let ask = json!({"jsonrpc":"2.0","id":0,"method":"roots/list"});
        c.push(Server, 15, ask);
        c.push(
            Client,
            40,
            json!({"jsonrpc":"2.0","id":0,"result":{"roots":[]}}),
        );
        c.push(
            Server,
            46,
            json!({"jsonrpc":"2.0","id":1,"result":{"content":[]}}),
        );
        c.fill_latencies();
        c
    }

    #[test]
    fn steps_come_at_their_recorded_offsets_and_the_result_after_the_answer() {
        // Goal: the log line comes 2 ms after the call, the request 3 ms after the log line,
        // and the result 6 ms after the client's answer (not after the request).
        let cassette = asking();
        let side = crate::script::server_side(&cassette);
        let dialogue = Dialogue::of(&cassette, &cassette.messages[0], &side.segment(0)).unwrap();
        let first = dialogue.first(4);
        assert_eq!(first.latency_ms, 2);
        assert_eq!(first.result["resultType"], "notification");
        let (exchange, step) = parse_state(first.result["requestState"].as_str().unwrap()).unwrap();
        assert_eq!((exchange, step), (4, 0));
        let Ok(Next::Step(second)) = dialogue.resume(4, 0, Resumed::Continue, 0) else {
            panic!("a second step")
        };
        assert_eq!(second.latency_ms, 3);
        assert_eq!(second.result["inputRequests"]["1"]["method"], "roots/list");
        let answer = json!({"roots": []});
        let next = dialogue.resume(4, 1, Resumed::Answer(&answer), 0);
        assert_eq!(next, Ok(Next::Result { latency_ms: 6 }));
        let other = json!({"roots": [{"uri": "file:///"}]});
        let Err(McpCallError::AnswerMismatch { pointer, .. }) =
            dialogue.resume(4, 1, Resumed::Answer(&other), 0)
        else {
            panic!("a mismatch")
        };
        assert_eq!(pointer, "/result/roots/0");
        assert!(dialogue.resume(4, 1, Resumed::Continue, 0).is_err());
    }
}
