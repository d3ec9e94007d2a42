//! The `simtape` command line: parse, dispatch, print, exit. No simulation logic lives here;
//! every command calls the `simtape` library.

/// A run allocates and frees many small objects (messages, records, JSON values); mimalloc
/// does that in a fraction of glibc malloc's time (see bench/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod args;
mod cmd_check;
mod cmd_ci;
mod cmd_diff;
mod cmd_explain;
mod cmd_explore;
mod cmd_fixtures;
mod cmd_fork;
mod cmd_mcp;
mod cmd_new;
mod cmd_record;
mod cmd_replay;
mod cmd_report;
mod cmd_run;
mod cmd_serve;
mod cmd_shrink;
mod cmd_sweep;
mod cmd_tape;
mod common;
mod exit;
mod sweep;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    // The stdio MCP commands keep Rust's default: a closed pipe is a write error they report.
    if !matches!(cli.command, args::Command::Mcp(_)) {
        die_quietly_on_closed_pipe();
    }
    if matches!(cli.command, args::Command::Serve(_)) {
        return_freed_memory_at_once();
    }
    let result = raise_input_caps().and_then(|()| dispatch(cli.command));
    if let Err(error) = &result {
        eprintln!("error: {error}");
    }
    ExitCode::from(exit::exit_code(&result))
}

/// Raises every input file's size cap when `SIMTAPE_INPUT_BYTES_MAX` is set (the engine
/// never reads the environment; the command line hands the value over).
fn raise_input_caps() -> Result<(), exit::CliError> {
    use simtape::limits::{raise_input_bytes_max, INPUT_BYTES_MAX_SETTING};
    let Some(value) = std::env::var_os(INPUT_BYTES_MAX_SETTING) else {
        return Ok(());
    };
    let value = value.to_string_lossy();
    let bytes = value.trim().parse().map_err(|_| {
        exit::CliError::Usage(format!(
            "{INPUT_BYTES_MAX_SETTING}={value:?}: expected a whole number of bytes"
        ))
    })?;
    raise_input_bytes_max(bytes);
    Ok(())
}

fn dispatch(command: args::Command) -> exit::CliResult {
    match command {
        args::Command::Run(a) => cmd_run::run(&a),
        args::Command::Replay(a) => cmd_replay::run(&a),
        args::Command::Diff(a) => cmd_diff::run(&a),
        args::Command::Shrink(a) => cmd_shrink::run(&a),
        args::Command::Fork(a) => cmd_fork::run(&a),
        args::Command::Explain(a) => cmd_explain::run(&a),
        args::Command::Explore(a) => cmd_explore::run(&a),
        args::Command::Tape(a) => cmd_tape::run(&a),
        args::Command::Fixtures(a) => cmd_fixtures::run(&a),
        args::Command::Check(a) => cmd_check::run(&a),
        args::Command::Ci(a) => cmd_ci::run(&a),
        args::Command::Mcp(a) => cmd_mcp::run(&a),
        args::Command::New(a) => cmd_new::run(&a),
        args::Command::Record(a) => cmd_record::run(&a),
        args::Command::Sweep(a) => cmd_sweep::run(&a),
        args::Command::Report(a) => cmd_report::run(&a),
        args::Command::Serve(a) => cmd_serve::run(&a),
    }
}

/// mimalloc's `purge_delay` option (its index in `mi_option_t`, the same in mimalloc 2 and 3;
/// `libmimalloc-sys` names only some options).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Makes mimalloc give freed memory back to the system when it is freed rather than 10 ms
/// (100 ms for huge blocks) later at its next call: `serve` sits idle between an agent's
/// requests, so a burst of 30 MB request bodies stayed resident after they were answered
/// (359 MB against 40 MB before the burst; 80 MB with this). Other commands keep the default,
/// which saves system calls in allocation-heavy sweeps.
#[allow(unsafe_code)]
fn return_freed_memory_at_once() {
    // SAFETY: sets an integer option before any other thread exists; mimalloc reads options
    // atomically and `purge_delay = 0` is a documented value (purge immediately).
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
}

/// Restores SIGPIPE's default action, so output piped into a reader that stops early
/// (`simtape tape show t.tape | head`) ends the process as it ends `cat`, instead of a panic in
/// `println!` (Rust ignores SIGPIPE, which turns the closed pipe into a write error). One of
/// the project's three `unsafe` blocks (each with its SAFETY proof): no safe API sets a
/// signal's action.
#[allow(unsafe_code)]
fn die_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called on the main thread before any other thread exists; SIG_DFL is a valid
    // action for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
