//! The MCP actor inside real simtape runs: a pipeline calls cassette-backed MCP servers and
//! gets the recorded answers, in virtual time, on a deterministic tape.

use std::future::Future;
use std::path::PathBuf;

use serde_json::{json, Value};
use simtape::tape::{payload_to_json, RecordKind, TapeReader};
use simtape::RunReport;
use simtape_mcp::actor::{is_tool_error, McpActor, McpCallError, McpClient, McpHandle, McpRequest};
use simtape_mcp::McpError;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Milliseconds of virtual time as nanoseconds.
const MS: u64 = 1_000_000;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Runs `pipeline` with the demo cassette registered as `mcp:demo`, on an in-memory tape.
fn run_demo<F, Fut, T>(seed: u64, pipeline: F) -> Result<RunReport<T>, Box<dyn std::error::Error>>
where
    F: FnOnce(McpHandle) -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    let mut b = simtape::Sim::builder();
    let mcp = b
        .seed(seed)
        .actor("mcp:demo", McpActor::load(data("demo.json"))?);
    let report = b
        .tape_in_memory()
        .build()?
        .run(move |_host| async move { pipeline(McpHandle::new(mcp)).await })?;
    Ok(report)
}

#[test]
fn lists_tools() -> TestResult {
    // Goal: tools/list returns the recorded tool list, schemas included, after its latency.
    let report = run_demo(1, |mcp| async move { mcp.list_tools().await })?;
    let tools = report.output?;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .ok_or("tools is not an array")?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["get-sum", "next-id", "fail"]);
    assert_eq!(
        tools["tools"][0]["outputSchema"]["properties"]["sum"]["type"],
        "number"
    );
    assert_eq!(report.summary.end_ns, 12 * MS);
    Ok(())
}

#[test]
fn calls_a_tool_with_structured_content() -> TestResult {
    // Goal: tools/call returns the recorded content and structuredContent; not a tool error.
    let report = run_demo(1, |mcp| async move {
        mcp.call_tool("get-sum", json!({"b": 3, "a": 2})).await
    })?;
    let result = report.output?;
    assert_eq!(result["structuredContent"], json!({"sum": 5}));
    assert_eq!(result["content"][0]["text"], "The sum of 2 and 3 is 5.");
    assert!(!is_tool_error(&result));
    Ok(())
}

#[test]
fn a_tool_error_result_is_ok() -> TestResult {
    // Goal: an `isError: true` result comes back as Ok, as MCP clients see it.
    let report = run_demo(1, |mcp| async move {
        mcp.call_tool("fail", json!({"reason": "disk"})).await
    })?;
    let result = report.output?;
    assert!(is_tool_error(&result));
    assert_eq!(result["content"][0]["text"], "disk full");
    Ok(())
}

#[test]
fn a_recorded_jsonrpc_error_is_an_rpc_error() -> TestResult {
    // Goal: a recorded JSON-RPC error comes back as McpCallError::Rpc with code, message, data.
    let report = run_demo(1, |mcp| async move {
        mcp.call_tool("get-sum", json!({"a": "x", "b": 3})).await
    })?;
    let expected = McpCallError::Rpc {
        request_seq: 14,
        code: -32602,
        message: "Invalid arguments for tool get-sum".into(),
        data: Some(json!({"pointer": "/a"})),
    };
    assert_eq!(report.output, Err(expected));
    assert_eq!(report.summary.end_ns, MS);
    Ok(())
}

