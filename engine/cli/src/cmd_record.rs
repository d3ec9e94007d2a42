//! `simtape record -- PROGRAM ARGS…`: runs an agent program once against a real provider and
//! leaves a scenario that replays it with no provider: the scenario (`new --command`'s
//! template), the loosened fixture and the project snapshot (`simtape_eval::recording`
//! decides both), the recording's tape. Everything is checked before anything is written.

use std::path::{Path, PathBuf};

use clap::Parser;
use simtape::tape::TapeReader;
use simtape_eval::recording::{loosened_fixture, snapshot_project};

use crate::cmd_new::program::ProgramScenario;
use crate::common::record::RecordProvider;
use crate::exit::{CliError, CliResult, Outcome};
use simtape_eval::reproduce::{command_line, quote};

/// The files a recording writes into its directory.
const SCENARIO_FILE: &str = "scenario.toml";
const FIXTURE_FILE: &str = "llm.jsonl";
const EXACT_FIXTURE_FILE: &str = "llm.recorded.jsonl";
const PROJECT_DIR: &str = "repo";
const TAPE_FILE: &str = "recording.tape";

/// `simtape record`'s flags.
#[derive(Debug, clap::Args)]
pub(crate) struct RecordArgs {
    /// The directory to write (absent or empty): scenario.toml, llm.jsonl (matched on each
    /// call's last message), llm.recorded.jsonl (matched on whole conversations), repo/ (the
    /// project) and recording.tape.
    #[arg(long, value_name = "DIR", default_value = "simtape-recording")]
    out: PathBuf,
    /// The provider's wire format (`openai` is Chat Completions); its key is read from
    /// OPENAI_API_KEY or ANTHROPIC_API_KEY in simtape's environment.
    #[arg(
        long,
        value_enum,
        value_name = "PROVIDER",
        default_value = "openai-chat"
    )]
    provider: RecordProvider,
    /// The provider's base URL, as its SDK takes it (default: OPENAI_BASE_URL or
    /// ANTHROPIC_BASE_URL when set, else the official API).
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// The project the program works in, copied into DIR/repo (default: the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// The task, handed to the program in SIMTAPE_TASK (default: "Run PROGRAM ARGS…").
    #[arg(long, value_name = "TEXT")]
    task: Option<String>,
    /// Run the program on the host, unconfined, instead of in simtape's sandbox.
    #[arg(long)]
    no_sandbox: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    command: Vec<String>,
}

pub(crate) fn run(args: &RecordArgs) -> CliResult {
    let provider = args.provider.provider();
    // As the SDKs and record mode's settings do: the flag, else OPENAI_BASE_URL or
    // ANTHROPIC_BASE_URL in simtape's environment, else the official API.
    let base_url = args
        .upstream
        .clone()
        .or_else(|| std::env::var(provider.base_url_variable()).ok())
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| provider.default_base_url().to_string());
    let nothing = "; nothing was written";
    // The key is read here, in the CLI: the simulation never reads the environment.
    let variable = provider.api_key_variable();
    if std::env::var(variable).map_or(true, |key| key.is_empty()) {
        return Err(CliError::Usage(format!(
            "record needs the provider's API key in {variable}, which is not set (any value \
             for a local provider that checks none){nothing}"
        )));
    }
    simtape_serve::outside::reachable(&base_url).map_err(|why| {
        CliError::Usage(format!(
            "the provider at {base_url} is unreachable: {why}{nothing}"
        ))
    })?;
    if args
        .task
        .as_deref()
        .is_some_and(|task| task.trim().is_empty())
    {
        return Err(CliError::Usage(format!(
            "--task is empty: say what the program is to do{nothing}"
        )));
    }
    let project = absolute(args.project.as_deref().unwrap_or(Path::new(".")))?;
    if !project.is_dir() {
        return Err(CliError::Usage(format!(
            "--project {}: not a directory{nothing}",
            project.display()
        )));
    }
    let out = absolute(&args.out)?;
    if std::fs::read_dir(&out).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(CliError::Usage(format!(
            "--out {}: not empty; not overwriting it{nothing}",
            args.out.display()
        )));
    }
    write_scenario(args, &project, &out)?;
    // The run names the directory as the user did, so its report's paths read as theirs.
    let outcome = record(args, &base_url, &args.out)?;
    let tape = out.join(TAPE_FILE);
    let reader = TapeReader::open(&tape).map_err(|error| CliError::Tape {
        path: Some(tape.clone()),
        error,
    })?;
    let fixture = loosened_fixture(reader, TAPE_FILE)
        .map_err(|e| CliError::Input(format!("{}: {e}", tape.display())))?;
    let fixture_path = out.join(FIXTURE_FILE);
    std::fs::write(&fixture_path, &fixture.text).map_err(CliError::io(&fixture_path))?;
    print_next(&args.out, fixture.entries, outcome);
    Ok(outcome)
}

