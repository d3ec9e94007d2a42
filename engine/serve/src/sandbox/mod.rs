//! The sandbox every program simtape starts for a scenario runs in: Linux namespaces, set up
//! by simtape itself in a few milliseconds, with no daemon (docs/sandbox.md).
//!
//! What a sandboxed program sees:
//! - **Files**: a root of its own (a size-capped tmpfs) holding read-only views of the system
//!   directories, a synthetic `/etc` core (`passwd`, `group`, `hosts`, `resolv.conf`), the
//!   project at [`PROJECT_DIR`] (an overlay over the scenario's `[fs]` root: its writes land
//!   in the overlay's upper layer, never in the root), an empty [`HOME_DIR`] and `/tmp`, and
//!   the host paths exposed to it read-only at their own paths (its program, its
//!   interpreter's installation, `[agent] expose`). Nothing else of the host: no host HOME,
//!   no files beside the scenario. A write anywhere lands in the tmpfs; the project's writes
//!   are the run's changes, the others are listed ([`Sandbox::writes_outside`]).
//! - **Network**: a namespace with only loopback, where simtape's endpoints listen on fixed
//!   ports ([`SERVE_PORT`]) and simtape answers DNS; every other `connect` is judged by the
//!   scenario's `[network]` policy (`supervisor`).
//! - **Processes**: a pid namespace whose init is simtape's; when a job exits, or the run
//!   ends, or simtape dies (even by SIGKILL), every process in it is gone.
//! - **Identity**: uid and gid 1000 (`agent`), mapped to simtape's own, with no capability;
//!   hostname [`HOSTNAME`]; an environment built from an allow-list ([`base_env`]).
//!
//! The work is split: `plan` decides the view (allocating, in simtape), `child` carries it
//! out after the fork (system calls only), `supervisor` watches the network, `dns` answers
//! lookups, and `view` reads what the program left.

mod busy;
pub use busy::BusyProbe;
mod child;
mod dns;
mod plan;
mod supervisor;
pub mod view;

use std::collections::BTreeSet;
use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use simtape::cap::net::Network;

use crate::limits::SANDBOX_SETUP_TIMEOUT;
pub use plan::base_env;

/// Where the project is, inside: the same path in every run, so neither requests, fixtures
/// nor tapes carry a per-run directory.
pub const PROJECT_DIR: &str = "/project";
/// The program's `HOME`, inside.
pub const HOME_DIR: &str = "/home/agent";
/// Where simtape leaves files for the program (the MCP config, the clock), inside.
pub const RUN_DIR: &str = "/run/simtape";
/// The port simtape's model and MCP endpoints listen on, inside (at 127.0.0.1).
pub const SERVE_PORT: u16 = 7070;
/// The sandbox's host name.
pub const HOSTNAME: &str = "simtape";
/// The uid and gid a sandboxed program runs as.
pub const UID: u32 = 1000;

/// Whether a scenario's programs run sandboxed (`[agent] sandbox`, `--no-sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// In the namespace sandbox (the default on Linux).
    On,
    /// On the host, unconfined: said in the verdict and on the tape.
    Off,
}

impl SandboxMode {
    /// The word for it on the tape header, the verdict line and the JSON.
    pub fn label(self) -> &'static str {
        match self {
            SandboxMode::On => "namespaces",
            SandboxMode::Off => "off",
        }
    }
}

/// A program to run in the sandbox.
#[derive(Debug, Clone)]
pub struct Job {
    /// The program, by its path inside (which is its host path when it is exposed).
    pub program: PathBuf,
    /// Its arguments (without the program's name).
    pub args: Vec<String>,
    /// Its whole environment: nothing of simtape's own is inherited.
    pub env: Vec<(String, String)>,
    /// Where it starts, inside.
    pub cwd: PathBuf,
    /// What it reads on stdin (none: `/dev/null`).
    pub stdin: Option<Vec<u8>>,
}

