//! The sandbox's network watch, on a thread of its own: the DNS server inside the namespace,
//! and every `connect` a sandboxed process makes, stopped by a seccomp filter until this
//! thread decides it.
//!
//! The namespace is what contains: it holds only loopback, and only simtape listens there.
//! The filter is what makes it loud: each `connect` to anything but simtape's own endpoints
//! is named (host by the name it was looked up as, port) and judged by the scenario's
//! `[network]` policy, the same rules the built-in agent's connections meet. A denied one
//! fails at once with ECONNREFUSED; an allowed TCP one is dialled from simtape's side and
//! the connected socket handed into the program in place of its own (seccomp's ADDFD), so the
//! program talks to the real host. Either way the attempt goes on the tape.

#![allow(unsafe_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

use simtape::cap::net::Network;

use super::dns::{self, Names};
use super::{Connect, Lookup, NetworkSeen};
use crate::limits::{SANDBOX_ATTEMPTS_MAX, SANDBOX_DIAL_TIMEOUT};

/// `offsetof(struct seccomp_data, nr)` and `arch`.
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;
/// x32 system calls on x86_64 carry this bit: refused, so none slips past the filter.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

fn statement(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The filter: `connect` waits for this thread's decision; any other call of the native
/// architecture runs; a call of another ABI (32-bit, x32) fails with ENOSYS, so no
/// `connect` gets around the watch.
pub(super) fn filter() -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    vec![
        statement(LD_W_ABS, DATA_ARCH),
        jump(JEQ, AUDIT_ARCH, 0, 5),
        statement(LD_W_ABS, DATA_NR),
        jump(JGE, X32_SYSCALL_BIT, 3, 0),
        jump(JEQ, libc::SYS_connect as u32, 1, 0),
        statement(RET, libc::SECCOMP_RET_ALLOW),
        statement(RET, libc::SECCOMP_RET_USER_NOTIF),
        statement(RET, enosys),
    ]
}

/// What the watch thread needs.
pub(super) struct Watch {
    pub notify: OwnedFd,
    pub dns: std::net::UdpSocket,
    pub stop: OwnedFd,
    pub network: Network,
    /// Ports of simtape's own listeners inside (never judged, never recorded).
    pub own_ports: Vec<u16>,
    pub seen: Arc<Mutex<NetworkSeen>>,
}

/// Runs the watch until `stop` becomes readable (or closes).
pub(super) fn run(watch: Watch) {
    let mut names = Names::default();
    let mut buffer = [0u8; 512];
    loop {
        let mut polled = [
            poll_fd(watch.notify.as_raw_fd()),
            poll_fd(watch.dns.as_raw_fd()),
            poll_fd(watch.stop.as_raw_fd()),
        ];
        // SAFETY: `polled` is a live array of the length passed.
        let ready = unsafe { libc::poll(polled.as_mut_ptr(), 3, -1) };
        if ready < 0 {
            continue;
        }
        if polled[2].revents != 0 {
            return;
        }
        if polled[1].revents & libc::POLLIN != 0 {
            if let Ok((n, from)) = watch.dns.recv_from(&mut buffer) {
                if let Some(reply) = lookup(&watch, &mut names, &buffer[..n]) {
                    let _ = watch.dns.send_to(&reply, from);
                }
            }
        }
        if polled[0].revents & libc::POLLIN != 0 {
            notification(&watch, &names);
        } else if polled[0].revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            // Every process under the filter is gone; DNS may still be asked by none.
            return;
        }
    }
}

fn poll_fd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

fn record(watch: &Watch, add: impl FnOnce(&mut NetworkSeen)) {
    let mut seen = watch
        .seen
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if seen.lookups.len() + seen.connects.len() < SANDBOX_ATTEMPTS_MAX {
        add(&mut seen);
    } else {
        seen.dropped = seen.dropped.saturating_add(1);
    }
}

/// Answers one DNS query, recording the lookup.
fn lookup(watch: &Watch, names: &mut Names, query: &[u8]) -> Option<Vec<u8>> {
    let (question, end) = dns::question(query)?;
    record(watch, |seen| {
        seen.lookups.insert(Lookup {
            name: question.name.clone(),
            kind: question.kind_name(),
        });
    });
    let address = match question.kind {
        1 => Some(names.address(&question.name)?),
        _ => None,
    };
    Some(dns::answer(query, end, address))
}

