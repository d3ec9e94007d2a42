//! The run-and-test evidence contract (`simtape_eval::evidence`): `GATES.json` beside the
//! other artifacts, and `evidence/plan.json`, `evidence/tests.json`, `evidence/run_log.txt`
//! and `evidence/artifacts.json` below them. This file gathers what the documents say from
//! the scenario and the run; the documents themselves are the eval crate's.

use std::path::{Path, PathBuf};

use simtape::tape::sha256_hex;
use simtape_agent::{Check, EvalReport, EvalScenario, GateRun};
use simtape_eval::evidence::{
    normalize_log, ArtifactsJson, BaseRun, EnvPolicy, GateCommand, GateExit, GateTest, GatesJson,
    IoBoundary, NetworkPlan, PlanJson, TestsJson, TimeoutCaps, GATES_FORMAT, PLAN_FORMAT,
};
use simtape_eval::run_json::{to_json_pretty, ArtifactJson};

use super::EvidenceError;
use super::{put, RunEvidence};

/// The contract's files, relative to the evidence directory.
const GATES_FILE: &str = "GATES.json";
const PLAN_FILE: &str = "evidence/plan.json";
const TESTS_FILE: &str = "evidence/tests.json";
const RUN_LOG_FILE: &str = "evidence/run_log.txt";
const ARTIFACTS_FILE: &str = "evidence/artifacts.json";

/// What the `cwd` of a gate run inside the simulation says.
const IN_PROCESS: &str = "process";

/// How each gate went on the base tree, in file order of the gates, or why it was not run.
pub type Before = Result<Vec<GateRun>, NotRun>;

/// Why the gates were not run on the base tree (`tests.json` says so for each gate).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotRun {
    /// The gates run inside the simulation, on its final tree only.
    #[error(
        "not run: the gate runs inside the simulation, where only the final tree's run exists"
    )]
    InsideSimulation,
    /// No `true` program to stand in for the agent.
    #[error("not run: no `true` program on PATH to stand in for the agent")]
    NoStandIn,
    /// The stand-in run could not start.
    #[error("not run: {}: {source}", scenario.display())]
    Failed {
        /// The scenario file.
        scenario: PathBuf,
        /// Why the run could not start.
        source: Box<crate::ServeError>,
    },
}

/// Writes the contract's files into `dir`; `artifacts` are the files already written there
/// (their paths), `replay` the command that replays the run from `dir`.
pub(super) fn write(
    dir: &Path,
    run: &RunEvidence<'_>,
    artifacts: &[PathBuf],
    replay: &str,
    before: &Before,
) -> Result<(), EvidenceError> {
    let eval = run.scenario;
    let commands = gate_commands(eval);
    let gates = GatesJson {
        format: GATES_FORMAT,
        scenario: eval.scenario().name().to_string(),
        seed: run.seed,
        io_boundary: io_root(eval),
        offline: offline(eval),
        commands: commands.clone(),
        replay: replay.to_string(),
    };
    let mut written = artifacts.to_vec();
    written.push(put(dir, GATES_FILE, to_json_pretty(&gates).as_bytes())?);
    std::fs::create_dir_all(dir.join("evidence")).map_err(EvidenceError::io(dir))?;
    let mut paths: Vec<String> = written.iter().map(|path| relative(dir, path)).collect();
    paths.extend([PLAN_FILE, TESTS_FILE, RUN_LOG_FILE, ARTIFACTS_FILE].map(String::from));
    paths.sort();
    let plan = plan(run, &commands, paths);
    written.push(put(dir, PLAN_FILE, to_json_pretty(&plan).as_bytes())?);
    let tests = tests(run.report, &commands, before);
    written.push(put(dir, TESTS_FILE, to_json_pretty(&tests).as_bytes())?);
    let log = run_log(dir, run, &tests);
    written.push(put(dir, RUN_LOG_FILE, log.as_bytes())?);
    let mut hashed = Vec::with_capacity(written.len());
    for path in &written {
        let bytes = std::fs::read(path).map_err(EvidenceError::io(path))?;
        hashed.push(ArtifactJson {
            file: relative(dir, path),
            bytes: bytes.len(),
            sha256: sha256_hex(&bytes),
        });
    }
    let artifacts = ArtifactsJson::new(hashed);
    put(dir, ARTIFACTS_FILE, to_json_pretty(&artifacts).as_bytes())?;
    Ok(())
}

