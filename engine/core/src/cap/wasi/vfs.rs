//! The guest's filesystem view: a descriptor table over a private clone of the run's
//! overlay, with virtual inode numbers and file times, and the ordered log of the guest's
//! changes that is merged into the fs actor when the guest exits.
//!
//! Nothing here reads host metadata: kinds and sizes come from the overlay, inode numbers are
//! handed out in order of first sight (the root is 1), and every time is the simulated wall
//! clock at the guest's last write of the file, or the run's start instant.

use std::collections::{BTreeMap, BTreeSet};

use super::abi::{
    self, Errno, FileStat, WasiResult, EBADF, EEXIST, EFBIG, EINVAL, EISDIR, EMFILE, ENOENT,
    ENOTCAPABLE, ENOTDIR, ENOTEMPTY, ESPIPE, FDFLAGS_APPEND, FILETYPE_CHARACTER_DEVICE,
    FILETYPE_DIRECTORY, FILETYPE_REGULAR_FILE, OFLAGS_CREAT, OFLAGS_DIRECTORY, OFLAGS_EXCL,
    OFLAGS_TRUNC, WHENCE_CUR, WHENCE_END, WHENCE_SET,
};
use crate::cap::fs::{Content, FileKind, FsRequest, Overlay};

/// Descriptors one guest may hold open at once.
pub(super) const DESCRIPTORS_MAX: usize = 1024;

/// The largest file a guest may make, in bytes: a write or truncate past it is `EFBIG`, so
/// a guest cannot make the host allocate without bound.
pub(super) const FILE_BYTES_MAX: usize = 1 << 30;

/// The pre-opened root directory's descriptor (after stdin, stdout and stderr).
pub(super) const ROOT_FD: u32 = 3;

/// Captured output: at most `max` bytes kept, the rest counted.
#[derive(Debug, Default)]
pub(super) struct Capture {
    pub(super) bytes: Vec<u8>,
    pub(super) max: u64,
    pub(super) dropped: u64,
}

impl Capture {
    fn push(&mut self, data: &[u8]) {
        let room = self.max.saturating_sub(self.bytes.len() as u64);
        let kept = usize::try_from(room).map_or(data.len(), |room| room.min(data.len()));
        self.bytes.extend_from_slice(&data[..kept]);
        self.dropped += (data.len() - kept) as u64;
    }
}

#[derive(Debug, Clone)]
enum Descriptor {
    Stdin,
    Stdout,
    Stderr,
    Dir {
        key: String,
    },
    File {
        key: String,
        position: u64,
        append: bool,
    },
}

/// The guest's descriptors, streams and filesystem.
#[derive(Debug)]
pub(super) struct Vfs {
    overlay: Overlay,
    descriptors: BTreeMap<u32, Descriptor>,
    inodes: BTreeMap<String, u64>,
    written_at_unix_ns: BTreeMap<String, u64>,
    start_unix_ns: u64,
    stdin: Vec<u8>,
    stdin_position: usize,
    pub(super) stdout: Capture,
    pub(super) stderr: Capture,
    /// Changes in the order the guest made them; writes wait in `pending_writes` until the
    /// next structural change (or the end), so a file written many times is logged once.
    changes: Vec<FsRequest>,
    pending_writes: BTreeSet<String>,
}

impl Vfs {
    /// Returns the view a guest starts with: stdio on 0 to 2, the overlay root on 3.
    pub(super) fn new(
        overlay: Overlay,
        stdin: Vec<u8>,
        output_bytes_max: u64,
        start_unix_ns: u64,
    ) -> Vfs {
        let descriptors = BTreeMap::from([
            (0, Descriptor::Stdin),
            (1, Descriptor::Stdout),
            (2, Descriptor::Stderr),
            (ROOT_FD, Descriptor::Dir { key: String::new() }),
        ]);
        let capture = || Capture {
            max: output_bytes_max,
            ..Capture::default()
        };
        Vfs {
            overlay,
            descriptors,
            inodes: BTreeMap::from([(String::new(), 1)]),
            written_at_unix_ns: BTreeMap::new(),
            start_unix_ns,
            stdin,
            stdin_position: 0,
            stdout: capture(),
            stderr: capture(),
            changes: Vec::new(),
            pending_writes: BTreeSet::new(),
        }
    }

    /// Returns the guest's changes, in order, as fs actor requests.
    pub(super) fn finish(&mut self) -> Vec<FsRequest> {
        self.flush_writes();
        std::mem::take(&mut self.changes)
    }

    fn descriptor(&self, fd: u32) -> WasiResult<&Descriptor> {
        self.descriptors.get(&fd).ok_or(EBADF)
    }

