//! Eval scenarios: the `[agent]`, `[[mcp]]`, `[[faults.mcp]]` and `[[verify]]` tables, decoded
//! through the core's extension hook with their defaults, and every problem, the core's and
//! the eval tables', placed at its line, column and field in one pass.

use std::path::{Path, PathBuf};

use serde_json::json;

use simtape::rng::Ratio;
use simtape::scenario::{
    FaultsSpec, FsFault, FsFaultKind, LlmFault, LlmFaultKind, ProcessFault, ScenarioError, Trigger,
};
use simtape_agent::{
    AdapterKind, AgentClock, AgentSpec, Check, CommandAgentSpec, EvalScenario, FsState, McpFault,
    McpServerSpec, McpSource, Pattern, Permission, TextMatch, ToolSource, VerifySpec,
};
use simtape_mcp::world::faults::{FaultKind, ToolFault, KINDS};

/// Returns the TOML block of docs/scenario-format.md that follows `<!-- {name} -->`.
fn doc_example(name: &str) -> String {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenario-format.md");
    let text = std::fs::read_to_string(doc).unwrap();
    let marker = format!("<!-- {name} -->\n```toml\n");
    let start = text.find(&marker).expect("the doc marks the example") + marker.len();
    let end = start + text[start..].find("```").unwrap();
    text[start..end].to_string()
}

/// A world with the two tools the fault rules below name.
const TICKETS_WORLD: &str = r#"{
  "format": "simtape-mcp-world/1",
  "name": "tickets",
  "version": "1.0.0",
  "seed": 1,
  "initial_state": {"tickets": {}},
  "tools": [
    {"name": "create_ticket", "description": "Opens a ticket.", "inputSchema": {"type": "object"},
     "effects": [{"op": "set", "path": "/tickets/t1", "value": "open"}]},
    {"name": "close_ticket", "description": "Closes a ticket.", "inputSchema": {"type": "object"},
     "effects": [{"op": "set", "path": "/tickets/t1", "value": "closed"}]}
  ],
  "goal": {"assertions": [{"path": "/tickets/t1", "equals": "closed"}]}
}
"#;

/// Returns a directory holding the files an eval scenario names: an overlay root, an LLM
/// fixture, a process tape, a world spec and a cassette. Each test has its own, so none sees
/// another's files half written.
fn eval_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("scenario-eval")
        .join(test);
    std::fs::create_dir_all(dir.join("worktree/src")).unwrap();
    std::fs::create_dir_all(dir.join("worlds")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("worktree/src/lib.rs"), "pub mod helpers;\n").unwrap();
    let fixture = "{\"simtape_llm\": 1}\n{\"response\": {\"text\": \"done\"}}\n";
    std::fs::write(dir.join("llm.jsonl"), fixture).unwrap();
    std::fs::write(dir.join("process.jsonl"), "{\"simtape_process\": 1}\n").unwrap();
    std::fs::write(dir.join("worlds/tickets.json"), TICKETS_WORLD).unwrap();
    let cassette = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sums.cassette.json");
    std::fs::copy(cassette, dir.join("data/search.cassette.jsonl")).unwrap();
    dir
}

/// Returns every problem `check_source` reports for `source` at `path`, as displayed.
fn problems_at(source: &str, path: &Path) -> Vec<String> {
    let errors = EvalScenario::check_source(source, path).unwrap_err();
    errors.iter().map(ScenarioError::to_string).collect()
}

/// Returns every problem of `source` as `LINE:COLUMN: field `F`: MESSAGE` (file `s.toml`).
fn problems(source: &str) -> Vec<String> {
    problems_at(source, Path::new("s.toml"))
        .into_iter()
        .map(|p| p.trim_start_matches("s.toml:").to_string())
        .collect()
}

const HEAD: &str = "[scenario]\nname = \"e\"\n";
const TASK: &str = "[[task]]\nname = \"a\"\nsteps = [{ sleep = \"1s\" }]\n";
const CAPABILITIES: &str = "[fs]\nroot = \"worktree\"\n[llm]\nfixture = \"llm.jsonl\"\n[process]\ntape = \"process.jsonl\"\ndefault = \"replay\"\n";

const COMPLETE: &str = r#"[scenario]
name = "eval"

[fs]
root = "worktree"

[llm]
fixture = "llm.jsonl"

[process]
tape = "process.jsonl"
default = "replay"

[[mcp]]
name = "tickets"
world = "worlds/tickets.json"

[[mcp]]
name = "search"
cassette = "data/search.cassette.jsonl"

[agent]
model = "sim-model"
system = "You are careful."
task = "Move the helpers into src/math/."
max_turns = 12
tool_concurrency = 2
retry_budget = 5
backoff = "250ms"
backoff_max = "4s"
tools = ["fs", "tickets"]

[[faults.llm]]
on_call = 2
retry_after = "2s"

[[faults.llm]]
rate = "1/10"
status = 503
message = "overloaded"

[[faults.mcp]]
server = "tickets"
tool = "create_ticket"
on_call = 1
kind = "rpc_error"
retry_after = "1s"

[[faults.mcp]]
server = "tickets"
rate = "1/4"
kind = "timeout"

[[faults.mcp]]
server = "tickets"
on_call = 3
kind = "tool_error"
message = "index offline"

[[faults.mcp]]
server = "tickets"
tool = "close_ticket"
on_call = 1
kind = "partial_write"
ops = 1

[[faults.fs]]
op = "write"
on_call = 3
kind = "enospc"