/// What a sandbox holds.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// The project: an overlay over it (or a read-only view of it when `read_only`) at
    /// `project_at`; `None`: an empty directory there.
    pub project: Option<PathBuf>,
    /// Where the project is inside: [`PROJECT_DIR`] for an agent program; its own path for
    /// a `[process]` program, whose recorded working directory must not change.
    pub project_at: PathBuf,
    /// Whether the project is mounted read-only.
    pub read_only: bool,
    /// Host paths visible inside, read-only, at their own paths.
    pub expose: Vec<PathBuf>,
    /// The policy for connections the programs make.
    pub network: Network,
    /// The programs it will run, in the order the caller starts them (by index).
    pub jobs: Vec<Job>,
}

/// A lookup a sandboxed program made.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Lookup {
    /// The name, lower case.
    pub name: String,
    /// The record type asked for (`A`, `AAAA`, …).
    pub kind: String,
}

/// A connection a sandboxed program attempted (simtape's own endpoints left out).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Connect {
    /// The host: the name it was looked up as, or the address.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether the `[network]` policy allowed it (an allowed one was carried to the host).
    pub allowed: bool,
}

/// What the programs of one sandbox did on the network, as sets: the same program gives the
/// same sets whatever the timing of its threads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkSeen {
    /// Every name looked up.
    pub lookups: BTreeSet<Lookup>,
    /// Every connection attempted.
    pub connects: BTreeSet<Connect>,
    /// Attempts past [`crate::limits::SANDBOX_ATTEMPTS_MAX`], counted only.
    pub dropped: u64,
}

/// Why a sandbox could not be had or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// This system cannot give the namespaces the sandbox needs.
    #[error("the agent sandbox cannot be set up here: {cause}; run with --no-sandbox (or [agent] sandbox = \"off\") to run programs on the host, unconfined")]
    Unavailable {
        /// What is missing, and how it showed.
        cause: String,
    },
    /// A step of the setup failed.
    #[error("the agent sandbox failed to {step}: {source}")]
    Setup {
        /// The step, in words.
        step: String,
        /// Why.
        source: std::io::Error,
    },
    /// A program could not be started inside.
    #[error("cannot start {program} in the agent sandbox: {source}{}", hint(.missing.as_deref()))]
    Exec {
        /// The program's path.
        program: PathBuf,
        /// The path it needs that is not visible inside (itself, or its script's
        /// interpreter): it must be exposed.
        missing: Option<PathBuf>,
        /// Why.
        source: std::io::Error,
    },
    /// The spec cannot be made into a sandbox (a NUL in a path, too many parts).
    #[error("the agent sandbox: {0}")]
    Spec(String),
}

fn hint(missing: Option<&Path>) -> String {
    match missing {
        None => String::new(),
        Some(path) => format!(
            "; {} is not visible inside: expose its directory with [agent] expose = [\"DIR\"] (read-only, at the same path)",
            path.display()
        ),
    }
}