    fn dir_key(&self, fd: u32) -> WasiResult<&str> {
        match self.descriptor(fd)? {
            Descriptor::Dir { key } => Ok(key),
            _ => Err(ENOTDIR),
        }
    }

    /// Resolves a guest path against the directory `fd`, lexically: `..` may not climb
    /// above the root and absolute paths are refused, so the host is never reached.
    fn resolve(&self, fd: u32, path: &str) -> WasiResult<String> {
        if path.is_empty() {
            return Err(ENOENT);
        }
        if path.starts_with('/') {
            return Err(ENOTCAPABLE);
        }
        let mut parts: Vec<&str> = self
            .dir_key(fd)?
            .split('/')
            .filter(|p| !p.is_empty())
            .collect();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop().ok_or(ENOTCAPABLE)?;
                }
                name => parts.push(name),
            }
        }
        Ok(parts.join("/"))
    }

    fn inode(&mut self, key: &str) -> u64 {
        let next = self.inodes.len() as u64 + 1;
        *self.inodes.entry(key.to_owned()).or_insert(next)
    }

    fn stat_key(&mut self, key: &str) -> WasiResult<FileStat> {
        let stat = self.overlay.stat(key)?;
        let filetype = match stat.kind {
            FileKind::File => FILETYPE_REGULAR_FILE,
            FileKind::Dir => FILETYPE_DIRECTORY,
        };
        Ok(FileStat {
            ino: self.inode(key),
            filetype,
            size: stat.size,
            time_ns: self
                .written_at_unix_ns
                .get(key)
                .copied()
                .unwrap_or(self.start_unix_ns),
        })
    }

    fn insert(&mut self, descriptor: Descriptor) -> WasiResult<u32> {
        if self.descriptors.len() >= DESCRIPTORS_MAX {
            return Err(EMFILE);
        }
        let fd = (0..)
            .find(|fd| !self.descriptors.contains_key(fd))
            .expect("fewer than DESCRIPTORS_MAX descriptors leave a free number");
        self.descriptors.insert(fd, descriptor);
        Ok(fd)
    }

    fn wrote(&mut self, key: &str, bytes: Vec<u8>, now_unix_ns: u64) -> WasiResult {
        self.overlay.write(key, bytes)?;
        self.written_at_unix_ns.insert(key.to_owned(), now_unix_ns);
        self.pending_writes.insert(key.to_owned());
        Ok(())
    }

    fn flush_writes(&mut self) {
        for path in std::mem::take(&mut self.pending_writes) {
            // A pending write's file exists: only a structural change could remove it, and
            // those flush first.
            let bytes = self
                .overlay
                .read(&path)
                .expect("a written file is readable");
            self.changes.push(FsRequest::Write {
                path,
                bytes: Content(bytes),
            });
        }
    }

    fn structural(&mut self, change: FsRequest) {
        self.flush_writes();
        self.changes.push(change);
    }

    /// `fd_write` and `fd_pwrite` (`offset` set): returns the bytes written.
    pub(super) fn write(
        &mut self,
        fd: u32,
        data: &[u8],
        offset: Option<u64>,
        now_unix_ns: u64,
    ) -> WasiResult<u32> {
        let (key, at) = match (self.descriptor(fd)?.clone(), offset) {
            (Descriptor::Stdout, None) => {
                self.stdout.push(data);
                return length(data);
            }
            (Descriptor::Stderr, None) => {
                self.stderr.push(data);
                return length(data);
            }
            (Descriptor::Stdout | Descriptor::Stderr, Some(_)) => return Err(ESPIPE),
            (Descriptor::Stdin | Descriptor::Dir { .. }, _) => return Err(EBADF),
            (
                Descriptor::File {
                    key, append: true, ..
                },
                None,
            ) => (key, None),
            (Descriptor::File { key, position, .. }, None) => (key, Some(position)),
            (Descriptor::File { key, .. }, Some(offset)) => (key, Some(offset)),
        };
        let mut content = self.overlay.read(&key)?;
        let start = at.map_or(content.len(), |at| {
            usize::try_from(at).unwrap_or(usize::MAX)
        });
        let end = start.checked_add(data.len()).ok_or(EFBIG)?;
        if end > FILE_BYTES_MAX {
            return Err(EFBIG);
        }
        if content.len() < end {
            content.resize(end, 0);
        }
        content[start..end].copy_from_slice(data);
        self.wrote(&key, content, now_unix_ns)?;
        if offset.is_none() {
            self.set_position(fd, end as u64);
        }
        length(data)
    }

    /// `fd_read` and `fd_pread` (`offset` set): returns at most `max` bytes.
    pub(super) fn read(&mut self, fd: u32, max: usize, offset: Option<u64>) -> WasiResult<Vec<u8>> {
        let (key, at) = match (self.descriptor(fd)?.clone(), offset) {
            (Descriptor::Stdin, None) => {
                let rest = &self.stdin[self.stdin_position..];
                let taken = rest[..max.min(rest.len())].to_vec();
                self.stdin_position += taken.len();
                return Ok(taken);
            }
            (Descriptor::Stdin, Some(_)) => return Err(ESPIPE),
            (Descriptor::Dir { .. }, _) => return Err(EISDIR),
            (Descriptor::Stdout | Descriptor::Stderr, _) => return Err(EBADF),
            (Descriptor::File { key, position, .. }, None) => (key, position),
            (Descriptor::File { key, .. }, Some(offset)) => (key, offset),
        };
        let content = self.overlay.read(&key)?;
        let start = usize::try_from(at).unwrap_or(usize::MAX).min(content.len());
        let taken = content[start..start + max.min(content.len() - start)].to_vec();
        if offset.is_none() {
            self.set_position(fd, (start + taken.len()) as u64);
        }
        Ok(taken)
    }

    /// Returns the bytes a read of `fd` would find now (for `poll_oneoff`).
    pub(super) fn readable_bytes(&self, fd: u32) -> WasiResult<u64> {
        match self.descriptor(fd)? {
            Descriptor::Stdin => Ok((self.stdin.len() - self.stdin_position) as u64),
            Descriptor::File { key, position, .. } => {
                let size = self.overlay.stat(key)?.size;
                Ok(size.saturating_sub(*position))
            }
            Descriptor::Dir { .. } => Err(EISDIR),
            Descriptor::Stdout | Descriptor::Stderr => Err(EBADF),
        }
    }

    fn set_position(&mut self, fd: u32, at: u64) {
        if let Some(Descriptor::File { position, .. }) = self.descriptors.get_mut(&fd) {
            *position = at;
        }
    }

    /// `fd_seek`: returns the new position.
    pub(super) fn seek(&mut self, fd: u32, delta: i64, whence: u8) -> WasiResult<u64> {
        let (key, position) = match self.descriptor(fd)? {
            Descriptor::File { key, position, .. } => (key.clone(), *position),
            Descriptor::Dir { .. } => return Err(EBADF),
            _ => return Err(ESPIPE),
        };
        let base = match whence {
            WHENCE_SET => 0,
            WHENCE_CUR => position,
            WHENCE_END => self.overlay.stat(&key)?.size,
            _ => return Err(EINVAL),
        };
        let at = base.checked_add_signed(delta).ok_or(EINVAL)?;
        self.set_position(fd, at);
        Ok(at)
    }

    /// `fd_close`.
    pub(super) fn close(&mut self, fd: u32) -> WasiResult {
        self.descriptors.remove(&fd).map(|_| ()).ok_or(EBADF)
    }

    /// `fd_fdstat_get`: the file type and flags.
    pub(super) fn fdstat(&self, fd: u32) -> WasiResult<(u8, u16)> {
        Ok(match self.descriptor(fd)? {
            Descriptor::Stdin | Descriptor::Stdout | Descriptor::Stderr => {
                (FILETYPE_CHARACTER_DEVICE, 0)
            }
            Descriptor::Dir { .. } => (FILETYPE_DIRECTORY, 0),
            Descriptor::File { append, .. } => (
                FILETYPE_REGULAR_FILE,
                if *append { FDFLAGS_APPEND } else { 0 },
            ),
        })
    }

    /// `fd_fdstat_set_flags`: only `append` changes anything.
    pub(super) fn set_flags(&mut self, fd: u32, flags: u16) -> WasiResult {
        if let Descriptor::File { append, .. } = self.descriptors.get_mut(&fd).ok_or(EBADF)? {
            *append = flags & FDFLAGS_APPEND != 0;
        }
        Ok(())
    }

    /// `fd_prestat_get` and `fd_prestat_dir_name`: only the root is pre-opened, as `/`.
    pub(super) fn prestat_name(&self, fd: u32) -> WasiResult<&'static str> {
        match (fd, self.descriptor(fd)?) {
            (ROOT_FD, Descriptor::Dir { key }) if key.is_empty() => Ok("/"),
            _ => Err(EBADF),
        }
    }

    /// `fd_filestat_get`.
    pub(super) fn fd_filestat(&mut self, fd: u32) -> WasiResult<FileStat> {
        match self.descriptor(fd)?.clone() {
            Descriptor::Dir { key } | Descriptor::File { key, .. } => self.stat_key(&key),
            Descriptor::Stdin | Descriptor::Stdout | Descriptor::Stderr => Ok(FileStat {
                ino: 0,
                filetype: FILETYPE_CHARACTER_DEVICE,
                size: 0,
                time_ns: self.start_unix_ns,
            }),
        }
    }

    /// `fd_filestat_set_size`: truncates or extends with zeros.
    pub(super) fn set_size(&mut self, fd: u32, size: u64, now_unix_ns: u64) -> WasiResult {
        let Descriptor::File { key, .. } = self.descriptor(fd)?.clone() else {
            return Err(EBADF);
        };
        let size = usize::try_from(size).map_err(|_| EFBIG)?;
        if size > FILE_BYTES_MAX {
            return Err(EFBIG);
        }
        let mut content = self.overlay.read(&key)?;
        content.resize(size, 0);
        self.wrote(&key, content, now_unix_ns)
    }

    /// `fd_readdir`: `.`, `..`, then the entries sorted by name; cookie `n` starts at the
    /// n-th of them. The answer may end in a cut entry, as the ABI allows.
    pub(super) fn readdir(&mut self, fd: u32, cookie: u64, len: usize) -> WasiResult<Vec<u8>> {
        let key = self.dir_key(fd)?.to_owned();
        let parent = key
            .rsplit_once('/')
            .map_or("", |(parent, _)| parent)
            .to_owned();
        let mut entries = vec![(".".to_owned(), key.clone()), ("..".to_owned(), parent)];
        for name in self.overlay.list(&key)? {
            let child = if key.is_empty() {
                name.clone()
            } else {
                format!("{key}/{name}")
            };
            entries.push((name, child));
        }
        let mut out = Vec::new();
        let skip = usize::try_from(cookie).unwrap_or(usize::MAX);
        for (index, (name, child)) in entries.iter().enumerate().skip(skip) {
            if out.len() >= len {
                break;
            }
            let stat = self.stat_key(child)?;
            out.extend(abi::dirent(index as u64 + 1, stat.ino, stat.filetype, name));
        }
        out.truncate(len);
        Ok(out)
    }

    /// `path_open`: returns the new descriptor.
    pub(super) fn open(
        &mut self,
        fd: u32,
        path: &str,
        oflags: u16,
        fdflags: u16,
        now_unix_ns: u64,
    ) -> WasiResult<u32> {
        let key = self.resolve(fd, path)?;
        let existing = match self.overlay.stat(&key) {
            Ok(stat) => Some(stat.kind),
            Err(error) => match Errno::from(error) {
                ENOENT => None,
                other => return Err(other),
            },
        };
        let descriptor = match existing {
            Some(_) if oflags & OFLAGS_CREAT != 0 && oflags & OFLAGS_EXCL != 0 => {
                return Err(EEXIST)
            }
            Some(FileKind::Dir) if oflags & OFLAGS_TRUNC != 0 => return Err(EISDIR),
            Some(FileKind::Dir) => Descriptor::Dir { key },
            Some(FileKind::File) if oflags & OFLAGS_DIRECTORY != 0 => return Err(ENOTDIR),
            Some(FileKind::File) => {
                if oflags & OFLAGS_TRUNC != 0 {
                    self.wrote(&key, Vec::new(), now_unix_ns)?;
                }
                file(key, fdflags)
            }
            None if oflags & OFLAGS_CREAT != 0 && oflags & OFLAGS_DIRECTORY == 0 => {
                self.wrote(&key, Vec::new(), now_unix_ns)?;
                file(key, fdflags)
            }
            None => return Err(ENOENT),
        };
        self.insert(descriptor)
    }

    /// `path_filestat_get`.
    pub(super) fn path_filestat(&mut self, fd: u32, path: &str) -> WasiResult<FileStat> {
        let key = self.resolve(fd, path)?;
        self.stat_key(&key)
    }

    /// `path_create_directory`.
    pub(super) fn create_dir(&mut self, fd: u32, path: &str, now_unix_ns: u64) -> WasiResult {
        let key = self.resolve(fd, path)?;
        self.overlay.create_dir(&key)?;
        self.written_at_unix_ns.insert(key.clone(), now_unix_ns);
        self.structural(FsRequest::Mkdir { path: key });
        Ok(())
    }

    /// `path_remove_directory`: only an empty directory, as POSIX `rmdir`.
    pub(super) fn remove_dir(&mut self, fd: u32, path: &str) -> WasiResult {
        let key = self.resolve(fd, path)?;
        if key.is_empty() {
            return Err(ENOTCAPABLE);
        }
        if !self.overlay.list(&key)?.is_empty() {
            return Err(ENOTEMPTY);
        }
        self.overlay.remove_dir(&key)?;
        self.structural(FsRequest::Rmdir { path: key });
        Ok(())
    }

    /// `path_unlink_file`.
    pub(super) fn unlink(&mut self, fd: u32, path: &str) -> WasiResult {
        let key = self.resolve(fd, path)?;
        self.overlay.remove(&key)?;
        self.pending_writes.remove(&key);
        self.structural(FsRequest::Delete { path: key });
        Ok(())
    }

    /// `path_rename`.
    pub(super) fn rename(
        &mut self,
        from_fd: u32,
        from: &str,
        to_fd: u32,
        to: &str,
        now_unix_ns: u64,
    ) -> WasiResult {
        let (from, to) = (self.resolve(from_fd, from)?, self.resolve(to_fd, to)?);
        if from.is_empty() || to.is_empty() {
            return Err(ENOTCAPABLE);
        }
        self.flush_writes();
        self.overlay.rename(&from, &to)?;
        self.written_at_unix_ns.insert(to.clone(), now_unix_ns);
        self.structural(FsRequest::Rename { from, to });
        Ok(())
    }
}