/// Returns whether the scenario's gates run outside the simulation, in an agent program's
/// working directory (so they can be run on the base tree too).
pub(super) fn gates_run_outside(eval: &EvalScenario) -> bool {
    eval.eval().command.is_some()
        && eval
            .eval()
            .verify
            .iter()
            .any(|v| matches!(v.check, Check::Gate { .. }))
}

/// Returns the `[fs]` root as the scenario file writes it (relative to the file).
fn io_root(eval: &EvalScenario) -> Option<String> {
    let root = eval.scenario().fs_root()?;
    let base = eval.scenario().path().parent().unwrap_or(Path::new(""));
    Some(
        root.strip_prefix(base)
            .unwrap_or(&root)
            .display()
            .to_string(),
    )
}

/// Whether the network policy lets nothing through.
fn offline(eval: &EvalScenario) -> bool {
    eval.scenario()
        .network()
        .is_none_or(|network| network.rules().is_empty())
}

fn gate_commands(eval: &EvalScenario) -> Vec<GateCommand> {
    let cwd = match (eval.eval().command.is_some(), io_root(eval)) {
        (true, Some(root)) => root,
        (true, None) => ".".to_string(),
        (false, _) => IN_PROCESS.to_string(),
    };
    eval.eval()
        .verify
        .iter()
        .filter_map(|verifier| match &verifier.check {
            Check::Gate {
                program,
                args,
                exit_code,
            } => Some(GateCommand {
                name: verifier.name.clone(),
                argv: std::iter::once(program).chain(args).cloned().collect(),
                cwd: cwd.clone(),
                expect_exit: *exit_code,
            }),
            _ => None,
        })
        .collect()
}

fn plan(run: &RunEvidence<'_>, commands: &[GateCommand], paths: Vec<String>) -> PlanJson {
    let eval = run.scenario;
    let limits = eval.scenario().limits();
    let command = eval.eval().command.as_ref();
    let root = io_root(eval);
    let writes = match (&root, command) {
        (None, _) => "none",
        (Some(_), Some(_)) => "scratch copy",
        (Some(_), None) => "overlay",
    };
    let allow = eval.scenario().network().map_or_else(Vec::new, |network| {
        network.rules().iter().map(ToString::to_string).collect()
    });
    let sets = command.map(|spec| {
        let mut names: Vec<String> = spec.env.iter().map(|(name, _)| name.clone()).collect();
        names.sort();
        names.dedup();
        names
    });
    let gate_timeout_ms = crate::limits::GATE_TIMEOUT.as_millis();
    PlanJson {
        format: PLAN_FORMAT,
        scenario: eval.scenario().name().to_string(),
        seed: run.seed,
        gate_commands: commands.iter().map(|c| c.argv.clone()).collect(),
        io_boundary: IoBoundary { root, writes },
        network: NetworkPlan {
            offline: allow.is_empty(),
            allow,
        },
        env_policy: EnvPolicy {
            simulation: "none",
            agent_program_sets: sets,
        },
        timeout_caps: TimeoutCaps {
            virtual_time_max_ns: limits.virtual_time_max_ns,
            events_max: limits.events_max,
            tape_bytes_max: limits.tape_bytes_max,
            agent_timeout_ms: command.map(|spec| spec.timeout_ms),
            gate_timeout_ms: command
                .map(|_| u64::try_from(gate_timeout_ms).expect("the gate timeout fits")),
        },
        artifact_paths: paths,
    }
}