[[faults.fs]]
rate = "1%"
kind = "eio"

[[faults.process]]
program = "cargo"
on_call = 1
exit_code = 101

[[faults.process]]
rate = "1/2"

[[verify]]
kind = "fs"
path = "src/math/mod.rs"
state = "added"
contains = "pub mod ops;"
matches = "^pub mod"

[[verify]]
name = "helpers gone"
kind = "fs"
path = "src/helpers.rs"
state = "deleted"

[[verify]]
kind = "answer"
excludes = "sorry"

[[verify]]
kind = "tool_called"
tool = "write_file"
args = { path = "src/math/ops.rs" }

[[verify]]
kind = "tool_called"
tool = "delete_file"
called = false

[[verify]]
kind = "world_goal"
server = "tickets"
collateral = true

[[verify]]
kind = "gate"
program = "cargo"
args = ["test", "--quiet"]

[[verify]]
kind = "outcome"
name = "refactored"
value = { files = 2 }
"#;

#[test]
fn a_complete_eval_scenario_decodes_every_table() {
    // Goal: each key of the four eval tables reaches its field, paths resolve against the
    // scenario's directory, and an agent scenario needs no [[task]].
    let dir = eval_dir("complete");
    let scenario = EvalScenario::parse(COMPLETE, &dir.join("eval.toml")).unwrap();
    let eval = scenario.eval();
    assert_eq!(
        eval.agent.as_ref(),
        Some(&AgentSpec {
            model: "sim-model".into(),
            system: "You are careful.".into(),
            task: "Move the helpers into src/math/.".into(),
            max_turns: 12,
            tool_concurrency: 2,
            retry_budget: 5,
            backoff_base_ms: 250,
            backoff_max_ms: 4_000,
            tools: vec![ToolSource::Fs, ToolSource::Mcp("tickets".into())],
        })
    );
    assert_eq!(
        eval.mcp,
        [
            McpServerSpec {
                name: "tickets".into(),
                source: McpSource::World(dir.join("worlds/tickets.json")),
                elicitation: Vec::new(),
            },
            McpServerSpec {
                name: "search".into(),
                source: McpSource::Cassette(dir.join("data/search.cassette.jsonl")),
                elicitation: Vec::new(),
            },
        ]
    );
    let rate = |n, d| Trigger::Rate(Ratio::new(n, d).unwrap());
    let tickets = |tool: &str, trigger, kind| McpFault {
        server: "tickets".into(),
        tool: tool.into(),
        trigger,
        kind,
    };
    assert_eq!(
        eval.mcp_faults,
        [
            tickets(
                "create_ticket",
                Trigger::OnCall(1),
                FaultKind::RpcError {
                    code: 429,
                    message: "rate limited".into(),
                    data: Some(json!({ "retryAfterMs": 1_000 })),
                },
            ),
            tickets("*", rate(1, 4), FaultKind::Timeout { after_ms: 30_000 }),
            tickets(
                "*",
                Trigger::OnCall(3),
                FaultKind::ToolError {
                    message: "index offline".into(),
                },
            ),
            tickets(
                "close_ticket",
                Trigger::OnCall(1),
                FaultKind::PartialWrite {
                    ops: 1,
                    message: None,
                },
            ),
        ]
    );
    assert_eq!(
        scenario.scenario().faults(),
        &FaultsSpec {
            llm: vec![
                LlmFault {
                    trigger: Trigger::OnCall(2),
                    kind: LlmFaultKind::Http {
                        status: 429,
                        retry_after_ms: Some(2_000),
                        message: "injected fault: HTTP 429".into(),
                        lasts_ns: None,
                    },
                },
                LlmFault {
                    trigger: rate(1, 10),
                    kind: LlmFaultKind::Http {
                        status: 503,
                        retry_after_ms: None,
                        message: "overloaded".into(),
                        lasts_ns: None,
                    },
                },
            ],
            fs: vec![
                FsFault {
                    op: "write".into(),
                    trigger: Trigger::OnCall(3),
                    kind: FsFaultKind::Enospc,
                },
                FsFault {
                    op: "*".into(),
                    trigger: rate(1, 100),
                    kind: FsFaultKind::Eio,
                },
            ],
            process: vec![
                ProcessFault {
                    program: "cargo".into(),
                    trigger: Trigger::OnCall(1),
                    exit_code: 101,
                },
                ProcessFault {
                    program: "*".into(),
                    trigger: rate(1, 2),
                    exit_code: 1,
                },
            ],
        }
    );
    let verify = |name: &str, line: u64, check| VerifySpec {
        name: name.into(),
        line,
        check,
    };
    assert_eq!(
        eval.verify,
        [
            verify(
                "fs src/math/mod.rs",
                84,
                Check::Fs {
                    path: "src/math/mod.rs".into(),
                    state: FsState::Added,
                    content: TextMatch {
                        contains: Some("pub mod ops;".into()),
                        matches: Some(Pattern::new("^pub mod").unwrap()),
                        ..TextMatch::default()
                    },
                },
            ),
            verify(
                "helpers gone",
                91,
                Check::Fs {
                    path: "src/helpers.rs".into(),
                    state: FsState::Deleted,
                    content: TextMatch::default(),
                },
            ),
            verify(
                "answer",
                97,
                Check::Answer(TextMatch {
                    excludes: Some("sorry".into()),
                    ..TextMatch::default()
                }),
            ),
            verify(
                "tool_called write_file",
                101,
                Check::ToolCalled {
                    tool: "write_file".into(),
                    args: Some(json!({ "path": "src/math/ops.rs" })),
                    called: true,
                },
            ),
            verify(
                "tool_called delete_file",
                106,
                Check::ToolCalled {
                    tool: "delete_file".into(),
                    args: None,
                    called: false,
                },
            ),
            verify(
                "world_goal tickets",
                111,
                Check::WorldGoal {
                    server: "tickets".into(),
                    allow_collateral: true,
                },
            ),
            verify(
                "gate cargo test --quiet",
                116,
                Check::Gate {
                    program: "cargo".into(),
                    args: vec!["test".into(), "--quiet".into()],
                    exit_code: 0,
                },
            ),
            verify(
                "outcome refactored",
                121,
                Check::Outcome {
                    name: "refactored".into(),
                    value: json!({ "files": 2 }),
                },
            ),
        ]
    );
    // Each verifier's line is where its [[verify]] header stands.
    for verifier in &eval.verify {
        let line = COMPLETE.lines().nth(verifier.line as usize - 1).unwrap();
        assert_eq!(line, "[[verify]]", "{}", verifier.name);
    }
    // With no [[task]], the scripted part is empty and runs to nothing.
    let mut builder = scenario.scenario().builder(0);
    let report = scenario.scenario().run(&mut builder).unwrap();
    assert_eq!((report.summary.end_ns, report.outcomes.len()), (0, 0));
}

