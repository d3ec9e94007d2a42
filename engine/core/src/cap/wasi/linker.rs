//! The host side of `wasi_snapshot_preview1`: every function a guest may import, linked once
//! per engine. Each decodes its arguments from guest memory, asks the [`Guest`] state, and
//! writes the results back; the errno is its return value.
//!
//! `poll_oneoff`, `clock_time_get` and `sched_yield` are async (they wait on or yield to the
//! simulation); the rest are synchronous. Functions the sandbox does not offer (links,
//! symlinks, `fd_renumber`, …) answer `ENOSYS`, so a module that imports them still
//! instantiates; the socket functions answer `ENOTSOCK`, because preview 1 cannot create a
//! socket and none is pre-opened.

use wasmtime::{Caller, Engine, Extern, Linker};

use super::abi::{
    self, WasiResult, EBADF, EFAULT, EINVAL, ENOSYS, ENOTSOCK, FDSTAT_BYTES, FILESTAT_BYTES,
    PRESTAT_BYTES,
};
use super::run::{Guest, GuestExit};
use super::{clock, poll};

/// The import module of preview 1.
pub(super) const MODULE: &str = "wasi_snapshot_preview1";

/// Functions linked as `ENOSYS` stubs (each with its own signature in `link_unsupported`).
const UNSUPPORTED: [&str; 10] = [
    "fd_advise",
    "fd_allocate",
    "fd_fdstat_set_rights",
    "fd_filestat_set_times",
    "fd_renumber",
    "path_filestat_set_times",
    "path_link",
    "path_readlink",
    "path_symlink",
    "proc_raise",
];

/// Returns whether the sandbox links `name` (for the import check before instantiation).
pub(super) fn provides(name: &str) -> bool {
    UNSUPPORTED.contains(&name) || SUPPORTED.contains(&name)
}

const SUPPORTED: [&str; 36] = [
    "args_get",
    "args_sizes_get",
    "environ_get",
    "environ_sizes_get",
    "clock_res_get",
    "clock_time_get",
    "fd_close",
    "fd_datasync",
    "fd_fdstat_get",
    "fd_fdstat_set_flags",
    "fd_filestat_get",
    "fd_filestat_set_size",
    "fd_pread",
    "fd_prestat_get",
    "fd_prestat_dir_name",
    "fd_pwrite",
    "fd_read",
    "fd_readdir",
    "fd_seek",
    "fd_sync",
    "fd_tell",
    "fd_write",
    "path_create_directory",
    "path_filestat_get",
    "path_open",
    "path_remove_directory",
    "path_rename",
    "path_unlink_file",
    "poll_oneoff",
    "proc_exit",
    "random_get",
    "sched_yield",
    "sock_accept",
    "sock_recv",
    "sock_send",
    "sock_shutdown",
];

type GuestCaller<'a> = Caller<'a, Guest>;

/// Runs `f` with guest memory and state; returns its errno.
fn with_memory(
    caller: &mut GuestCaller<'_>,
    f: impl FnOnce(&mut [u8], &mut Guest) -> WasiResult,
) -> i32 {
    let Some(memory) = caller.get_export("memory").and_then(Extern::into_memory) else {
        return abi::errno_of(Err(EFAULT));
    };
    let (data, guest) = memory.data_and_store_mut(caller);
    abi::errno_of(f(data, guest))
}

fn now_unix_ns() -> u64 {
    u64::try_from(crate::time::wall_clock_unix_ns()).unwrap_or(0)
}

/// Returns a linker with every preview-1 function.
pub(super) fn linker(engine: &Engine) -> wasmtime::Result<Linker<Guest>> {
    let mut linker = Linker::new(engine);
    link_args(&mut linker)?;
    link_clocks(&mut linker)?;
    link_streams(&mut linker)?;
    link_descriptors(&mut linker)?;
    link_paths(&mut linker)?;
    link_process(&mut linker)?;
    link_sockets(&mut linker)?;
    link_unsupported(&mut linker)?;
    Ok(linker)
}

/// Writes `items` as a `(pointers, buffer)` pair of NUL-terminated strings.
fn write_strings(memory: &mut [u8], items: &[String], pointers: u32, buffer: u32) -> WasiResult {
    // Guest pointers may sit anywhere: every step is checked, so an overflow is EFAULT.
    let (mut pointer, mut at) = (pointers, buffer);
    for item in items {
        abi::write_u32(memory, pointer, at)?;
        abi::write_bytes(memory, at, item.as_bytes())?;
        let end = u32::try_from(item.len())
            .ok()
            .and_then(|len| at.checked_add(len))
            .ok_or(EFAULT)?;
        abi::write_bytes(memory, end, &[0])?;
        at = end.checked_add(1).ok_or(EFAULT)?;
        pointer = pointer.checked_add(4).ok_or(EFAULT)?;
    }
    Ok(())
}

