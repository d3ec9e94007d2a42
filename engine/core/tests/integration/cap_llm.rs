//! The LLM capability: fixture replay through real `Sim` runs, Harn imports, malformed input.

use std::future::Future;
use std::path::PathBuf;

use simtape::cap::llm::{
    ChatRequest, ChatResponse, Fixture, FixtureError, FixtureFormat, Llm, LlmActor, LlmError,
    LlmHandle, Message, ToolDefinition,
};
use simtape::rng::RngStream;
use simtape::tape::{RecordKind, TapeReader};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/llm")
        .join(name)
}

/// Builds an actor from fixture lines after a default header.
fn actor(lines: &[&str]) -> LlmActor {
    let mut text = String::from("{\"simtape_llm\": 1}\n");
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    Llm::replay_str("test.jsonl", &text).unwrap()
}

/// Runs `pipeline` against `actor` in a seeded simulation with an in-memory tape.
fn run<F, Fut, T>(seed: u64, actor: LlmActor, pipeline: F) -> simtape::RunReport<T>
where
    F: FnOnce(LlmHandle) -> Fut,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    let mut builder = simtape::Sim::builder();
    builder.seed(seed);
    let llm = LlmHandle::new(builder.actor("llm", actor));
    builder
        .tape_in_memory()
        .build()
        .unwrap()
        .run(move |_host| pipeline(llm))
        .unwrap()
}

fn user(text: &str) -> ChatRequest {
    ChatRequest::new("test-model", vec![Message::user(text)])
}

/// Runs each request in order and returns each result.
fn replay(
    seed: u64,
    actor: LlmActor,
    requests: Vec<ChatRequest>,
) -> Vec<Result<ChatResponse, LlmError>> {
    run(seed, actor, move |llm| async move {
        let mut results = Vec::new();
        for request in requests {
            results.push(llm.complete(request).await);
        }
        results
    })
    .output
}

fn text_of(result: &Result<ChatResponse, LlmError>) -> &str {
    match result {
        Ok(response) => &response.text,
        Err(LlmError::Unmatched { .. }) => "<unmatched>",
        Err(LlmError::Http { .. }) => "<http>",
        Err(_) => "<record>",
    }
}

fn texts(results: &[Result<ChatResponse, LlmError>]) -> Vec<&str> {
    results.iter().map(text_of).collect()
}

#[test]
fn weather_conversation_matches_substring_tools_turn_and_tool_result() {
    // Goal: a two-turn agent gets the tool call, then the answer keyed on the tool result.
    let actor = Llm::replay(data("weather.jsonl")).unwrap();
    let report = run(1, actor, |llm| async move {
        let first = ChatRequest::new("m", vec![Message::user("Weather in Paris?")])
            .with_tools(vec![ToolDefinition::named("get_weather")]);
        let call = llm.complete(first.clone()).await.unwrap();
        let mut messages = first.messages.clone();
        messages.push(Message {
            tool_calls: call.tool_calls.clone(),
            ..Message::assistant("")
        });
        messages.push(Message::tool_result(&call.tool_calls[0].id, "sunny, 24C"));
        let answer = llm
            .complete(ChatRequest { messages, ..first })
            .await
            .unwrap();
        (call, answer)
    });
    let (call, answer) = report.output;
    assert_eq!(call.tool_calls[0].name, "get_weather");
    assert_eq!(call.tool_calls[0].arguments["location"], "Paris");
    assert_eq!(call.tool_calls[0].id, "call_1_0");
    assert_eq!(call.stop_reason, "tool_use");
    assert_eq!(answer.text, "It is sunny in Paris.");
    assert_eq!(answer.stop_reason, "end_turn");
    assert_eq!(answer.usage.output_tokens, 9);
    // (100 ms + 7 × 1 ms) + (100 ms + 9 × 1 ms), both from the fixture's header.
    assert_eq!(report.summary.end_ns, 216_000_000);
}