/// Writes the project snapshot, the scenario and a fixture with no entries yet (the
/// scenario must load before the recording run replaces its model).
fn write_scenario(args: &RecordArgs, project: &Path, out: &Path) -> Result<(), CliError> {
    let repo = out.join(PROJECT_DIR);
    let copied = snapshot_project(project, &repo, &[out.to_path_buf()])
        .map_err(|e| CliError::Input(format!("the project snapshot: {e}")))?;
    println!(
        "snapshot: {} ({} file(s) of {})",
        repo.display(),
        copied.files,
        project.display()
    );
    let (program, program_args) = args
        .command
        .split_first()
        .expect("clap requires the program");
    let program = from_snapshot(program, project, true);
    let program_args: Vec<String> = program_args
        .iter()
        .map(|arg| from_snapshot(arg, project, false))
        .collect();
    let header = format!(
        "# {name}: the program `{shown}`, recorded by `simtape record` from {provider}.\n\
         #\n\
         # The program starts in a copy-on-write overlay of {PROJECT_DIR}/ (the project as it was\n\
         # recorded), in simtape's sandbox, with the model at ANTHROPIC_BASE_URL, OPENAI_BASE_URL\n\
         # and GOOGLE_GEMINI_BASE_URL answered from {FIXTURE_FILE}: one entry per model call of the\n\
         # recording, matched on its last message or tool result ({EXACT_FIXTURE_FILE} matches\n\
         # whole conversations). Add [[faults.llm]] rules and [[verify]] checks (docs/quickstart.md).\n\
         #\n\
         # Seeds: 0. Expected outcome: the recording's verdict, with no provider running.\n",
        name = "recorded",
        shown = command_line(&args.command),
        provider = args.provider.name(),
    );
    let text = ProgramScenario {
        header: &header,
        name: "recorded",
        program: &program,
        args: &program_args,
        root: PROJECT_DIR,
        fixture: FIXTURE_FILE,
        task: &args
            .task
            .clone()
            .unwrap_or_else(|| format!("Run {}", command_line(&args.command))),
    }
    .text();
    let empty = "{\"simtape_llm\": 1}\n";
    for (file, text) in [(SCENARIO_FILE, text.as_str()), (FIXTURE_FILE, empty)] {
        let path = out.join(file);
        std::fs::write(&path, text).map_err(CliError::io(&path))?;
    }
    Ok(())
}

/// `arg` as the recorded scenario names it: a path inside the project becomes the same path
/// in the snapshot (relative, so the program finds it in its working directory; a program
/// with a `/` from the scenario's directory, where simtape resolves it); anything else is
/// kept.
fn from_snapshot(arg: &str, project: &Path, is_program: bool) -> String {
    let path = Path::new(arg);
    let inside = if path.is_absolute() {
        path.strip_prefix(project).ok().map(Path::to_path_buf)
    } else if is_program && arg.contains('/') && project.join(path).is_file() {
        Some(path.to_path_buf())
    } else {
        None
    };
    match inside {
        Some(relative) if is_program => Path::new(PROJECT_DIR).join(relative).display().to_string(),
        Some(relative) => relative.display().to_string(),
        None => arg.to_string(),
    }
}

/// Runs the written scenario once with its model in record mode (`simtape run
/// --record-llm`), its tape into the directory; returns the run's outcome.
fn record(args: &RecordArgs, base_url: &str, out: &Path) -> Result<Outcome, CliError> {
    let mut line = vec![
        "simtape".to_string(),
        "run".into(),
        out.join(SCENARIO_FILE).display().to_string(),
        "--seed".into(),
        "0".into(),
        "--record-llm".into(),
        args.provider.name().into(),
        "--fixture-out".into(),
        out.join(EXACT_FIXTURE_FILE).display().to_string(),
        "--upstream".into(),
        base_url.into(),
        "--tape".into(),
        out.join(TAPE_FILE).display().to_string(),
    ];
    if args.no_sandbox {
        line.push("--no-sandbox".into());
    }
    let crate::args::Command::Run(run) = crate::args::Cli::try_parse_from(&line)
        .expect("a run command line this function built")
        .command
    else {
        unreachable!("the line names `run`");
    };
    crate::cmd_run::run(&run)
}

fn absolute(path: &Path) -> Result<PathBuf, CliError> {
    std::path::absolute(path).map_err(CliError::io(path))
}

/// Prints what was written and the commands a user runs next.
fn print_next(out: &Path, entries: usize, outcome: Outcome) {
    let dir = out.display().to_string();
    let scenario = quote(&format!("{dir}/{SCENARIO_FILE}"));
    println!(
        "recorded {entries} model call(s) into {dir}/{FIXTURE_FILE}; scenario {scenario}, \
         project {dir}/{PROJECT_DIR}, tape {dir}/{TAPE_FILE}"
    );
    if outcome != Outcome::Success {
        println!("the recording run did not pass: its verdict is above, its tape kept");
    }
    println!("next:");
    println!("  simtape run {scenario} --seed 0    # replays with no provider");
    println!("  # add a fault rule to {scenario}, then sweep seeds:");
    println!("  #   [[faults.llm]]\n  #   rate = \"1/2\"\n  #   status = 429\n  #   retry_after = \"100ms\"");
    println!(
        "  simtape sweep {scenario} --seeds 0..20 --out {}",
        quote(&format!("{dir}/sweep"))
    );
}
