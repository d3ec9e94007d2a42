//! What a sandbox holds, decided in simtape before the fork: every mount, directory and file
//! of the view, each program's `argv` and `envp`, the pipes. `child` only carries it out.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Component, Path, PathBuf};

use super::child::{JobPlan, Plan, Step};
use super::{c_path, SandboxError, SandboxSpec, HOME_DIR, HOSTNAME, PROJECT_DIR, RUN_DIR, UID};
use crate::limits::{SANDBOX_ROOT_BYTES, SANDBOX_ROOT_INODES};

/// The port simtape answers DNS on, inside.
pub(super) const DNS_PORT: u16 = 53;
/// Where the new root is mounted before `pivot_root`: an existing directory of the host,
/// covered only inside the sandbox's private mount namespace (every source of the view is
/// captured before it is covered).
const STAGING: &str = "/tmp";
/// Top-level system directories shown read-only (or as the same symbolic links).
const SYSTEM: [&str; 7] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];
/// Entries of the host's `/etc` shown read-only: what dynamic linking, TLS, locales and the
/// usual interpreters read. Not `passwd`, `group`, `shadow`, `hosts`, `hostname`,
/// `resolv.conf` or `machine-id`: the sandbox has its own or none.
const ETC_SHARED: [&str; 27] = [
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "gai.conf",
    "gitconfig",
    "host.conf",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "magic",
    "magic.mime",
    "mime.types",
    "netconfig",
    "networks",
    "os-release",
    "profile",
    "profile.d",
    "protocols",
    "python3",
    "services",
    "shells",
    "ssl",
    "terminfo",
];
/// Device nodes shown (bound from the host's).
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// The pipes between simtape and the sandbox.
pub(super) struct Pipes {
    pub status_read: OwnedFd,
    pub status_write: OwnedFd,
    pub control_read: OwnedFd,
    pub control_write: OwnedFd,
    pub pass_read: OwnedFd,
    pub pass_write: OwnedFd,
    /// Per job: the read ends of stdout and stderr (simtape's)…
    pub outputs: Vec<(OwnedFd, OwnedFd)>,
    /// …and their write ends (the job's).
    pub inputs: Vec<(OwnedFd, OwnedFd)>,
    /// Per job with stdin bytes: a memory file holding them (no pipe, so no writer can
    /// block or meet a reader that never came).
    pub stdins: Vec<Option<OwnedFd>>,
}

impl Pipes {
    pub(super) fn new(jobs: &[super::Job]) -> Result<Pipes, SandboxError> {
        let setup = |source| SandboxError::Setup {
            step: "make its pipes".into(),
            source,
        };
        let (status_read, status_write) = pipe().map_err(setup)?;
        let (control_read, control_write) = pipe().map_err(setup)?;
        let (pass_read, pass_write) = socket_pair().map_err(setup)?;
        let mut outputs = Vec::new();
        let mut inputs = Vec::new();
        let mut stdins = Vec::new();
        for job in jobs {
            let (out_read, out_write) = pipe().map_err(setup)?;
            let (err_read, err_write) = pipe().map_err(setup)?;
            outputs.push((out_read, err_read));
            inputs.push((out_write, err_write));
            stdins.push(match &job.stdin {
                Some(bytes) => Some(memory_file(bytes).map_err(setup)?),
                None => None,
            });
        }
        Ok(Pipes {
            status_read,
            status_write,
            control_read,
            control_write,
            pass_read,
            pass_write,
            outputs,
            inputs,
            stdins,
        })
    }
}

/// A pipe, both ends close-on-exec: (read, write).
pub(super) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    #[allow(unsafe_code)]
    // SAFETY: `pipe2` fills the two-element array; each end is owned at once.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        use std::os::fd::FromRawFd;
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// A memory file holding `bytes`, read from its start.
fn memory_file(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    use std::io::{Seek, Write};
    #[allow(unsafe_code)]
    // SAFETY: `memfd_create` with a NUL-terminated name; the descriptor is owned at once.
    let fd = unsafe {
        let fd = libc::memfd_create(c"stdin".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        use std::os::fd::FromRawFd;
        OwnedFd::from_raw_fd(fd)
    };
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    file.rewind()?;
    Ok(OwnedFd::from(file))
}

fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (a, b) = std::os::unix::net::UnixStream::pair()?;
    Ok((OwnedFd::from(a), OwnedFd::from(b)))
}