/// A running sandbox: its init and keeper, the pipes to them, simtape's listeners inside,
/// and the network watch. Dropping it ends every process in it and removes everything it
/// held (its files lived in a tmpfs of its own namespace).
#[derive(Debug)]
pub struct Sandbox {
    keeper: libc::pid_t,
    init: libc::pid_t,
    status: Option<smol::Async<File>>,
    control: Option<File>,
    listeners: Vec<std::net::TcpListener>,
    outputs: Vec<Option<(File, File)>>,
    programs: Vec<PathBuf>,
    watch: Option<std::thread::JoinHandle<()>>,
    stop_watch: Option<OwnedFd>,
    seen: Arc<Mutex<NetworkSeen>>,
    baseline: view::Listing,
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobExit {
    /// Its exit status.
    Code(i32),
    /// This signal ended it.
    Signal(i32),
}

/// A started job's output pipes.
#[derive(Debug)]
pub struct JobOutput {
    /// Its stdout.
    pub stdout: smol::Async<File>,
    /// Its stderr.
    pub stderr: smol::Async<File>,
}

impl Sandbox {
    /// Sets the sandbox up: namespaces, the view, the network, the filter; returns once it
    /// is ready to run jobs. Fails with [`SandboxError::Unavailable`] when the system cannot
    /// give the namespaces.
    pub fn start(spec: &SandboxSpec) -> Result<Sandbox, SandboxError> {
        if !cfg!(target_os = "linux") {
            return Err(SandboxError::Unavailable {
                cause: "it needs Linux namespaces, and this is not Linux".into(),
            });
        }
        let pipes = plan::Pipes::new(&spec.jobs)?;
        let (plan, steps) = plan::build(spec, &pipes)?;
        let keeper = fork_keeper(&plan)?;
        let plan::Pipes {
            status_read,
            status_write,
            control_read,
            control_write,
            pass_read,
            pass_write,
            outputs,
            inputs,
            stdins,
        } = pipes;
        // The children's ends are theirs alone: a keeper or init that dies during setup
        // then shows as the status pipe's end, at once.
        drop((status_write, control_read, pass_write, inputs, stdins));
        drop(plan);
        let mut sandbox = Sandbox {
            keeper,
            init: 0,
            status: None,
            control: Some(File::from(control_write)),
            listeners: Vec::new(),
            outputs: outputs
                .into_iter()
                .map(|(out, err)| Some((File::from(out), File::from(err))))
                .collect(),
            programs: spec.jobs.iter().map(|job| job.program.clone()).collect(),
            watch: None,
            stop_watch: None,
            seen: Arc::new(Mutex::new(NetworkSeen::default())),
            baseline: view::Listing::default(),
        };
        let mut status = File::from(status_read);
        sandbox.init = setup(&mut status, &steps)?;
        let mut fds = receive_fds(&pass_read)?;
        // init sent the TCP listeners, the DNS socket, then the seccomp listener.
        let notify = fds
            .pop()
            .ok_or_else(|| setup_error("receive its descriptors"))?;
        let dns = fds
            .pop()
            .ok_or_else(|| setup_error("receive its descriptors"))?;
        sandbox.listeners = fds.into_iter().map(std::net::TcpListener::from).collect();
        sandbox.status = Some(
            smol::Async::new(status).map_err(|source| SandboxError::Setup {
                step: "watch its status".into(),
                source,
            })?,
        );
        sandbox.start_watch(spec, notify, std::net::UdpSocket::from(dns))?;
        Ok(sandbox)
    }

    fn start_watch(
        &mut self,
        spec: &SandboxSpec,
        notify: OwnedFd,
        dns: std::net::UdpSocket,
    ) -> Result<(), SandboxError> {
        let (stop_read, stop_write) = plan::pipe().map_err(|source| SandboxError::Setup {
            step: "start the network watch".into(),
            source,
        })?;
        let watch = supervisor::Watch {
            notify,
            dns,
            stop: stop_read,
            network: spec.network.clone(),
            own_ports: vec![SERVE_PORT, plan::DNS_PORT],
            seen: Arc::clone(&self.seen),
        };
        let thread = std::thread::Builder::new()
            .name("simtape-sandbox-net".into())
            .spawn(move || supervisor::run(watch))
            .map_err(|source| SandboxError::Setup {
                step: "start the network watch".into(),
                source,
            })?;
        self.watch = Some(thread);
        self.stop_watch = Some(stop_write);
        Ok(())
    }

    /// Takes simtape's listener on [`SERVE_PORT`] inside the sandbox (once).
    pub fn take_listener(&mut self) -> Option<std::net::TcpListener> {
        self.listeners.pop()
    }

