//! Where an agent program's processes run, one at a time: in a sandbox of their own (the
//! default on Linux, `sandbox`), or on the host in a scratch copy of the project
//! (`[agent] sandbox = "off"`, `--no-sandbox`). Both give the run the same things: the
//! program's output, its exit, what it changed in its project, its gate programs' exits; a
//! sandbox also says what the program did outside its project.
//!
//! In a sandbox each process (a run's program, or one `[harness]` session) gets a fresh
//! sandbox: the project as an overlay at `/project`, an empty HOME, simtape's endpoints at
//! the fixed `http://127.0.0.1:7070` inside, and the gates run after it in the same sandbox.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use simtape::cap::net::Network;
use simtape_agent::{Check, EvalScenario, GateRun};
use smol::io::AsyncRead;

use crate::clock::ClockFile;
use crate::driver::{self, Pending};
use crate::gateway::SandboxSeen;
use crate::limits::{GATE_TIMEOUT, KILL_GRACE};
use crate::mcp_http::McpTransport;
use crate::process::{self, AgentProcess, Exit, Spawn};
use crate::sandbox::view::OutsideWrite;
use crate::sandbox::{self, Job, JobExit, Sandbox, SandboxSpec};
use crate::workdir::{FileChange, TreeSnapshot, Workdir, WorkdirError};
use crate::ServeError;

/// A program's output streams.
pub(crate) type Stream = Box<dyn AsyncRead + Unpin>;

/// What a program sees of its place: the endpoint, its directories, its MCP config and the
/// variables that name them.
#[derive(Debug, Clone)]
pub(crate) struct Sight {
    /// The endpoints' base URL.
    pub base_url: String,
    /// Its working directory (the project).
    pub work: PathBuf,
    /// Its HOME.
    pub home: PathBuf,
    /// Its MCP config file.
    pub mcp_config: PathBuf,
    /// The endpoints' (and the virtual clock's) variables.
    pub env: Vec<(String, String)>,
}

/// One process to start.
pub(crate) struct Start<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    /// Its variables beyond the place's own (the adapter's, the scenario's).
    pub env: Vec<(String, String)>,
    /// A `[harness]` session's files, laid out over the project before it starts.
    pub files: Option<&'a [FileChange]>,
    /// The adapter's config files (in its HOME), written before it starts.
    pub config_files: &'a [(PathBuf, String)],
}

/// Where the processes of one run go.
pub(crate) enum Place {
    Host(Box<HostPlace>),
    Sandboxed(Box<SandboxPlace>),
}

/// On the host: one scratch copy, one listener, for every process of the run.
pub(crate) struct HostPlace {
    workdir: Workdir,
    sight: Sight,
    clock: Option<ClockFile>,
    running: Option<AgentProcess>,
    _mcp_config: crate::mcp_http::McpConfig,
    _acceptor: smol::Task<()>,
}

/// In sandboxes: one per process, set up when it starts.
pub(crate) struct SandboxPlace {
    spec: SandboxSpec,
    /// Directories put first on the program's `PATH` (its interpreter's).
    path_first: Vec<PathBuf>,
    gates: Vec<(String, Vec<String>)>,
    servers: Vec<String>,
    clock_start: Option<i64>,
    sight: Sight,
    executor: Rc<smol::LocalExecutor<'static>>,
    requests: smol::channel::Sender<Pending>,
    mcp: Rc<McpTransport>,
    current: Option<Sandbox>,
    snapshot: Option<TreeSnapshot>,
    clock: Option<ClockFile>,
    /// The program keeps its own state in its scratch places (see [`Setting::keeps_state`]).
    keeps_state: bool,
    _acceptor: Option<smol::Task<()>>,
}

/// What a place needs from the run.
pub(crate) struct Setting<'a> {
    pub scenario: &'a EvalScenario,
    pub capabilities: &'a simtape::Capabilities,
    pub program: &'a Path,
    /// Its arguments, resolved (`command::resolve_args`).
    pub args: &'a [String],
    pub addr: std::net::SocketAddr,
    pub executor: Rc<smol::LocalExecutor<'static>>,
    pub requests: smol::channel::Sender<Pending>,
    /// The program is an agent CLI that keeps its own state (sessions, caches, locks,
    /// file-watch probes) in its scratch places (HOME, `/tmp`, `/var/tmp`), written by its
    /// background tasks as their timing falls: what it writes there is listed for people
    /// (the evidence), not on the tape. Any other program's writes there are on the tape.
    pub keeps_state: bool,
}