fn write_sizes(memory: &mut [u8], items: &[String], count_ptr: u32, size_ptr: u32) -> WasiResult {
    let bytes: usize = items.iter().map(|item| item.len() + 1).sum();
    abi::write_u32(memory, count_ptr, items.len() as u32)?;
    abi::write_u32(memory, size_ptr, u32::try_from(bytes).map_err(|_| EINVAL)?)
}

fn link_args(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    // `args_*` and `environ_*` differ only in which list they hand over.
    type List = fn(&Guest) -> &[String];
    let lists: [(&str, &str, List); 2] = [
        ("args_get", "args_sizes_get", |g| &g.args),
        ("environ_get", "environ_sizes_get", |g| &g.env),
    ];
    for (get, sizes_get, list) in lists {
        linker.func_wrap(
            MODULE,
            get,
            move |mut c: GuestCaller<'_>, at: i32, buf: i32| {
                with_memory(&mut c, |m, g| {
                    write_strings(m, list(g), at as u32, buf as u32)
                })
            },
        )?;
        linker.func_wrap(
            MODULE,
            sizes_get,
            move |mut c: GuestCaller<'_>, n: i32, size: i32| {
                with_memory(&mut c, |m, g| {
                    write_sizes(m, list(g), n as u32, size as u32)
                })
            },
        )?;
    }
    Ok(())
}

fn link_clocks(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "clock_res_get",
        |mut c: GuestCaller<'_>, id: i32, out: i32| {
            with_memory(&mut c, |m, _| {
                abi::write_u64(m, out as u32, clock::resolution_ns(id as u32)?)
            })
        },
    )?;
    linker.func_wrap_async(
        MODULE,
        "clock_time_get",
        |mut c: GuestCaller<'_>, (id, _precision, out): (i32, i64, i32)| {
            Box::new(async move {
                clock::charge_fuel(&mut c).await;
                with_memory(&mut c, |m, _| {
                    abi::write_u64(m, out as u32, clock::time_ns(id as u32)?)
                })
            })
        },
    )?;
    linker.func_wrap_async(
        MODULE,
        "poll_oneoff",
        |mut c: GuestCaller<'_>, (subs, events, count, written): (i32, i32, i32, i32)| {
            Box::new(async move {
                poll::poll_oneoff(
                    &mut c,
                    subs as u32,
                    events as u32,
                    count as u32,
                    written as u32,
                )
                .await
            })
        },
    )?;
    linker.func_wrap_async(MODULE, "sched_yield", |_: GuestCaller<'_>, (): ()| {
        Box::new(async move {
            crate::time::yield_now().await;
            0i32
        })
    })?;
    Ok(())
}