    /// The sandbox's root, as simtape reaches it (`/proc/PID/root` of its init): files
    /// written under it appear inside; the project is at `root().join("project")`.
    pub fn root(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.init))
    }

    /// The path, for simtape, of `inside` (an absolute path inside).
    pub fn host_path(&self, inside: &str) -> PathBuf {
        self.root().join(inside.trim_start_matches('/'))
    }

    /// Writes a file for the program at `inside` (its parent directories made).
    pub fn put(&self, inside: &str, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.host_path(inside);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)
    }

    /// Starts job `job`; returns its output pipes once it runs.
    pub async fn start_job(&mut self, job: usize) -> Result<JobOutput, SandboxError> {
        let program = self.programs.get(job).cloned().unwrap_or_default();
        let (stdout, stderr) = self
            .outputs
            .get_mut(job)
            .and_then(Option::take)
            .ok_or_else(|| SandboxError::Spec(format!("job {job} was started already")))?;
        let index = u8::try_from(job).map_err(|_| SandboxError::Spec("too many jobs".into()))?;
        // What simtape itself put in the sandbox (its MCP config, the clock) is not the
        // program's writing: the listing that tells those starts with the first job.
        if job == 0 {
            self.baseline = view::Listing::of(&self.root());
        }
        self.command(&[child::command::RUN, index]);
        let inside = self.host_path(&program.display().to_string());
        let missing = match inside.exists() {
            false => Some(program.clone()),
            // A script whose interpreter is not there fails as if it were missing itself.
            true => interpreter(&inside)
                .filter(|interpreter| !self.host_path(&interpreter.display().to_string()).exists()),
        };
        let exec_error = |errno: i32| SandboxError::Exec {
            missing: missing.clone(),
            program: program.clone(),
            source: std::io::Error::from_raw_os_error(errno),
        };
        loop {
            let message = self
                .next_message()
                .await
                .map_err(|source| SandboxError::Setup {
                    step: format!("start {}", program.display()),
                    source,
                })?;
            if message.a as usize != job {
                continue;
            }
            match message.tag {
                child::tag::STARTED => break,
                child::tag::EXEC_FAILED => return Err(exec_error(message.b)),
                _ => {}
            }
        }
        let wrap = |file: File| {
            smol::Async::new(file).map_err(|source| SandboxError::Setup {
                step: "read a program's output".into(),
                source,
            })
        };
        Ok(JobOutput {
            stdout: wrap(stdout)?,
            stderr: wrap(stderr)?,
        })
    }

    /// Waits for job `job` to end (and with it every other process in the sandbox), or for
    /// the program's exec to fail, which is an exit with status 127 after the job started
    /// (`execve` runs after [`Sandbox::start_job`] returned).
    pub async fn wait_job(&mut self, job: usize) -> JobExit {
        loop {
            let Ok(message) = self.next_message().await else {
                return JobExit::Signal(libc::SIGKILL);
            };
            if message.a as usize != job {
                continue;
            }
            match message.tag {
                child::tag::EXITED => {
                    let status = message.b;
                    return match libc::WIFEXITED(status) {
                        true => JobExit::Code(libc::WEXITSTATUS(status)),
                        false => JobExit::Signal(libc::WTERMSIG(status)),
                    };
                }
                child::tag::EXEC_FAILED => return JobExit::Code(127),
                _ => {}
            }
        }
    }

    /// Sends SIGTERM to every process in the sandbox.
    pub fn terminate(&mut self) {
        self.command(&[child::command::TERM]);
    }

    /// Sends SIGKILL to every process in the sandbox.
    pub fn kill(&mut self) {
        self.command(&[child::command::KILL]);
    }

    fn command(&mut self, bytes: &[u8]) {
        use std::io::Write;
        if let Some(control) = self.control.as_mut() {
            let _ = control.write_all(bytes);
        }
    }

    async fn next_message(&mut self) -> std::io::Result<child::Message> {
        use smol::io::AsyncReadExt;
        let status = self
            .status
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the sandbox is gone"))?;
        let mut bytes = [0u8; std::mem::size_of::<child::Message>()];
        status.read_exact(&mut bytes).await?;
        Ok(message_of(&bytes))
    }

    /// What the programs did on the network so far.
    pub fn network_seen(&self) -> NetworkSeen {
        self.seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The files written (or removed) outside the project since the first job started, in
    /// path order: those elsewhere, then those in the program's scratch places (its HOME,
    /// `/tmp`, `/var/tmp`). The scratch places hold the program's own state (session files,
    /// caches, locks, watcher probes), which CLIs write from background tasks as their
    /// timing falls (measured: Claude Code's file-watch probe under /tmp, Codex's SQLite
    /// journal in its HOME): they are for people (the evidence), not for the tape.
    pub fn writes_outside(&self) -> (Vec<view::OutsideWrite>, Vec<view::OutsideWrite>) {
        let all = view::Listing::of(&self.root()).changes_since(&self.baseline);
        let scratch = [format!("{HOME_DIR}/"), "/tmp/".into(), "/var/tmp/".into()];
        all.into_iter().partition(|write| {
            !scratch
                .iter()
                .any(|place| write.path.starts_with(place.as_str()))
        })
    }

    /// Whether any process in the sandbox is busy (a thread running, waiting to run, or in
    /// uninterruptible I/O), rather than blocked on what it waits for.
    pub fn busy_probe(&self) -> BusyProbe {
        busy::BusyProbe::new(self.init)
    }

    /// The project as simtape reads it.
    pub fn project(&self) -> PathBuf {
        self.host_path(PROJECT_DIR)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // Closing the control pipe ends init, and with it every process in the namespace.
        self.control = None;
        // SAFETY: signalling and reaping the keeper and init, which this value owns.
        #[allow(unsafe_code)]
        unsafe {
            if self.init > 0 {
                libc::kill(self.init, libc::SIGKILL);
            }
            libc::kill(self.keeper, libc::SIGKILL);
            let mut status = 0;
            libc::waitpid(self.keeper, &mut status, 0);
        }
        drop(self.stop_watch.take());
        if let Some(watch) = self.watch.take() {
            let _ = watch.join();
        }
    }
}