#[test]
fn an_unmatched_call_names_the_closest_request_and_first_difference() -> TestResult {
    // Goal: a call the cassette never saw is McpCallError::Unmatched, naming the closest
    // recorded request and the first differing field, and it takes no virtual time.
    let report = run_demo(1, |mcp| async move {
        mcp.call_tool("get-sum", json!({"a": 2, "b": 4})).await
    })?;
    let Err(error) = report.output else {
        return Err("an unmatched call answered".into());
    };
    let McpCallError::Unmatched {
        method,
        closest,
        pointer,
        message,
    } = &error
    else {
        return Err(format!("not an Unmatched error: {error:?}").into());
    };
    assert_eq!(method, "tools/call");
    assert_eq!(*closest, Some(2));
    assert_eq!(pointer.as_deref(), Some("/params/arguments/b"));
    assert!(message.contains("#2 tools/call"), "{message}");
    assert!(message.contains("recorded 3, got 4"), "{message}");
    assert_eq!(error.to_string(), *message);
    assert_eq!(report.summary.end_ns, 0);
    Ok(())
}

#[test]
fn ids_and_progress_token_are_ignored() -> TestResult {
    // Goal: a call matches a recording made with another id and a progress token.
    let report = run_demo(1, |mcp| async move {
        mcp.call(McpRequest::CallTool {
            name: "get-sum".into(),
            arguments: json!({"a": 2, "b": 3}),
        })
        .await
    })?;
    // Recorded as id 2 with `_meta.progressToken`, at seq 5.
    assert_eq!(report.output.request_seq, Some(5));
    assert_eq!(report.output.latency_ms, 7);
    assert_eq!(report.output.result?["structuredContent"]["sum"], 5);
    Ok(())
}

#[test]
fn repeated_identical_calls_are_answered_in_recorded_order() -> TestResult {
    // Goal: identical calls consume recorded answers in order, then repeat the last one; the
    // actor's final state lists which recorded requests answered.
    let mut b = simtape::Sim::builder();
    let mcp = b.actor("mcp:demo", McpActor::load(data("demo.json"))?);
    let mut report = b.tape_in_memory().build()?.run(move |_host| async move {
        let mcp = McpHandle::new(mcp);
        let mut ids = Vec::new();
        for _ in 0..3 {
            let result = mcp.call_tool("next-id", Value::Null).await?;
            ids.push(result["structuredContent"]["id"].clone());
        }
        Ok::<_, McpCallError>(ids)
    })?;
    assert_eq!(report.output, Ok(vec![json!(1), json!(2), json!(2)]));
    let state = report.actors.take(mcp).ok_or("no final MCP actor state")?;
    assert_eq!(state.answered(), [8, 10, 10]);
    Ok(())
}

#[test]
fn virtual_end_time_is_the_sum_of_recorded_latencies() -> TestResult {
    // Goal: each answer takes the recorded latency, so the run ends at their sum.
    let report = run_demo(1, |mcp| async move {
        let _ = mcp.list_tools().await; // 12 ms
        let _ = mcp.call_tool("get-sum", json!({"a": 2, "b": 3})).await; // 7 ms
        let _ = mcp.call_tool("next-id", Value::Null).await; // 3 ms
        let _ = mcp.call_tool("next-id", Value::Null).await; // 4 ms
        let _ = mcp.call_tool("fail", json!({"reason": "disk"})).await; // 2 ms
        let _ = mcp.call_tool("get-sum", json!({"a": "x", "b": 3})).await; // 1 ms
    })?;
    assert_eq!(report.summary.end_ns, 29 * MS);
    Ok(())
}

/// The pipeline of the tape tests: a list and two calls.
async fn three_calls(mcp: McpHandle) -> Result<Value, McpCallError> {
    mcp.list_tools().await?;
    mcp.call_tool("next-id", Value::Null).await?;
    mcp.call_tool("get-sum", json!({"a": 2, "b": 3})).await
}

#[test]
fn the_tape_is_byte_identical_over_two_runs_of_one_seed() -> TestResult {
    // Goal: the same seed and cassette give the same tape bytes.
    let first = run_demo(42, three_calls)?;
    let second = run_demo(42, three_calls)?;
    let first = first.summary.tape.and_then(|t| t.memory).ok_or("no tape")?;
    let second = second
        .summary
        .tape
        .and_then(|t| t.memory)
        .ok_or("no tape")?;
    assert!(!first.is_empty());
    assert!(first == second, "the two tapes differ");
    Ok(())
}