impl Place {
    /// A place on the host: the scratch copy made, the listener bound, the MCP config
    /// written.
    pub(crate) async fn host(setting: Setting<'_>) -> Result<Place, ServeError> {
        let scenario = setting.scenario.scenario();
        let label = scenario.name().to_string();
        let workdir =
            Workdir::create(scenario.fs_root().as_deref(), &label).map_err(ServeError::Workdir)?;
        let (listener, mut endpoints) = crate::bind(setting.addr).await?;
        let (mcp, mcp_config) =
            crate::mcp_http::setup(setting.capabilities, endpoints.addr, &mut endpoints.env)?;
        let acceptor = setting.executor.spawn(driver::accept(
            setting.executor.clone(),
            listener,
            setting.requests,
            mcp,
        ));
        let mut env = endpoints.env.clone();
        let clock = match clock_start(setting.scenario) {
            None => None,
            Some(start) => {
                let path = workdir.home().with_file_name("clock");
                let (clock, clock_env) = new_clock(&path, &path, start)?;
                env.extend(clock_env);
                Some(clock)
            }
        };
        let sight = Sight {
            base_url: format!("http://{}", endpoints.addr),
            work: workdir.work(),
            home: workdir.home(),
            mcp_config: mcp_config.path().to_path_buf(),
            env,
        };
        Ok(Place::Host(Box::new(HostPlace {
            workdir,
            sight,
            clock,
            running: None,
            _mcp_config: mcp_config,
            _acceptor: acceptor,
        })))
    }