/// The interpreter a script names on its `#!` line.
fn interpreter(script: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let read = File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..read].split(|&byte| byte == b'\n').next()?;
    let line = std::str::from_utf8(line.strip_prefix(b"#!")?).ok()?;
    line.split_whitespace().next().map(PathBuf::from)
}

/// Whether this system gives the sandbox's namespaces: a sandbox with nothing in it is set
/// up and torn down once per process (a few milliseconds), and the answer kept.
pub fn probe() -> Result<(), SandboxError> {
    // The cause the namespaces cannot be had, kept as text: the first error is not `Clone`.
    static UNAVAILABLE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let unavailable = UNAVAILABLE.get_or_init(|| {
        let spec = SandboxSpec {
            project: None,
            project_at: PathBuf::from(PROJECT_DIR),
            read_only: false,
            expose: Vec::new(),
            network: Network::deny(),
            jobs: Vec::new(),
        };
        match Sandbox::start(&spec) {
            Ok(_) => None,
            Err(SandboxError::Unavailable { cause }) => Some(cause),
            Err(other) => Some(format!("a trial sandbox failed: {other}")),
        }
    });
    match unavailable {
        None => Ok(()),
        Some(cause) => Err(SandboxError::Unavailable {
            cause: cause.clone(),
        }),
    }
}

fn setup_error(step: &str) -> SandboxError {
    SandboxError::Setup {
        step: step.into(),
        source: std::io::Error::other("the sandbox ended during setup"),
    }
}