/// Returns the request and reply payloads of `actor` on a run's in-memory tape, as JSON text.
type Payloads = (Vec<String>, Vec<String>);

fn actor_records(
    summary: simtape::RunSummary,
    actor: &str,
) -> Result<Payloads, Box<dyn std::error::Error>> {
    let bytes = summary.tape.and_then(|t| t.memory).ok_or("no tape")?;
    let mut reader = TapeReader::new(&bytes[..])?.keep_blobs(true);
    let (mut requests, mut replies) = (Vec::new(), Vec::new());
    while let Some(record) = reader.next_record()? {
        if reader.actor_name(record.actor) != actor {
            continue;
        }
        let payload = payload_to_json(&reader.resolve(&record)?)?.to_string();
        match record.kind {
            RecordKind::Request => requests.push(payload),
            RecordKind::Reply => replies.push(payload),
            _ => {}
        }
    }
    Ok((requests, replies))
}

#[test]
fn the_tape_carries_method_tool_arguments_and_result() -> TestResult {
    // Goal: the request records name the method, tool and arguments; the replies the result.
    let report = run_demo(3, three_calls)?;
    let (requests, replies) = actor_records(report.summary, "mcp:demo")?;
    assert_eq!(requests.len(), 3);
    assert_eq!(replies.len(), 3);
    assert!(requests[0].contains("tools/list"), "{}", requests[0]);
    for needle in ["tools/call", "get-sum", "\"a\":2", "\"b\":3"] {
        assert!(
            requests[2].contains(needle),
            "{needle} not in {}",
            requests[2]
        );
    }
    assert!(replies[0].contains("next-id"), "{}", replies[0]);
    assert!(
        replies[2].contains("The sum of 2 and 3 is 5."),
        "{}",
        replies[2]
    );
    Ok(())
}

#[test]
fn two_servers_in_one_run_are_independent_actors() -> TestResult {
    // Goal: two registered servers answer from their own cassettes, concurrently, and each
    // keeps its own state.
    let mut b = simtape::Sim::builder();
    let demo = b.actor("mcp:demo", McpActor::load(data("demo.json"))?);
    let tickets = b.actor("mcp:tickets", McpActor::load(data("tickets.json"))?);
    let report = b.tape_in_memory().build()?.run(move |host| async move {
        let (demo, tickets) = (McpHandle::new(demo), McpHandle::new(tickets));
        let created = host.spawn("tickets", async move {
            tickets.list_tools().await?; // 20 ms
            tickets
                .call_tool("create", json!({"title": "Printer on fire"}))
                .await // 100 ms
        });
        let sum = demo.call_tool("get-sum", json!({"a": 2, "b": 3})).await; // 7 ms
        (sum, created.await)
    })?;
    let (sum, created) = report.output;
    assert_eq!(sum?["structuredContent"]["sum"], 5);
    assert_eq!(created??["structuredContent"]["ticket"], "T-1");
    // The calls overlap, so the run lasts as long as the slower server.
    assert_eq!(report.summary.end_ns, 120 * MS);
    let demo_state = report.actors.get(demo).ok_or("no demo state")?;
    let tickets_state = report.actors.get(tickets).ok_or("no tickets state")?;
    assert_eq!(demo_state.answered(), [5]);
    assert_eq!(tickets_state.answered(), [0, 2]);
    Ok(())
}

#[test]
fn loading_a_missing_cassette_names_the_file() {
    // Goal: `McpActor::load` fails with an error naming the file, without panicking.
    let path = data("no-such-cassette.json");
    let error = McpActor::load(&path).expect_err("a missing file cannot load");
    assert!(matches!(error, McpError::CassetteIo { .. }), "{error:?}");
    assert!(
        error.to_string().contains("no-such-cassette.json"),
        "{error}"
    );
}