    /// A place in sandboxes: nothing is set up until a process starts.
    pub(crate) fn sandboxed(setting: Setting<'_>) -> Result<Place, ServeError> {
        let scenario = setting.scenario;
        let spec = scenario.eval().command.as_ref();
        let scenario_dir = scenario.scenario().path().parent().unwrap_or(Path::new(""));
        let mut expose = Vec::new();
        for path in spec.map(|spec| spec.expose.as_slice()).unwrap_or_default() {
            let path = scenario_dir.join(path);
            let path = std::path::absolute(&path).unwrap_or(path);
            expose.push(path);
        }
        let (program_expose, path_first) = program_exposure(setting.program);
        expose.extend(program_expose);
        // The files its command line names (a script given to an interpreter) are part of
        // the program: shown read-only too. Nothing else beside the scenario is.
        for arg in setting.args {
            let path = Path::new(arg);
            if path.is_absolute() && path.is_file() {
                expose.extend(outside_system(path));
            }
        }
        if clock_start(scenario).is_some() {
            if let Some(library) = crate::clock::libfaketime() {
                expose.extend(outside_system(&library));
            }
        }
        let read_only = spec.is_some_and(|spec| !crate::adapter::may_write(spec.permission));
        let servers = crate::mcp_http::servers(setting.capabilities);
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], sandbox::SERVE_PORT));
        let mut endpoints = crate::Endpoints::new(addr);
        let mcp_config = Path::new(sandbox::RUN_DIR).join("mcp.json");
        let variable = crate::mcp_http::CONFIG_VARIABLE.to_string();
        endpoints
            .env
            .push((variable, mcp_config.display().to_string()));
        let gates = scenario
            .eval()
            .verify
            .iter()
            .filter_map(|verifier| match &verifier.check {
                Check::Gate { program, args, .. } => Some((program.clone(), args.clone())),
                _ => None,
            })
            .collect();
        Ok(Place::Sandboxed(Box::new(SandboxPlace {
            spec: SandboxSpec {
                project: scenario.scenario().fs_root(),
                project_at: PathBuf::from(sandbox::PROJECT_DIR),
                read_only,
                expose: nested_out(expose),
                network: scenario
                    .scenario()
                    .network()
                    .cloned()
                    .unwrap_or_else(Network::deny),
                jobs: Vec::new(),
            },
            path_first,
            gates,
            mcp: Rc::new(McpTransport::new(servers.clone())),
            servers,
            clock_start: clock_start(scenario),
            sight: Sight {
                base_url: format!("http://{addr}"),
                work: PathBuf::from(sandbox::PROJECT_DIR),
                home: PathBuf::from(sandbox::HOME_DIR),
                mcp_config,
                env: endpoints.env,
            },
            executor: setting.executor,
            requests: setting.requests,
            current: None,
            snapshot: None,
            clock: None,
            keeps_state: setting.keeps_state,
            _acceptor: None,
        })))
    }

    /// The sandbox mode it runs programs in.
    pub(crate) fn mode(&self) -> sandbox::SandboxMode {
        match self {
            Place::Host(_) => sandbox::SandboxMode::Off,
            Place::Sandboxed(_) => sandbox::SandboxMode::On,
        }
    }

    /// What the program sees of it.
    pub(crate) fn sight(&self) -> &Sight {
        match self {
            Place::Host(place) => &place.sight,
            Place::Sandboxed(place) => &place.sight,
        }
    }

    /// The agent's clock file, when it reads virtual time (set once a process started).
    pub(crate) fn clock(&self) -> Option<ClockFile> {
        match self {
            Place::Host(place) => place.clock.clone(),
            Place::Sandboxed(place) => place.clock.clone(),
        }
    }

    /// What tells whether the running process (and everything it started) is busy, in a
    /// sandbox; `None` on the host.
    pub(crate) fn busy_probe(&self) -> Option<sandbox::BusyProbe> {
        match self {
            Place::Host(_) => None,
            Place::Sandboxed(place) => place.current.as_ref().map(Sandbox::busy_probe),
        }
    }

    /// Starts one process; returns its stdout and stderr.
    pub(crate) async fn start(
        &mut self,
        launch: Start<'_>,
    ) -> Result<(Stream, Stream), ServeError> {
        match self {
            Place::Host(place) => place.start(launch),
            Place::Sandboxed(place) => place.start(launch).await,
        }
    }

    /// Waits for the running process to exit.
    pub(crate) async fn wait(&mut self) -> Exit {
        match self {
            Place::Host(place) => match place.running.as_mut() {
                Some(process) => process.wait().await,
                None => Exit::Signal,
            },
            Place::Sandboxed(place) => match place.current.as_mut() {
                Some(sandbox) => exit_of(sandbox.wait_job(0).await),
                None => Exit::Signal,
            },
        }
    }

    /// Stops the running process and everything it started: SIGTERM, then SIGKILL after
    /// [`KILL_GRACE`]. Returns how it ended.
    pub(crate) async fn stop(&mut self) -> Exit {
        match self {
            Place::Host(place) => match place.running.as_mut() {
                Some(process) => process.stop().await,
                None => Exit::Signal,
            },
            Place::Sandboxed(place) => match place.current.as_mut() {
                Some(sandbox) => stop_job(sandbox, 0).await,
                None => Exit::Signal,
            },
        }
    }

    /// Ends what the exited process left running (in a sandbox, its init did already).
    pub(crate) fn sweep(&mut self) {
        if let Place::Host(place) = self {
            if let Some(process) = place.running.as_ref() {
                process.sweep();
            }
        }
    }

    /// What the process changed in its project, in path order, and the paths too large to
    /// compare.
    pub(crate) fn changes(&self) -> Result<(Vec<FileChange>, Vec<String>), WorkdirError> {
        match self {
            Place::Host(place) => place.workdir.changes(),
            Place::Sandboxed(place) => match (&place.current, &place.snapshot) {
                (Some(sandbox), Some(snapshot)) => snapshot.changes(&sandbox.project()),
                _ => Ok((Vec::new(), Vec::new())),
            },
        }
    }

    /// What a sandboxed process did outside its project, for the tape, and what it wrote in
    /// the scratch places where it keeps its own state, for people (`None` on the host).
    pub(crate) fn seen(&self) -> Option<(SandboxSeen, Vec<OutsideWrite>)> {
        let Place::Sandboxed(place) = self else {
            return None;
        };
        Some(seen_in(place.current.as_ref()?, place.keeps_state))
    }

    /// Runs each `gate` verifier's program in the project, in file order.
    pub(crate) async fn gates(&mut self, scenario: &EvalScenario) -> Vec<GateRun> {
        match self {
            Place::Host(place) => {
                let work = place.workdir.work();
                run_gates(scenario, &work, &place.sight.env).await
            }
            Place::Sandboxed(place) => place.gates().await,
        }
    }

    /// Ends the current process's place (a sandbox and all in it).
    pub(crate) fn end(&mut self) {
        if let Place::Sandboxed(place) = self {
            place._acceptor = None;
            place.snapshot = None;
            place.clock = None;
            place.current = None;
        }
    }
}

