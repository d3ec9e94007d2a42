//! The agent sandbox end to end (docs/sandbox.md): an agent program written for these tests
//! (Python's standard library only) tries to change the host, read it, reach the network and
//! leave processes behind; under `simtape run` none of it gets through, and the tape names
//! what it tried.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{scratch, simtape, text};

/// Writes `agent.py`, a project `repo/` and a scenario around them; `agent_env` and `extra`
/// go into the scenario. Returns the scenario's path.
fn scenario(dir: &Path, agent: &str, agent_env: &str, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("repo")).unwrap();
    std::fs::write(dir.join("repo/readme.txt"), "the project\n").unwrap();
    std::fs::write(dir.join("agent.py"), agent).unwrap();
    std::fs::write(dir.join("llm.jsonl"), "{\"simtape_llm\": 1}\n").unwrap();
    let toml = format!(
        r#"[scenario]
name = "contained"
seeds = [0]

[fs]
root = "repo"

[llm]
fixture = "llm.jsonl"

[agent]
kind = "command"
adapter = "generic"
command = "python3"
args = [{agent:?}]
task = "Try everything."
timeout = "20s"
env = {{ {agent_env} }}
{extra}"#,
        agent = dir.join("agent.py").display().to_string(),
    );
    let path = dir.join("contained.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Every file under `dir`, with its bytes, in path order.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// The tape as JSON lines.
fn tape_text(tape: &Path) -> String {
    let output = simtape()
        .args(["tape", "export", "--jsonl"])
        .arg(tape)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Tries to write outside its project (/tmp, HOME, the project's real path), to read the
/// host (its passwd, shadow, a secret beside the scenario, the host HOME), writes in its
/// project, and prints what happened as JSON (its answer).
const ESCAPES: &str = r#"
import json, os
results = {}
def attempt(name, action):
    try:
        action()
        results[name] = "ok"
    except Exception as error:
        results[name] = type(error).__name__
def write(path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as file:
        file.write("escaped\n")
attempt("write_tmp", lambda: write("/tmp/simtape-escape-test.txt"))
attempt("write_home", lambda: write(os.path.expanduser("~/escape.txt")))
attempt("write_real_root", lambda: write(os.environ["REAL_ROOT"] + "/escaped.txt"))
attempt("read_shadow", lambda: open("/etc/shadow").read())
attempt("read_secret", lambda: open(os.environ["SECRET"]).read())
attempt("list_host_home", lambda: os.listdir(os.environ["HOST_HOME"]))
results["passwd_has_host_users"] = "daemon:" in open("/etc/passwd").read()
results["uid"] = os.getuid()
write("notes.txt")
print(json.dumps(results, sort_keys=True))
"#;

#[test]
fn a_sandboxed_agent_leaves_the_host_as_it_was() {
    let dir = scratch("sandbox", "escapes");
    let host_home = dir.join("host-home");
    std::fs::create_dir_all(&host_home).unwrap();
    std::fs::write(host_home.join(".token"), "t0ken").unwrap();
    std::fs::write(dir.join("secret.txt"), "s3cret").unwrap();
    let real_root = dir.join("repo");
    let env = format!(
        "REAL_ROOT = {:?}, SECRET = {:?}, HOST_HOME = {:?}",
        real_root.display().to_string(),
        dir.join("secret.txt").display().to_string(),
        host_home.display().to_string(),
    );
    let verify = r#"
[[verify]]
kind = "fs"
path = "notes.txt"
state = "added"
contains = "escaped"
"#;
    let scenario = scenario(&dir, ESCAPES, &env, verify);
    let before = tree(&dir);
    let _ = std::fs::remove_file("/tmp/simtape-escape-test.txt");
    let tape = dir.join("run.tape");
    let output = simtape()
        .arg("run")
        .arg(&scenario)
        .arg("--tape")
        .arg(&tape)
        .env("HOME", &host_home)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("sandbox namespaces"),
        "the verdict says it: {shown}"
    );
    // Every write outside the project succeeded, inside the sandbox only; no read did.
    let answer = shown
        .lines()
        .find_map(|line| line.strip_prefix("answer: "))
        .unwrap();
    let results: serde_json::Value = serde_json::from_str(answer).unwrap();
    assert_eq!(
        results,
        serde_json::json!({
            "write_tmp": "ok", "write_home": "ok", "write_real_root": "ok",
            "read_shadow": "FileNotFoundError", "read_secret": "FileNotFoundError",
            "list_host_home": "FileNotFoundError", "passwd_has_host_users": false, "uid": 1000,
        })
    );
    // The host is byte-identical: the scenario's directory (its project, the secret, the
    // host HOME), and /tmp has no escape.
    let after: Vec<(PathBuf, Vec<u8>)> = tree(&dir)
        .into_iter()
        .filter(|(path, _)| !path.starts_with(&tape) && !path.starts_with(dir.join("run.tape.cas")))
        .collect();
    assert_eq!(after, before);
    assert!(!Path::new("/tmp/simtape-escape-test.txt").exists());
    // The project write is the run's fs diff (the verifier held); the others are on the tape:
    // the real root's path, its HOME and /tmp (a program's own writes, not a CLI's state).
    let recorded = tape_text(&tape);
    assert!(recorded.contains("/repo/escaped.txt"), "on the tape");
    assert!(recorded.contains("/home/agent/escape.txt"), "on the tape");
    assert!(
        recorded.contains("/tmp/simtape-escape-test.txt"),
        "on the tape"
    );
    let evidence = dir.join("evidence");
    let output = simtape()
        .arg("run")
        .arg(&scenario)
        .arg("--evidence")
        .arg(&evidence)
        .env("HOME", &host_home)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let meta = std::fs::read_to_string(evidence.join("session.meta.json")).unwrap();
    assert!(meta.contains("/home/agent/escape.txt"), "{meta}");
    assert!(meta.contains("/tmp/simtape-escape-test.txt"), "{meta}");
    assert!(
        recorded.contains("\"sandbox\":\"namespaces\""),
        "the header says it"
    );
}

/// Connects to a loopback server of the host's and looks a name up; prints what happened.
const NETWORK: &str = r#"
import json, os, socket
results = {}
try:
    socket.create_connection(("127.0.0.1", int(os.environ["HOST_PORT"])), timeout=5).close()
    results["loopback"] = "connected"
except OSError as error:
    results["loopback"] = type(error).__name__
try:
    results["lookup"] = socket.gethostbyname("api.example.org").split(".")[0]
except OSError as error:
    results["lookup"] = type(error).__name__
print(json.dumps(results, sort_keys=True))
"#;

#[test]
fn a_connection_past_the_policy_is_refused_named_and_blocks_the_run() {
    let dir = scratch("sandbox", "network");
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let env = format!("HOST_PORT = \"{port}\"");
    let scenario = scenario(&dir, NETWORK, &env, "\n[network]\nallow = []\n");
    let tape = dir.join("run.tape");
    let output = simtape()
        .arg("run")
        .arg(&scenario)
        .arg("--tape")
        .arg(&tape)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(4), "BLOCKED: {shown}");
    assert!(shown.contains("BLOCKED (net_denied)"), "{shown}");
    assert!(shown.contains(&format!("127.0.0.1:{port}")), "{shown}");
    assert!(
        shown.contains(r#"{"lookup": "198", "loopback": "ConnectionRefusedError"}"#),
        "refused, and the name answered by simtape: {shown}"
    );
    let recorded = tape_text(&tape);
    assert!(
        recorded.contains("api.example.org"),
        "the lookup is on the tape"
    );
    assert!(
        recorded.contains(&format!("{{\"connect\":[\"127.0.0.1\",{port}]}}")),
        "the attempt went through the network actor, onto the tape: {recorded}"
    );
    // Allowed by the policy, the same connection reaches the host's server.
    let allowed = std::fs::read_to_string(&scenario)
        .unwrap()
        .replace("allow = []", &format!("allow = [\"127.0.0.1:{port}\"]"));
    std::fs::write(&scenario, allowed).unwrap();
    let output = simtape().arg("run").arg(&scenario).output().unwrap();
    let shown = text(&output);
    assert!(shown.contains(r#""loopback": "connected""#), "{shown}");
    drop(server);
}

/// Starts a setsid double-forked daemon and a child that ignores SIGTERM (each a `sleep`
/// whose duration is the test's marker), then sleeps or exits as `MODE` says.
const LINGERERS: &str = r#"
import os, subprocess, sys, time
marker = os.environ["MARKER"]
subprocess.Popen(["sh", "-c", "(setsid sleep %s1 &) ; true" % marker])
subprocess.Popen(["sh", "-c", "trap '' TERM; exec sleep %s2" % marker])
time.sleep(0.3)
print("started", flush=True)
if os.environ["MODE"] == "hang":
    time.sleep(600)
"#;

/// The agent's lingerers: processes with `marker`, the agent itself left out.
fn lingering(marker: &str) -> Vec<String> {
    let all = crate::common::processes_with(marker);
    all.into_iter()
        .filter(|line| !line.contains("python"))
        .collect()
}

/// Waits up to two seconds for every process with `marker` to be gone.
fn gone(marker: &str) -> Vec<String> {
    let started = Instant::now();
    loop {
        let left = lingering(marker);
        if left.is_empty() || started.elapsed() > Duration::from_secs(2) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn nothing_an_agent_started_outlives_its_run_however_the_run_ends() {
    // Four endings: the agent exits, it runs over its timeout, simtape gets Ctrl-C, and
    // simtape is killed with SIGKILL. After each, no process of the agent's is alive and
    // simtape's temp directory holds nothing.
    let dir = scratch("sandbox", "lingerers");
    for (index, (mode, ending)) in [
        ("exit", "exits"),
        ("hang", "timeout"),
        ("hang", "sigint"),
        ("hang", "sigkill"),
    ]
    .into_iter()
    .enumerate()
    {
        let case = dir.join(ending);
        let temp = case.join("tmp");
        std::fs::create_dir_all(&temp).unwrap();
        let marker = format!("73{index}{}", std::process::id() % 1000);
        let env = format!("MARKER = \"{marker}\", MODE = \"{mode}\"");
        let scenario = scenario(&case, LINGERERS, &env, "");
        if ending == "timeout" {
            let text = std::fs::read_to_string(&scenario).unwrap();
            std::fs::write(
                &scenario,
                text.replace("timeout = \"20s\"", "timeout = \"2s\""),
            )
            .unwrap();
        }
        let child = simtape()
            .arg("run")
            .arg(&scenario)
            .env("TMPDIR", &temp)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if matches!(ending, "sigint" | "sigkill") {
            // Once the agent has started everything (its lingerers are alive)…
            let started = Instant::now();
            while lingering(&marker).len() < 2 && started.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert_eq!(
                lingering(&marker).len(),
                2,
                "{ending}: the agent's lingerers started"
            );
            let signal = if ending == "sigint" { "-INT" } else { "-KILL" };
            let sent = Command::new("kill")
                .arg(signal)
                .arg(child.id().to_string())
                .status()
                .unwrap();
            assert!(sent.success());
        }
        let output = child.wait_with_output().unwrap();
        let shown = text(&output);
        if ending == "timeout" {
            assert_eq!(output.status.code(), Some(3), "{shown}");
            assert!(shown.contains("ran over its timeout"), "{shown}");
        }
        assert_eq!(gone(&marker), Vec::<String>::new(), "{ending}: {shown}");
        let left: Vec<_> = std::fs::read_dir(&temp).unwrap().flatten().collect();
        assert!(left.is_empty(), "{ending}: temp directories left: {left:?}");
    }
}

#[test]
fn without_user_namespaces_a_run_is_refused_naming_the_cause_and_the_opt_out() {
    // A user namespace whose limit of nested user namespaces is 0 stands in for a system
    // without them: the run exits 2 before anything starts, naming the cause and
    // --no-sandbox; with --no-sandbox it runs, and says it ran unconfined.
    let dir = scratch("sandbox", "unavailable");
    let scenario = scenario(&dir, "print('hi')\n", "", "");
    let probe = Command::new("unshare").args(["-Ur", "true"]).status();
    if !probe.is_ok_and(|status| status.success()) {
        eprintln!("skipped: unshare -Ur is not available here");
        return;
    }
    let run = |flags: &str| {
        let script = format!(
            "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" run \"$1\" {flags}"
        );
        Command::new("unshare")
            .args(["-Ur", "sh", "-c", &script])
            .arg(env!("CARGO_BIN_EXE_simtape"))
            .arg(&scenario)
            .output()
            .unwrap()
    };
    let refused = run("");
    let shown = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{shown}");
    assert!(shown.contains("user namespaces are disabled"), "{shown}");
    assert!(shown.contains("--no-sandbox"), "{shown}");
    let unconfined = run("--no-sandbox");
    let shown = text(&unconfined);
    assert_eq!(unconfined.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("sandbox off (the agent ran on the host, unconfined)"),
        "{shown}"
    );
}

#[test]
fn a_program_whose_interpreter_is_not_visible_is_an_input_error_naming_it() {
    let dir = scratch("sandbox", "invisible");
    let scenario = scenario(&dir, "print('hi')\n", "", "");
    std::fs::write(
        dir.join("agent.sh"),
        "#!/opt/simtape-nowhere/python3\nprint('hi')\n",
    )
    .unwrap();
    let text_of = std::fs::read_to_string(&scenario).unwrap();
    let start = text_of.find("command = ").unwrap();
    let end = text_of.find("task = ").unwrap();
    let changed = format!(
        "{}command = \"./agent.sh\"\n{}",
        &text_of[..start],
        &text_of[end..]
    );
    std::fs::write(&scenario, changed).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("agent.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = simtape().arg("run").arg(&scenario).output().unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("/opt/simtape-nowhere/python3 is not visible inside"),
        "{shown}"
    );
    assert!(shown.contains("[agent] expose"), "{shown}");
}

#[test]
fn an_exposed_path_that_does_not_exist_is_an_input_error_naming_it() {
    // Goal: `[agent] expose` naming a missing path stops the run before anything starts
    // (exit 2, the path and the key named), not as a sandbox failing mid-run.
    let dir = scratch("sandbox", "expose-missing");
    let scenario = scenario(&dir, "print('hi')\n", "", "expose = [\"gone\"]\n");
    let output = simtape().arg("run").arg(&scenario).output().unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(2), "{shown}");
    assert!(shown.contains("[agent] expose"), "{shown}");
    assert!(shown.contains("/gone does not exist"), "{shown}");
}

#[test]
fn a_sandbox_failing_once_the_run_began_is_an_error_naming_the_step_and_the_tape_verifies() {
    // Goal: a sandbox that fails after the run has begun (here on demand, at a named step)
    // ends the run as an ERROR naming the step (exit 3), and the tape written so far
    // verifies.
    let dir = scratch("sandbox", "fails-mid-run");
    let scenario = scenario(&dir, "print('hi')\n", "", "");
    let tape = dir.join("run.tape");
    let output = simtape()
        .arg("run")
        .arg(&scenario)
        .arg("--tape")
        .arg(&tape)
        .env("SIMTAPE_SANDBOX_FAIL", "mount the project")
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(3), "{shown}");
    assert!(
        shown.contains("the agent sandbox failed to mount the project"),
        "{shown}"
    );
    let verified = simtape()
        .args(["tape", "verify"])
        .arg(&tape)
        .output()
        .unwrap();
    let said = text(&verified);
    assert_eq!(verified.status.code(), Some(0), "{said}");
    assert!(said.contains("verdict: error"), "{said}");
    assert!(said.contains("failed to mount the project"), "{said}");
}

#[test]
fn serve_runs_its_command_in_the_sandbox() {
    // `simtape serve … -- CMD`: the command's escapes leave the host as it was, and the
    // tape header says the sandbox.
    let dir = scratch("sandbox", "serve");
    let host_home = dir.join("host-home");
    std::fs::create_dir_all(&host_home).unwrap();
    let env = format!(
        "REAL_ROOT = {:?}, SECRET = {:?}, HOST_HOME = {:?}",
        dir.join("repo").display().to_string(),
        dir.join("secret.txt").display().to_string(),
        host_home.display().to_string(),
    );
    std::fs::write(dir.join("secret.txt"), "s3cret").unwrap();
    let scenario = scenario(&dir, ESCAPES, &env, "");
    let before = tree(&dir);
    let tape = dir.join("serve.tape");
    let output = simtape()
        .arg("serve")
        .arg(&scenario)
        .arg("--tape")
        .arg(&tape)
        .arg("--")
        .arg("python3")
        .arg(dir.join("agent.py"))
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains(r#""read_secret": "FileNotFoundError""#),
        "{shown}"
    );
    let after: Vec<(PathBuf, Vec<u8>)> = tree(&dir)
        .into_iter()
        .filter(|(path, _)| !path.starts_with(&tape))
        .collect();
    assert_eq!(after, before, "the host is as it was");
    assert!(tape_text(&tape).contains("\"sandbox\":\"namespaces\""));
    let verified = simtape()
        .args(["tape", "verify"])
        .arg(&tape)
        .output()
        .unwrap();
    assert_eq!(verified.status.code(), Some(0), "{}", text(&verified));
}

#[test]
fn a_real_process_program_runs_in_the_sandbox() {
    // A `[process]` program in real mode writes into its working directory and reads the
    // host's shadow file: the write stays in its sandbox, the read fails, and what it printed
    // is on the tape (its recorded working directory is the host path, as before).
    let dir = scratch("sandbox", "process-real");
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("kept.txt"), "kept\n").unwrap();
    let source = format!(
        r#"[scenario]
name = "real-process"

[process]
programs = {{ sh = "real" }}

[[task]]
name = "script"
steps = [
  {{ run = "sh", args = ["-c", "echo x > escaped.txt; rm kept.txt; cat /etc/shadow; id -u; echo done"], cwd = {repo:?}, log = "ran" }},
  {{ outcome = "ran", value = true }},
]

[[verify]]
kind = "outcome"
name = "ran"
value = true
"#,
        repo = repo.display().to_string()
    );
    let scenario = dir.join("real.toml");
    std::fs::write(&scenario, source).unwrap();
    let before = tree(&repo);
    let tape = dir.join("run.tape");
    let output = simtape()
        .arg("run")
        .arg(&scenario)
        .arg("--tape")
        .arg(&tape)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(tree(&repo), before, "the host's directory is as it was");
    let recorded = tape_text(&tape);
    assert!(recorded.contains("1000\\ndone\\n"), "{recorded}");
    assert!(recorded.contains("/etc/shadow: No such file"), "{recorded}");
    // With --no-sandbox the same program runs on the host, and its write lands there.
    let output = simtape()
        .arg("run")
        .arg(&scenario)
        .arg("--no-sandbox")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(repo.join("escaped.txt").exists());
}

#[test]
fn check_says_whether_the_network_policy_covers_the_agent_program() {
    let dir = scratch("sandbox", "check");
    let scenario = scenario(&dir, "print('hi')\n", "", "");
    let output = simtape().arg("check").arg(&scenario).output().unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("[network] judges its own connections too"),
        "{shown}"
    );
    let off = std::fs::read_to_string(&scenario)
        .unwrap()
        .replace("task = ", "sandbox = \"off\"\ntask = ");
    std::fs::write(&scenario, off).unwrap();
    let output = simtape().arg("check").arg(&scenario).output().unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("[network] does not judge its connections"),
        "{shown}"
    );
}