#[test]
fn glob_matches_the_whole_text_and_substring_any_part() {
    // Goal: a glob must cover the whole match text; `contains` may hit anywhere.
    let make = || {
        actor(&[
            r#"{"match": {"text": {"glob": "Weather*Paris?"}}, "mode": "sticky", "response": {"text": "glob"}}"#,
            r#"{"match": {"last_message": {"contains": "Rome"}}, "mode": "sticky", "response": {"text": "contains"}}"#,
        ])
    };
    let results = replay(
        1,
        make(),
        vec![
            user("Weather in Paris?"),
            user("The weather in Paris?"),
            user("What about Rome today"),
            user("Weather in Paris?!"),
        ],
    );
    assert_eq!(
        texts(&results),
        ["glob", "<unmatched>", "contains", "<unmatched>"]
    );
}

#[test]
fn last_tool_result_needs_a_tool_message() {
    // Goal: a `last_tool_result` condition fails without a tool result and tests only the last.
    let make = || {
        actor(&[
            r#"{"match": {"last_tool_result": {"contains": "42"}}, "mode": "sticky", "response": {"text": "got 42"}}"#,
        ])
    };
    let with_results = |results: &[&str]| {
        let mut messages = vec![Message::user("compute")];
        for (i, r) in results.iter().enumerate() {
            messages.push(Message::tool_result(format!("c{i}"), *r));
        }
        ChatRequest::new("m", messages)
    };
    let results = replay(
        1,
        make(),
        vec![
            user("compute 42"),
            with_results(&["42"]),
            with_results(&["42", "7"]),
        ],
    );
    assert_eq!(texts(&results), ["<unmatched>", "got 42", "<unmatched>"]);
}

#[test]
fn tool_names_must_all_be_offered() {
    // Goal: `tools` matches only when every listed tool is offered.
    let make = || {
        actor(&[
            r#"{"match": {"tools": ["search", "fetch"]}, "mode": "sticky", "response": {"text": "tools"}}"#,
        ])
    };
    let offered = |names: &[&str]| {
        user("go").with_tools(
            names
                .iter()
                .map(|n| ToolDefinition::named(*n))
                .collect::<Vec<_>>(),
        )
    };
    let results = replay(
        1,
        make(),
        vec![
            offered(&[]),
            offered(&["search"]),
            offered(&["fetch", "search", "x"]),
        ],
    );
    assert_eq!(texts(&results), ["<unmatched>", "<unmatched>", "tools"]);
}

#[test]
fn turn_counts_the_run_and_scope_turn_counts_the_scope() {
    // Goal: `turn` is the nth call of the run; `scope_turn` the nth call in the request's scope.
    let make = || {
        actor(&[
            r#"{"match": {"turn": 2}, "mode": "sticky", "response": {"text": "run-2"}}"#,
            r#"{"match": {"scope_turn": 1}, "mode": "sticky", "response": {"text": "scope-1"}}"#,
        ])
    };
    let results = replay(
        1,
        make(),
        vec![
            user("a"),                 // run 1, unscoped 1
            user("b").with_scope("w"), // run 2 wins by file order
            user("c").with_scope("x"), // run 3, x 1
            user("d").with_scope("x"), // run 4, x 2
        ],
    );
    assert_eq!(
        texts(&results),
        ["scope-1", "run-2", "scope-1", "<unmatched>"]
    );
}

#[test]
fn once_entries_are_consumed_and_sticky_entries_stay() {
    // Goal: `once` (the default) answers one call; `sticky` answers every call.
    let make = || {
        actor(&[
            r#"{"match": {"text": {"contains": "once"}}, "response": {"text": "1"}}"#,
            r#"{"match": {"text": {"contains": "sticky"}}, "mode": "sticky", "response": {"text": "s"}}"#,
        ])
    };
    let results = replay(
        1,
        make(),
        vec![user("once"), user("once"), user("sticky"), user("sticky")],
    );
    assert_eq!(texts(&results), ["1", "<unmatched>", "s", "s"]);
    let mut builder = simtape::Sim::builder();
    let llm = builder.actor("llm", make());
    let mut report = builder
        .build()
        .unwrap()
        .run(move |_host| async move { LlmHandle::new(llm).complete(user("sticky")).await })
        .unwrap();
    let state = report.actors.take(llm).unwrap();
    assert_eq!(state.unused_once_lines(), [2]);
}