impl HostPlace {
    fn start(&mut self, launch: Start<'_>) -> Result<(Stream, Stream), ServeError> {
        if let Some(files) = launch.files {
            self.workdir.mirror(files).map_err(ServeError::Workdir)?;
        }
        for (path, text) in launch.config_files {
            let failed = |source| {
                let path = path.clone();
                ServeError::Workdir(WorkdirError::Io { path, source })
            };
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(failed)?;
            }
            std::fs::write(path, text).map_err(failed)?;
        }
        let mut env = self.sight.env.clone();
        env.extend(launch.env);
        let mut process = AgentProcess::start(&Spawn {
            program: launch.program,
            args: launch.args,
            env: &env,
            cwd: &self.workdir.work(),
        })
        .map_err(|source| ServeError::Spawn {
            program: launch.program.display().to_string(),
            source,
        })?;
        let stdout: Stream = match process.stdout() {
            Some(out) => Box::new(out),
            None => Box::new(smol::io::empty()),
        };
        let stderr: Stream = match process.stderr() {
            Some(err) => Box::new(err),
            None => Box::new(smol::io::empty()),
        };
        self.running = Some(process);
        Ok((stdout, stderr))
    }
}

impl SandboxPlace {
    async fn start(&mut self, launch: Start<'_>) -> Result<(Stream, Stream), ServeError> {
        let mut env = sandbox::base_env(&self.path_first);
        env.extend(self.sight.env.iter().cloned());
        let clock_path = Path::new(sandbox::RUN_DIR).join("clock");
        if self.clock_start.is_some() {
            let clock_env = crate::clock::variables(&clock_path);
            env.extend(clock_env.ok_or(ServeError::MissingFaketime)?);
        }
        env.extend(launch.env);
        let env = last_wins(env);
        let mut spec = self.spec.clone();
        spec.jobs.push(Job {
            program: launch.program.to_path_buf(),
            args: launch.args.to_vec(),
            env: env.clone(),
            cwd: PathBuf::from(sandbox::PROJECT_DIR),
            stdin: None,
        });
        for (program, args) in &self.gates {
            let mut all = vec![program.clone()];
            all.extend(args.iter().cloned());
            spec.jobs.push(Job {
                // `env` finds a bare name on the sandbox's PATH, as a shell would.
                program: PathBuf::from("/usr/bin/env"),
                args: all,
                env: env.clone(),
                cwd: PathBuf::from(sandbox::PROJECT_DIR),
                stdin: None,
            });
        }
        self.end_current();
        failure_on_demand().map_err(ServeError::Sandbox)?;
        let mut sandbox = Sandbox::start(&spec).map_err(ServeError::Sandbox)?;
        let listener = sandbox.take_listener().ok_or_else(|| {
            ServeError::Sandbox(sandbox::SandboxError::Spec("no listener".into()))
        })?;
        let listener = smol::Async::new(listener).map_err(|source| ServeError::Bind {
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], sandbox::SERVE_PORT)),
            source,
        })?;
        self._acceptor = Some(self.executor.spawn(driver::accept(
            self.executor.clone(),
            smol::net::TcpListener::from(listener),
            self.requests.clone(),
            Rc::clone(&self.mcp),
        )));
        let staged = |path: PathBuf, source| {
            ServeError::Workdir(WorkdirError::Io {
                path: sandbox.host_path(&path.display().to_string()),
                source,
            })
        };
        let config = crate::mcp_http::config_text(
            std::net::SocketAddr::from(([127, 0, 0, 1], sandbox::SERVE_PORT)),
            &self.servers,
        );
        let config_path = self.sight.mcp_config.clone();
        sandbox
            .put(&config_path.display().to_string(), config.as_bytes())
            .map_err(|source| staged(config_path, source))?;
        for (path, text) in launch.config_files {
            sandbox
                .put(&path.display().to_string(), text.as_bytes())
                .map_err(|source| staged(path.clone(), source))?;
        }
        if let Some(start) = self.clock_start {
            let host = sandbox.host_path(&clock_path.display().to_string());
            let (clock, _) = new_clock(&host, &clock_path, start)?;
            self.clock = Some(clock);
        }
        let project = sandbox.project();
        for change in launch.files.unwrap_or_default() {
            crate::workdir::apply(&project, change).map_err(ServeError::Workdir)?;
        }
        self.snapshot = Some(TreeSnapshot::of(&project).map_err(ServeError::Workdir)?);
        let output = sandbox.start_job(0).await.map_err(ServeError::Sandbox)?;
        self.current = Some(sandbox);
        Ok((Box::new(output.stdout), Box::new(output.stderr)))
    }

    fn end_current(&mut self) {
        self._acceptor = None;
        self.snapshot = None;
        self.clock = None;
        self.current = None;
    }

    /// The gates, jobs 1.. of the current sandbox.
    async fn gates(&mut self) -> Vec<GateRun> {
        let mut runs = Vec::new();
        let Some(sandbox) = self.current.as_mut() else {
            return runs;
        };
        for (index, (program, _)) in self.gates.iter().enumerate() {
            let job = index + 1;
            let run = match sandbox.start_job(job).await {
                Ok(output) => {
                    let drain = async {
                        process::read_capped(output.stdout).await;
                        process::read_capped(output.stderr).await;
                    };
                    let waited = smol::future::or(
                        async {
                            drain.await;
                            Some(sandbox_exit(sandbox, job).await)
                        },
                        async {
                            smol::Timer::after(GATE_TIMEOUT).await;
                            None
                        },
                    )
                    .await;
                    match waited {
                        Some(exit) => gate_run(Some(exit)),
                        None => {
                            stop_job(sandbox, job).await;
                            gate_run(None)
                        }
                    }
                }
                Err(error) => GateRun {
                    exit_code: None,
                    error: Some(format!("cannot start {program:?}: {error}")),
                },
            };
            runs.push(run);
        }
        runs
    }
}