#[test]
fn an_mcp_fault_rate_reaches_the_world_as_a_ratio() {
    // Goal: `rate = "1/3"` in [[faults.mcp]] becomes the world's fault rule with the same typed
    // trigger and kind a world spec's `"rate": "1/3"` loads to (and its deprecated name
    // `probability`): one trigger type, no text in between.
    let dir = eval_dir("mcp-rate");
    let source = format!(
        "{HEAD}{CAPABILITIES}[[mcp]]\nname = \"tickets\"\nworld = \"worlds/tickets.json\"\n[agent]\ntask = \"Do it.\"\n[[faults.mcp]]\nserver = \"tickets\"\ntool = \"create_ticket\"\nrate = \"1/3\"\nkind = \"timeout\"\nafter = \"2s\"\n"
    );
    let scenario = EvalScenario::parse(&source, &dir.join("e.toml")).unwrap();
    let [fault] = scenario.eval().mcp_faults.as_slice() else {
        panic!("one rule: {:?}", scenario.eval().mcp_faults);
    };
    assert_eq!(fault.trigger, Trigger::Rate(Ratio::new(1, 3).unwrap()));
    assert_eq!(fault.kind, FaultKind::Timeout { after_ms: 2_000 });
    let rule = fault.world_rule();
    assert_eq!(rule.trigger, fault.trigger);
    for name in ["rate", "probability"] {
        let written = format!(
            r#"{{"tool": "create_ticket", "{name}": "1/3",
            "fault": {{"kind": "timeout", "after_ms": 2000}}}}"#
        );
        assert_eq!(rule, serde_json::from_str::<ToolFault>(&written).unwrap());
    }
}

#[test]
fn elicitation_answers_decode_in_order_and_bad_ones_are_placed() {
    // Goal: `[[mcp]] elicitation` becomes the agent's ElicitResults in file order (TOML
    // content as JSON); an unknown action, content with a decline and content that is no
    // table are each reported at their field.
    let dir = eval_dir("elicitation");
    let server = "[[mcp]]\nname = \"search\"\ncassette = \"data/search.cassette.jsonl\"\n";
    let answers = "elicitation = [{ action = \"accept\", content = { name = \"Ada\", age = 36 } }, { action = \"cancel\" }]\n";
    let source = format!("{HEAD}{CAPABILITIES}{server}{answers}[agent]\ntask = \"Do it.\"\n");
    let scenario = EvalScenario::parse(&source, &dir.join("e.toml")).unwrap();
    assert_eq!(
        scenario.eval().mcp[0].elicitation,
        [
            serde_json::json!({"action": "accept", "content": {"name": "Ada", "age": 36}}),
            serde_json::json!({"action": "cancel"}),
        ]
    );
    let bad = r#"[[mcp]]
name = "search"
cassette = "c.json"
elicitation = [{ action = "maybe" }, { action = "decline", content = { a = 1 } }, { action = "accept", content = 3 }, { content = {} }]
"#;
    assert_eq!(
        problems(&format!("{HEAD}{bad}")),
        [
            "1:1: field `task`: expected at least one [[task]] table, found nothing",
            "6:27: field `mcp[0].elicitation[0].action`: expected one of `accept`, `decline`, `cancel`, found \"maybe\"",
            "6:70: field `mcp[0].elicitation[1].content`: `content` goes only with action \"accept\", found \"decline\"",
            "6:114: field `mcp[0].elicitation[2].content`: expected a table of the requested fields, found 3",
            "6:119: field `mcp[0].elicitation[3].action`: expected one of `accept`, `decline`, `cancel`, found nothing",
        ]
    );
}

