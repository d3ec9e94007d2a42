//! Drift between a recorded cassette and a candidate (another cassette, or what a live server
//! answered to the recorded requests). Pure: two cassettes in, a report out.
//!
//! Exchanges are paired by `(method, normalized params)` in recorded order (see
//! [`crate::matching`]), so ids and key order never matter. Ignored as volatile: the JSON-RPC
//! `id` and `jsonrpc` members, and the 2026-07-28 envelope members of results (`resultType:
//! "complete"`, `ttlMs`, `cacheScope`, `_meta["io.modelcontextprotocol/serverInfo"]`), so a
//! handshake-era recording verifies against a dual-era server in either era.
//!
//! What the server sends on its own is compared too. Its requests to the client (sampling,
//! elicitation, roots, ping) are compared per exchange, in order, by method and params
//! (see [`crate::script`] for which exchange owns them). Its notifications other than progress
//! are compared as a multiset over the whole session, because an unsolicited one such as
//! `list_changed` races with responses.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::cassette::{Cassette, Exchange, Party};
use crate::era::{self, META_SERVER_INFO};
use crate::jsonrpc::{is_notification, method_of};
use crate::limits::DRIFT_FINDINGS_MAX;
use crate::matching::{excerpt, first_difference};
use crate::script::{server_side, ServerSide, Step};

/// The `format` tag of a drift report.
pub const REPORT_FORMAT: &str = "simtape-mcp-drift";

/// What to check besides values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriftOptions {
    /// Report a latency finding when a response's latency differs from the recorded one by
    /// more than this many milliseconds; `None` leaves latency unchecked.
    pub latency_tolerance_ms: Option<u64>,
}

/// The kind of one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A tool the recording listed is gone.
    ToolRemoved,
    /// The candidate lists a tool the recording did not.
    ToolAdded,
    /// A tool's `inputSchema` changed.
    InputSchemaChanged,
    /// A tool's `outputSchema` changed (or appeared or disappeared).
    OutputSchemaChanged,
    /// A tool's `annotations` changed (any hint, including unknown future keys).
    AnnotationsChanged,
    /// Another tool field changed (title, description, icons, execution, `_meta`).
    ToolChanged,
    /// A result differs.
    ResultChanged,
    /// A success became a JSON-RPC error or an `isError: true` tool result.
    NewError,
    /// A recorded error is now a success.
    ErrorResolved,
    /// A recorded JSON-RPC error changed code, message or data.
    ErrorChanged,
    /// A recorded request got no answer from the candidate.
    ResponseMissing,
    /// A request the recording never answered is answered by the candidate.
    ResponseAdded,
    /// A recorded request does not occur in the candidate at all.
    RequestMissing,
    /// The candidate made a request the recording does not have.
    RequestAdded,
    /// A latency moved by more than the tolerance.
    Latency,
    /// The server's requests to the client during an exchange (method, params, order) changed.
    ServerRequestsChanged,
    /// A notification the recorded server sent (other than progress) is not in the candidate.
    NotificationMissing,
    /// The candidate server sent a notification (other than progress) the recording lacks.
    NotificationAdded,
}

/// One difference between recording and candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// What kind of drift this is.
    pub kind: FindingKind,
    /// The request's method.
    pub method: String,
    /// The index of the exchange among the recording's client requests (for `request_added`,
    /// among the candidate's).
    pub exchange: usize,
    /// The tool concerned, for tool-level findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A JSON pointer to the first differing field, inside the result, error or tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// The recorded value at the pointer (absent when the field was absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Value>,
    /// The candidate's value at the pointer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate: Option<Value>,
    /// One line for humans.
    pub message: String,
}

/// The outcome of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftReport {
    /// Always [`REPORT_FORMAT`].
    pub format: &'static str,
    /// Report format version.
    pub version: u64,
    /// True when there is at least one finding.
    pub drift: bool,
    /// How many client requests the recording holds.
    pub recorded_exchanges: usize,
    /// How many client requests the candidate holds.
    pub candidate_exchanges: usize,
    /// The exact number of findings (the list is capped at `DRIFT_FINDINGS_MAX`).
    pub findings_total: usize,
    /// Findings per kind.
    pub counts: BTreeMap<FindingKind, usize>,
    /// The findings in recorded order.
    pub findings: Vec<Finding>,
}

