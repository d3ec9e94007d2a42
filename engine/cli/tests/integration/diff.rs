//! `simtape diff` in the user's words: a divergence in model traffic is named as the model
//! call it belongs to, and a divergence inside a JSON body as the field's pointer and both
//! values, never the whole body; the same for MCP calls; the HTML diff says the same.

use std::path::{Path, PathBuf};

use crate::common::{check_doc_block, repo, run_ok, scratch, simtape, text};

/// Copies the generic-python example into `dir` with its agent's model name read from
/// `AGENT_MODEL` and two variants that set it, so two runs differ in one request field.
fn model_variants(dir: &Path) -> PathBuf {
    let example = repo().join("examples/agents/generic-python");
    let project = dir.join("generic-python");
    std::fs::create_dir_all(project.join("repo")).unwrap();
    for file in ["llm.jsonl", "repo/README.md"] {
        let from = example.join(file);
        if from.exists() {
            std::fs::copy(from, project.join(file)).unwrap();
        }
    }
    let agent = std::fs::read_to_string(example.join("agent.py")).unwrap();
    let fixed = r#"{"model": "gpt-4o-mini""#;
    assert!(agent.contains(fixed), "the example agent names its model");
    let agent = agent.replace(
        fixed,
        r#"{"model": os.environ.get("AGENT_MODEL", "gpt-4o-mini")"#,
    );
    std::fs::write(project.join("agent.py"), agent).unwrap();
    let scenario = std::fs::read_to_string(example.join("scenario.toml")).unwrap();
    let variants =
        "[[agent.variant]]\nname = \"mini\"\nenv = { AGENT_MODEL = \"gpt-4.1-mini\" }\n\n\
                    [[agent.variant]]\nname = \"full\"\nenv = { AGENT_MODEL = \"gpt-4.1\" }\n\n\
                    [[agent.variant]]\nname = \"retrying\"\n";
    let scenario = scenario.replacen("[[agent.variant]]\nname = \"retrying\"\n", variants, 1);
    std::fs::write(project.join("scenario.toml"), scenario).unwrap();
    project.join("scenario.toml")
}

/// Runs the variant `agent` of `scenario` at seed 0 into `dir/<agent>.tape`.
fn run_variant(dir: &Path, scenario: &Path, agent: &str) -> PathBuf {
    let tape = dir.join(format!("{agent}.tape"));
    run_ok(
        simtape()
            .current_dir(dir)
            .arg("run")
            .arg(scenario)
            .args(["--seed", "0", "--agent", agent, "--tape"])
            .arg(&tape),
    );
    tape
}

#[test]
fn a_changed_request_field_is_named_by_its_model_call_and_pointer() {
    // Goal: two runs whose first model request differs only in "model" diff as that model
    // call (its endpoint, request side), the pointer /model and both values, never the whole
    // body; the record's place comes second; the HTML diff names the same call and pointer;
    // docs/cli.md shows this output.
    let dir = scratch("diff", "model-field");
    let scenario = model_variants(&dir);
    let (a, b) = (
        run_variant(&dir, &scenario, "mini"),
        run_variant(&dir, &scenario, "full"),
    );
    let page = dir.join("diff.html");
    let output = simtape()
        .current_dir(&dir)
        .args(["diff", "mini.tape", "full.tape", "--html"])
        .arg(&page)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        lines[1],
        "first divergence: model call 1 (POST /v1/chat/completions), request"
    );
    assert_eq!(lines[2], r#"  /model: "gpt-4.1-mini" → "gpt-4.1""#);
    assert!(lines[3].starts_with("  where: 1 record changed at index 1 of A, 1 of B"));
    assert!(!shown.contains("messages"), "never the whole body: {shown}");
    check_doc_block("docs/cli.md", "<!-- diff: one request field -->", &shown);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("First divergence: model call 1 (POST /v1/chat/completions), request"),
        "the page names the call"
    );
    assert!(
        html.contains(r#"<code class="pointer">/model</code>"#),
        "the page names the pointer"
    );
    assert!(html.contains("&quot;gpt-4.1-mini&quot;") || html.contains("\"gpt-4.1-mini\""));
    // JSON consumers get the call and the changes as data.
    let json = simtape()
        .args(["diff", "--json"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let first = &report["first"];
    assert_eq!(first["call"]["kind"], "model");
    assert_eq!(first["call"]["ordinal"], 1);
    assert_eq!(first["call"]["side"], "request");
    assert_eq!(first["changes"][0]["pointer"], "/model");
    assert_eq!(first["changes"][0]["body"], "payload/2/Request/3");
    assert_eq!(first["changes_total"], 1);
}

#[test]
fn an_mcp_divergence_names_the_mcp_call() {
    // Goal: ticket-retry seeds 0 and 3 first part where comment_ticket's seeded 429 fires on
    // seed 3: the diff names that MCP call (server, method, tool) and its reply side, and
    // lists the reply's differing fields, not the whole reply.
    let dir = scratch("diff", "mcp-call");
    let tape = |seed: &str| {
        let path = dir.join(format!("{seed}.tape"));
        run_ok(
            simtape()
                .arg("run")
                .arg(repo().join("scenarios/ticket-retry.toml"))
                .args(["--seed", seed, "--tape"])
                .arg(&path),
        );
        path
    };
    let (a, b) = (tape("0"), tape("3"));
    let output = simtape()
        .args(["diff", "--mode", "semantic"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(
            "first divergence: MCP call 4 (tickets: tools/call comment_ticket), reply\n  payload/1/2/Err: (absent) → {\"Rpc\":"
        ),
        "{shown}"
    );
    assert!(shown.contains("  where: "), "{shown}");
}

#[test]
fn a_built_in_agents_changed_prompt_is_named_by_its_field() {
    // Goal: a built-in agent's model request (the LLM actor's record, whose fields are
    // stored by place) is diffed by its fields' names: `/new/0/content`, the system prompt
    // among the messages the first call adds, not `payload/1/4/0/1`.
    let dir = scratch("diff", "built-in-prompt");
    let source = std::fs::read_to_string(repo().join("scenarios/ticket-retry.toml")).unwrap();
    // The copies live in the scratch directory, their fixture and world named by absolute
    // path.
    let scenarios = repo().join("scenarios");
    let source = source
        .replace("\"data/", &format!("\"{}/data/", scenarios.display()))
        .replace("\"worlds/", &format!("\"{}/worlds/", scenarios.display()));
    assert!(source.contains("system = \"You work the team's ticket tracker through its tools.\""));
    let tape = |name: &str, system: &str| {
        let scenario = dir.join(format!("{name}.toml"));
        let text = source.replacen(
            "system = \"You work the team's ticket tracker through its tools.\"",
            &format!("system = \"{system}\""),
            1,
        );
        std::fs::write(&scenario, text).unwrap();
        let path = dir.join(format!("{name}.tape"));
        run_ok(
            simtape()
                .arg("run")
                .arg(&scenario)
                .args(["--seed", "0", "--tape"])
                .arg(&path),
        );
        path
    };
    let a = tape("a", "You work the team's ticket tracker through its tools.");
    let b = tape("b", "You work the ticket tracker through its tools.");
    let output = simtape().arg("diff").arg(&a).arg(&b).output().unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(
            "first divergence: model call 1, request\n  /new/0/content: \"You work the team's ticket tracker through its tools.\" → \"You work the ticket tracker through its tools.\"\n"
        ),
        "{shown}"
    );
}