fn message_of(bytes: &[u8; 12]) -> child::Message {
    let word = |at: usize| [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
    child::Message {
        tag: u32::from_ne_bytes(word(0)),
        a: u32::from_ne_bytes(word(4)),
        b: i32::from_ne_bytes(word(8)),
    }
}

/// Reads setup messages until both the keeper's (init's pid) and init's (ready) came, in
/// whichever order they do (init may be ready before the keeper has reported); a failure
/// names its step. Returns init's pid.
fn setup(status: &mut File, steps: &[String]) -> Result<libc::pid_t, SandboxError> {
    let (mut init, mut ready) = (None, false);
    let deadline = std::time::Instant::now() + SANDBOX_SETUP_TIMEOUT;
    while init.is_none() || !ready {
        let mut polled = libc::pollfd {
            fd: status.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let timeout = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
        #[allow(unsafe_code)]
        // SAFETY: `polled` is one live pollfd.
        let polled = unsafe { libc::poll(&mut polled, 1, timeout) };
        if polled == 0 {
            return Err(SandboxError::Setup {
                step: "start".into(),
                source: std::io::Error::from(std::io::ErrorKind::TimedOut),
            });
        }
        if polled < 0 {
            continue;
        }
        let mut bytes = [0u8; 12];
        status
            .read_exact(&mut bytes)
            .map_err(|_| setup_error("start"))?;
        let message = message_of(&bytes);
        match message.tag {
            child::tag::INIT_PID => init = Some(message.a as libc::pid_t),
            child::tag::READY => ready = true,
            child::tag::FAILED => return Err(failure(message.a, message.b, steps)),
            _ => {}
        }
    }
    Ok(init.unwrap_or_default())
}

/// The error of setup step `step` failing with `errno`: namespaces refused are
/// [`SandboxError::Unavailable`].
fn failure(step: u32, errno: i32, steps: &[String]) -> SandboxError {
    let source = std::io::Error::from_raw_os_error(errno);
    let words = match step {
        child::step::UNSHARE => {
            return SandboxError::Unavailable {
                cause: format!(
                    "unshare(user, mount, net, uts, ipc and pid namespaces) failed: {source}{}",
                    unshare_hint()
                ),
            }
        }
        child::step::UID_MAP | child::step::SETGROUPS | child::step::GID_MAP => {
            return SandboxError::Unavailable {
                cause: format!("mapping uid {UID} in a user namespace failed: {source}"),
            }
        }
        child::step::FORK_INIT => "start its init".to_string(),
        child::step::PRIVATE => "make its mounts private".to_string(),
        child::step::HOSTNAME => "set its host name".to_string(),
        child::step::PIVOT => "switch to its root (pivot_root)".to_string(),
        child::step::LOOPBACK => "bring up its loopback interface".to_string(),
        child::step::LISTEN => "open simtape's listeners inside it".to_string(),
        child::step::SECCOMP => "install its network filter (seccomp)".to_string(),
        child::step::PASS => "hand simtape its listeners".to_string(),
        child::step::SIGNALS => "watch its processes (signalfd)".to_string(),
        plan_step => steps
            .get(plan_step.saturating_sub(child::step::PLAN) as usize)
            .cloned()
            .unwrap_or_else(|| format!("run setup step {plan_step}")),
    };
    SandboxError::Setup {
        step: words,
        source,
    }
}

/// Why user namespaces may be refused, read from the system's settings.
fn unshare_hint() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
    };
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return " (user namespaces are disabled: /proc/sys/user/max_user_namespaces is 0)".into();
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return " (unprivileged user namespaces are disabled: kernel.unprivileged_userns_clone is 0)".into();
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return " (AppArmor restricts unprivileged user namespaces: kernel.apparmor_restrict_unprivileged_userns is 1)".into();
    }
    " (a container without CAP_SYS_ADMIN, or a seccomp profile that refuses unshare)".into()
}

/// Forks the keeper (see `child`); returns its pid.
fn fork_keeper(plan: &child::Plan) -> Result<libc::pid_t, SandboxError> {
    // SAFETY: `getpid` and `fork` are plain system calls; the child runs only `child::keeper`,
    // which allocates nothing and never returns.
    #[allow(unsafe_code)]
    unsafe {
        let parent = libc::getpid();
        match libc::fork() {
            -1 => Err(SandboxError::Setup {
                step: "fork".into(),
                source: std::io::Error::last_os_error(),
            }),
            0 => child::keeper(plan, parent),
            keeper => Ok(keeper),
        }
    }
}

/// Receives the descriptors init passed (one SCM_RIGHTS message).
fn receive_fds(socket: &OwnedFd) -> Result<Vec<OwnedFd>, SandboxError> {
    const FDS_MAX: usize = 8;
    let mut byte = [0u8; 1];
    #[repr(C, align(8))]
    struct Control([u8; 128]);
    let mut control = Control([0; 128]);
    let mut fds = Vec::new();
    // SAFETY: the message and its buffers live on this stack for the call; each descriptor
    // the kernel installed is owned at once.
    #[allow(unsafe_code)]
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = control.0.len() as _;
        let received = libc::recvmsg(socket.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC);
        if received < 0 {
            return Err(SandboxError::Setup {
                step: "receive its descriptors".into(),
                source: std::io::Error::last_os_error(),
            });
        }
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header).cast::<RawFd>();
                let bytes = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for index in 0..(bytes / 4).min(FDS_MAX) {
                    let fd = std::ptr::read_unaligned(data.add(index));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    Ok(fds)
}