/// Compares a recorded cassette with a candidate.
pub fn compare(recorded: &Cassette, candidate: &Cassette, options: &DriftOptions) -> DriftReport {
    let left = client_exchanges(recorded);
    let right = client_exchanges(candidate);
    let key = |e: &Exchange| (e.method().to_string(), era::matching_params(e.params()));
    let right_keys: Vec<_> = right.iter().map(key).collect();
    let mut used = vec![false; right.len()];
    let mut findings = Vec::new();
    let (left_side, right_side) = (server_side(recorded), server_side(candidate));
    for (index, exchange) in left.iter().enumerate() {
        let wanted = key(exchange);
        let paired = (0..right.len()).find(|&j| !used[j] && right_keys[j] == wanted);
        let Some(j) = paired else {
            findings.push(
                finding(FindingKind::RequestMissing, exchange, index, None).with_message(format!(
                    "#{index} {}: the candidate never made this request",
                    exchange.method()
                )),
            );
            continue;
        };
        used[j] = true;
        compare_exchange(exchange, &right[j], index, options, &mut findings);
        let asked = |side: &ServerSide, e: &Exchange| asked_of(side, e.request_seq);
        let (l, r) = (asked(&left_side, exchange), asked(&right_side, &right[j]));
        if l != r {
            findings.push(
                finding(FindingKind::ServerRequestsChanged, exchange, index, None)
                    .with_difference(&l, &r),
            );
        }
    }
    compare_notifications(recorded, candidate, &mut findings);
    for (j, exchange) in right.iter().enumerate().filter(|(j, _)| !used[*j]) {
        findings.push(
            finding(FindingKind::RequestAdded, exchange, j, None).with_message(format!(
                "candidate #{j} {}: not in the recording",
                exchange.method()
            )),
        );
    }
    let mut counts = BTreeMap::new();
    for f in &findings {
        *counts.entry(f.kind).or_insert(0) += 1;
    }
    let findings_total = findings.len();
    findings.truncate(DRIFT_FINDINGS_MAX);
    DriftReport {
        format: REPORT_FORMAT,
        version: 1,
        drift: findings_total > 0,
        recorded_exchanges: left.len(),
        candidate_exchanges: right.len(),
        findings_total,
        counts,
        findings,
    }
}

impl DriftReport {
    /// Renders the report for humans, one line per finding.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for f in &self.findings {
            text.push_str(&format!("{:?}: {}\n", f.kind, f.message));
        }
        text.push_str(&format!(
            "{} finding(s); {} recorded exchange(s), {} candidate exchange(s)\n",
            self.findings_total, self.recorded_exchanges, self.candidate_exchanges
        ));
        text
    }
}

/// The server's requests to the client owned by client message `seq`: method and params
/// without `_meta`, in order.
fn asked_of(side: &ServerSide, seq: u64) -> Value {
    let segment = side.segment(seq);
    let asked = segment.steps().filter_map(|step| match step {
        Step::Ask { request, .. } => Some(serde_json::json!({
            "method": request.get("method"),
            "params": era::matching_params(request.get("params")),
        })),
        Step::Notify(_) => None,
    });
    Value::Array(asked.collect())
}

/// The server's notifications other than progress, as `{method, params}` without `_meta`.
fn notifications_of(cassette: &Cassette) -> Vec<Value> {
    cassette
        .messages
        .iter()
        .filter(|e| e.from == Party::Server && is_notification(&e.message))
        .filter(|e| method_of(&e.message) != Some("notifications/progress"))
        .map(|e| {
            serde_json::json!({
                "method": method_of(&e.message),
                "params": era::matching_params(e.message.get("params")),
            })
        })
        .collect()
}

/// Reports the notifications only one side sent (counted: two recorded log lines and one
/// live one is one missing).
fn compare_notifications(recorded: &Cassette, candidate: &Cassette, findings: &mut Vec<Finding>) {
    let left = notifications_of(recorded);
    let mut right: Vec<Option<Value>> = notifications_of(candidate).into_iter().map(Some).collect();
    let note = |kind, index: usize, value: &Value, message: String| Finding {
        kind,
        method: value["method"].as_str().unwrap_or("").to_string(),
        exchange: index,
        tool: None,
        pointer: None,
        recorded: None,
        candidate: None,
        message,
    };
    for (index, value) in left.iter().enumerate() {
        if let Some(slot) = right.iter_mut().find(|r| r.as_ref() == Some(value)) {
            *slot = None;
            continue;
        }
        let mut f = note(
            FindingKind::NotificationMissing,
            index,
            value,
            format!(
                "recorded notification {} not sent by the candidate",
                excerpt(Some(value))
            ),
        );
        f.recorded = Some(value.clone());
        findings.push(f);
    }
    for (index, value) in right.iter().enumerate() {
        let Some(value) = value else { continue };
        let mut f = note(
            FindingKind::NotificationAdded,
            index,
            value,
            format!(
                "the candidate sent notification {} not in the recording",
                excerpt(Some(value))
            ),
        );
        f.candidate = Some(value.clone());
        findings.push(f);
    }
}

