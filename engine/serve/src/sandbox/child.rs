//! The two processes simtape forks for a sandbox, and everything they do: plain system calls
//! over a [`Plan`] built before the fork.
//!
//! simtape may have threads when it starts a sandbox (a sweep's pool, smol's reactor), and
//! after `fork` only the forking thread exists: a lock another thread held (the allocator's,
//! stdout's, the environment's) stays held forever in the child. So nothing here allocates,
//! formats, locks or touches the environment: every path, argument and byte was prepared by
//! [`Plan`] in the parent, and failures travel back as two numbers (the step and `errno`).
//!
//! ```text
//! simtape ── fork ──▶ keeper (host pid namespace; PDEATHSIG = KILL)
//!                       unshare(user, mount, net, uts, ipc, pid) and map uid 1000
//!                       └─ fork ──▶ init (pid 1 of the new pid namespace; PDEATHSIG = KILL)
//!                                     the view, pivot_root, loopback, listeners, seccomp
//!                                     └─ fork ──▶ a job (setsid, stdio, chdir, execve)
//! ```
//!
//! The keeper exists because a process cannot enter a new pid namespace itself (only its
//! children are born in it) and `unshare(CLONE_NEWUSER)` is refused to a threaded process.
//! If simtape dies, even by SIGKILL, the keeper gets SIGKILL, init gets SIGKILL, and the
//! kernel kills every process in the namespace with its init: nothing outlives simtape.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::os::fd::RawFd;

/// One thing init does to build the view, in order.
#[derive(Debug)]
pub(super) enum Step {
    /// Clones the mount tree at `source` (before the new root hides anything) into slot
    /// `slot`, read-only and nosuid, and nodev unless it is a `device` node. A missing
    /// source is skipped when `optional`.
    Capture {
        source: CString,
        slot: usize,
        optional: bool,
        device: bool,
    },
    /// Mounts the new root: a size-capped tmpfs at [`Plan::root`].
    Root,
    /// Makes a directory (the parents come first in the plan).
    Mkdir { path: CString, mode: u32 },
    /// Makes an empty file to mount a captured file over.
    Touch { path: CString },
    /// Makes a symbolic link.
    Symlink { target: CString, path: CString },
    /// Writes a file with these bytes.
    File {
        path: CString,
        bytes: Vec<u8>,
        mode: u32,
    },
    /// Attaches the tree captured in `slot` at `path` (skipped when its capture was).
    Attach { slot: usize, path: CString },
    /// Mounts a filesystem: `fstype` with `data`, at `path`.
    Mount {
        fstype: CString,
        path: CString,
        flags: libc::c_ulong,
        data: CString,
    },
}

/// What a job is: a program, its arguments and environment, where it starts, and the pipes
/// its output goes to.
#[derive(Debug)]
pub(super) struct JobPlan {
    pub program: CString,
    /// `argv`, NUL-terminated pointers into `args`.
    pub args: Vec<CString>,
    pub env: Vec<CString>,
    pub cwd: CString,
    /// The write ends of its stdout and stderr pipes (open in init, closed after the fork).
    pub stdout: RawFd,
    pub stderr: RawFd,
    /// The read end of its stdin pipe, or -1 for `/dev/null`.
    pub stdin: RawFd,
}

/// Everything the keeper and init do, prepared in the parent.
#[derive(Debug)]
pub(super) struct Plan {
    pub uid_map: Vec<u8>,
    pub gid_map: Vec<u8>,
    /// Where the new root is mounted before `pivot_root` (an existing directory).
    pub root: CString,
    /// `root` + `/.oldroot`, and `/.oldroot`.
    pub put_old: CString,
    pub old_inside: CString,
    pub root_data: CString,
    pub steps: Vec<Step>,
    pub hostname: Vec<u8>,
    /// TCP ports to listen on at 127.0.0.1, then UDP port 53 for DNS.
    pub tcp_ports: Vec<u16>,
    pub dns_port: u16,
    pub filter: Vec<libc::sock_filter>,
    pub jobs: Vec<JobPlan>,
    /// `/dev/null` inside, the jobs' stdin.
    pub dev_null: CString,
    /// The descriptors the keeper keeps, ascending: every other one simtape had open (another
    /// run's pipes among them, in a sweep) is closed, so none is held open by the sandbox.
    pub keep: Vec<RawFd>,
    /// init → parent: fixed-size [`Message`]s.
    pub status: RawFd,
    /// parent → init: one byte per command.
    pub control: RawFd,
    /// init → parent: the listeners and the seccomp listener, as one SCM_RIGHTS message.
    pub pass: RawFd,
}

