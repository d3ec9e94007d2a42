//! The server's side of a cassette, as replay must reproduce it: for each message the client
//! sent, the messages the server sent on its own around the answer (notifications, and
//! requests to the client with the answers the client gave), in recorded order.
//!
//! Every server-initiated message belongs to one client message, its *owner*:
//!
//! * a `notifications/progress` belongs to the request whose progress token it carries;
//! * any other server notification or request belongs to the most recent client request still
//!   waiting for its answer (a log line or a `sampling/createMessage` during a tool call), or,
//!   when none is waiting, to the most recent client request or notification (the
//!   `notifications/tools/list_changed` a server sends after `notifications/initialized`, the
//!   log line after a `logging/setLevel` answer);
//! * what the server sent before the client said anything is the session's *opening*.
//!
//! Within its owner a message sits [`Segment::before`] or [`Segment::after`] the owner's
//! response, as recorded. Sessions (a Streamable HTTP recording holds several) are kept apart.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cassette::{pair_requests, Cassette, Party};
use crate::era;
use crate::jsonrpc::{is_notification, is_request, is_response, method_of};

/// One thing the server did on its own.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// It sent a notification.
    Notify(Value),
    /// It sent a request to the client; `answer` is the client's recorded response (`None`
    /// when the client never answered while recording).
    Ask {
        /// The recorded request.
        request: Value,
        /// The client's recorded response message.
        answer: Option<Value>,
    },
}

/// The server-initiated messages one client message owns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Segment {
    /// Sent before the owner's response (all of them, for a notification or an unanswered
    /// request).
    pub before: Vec<Step>,
    /// Sent after the owner's response.
    pub after: Vec<Step>,
}

impl Segment {
    /// Returns true when the server did nothing on its own here.
    pub fn is_empty(&self) -> bool {
        self.before.is_empty() && self.after.is_empty()
    }

    /// Returns every step, before the response first.
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.before.iter().chain(&self.after)
    }
}

/// The server side of a whole cassette.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSide {
    /// What the server sent before the client's first message, per session.
    pub opening: BTreeMap<u64, Vec<Step>>,
    /// The segment of each client request or notification, by its `seq`.
    pub segments: BTreeMap<u64, Segment>,
}

impl ServerSide {
    /// Returns the segment owned by the client message `seq` (empty when it owns none).
    pub fn segment(&self, seq: u64) -> Segment {
        self.segments.get(&seq).cloned().unwrap_or_default()
    }
}