fn client_exchanges(cassette: &Cassette) -> Vec<Exchange> {
    cassette
        .exchanges()
        .into_iter()
        .filter(|e| e.from == Party::Client)
        .collect()
}

fn finding(kind: FindingKind, exchange: &Exchange, index: usize, tool: Option<&str>) -> Finding {
    Finding {
        kind,
        method: exchange.method().to_string(),
        exchange: index,
        tool: tool.map(str::to_string),
        pointer: None,
        recorded: None,
        candidate: None,
        message: String::new(),
    }
}

impl Finding {
    fn with_message(mut self, message: String) -> Finding {
        self.message = message;
        self
    }

    fn with_difference(mut self, left: &Value, right: &Value) -> Finding {
        if let Some(d) = first_difference(left, right) {
            self.message = format!(
                "#{} {}{}: {} differs: recorded {}, candidate {}",
                self.exchange,
                self.method,
                self.tool
                    .as_ref()
                    .map(|t| format!(" tool {t}"))
                    .unwrap_or_default(),
                if d.pointer.is_empty() {
                    "/"
                } else {
                    &d.pointer
                },
                excerpt(d.left.as_ref()),
                excerpt(d.right.as_ref()),
            );
            self.pointer = Some(d.pointer);
            self.recorded = d.left;
            self.candidate = d.right;
        }
        self
    }
}

fn compare_exchange(
    left: &Exchange,
    right: &Exchange,
    index: usize,
    options: &DriftOptions,
    findings: &mut Vec<Finding>,
) {
    let method = left.method();
    let (l, r) = match (&left.response, &right.response) {
        (None, None) => return,
        (Some(_), None) => {
            let f = finding(FindingKind::ResponseMissing, left, index, None);
            findings
                .push(f.with_message(format!("#{index} {method}: no response from the candidate")));
            return;
        }
        (None, Some(_)) => {
            let f = finding(FindingKind::ResponseAdded, left, index, None);
            findings.push(f.with_message(format!(
                "#{index} {method}: answered now, not when recorded"
            )));
            return;
        }
        (Some(l), Some(r)) => (l, r),
    };
    match (
        l.get("result"),
        r.get("result"),
        l.get("error"),
        r.get("error"),
    ) {
        (Some(lr), Some(rr), _, _) => {
            compare_results(method, &stable(lr), &stable(rr), left, index, findings);
        }
        (Some(_), None, _, Some(error)) => {
            let f = finding(FindingKind::NewError, left, index, None);
            findings.push(f.with_message(format!(
                "#{index} {method}: now a JSON-RPC error {}",
                excerpt(Some(error))
            )));
        }
        (None, Some(_), Some(error), _) => {
            let f = finding(FindingKind::ErrorResolved, left, index, None);
            findings.push(f.with_message(format!(
                "#{index} {method}: recorded error {} is now a success",
                excerpt(Some(error))
            )));
        }
        (_, _, Some(le), Some(re)) if le != re => {
            findings.push(
                finding(FindingKind::ErrorChanged, left, index, None).with_difference(le, re),
            );
        }
        _ => {}
    }
    if let (Some(tolerance), Some(a), Some(b)) = (
        options.latency_tolerance_ms,
        left.latency_ms,
        right.latency_ms,
    ) {
        if a.abs_diff(b) > tolerance {
            let f = finding(FindingKind::Latency, left, index, None);
            findings.push(f.with_message(format!(
                "#{index} {method}: latency {b} ms vs recorded {a} ms (tolerance {tolerance} ms)"
            )));
        }
    }
}