#[test]
fn a_large_result_goes_to_the_content_store() -> TestResult {
    // Goal: a result over the blob threshold is stored by hash and still resolves intact.
    let text = "x".repeat(simtape::tape::BLOB_THRESHOLD_DEFAULT_BYTES * 2);
    let mut cassette = simtape_mcp::Cassette::new(vec!["big".into()]);
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dump"}});
    let result = json!({"content": [{"type": "text", "text": text}]});
    cassette.push(simtape_mcp::Party::Client, 0, call);
    let response = json!({"jsonrpc": "2.0", "id": 1, "result": result});
    cassette.push(simtape_mcp::Party::Server, 1, response);
    cassette.fill_latencies();
    let mut b = simtape::Sim::builder();
    let mcp = b.actor("mcp:big", McpActor::from_cassette(cassette));
    let report = b.tape_in_memory().build()?.run(move |_host| async move {
        McpHandle::new(mcp).call_tool("dump", Value::Null).await
    })?;
    assert_eq!(report.output?, result);
    let bytes = report
        .summary
        .tape
        .and_then(|t| t.memory)
        .ok_or("no tape")?;
    let mut reader = TapeReader::new(&bytes[..])?.keep_blobs(true);
    let mut stored = false;
    while let Some(record) = reader.next_record()? {
        if record.kind == RecordKind::Reply && reader.actor_name(record.actor) == "mcp:big" {
            stored = record.blob_ref;
            let payload = payload_to_json(&reader.resolve(&record)?)?;
            assert!(payload.to_string().contains(&text));
        }
    }
    assert!(stored, "the large reply was stored inline");
    Ok(())
}

#[test]
fn describe_gives_the_recorded_initialize_at_no_cost() -> TestResult {
    // Goal: a cassette's description is its recorded initialize result, and answering it
    // takes no virtual time and marks no recorded request as answered.
    let report = run_demo(1, |mcp| async move { mcp.call(McpRequest::Describe).await })?;
    let reply = report.output;
    assert_eq!(reply.latency_ms, 0);
    let description = reply.result?;
    assert_eq!(description["serverInfo"]["name"], "demo");
    assert_eq!(description["protocolVersion"], "2025-11-25");
    assert_eq!(report.summary.end_ns, 0);
    Ok(())
}

/// A recorded call during which the server logged a line and asked its client to sample, and
/// the client's answer.
fn asking_cassette() -> simtape_mcp::Cassette {
    use simtape_mcp::Party::{Client, Server};
    let mut cassette = simtape_mcp::Cassette::new(vec!["asker".into()]);
    let messages = [
        (
            Client,
            0,
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}),
        ),
        (
            Server,
            1,
            json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"asking"}}),
        ),
        (
            Server,
            2,
            json!({"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":9}}),
        ),
        (
            Client,
            3,
            json!({"jsonrpc":"2.0","id":0,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"yes"}}}),
        ),
        (
            Server,
            7,
            json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"the model said yes"}]}}),
        ),
    ];
    for (from, at_ms, message) in messages {
        cassette.push(from, at_ms, message);
    }
    cassette.fill_latencies();
    cassette
}

/// A client that answers sampling with `text` after 5 ms of virtual time (a model call's
/// stand-in) and keeps what it was told, in order.
struct Sampler {
    text: &'static str,
    seen: std::cell::RefCell<Vec<String>>,
}

impl McpClient for Sampler {
    type Error = String;

    async fn answer(&self, method: &str, params: &Value) -> Result<Value, String> {
        self.seen
            .borrow_mut()
            .push(format!("{method} {}", params["maxTokens"]));
        simtape::time::sleep(std::time::Duration::from_millis(5)).await;
        let content = json!({"type": "text", "text": self.text});
        Ok(json!({"model": "m", "role": "assistant", "content": content}))
    }