/// A message from the sandbox to the parent: three numbers, written whole (a pipe write of
/// at most PIPE_BUF bytes is atomic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub(super) struct Message {
    pub tag: u32,
    pub a: u32,
    pub b: i32,
}

/// [`Message::tag`]s.
pub(super) mod tag {
    /// `a` = init's pid in simtape's namespace. Sent by the keeper.
    pub(crate) const INIT_PID: u32 = 1;
    /// A setup step failed: `a` = step ([`super::step`]), `b` = errno.
    pub(crate) const FAILED: u32 = 2;
    /// The view, the network and the filter are up; the fds were sent.
    pub(crate) const READY: u32 = 3;
    /// Job `a` ended: `b` = its wait status.
    pub(crate) const EXITED: u32 = 4;
    /// Job `a` could not be executed: `b` = errno.
    pub(crate) const EXEC_FAILED: u32 = 5;
    /// Job `a` started.
    pub(crate) const STARTED: u32 = 6;
}

/// Where a setup failure happened ([`tag::FAILED`]'s `a`): the steps of the plan are numbered
/// from [`step::PLAN`] on.
pub(super) mod step {
    pub(crate) const UNSHARE: u32 = 1;
    pub(crate) const UID_MAP: u32 = 2;
    pub(crate) const SETGROUPS: u32 = 3;
    pub(crate) const GID_MAP: u32 = 4;
    pub(crate) const FORK_INIT: u32 = 5;
    pub(crate) const PRIVATE: u32 = 6;
    pub(crate) const HOSTNAME: u32 = 7;
    pub(crate) const PIVOT: u32 = 8;
    pub(crate) const LOOPBACK: u32 = 9;
    pub(crate) const LISTEN: u32 = 10;
    pub(crate) const SECCOMP: u32 = 11;
    pub(crate) const PASS: u32 = 12;
    pub(crate) const SIGNALS: u32 = 13;
    /// Plan step `n` is `PLAN + n`.
    pub(crate) const PLAN: u32 = 100;
}

/// Commands the parent writes to init's control pipe.
pub(super) mod command {
    /// Followed by one byte: the job to start.
    pub(crate) const RUN: u8 = b'R';
    /// SIGTERM to every process in the namespace but init.
    pub(crate) const TERM: u8 = b'T';
    /// SIGKILL to every process in the namespace but init.
    pub(crate) const KILL: u8 = b'K';
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn send(fd: RawFd, message: Message) {
    let bytes = std::ptr::from_ref(&message).cast::<libc::c_void>();
    // SAFETY: `message` is a live, plain `repr(C)` value of exactly this size.
    unsafe { libc::write(fd, bytes, std::mem::size_of::<Message>()) };
}

fn fail(fd: RawFd, step: u32) -> ! {
    send(
        fd,
        Message {
            tag: tag::FAILED,
            a: step,
            b: errno(),
        },
    );
    // SAFETY: `_exit` ends the process without running anything of the parent's image.
    unsafe { libc::_exit(120) }
}

/// Checks a system call's result; on failure reports `step` and exits.
fn check(fd: RawFd, step: u32, result: libc::c_long) {
    if result < 0 {
        fail(fd, step);
    }
}

/// The keeper: runs in the process `fork` returned 0 to. Never returns.
///
/// # Safety
/// Call only in a freshly forked child, with `plan` built before the fork.
pub(super) unsafe fn keeper(plan: &Plan, parent: libc::pid_t) -> ! {
    let status = plan.status;
    // SAFETY (the whole function): plain system calls on values the plan owns; nothing
    // allocates.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            // simtape died before the death signal was armed.
            libc::_exit(121);
        }
        close_others(&plan.keep);
        let flags = libc::CLONE_NEWUSER
            | libc::CLONE_NEWNS
            | libc::CLONE_NEWNET
            | libc::CLONE_NEWUTS
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWPID;
        check(
            status,
            step::UNSHARE,
            libc::c_long::from(libc::unshare(flags)),
        );
        // A process may map its own uid and gid, one line each, once it denied setgroups.
        write_file(status, step::UID_MAP, c"/proc/self/uid_map", &plan.uid_map);
        write_file(status, step::SETGROUPS, c"/proc/self/setgroups", b"deny");
        write_file(status, step::GID_MAP, c"/proc/self/gid_map", &plan.gid_map);
        let init = libc::fork();
        if init < 0 {
            fail(status, step::FORK_INIT);
        }
        if init == 0 {
            init_main(plan);
        }
        send(
            status,
            Message {
                tag: tag::INIT_PID,
                a: init as u32,
                b: 0,
            },
        );
        for fd in [plan.control, plan.pass] {
            libc::close(fd);
        }
        for job in &plan.jobs {
            libc::close(job.stdout);
            libc::close(job.stderr);
            if job.stdin >= 0 {
                libc::close(job.stdin);
            }
        }
        let mut wait_status = 0;
        while libc::waitpid(init, &mut wait_status, 0) < 0 && errno() == libc::EINTR {}
        libc::_exit(if libc::WIFEXITED(wait_status) {
            libc::WEXITSTATUS(wait_status)
        } else {
            122
        })
    }
}