/// `SIMTAPE_SANDBOX_FAIL=STEP` makes each sandbox a run sets up for a process fail at STEP,
/// as a real failure there would (docs/sandbox.md): what a run does then (an ERROR naming
/// the step, a tape that verifies) is tested, and no real system fails on demand.
fn failure_on_demand() -> Result<(), sandbox::SandboxError> {
    match std::env::var("SIMTAPE_SANDBOX_FAIL") {
        Ok(step) if !step.is_empty() => Err(sandbox::SandboxError::Setup {
            step,
            source: std::io::Error::other("failed on demand (SIMTAPE_SANDBOX_FAIL)"),
        }),
        _ => Ok(()),
    }
}

/// What the program in `sandbox` did outside its project, for the tape; and, when it
/// `keeps_state` there ([`Setting::keeps_state`]), what it wrote in its scratch places, for
/// people. Otherwise those writes are on the tape with the rest, in path order.
pub(crate) fn seen_in(sandbox: &Sandbox, keeps_state: bool) -> (SandboxSeen, Vec<OutsideWrite>) {
    let network = sandbox.network_seen();
    let (mut writes_outside, mut home) = sandbox.writes_outside();
    if !keeps_state {
        writes_outside.append(&mut home);
        writes_outside.sort_by(|a, b| a.path.cmp(&b.path));
    }
    let seen = SandboxSeen {
        lookups: network.lookups.into_iter().collect(),
        connects: network.connects.into_iter().collect(),
        dropped: network.dropped,
        writes_outside,
    };
    (seen, home)
}

async fn sandbox_exit(sandbox: &mut Sandbox, job: usize) -> Exit {
    exit_of(sandbox.wait_job(job).await)
}

/// Stops job `job` of `sandbox` and everything in it: SIGTERM, then SIGKILL after
/// [`KILL_GRACE`].
async fn stop_job(sandbox: &mut Sandbox, job: usize) -> Exit {
    sandbox.terminate();
    let exited = smol::future::or(async { Some(sandbox.wait_job(job).await) }, async {
        smol::Timer::after(KILL_GRACE).await;
        None
    })
    .await;
    match exited {
        Some(exit) => exit_of(exit),
        None => {
            sandbox.kill();
            exit_of(sandbox.wait_job(job).await)
        }
    }
}

fn exit_of(exit: JobExit) -> Exit {
    match exit {
        JobExit::Code(code) => Exit::Code(code),
        JobExit::Signal(_) => Exit::Signal,
    }
}