fn compare_results(
    method: &str,
    l: &Value,
    r: &Value,
    exchange: &Exchange,
    index: usize,
    findings: &mut Vec<Finding>,
) {
    if method == "tools/list" {
        compare_tools(l, r, exchange, index, findings);
        let (mut l_rest, mut r_rest) = (l.clone(), r.clone());
        for rest in [&mut l_rest, &mut r_rest] {
            if let Some(object) = rest.as_object_mut() {
                object.remove("tools");
            }
        }
        if l_rest != r_rest {
            findings.push(
                finding(FindingKind::ResultChanged, exchange, index, None)
                    .with_difference(&l_rest, &r_rest),
            );
        }
        return;
    }
    if l == r {
        return;
    }
    let is_error = |v: &Value| v.get("isError") == Some(&Value::Bool(true));
    let kind = if method == "tools/call" && is_error(r) && !is_error(l) {
        FindingKind::NewError
    } else if method == "tools/call" && is_error(l) && !is_error(r) {
        FindingKind::ErrorResolved
    } else {
        FindingKind::ResultChanged
    };
    let tool = exchange
        .params()
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str);
    let tool = if method == "tools/call" { tool } else { None };
    findings.push(finding(kind, exchange, index, tool).with_difference(l, r));
}

fn compare_tools(
    l: &Value,
    r: &Value,
    exchange: &Exchange,
    index: usize,
    findings: &mut Vec<Finding>,
) {
    let tools = |v: &Value| -> BTreeMap<String, Value> {
        v.get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| Some((t.get("name")?.as_str()?.to_string(), t.clone())))
            .collect()
    };
    let (lt, rt) = (tools(l), tools(r));
    for name in lt.keys().filter(|n| !rt.contains_key(*n)) {
        let f = finding(FindingKind::ToolRemoved, exchange, index, Some(name));
        findings.push(f.with_message(format!("#{index} tools/list: tool {name} was removed")));
    }
    for name in rt.keys().filter(|n| !lt.contains_key(*n)) {
        let f = finding(FindingKind::ToolAdded, exchange, index, Some(name));
        findings.push(f.with_message(format!("#{index} tools/list: tool {name} was added")));
    }
    for (name, left_tool) in &lt {
        let Some(right_tool) = rt.get(name) else {
            continue;
        };
        let null = Value::Null;
        let mut rest = (left_tool.clone(), right_tool.clone());
        for (field, kind) in [
            ("inputSchema", FindingKind::InputSchemaChanged),
            ("outputSchema", FindingKind::OutputSchemaChanged),
            ("annotations", FindingKind::AnnotationsChanged),
        ] {
            let a = left_tool.get(field).unwrap_or(&null);
            let b = right_tool.get(field).unwrap_or(&null);
            if a != b {
                let f = finding(kind, exchange, index, Some(name)).with_difference(a, b);
                findings.push(f.with_pointer_prefix(field));
            }
            for side in [&mut rest.0, &mut rest.1] {
                if let Some(object) = side.as_object_mut() {
                    object.remove(field);
                }
            }
        }
        if rest.0 != rest.1 {
            findings.push(
                finding(FindingKind::ToolChanged, exchange, index, Some(name))
                    .with_difference(&rest.0, &rest.1),
            );
        }
    }
}

impl Finding {
    fn with_pointer_prefix(mut self, field: &str) -> Finding {
        let inner = self.pointer.take().unwrap_or_default();
        self.message = self.message.replacen(
            &format!(": {} differs", if inner.is_empty() { "/" } else { &inner }),
            &format!(": /{field}{inner} differs"),
            1,
        );
        self.pointer = Some(format!("/{field}{inner}"));
        self
    }
}

