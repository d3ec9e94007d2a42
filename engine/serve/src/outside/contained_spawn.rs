//! A `[process]` program in `real` or `record` mode, run in simtape's sandbox
//! (docs/sandbox.md): its working directory is an overlay at its own path (the recorded `cwd`
//! stays what it was), so what it writes there, or anywhere, never reaches the host; its
//! connections meet the scenario's `[network]` policy; nothing it starts outlives it. Its
//! environment is the sandbox's allow-list and the command's own variables (the ones a
//! process tape records), not simtape's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use simtape::cap::net::Network;
use simtape::cap::process::{
    Command, ExitStatus, Output, ProcessError, ProcessRunner, RunBounds, Truncation,
};

use crate::sandbox::{self, Job, JobExit, Sandbox, SandboxSpec};

/// Runs `real` and `record` programs in a sandbox each: give it to a scenario with
/// `EvalScenario::set_process_runner` (the `simtape` command does, unless `--no-sandbox`).
#[derive(Debug, Clone)]
pub struct ContainedSpawner {
    /// The policy for the programs' own connections.
    pub network: Network,
    /// Host paths shown to the programs read-only, beyond each program's own.
    pub expose: Vec<PathBuf>,
}

impl ProcessRunner for ContainedSpawner {
    fn run(&self, command: &Command, bounds: &RunBounds) -> Result<Output, ProcessError> {
        let io = |detail: String| ProcessError::Io {
            program: command.program.clone(),
            detail,
        };
        let cwd = match &command.cwd {
            Some(cwd) => PathBuf::from(cwd),
            None => std::env::current_dir().map_err(|e| io(e.to_string()))?,
        };
        let cwd = std::path::absolute(&cwd).unwrap_or(cwd);
        let program = crate::place::unshim(&resolve(&command.program, &cwd));
        let (mut expose, path_first) = crate::place::program_exposure(&program);
        expose.extend(self.expose.iter().cloned());
        let mut env = sandbox::base_env(&path_first);
        env.extend(command.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let spec = SandboxSpec {
            project: Some(cwd.clone()),
            project_at: cwd.clone(),
            read_only: false,
            expose: crate::place::nested_out(expose),
            network: self.network.clone(),
            jobs: vec![Job {
                program,
                args: command.args.clone(),
                env,
                cwd,
                stdin: Some(command.stdin.clone()),
            }],
        };
        let started = Instant::now();
        let sandbox_error = |error: sandbox::SandboxError| ProcessError::Spawn {
            program: command.program.clone(),
            detail: error.to_string(),
        };
        let mut sandbox = Sandbox::start(&spec).map_err(sandbox_error)?;
        let timeout = Duration::from_millis(bounds.timeout_ms);
        let grace = Duration::from_millis(bounds.grace_ms);
        let cap = usize::try_from(bounds.output_bytes_max).unwrap_or(usize::MAX);
        let ran = smol::block_on(async {
            let output = sandbox.start_job(0).await.map_err(sandbox_error)?;
            let out = smol::spawn(crate::process::read_capped_to(output.stdout, cap));
            let err = smol::spawn(crate::process::read_capped_to(output.stderr, cap));
            let finished = smol::future::or(async { Some(sandbox.wait_job(0).await) }, async {
                smol::Timer::after(timeout).await;
                None
            })
            .await;
            let (exit, timed_out) = match finished {
                Some(exit) => (exit, false),
                None => {
                    sandbox.terminate();
                    let exit = smol::future::or(async { Some(sandbox.wait_job(0).await) }, async {
                        smol::Timer::after(grace).await;
                        None
                    })
                    .await;
                    let exit = match exit {
                        Some(exit) => exit,
                        None => {
                            sandbox.kill();
                            sandbox.wait_job(0).await
                        }
                    };
                    (exit, true)
                }
            };
            // The job's end ended everything else in the sandbox: its pipes are at their end.
            Ok::<_, ProcessError>((exit, timed_out, out.await, err.await))
        })?;
        let (exit, timed_out, (stdout, stdout_dropped_bytes), (stderr, stderr_dropped_bytes)) = ran;
        let duration_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        drop(sandbox);
        Ok(Output {
            status: match exit {
                JobExit::Code(code) => ExitStatus::Code(code),
                JobExit::Signal(signal) => ExitStatus::Signal(signal),
            },
            stdout,
            stderr,
            duration_ns,
            truncated: Truncation {
                stdout_dropped_bytes,
                stderr_dropped_bytes,
            },
            timed_out,
            fuel_consumed: None,
        })
    }
}

/// The program of a command: a path (relative ones against its working directory), or a
/// name found on `PATH`.
fn resolve(program: &str, cwd: &Path) -> PathBuf {
    if program.contains('/') {
        return cwd.join(program);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| PathBuf::from(program))
}