/// Splits the server-initiated messages of `cassette` among their owners (see the module
/// docs).
pub fn server_side(cassette: &Cassette) -> ServerSide {
    let messages = &cassette.messages;
    let pairs = pair_requests(messages);
    let mut side = ServerSide::default();
    // Per session: the latest client request or notification, and the client requests still
    // waiting for their answers, oldest first.
    let mut latest: BTreeMap<u64, usize> = BTreeMap::new();
    let mut open: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (index, entry) in messages.iter().enumerate() {
        let session = entry.session.unwrap_or(0);
        let message = &entry.message;
        let waiting = open.entry(session).or_default();
        if entry.from == Party::Client {
            if is_request(message) || is_notification(message) {
                latest.insert(session, index);
            }
            if is_request(message) && pairs[index].is_some() {
                waiting.push(index);
            }
            continue;
        }
        if is_response(message) {
            waiting.retain(|&r| pairs[r] != Some(index));
            continue;
        }
        let step = if is_request(message) {
            let answer = pairs[index].map(|r| messages[r].message.clone());
            Step::Ask {
                request: message.clone(),
                answer,
            }
        } else if is_notification(message) {
            Step::Notify(message.clone())
        } else {
            continue;
        };
        let progress_owner = (method_of(message) == Some("notifications/progress"))
            .then(|| message.pointer("/params/progressToken"))
            .flatten()
            .and_then(|token| {
                (0..index).rev().find(|&r| {
                    let request = &messages[r];
                    request.from == Party::Client
                        && request.session.unwrap_or(0) == session
                        && is_request(&request.message)
                        && era::progress_token(request.message.get("params")) == Some(token)
                })
            });
        let owner = progress_owner
            .or_else(|| waiting.last().copied())
            .or_else(|| latest.get(&session).copied());
        let Some(owner) = owner else {
            side.opening.entry(session).or_default().push(step);
            continue;
        };
        let segment = side.segments.entry(messages[owner].seq).or_default();
        let answered_before = pairs[owner].is_some_and(|response| response < index);
        if answered_before {
            segment.after.push(step);
        } else {
            segment.before.push(step);
        }
    }
    side
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::Party::{Client, Server};
    use serde_json::json;

    fn cassette(messages: Vec<(Party, Value)>) -> Cassette {
        let mut c = Cassette::new(vec!["server".into()]);
        for (i, (from, message)) in messages.into_iter().enumerate() {
            c.push(from, i as u64, message);
        }
        c
    }

    #[test]
    fn each_server_message_goes_to_its_owner_before_or_after_the_answer() {
        // Goal: list_changed after `initialized` belongs to that notification; a sampling
        // request and a log line during a call belong to the call, before its answer (with
        // the client's answer attached); a log line after a setLevel answer comes after it;
        // a line before any client message is the opening.
        let side = server_side(&cassette(vec![
            (
                Server,
                json!({"jsonrpc":"2.0","method":"notifications/message","params":{"data":"hello"}}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}),
            ),
            (Server, json!({"jsonrpc":"2.0","id":1,"result":{}})),
            (
                Client,
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s"}}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","method":"notifications/message","params":{"data":"x"}}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"maxTokens":5}}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","id":0,"result":{"model":"m"}}),
            ),
            (
                Server,
                json!({"jsonrpc":"2.0","id":2,"result":{"content":[]}}),
            ),
            (
                Client,
                json!({"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}),
            ),
            (Server, json!({"jsonrpc":"2.0","id":3,"result":{}})),
            (
                Server,
                json!({"jsonrpc":"2.0","method":"notifications/message","params":{"data":"level"}}),
            ),
        ]));
        assert_eq!(side.opening[&0].len(), 1);
        assert_eq!(side.segment(1), Segment::default());
        let initialized = side.segment(3);
        assert_eq!(initialized.before.len(), 1);
        let call = side.segment(5);
        assert_eq!(call.before.len(), 2);
        assert!(call.after.is_empty());
        let Step::Ask { request, answer } = &call.before[1] else {
            panic!("{call:?}")
        };
        assert_eq!(request["method"], "sampling/createMessage");
        assert_eq!(answer.as_ref().unwrap()["result"]["model"], "m");
        let level = side.segment(10);
        assert_eq!((level.before.len(), level.after.len()), (0, 1));
    }

    #[test]
    fn progress_follows_its_token_and_sessions_stay_apart() {
        // Goal: progress for an earlier call stays with it although a later call is open; a
        // message of session 2 never lands in session 1's segments.
        let mut c = cassette(vec![
            (
                Client,
                json!({"jsonrpc":"2.0","id":1,"method":"a","params":{"_meta":{"progressToken":"t"}}}),
            ),
            (Client, json!({"jsonrpc":"2.0","id":2,"method":"b"})),
            (
                Server,
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}),
            ),
            (Server, json!({"jsonrpc":"2.0","id":2,"result":{}})),
            (Server, json!({"jsonrpc":"2.0","id":1,"result":{}})),
            (
                Server,
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
            ),
        ]);
        c.messages[5].session = Some(2);
        let side = server_side(&c);
        assert_eq!(side.segment(0).before.len(), 1);
        assert!(side.segment(1).is_empty());
        assert_eq!(side.opening[&2].len(), 1);
    }
}