    async fn notified(&self, notification: &Value) {
        let method = notification["method"].as_str().unwrap_or("");
        self.seen.borrow_mut().push(method.to_string());
    }
}

type AskingRun = RunReport<(Vec<String>, Result<Value, McpCallError>)>;

/// Calls the asking cassette's tool once with a [`Sampler`] answering `text`.
fn run_asking(text: &'static str) -> Result<AskingRun, Box<dyn std::error::Error>> {
    let mut b = simtape::Sim::builder();
    let mcp = McpHandle::new(b.actor("mcp:asker", McpActor::from_cassette(asking_cassette())));
    let report = b.tape_in_memory().build()?.run(move |_host| async move {
        let client = Sampler {
            text,
            seen: Default::default(),
        };
        let answered = mcp.call_tool_with("ask", json!({}), &client).await;
        let answered = answered.expect("the sampler always answers");
        (client.seen.into_inner(), answered)
    })?;
    Ok(report)
}

#[test]
fn a_recorded_server_request_is_answered_by_the_pipeline_before_the_result() -> TestResult {
    // Goal: `call_tool_with` hands the pipeline the recorded log line, then the sampling
    // request, awaits its answer (5 ms of its own), checks it, and only then returns the
    // recorded result, 4 ms after the answer as recorded; every step and the answer are
    // request/reply pairs of the actor on the tape, in recorded order.
    let report = run_asking("yes")?;
    let (seen, answered) = report.output;
    assert_eq!(
        seen,
        ["notifications/message", "sampling/createMessage 9"],
        "the steps in recorded order"
    );
    assert_eq!(answered?["content"][0]["text"], "the model said yes");
    assert_eq!(report.summary.end_ns, (1 + 1 + 5 + 4) * MS);
    let (requests, replies) = actor_records(report.summary, "mcp:asker")?;
    assert_eq!((requests.len(), replies.len()), (3, 3), "{requests:?}");
    assert!(requests[0].contains("CallToolAnswering"), "{}", requests[0]);
    assert!(replies[0].contains("\"data\":\"asking\""), "{}", replies[0]);
    assert!(requests[1].contains("Continue"), "{}", requests[1]);
    assert!(replies[1].contains("input_required"), "{}", replies[1]);
    assert!(requests[2].contains("\"text\":\"yes\""), "{}", requests[2]);
    assert!(replies[2].contains("the model said yes"), "{}", replies[2]);
    Ok(())
}

#[test]
fn another_answer_is_a_named_replay_miss_and_plain_calls_are_unchanged() -> TestResult {
    // Goal: an answer other than the recorded one is an AnswerMismatch naming the request
    // and the first differing field, with no result; a plain `call_tool` of the same call
    // still gets the recorded result after the recorded latency, with no steps.
    let report = run_asking("no")?;
    let (_, answered) = report.output;
    let Err(McpCallError::AnswerMismatch {
        method, pointer, ..
    }) = answered
    else {
        return Err(format!("expected a mismatch, got {answered:?}").into());
    };
    assert_eq!(
        (method.as_str(), pointer.as_str()),
        ("sampling/createMessage", "/result/content/text")
    );
    let mut b = simtape::Sim::builder();
    let mcp = McpHandle::new(b.actor("mcp:asker", McpActor::from_cassette(asking_cassette())));
    let report = b
        .build()?
        .run(move |_host| async move { mcp.call_tool("ask", json!({})).await })?;
    assert_eq!(report.output?["content"][0]["text"], "the model said yes");
    assert_eq!(report.summary.end_ns, 7 * MS);
    Ok(())
}

#[test]
fn a_dialogue_replays_to_the_same_tape_bytes() -> TestResult {
    // Goal: the same run twice writes byte-identical tapes.
    let first = run_asking("yes")?.summary.tape.and_then(|t| t.memory);
    let second = run_asking("yes")?.summary.tape.and_then(|t| t.memory);
    assert!(first.is_some());
    assert_eq!(first, second);
    Ok(())
}