#[test]
fn scoped_entries_win_for_their_scope_only() {
    // Goal: an entry naming the request's scope precedes unscoped entries, and skips other scopes.
    let make = || {
        actor(&[
            r#"{"mode": "sticky", "response": {"text": "anyone"}}"#,
            r#"{"scope": "planner", "mode": "sticky", "response": {"text": "planner"}}"#,
        ])
    };
    let results = replay(
        1,
        make(),
        vec![
            user("x").with_scope("planner"),
            user("x"),
            user("x").with_scope("coder"),
        ],
    );
    assert_eq!(texts(&results), ["planner", "anyone", "anyone"]);
}

fn weighted() -> LlmActor {
    actor(&[
        r#"{"mode": "sticky", "alternatives": [{"weight": 1, "response": {"text": "a"}}, {"weight": 0, "response": {"text": "never"}}, {"weight": 3, "response": {"text": "b"}}]}"#,
    ])
}

#[test]
fn weighted_alternatives_follow_the_seed() {
    // Goal: one seed, one pick; across seeds both live alternatives appear, the zero weight never.
    let pick = |seed| text_of(&replay(seed, weighted(), vec![user("q")])[0]).to_owned();
    for seed in 0..5 {
        assert_eq!(pick(seed), pick(seed), "seed {seed}");
    }
    let picks: Vec<String> = (0..50).map(pick).collect();
    assert!(picks.iter().any(|p| p == "a"), "{picks:?}");
    assert!(picks.iter().any(|p| p == "b"), "{picks:?}");
    assert!(picks.iter().all(|p| p != "never"), "{picks:?}");
}

#[test]
fn error_entries_return_http_errors_with_retry_after() {
    // Goal: a 429 entry fails the call with its status and retry-after; the retry then succeeds.
    let make = actor(&[
        r#"{"error": {"status": 429, "message": "rate limited", "retry_after_ms": 1500}, "latency": {"base_ms": 20}}"#,
        r#"{"response": {"text": "ok", "usage": {"output_tokens": 0}}, "latency": {"base_ms": 30}}"#,
    ]);
    let report = run(1, make, |llm| async move {
        let first = llm.complete(user("q")).await;
        let second = llm.complete(user("q")).await;
        (first, second)
    });
    let (first, second) = report.output;
    let error = first.unwrap_err();
    assert_eq!(
        error,
        LlmError::Http {
            status: 429,
            message: "rate limited".into(),
            retry_after_ms: Some(1500)
        }
    );
    assert_eq!(
        error.to_string(),
        "the model answered HTTP 429: rate limited (retry after 1500 ms)"
    );
    assert_eq!(second.unwrap().text, "ok");
    assert_eq!(report.summary.end_ns, 50_000_000);
}

#[test]
fn thinking_comes_from_the_fixture_with_a_stable_signature() {
    // Goal: `thinking` as text gets a signature derived from the text alone (the same on
    // every replay and seed); as a table it is served as given; either counts as output; an
    // answer without thinking has none.
    let make = || {
        actor(&[
            r#"{"match": {"text": {"contains": "a"}}, "response": {"text": "A.", "thinking": "abcd"}}"#,
            r#"{"match": {"text": {"contains": "b"}}, "response": {"text": "B.", "thinking": {"text": "x", "signature": "s"}}}"#,
            r#"{"response": {"text": "C."}}"#,
        ])
    };
    let ask = || vec![user("a"), user("b"), user("c")];
    let first = replay(1, make(), ask());
    let thinking = |i: usize| first[i].as_ref().unwrap().thinking.clone();
    let derived = thinking(0).unwrap();
    assert_eq!(derived.text, "abcd");
    assert!(derived.signature.starts_with("simtape:"), "{derived:?}");
    assert_eq!(
        replay(9, make(), ask())[0].as_ref().unwrap().thinking,
        Some(derived)
    );
    let sealed = thinking(1).unwrap();
    assert_eq!(
        (sealed.text.as_str(), sealed.signature.as_str()),
        ("x", "s")
    );
    assert_eq!(thinking(2), None);
    // "A." (2 bytes) + "abcd" (4 bytes) = 6 bytes → 2 tokens.
    assert_eq!(first[0].as_ref().unwrap().usage.output_tokens, 2);
}