#[test]
fn agent_defaults_offer_every_configured_source() {
    // Goal: an [agent] with only a task gets the documented defaults, and its tools are fs,
    // process and each [[mcp]] server in file order.
    let dir = eval_dir("defaults");
    let source = format!(
        "{HEAD}{CAPABILITIES}[[mcp]]\nname = \"b\"\nworld = \"worlds/tickets.json\"\n[[mcp]]\nname = \"a\"\ncassette = \"data/search.cassette.jsonl\"\n[agent]\ntask = \"Do it.\"\n"
    );
    let scenario = EvalScenario::parse(&source, &dir.join("e.toml")).unwrap();
    assert_eq!(
        scenario.eval().agent.as_ref(),
        Some(&AgentSpec {
            model: "simtape-agent".into(),
            system: String::new(),
            task: "Do it.".into(),
            max_turns: 20,
            tool_concurrency: 4,
            retry_budget: 3,
            backoff_base_ms: 500,
            backoff_max_ms: 30_000,
            tools: vec![
                ToolSource::Fs,
                ToolSource::Process,
                ToolSource::Mcp("b".into()),
                ToolSource::Mcp("a".into()),
            ],
        })
    );
    assert!(scenario.scenario().faults().is_empty() && scenario.eval().mcp_faults.is_empty());
    assert!(scenario.eval().verify.is_empty());
    // Without [fs] and [process], the defaults are the servers alone (here none).
    let source = format!("{HEAD}[llm]\nfixture = \"llm.jsonl\"\n[agent]\ntask = \"Answer.\"\n");
    let scenario = EvalScenario::parse(&source, &dir.join("e.toml")).unwrap();
    assert_eq!(scenario.eval().agent.as_ref().unwrap().tools, []);
}

#[test]
fn agent_and_mcp_problems_are_placed_at_their_fields() {
    // Goal: bad values, ranges, backoff order, tool sources and server names of [agent] and
    // [[mcp]] are each reported at their own line and column.
    let source = format!(
        r#"{HEAD}[[mcp]]
name = "Tickets"
world = "w.json"
[[mcp]]
name = "dup"
world = "w.json"
cassette = "c.jsonl"
[[mcp]]
name = "dup"
[[mcp]]
name = "fs"
cassete = "c.jsonl"
world = ""
[agent]
model = ""
task = ""
max_turns = 0
tool_concurrency = 65
retry_budget = -1
backoff = "2s"
backoff_max = "1s"
tools = ["fs", "process", "nowhere", 3]
colour = "red"
"#
    );
    assert_eq!(
        problems(&source),
        [
            "4:8: field `mcp[0].name`: expected a name of a-z, 0-9 and -, found \"Tickets\"",
            "9:12: field `mcp[1].cassette`: expected either `world` or `cassette`, found both",
            "10:1: field `mcp[2].world`: expected a backing: `world = \"worlds/x.json\"` or `cassette = \"data/x.jsonl\"`, found nothing",
            "11:8: field `mcp[2].name`: expected a server name not used before, found \"dup\", which `mcp[1].name` already names",
            "13:8: field `mcp[3].name`: the server name \"fs\" is reserved: `[agent] tools` uses it for the built-in fs tools",
            "14:1: field `mcp[3].cassete`: unknown key, expected one of `name`, `world`, `cassette`, `elicitation`",
            "15:9: field `mcp[3].world`: expected a world spec path relative to the scenario file, found \"\"",
            "16:1: field `agent`: [agent] needs an [llm] table: the agent's model answers from its fixture",
            "17:9: field `agent.model`: expected a model name (not empty), found \"\"",
            "18:8: field `agent.task`: expected a task prompt like \"Fix the failing test.\" (not empty), found \"\"",
            "19:13: field `agent.max_turns`: expected an integer from 1 to 1000, found 0",
            "20:20: field `agent.tool_concurrency`: expected an integer from 1 to 64, found 65",
            "21:16: field `agent.retry_budget`: expected an integer from 0 to 1000, found -1",
            "23:15: field `agent.backoff_max`: expected backoff <= backoff_max, found backoff \"2s\" > backoff_max \"1s\"",
            "24:10: field `agent.tools[0]`: tool `fs` needs an [fs] table",
            "24:16: field `agent.tools[1]`: tool `process` needs a [process] table",
            // "nowhere" (24:27) is not judged: `mcp[0]`'s bad name might have been meant.
            "24:38: field `agent.tools[3]`: expected `fs`, `process` or the name of an [[mcp]] server (`dup`), found 3",
            "25:1: field `agent.colour`: unknown key, expected one of `kind`, `model`, `system`, `task`, `max_turns`, `tool_concurrency`, `retry_budget`, `backoff`, `backoff_max`, `tools`",
        ]
    );
}

#[test]
fn agent_tools_twice_and_whole_milliseconds() {
    // Goal: a tool source named twice is refused at its second place; back-offs are whole
    // milliseconds; a missing task is reported at the table.
    let source = format!(
        "{HEAD}[llm]\nfixture = \"f\"\n[[mcp]]\nname = \"t\"\nworld = \"w\"\n[agent]\nbackoff = \"1500us\"\nbackoff_max = 30\ntools = [\"t\", \"t\", \"nowhere\"]\n"
    );
    assert_eq!(
        problems(&source),
        [
            "8:1: field `agent.task`: expected a task prompt like \"Fix the failing test.\", found nothing",
            "9:11: field `agent.backoff`: expected a duration of whole milliseconds like \"500ms\", found \"1500us\"",
            "10:15: field `agent.backoff_max`: expected a duration like \"250ms\", found 30",
            "11:15: field `agent.tools[1]`: expected each tool source once, found \"t\"",
            "11:20: field `agent.tools[2]`: expected `fs`, `process` or the name of an [[mcp]] server (`t`), found \"nowhere\"",
        ]
    );
}