/// Takes one `connect` notification and answers it.
fn notification(watch: &Watch, names: &Names) {
    // SAFETY: `notif` is a zeroed `seccomp_notif`, the size the ioctl fills.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    let received = unsafe {
        libc::ioctl(
            watch.notify.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV as _,
            &mut notif as *mut libc::seccomp_notif,
        )
    };
    if received < 0 {
        return;
    }
    let args = notif.data.args;
    let (fd, pointer, length) = (args[0] as RawFd, args[1], args[2] as usize);
    let address = read_address(notif.pid, pointer, length.min(128));
    // The memory read is only good if the caller is still the one that stopped.
    if !id_valid(watch.notify.as_raw_fd(), notif.id) {
        return;
    }
    let target = match address {
        Some(Target::Ip(ip, port)) => (ip, port),
        // Unix sockets, disconnects, other families: the namespace decides, nothing to tell.
        Some(Target::Other) | None => return respond(watch, notif.id, Response::Continue),
    };
    let (ip, port) = target;
    if ip.is_loopback() && watch.own_ports.contains(&port) {
        return respond(watch, notif.id, Response::Continue);
    }
    let host = match ip {
        IpAddr::V4(v4) => names.name(v4).map(str::to_string),
        IpAddr::V6(_) => None,
    }
    .unwrap_or_else(|| ip.to_string());
    let allowed = watch.network.check(&host, port).is_ok();
    record(watch, |seen| {
        seen.connects.insert(Connect {
            host: host.clone(),
            port,
            allowed,
        });
    });
    if !allowed {
        return respond(watch, notif.id, Response::Error(libc::ECONNREFUSED));
    }
    let response = match dial(&host, ip, port) {
        Some(stream) => hand_over(watch, &notif, fd, stream),
        None => Response::Error(libc::ECONNREFUSED),
    };
    respond(watch, notif.id, response);
}

enum Target {
    Ip(IpAddr, u16),
    Other,
}

/// Reads a `sockaddr` of `length` bytes at `pointer` in process `pid`.
fn read_address(pid: u32, pointer: u64, length: usize) -> Option<Target> {
    let mut bytes = [0u8; 128];
    let local = libc::iovec {
        iov_base: bytes.as_mut_ptr().cast(),
        iov_len: length,
    };
    let remote = libc::iovec {
        iov_base: pointer as *mut libc::c_void,
        iov_len: length,
    };
    // SAFETY: `local` points at `bytes`, at least `length` long; the remote side is read by
    // the kernel, which checks it.
    let read = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if read < 2 {
        return None;
    }
    let bytes = &bytes[..read as usize];
    let family = i32::from(u16::from_ne_bytes([bytes[0], bytes[1]]));
    let port = |b: &[u8]| u16::from_be_bytes([b[2], b[3]]);
    match family {
        libc::AF_INET if bytes.len() >= 8 => {
            let ip = Ipv4Addr::new(bytes[4], bytes[5], bytes[6], bytes[7]);
            Some(Target::Ip(IpAddr::V4(ip), port(bytes)))
        }
        libc::AF_INET6 if bytes.len() >= 24 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&bytes[8..24]);
            let ip = std::net::Ipv6Addr::from(octets);
            // An IPv4-mapped address is its IPv4 address (the policy reads it so too).
            let ip = match ip.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(ip),
            };
            Some(Target::Ip(ip, port(bytes)))
        }
        _ => Some(Target::Other),
    }
}

fn id_valid(notify: RawFd, id: u64) -> bool {
    // SAFETY: the ioctl reads one u64 from `id`.
    unsafe {
        libc::ioctl(
            notify,
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
            &id as *const u64,
        ) == 0
    }
}

/// Connects to an allowed host from simtape's side: the name resolved by the host's
/// resolver (a looked-up name), or the address itself.
fn dial(host: &str, ip: IpAddr, port: u16) -> Option<TcpStream> {
    let addresses: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(_) => vec![SocketAddr::new(ip, port)],
        Err(_) => (host, port).to_socket_addrs().ok()?.collect(),
    };
    addresses
        .iter()
        .find_map(|address| TcpStream::connect_timeout(address, SANDBOX_DIAL_TIMEOUT).ok())
}

