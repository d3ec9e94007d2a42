//! LLM record mode against a real OpenAI/Anthropic-compatible server on loopback
//! (`@copilotkit/aimock`, installed by `npm ci --prefix engine/core/tests/peers`), then replay
//! of the written fixture in a new run with no server.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use simtape::cap::llm::{
    ChatRequest, Llm, LlmActor, LlmError, LlmHandle, LlmReply, Message, Provider, RecordError,
    ToolDefinition,
};
use simtape::cap::net::{NetError, Network};
use simtape_serve::outside::{record, RecordConfig};

/// Attempts to reach a freshly started peer before giving up (100 ms apart).
const PEER_START_ATTEMPTS_MAX: u32 = 100;

/// A running aimock server, killed when dropped (also when a test fails).
struct Peer {
    child: Child,
    port: u16,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn peers_dir() -> PathBuf {
    // The peer is installed beside the core's tests, where `.ci/run` installs it.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../core/tests/peers")
}

/// Returns whether this is CI (`CI=true` or `CI=1`; `CI=false` is not), where a missing
/// peer is a failure rather than a skip.
#[allow(clippy::disallowed_methods)]
fn running_under_ci() -> bool {
    // The test harness decides how to treat a missing peer; nothing reaches a simulation.
    matches!(std::env::var("CI").as_deref(), Ok("true" | "1"))
}

/// Starts aimock on a free loopback port, or returns `None` (with a skip notice) when it is
/// not installed. Under CI a missing peer fails the test instead.
fn start_peer() -> Option<Peer> {
    let bin = peers_dir().join("node_modules/.bin/llmock");
    let missing = |why: String| {
        let install =
            "install it with `npm ci --prefix engine/core/tests/peers` (needs Node >= 20.15)";
        if running_under_ci() {
            panic!("the aimock test peer is missing ({why}): {install}");
        }
        eprintln!("skipping LLM record test: aimock is missing ({why}); {install}");
    };
    if !bin.exists() {
        missing(format!("{} does not exist", bin.display()));
        return None;
    }
    let port = free_port();
    let child = Command::new(&bin)
        .args([
            "-p",
            &port.to_string(),
            "-h",
            "127.0.0.1",
            "--log-level",
            "silent",
            "-f",
        ])
        .arg(peers_dir().join("fixtures"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(error) => {
            missing(format!("cannot start {}: {error}", bin.display()));
            return None;
        }
    };
    let peer = Peer { child, port };
    for _ in 0..PEER_START_ATTEMPTS_MAX {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(peer);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("aimock did not listen on 127.0.0.1:{port} within 10 s");
}

/// Returns a port that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("outside_llm_record");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The base URL in the form each SDK takes it.
fn base_url(provider: Provider, port: u16) -> String {
    match provider {
        Provider::AnthropicMessages | Provider::GeminiGenerateContent => {
            format!("http://127.0.0.1:{port}")
        }
        Provider::OpenAiChat | Provider::OpenAiResponses => format!("http://127.0.0.1:{port}/v1"),
    }
}

fn record_actor(provider: Provider, port: u16, fixture: &Path) -> LlmActor {
    let config = RecordConfig::new(provider, fixture, Network::deny().allow("127.0.0.1"))
        .with_base_url(base_url(provider, port))
        .with_api_key("sk-test");
    record(config).unwrap()
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition {
        name: "get_weather".into(),
        description: "Current weather of a city".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        }),
    }
}

/// The pipeline: a tool call and its follow-up, and a plain question, in either order.
async fn pipeline(llm: LlmHandle, plain_first: bool) -> Vec<LlmReply> {
    let plain = ChatRequest::new("test-model", vec![Message::user("Say hello")]);
    let mut replies = Vec::new();
    if plain_first {
        replies.push(llm.complete_with_reply(plain.clone()).await);
    }
    let mut messages = vec![
        Message::system("You are a weather bot."),
        Message::user("Weather in Paris?"),
    ];
    let ask = ChatRequest::new("test-model", messages.clone()).with_tools(vec![weather_tool()]);
    let first = llm.complete_with_reply(ask).await;
    let calls = first
        .result
        .as_ref()
        .map(|r| r.tool_calls.clone())
        .unwrap_or_default();
    replies.push(first);
    let mut assistant = Message::assistant("");
    assistant.tool_calls = calls.clone();
    messages.push(assistant);
    for call in &calls {
        messages.push(Message::tool_result(call.id.clone(), "sunny, 21 C"));
    }
    let follow_up = ChatRequest::new("test-model", messages).with_tools(vec![weather_tool()]);
    replies.push(llm.complete_with_reply(follow_up).await);
    if !plain_first {
        replies.push(llm.complete_with_reply(plain).await);
    }
    replies
}

fn run(actor: LlmActor, plain_first: bool) -> simtape::RunReport<Vec<LlmReply>> {
    let mut builder = simtape::Sim::builder();
    builder.seed(7);
    let llm = LlmHandle::new(builder.actor("llm", actor));
    builder
        .tape_in_memory()
        .build()
        .unwrap()
        .run(move |_host| pipeline(llm, plain_first))
        .unwrap()
}

/// Records the pipeline through `provider`, then replays the fixture with no server running.
fn record_then_replay(provider: Provider) {
    let fixture = scratch(&format!("{}.jsonl", provider.name()));
    let recorded = {
        let Some(peer) = start_peer() else { return };
        run(record_actor(provider, peer.port, &fixture), false)
        // The peer is killed here: the replays below cannot reach it.
    };
    let replies = &recorded.output;
    let answers: Vec<_> = replies
        .iter()
        .map(|r| {
            r.result
                .clone()
                .unwrap_or_else(|e| panic!("{provider:?}: {e}"))
        })
        .collect();
    assert_eq!(answers[0].tool_calls.len(), 1, "{provider:?}: {answers:?}");
    assert_eq!(answers[0].tool_calls[0].name, "get_weather");
    assert_eq!(
        answers[0].tool_calls[0].arguments,
        serde_json::json!({"location": "Paris"})
    );
    assert_eq!(answers[0].stop_reason, "tool_use");
    assert_eq!(answers[1].text, "It is sunny in Paris.");
    assert_eq!(answers[1].stop_reason, "end_turn");
    assert_eq!(answers[2].text, "Hello from aimock.");
    for reply in replies {
        assert!(reply.usage.is_some() && reply.entry_line.is_some());
    }

    // The same calls in the same order: the same replies and the very same tape.
    let replayed = run(Llm::replay(&fixture).unwrap(), false);
    assert_eq!(&replayed.output, replies);
    assert_eq!(replayed.summary.fingerprint, recorded.summary.fingerprint);
    assert_eq!(replayed.summary.end_ns, recorded.summary.end_ns);

    // Another order: entries match by content, so the answers are the same.
    let reordered = run(Llm::replay(&fixture).unwrap(), true);
    let texts = |replies: &[LlmReply]| -> Vec<String> {
        replies
            .iter()
            .map(|r| r.result.as_ref().unwrap().text.clone())
            .collect()
    };
    let mut expected = texts(replies);
    expected.rotate_right(1);
    assert_eq!(texts(&reordered.output), expected);
}

#[test]
fn records_and_replays_openai_chat() {
    // Goal: Chat Completions tool calls and text are recorded and replay identically.
    record_then_replay(Provider::OpenAiChat);
}

#[test]
fn records_and_replays_openai_responses() {
    // Goal: Responses function calls and text are recorded and replay identically.
    record_then_replay(Provider::OpenAiResponses);
}

#[test]
fn records_and_replays_anthropic_messages() {
    // Goal: Messages tool_use blocks and text are recorded and replay identically.
    record_then_replay(Provider::AnthropicMessages);
}

/// Runs one call per user text through `actor`.
fn ask_each(actor: LlmActor, texts: &[&'static str]) -> Vec<LlmReply> {
    let mut builder = simtape::Sim::builder();
    let llm = LlmHandle::new(builder.actor("llm", actor));
    let texts = texts.to_vec();
    builder
        .build()
        .unwrap()
        .run(move |_host| async move {
            let mut replies = Vec::new();
            for text in texts {
                let request = ChatRequest::new("test-model", vec![Message::user(text)]);
                replies.push(llm.complete_with_reply(request).await);
            }
            replies
        })
        .unwrap()
        .output
}

#[test]
fn provider_errors_are_recorded_as_error_entries() {
    // Goal: a 429 with retry-after and a 503 are recorded as error entries and replay as such.
    for provider in [Provider::OpenAiChat, Provider::AnthropicMessages] {
        let fixture = scratch(&format!("errors-{}.jsonl", provider.name()));
        let texts = ["Trigger a rate limit", "Trigger an outage"];
        let recorded = {
            let Some(peer) = start_peer() else { return };
            ask_each(record_actor(provider, peer.port, &fixture), &texts)
        };
        let errors: Vec<_> = recorded
            .iter()
            .map(|r| r.result.clone().unwrap_err())
            .collect();
        assert_eq!(
            errors,
            [
                LlmError::Http {
                    status: 429,
                    message: "Rate limit exceeded.".into(),
                    retry_after_ms: Some(2_000),
                },
                LlmError::Http {
                    status: 503,
                    message: "The service is unavailable.".into(),
                    retry_after_ms: None,
                },
            ],
            "{provider:?}"
        );
        let written = std::fs::read_to_string(&fixture).unwrap();
        assert!(
            written.contains(
                r#""error":{"message":"Rate limit exceeded.","retry_after_ms":2000,"status":429}"#
            ),
            "{written}"
        );
        assert_eq!(ask_each(Llm::replay(&fixture).unwrap(), &texts), recorded);
    }
}

#[test]
fn denied_base_url_fails_named_and_never_connects() {
    // Goal: a host the network policy denies is a named error and is never dialled.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let fixture = scratch("denied.jsonl");
    let config = RecordConfig::new(
        Provider::OpenAiChat,
        &fixture,
        Network::deny().allow("api.github.com"),
    )
    .with_base_url(format!("http://127.0.0.1:{port}/v1"));
    let replies = ask_each(record(config).unwrap(), &["Say hello"]);
    match &replies[0].result {
        Err(LlmError::Denied(NetError::Denied {
            host,
            port: denied_port,
            rules,
        })) => {
            assert_eq!((host.as_str(), *denied_port), ("127.0.0.1", port));
            assert_eq!(rules, &["api.github.com"]);
        }
        other => panic!("expected LlmError::Denied, found {other:?}"),
    }
    assert!(replies[0]
        .result
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("denied"));
    assert!(listener.accept().is_err(), "the denied host was dialled");
    // Only the comment and the header: nothing was recorded.
    assert_eq!(
        std::fs::read_to_string(&fixture).unwrap().lines().count(),
        2
    );
}

#[test]
fn unreachable_provider_is_a_transport_error_and_not_recorded() {
    // Goal: a refused connection is a named transport error and writes no entry.
    let port = free_port();
    let fixture = scratch("unreachable.jsonl");
    let config = RecordConfig::new(
        Provider::AnthropicMessages,
        &fixture,
        Network::deny().allow("127.0.0.1"),
    )
    .with_base_url(format!("http://127.0.0.1:{port}"));
    let replies = ask_each(record(config).unwrap(), &["Say hello"]);
    assert!(
        matches!(&replies[0].result, Err(LlmError::Record(RecordError::Transport { url, .. })) if url.ends_with("/v1/messages")),
        "{:?}",
        replies[0].result
    );
    assert_eq!(
        std::fs::read_to_string(&fixture).unwrap().lines().count(),
        2
    );
}

#[test]
fn bad_base_urls_are_refused_when_built() {
    // Goal: a base URL without http(s) scheme or host, or with credentials, is a named error.
    for url in [
        "ftp://example.com",
        "not a url",
        "http://user:pw@127.0.0.1/v1",
        "/v1",
    ] {
        let config = RecordConfig::new(
            Provider::OpenAiChat,
            scratch("bad-url.jsonl"),
            Network::deny(),
        )
        .with_base_url(url);
        assert!(
            matches!(record(config), Err(RecordError::BadBaseUrl { .. })),
            "{url} was accepted"
        );
    }
}