#[test]
fn fault_rule_problems_are_placed_at_their_fields() {
    // Goal: triggers (none, both, bad), bad kinds and ranges, unknown servers and keys of
    // each [[faults.*]] array are reported at their own place, and a rule array whose
    // capability has no table is reported at its first rule.
    let source = format!(
        r#"{HEAD}[[mcp]]
name = "tickets"
world = "w.json"
[[faults.llm]]
status = 200
[[faults.mcp]]
server = "tikets"
on_call = 1
rate = "1/2"
kind = "rpc_error"
code = 503
ops = 2
[[faults.mcp]]
server = "tickets"
on_call = 0
kind = "tool_error"
[[faults.mcp]]
server = "tickets"
rate = "0.5"
kind = "crash"
[[faults.fs]]
op = "delete"
on_call = 1
kind = "eperm"
[[faults.process]]
on_call = 1
exit_code = 256
signal = 9
[faults.network]
{TASK}"#
    );
    assert_eq!(
        problems(&source),
        [
            "6:1: field `faults.llm[0]`: [[faults.llm]] needs an [llm] table",
            "6:1: field `faults.llm[0].on_call`: expected a trigger: `on_call = 2` or `rate = \"1/10\"`, found nothing",
            "7:10: field `faults.llm[0].status`: expected an integer from 400 to 599, found 200",
            "9:10: field `faults.mcp[0].server`: expected the name of an [[mcp]] server (`tickets`), found \"tikets\"",
            "11:8: field `faults.mcp[0].rate`: expected either `on_call` or `rate`, found both",
            "14:1: field `faults.mcp[0].ops`: unknown key, expected one of `server`, `tool`, `on_call`, `rate`, `kind`, `code`, `message`, `retry_after` (for kind `rpc_error`)",
            "15:1: field `faults.mcp[1].message`: expected the tool error's text, found nothing",
            "17:11: field `faults.mcp[1].on_call`: expected a call number from 1, found 0",
            "21:8: field `faults.mcp[2].rate`: expected a ratio like \"1/10\" or \"5%\" (at most 1), found \"0.5\"",
            // The kinds are the world's list (a new kind is added there alone).
            &format!("22:8: field `faults.mcp[2].kind`: expected a fault kind {}, found \"crash\"", kinds()),
            "23:1: field `faults.fs[0]`: [[faults.fs]] needs an [fs] table",
            "24:6: field `faults.fs[0].op`: expected an operation `read`, `write`, `append`, `remove`, `rename`, `mkdir`, `list`, `stat`, `*`, found \"delete\"",
            "26:8: field `faults.fs[0].kind`: expected a fault kind `eio` or `enospc`, found \"eperm\"",
            "27:1: field `faults.process[0]`: [[faults.process]] needs a [process] table",
            "29:13: field `faults.process[0].exit_code`: expected an integer from 0 to 255, found 256",
            "30:1: field `faults.process[0].signal`: unknown key, expected one of `program`, `on_call`, `rate`, `exit_code`",
            "31:9: field `faults.network`: unknown key, expected one of `llm`, `mcp`, `fs`, `process`",
        ]
    );
}

#[test]
fn verifier_problems_are_placed_at_their_fields() {
    // Goal: kinds, states, content checks that cannot apply, bad patterns (regex's message on
    // one line), arguments, servers and missing keys of [[verify]] are each reported at
    // their own place.
    let source = format!(
        r#"{HEAD}[llm]
fixture = "f"
[[mcp]]
name = "search"
cassette = "c.jsonl"
[[verify]]
kind = "fs"
path = "src/old.rs"
state = "deleted"
contains = "x"
[[verify]]
kind = "fs"
path = "a"
state = "gone"
matches = "(unclosed"
[[verify]]
kind = "answer"
[[verify]]
kind = "tool_called"
args = ["x"]
called = "yes"
[[verify]]
kind = "world_goal"
server = "search"
[[verify]]
kind = "gate"
args = "test"
exit_code = -1
[[verify]]
kind = "outcome"
value = 1
label = "x"
[[verify]]
kind = "smoke"
[[verify]]
name = ""
kind = "answer"
equals = "ok"
{TASK}"#
    );
    assert_eq!(
        problems(&source),
        [
            "9:8: field `verify[0].kind`: a `fs` verifier needs an [fs] table",
            "12:12: field `verify[0].contains`: expected no content expectation with state \"deleted\" (the path has no content at the end), found `contains`",
            "14:8: field `verify[1].kind`: a `fs` verifier needs an [fs] table",
            "16:9: field `verify[1].state`: expected a state `added`, `modified`, `deleted`, `unchanged`, `exists`, `absent`, found \"gone\"",
            "17:11: field `verify[1].matches`: expected a regular expression, found \"(unclosed\": regex parse error: (unclosed; error: unclosed group",
            "18:1: field `verify[2]`: expected at least one of `equals`, `contains`, `excludes`, `matches`, found none",
            "20:1: field `verify[3].tool`: expected a tool name like \"write_file\", found nothing",
            "22:8: field `verify[3].args`: expected a table of arguments like { path = \"src/lib.rs\" }, found an array",
            "23:10: field `verify[3].called`: expected true or false, found \"yes\"",
            "26:10: field `verify[4].server`: expected an [[mcp]] server backed by a world (`world = …`), found \"search\", which replays a cassette",
            "27:1: field `verify[5].program`: expected a program name like \"cargo\", found nothing",
            "28:8: field `verify[5].kind`: a `gate` verifier needs a [process] table",
            "29:8: field `verify[5].args`: expected an array of arguments like [\"test\"], found \"test\"",
            "30:13: field `verify[5].exit_code`: expected an exit code from 0 to 255, found -1",
            "31:1: field `verify[6].name`: expected the outcome's name, found nothing",
            "34:1: field `verify[6].label`: unknown key, expected one of `kind`, `name`, `value` (for kind `outcome`)",
            "36:8: field `verify[7].kind`: expected a verifier kind `fs`, `answer`, `tool_called`, `world_goal`, `gate`, `outcome`, found \"smoke\"",
            "38:8: field `verify[8].name`: expected a name of 1 to 128 characters without control characters, found \"\"",
        ]
    );
}