#[test]
fn usage_is_given_or_computed_as_bytes_over_four() {
    // Goal: missing token counts follow ceil(bytes / 4); given counts are kept as they are.
    let make = actor(&[
        r#"{"response": {"text": "0123456789"}}"#,
        r#"{"response": {"text": "x", "usage": {"input_tokens": 1000}}}"#,
    ]);
    let results = replay(1, make, vec![user("abcdefgh"), user("abcdefghi")]);
    let first = results[0].as_ref().unwrap().usage;
    assert_eq!((first.input_tokens, first.output_tokens), (2, 3));
    let second = results[1].as_ref().unwrap().usage;
    assert_eq!((second.input_tokens, second.output_tokens), (1000, 1));
}

#[test]
fn latency_is_base_plus_per_token_plus_seeded_jitter() {
    // Goal: the run ends at exactly the model's latency; jitter is bounded and seed-stable.
    let exact = actor(&[
        r#"{"response": {"text": "hi", "usage": {"output_tokens": 5}}, "latency": {"base_ms": 100, "per_output_token_us": 1000}}"#,
    ]);
    let report = run(1, exact, |llm| async move { llm.complete(user("q")).await });
    assert_eq!(report.summary.end_ns, 105_000_000);
    let jittered = || {
        actor(&[
            r#"{"response": {"text": "hi", "usage": {"output_tokens": 0}}, "latency": {"base_ms": 100, "jitter_ms": 50}}"#,
        ])
    };
    let end = |seed| {
        run(seed, jittered(), |llm| async move {
            llm.complete(user("q")).await
        })
        .summary
        .end_ns
    };
    let ends: Vec<u64> = (0..20).map(end).collect();
    assert!(
        ends.iter().all(|e| (100_000_000..=150_000_000).contains(e)),
        "{ends:?}"
    );
    assert_eq!(end(3), end(3));
    assert!(ends.iter().any(|e| *e != ends[0]), "{ends:?}");
}