fn link_streams(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "fd_write",
        |mut c: GuestCaller<'_>, fd: i32, iovs: i32, len: i32, out: i32| {
            with_memory(&mut c, |m, g| {
                let data = abi::gather(m, iovs as u32, len as u32)?;
                let written = g.vfs.write(fd as u32, &data, None, now_unix_ns())?;
                abi::write_u32(m, out as u32, written)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_pwrite",
        |mut c: GuestCaller<'_>, fd: i32, iovs: i32, len: i32, offset: i64, out: i32| {
            with_memory(&mut c, |m, g| {
                let data = abi::gather(m, iovs as u32, len as u32)?;
                let at = Some(offset as u64);
                let written = g.vfs.write(fd as u32, &data, at, now_unix_ns())?;
                abi::write_u32(m, out as u32, written)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_read",
        |mut c: GuestCaller<'_>, fd: i32, iovs: i32, len: i32, out: i32| {
            with_memory(&mut c, |m, g| read_into(m, g, fd, iovs, len, None, out))
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_pread",
        |mut c: GuestCaller<'_>, fd: i32, iovs: i32, len: i32, offset: i64, out: i32| {
            with_memory(&mut c, |m, g| {
                read_into(m, g, fd, iovs, len, Some(offset as u64), out)
            })
        },
    )?;
    Ok(())
}

fn read_into(
    memory: &mut [u8],
    guest: &mut Guest,
    fd: i32,
    iovs: i32,
    len: i32,
    offset: Option<u64>,
    out: i32,
) -> WasiResult {
    let room = abi::capacity(memory, iovs as u32, len as u32)?;
    let data = guest.vfs.read(fd as u32, room, offset)?;
    let copied = abi::scatter(memory, iovs as u32, len as u32, &data)?;
    abi::write_u32(memory, out as u32, copied)
}

// Long because: one `func_wrap` per WASI descriptor call, each a few lines; the list is read as
// the ABI's table, and split it would hide which calls exist.
fn link_descriptors(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "fd_seek",
        |mut c: GuestCaller<'_>, fd: i32, delta: i64, whence: i32, out: i32| {
            with_memory(&mut c, |m, g| {
                let whence = u8::try_from(whence).map_err(|_| EINVAL)?;
                abi::write_u64(m, out as u32, g.vfs.seek(fd as u32, delta, whence)?)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_tell",
        |mut c: GuestCaller<'_>, fd: i32, out: i32| {
            with_memory(&mut c, |m, g| {
                let at = g.vfs.seek(fd as u32, 0, abi::WHENCE_CUR)?;
                abi::write_u64(m, out as u32, at)
            })
        },
    )?;
    linker.func_wrap(MODULE, "fd_close", |mut c: GuestCaller<'_>, fd: i32| {
        abi::errno_of(c.data_mut().vfs.close(fd as u32))
    })?;
    for name in ["fd_sync", "fd_datasync"] {
        linker.func_wrap(MODULE, name, |c: GuestCaller<'_>, fd: i32| {
            abi::errno_of(c.data().vfs.fdstat(fd as u32).map(|_| ()))
        })?;
    }
    linker.func_wrap(
        MODULE,
        "fd_fdstat_get",
        |mut c: GuestCaller<'_>, fd: i32, out: i32| {
            with_memory(&mut c, |m, g| {
                let (filetype, flags) = g.vfs.fdstat(fd as u32)?;
                abi::bytes(m, out as u32, FDSTAT_BYTES)?;
                abi::write_bytes(m, out as u32, &abi::fdstat(filetype, flags))
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_fdstat_set_flags",
        |mut c: GuestCaller<'_>, fd: i32, flags: i32| {
            abi::errno_of(c.data_mut().vfs.set_flags(fd as u32, flags as u16))
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_prestat_get",
        |mut c: GuestCaller<'_>, fd: i32, out: i32| {
            with_memory(&mut c, |m, g| {
                let name = g.vfs.prestat_name(fd as u32)?;
                let mut raw = [0u8; PRESTAT_BYTES as usize];
                raw[4..8].copy_from_slice(&(name.len() as u32).to_le_bytes());
                abi::write_bytes(m, out as u32, &raw)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_prestat_dir_name",
        |mut c: GuestCaller<'_>, fd: i32, path: i32, len: i32| {
            with_memory(&mut c, |m, g| {
                let name = g.vfs.prestat_name(fd as u32)?;
                let take = name.len().min(len as u32 as usize);
                abi::write_bytes(m, path as u32, &name.as_bytes()[..take])
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_filestat_get",
        |mut c: GuestCaller<'_>, fd: i32, out: i32| {
            with_memory(&mut c, |m, g| {
                abi::bytes(m, out as u32, FILESTAT_BYTES)?;
                let stat = g.vfs.fd_filestat(fd as u32)?;
                abi::write_bytes(m, out as u32, &stat.encode())
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_filestat_set_size",
        |mut c: GuestCaller<'_>, fd: i32, size: i64| {
            let now = now_unix_ns();
            abi::errno_of(c.data_mut().vfs.set_size(fd as u32, size as u64, now))
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_readdir",
        |mut c: GuestCaller<'_>, fd: i32, buf: i32, len: i32, cookie: i64, out: i32| {
            with_memory(&mut c, |m, g| {
                abi::bytes(m, buf as u32, len as u32)?;
                let listing = g
                    .vfs
                    .readdir(fd as u32, cookie as u64, len as u32 as usize)?;
                abi::write_bytes(m, buf as u32, &listing)?;
                abi::write_u32(m, out as u32, listing.len() as u32)
            })
        },
    )?;
    Ok(())
}

fn link_paths(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "path_open",
        |mut c: GuestCaller<'_>,
         fd: i32,
         _dirflags: i32,
         path: i32,
         len: i32,
         oflags: i32,
         _rights: i64,
         _inheriting: i64,
         fdflags: i32,
         out: i32| {
            with_memory(&mut c, |m, g| {
                let path = abi::read_str(m, path as u32, len as u32)?;
                let (oflags, fdflags) = (oflags as u16, fdflags as u16);
                let opened = g
                    .vfs
                    .open(fd as u32, &path, oflags, fdflags, now_unix_ns())?;
                abi::write_u32(m, out as u32, opened)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "path_filestat_get",
        |mut c: GuestCaller<'_>, fd: i32, _flags: i32, path: i32, len: i32, out: i32| {
            with_memory(&mut c, |m, g| {
                let path = abi::read_str(m, path as u32, len as u32)?;
                abi::bytes(m, out as u32, FILESTAT_BYTES)?;
                let stat = g.vfs.path_filestat(fd as u32, &path)?;
                abi::write_bytes(m, out as u32, &stat.encode())
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "path_create_directory",
        |mut c: GuestCaller<'_>, fd: i32, path: i32, len: i32| {
            with_memory(&mut c, |m, g| {
                let path = abi::read_str(m, path as u32, len as u32)?;
                g.vfs.create_dir(fd as u32, &path, now_unix_ns())
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "path_remove_directory",
        |mut c: GuestCaller<'_>, fd: i32, path: i32, len: i32| {
            with_memory(&mut c, |m, g| {
                g.vfs
                    .remove_dir(fd as u32, &abi::read_str(m, path as u32, len as u32)?)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "path_unlink_file",
        |mut c: GuestCaller<'_>, fd: i32, path: i32, len: i32| {
            with_memory(&mut c, |m, g| {
                g.vfs
                    .unlink(fd as u32, &abi::read_str(m, path as u32, len as u32)?)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "path_rename",
        |mut c: GuestCaller<'_>,
         fd: i32,
         from: i32,
         from_len: i32,
         to_fd: i32,
         to: i32,
         to_len: i32| {
            with_memory(&mut c, |m, g| {
                let from = abi::read_str(m, from as u32, from_len as u32)?;
                let to = abi::read_str(m, to as u32, to_len as u32)?;
                g.vfs
                    .rename(fd as u32, &from, to_fd as u32, &to, now_unix_ns())
            })
        },
    )?;
    Ok(())
}

fn link_process(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "proc_exit",
        |_: GuestCaller<'_>, code: i32| -> wasmtime::Result<()> {
            Err(wasmtime::Error::new(GuestExit(code)))
        },
    )?;
    linker.func_wrap(
        MODULE,
        "random_get",
        |mut c: GuestCaller<'_>, buf: i32, len: i32| {
            with_memory(&mut c, |m, g| {
                g.rng.fill_bytes(abi::bytes_mut(m, buf as u32, len as u32)?);
                Ok(())
            })
        },
    )?;
    Ok(())
}

fn link_sockets(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    let not_a_socket = |c: &GuestCaller<'_>, fd: i32| -> i32 {
        match c.data().vfs.fdstat(fd as u32) {
            Ok(_) => abi::errno_of(Err(ENOTSOCK)),
            Err(_) => abi::errno_of(Err(EBADF)),
        }
    };
    linker.func_wrap(
        MODULE,
        "sock_accept",
        move |c: GuestCaller<'_>, fd: i32, _: i32, _: i32| not_a_socket(&c, fd),
    )?;
    linker.func_wrap(
        MODULE,
        "sock_recv",
        move |c: GuestCaller<'_>, fd: i32, _: i32, _: i32, _: i32, _: i32, _: i32| {
            not_a_socket(&c, fd)
        },
    )?;
    linker.func_wrap(
        MODULE,
        "sock_send",
        move |c: GuestCaller<'_>, fd: i32, _: i32, _: i32, _: i32, _: i32| not_a_socket(&c, fd),
    )?;
    linker.func_wrap(
        MODULE,
        "sock_shutdown",
        move |c: GuestCaller<'_>, fd: i32, _: i32| not_a_socket(&c, fd),
    )?;
    Ok(())
}

fn link_unsupported(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    let nosys = abi::errno_of(Err(ENOSYS));
    linker.func_wrap(
        MODULE,
        "fd_advise",
        move |_: i32, _: i64, _: i64, _: i32| nosys,
    )?;
    linker.func_wrap(MODULE, "fd_allocate", move |_: i32, _: i64, _: i64| nosys)?;
    linker.func_wrap(
        MODULE,
        "fd_fdstat_set_rights",
        move |_: i32, _: i64, _: i64| nosys,
    )?;
    linker.func_wrap(
        MODULE,
        "fd_filestat_set_times",
        move |_: i32, _: i64, _: i64, _: i32| nosys,
    )?;
    linker.func_wrap(MODULE, "fd_renumber", move |_: i32, _: i32| nosys)?;
    linker.func_wrap(
        MODULE,
        "path_filestat_set_times",
        move |_: i32, _: i32, _: i32, _: i32, _: i64, _: i64, _: i32| nosys,
    )?;
    linker.func_wrap(
        MODULE,
        "path_link",
        move |_: i32, _: i32, _: i32, _: i32, _: i32, _: i32, _: i32| nosys,
    )?;
    linker.func_wrap(
        MODULE,
        "path_readlink",
        move |_: i32, _: i32, _: i32, _: i32, _: i32, _: i32| nosys,
    )?;
    linker.func_wrap(
        MODULE,
        "path_symlink",
        move |_: i32, _: i32, _: i32, _: i32, _: i32| nosys,
    )?;
    linker.func_wrap(MODULE, "proc_raise", move |_: i32| nosys)?;
    Ok(())
}
