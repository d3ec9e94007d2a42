//! `simtape serve … -- CMD` in simtape's sandbox: the command runs in `/project` (an overlay
//! over the project, never changing the host's copy), reaches the endpoints at the fixed
//! `http://127.0.0.1:7070` inside, and nothing it starts outlives the session. What it did
//! outside the project goes on the tape before its exit, as for a scenario's agent program.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use simtape::inbox::{Inbox, Outbox};
use simtape::Builder;
use simtape_agent::AgentExit;

use crate::gateway::{self, GatewayInput, HttpResponse};
use crate::sandbox::{self, Job, JobExit, Sandbox, SandboxMode, SandboxSpec};
use crate::{driver, mcp_http, AgentCommand, Endpoints, ServeError, ServeOptions, ServeSandbox};

/// A sandbox set up for one command, before the session runs.
pub(crate) struct Contained {
    sandbox: Sandbox,
    /// The endpoints as the command sees them.
    pub(crate) endpoints: Endpoints,
    mcp: Rc<mcp_http::McpTransport>,
}

impl Contained {
    /// Sets the sandbox up for `command` over `setting`'s project.
    pub(crate) fn start(
        builder: &mut Builder,
        command: &AgentCommand,
        setting: &ServeSandbox,
    ) -> Result<Contained, ServeError> {
        sandbox::probe().map_err(ServeError::Sandbox)?;
        let program = crate::place::unshim(&resolve(&command.program));
        let (mut expose, path_first) = crate::place::program_exposure(&program);
        expose.extend(setting.expose.iter().cloned());
        // The files its command line names by absolute path (a script given to an
        // interpreter) are part of the program: shown read-only too.
        for arg in &command.args {
            let path = Path::new(arg);
            if path.is_absolute() && path.is_file() {
                expose.extend(std::fs::canonicalize(path).ok());
                expose.push(path.to_path_buf());
            }
        }
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], sandbox::SERVE_PORT));
        let mut endpoints = Endpoints::new(addr);
        let config = Path::new(sandbox::RUN_DIR).join("mcp.json");
        endpoints.env.push((
            mcp_http::CONFIG_VARIABLE.to_string(),
            config.display().to_string(),
        ));
        let mut env = sandbox::base_env(&path_first);
        env.extend(endpoints.env.iter().cloned());
        env.extend(command.env.iter().cloned());
        let spec = SandboxSpec {
            project: Some(setting.project.clone()),
            project_at: PathBuf::from(sandbox::PROJECT_DIR),
            read_only: false,
            expose: crate::place::nested_out(expose),
            network: setting.network.clone(),
            jobs: vec![Job {
                program,
                args: command.args.clone(),
                env,
                cwd: PathBuf::from(sandbox::PROJECT_DIR),
                stdin: None,
            }],
        };
        let sandbox = Sandbox::start(&spec).map_err(ServeError::Sandbox)?;
        let servers = mcp_http::servers(&builder.capabilities());
        let text = mcp_http::config_text(addr, &servers);
        sandbox
            .put(&config.display().to_string(), text.as_bytes())
            .map_err(|source| ServeError::McpConfig {
                dir: sandbox.host_path(sandbox::RUN_DIR),
                source,
            })?;
        builder.sandbox(SandboxMode::On.label());
        Ok(Contained {
            sandbox,
            endpoints,
            mcp: Rc::new(mcp_http::McpTransport::new(servers)),
        })
    }

    /// Runs the session: the command, the driver, its end; then finishes the run.
    pub(crate) async fn session(
        mut self,
        executor: Rc<smol::LocalExecutor<'static>>,
        builder: &mut Builder,
        inputs: Inbox<GatewayInput>,
        responses: Outbox<HttpResponse>,
        options: &ServeOptions,
    ) -> Result<crate::Session, ServeError> {
        let listener = self.sandbox.take_listener().ok_or_else(|| {
            ServeError::Sandbox(sandbox::SandboxError::Spec("no listener".into()))
        })?;
        let listener = smol::Async::new(listener).map_err(|source| ServeError::Bind {
            addr: self.endpoints.addr,
            source,
        })?;
        let (tx, rx) = smol::channel::unbounded();
        let acceptor = executor.spawn(driver::accept(
            executor.clone(),
            smol::net::TcpListener::from(listener),
            tx,
            Rc::clone(&self.mcp),
        ));
        let output = self
            .sandbox
            .start_job(0)
            .await
            .map_err(ServeError::Sandbox)?;
        // Its output is the user's to see, as an unsandboxed command's would be.
        let echo = executor.spawn(async move {
            let _ = smol::io::copy(output.stdout, smol::Unblock::new(std::io::stdout())).await;
        });
        let echo_err = executor.spawn(async move {
            let _ = smol::io::copy(output.stderr, smol::Unblock::new(std::io::stderr())).await;
        });
        let sim = builder.build().map_err(ServeError::Build)?;
        let mut run = sim.start(move |host| gateway::gateway(host, inputs, responses));
        let normalizer = options.normalizer.clone().for_agent(
            Some(Path::new(sandbox::PROJECT_DIR)),
            Some(sandbox::HOME_DIR),
        );
        let mut driver = driver::Driver::new(inputs, responses, options.settle, normalizer);
        driver.session_log = crate::session_log(options.session_log.as_deref())?;
        let timeout = options.command.as_ref().and_then(|c| c.timeout);
        let started = Instant::now();
        let ended = {
            let sandbox = &mut self.sandbox;
            let ending = async {
                let exited = async {
                    let exit = match sandbox.wait_job(0).await {
                        JobExit::Code(code) => AgentExit::Exited(code),
                        JobExit::Signal(_) => AgentExit::Signaled,
                    };
                    driver::SessionStop::AgentExited(exit)
                };
                match timeout {
                    Some(limit) => {
                        smol::future::or(exited, async {
                            let left = limit.saturating_sub(started.elapsed());
                            smol::Timer::after(left).await;
                            driver::SessionStop::Stopped
                        })
                        .await
                    }
                    None => exited.await,
                }
            };
            driver.drive(&mut run, &rx, ending).await
        };
        let timed_out = matches!(ended, Some(driver::SessionStop::Stopped));
        if timed_out {
            self.sandbox.kill();
        }
        // The command may be any agent CLI, which keeps its state in its scratch places
        // (measured: Claude Code's MCP logs under its HOME are named by the wall clock), so
        // those writes are left off the tape as for a CLI adapter's; the rest is on it.
        let (seen, _) = crate::place::seen_in(&self.sandbox, true);
        driver.deliver_input(&mut run, GatewayInput::Sandbox(seen));
        if let Some(driver::SessionStop::AgentExited(exit)) = ended {
            driver.deliver_input(&mut run, GatewayInput::AgentExited(exit));
        }
        driver.close(&mut run);
        drop(acceptor);
        drop(self.sandbox);
        smol::future::or(futures_join(echo, echo_err), async {
            smol::Timer::after(crate::limits::OUTPUT_DRAIN).await;
        })
        .await;
        let report = run.finish_with_verdict(crate::verdict);
        Ok(crate::Session { report, timed_out })
    }
}

async fn futures_join(a: smol::Task<()>, b: smol::Task<()>) {
    a.await;
    b.await;
}

/// The program of a command: a path as given (relative to the current directory), or a
/// name found on `PATH`.
fn resolve(program: &str) -> PathBuf {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return std::path::absolute(&path).unwrap_or(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| PathBuf::from(program))
}