#[test]
fn unmatched_calls_name_the_digest_and_the_last_message() {
    // Goal: a call that matches nothing fails with the request digest and the message's head.
    let make = actor(&[r#"{"match": {"text": {"contains": "never"}}, "response": {"text": "x"}}"#]);
    let request = user("line one\nline two\nline three\nline four");
    let digest = request.digest();
    let results = replay(1, make, vec![request]);
    let error = results[0].clone().unwrap_err();
    assert_eq!(
        error,
        LlmError::Unmatched {
            digest: digest.clone(),
            last_message_head: "line one\nline two\nline three".into()
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "no LLM fixture entry matched request sha256:{digest}; the last message begins:\nline one\nline two\nline three"
        )
    );
}

fn parse_error(text: &str) -> String {
    Fixture::parse("f.jsonl", text).unwrap_err().to_string()
}

#[test]
fn malformed_fixtures_name_file_line_expected_and_found() {
    // Goal: every malformed line is reported as file:line with what was expected and found.
    let h = "{\"simtape_llm\": 1}\n";
    assert_eq!(
        parse_error(&format!("{h}\n{{\"response\": {{\"text\": \"a\"}}}}\n{{\"response\": \n")),
        "f.jsonl:4: expected one JSON object on the line, found invalid JSON (EOF while parsing a value at line 1 column 12)"
    );
    assert!(parse_error(&format!("{h}{{\"respons\": {{}}}}\n"))
        .starts_with("f.jsonl:2: expected a fixture entry (docs/llm-fixtures.md), found unknown field `respons`"));
    assert_eq!(
        parse_error(&format!("{h}[1, 2]\n")),
        "f.jsonl:2: expected a JSON object, found an array"
    );
    assert_eq!(
        parse_error(&format!("{h}{{\"response\": {{}}, \"error\": {{\"status\": 500}}}}\n")),
        "f.jsonl:2: expected exactly one of \"response\", \"alternatives\" or \"error\", found none or several"
    );
    assert_eq!(
        parse_error(&format!(
            "{h}{{\"alternatives\": [{{\"weight\": 0, \"response\": {{}}}}]}}\n"
        )),
        "f.jsonl:2: expected alternatives with a positive total weight, found a total of 0"
    );
    assert!(parse_error(&format!("{h}{{\"match\": {{\"text\": {{\"glob\": \"[a\"}}}}, \"response\": {{}}}}\n"))
        .starts_with("f.jsonl:2: expected \"text\" with exactly one of \"contains\" or \"glob\", found an invalid glob \"[a\""));
    assert!(parse_error(&format!(
        "{h}{{\"match\": {{\"turn\": \"two\"}}, \"response\": {{}}}}\n"
    ))
    .contains("found invalid type: string \"two\", expected u64"));
    assert_eq!(
        parse_error("{\"simtape_llm\": 2}\n"),
        "f.jsonl:1: expected format version 1 (\"simtape_llm\": 1), found version 2"
    );
    let missing = Fixture::load(&data("missing.jsonl")).unwrap_err();
    assert!(matches!(missing, FixtureError::Io { .. }), "{missing}");
    let status = Llm::replay(data("bad_status.jsonl")).unwrap_err();
    let FixtureError::Malformed {
        file,
        line,
        expected,
        found,
    } = status
    else {
        panic!("{status}");
    };
    assert!(file.ends_with("bad_status.jsonl"), "{file}");
    assert_eq!(
        (line, expected.as_str(), found.as_str()),
        (4, "an HTTP error status (400–599)", "status 200")
    );
}

#[test]
fn harn_v0_fixture_replays_fifo_first_then_patterns() {
    // Goal: Harn v0 entries replay with Harn's precedence, consumption, usage and error rules.
    let fixture = Fixture::load(&data("harn_v0.jsonl")).unwrap();
    assert_eq!(fixture.format, FixtureFormat::HarnV0);
    let results = replay(
        1,
        Llm::from_fixture(fixture),
        vec![
            user("Paris?"),
            user("anything"),
            user("Paris?"),
            user("Paris again?"),
            user("are you overloaded"),
        ],
    );
    assert_eq!(
        texts(&results),
        [
            "First FIFO answer.",
            "Second FIFO answer.",
            "Sunny in Paris.",
            "Sunny in Paris.",
            "<http>"
        ]
    );
    let fifo = results[0].as_ref().unwrap();
    assert_eq!(fifo.model, "mock");
    assert_eq!((fifo.usage.input_tokens, fifo.usage.output_tokens), (6, 30));
    let second = results[1].as_ref().unwrap();
    assert_eq!(second.tool_calls[0].name, "lookup");
    assert_eq!(second.tool_calls[0].arguments["q"], "x");
    let given = results[2].as_ref().unwrap().usage;
    assert_eq!((given.input_tokens, given.output_tokens), (5, 4));
    assert_eq!(
        results[4].clone().unwrap_err(),
        LlmError::Http {
            status: 529,
            message: "overloaded".into(),
            retry_after_ms: Some(2000)
        }
    );
}

#[test]
fn harn_v1_fixture_replays_scopes_consume_and_errors() {
    // Goal: Harn v1 scopes fall back to `shared` (unscoped calls prefer `default`), `consume` is honoured, errors keep their status.
    let fixture = Fixture::load(&data("harn_v1.jsonl")).unwrap();
    assert_eq!(fixture.format, FixtureFormat::HarnV1);
    let results = replay(
        1,
        Llm::from_fixture(fixture),
        vec![
            user("make a plan").with_scope("planner"),
            user("make a plan").with_scope("planner"),
            user("plan it"),
            user("over quota"),
        ],
    );
    assert_eq!(
        texts(&results),
        ["Step 1: search.", "Shared plan.", "Default plan.", "<http>"]
    );
    assert_eq!(results[0].as_ref().unwrap().usage.output_tokens, 4);
    assert_eq!(
        results[3].clone().unwrap_err(),
        LlmError::Http {
            status: 429,
            message: "slow down".into(),
            retry_after_ms: Some(1500)
        }
    );
    assert!(
        parse_error("{\"schemaVersion\": 2}\n").starts_with("f.jsonl:1: expected schemaVersion 1")
    );
    assert!(
        parse_error("{\"schemaVersion\": 1, \"liveAfterCalls\": 2}\n").contains("never goes live")
    );
    assert!(parse_error("{\"schemaVersion\": 1}\n{\"text\": \"a\", \"usage\": {\"input_tokens\": 1, \"output_tokens\": 1, \"total_tokens\": 3}}\n")
        .starts_with("f.jsonl:2: expected \"total_tokens\" equal to"));
    assert!(parse_error("{\"text\": \"a\", \"bogus\": 1}\n")
        .starts_with("f.jsonl:1: expected a Harn --llm-mock entry, found unknown field `bogus`"));
}

/// Returns `line` with one seeded mutation: a flip, a deletion, an insertion or a cut.
fn mutate(line: &str, rng: &mut RngStream) -> String {
    const INSERTS: &[u8] = b"{}[]\":,0123456789-eE.\\ntruefalsnul*?*[!]\x00\xff";
    let mut bytes = line.as_bytes().to_vec();
    for _ in 0..=rng.below(3) {
        let at = rng.below(bytes.len() as u64 + 1) as usize;
        match rng.below(4) {
            0 if at < bytes.len() => bytes[at] = rng.next_u64() as u8,
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            2 => bytes.insert(at, INSERTS[rng.below(INSERTS.len() as u64) as usize]),
            _ => bytes.truncate(at),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn fuzzed_fixture_lines_never_panic() {
    // Goal: thousands of seeded mutations of valid lines give a fixture or an error, never a panic.
    let mut corpus = Vec::new();
    for name in [
        "weather.jsonl",
        "harn_v0.jsonl",
        "harn_v1.jsonl",
        "bad_status.jsonl",
    ] {
        let text = std::fs::read_to_string(data(name)).unwrap();
        corpus.extend(text.lines().map(str::to_owned));
    }
    corpus.push(weighted_line().to_owned());
    let headers = ["{\"simtape_llm\": 1}", "{\"schemaVersion\": 1}", ""];
    let mut rng = RngStream::fork(2024, "llm-fuzz");
    let mut parsed = 0u32;
    for _ in 0..6_000 {
        let line = &corpus[rng.below(corpus.len() as u64) as usize];
        let header = headers[rng.below(headers.len() as u64) as usize];
        let text = format!("{}\n{}\n", mutate(header, &mut rng), mutate(line, &mut rng));
        let outcome = std::panic::catch_unwind(|| {
            Fixture::parse("fuzz.jsonl", &text).map(|f| f.entries.len())
        });
        match outcome {
            Ok(Ok(_)) => parsed += 1,
            Ok(Err(FixtureError::Malformed { line, .. })) => {
                assert!((1..=text.lines().count() as u64).contains(&line), "{text}")
            }
            Ok(Err(other)) => panic!("unexpected {other} for {text:?}"),
            Err(_) => panic!("the parser panicked on {text:?}"),
        }
    }
    // The mutations must not all be fatal, or the fuzz would only test the JSON parser.
    assert!(parsed > 100, "parsed {parsed}");
}

fn weighted_line() -> &'static str {
    r#"{"mode": "sticky", "alternatives": [{"weight": 1, "response": {"text": "a"}}, {"weight": 2, "response": {"text": "b"}}]}"#
}

#[test]
fn tape_holds_request_and_reply_with_digest_and_alternative() {
    // Goal: each call leaves a `request` and a `reply` record; the reply names digest, line, pick.
    let request = user("tape me");
    let digest = request.digest();
    let report = run(7, weighted(), move |llm| async move {
        llm.complete_with_reply(request).await
    });
    let reply = report.output;
    assert_eq!(reply.request_digest, digest);
    assert_eq!(reply.entry_line, Some(2));
    let alternative = reply.alternative.unwrap();
    assert!(alternative == 0 || alternative == 2, "{alternative}");
    let bytes = report.summary.tape.unwrap().memory.unwrap();
    let mut reader = TapeReader::new(bytes.as_slice()).unwrap().keep_blobs(true);
    let mut bodies = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if matches!(record.kind, RecordKind::Request | RecordKind::Reply) {
            let payload = reader.resolve(&record).unwrap();
            bodies.push((
                record.kind,
                simtape::tape::payload_to_json(&payload).unwrap(),
            ));
        }
    }
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert_eq!(bodies[0].0, RecordKind::Request);
    assert_eq!(bodies[0].1[0], "complete");
    let (kind, body) = &bodies[1];
    assert_eq!(*kind, RecordKind::Reply);
    assert_eq!(body[0], "complete");
    // The reply is (digest, entry line, alternative, usage, result), as rmp-serde's arrays.
    assert_eq!(body[1][0], digest.as_str());
    assert_eq!(body[1][1], 2);
    assert_eq!(body[1][2], alternative);
    let text = ["a", "never", "b"][alternative as usize];
    assert_eq!(body[1][4]["Ok"][1], text);
}

#[test]
fn large_responses_go_to_the_content_store() {
    // Goal: a reply above 4 KiB is stored by content hash, and still reads back whole.
    let big = "x".repeat(5_000);
    let line = format!(r#"{{"response": {{"text": "{big}"}}}}"#);
    let report = run(1, actor(&[&line]), |llm| async move {
        llm.complete(user("q")).await
    });
    assert_eq!(report.output.unwrap().text.len(), 5_000);
    let bytes = report.summary.tape.unwrap().memory.unwrap();
    let mut reader = TapeReader::new(bytes.as_slice()).unwrap().keep_blobs(true);
    let mut replies = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if record.kind == RecordKind::Reply {
            let payload = reader.resolve(&record).unwrap();
            replies.push((record.blob_ref, payload.len()));
        }
    }
    assert_eq!(replies.len(), 1);
    assert!(replies[0].0, "the reply is a blob reference");
    assert!(replies[0].1 > 5_000, "{replies:?}");
}

/// Returns the JSON body of every `request` record of the actor on `tape`.
fn request_bodies(tape: &[u8]) -> Vec<serde_json::Value> {
    let mut reader = TapeReader::new(tape).unwrap().keep_blobs(true);
    let mut bodies = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if record.kind == RecordKind::Request {
            let payload = reader.resolve(&record).unwrap();
            bodies.push(simtape::tape::payload_to_json(&payload).unwrap()[1].clone());
        }
    }
    bodies
}

#[test]
fn request_records_hold_what_changed_since_the_previous_call() {
    // Goal: a growing conversation puts each message on the tape once, and the tools once;
    // a rewritten one says how much it kept.
    let tools = vec![ToolDefinition::named("get_weather")];
    let first = ChatRequest::new("m", vec![Message::system("s"), Message::user("a")])
        .with_tools(tools.clone());
    let mut second = first.clone();
    second
        .messages
        .extend([Message::assistant("b"), Message::user("c")]);
    let mut rewritten = second.clone();
    rewritten.messages[1] = Message::user("A");
    let requests = vec![first, second.clone(), second, rewritten.clone()];
    let make = actor(&[r#"{"mode": "sticky", "response": {"text": "ok"}}"#]);
    let report = run(1, make, move |llm| async move {
        let mut digests = Vec::new();
        for request in requests {
            digests.push((request.digest(), llm.complete_with_reply(request).await));
        }
        digests
    });
    for (digest, reply) in &report.output {
        assert_eq!(&reply.request_digest, digest);
    }
    let bodies = request_bodies(&report.summary.tape.unwrap().memory.unwrap());
    // (model, scope, messages, kept, new, tools_digest, tools)
    let shape: Vec<(u64, u64, usize, bool)> = bodies
        .iter()
        .map(|b| {
            let (messages, kept) = (b[2].as_u64().unwrap(), b[3].as_u64().unwrap());
            (
                messages,
                kept,
                b[4].as_array().unwrap().len(),
                !b[6].is_null(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (2, 0, 2, true),
            (4, 2, 2, false),
            (4, 4, 0, false),
            (4, 1, 3, false)
        ]
    );
    assert_eq!(bodies[1][4][0][1], "b", "{}", bodies[1]);
    assert_eq!(bodies[0][6][0][0], "get_weather");
    assert!(bodies.iter().all(|b| b[5] == bodies[0][5] && b[0] == "m"));
    // A rewritten conversation gets its own digest.
    let digests: Vec<&str> = report.output.iter().map(|(d, _)| d.as_str()).collect();
    assert_eq!(digests[1], digests[2]);
    assert_ne!(digests[2], digests[3]);
    assert_eq!(rewritten.digest(), digests[3]);
}