fn gate_run(exit: Option<Exit>) -> GateRun {
    match exit {
        Some(Exit::Code(code)) => GateRun {
            exit_code: Some(code),
            error: None,
        },
        Some(Exit::Signal) => GateRun {
            exit_code: None,
            error: None,
        },
        None => GateRun {
            exit_code: None,
            error: Some(format!("ran over {} s", GATE_TIMEOUT.as_secs())),
        },
    }
}

/// The scenario's start instant, when its agent's clock reads virtual time.
fn clock_start(scenario: &EvalScenario) -> Option<i64> {
    let spec = scenario.eval().command.as_ref()?;
    (spec.clock == simtape_agent::AgentClock::Virtual).then(|| scenario.scenario().start_unix_ns())
}

fn new_clock(
    path: &Path,
    seen_as: &Path,
    start: i64,
) -> Result<(ClockFile, Vec<(String, String)>), ServeError> {
    let created = ClockFile::create_at(path, seen_as, start).map_err(|source| {
        ServeError::Workdir(WorkdirError::Io {
            path: path.to_path_buf(),
            source,
        })
    })?;
    created.ok_or(ServeError::MissingFaketime)
}

/// Keeps the last value of each variable, in first-seen order.
fn last_wins(env: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut kept: Vec<(String, String)> = Vec::new();
    for (name, value) in env {
        match kept.iter_mut().find(|(existing, _)| *existing == name) {
            Some(slot) => slot.1 = value,
            None => kept.push((name, value)),
        }
    }
    kept
}

/// Directories the sandbox shows anyway: a path under one needs no exposing.
const SYSTEM_DIRS: [&str; 6] = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"];

/// `path` (canonical), unless the sandbox's system view shows it already.
fn outside_system(path: &Path) -> Option<PathBuf> {
    let path = std::fs::canonicalize(path).ok()?;
    let shown = SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir));
    (!shown).then_some(path)
}

/// The program a version manager's shim stands for (pyenv's `shims/python3` is a shell
/// script that picks a version when it runs): the real one, asked of the manager, so the
/// sandbox shows that installation; any other program as it is.
pub(crate) fn unshim(program: &Path) -> PathBuf {
    let shims = program.parent();
    let root = shims.filter(|dir| dir.file_name().is_some_and(|name| name == "shims"));
    let manager = root
        .and_then(Path::parent)
        .map(|root| root.join("libexec/pyenv"));
    let (Some(manager), Some(name)) = (manager.filter(|m| m.is_file()), program.file_name()) else {
        return program.to_path_buf();
    };
    let found = std::process::Command::new(manager)
        .arg("which")
        .arg(name)
        .stderr(std::process::Stdio::null())
        .output();
    match found {
        Ok(output) if output.status.success() => {
            let text = String::from_utf8_lossy(&output.stdout);
            let real = PathBuf::from(text.trim());
            match real.is_file() {
                true => real,
                false => program.to_path_buf(),
            }
        }
        _ => program.to_path_buf(),
    }
}

/// What a program needs shown to run in a sandbox, and the directories to put first on its
/// `PATH`: the program file itself (the whole `node_modules` tree it sits in, for a
/// package's entry point), and for a script its interpreter's installation (found as a
/// shell would: `#!/usr/bin/env python3` looks `python3` up on simtape's `PATH`), the
/// interpreter's directory first on `PATH` so the script finds the same one inside.
pub(crate) fn program_exposure(program: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut expose = Vec::new();
    let mut path_first = Vec::new();
    // The program as named and as it really is (a venv's `python3` is a link into the
    // version it was made from): each shown, so the name resolves inside as outside.
    let named = std::path::absolute(program).unwrap_or_else(|_| program.to_path_buf());
    for path in [Some(named), std::fs::canonicalize(program).ok()]
        .into_iter()
        .flatten()
    {
        if outside_system(&path).is_none() {
            continue;
        }
        let package = path
            .ancestors()
            .filter(|dir| dir.file_name().is_some_and(|name| name == "node_modules"))
            .last()
            .map(Path::to_path_buf);
        let in_bin = path
            .parent()
            .is_some_and(|dir| dir.file_name().is_some_and(|name| name == "bin"));
        expose.push(match (package, in_bin) {
            (Some(package), _) => package,
            (None, true) => installation(&path),
            (None, false) => path,
        });
    }
    if let Some(interpreter) = interpreter(program) {
        if let Some(dir) = interpreter.parent() {
            path_first.push(dir.to_path_buf());
        }
        for path in [
            Some(interpreter.clone()),
            std::fs::canonicalize(&interpreter).ok(),
        ]
        .into_iter()
        .flatten()
        {
            if outside_system(&path).is_none() {
                continue;
            }
            expose.push(installation(&path));
        }
    }
    (expose, path_first)
}