fn tests(report: &EvalReport, commands: &[GateCommand], before: &Before) -> TestsJson {
    let exit = |run: &GateRun| GateExit {
        code: run.exit_code,
        error: run.error.clone(),
    };
    let gates = commands
        .iter()
        .enumerate()
        .map(|(index, command)| {
            let after = report.gates.get(index).map(exit);
            let before = match before {
                Ok(runs) => runs
                    .get(index)
                    .map(exit)
                    .ok_or_else(|| "the base tree's run stopped before this gate".to_string()),
                Err(why) => Err(why.to_string()),
            };
            let before = match &before {
                Ok(run) => BaseRun::Ran(run),
                Err(why) => BaseRun::NotRun(why),
            };
            GateTest::new(command, after.as_ref(), before)
        })
        .collect();
    TestsJson::new(&report.verdict, &report.verifiers, gates)
}

/// The run's story, normalized: the verdict, the agent's steps, the verifiers and gates,
/// the outcomes and the changes, then an agent program's stderr.
fn run_log(dir: &Path, run: &RunEvidence<'_>, tests: &TestsJson) -> String {
    let report = run.report;
    let mut lines = vec![
        format!(
            "scenario {} seed {}",
            run.scenario.scenario().name(),
            run.seed
        ),
        format!("verdict {}", report.verdict),
    ];
    if let Some(transcript) = &report.transcript {
        for (session, turns) in transcript.sections() {
            lines.push(session.line(turns));
        }
        for call in transcript.calls() {
            lines.push(format!("tool call {} {}", call.name, call.arguments));
        }
        if let Some(answer) = &transcript.answer {
            lines.push(format!("answer {answer}"));
        }
        lines.push(format!(
            "agent ended by {} after {} turn(s), {} retr(ies)",
            transcript.end_label(),
            transcript.turns.len(),
            transcript.retries
        ));
    }
    for result in &report.verifiers {
        let mark = if result.held { "held" } else { "FAILED" };
        lines.push(format!("verify {mark} {}: {}", result.name, result.saw));
    }
    for gate in &tests.gates {
        let code = gate
            .exit_code
            .map_or("none".to_string(), |code| code.to_string());
        lines.push(format!(
            "gate {}: {} exit {code} (expected {})",
            gate.name,
            gate.argv.join(" "),
            gate.expect_exit
        ));
    }
    for (name, value) in &report.run.outcomes {
        lines.push(format!("outcome {name} = {value}"));
    }
    if let Some(diff) = &report.run.fs_diff {
        let mut changes: Vec<String> = diff
            .added
            .iter()
            .map(|f| format!("added {}", f.path))
            .chain(diff.modified.iter().map(|f| format!("modified {}", f.path)))
            .chain(diff.deleted.iter().map(|f| format!("deleted {}", f.path)))
            .collect();
        changes.sort();
        lines.extend(changes.into_iter().map(|change| format!("fs {change}")));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    let stderr = dir.join(crate::command::SESSION_FILES[3]);
    if run.scenario.eval().command.is_some() {
        if let Ok(bytes) = std::fs::read(&stderr) {
            text.push_str("agent stderr:\n");
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    normalize_log(&text, &places(dir, run))
}

/// The absolute places a log may name, and what it shows instead.
fn places(dir: &Path, run: &RunEvidence<'_>) -> Vec<(String, String)> {
    let scenario_dir = run
        .scenario
        .scenario()
        .path()
        .parent()
        .map(Path::to_path_buf);
    let mut places = Vec::new();
    // Both spellings: as given made absolute, and with symlinks resolved.
    let mut add = |path: Option<PathBuf>, name: &str| {
        let forms = path
            .into_iter()
            .flat_map(|p| [std::path::absolute(&p).ok(), p.canonicalize().ok()])
            .flatten();
        for form in forms {
            places.push((form.display().to_string(), name.to_string()));
        }
    };
    add(Some(dir.to_path_buf()), "<evidence>");
    add(scenario_dir, "<scenario-dir>");
    add(Some(std::env::temp_dir()), "<tmp>");
    add(std::env::var_os("HOME").map(PathBuf::from), "~");
    places
}

/// Returns `path` relative to `dir` when it is inside it, else its file name.
fn relative(dir: &Path, path: &Path) -> String {
    match path.strip_prefix(dir) {
        Ok(inside) => inside.display().to_string(),
        Err(_) => path
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned()),
    }
}