#[test]
fn referenced_mcp_files_must_exist_and_tasks_are_needed_without_an_agent() {
    // Goal: a world spec or cassette that is not a file is reported at the field naming it
    // with its resolved path; a scenario with neither [agent] nor [[task]] is refused.
    let dir = eval_dir("files");
    let path = dir.join("e.toml");
    let source = format!(
        "{HEAD}[llm]\nfixture = \"llm.jsonl\"\n[[mcp]]\nname = \"a\"\nworld = \"worlds/none.json\"\n[[mcp]]\nname = \"b\"\ncassette = \"data\"\n[agent]\ntask = \"t\"\n"
    );
    assert_eq!(
        problems_at(&source, &path),
        [
            format!(
                "{}:7:9: field `mcp[0].world`: expected an existing world spec file, found nothing at {}",
                path.display(),
                dir.join("worlds/none.json").display()
            ),
            format!(
                "{}:10:12: field `mcp[1].cassette`: expected an existing cassette file, found a directory at {}",
                path.display(),
                dir.join("data").display()
            ),
        ]
    );
    let source = format!("{HEAD}[[verify]]\nkind = \"answer\"\nequals = \"x\"\n");
    assert_eq!(
        problems(&source),
        ["1:1: field `task`: expected at least one [[task]] table, found nothing"]
    );
}

#[test]
fn the_reference_eval_example_checks() {
    // Goal: the complete eval scenario of docs/scenario-format.md checks clean as a file under
    // scenarios/ (whose files it names), with every eval table in it.
    let source = doc_example("complete eval example");
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let scenario = EvalScenario::check_source(&source, &scenarios.join("example.toml"))
        .unwrap_or_else(|errors| panic!("{errors:#?}"));
    let eval = scenario.eval();
    assert_eq!(eval.agent.as_ref().unwrap().tools.len(), 2);
    assert_eq!(eval.mcp.len(), 1);
    let faults = scenario.scenario().faults();
    let rules = [
        faults.llm.len(),
        eval.mcp_faults.len(),
        faults.fs.len(),
        faults.process.len(),
    ];
    assert_eq!(rules, [1, 1, 1, 1]);
    let names: Vec<&str> = eval.verify.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "fs src/math/ops.rs",
            "helpers moved away",
            "tool_called write_file",
            "world_goal tickets",
            "answer",
            "gate git status --short",
            "outcome reviewed",
        ]
    );
}

#[test]
fn checking_never_panics_on_the_eval_example_cut_apart() {
    // Goal: the eval tables' decoder, like the core's, never panics and places every problem:
    // the reference eval example with each line dropped, and cut short after each line,
    // checks to a scenario or to problems that each have a line and a column.
    let source = doc_example("complete eval example");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/example.toml");
    let lines: Vec<&str> = source.lines().collect();
    let mut refused = 0;
    for index in 0..lines.len() {
        let dropped: Vec<&str> = [&lines[..index], &lines[index + 1..]].concat();
        let cut = &lines[..index];
        for variant in [dropped.join("\n"), cut.join("\n")] {
            let outcome = std::panic::catch_unwind(|| EvalScenario::check_source(&variant, &path));
            let Ok(checked) = outcome else {
                panic!("check_source panicked on:\n{variant}");
            };
            if let Err(problems) = checked {
                refused += 1;
                for problem in problems {
                    assert!(problem.line >= 1 && problem.column >= 1, "{problem}");
                }
            }
        }
    }
    assert!(
        refused > lines.len(),
        "only {refused} variants were refused"
    );
}

#[test]
fn core_and_eval_problems_come_in_one_pass_in_source_order() {
    // Goal: through the extension hook, a problem of a core table, of an eval table and an
    // unknown table are reported together, in source order, and the unknown-table message
    // lists the eval tables in the format's order.
    let source = format!(
        "{HEAD}[fs]\nroot = \"worktree\"\nenospc = \"2/1\"\n[llm]\nfixture = \"llm.jsonl\"\n[agent]\ntask = \"t\"\nmax_turns = 0\n[agnet]\n"
    );
    assert_eq!(
        problems(&source),
        [
            "5:10: field `fs.enospc`: expected a ratio like \"1/10\" or \"5%\" (at most 1), found \"2/1\"",
            "10:13: field `agent.max_turns`: expected an integer from 1 to 1000, found 0",
            "11:2: field `agnet`: unknown key, expected one of the tables `scenario`, `limits`, `fs`, `network`, `llm`, `process`, `mcp`, `agent`, `normalize`, `harness`, `faults`, `verify`, `property`, `task`",
        ]
    );
}