fn file(key: String, fdflags: u16) -> Descriptor {
    Descriptor::File {
        key,
        position: 0,
        append: fdflags & FDFLAGS_APPEND != 0,
    }
}

/// The length a write reports: all of it (a capture counts what it drops).
fn length(data: &[u8]) -> WasiResult<u32> {
    u32::try_from(data.len()).map_err(|_| EINVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vfs() -> Vfs {
        Vfs::new(Overlay::in_memory(), b"in".to_vec(), 4, 7)
    }

    #[test]
    fn paths_stay_below_the_root() {
        // Goal: `..` cannot climb above the pre-opened root and absolute paths are refused.
        let vfs = vfs();
        assert_eq!(vfs.resolve(ROOT_FD, "a/./b/../c"), Ok("a/c".to_owned()));
        assert_eq!(vfs.resolve(ROOT_FD, "../x"), Err(ENOTCAPABLE));
        assert_eq!(vfs.resolve(ROOT_FD, "a/../../x"), Err(ENOTCAPABLE));
        assert_eq!(vfs.resolve(ROOT_FD, "/etc/passwd"), Err(ENOTCAPABLE));
        assert_eq!(vfs.resolve(1, "x"), Err(ENOTDIR));
    }

    #[test]
    fn changes_are_logged_in_order_with_writes_coalesced() {
        // Goal: many writes to one file are one logged write, placed before the next
        // structural change, so replaying the log gives the guest's final tree.
        let mut vfs = vfs();
        let fd = vfs.open(ROOT_FD, "a", OFLAGS_CREAT, 0, 10).unwrap();
        vfs.write(fd, b"one", None, 11).unwrap();
        vfs.write(fd, b"two", None, 12).unwrap();
        vfs.rename(ROOT_FD, "a", ROOT_FD, "b", 13).unwrap();
        vfs.create_dir(ROOT_FD, "d", 14).unwrap();
        let changes = vfs.finish();
        assert_eq!(changes.len(), 3);
        assert!(
            matches!(&changes[0], FsRequest::Write { path, bytes } if path == "a" && bytes.0 == b"onetwo")
        );
        assert!(matches!(&changes[1], FsRequest::Rename { to, .. } if to == "b"));
        assert_eq!(vfs.path_filestat(ROOT_FD, "b").unwrap().time_ns, 13);
    }

    #[test]
    fn files_cannot_grow_without_bound() {
        // Goal: a write far past the end, or a huge truncate, is EFBIG, not a host allocation.
        let mut vfs = vfs();
        let fd = vfs.open(ROOT_FD, "big", OFLAGS_CREAT, 0, 0).unwrap();
        assert_eq!(vfs.write(fd, b"x", Some(1 << 40), 0), Err(EFBIG));
        assert_eq!(vfs.set_size(fd, u64::MAX, 0), Err(EFBIG));
        assert_eq!(vfs.write(fd, b"x", Some(3), 0), Ok(1));
        assert_eq!(vfs.fd_filestat(fd).unwrap().size, 4);
    }

    #[test]
    fn stdout_is_capped_and_counted() {
        // Goal: output past the cap is dropped and counted; the guest sees a full write.
        let mut vfs = vfs();
        assert_eq!(vfs.write(1, b"abcdef", None, 0), Ok(6));
        assert_eq!(vfs.stdout.bytes, b"abcd");
        assert_eq!(vfs.stdout.dropped, 2);
        assert_eq!(vfs.read(0, 10, None).unwrap(), b"in");
    }
}