/// Returns a result without the volatile 2026-07-28 envelope members (see the module docs).
fn stable(result: &Value) -> Value {
    let mut result = result.clone();
    if let Some(object) = result.as_object_mut() {
        if object.get("resultType") == Some(&Value::String("complete".into())) {
            object.remove("resultType");
        }
        object.remove("ttlMs");
        object.remove("cacheScope");
        let empty_meta = match object.get_mut("_meta").and_then(Value::as_object_mut) {
            Some(meta) => {
                meta.remove(META_SERVER_INFO);
                meta.is_empty()
            }
            None => false,
        };
        if empty_meta {
            object.remove("_meta");
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::Party::{Client, Server};
    use serde_json::json;

    fn cassette(tools: Value, sum: Value, latency: u64) -> Cassette {
        let mut c = Cassette::new(vec!["s".into()]);
        c.push(
            Client,
            0,
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        );
        c.push(
            Server,
            1,
            json!({"jsonrpc":"2.0","id":1,"result":{"tools":tools}}),
        );
        c.push(Client, 2, json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":1,"b":2}}}));
        c.push(
            Server,
            2 + latency,
            json!({"jsonrpc":"2.0","id":2,"result":sum}),
        );
        c.fill_latencies();
        c
    }

    fn tools() -> Value {
        json!([
            {"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
            {"name":"get-sum","inputSchema":{"type":"object","properties":{"a":{"type":"number"}}}},
        ])
    }

    #[test]
    fn identical_cassettes_have_no_drift_even_with_other_ids_and_envelope() {
        // Goal: ids, key order and modern envelope members are not drift.
        let a = cassette(tools(), json!({"content":[{"type":"text","text":"3"}]}), 5);
        let mut b = a.clone();
        b.messages[2].message["id"] = json!("x");
        b.messages[3].message["id"] = json!("x");
        b.messages[1].message["result"]["ttlMs"] = json!(0);
        b.messages[1].message["result"]["resultType"] = json!("complete");
        let report = compare(&a, &b, &DriftOptions::default());
        assert!(!report.drift, "{}", report.to_text());
    }

    #[test]
    fn tool_schema_annotation_result_error_and_latency_drift_are_found() {
        // Goal: each drift kind is reported with its tool and pointer.
        let a = cassette(tools(), json!({"content":[{"type":"text","text":"3"}]}), 5);
        let changed_tools = json!([
            {"name":"get-sum","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}},
            {"name":"new-tool","inputSchema":{"type":"object"}},
        ]);
        let b = cassette(
            changed_tools,
            json!({"content":[{"type":"text","text":"bad"}],"isError":true}),
            500,
        );
        let options = DriftOptions {
            latency_tolerance_ms: Some(100),
        };
        let report = compare(&a, &b, &options);
        let kinds: Vec<FindingKind> = report.findings.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            vec![
                FindingKind::ToolRemoved,
                FindingKind::ToolAdded,
                FindingKind::InputSchemaChanged,
                FindingKind::NewError,
                FindingKind::Latency,
            ]
        );
        assert_eq!(
            report.findings[2].pointer.as_deref(),
            Some("/inputSchema/properties/a/type")
        );
        assert_eq!(report.findings[3].tool.as_deref(), Some("get-sum"));
        let mut c = a.clone();
        c.messages[1].message["result"]["tools"][0]["annotations"]["destructiveHint"] =
            json!(false);
        let report = compare(&a, &c, &DriftOptions::default());
        assert_eq!(report.findings[0].kind, FindingKind::AnnotationsChanged);
        assert_eq!(
            report.findings[0].pointer.as_deref(),
            Some("/annotations/destructiveHint")
        );
    }

    #[test]
    fn jsonrpc_errors_and_missing_requests_are_drift() {
        // Goal: a success turned JSON-RPC error, and a request the candidate lacks, are found.
        let a = cassette(tools(), json!({"content":[]}), 1);
        let mut b = a.clone();
        b.messages[3].message =
            json!({"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool"}});
        let report = compare(&a, &b, &DriftOptions::default());
        assert_eq!(report.findings[0].kind, FindingKind::NewError);
        b.messages.truncate(2);
        let report = compare(&a, &b, &DriftOptions::default());
        assert_eq!(report.findings[0].kind, FindingKind::RequestMissing);
    }

    #[test]
    fn server_requests_and_notifications_are_compared() {
        // Goal: a sampling request with other params during a call, a lost log line and an
        // extra list_changed are each drift; the same traffic with other ids is not.
        let a = cassette(tools(), json!({"content":[]}), 9);
        let with_server_side = |mut c: Cassette, text: &str, note: &str| {
            let call = c.messages.pop().unwrap();
            c.push(Server, 3, json!({"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":text}}],"maxTokens":5}}));
            c.push(
                Client,
                4,
                json!({"jsonrpc":"2.0","id":0,"result":{"model":"m"}}),
            );
            c.push(
                Server,
                5,
                json!({"jsonrpc":"2.0","method":note,"params":{"data":"x"}}),
            );
            c.messages.push(call);
            let last = c.messages.len() - 1;
            c.messages[last].seq = last as u64;
            c.fill_latencies();
            c
        };
        let recorded = with_server_side(a.clone(), "hi", "notifications/message");
        let mut same = recorded.clone();
        same.messages[3].message["id"] = json!(7);
        same.messages[4].message["id"] = json!(7);
        assert!(!compare(&recorded, &same, &DriftOptions::default()).drift);
        let other = with_server_side(a, "bye", "notifications/tools/list_changed");
        let report = compare(&recorded, &other, &DriftOptions::default());
        let kinds: Vec<FindingKind> = report.findings.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            vec![
                FindingKind::ServerRequestsChanged,
                FindingKind::NotificationMissing,
                FindingKind::NotificationAdded,
            ],
            "{}",
            report.to_text()
        );
        assert_eq!(
            report.findings[0].pointer.as_deref(),
            Some("/0/params/messages/0/content/text")
        );
    }
}