#[test]
fn a_command_agent_decodes_with_its_defaults_and_needs_no_process_for_its_gate() {
    // Goal: `[agent] kind = "command"` decodes to the agent program's spec (defaults: full
    // permission, a 600 s timeout, the adapter's usual binary), and its `gate` verifiers run
    // in the agent's directory, so they need no [process] table.
    let dir = eval_dir("command-agent");
    let source = format!(
        r#"{HEAD}[fs]
root = "worktree"
[llm]
fixture = "llm.jsonl"
[agent]
kind = "command"
adapter = "claude-code"
task = "Fix it."
env = {{ B = "2", A = "1" }}
[[verify]]
kind = "gate"
program = "python3"
args = ["-m", "unittest"]
"#
    );
    let path = dir.join("s.toml");
    let eval = EvalScenario::check_source(&source, &path).unwrap();
    let spec = eval.eval().command.clone().expect("a command agent");
    assert_eq!(eval.eval().agent, None);
    assert_eq!(
        spec,
        CommandAgentSpec {
            adapter: AdapterKind::ClaudeCode,
            command: None,
            args: Vec::new(),
            env: vec![("A".into(), "1".into()), ("B".into(), "2".into())],
            task: "Fix it.".into(),
            timeout_ms: 600_000,
            settle_ms: None,
            permission: Permission::Full,
            clock: AgentClock::Host,
            sandbox: simtape_agent::AgentSandbox::On,
            expose: Vec::new(),
            line: 7,
            variants: Vec::new(),
            model: None,
            models: Default::default(),
        }
    );
}

#[test]
fn the_documented_command_agent_decodes() {
    // Goal: docs/scenario-format.md's `kind = "command"` example is a valid [agent].
    let dir = eval_dir("command-agent-doc");
    let source = format!(
        "{HEAD}[llm]\nfixture = \"llm.jsonl\"\n{}",
        doc_example("command agent")
    );
    let eval = EvalScenario::check_source(&source, &dir.join("s.toml")).unwrap();
    let spec = eval.eval().command.clone().unwrap();
    assert_eq!(spec.adapter, AdapterKind::ClaudeCode);
    assert_eq!(spec.timeout_ms, 300_000);
    assert_eq!(spec.env, [("PYTHONDONTWRITEBYTECODE".into(), "1".into())]);
    // And its model example: the name, the scenario's layer, a variant of another adapter.
    let source = format!(
        "{HEAD}[llm]\nfixture = \"llm.jsonl\"\n{}",
        doc_example("command agent models")
    );
    let eval = EvalScenario::check_source(&source, &dir.join("s.toml")).unwrap();
    let spec = eval.eval().command.clone().unwrap();
    assert_eq!(spec.model.as_deref(), Some("gpt-4.1"));
    assert_eq!(
        spec.models["gpt-4.1"][&AdapterKind::Aider],
        "openai/gpt-4.1-2025-04-14"
    );
    assert_eq!(spec.agent("qwen").unwrap().adapter, AdapterKind::QwenCode);
}

#[test]
fn agent_variants_decode_and_their_problems_are_placed() {
    // Goal: `[[agent.variant]]` tables decode in file order and an agent is chosen from
    // them or the adapters; a variant without a name, with a bad name, named twice or with
    // an unknown key is reported at its place.
    let head = format!(
        "{HEAD}[llm]\nfixture = \"llm.jsonl\"\n[agent]\nkind = \"command\"\nadapter = \"generic\"\ncommand = \"python3\"\nargs = [\"a.py\"]\ntask = \"Go.\"\nenv = {{ A = \"1\" }}\n"
    );
    let source = format!(
        "{head}[[agent.variant]]\nname = \"b\"\nargs = [\"b.py\"]\nenv = {{ A = \"2\", B = \"3\" }}\n[[agent.variant]]\nname = \"cc\"\nadapter = \"claude-code\"\n"
    );
    let dir = eval_dir("agent-variants");
    let eval = EvalScenario::check_source(&source, &dir.join("s.toml")).unwrap();
    let spec = eval.eval().command.clone().unwrap();
    let names: Vec<&str> = spec.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["b", "cc"]);
    let b = spec.agent("b").unwrap();
    assert_eq!(
        (b.command.as_deref(), b.args.as_slice()),
        (Some("python3"), &["b.py".to_string()][..])
    );
    assert_eq!(b.env, [("A".into(), "2".into()), ("B".into(), "3".into())]);
    let cc = spec.agent("cc").unwrap();
    assert_eq!(
        (cc.adapter, cc.command.as_deref(), cc.args.len()),
        (AdapterKind::ClaudeCode, None, 0)
    );
    assert_eq!(spec.agent("codex").unwrap().adapter, AdapterKind::Codex);
    let unknown = spec.agent("nope").unwrap_err().to_string();
    assert!(
        unknown.starts_with("unknown agent \"nope\": expected one of b, cc, claude-code"),
        "{unknown}"
    );
    let source = format!(
        "{head}[[agent.variant]]\nname = \"b\"\n[[agent.variant]]\nname = \"b\"\n[[agent.variant]]\nname = \"Big\"\n[[agent.variant]]\nargs = []\nshell = \"x\"\n"
    );
    let found = problems(&source).join("\n");
    assert!(
        found.contains("agent variant \"b\" is named twice"),
        "{found}"
    );
    assert!(
        found.contains("field `agent.variant[2].name`: expected a variant name"),
        "{found}"
    );
    assert!(found.contains("expected the variant's name"), "{found}");
    assert!(found.contains("unknown key for [[agent.variant]], expected one of `name`, `adapter`, `model`, `command`, `args`, `env`"), "{found}");
}