/// A path as a C string, or the spec error naming it.
fn c_path(path: &Path) -> Result<CString, SandboxError> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| SandboxError::Spec(format!("{} holds a NUL byte", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `script` under `sh` in a sandbox of `project`; returns its stdout, stderr and
    /// exit, and the sandbox (still up) for what it left.
    pub(crate) fn sh(project: Option<&Path>, script: &str) -> (String, String, JobExit, Sandbox) {
        let spec = SandboxSpec {
            project: project.map(Path::to_path_buf),
            project_at: PathBuf::from(PROJECT_DIR),
            read_only: false,
            expose: Vec::new(),
            network: Network::deny(),
            jobs: vec![Job {
                program: PathBuf::from("/bin/sh"),
                args: vec!["-c".into(), script.into()],
                env: base_env(&[]),
                cwd: PathBuf::from(PROJECT_DIR),
                stdin: None,
            }],
        };
        let mut sandbox = Sandbox::start(&spec).expect("a sandbox");
        let (out, err, exit) = smol::block_on(async {
            use smol::io::AsyncReadExt;
            let mut output = sandbox.start_job(0).await.expect("the job starts");
            let (mut out, mut err) = (String::new(), String::new());
            let _ = output.stdout.read_to_string(&mut out).await;
            let _ = output.stderr.read_to_string(&mut err).await;
            (out, err, sandbox.wait_job(0).await)
        });
        (out, err, exit, sandbox)
    }

    /// A fresh host directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("simtape-sbx-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_program_runs_as_agent_in_a_view_of_its_own() {
        let (out, err, exit, _sandbox) = sh(
            None,
            "id -u; id -g; hostname; pwd; echo $HOME; grep -c . /etc/passwd; ls /; \
             echo x > /dev/null && head -c 4 /dev/zero | wc -c",
        );
        assert_eq!(exit, JobExit::Code(0), "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            &lines[..6],
            ["1000", "1000", HOSTNAME, PROJECT_DIR, HOME_DIR, "3"]
        );
        assert!(
            !lines.contains(&"root") && !lines.contains(&"work"),
            "{out}"
        );
    }

    #[test]
    fn host_files_outside_the_view_cannot_be_read() {
        // A secret beside the project, the host's shadow file and HOME: none is there.
        let dir = scratch("reads");
        std::fs::create_dir_all(dir.join("repo")).unwrap();
        std::fs::write(dir.join("secret.txt"), "s3cret").unwrap();
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        let script = format!(
            "cat {d}/secret.txt; cat /etc/shadow; ls {home}; cat ../secret.txt; echo done",
            d = dir.display()
        );
        let (out, err, _, _sandbox) = sh(Some(&dir.join("repo")), &script);
        assert_eq!(out.trim(), "done", "nothing was read: {out}");
        assert_eq!(err.matches("No such file or directory").count(), 4, "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writes_land_in_the_sandbox_and_leave_the_host_as_it_was() {
        let dir = scratch("writes");
        let repo = dir.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(repo.join("a.txt"), "a\n").unwrap();
        let script = format!(
            "echo changed > a.txt; echo new > b.txt; echo t > /tmp/t.txt; echo h > $HOME/h.txt; \
             mkdir -p {repo} && echo x > {repo}/escape.txt; rm -f {repo}/a.txt; echo done",
            repo = repo.display()
        );
        let (out, err, exit, sandbox) = sh(Some(&repo), &script);
        assert_eq!((exit, out.trim()), (JobExit::Code(0), "done"), "{err}");
        // The host's project is as it was.
        let names: Vec<String> = std::fs::read_dir(&repo)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.txt"]);
        assert_eq!(std::fs::read_to_string(repo.join("a.txt")).unwrap(), "a\n");
        // The project's changes are in the sandbox's project.
        let project = sandbox.project();
        assert_eq!(
            std::fs::read_to_string(project.join("a.txt")).unwrap(),
            "changed\n"
        );
        assert_eq!(
            std::fs::read_to_string(project.join("b.txt")).unwrap(),
            "new\n"
        );
        // The others are listed: the scratch places (HOME, /tmp, where this test's real
        // root is too) apart from the rest.
        std::fs::write(sandbox.host_path("/opt-made-up.txt"), "x").unwrap();
        let (elsewhere, scratch) = sandbox.writes_outside();
        let elsewhere: Vec<String> = elsewhere.into_iter().map(|write| write.path).collect();
        assert_eq!(elsewhere, ["/opt-made-up.txt"]);
        let scratch: Vec<String> = scratch.into_iter().map(|write| write.path).collect();
        assert_eq!(scratch.len(), 3, "{scratch:?}");
        assert_eq!(scratch[0], format!("{HOME_DIR}/h.txt"));
        assert!(scratch[1].ends_with("/repo/escape.txt"), "{scratch:?}");
        assert_eq!(scratch[2], "/tmp/t.txt");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The pids of host processes whose command line holds `marker`.
    fn alive(marker: &str) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let cmdline = entry.path().join("cmdline");
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            if let Ok(bytes) = std::fs::read(&cmdline) {
                let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
                if text.contains(marker) && !stat.contains(") Z ") {
                    found.push(format!("{} {text}", entry.file_name().to_string_lossy()));
                }
            }
        }
        found
    }

    #[test]
    fn nothing_a_program_started_outlives_it() {
        // A double-forked setsid daemon and a background child, both ignoring SIGTERM.
        let script = "(setsid sh -c 'trap \"\" TERM; exec sleep 4242' &); \
                      sh -c 'trap \"\" TERM; exec sleep 4243' & echo started";
        let (out, _, exit, sandbox) = sh(None, script);
        assert_eq!((exit, out.trim()), (JobExit::Code(0), "started"));
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(alive("sleep 424"), Vec::<String>::new());
        drop(sandbox);
    }

    #[test]
    fn connections_past_the_policy_are_refused_and_named() {
        // A server of the host's own on loopback: not reachable from inside.
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let script = format!(
            "curl -sS -m 5 http://127.0.0.1:{port}/; echo curl=$?; \
             getent hosts api.example.com; curl -sS -m 5 http://api.example.com:8443/ ; echo done"
        );
        let (out, err, _, sandbox) = sh(None, &script);
        assert!(out.contains("curl=7"), "refused: {out}\n{err}");
        assert!(out.contains("198.1"), "looked up: {out}");
        let seen = sandbox.network_seen();
        let connects: Vec<(String, u16, bool)> = seen
            .connects
            .iter()
            .map(|c| (c.host.clone(), c.port, c.allowed))
            .collect();
        assert_eq!(
            connects,
            [
                ("127.0.0.1".to_string(), port, false),
                ("api.example.com".to_string(), 8443, false)
            ]
        );
        assert!(
            seen.lookups
                .iter()
                .any(|l| l.name == "api.example.com" && l.kind == "A"),
            "{seen:?}"
        );
        drop(server);
    }

    #[test]
    fn a_program_that_cannot_start_is_named() {
        let spec = SandboxSpec {
            project: None,
            project_at: PathBuf::from(PROJECT_DIR),
            read_only: false,
            expose: Vec::new(),
            network: Network::deny(),
            jobs: vec![Job {
                program: PathBuf::from("/opt/nowhere/agent"),
                args: Vec::new(),
                env: base_env(&[]),
                cwd: PathBuf::from(PROJECT_DIR),
                stdin: None,
            }],
        };
        let mut sandbox = Sandbox::start(&spec).unwrap();
        let error = smol::block_on(sandbox.start_job(0)).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("/opt/nowhere/agent") && text.contains("expose"),
            "{text}"
        );
    }
}