/// A script's interpreter, as an absolute path on this host.
fn interpreter(program: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let read = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = head[..read].split(|&byte| byte == b'\n').next()?;
    let line = std::str::from_utf8(line.strip_prefix(b"#!")?).ok()?;
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name().is_some_and(|name| name == "env") {
        let name = words.find(|word| !word.starts_with('-'))?;
        let path = std::env::var_os("PATH")?;
        return std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file());
    }
    Some(first)
}

/// The installation an interpreter belongs to: the directory above its `bin/` (a venv, a
/// pyenv version, an nvm node), or its own directory. A host HOME itself is never shown
/// whole: then only the interpreter's directory is.
fn installation(interpreter: &Path) -> PathBuf {
    let dir = interpreter.parent().unwrap_or(interpreter);
    let root = match dir.file_name().is_some_and(|name| name == "bin") {
        true => dir.parent().unwrap_or(dir),
        false => dir,
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let too_wide = root.components().count() < 3 || home.as_deref() == Some(root);
    match too_wide {
        true => dir.to_path_buf(),
        false => root.to_path_buf(),
    }
}

/// The paths in order with the ones inside another left out (it shows them already).
pub(crate) fn nested_out(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !kept.iter().any(|outer| path.starts_with(outer)) {
            kept.push(path);
        }
    }
    kept
}

/// Runs each `gate` verifier's program in `work` on the host, in file order.
async fn run_gates(scenario: &EvalScenario, work: &Path, env: &[(String, String)]) -> Vec<GateRun> {
    let mut runs = Vec::new();
    for verifier in &scenario.eval().verify {
        let Check::Gate { program, args, .. } = &verifier.check else {
            continue;
        };
        let spawn = Spawn {
            program: Path::new(program),
            args,
            env,
            cwd: work,
        };
        let run = match AgentProcess::start(&spawn) {
            Ok(mut gate) => {
                let (out, err) = (gate.stdout(), gate.stderr());
                // Its output is not kept (timings make it differ per run); it is read so the
                // program never blocks on a full pipe.
                let drain = async {
                    if let Some(out) = out {
                        process::read_capped(out).await;
                    }
                    if let Some(err) = err {
                        process::read_capped(err).await;
                    }
                };
                let waited = smol::future::or(
                    async {
                        drain.await;
                        Some(gate.wait().await)
                    },
                    async {
                        smol::Timer::after(GATE_TIMEOUT).await;
                        None
                    },
                )
                .await;
                if waited.is_none() {
                    gate.stop().await;
                }
                gate_run(waited)
            }
            Err(error) => GateRun {
                exit_code: None,
                error: Some(format!("cannot start {program:?}: {error}")),
            },
        };
        runs.push(run);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scripts_interpreter_installation_is_shown_and_first_on_path() {
        let dir = std::env::temp_dir().join(format!("simtape-place-{}", std::process::id()));
        let venv = dir.join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("bin/python9"), "").unwrap();
        let script = dir.join("agent.py");
        let shebang = format!("#!{}\nprint('hi')\n", venv.join("bin/python9").display());
        std::fs::write(&script, shebang).unwrap();
        let (expose, path_first) = program_exposure(&script);
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap();
        assert!(expose.contains(&canonical(&script)), "{expose:?}");
        assert!(expose.contains(&canonical(&venv)), "{expose:?}");
        assert_eq!(path_first, [venv.join("bin")]);
        // A system program needs nothing.
        assert_eq!(
            program_exposure(Path::new("/bin/sh")),
            (Vec::new(), Vec::new())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn nested_paths_and_repeated_variables_collapse() {
        let paths = ["/opt/a/b", "/opt/a", "/opt/c", "/opt/a"]
            .map(PathBuf::from)
            .to_vec();
        assert_eq!(nested_out(paths), ["/opt/a", "/opt/c"].map(PathBuf::from));
        let env = [("A", "1"), ("B", "2"), ("A", "3")].map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(
            last_wins(env.to_vec()),
            [("A", "3"), ("B", "2")].map(|(k, v)| (k.to_string(), v.to_string()))
        );
    }
}