/// Closes every descriptor from 3 up but those in `keep` (ascending).
fn close_others(keep: &[RawFd]) {
    let mut from: u32 = 3;
    for &fd in keep {
        let fd = fd as u32;
        if fd > from {
            // SAFETY: closing a range of descriptors this process holds.
            unsafe { libc::syscall(libc::SYS_close_range, from, fd - 1, 0u32) };
        }
        from = from.max(fd + 1);
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32) };
}

fn write_file(status: RawFd, step: u32, path: &std::ffi::CStr, bytes: &[u8]) {
    // SAFETY: `path` is NUL-terminated; `bytes` is live for the call.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            fail(status, step);
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        if written < 0 {
            fail(status, step);
        }
        libc::close(fd);
    }
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;
const MOUNT_ATTR_RDONLY: u64 = 1;
const MOUNT_ATTR_NOSUID: u64 = 2;
const MOUNT_ATTR_NODEV: u64 = 4;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// init: pid 1 of the sandbox. Builds the view, brings up the network, installs the filter,
/// hands the parent its fds, then starts jobs as told and reaps everything. Never returns.
fn init_main(plan: &Plan) -> ! {
    let status = plan.status;
    // SAFETY (the whole function): plain system calls on values the plan owns (paths are
    // NUL-terminated `CString`s, buffers live on this stack or in the plan); nothing
    // allocates.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // Nothing mounted here may propagate back to simtape's namespace.
        let private = libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        );
        check(status, step::PRIVATE, libc::c_long::from(private));
        let mut slots = [-1 as RawFd; 256];
        for (index, step) in plan.steps.iter().enumerate() {
            let code = step::PLAN + index as u32;
            run_step(plan, step, &mut slots, code);
        }
        let name = &plan.hostname;
        check(
            status,
            step::HOSTNAME,
            libc::c_long::from(libc::sethostname(name.as_ptr().cast(), name.len())),
        );
        pivot(plan);
        loopback(status);
        let mut fds = [-1 as RawFd; 8];
        let mut count = 0;
        for &port in &plan.tcp_ports {
            fds[count] = listen(status, libc::SOCK_STREAM, port);
            count += 1;
        }
        fds[count] = listen(status, libc::SOCK_DGRAM, plan.dns_port);
        count += 1;
        fds[count] = install_filter(status, &plan.filter);
        count += 1;
        pass_fds(status, plan.pass, &fds[..count]);
        for &fd in &fds[..count] {
            libc::close(fd);
        }
        libc::close(plan.pass);
        send(
            status,
            Message {
                tag: tag::READY,
                a: 0,
                b: 0,
            },
        );
        serve_jobs(plan)
    }
}