#[test]
fn a_command_agent_names_a_model_and_its_ids_per_adapter() {
    // Goal: `[agent] model`, the scenario's registry layer `[agent.models."NAME"]` and a
    // variant's `model` decode; an unknown adapter or an empty id in the layer is reported at
    // its place.
    let head = format!(
        "{HEAD}[llm]\nfixture = \"llm.jsonl\"\n[agent]\nkind = \"command\"\nadapter = \"codex\"\ntask = \"Go.\"\nmodel = \"gpt-4.1\"\n"
    );
    let source = format!(
        "{head}[agent.models.\"gpt-4.1\"]\ncodex = \"gpt-4.1-2025-04-14\"\nqwen-code = \"q\"\n[[agent.variant]]\nname = \"big\"\nmodel = \"gpt-5\"\n"
    );
    let dir = eval_dir("agent-models");
    let eval = EvalScenario::check_source(&source, &dir.join("s.toml")).unwrap();
    let spec = eval.eval().command.clone().unwrap();
    assert_eq!(spec.model.as_deref(), Some("gpt-4.1"));
    let ids = &spec.models["gpt-4.1"];
    assert_eq!(ids[&AdapterKind::Codex], "gpt-4.1-2025-04-14");
    assert_eq!(ids[&AdapterKind::QwenCode], "q");
    assert_eq!(spec.agent("big").unwrap().model.as_deref(), Some("gpt-5"));
    assert_eq!(
        spec.agent("aider").unwrap().model.as_deref(),
        Some("gpt-4.1")
    );
    let source = format!(
        "{head}[agent.models.\"gpt-4.1\"]\nkodex = \"a\"\naider = \"\"\n[agent.models.m]\n"
    );
    let found = problems(&source).join("\n");
    assert!(
        found.contains("field `agent.models.\"gpt-4.1\".kodex`: unknown adapter, expected one of `claude-code`"),
        "{found}"
    );
    assert!(
        found.contains("field `agent.models.\"gpt-4.1\".aider`: expected a model id (not empty)"),
        "{found}"
    );
    let empty = format!("{HEAD}[llm]\nfixture = \"llm.jsonl\"\n[agent]\nkind = \"command\"\nadapter = \"codex\"\ntask = \"Go.\"\nmodel = \"\"\n");
    let found = problems(&empty).join("\n");
    assert!(
        found.contains("field `agent.model`: expected a model name like"),
        "{found}"
    );
}

#[test]
fn command_agent_problems_are_placed_at_their_fields() {
    // Goal: an unknown kind, adapter or permission, a generic adapter without a program, a
    // zero timeout and a key of the built-in loop are each reported at their place.
    let source = format!(
        r#"{HEAD}[llm]
fixture = "llm.jsonl"
[agent]
kind = "command"
adapter = "generic"
task = "Go."
timeout = "0s"
permission = "root"
max_turns = 3
"#
    );
    assert_eq!(
        problems(&source),
        [
            "5:1: field `agent.command`: expected the program to run (the generic adapter has no usual binary), found nothing",
            "9:11: field `agent.timeout`: expected a timeout longer than 0s, found \"0s\"",
            "10:14: field `agent.permission`: expected a permission `full`, `read-only`, found \"root\"",
            "11:1: field `agent.max_turns`: unknown key for kind = \"command\", expected one of `kind`, `adapter`, `model`, `models`, `command`, `args`, `task`, `env`, `timeout`, `settle`, `permission`, `clock`, `sandbox`, `expose`, `variant`",
        ]
    );
    let source = format!(
        "{HEAD}[llm]\nfixture = \"llm.jsonl\"\n[agent]\nkind = \"remote\"\nadapter = \"aider\"\n"
    );
    let found = problems(&source);
    assert!(
        found[0].contains("expected an agent kind `builtin`, `command`, found \"remote\""),
        "{found:?}"
    );
}

#[test]
fn normalize_rules_decode_and_their_problems_are_placed() {
    // Goal: `[normalize]` gives the scenario's pointers and compiled patterns; a pointer
    // without `/`, a pattern that does not compile, a rule without `replace` and an unknown
    // key are each reported at their place.
    let good = format!(
        "{HEAD}{TASK}[normalize]\npointers = [\"/metadata/user_id\"]\npatterns = [{{ match = \"run [0-9]+\", replace = \"run <n>\" }}]\n"
    );
    let eval = EvalScenario::check_source(&good, Path::new("s.toml")).unwrap();
    let normalize = &eval.eval().normalize;
    assert_eq!(normalize.pointers, ["/metadata/user_id"]);
    assert_eq!(normalize.patterns[0].0.as_str(), "run [0-9]+");
    assert_eq!(normalize.patterns[0].1, "run <n>");
    let bad = format!(
        "{HEAD}{TASK}[normalize]\npointers = [\"metadata\"]\npatterns = [{{ match = \"(\" , replace = \"x\" }}, {{ match = \"a\" }}]\ncolour = 1\n"
    );
    let found = problems(&bad);
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(
        found[0].starts_with(
            "7:13: field `normalize.pointers[0]`: expected a JSON pointer starting with `/`"
        ),
        "{found:?}"
    );
    assert!(
        found[1].starts_with(
            "8:23: field `normalize.patterns[0].match`: expected a regular expression, found \"(\""
        ),
        "{found:?}"
    );
    assert!(
        found[2].contains("field `normalize.patterns[1].replace`") && found[2].contains("replace"),
        "{found:?}"
    );
    assert!(
        found[3].contains("field `normalize.colour`: unknown key"),
        "{found:?}"
    );
}

/// The MCP fault kinds as a message lists them: `` `a`, `b`, `c` ``.
fn kinds() -> String {
    let quoted: Vec<String> = KINDS.iter().map(|(kind, _)| format!("`{kind}`")).collect();
    quoted.join(", ")
}