/// The environment every sandboxed program starts from, before the endpoints', the
/// adapter's and the scenario's variables: nothing of the host's. `path_first` are
/// directories put before the system's on `PATH` (an exposed interpreter's).
pub fn base_env(path_first: &[PathBuf]) -> Vec<(String, String)> {
    let mut path: Vec<String> = path_first.iter().map(|d| d.display().to_string()).collect();
    path.extend(
        [
            "/usr/local/sbin",
            "/usr/local/bin",
            "/usr/sbin",
            "/usr/bin",
            "/sbin",
            "/bin",
        ]
        .map(String::from),
    );
    [
        ("PATH", path.join(":")),
        ("HOME", HOME_DIR.to_string()),
        ("USER", "agent".to_string()),
        ("LOGNAME", "agent".to_string()),
        ("SHELL", "/bin/sh".to_string()),
        ("TERM", "dumb".to_string()),
        ("LANG", "C.UTF-8".to_string()),
        ("TMPDIR", "/tmp".to_string()),
        ("TZ", "UTC".to_string()),
        // A bytecode cache holds its source file's modification time, a wall-clock read
        // that would make the project's changes differ run to run.
        ("PYTHONDONTWRITEBYTECODE", "1".to_string()),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .to_vec()
}

/// The steps, with a phrase for each (for an error naming the step that failed). Captures
/// run first, before the new root covers the staging directory; the rest in order.
struct Steps {
    captures: Vec<(Step, String)>,
    steps: Vec<Step>,
    names: Vec<String>,
    slots: usize,
    made: BTreeSet<PathBuf>,
}

impl Steps {
    fn push(&mut self, step: Step, name: String) {
        self.steps.push(step);
        self.names.push(name);
    }

    /// `path` (absolute, inside) as the staging path before `pivot_root`.
    fn staged(path: &Path) -> PathBuf {
        Path::new(STAGING).join(path.strip_prefix("/").unwrap_or(path))
    }

    /// Makes `dir` and its missing parents, inside.
    fn mkdir_all(&mut self, dir: &Path, mode: u32) -> Result<(), SandboxError> {
        let mut at = PathBuf::from("/");
        for part in dir.components().skip(1) {
            at.push(part);
            if self.made.insert(at.clone()) {
                let path = c_path(&Self::staged(&at))?;
                let name = format!("make {}", at.display());
                // Parents are plain directories; the mode is the last one's.
                let mode = if at == dir { mode } else { 0o755 };
                self.push(Step::Mkdir { path, mode }, name);
            }
        }
        Ok(())
    }

    /// Shows host `source` read-only at `target` inside (a directory, a file, or the same
    /// symbolic link).
    fn show(&mut self, source: &Path, target: &Path, optional: bool) -> Result<(), SandboxError> {
        let Ok(meta) = std::fs::symlink_metadata(source) else {
            if optional {
                return Ok(());
            }
            return Err(SandboxError::Spec(format!(
                "{} does not exist (it was to be shown inside)",
                source.display()
            )));
        };
        if let Some(parent) = target.parent() {
            self.mkdir_all(parent, 0o755)?;
        }
        let staged = c_path(&Self::staged(target))?;
        if meta.file_type().is_symlink() {
            let link = std::fs::read_link(source).map_err(|source_error| SandboxError::Setup {
                step: format!("read the link {}", source.display()),
                source: source_error,
            })?;
            let name = format!("link {} to {}", target.display(), link.display());
            self.made.insert(target.to_path_buf());
            self.push(
                Step::Symlink {
                    target: c_path(&link)?,
                    path: staged,
                },
                name,
            );
            return Ok(());
        }
        let slot = self.slots;
        self.slots += 1;
        let capture = Step::Capture {
            source: c_path(source)?,
            slot,
            optional,
            device: source.starts_with("/dev"),
        };
        let name = format!("expose {} (read-only)", source.display());
        self.captures.push((capture, name));
        if meta.is_dir() {
            if self.made.insert(target.to_path_buf()) {
                let name = format!("make {}", target.display());
                let path = staged.clone();
                self.push(Step::Mkdir { path, mode: 0o755 }, name);
            }
        } else {
            let name = format!("make {}", target.display());
            self.push(
                Step::Touch {
                    path: staged.clone(),
                },
                name,
            );
        }
        let name = format!("mount {} at {}", source.display(), target.display());
        self.push(Step::Attach { slot, path: staged }, name);
        Ok(())
    }

    fn file(&mut self, target: &str, text: String) -> Result<(), SandboxError> {
        let path = c_path(&Self::staged(Path::new(target)))?;
        let name = format!("write {target}");
        self.push(
            Step::File {
                path,
                bytes: text.into_bytes(),
                mode: 0o644,
            },
            name,
        );
        Ok(())
    }

    fn mount(
        &mut self,
        fstype: &str,
        target: &Path,
        flags: libc::c_ulong,
        data: &str,
    ) -> Result<(), SandboxError> {
        let name = format!("mount {fstype} at {}", target.display());
        let step = Step::Mount {
            fstype: CString::new(fstype).map_err(|_| SandboxError::Spec("fstype".into()))?,
            path: c_path(&Self::staged(target))?,
            flags,
            data: CString::new(data)
                .map_err(|_| SandboxError::Spec(format!("{data:?} holds a NUL byte")))?,
        };
        self.push(step, name);
        Ok(())
    }
}

/// Builds the plan of `spec` over `pipes`; returns it with a phrase per step.
pub(super) fn build(
    spec: &SandboxSpec,
    pipes: &Pipes,
) -> Result<(Plan, Vec<String>), SandboxError> {
    let mut steps = Steps {
        captures: Vec::new(),
        steps: Vec::new(),
        names: Vec::new(),
        slots: 0,
        made: BTreeSet::new(),
    };
    steps.made.insert(PathBuf::from("/"));
    steps.push(Step::Root, "mount its root (tmpfs)".into());
    for dir in SYSTEM {
        steps.show(Path::new(dir), Path::new(dir), true)?;
    }
    steps.mkdir_all(Path::new("/etc"), 0o755)?;
    for entry in ETC_SHARED {
        let path = Path::new("/etc").join(entry);
        steps.show(&path, &path, true)?;
    }
    synthetic_etc(&mut steps)?;
    devices(&mut steps)?;
    for (dir, mode) in [
        ("/tmp", 0o1777),
        ("/var/tmp", 0o1777),
        (HOME_DIR, 0o755),
        (RUN_DIR, 0o755),
    ] {
        steps.mkdir_all(Path::new(dir), mode)?;
    }
    project(&mut steps, spec)?;
    for path in &spec.expose {
        check_exposable(path)?;
        steps.show(path, path, false)?;
    }
    steps.mkdir_all(Path::new("/proc"), 0o555)?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    steps.mount("proc", Path::new("/proc"), flags, "")?;
    if steps.slots > 256 {
        return Err(SandboxError::Spec(format!(
            "{} paths to expose: at most 256",
            steps.slots
        )));
    }
    let jobs = jobs(spec, pipes)?;
    let (mut all, mut names): (Vec<Step>, Vec<String>) = steps.captures.into_iter().unzip();
    all.append(&mut steps.steps);
    names.append(&mut steps.names);
    let (uid, gid) = ids();
    let keep = [
        pipes.status_write.as_raw_fd(),
        pipes.control_read.as_raw_fd(),
        pipes.pass_write.as_raw_fd(),
    ];
    let mut kept = keep.to_vec();
    for (out, err) in &pipes.inputs {
        kept.extend([out.as_raw_fd(), err.as_raw_fd()]);
    }
    for stdin in pipes.stdins.iter().flatten() {
        kept.push(stdin.as_raw_fd());
    }
    kept.sort_unstable();
    let plan = Plan {
        uid_map: format!("{UID} {uid} 1\n").into_bytes(),
        gid_map: format!("{UID} {gid} 1\n").into_bytes(),
        root: c_path(Path::new(STAGING))?,
        put_old: c_path(&Path::new(STAGING).join(".oldroot"))?,
        old_inside: c_path(Path::new("/.oldroot"))?,
        root_data: CString::new(format!(
            "size={SANDBOX_ROOT_BYTES},nr_inodes={SANDBOX_ROOT_INODES},mode=0755"
        ))
        .expect("no NUL in numbers"),
        steps: all,
        hostname: HOSTNAME.as_bytes().to_vec(),
        tcp_ports: vec![super::SERVE_PORT],
        dns_port: DNS_PORT,
        filter: super::supervisor::filter(),
        jobs,
        dev_null: c_path(Path::new("/dev/null"))?,
        keep: kept,
        status: keep[0],
        control: keep[1],
        pass: keep[2],
    };
    Ok((plan, names))
}

fn ids() -> (u32, u32) {
    #[allow(unsafe_code)]
    // SAFETY: `geteuid` and `getegid` cannot fail.
    unsafe {
        (libc::geteuid(), libc::getegid())
    }
}

fn synthetic_etc(steps: &mut Steps) -> Result<(), SandboxError> {
    steps.file(
        "/etc/passwd",
        format!(
            "root:x:0:0:root:/root:/bin/sh\nagent:x:{UID}:{UID}:agent:{HOME_DIR}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        ),
    )?;
    steps.file(
        "/etc/group",
        format!("root:x:0:\nagent:x:{UID}:\nnogroup:x:65534:\n"),
    )?;
    steps.file(
        "/etc/hosts",
        format!("127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost ip6-localhost\n"),
    )?;
    steps.file("/etc/hostname", format!("{HOSTNAME}\n"))?;
    // simtape answers DNS inside; one attempt, no search domains, so a lookup is one query.
    steps.file(
        "/etc/resolv.conf",
        "nameserver 127.0.0.1\noptions attempts:1 timeout:2\n".into(),
    )?;
    steps.file(
        "/etc/nsswitch.conf",
        "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n".into(),
    )?;
    steps.file("/etc/timezone", "Etc/UTC\n".into())?;
    let name = "link /etc/localtime to UTC".to_string();
    steps.push(
        Step::Symlink {
            target: c_path(Path::new("/usr/share/zoneinfo/Etc/UTC"))?,
            path: c_path(&Steps::staged(Path::new("/etc/localtime")))?,
        },
        name,
    );
    Ok(())
}

fn devices(steps: &mut Steps) -> Result<(), SandboxError> {
    steps.mkdir_all(Path::new("/dev"), 0o755)?;
    for device in DEVICES {
        let path = Path::new("/dev").join(device);
        steps.show(&path, &path, true)?;
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        let name = format!("link /dev/{link}");
        steps.push(
            Step::Symlink {
                target: c_path(Path::new(target))?,
                path: c_path(&Steps::staged(&Path::new("/dev").join(link)))?,
            },
            name,
        );
    }
    steps.mkdir_all(Path::new("/dev/shm"), 0o1777)?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV;
    steps.mount("tmpfs", Path::new("/dev/shm"), flags, "size=64m,mode=1777")
}

/// The project at [`PROJECT_DIR`]: an overlay whose lower layer is the `[fs]` root and whose
/// upper layer lives in the sandbox's root; read-only, the root itself read-only.
fn project(steps: &mut Steps, spec: &SandboxSpec) -> Result<(), SandboxError> {
    let project = spec.project_at.as_path();
    if project != Path::new(PROJECT_DIR) {
        check_exposable(project)?;
    }
    let Some(root) = &spec.project else {
        return steps.mkdir_all(project, 0o755);
    };
    if spec.read_only {
        return steps.show(root, project, false);
    }
    let internal = Path::new("/.simtape");
    let lower = internal.join("lower");
    steps.show(root, &lower, false)?;
    for dir in ["upper", "work"] {
        steps.mkdir_all(&internal.join(dir), 0o755)?;
    }
    steps.mkdir_all(project, 0o755)?;
    let staged = |path: &Path| Steps::staged(path).display().to_string();
    let data = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        staged(&lower),
        staged(&internal.join("upper")),
        staged(&internal.join("work")),
    );
    steps.mount("overlay", project, 0, &data)?;
    // The layers stay in use by the overlay, out of the programs' sight.
    steps.mount(
        "tmpfs",
        internal,
        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
        "size=4k,mode=0",
    )
}

/// Refuses to expose a path the sandbox's own layout uses.
fn check_exposable(path: &Path) -> Result<(), SandboxError> {
    let normal = path.is_absolute()
        && path
            .components()
            .all(|part| matches!(part, Component::RootDir | Component::Normal(_)));
    let own = [
        PROJECT_DIR,
        HOME_DIR,
        RUN_DIR,
        "/proc",
        "/dev",
        "/.simtape",
        "/etc",
    ];
    // Neither inside one of the sandbox's own places nor above one (it would cover it).
    let clashes = own
        .iter()
        .any(|dir| path.starts_with(dir) || Path::new(dir).starts_with(path));
    if !normal || clashes {
        return Err(SandboxError::Spec(format!(
            "{} cannot be exposed: it must be an absolute, normal path outside {}",
            path.display(),
            own.join(", ")
        )));
    }
    Ok(())
}

fn jobs(spec: &SandboxSpec, pipes: &Pipes) -> Result<Vec<JobPlan>, SandboxError> {
    let cstring = |text: String| {
        CString::new(text).map_err(|error| {
            SandboxError::Spec(format!("an argument or variable holds a NUL byte: {error}"))
        })
    };
    let mut plans = Vec::new();
    for ((job, (stdout, stderr)), stdin) in spec.jobs.iter().zip(&pipes.inputs).zip(&pipes.stdins) {
        let program = c_path(&job.program)?;
        let mut args = vec![program.clone()];
        for arg in &job.args {
            args.push(cstring(arg.clone())?);
        }
        let mut env = Vec::new();
        for (name, value) in &job.env {
            env.push(cstring(format!("{name}={value}"))?);
        }
        if args.len() > 512 || env.len() > 512 {
            return Err(SandboxError::Spec(
                "a program has more than 512 arguments or variables".into(),
            ));
        }
        plans.push(JobPlan {
            program,
            args,
            env,
            cwd: c_path(&job.cwd)?,
            stdout: stdout.as_raw_fd(),
            stderr: stderr.as_raw_fd(),
            stdin: stdin.as_ref().map_or(-1, |file| file.as_raw_fd()),
        });
    }
    Ok(plans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_normal_paths_outside_the_sandboxs_own_places_may_be_exposed() {
        assert!(check_exposable(Path::new("/opt/tools")).is_ok());
        assert!(check_exposable(Path::new("/tmp/scenario/venv")).is_ok());
        for refused in [
            "relative",
            "/",
            "/project/x",
            "/home",
            "/run",
            "/etc/passwd",
            "/a/../b",
        ] {
            let error = check_exposable(Path::new(refused)).unwrap_err();
            assert!(
                error.to_string().contains("cannot be exposed"),
                "{refused}: {error}"
            );
        }
    }

    #[test]
    fn the_base_environment_holds_the_allow_list_only() {
        let env = base_env(&[PathBuf::from("/opt/venv/bin")]);
        let names: Vec<&str> = env.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "HOME",
                "USER",
                "LOGNAME",
                "SHELL",
                "TERM",
                "LANG",
                "TMPDIR",
                "TZ",
                "PYTHONDONTWRITEBYTECODE"
            ]
        );
        assert!(env[0].1.starts_with("/opt/venv/bin:/usr/local/sbin"));
        assert_eq!(env[1].1, HOME_DIR);
    }
}