/// # Safety
/// As [`init_main`].
// Long because: one match arm per setup step, after the fork, where nothing may allocate:
// a helper per arm would add only indirection.
unsafe fn run_step(plan: &Plan, step: &Step, slots: &mut [RawFd; 256], code: u32) {
    let status = plan.status;
    // SAFETY: see `init_main`.
    unsafe {
        match step {
            Step::Capture {
                source,
                slot,
                optional,
                device,
            } => {
                let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | AT_RECURSIVE;
                let tree =
                    libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, source.as_ptr(), flags)
                        as RawFd;
                if tree < 0 {
                    if *optional && errno() == libc::ENOENT {
                        return;
                    }
                    fail(status, code);
                }
                let nodev = if *device { 0 } else { MOUNT_ATTR_NODEV };
                let attr = MountAttr {
                    attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | nodev,
                    attr_clr: 0,
                    propagation: 0,
                    userns_fd: 0,
                };
                let set = libc::syscall(
                    libc::SYS_mount_setattr,
                    tree,
                    c"".as_ptr(),
                    libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
                    &attr as *const MountAttr,
                    std::mem::size_of::<MountAttr>(),
                );
                check(status, code, set);
                slots[*slot] = tree;
            }
            Step::Root => {
                let root = libc::mount(
                    c"tmpfs".as_ptr(),
                    plan.root.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    plan.root_data.as_ptr().cast(),
                );
                check(status, code, libc::c_long::from(root));
            }
            Step::Mkdir { path, mode } => {
                if libc::mkdir(path.as_ptr(), *mode) < 0 && errno() != libc::EEXIST {
                    fail(status, code);
                }
            }
            Step::Touch { path } => {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                    0o644,
                );
                check(status, code, libc::c_long::from(fd));
                libc::close(fd);
            }
            Step::Symlink { target, path } => {
                if libc::symlink(target.as_ptr(), path.as_ptr()) < 0 && errno() != libc::EEXIST {
                    fail(status, code);
                }
            }
            Step::File { path, bytes, mode } => {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
                    *mode,
                );
                check(status, code, libc::c_long::from(fd));
                let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
                check(status, code, written as libc::c_long);
                libc::close(fd);
            }
            Step::Attach { slot, path } => {
                let tree = slots[*slot];
                if tree < 0 {
                    return;
                }
                let moved = libc::syscall(
                    libc::SYS_move_mount,
                    tree,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                );
                check(status, code, moved);
                libc::close(tree);
                slots[*slot] = -1;
            }
            Step::Mount {
                fstype,
                path,
                flags,
                data,
            } => {
                let mounted = libc::mount(
                    fstype.as_ptr(),
                    path.as_ptr(),
                    fstype.as_ptr(),
                    *flags,
                    data.as_ptr().cast(),
                );
                check(status, code, libc::c_long::from(mounted));
            }
        }
    }
}

/// Makes the new root the root: `pivot_root`, then the old root detached.
fn pivot(plan: &Plan) {
    let status = plan.status;
    // SAFETY: NUL-terminated paths from the plan.
    unsafe {
        if libc::mkdir(plan.put_old.as_ptr(), 0o700) < 0 && errno() != libc::EEXIST {
            fail(status, step::PIVOT);
        }
        let pivoted = libc::syscall(
            libc::SYS_pivot_root,
            plan.root.as_ptr(),
            plan.put_old.as_ptr(),
        );
        check(status, step::PIVOT, pivoted);
        check(
            status,
            step::PIVOT,
            libc::c_long::from(libc::chdir(c"/".as_ptr())),
        );
        let detached = libc::umount2(plan.old_inside.as_ptr(), libc::MNT_DETACH);
        check(status, step::PIVOT, libc::c_long::from(detached));
        libc::rmdir(plan.old_inside.as_ptr());
    }
}

/// `struct ifreq` with the flags member: the interface name, then a 24-byte union.
#[repr(C)]
struct IfFlags {
    name: [u8; 16],
    flags: libc::c_short,
    _rest: [u8; 22],
}

const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
const SIOCSIFFLAGS: libc::c_ulong = 0x8914;

/// Brings the namespace's loopback interface up (a new network namespace has it down).
fn loopback(status: RawFd) {
    // SAFETY: `request` is a live `repr(C)` ifreq of the size the ioctls read and write.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        check(status, step::LOOPBACK, libc::c_long::from(socket));
        let mut request = IfFlags {
            name: [0; 16],
            flags: 0,
            _rest: [0; 22],
        };
        request.name[..2].copy_from_slice(b"lo");
        let get = libc::ioctl(socket, SIOCGIFFLAGS as _, &mut request as *mut IfFlags);
        check(status, step::LOOPBACK, libc::c_long::from(get));
        request.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        let set = libc::ioctl(socket, SIOCSIFFLAGS as _, &mut request as *mut IfFlags);
        check(status, step::LOOPBACK, libc::c_long::from(set));
        libc::close(socket);
    }
}