/// Puts `stream` in place of the caller's socket `fd` (keeping its non-blocking flag), so
/// its `connect` returns 0 with the socket connected. A datagram socket is not carried:
/// its connect fails with ENETUNREACH, as on a host without a route.
fn hand_over(watch: &Watch, notif: &libc::seccomp_notif, fd: RawFd, stream: TcpStream) -> Response {
    let (stream_socket, nonblocking) = match socket_of(notif.pid, fd) {
        Some(found) => found,
        None => return Response::Error(libc::ECONNREFUSED),
    };
    if !stream_socket {
        return Response::Error(libc::ENETUNREACH);
    }
    if stream.set_nonblocking(nonblocking).is_err() {
        return Response::Error(libc::ECONNREFUSED);
    }
    let addfd = libc::seccomp_notif_addfd {
        id: notif.id,
        flags: libc::SECCOMP_ADDFD_FLAG_SETFD as u32,
        srcfd: stream.as_raw_fd() as u32,
        newfd: fd as u32,
        newfd_flags: 0,
    };
    // SAFETY: the ioctl reads `addfd`, a live `seccomp_notif_addfd`.
    let added = unsafe {
        libc::ioctl(
            watch.notify.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD as _,
            &addfd as *const libc::seccomp_notif_addfd,
        )
    };
    if added < 0 {
        return Response::Error(libc::ECONNREFUSED);
    }
    Response::Value(0)
}

/// Whether the caller's `fd` is a stream socket, and whether it is non-blocking: read from
/// a copy of it taken through a pidfd.
fn socket_of(pid: u32, fd: RawFd) -> Option<(bool, bool)> {
    // SAFETY: plain system calls; each returned descriptor is owned at once.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0);
        if pidfd < 0 {
            return None;
        }
        let pidfd = OwnedFd::from_raw_fd(pidfd as RawFd);
        let copy = libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0);
        if copy < 0 {
            return None;
        }
        let copy = OwnedFd::from_raw_fd(copy as RawFd);
        let mut kind: libc::c_int = 0;
        let mut length = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let got = libc::getsockopt(
            copy.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            std::ptr::from_mut(&mut kind).cast(),
            &mut length,
        );
        if got < 0 {
            return None;
        }
        let flags = libc::fcntl(copy.as_raw_fd(), libc::F_GETFL);
        Some((
            kind == libc::SOCK_STREAM,
            flags >= 0 && flags & libc::O_NONBLOCK != 0,
        ))
    }
}

enum Response {
    Continue,
    Error(i32),
    Value(i64),
}

fn respond(watch: &Watch, id: u64, response: Response) {
    let (val, error, flags) = match response {
        Response::Continue => (0, 0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32),
        Response::Error(errno) => (0, -errno, 0),
        Response::Value(value) => (value, 0, 0),
    };
    let mut answer = libc::seccomp_notif_resp {
        id,
        val,
        error,
        flags,
    };
    // SAFETY: the ioctl reads `answer`, a live `seccomp_notif_resp`.
    unsafe {
        libc::ioctl(
            watch.notify.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            &mut answer as *mut libc::seccomp_notif_resp,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_stops_connect_only() {
        // Walk the program by hand for three calls: connect, read, and an x32 call.
        let program = filter();
        let run = |arch: u32, nr: u32| -> u32 {
            let mut accumulator = 0u32;
            let mut pc = 0usize;
            loop {
                let op = program[pc];
                match op.code as u32 {
                    code if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                        accumulator = if op.k == DATA_ARCH { arch } else { nr };
                        pc += 1;
                    }
                    code if code == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                        let taken = accumulator == op.k;
                        pc += 1 + usize::from(if taken { op.jt } else { op.jf });
                    }
                    code if code == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K => {
                        let taken = accumulator >= op.k;
                        pc += 1 + usize::from(if taken { op.jt } else { op.jf });
                    }
                    _ => return op.k,
                }
            }
        };
        let connect = libc::SYS_connect as u32;
        assert_eq!(run(AUDIT_ARCH, connect), libc::SECCOMP_RET_USER_NOTIF);
        assert_eq!(
            run(AUDIT_ARCH, libc::SYS_read as u32),
            libc::SECCOMP_RET_ALLOW
        );
        let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
        assert_eq!(run(AUDIT_ARCH, connect | X32_SYSCALL_BIT), enosys);
        assert_eq!(run(0x4000_0003, connect), enosys, "another ABI");
    }
}