/// Binds a socket of `kind` to 127.0.0.1:`port` (and listens, for TCP); returns it.
fn listen(status: RawFd, kind: libc::c_int, port: u16) -> RawFd {
    // SAFETY: `address` is a live sockaddr_in of the length passed.
    unsafe {
        let socket = libc::socket(libc::AF_INET, kind | libc::SOCK_CLOEXEC, 0);
        check(status, step::LISTEN, libc::c_long::from(socket));
        let one: libc::c_int = 1;
        libc::setsockopt(
            socket,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            std::ptr::from_ref(&one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let address = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
            },
            sin_zero: [0; 8],
        };
        let bound = libc::bind(
            socket,
            std::ptr::from_ref(&address).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        check(status, step::LISTEN, libc::c_long::from(bound));
        if kind == libc::SOCK_STREAM {
            check(
                status,
                step::LISTEN,
                libc::c_long::from(libc::listen(socket, 128)),
            );
        }
        socket
    }
}

/// Installs the seccomp filter on init (every job inherits it); returns the listener the
/// parent answers its notifications on.
fn install_filter(status: RawFd, filter: &[libc::sock_filter]) -> RawFd {
    // SAFETY: `program` points at the plan's filter, alive for the call.
    unsafe {
        // Required for an unprivileged filter; a job gains nothing through a set-id binary.
        check(
            status,
            step::SECCOMP,
            libc::c_long::from(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)),
        );
        let program = libc::sock_fprog {
            len: filter.len() as libc::c_ushort,
            filter: filter.as_ptr().cast_mut(),
        };
        let listener = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &program as *const libc::sock_fprog,
        );
        check(status, step::SECCOMP, listener);
        listener as RawFd
    }
}

/// Sends `fds` to the parent in one SCM_RIGHTS message.
fn pass_fds(status: RawFd, socket: RawFd, fds: &[RawFd]) {
    const FDS_MAX: usize = 8;
    // SAFETY: the message and control buffer live on this stack for the call, and the
    // control buffer is sized and aligned by CMSG_SPACE for FDS_MAX descriptors.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        #[repr(C, align(8))]
        struct Control([u8; 64]);
        let mut control = Control([0; 64]);
        let data_len = std::mem::size_of_val(fds).min(FDS_MAX * 4);
        let space = libc::CMSG_SPACE(data_len as u32) as usize;
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = space as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(data_len as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(header), data_len);
        let sent = libc::sendmsg(socket, &message, 0);
        check(status, step::PASS, sent as libc::c_long);
    }
}

/// init's loop: starts jobs when told, signals the namespace when told, reaps every child;
/// ends (and with it every process in the namespace) when the parent's control pipe closes.
fn serve_jobs(plan: &Plan) -> ! {
    let status = plan.status;
    // SAFETY: plain system calls on stack values and the plan's fds.
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &mask, std::ptr::null_mut());
        let signals = libc::signalfd(-1, &mask, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        check(status, step::SIGNALS, libc::c_long::from(signals));
        let mut running: [libc::pid_t; 64] = [0; 64];
        loop {
            let mut polled = [
                libc::pollfd {
                    fd: plan.control,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: signals,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            if libc::poll(polled.as_mut_ptr(), 2, -1) < 0 {
                continue;
            }
            if polled[1].revents != 0 {
                let mut info: libc::signalfd_siginfo = std::mem::zeroed();
                while libc::read(
                    signals,
                    std::ptr::from_mut(&mut info).cast(),
                    std::mem::size_of::<libc::signalfd_siginfo>(),
                ) > 0
                {}
                reap(status, &mut running);
            }
            if polled[0].revents != 0 {
                let mut byte = [0u8; 2];
                let n = libc::read(plan.control, byte.as_mut_ptr().cast(), 1);
                if n <= 0 {
                    // The parent is done (or gone): end everything, then ourselves.
                    libc::kill(-1, libc::SIGKILL);
                    libc::_exit(0);
                }
                match byte[0] {
                    command::RUN => {
                        let n = libc::read(plan.control, byte[1..].as_mut_ptr().cast(), 1);
                        let job = usize::from(byte[1]);
                        if n == 1 && job < plan.jobs.len() && job < running.len() {
                            running[job] = start_job(plan, job);
                        }
                    }
                    command::TERM => {
                        libc::kill(-1, libc::SIGTERM);
                    }
                    command::KILL => {
                        libc::kill(-1, libc::SIGKILL);
                    }
                    _ => {}
                }
            }
        }
    }
}

/// Reaps every exited child; a job's end is reported, and takes every other process in the
/// namespace with it (a daemon it left, a background child).
fn reap(status: RawFd, running: &mut [libc::pid_t; 64]) {
    // SAFETY: `waitpid` into a stack integer.
    unsafe {
        loop {
            let mut wait_status = 0;
            let pid = libc::waitpid(-1, &mut wait_status, libc::WNOHANG);
            if pid <= 0 {
                return;
            }
            if let Some(job) = running.iter().position(|&p| p == pid) {
                running[job] = 0;
                libc::kill(-1, libc::SIGKILL);
                send(
                    status,
                    Message {
                        tag: tag::EXITED,
                        a: job as u32,
                        b: wait_status,
                    },
                );
            }
        }
    }
}

/// Forks job `job`: a session of its own, its stdio on its pipes, its directory, then the
/// program. Returns its pid (0 when the fork failed, which is reported as an exec failure).
// Long because: after the fork, system calls in the one order a job needs (session, stdio,
// signals, directory, exec), with no allocation between them.
fn start_job(plan: &Plan, job: usize) -> libc::pid_t {
    let spec = &plan.jobs[job];
    let status = plan.status;
    // SAFETY: plain system calls; `argv` and `envp` are built on this stack from pointers
    // into the plan's CStrings, NUL-terminated, alive until `execve`.
    unsafe {
        // The job writes its exec's errno here; the pipe closing empty means it ran.
        let mut exec_pipe = [-1 as RawFd; 2];
        if libc::pipe2(exec_pipe.as_mut_ptr(), libc::O_CLOEXEC) < 0 {
            exec_pipe = [-1, -1];
        }
        let failed = |code: i32| {
            send(
                status,
                Message {
                    tag: tag::EXEC_FAILED,
                    a: job as u32,
                    b: code,
                },
            );
        };
        let pid = libc::fork();
        if pid < 0 {
            failed(errno());
            return 0;
        }
        if pid > 0 {
            libc::close(spec.stdout);
            libc::close(spec.stderr);
            if spec.stdin >= 0 {
                libc::close(spec.stdin);
            }
            libc::close(exec_pipe[1]);
            let mut code = [0u8; 4];
            let mut got = 0;
            while got < 4 {
                let n = libc::read(exec_pipe[0], code[got..].as_mut_ptr().cast(), 4 - got);
                if n <= 0 {
                    break;
                }
                got += n as usize;
            }
            libc::close(exec_pipe[0]);
            if got == 4 {
                failed(i32::from_ne_bytes(code));
                return pid;
            }
            send(
                status,
                Message {
                    tag: tag::STARTED,
                    a: job as u32,
                    b: pid,
                },
            );
            return pid;
        }
        libc::close(exec_pipe[0]);
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigprocmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
        libc::setsid();
        if spec.stdin >= 0 {
            libc::dup2(spec.stdin, 0);
        } else {
            let null = libc::open(plan.dev_null.as_ptr(), libc::O_RDONLY);
            if null >= 0 {
                libc::dup2(null, 0);
            }
        }
        libc::dup2(spec.stdout, 1);
        libc::dup2(spec.stderr, 2);
        // Every other descriptor closes at exec; the status pipe stays open until then, so an
        // exec failure can still be reported.
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
        let exec_failed = |code: i32| -> ! {
            let bytes = code.to_ne_bytes();
            libc::write(exec_pipe[1], bytes.as_ptr().cast(), 4);
            libc::_exit(127)
        };
        if libc::chdir(spec.cwd.as_ptr()) < 0 {
            exec_failed(errno());
        }
        const ARGS_MAX: usize = 512;
        let mut argv: [*const libc::c_char; ARGS_MAX + 1] = [std::ptr::null(); ARGS_MAX + 1];
        let mut envp: [*const libc::c_char; ARGS_MAX + 1] = [std::ptr::null(); ARGS_MAX + 1];
        for (slot, arg) in argv.iter_mut().zip(spec.args.iter().take(ARGS_MAX)) {
            *slot = arg.as_ptr();
        }
        for (slot, var) in envp.iter_mut().zip(spec.env.iter().take(ARGS_MAX)) {
            *slot = var.as_ptr();
        }
        libc::execve(spec.program.as_ptr(), argv.as_ptr(), envp.as_ptr());
        exec_failed(errno())
    }
}
