//! The `wasi_snapshot_preview1` ABI: error numbers, type codes, record layouts, and reads and
//! writes of guest memory that check bounds (an out-of-range pointer is `EFAULT`, never a
//! panic or a host read).

use crate::cap::fs::FsError;

/// A WASI error number (`errno`); `Ok(())` stands for `ESUCCESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Errno(pub(super) u16);

pub(super) const EBADF: Errno = Errno(8);
pub(super) const EEXIST: Errno = Errno(20);
pub(super) const EFAULT: Errno = Errno(21);
pub(super) const EFBIG: Errno = Errno(22);
pub(super) const EILSEQ: Errno = Errno(25);
pub(super) const EINVAL: Errno = Errno(28);
pub(super) const EIO: Errno = Errno(29);
pub(super) const EISDIR: Errno = Errno(31);
pub(super) const ELOOP: Errno = Errno(32);
pub(super) const EMFILE: Errno = Errno(33);
pub(super) const ENOENT: Errno = Errno(44);
pub(super) const ENOSPC: Errno = Errno(51);
pub(super) const ENOSYS: Errno = Errno(52);
pub(super) const ENOTDIR: Errno = Errno(54);
pub(super) const ENOTEMPTY: Errno = Errno(55);
pub(super) const ENOTSOCK: Errno = Errno(57);
pub(super) const ESPIPE: Errno = Errno(70);
pub(super) const ENOTCAPABLE: Errno = Errno(76);

/// The result of a host function before it becomes the guest's `errno`.
pub(super) type WasiResult<T = ()> = Result<T, Errno>;

/// Returns the `errno` a host function hands back to the guest.
pub(super) fn errno_of(result: WasiResult) -> i32 {
    match result {
        Ok(()) => 0,
        Err(Errno(code)) => i32::from(code),
    }
}

impl From<FsError> for Errno {
    fn from(error: FsError) -> Errno {
        match error {
            FsError::Escape { .. } => ENOTCAPABLE,
            FsError::NotFound { .. } => ENOENT,
            FsError::AlreadyExists { .. } => EEXIST,
            FsError::NotADirectory { .. } => ENOTDIR,
            FsError::IsADirectory { .. } => EISDIR,
            FsError::NotEmpty { .. } => ENOTEMPTY,
            FsError::InvalidPath { .. } => EINVAL,
            FsError::SymlinkLoop { .. } => ELOOP,
            FsError::NoSpace { .. } => ENOSPC,
            FsError::Io { .. } | FsError::PartialWrite { .. } => EIO,
        }
    }
}

/// File types (`filetype`).
pub(super) const FILETYPE_CHARACTER_DEVICE: u8 = 2;
pub(super) const FILETYPE_DIRECTORY: u8 = 3;
pub(super) const FILETYPE_REGULAR_FILE: u8 = 4;

/// Clock ids (`clockid`).
pub(super) const CLOCK_REALTIME: u32 = 0;
pub(super) const CLOCK_MONOTONIC: u32 = 1;
pub(super) const CLOCK_PROCESS_CPUTIME: u32 = 2;
pub(super) const CLOCK_THREAD_CPUTIME: u32 = 3;

/// `path_open` flags (`oflags`).
pub(super) const OFLAGS_CREAT: u16 = 1;
pub(super) const OFLAGS_DIRECTORY: u16 = 2;
pub(super) const OFLAGS_EXCL: u16 = 4;
pub(super) const OFLAGS_TRUNC: u16 = 8;

/// The `append` bit of `fdflags`; the other bits (dsync, nonblock, rsync, sync) change nothing
/// in memory and are accepted and ignored.
pub(super) const FDFLAGS_APPEND: u16 = 1;

/// Every right preview 1 defines (bits 0 to 29): the sandbox checks capabilities by path, not
/// by rights, so each descriptor reports them all.
pub(super) const RIGHTS_ALL: u64 = (1 << 30) - 1;

/// `whence` of `fd_seek`.
pub(super) const WHENCE_SET: u8 = 0;
pub(super) const WHENCE_CUR: u8 = 1;
pub(super) const WHENCE_END: u8 = 2;

/// Subscription and event layout of `poll_oneoff`.
pub(super) const SUBSCRIPTION_BYTES: u32 = 48;
pub(super) const EVENT_BYTES: u32 = 32;
pub(super) const EVENTTYPE_CLOCK: u8 = 0;
pub(super) const EVENTTYPE_FD_READ: u8 = 1;
pub(super) const EVENTTYPE_FD_WRITE: u8 = 2;
pub(super) const SUBCLOCKFLAGS_ABSTIME: u16 = 1;

/// Size of `filestat`, `fdstat`, `prestat` and of a `dirent` header.
pub(super) const FILESTAT_BYTES: u32 = 64;
pub(super) const FDSTAT_BYTES: u32 = 24;
pub(super) const PRESTAT_BYTES: u32 = 8;
pub(super) const DIRENT_HEADER_BYTES: usize = 24;

/// Returns `len` bytes of guest memory at `ptr`.
pub(super) fn bytes(memory: &[u8], ptr: u32, len: u32) -> WasiResult<&[u8]> {
    let start = ptr as usize;
    let end = start.checked_add(len as usize).ok_or(EFAULT)?;
    memory.get(start..end).ok_or(EFAULT)
}

/// Returns `len` writable bytes of guest memory at `ptr`.
pub(super) fn bytes_mut(memory: &mut [u8], ptr: u32, len: u32) -> WasiResult<&mut [u8]> {
    let start = ptr as usize;
    let end = start.checked_add(len as usize).ok_or(EFAULT)?;
    memory.get_mut(start..end).ok_or(EFAULT)
}

/// Reads a little-endian `u16`, `u32` or `u64` at `ptr`.
pub(super) fn read_u16(memory: &[u8], ptr: u32) -> WasiResult<u16> {
    let raw = bytes(memory, ptr, 2)?;
    Ok(u16::from_le_bytes([raw[0], raw[1]]))
}

/// See [`read_u16`].
pub(super) fn read_u32(memory: &[u8], ptr: u32) -> WasiResult<u32> {
    let raw: [u8; 4] = bytes(memory, ptr, 4)?.try_into().map_err(|_| EFAULT)?;
    Ok(u32::from_le_bytes(raw))
}

/// See [`read_u16`].
pub(super) fn read_u64(memory: &[u8], ptr: u32) -> WasiResult<u64> {
    let raw: [u8; 8] = bytes(memory, ptr, 8)?.try_into().map_err(|_| EFAULT)?;
    Ok(u64::from_le_bytes(raw))
}

/// Writes `value` at `ptr`.
pub(super) fn write_bytes(memory: &mut [u8], ptr: u32, value: &[u8]) -> WasiResult {
    let len = u32::try_from(value.len()).map_err(|_| EFAULT)?;
    bytes_mut(memory, ptr, len)?.copy_from_slice(value);
    Ok(())
}

/// Writes a little-endian `u32` at `ptr`.
pub(super) fn write_u32(memory: &mut [u8], ptr: u32, value: u32) -> WasiResult {
    write_bytes(memory, ptr, &value.to_le_bytes())
}

/// Writes a little-endian `u64` at `ptr`.
pub(super) fn write_u64(memory: &mut [u8], ptr: u32, value: u64) -> WasiResult {
    write_bytes(memory, ptr, &value.to_le_bytes())
}

/// Returns the guest's UTF-8 string at `ptr` (`EILSEQ` when it is not UTF-8).
pub(super) fn read_str(memory: &[u8], ptr: u32, len: u32) -> WasiResult<String> {
    let raw = bytes(memory, ptr, len)?;
    std::str::from_utf8(raw)
        .map(str::to_owned)
        .map_err(|_| EILSEQ)
}

/// One `iovec`/`ciovec`: a guest buffer.
#[derive(Debug, Clone, Copy)]
pub(super) struct IoVec {
    pub(super) ptr: u32,
    pub(super) len: u32,
}

/// Reads an array of `count` iovecs at `ptr`, each checked to lie inside memory.
pub(super) fn iovecs(memory: &[u8], ptr: u32, count: u32) -> WasiResult<Vec<IoVec>> {
    let array = bytes(memory, ptr, count.checked_mul(8).ok_or(EFAULT)?)?;
    array
        .chunks_exact(8)
        .map(|raw| {
            let vec = IoVec {
                ptr: u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]),
                len: u32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]]),
            };
            bytes(memory, vec.ptr, vec.len).map(|_| vec)
        })
        .collect()
}

/// Returns the bytes of a `ciovec` array, concatenated.
pub(super) fn gather(memory: &[u8], ptr: u32, count: u32) -> WasiResult<Vec<u8>> {
    let mut out = Vec::new();
    for vec in iovecs(memory, ptr, count)? {
        out.extend_from_slice(bytes(memory, vec.ptr, vec.len)?);
    }
    Ok(out)
}

/// Copies `data` into an `iovec` array in order; returns the bytes copied.
pub(super) fn scatter(memory: &mut [u8], ptr: u32, count: u32, data: &[u8]) -> WasiResult<u32> {
    let mut copied = 0usize;
    for vec in iovecs(memory, ptr, count)? {
        let take = (vec.len as usize).min(data.len() - copied);
        let end = copied + take;
        bytes_mut(memory, vec.ptr, take as u32)?.copy_from_slice(&data[copied..end]);
        copied = end;
        if copied == data.len() {
            break;
        }
    }
    u32::try_from(copied).map_err(|_| EFAULT)
}

/// Returns the total length of an `iovec` array (how much a read may return).
pub(super) fn capacity(memory: &[u8], ptr: u32, count: u32) -> WasiResult<usize> {
    Ok(iovecs(memory, ptr, count)?
        .iter()
        .map(|vec| vec.len as usize)
        .sum())
}

/// A `filestat` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileStat {
    pub(super) ino: u64,
    pub(super) filetype: u8,
    pub(super) size: u64,
    /// atim, mtim and ctim alike, in nanoseconds since the Unix epoch.
    pub(super) time_ns: u64,
}

impl FileStat {
    /// Returns the 64-byte encoding (dev is always 0, nlink 1).
    pub(super) fn encode(&self) -> [u8; FILESTAT_BYTES as usize] {
        let mut out = [0u8; FILESTAT_BYTES as usize];
        out[8..16].copy_from_slice(&self.ino.to_le_bytes());
        out[16] = self.filetype;
        out[24..32].copy_from_slice(&1u64.to_le_bytes());
        out[32..40].copy_from_slice(&self.size.to_le_bytes());
        for at in [40, 48, 56] {
            out[at..at + 8].copy_from_slice(&self.time_ns.to_le_bytes());
        }
        out
    }
}

/// Returns a 24-byte `fdstat` record.
pub(super) fn fdstat(filetype: u8, flags: u16) -> [u8; FDSTAT_BYTES as usize] {
    let mut out = [0u8; FDSTAT_BYTES as usize];
    out[0] = filetype;
    out[2..4].copy_from_slice(&flags.to_le_bytes());
    out[8..16].copy_from_slice(&RIGHTS_ALL.to_le_bytes());
    out[16..24].copy_from_slice(&RIGHTS_ALL.to_le_bytes());
    out
}

/// Returns a `dirent` header followed by `name`.
pub(super) fn dirent(next: u64, ino: u64, filetype: u8, name: &str) -> Vec<u8> {
    let mut out = vec![0u8; DIRENT_HEADER_BYTES];
    out[0..8].copy_from_slice(&next.to_le_bytes());
    out[8..16].copy_from_slice(&ino.to_le_bytes());
    out[16..20].copy_from_slice(&(name.len() as u32).to_le_bytes());
    out[20] = filetype;
    out.extend_from_slice(name.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_reads_check_bounds() {
        // Goal: a pointer or length past the end of guest memory is EFAULT, never a panic.
        let memory = [1u8, 0, 0, 0, 2, 0, 0, 0];
        assert_eq!(read_u32(&memory, 4), Ok(2));
        assert_eq!(read_u32(&memory, 5), Err(EFAULT));
        assert_eq!(read_u64(&memory, u32::MAX), Err(EFAULT));
        assert_eq!(bytes(&memory, 8, 0), Ok(&[][..]));
        assert_eq!(bytes(&memory, 9, 0), Err(EFAULT));
    }

    #[test]
    fn iovecs_scatter_in_order() {
        // Goal: a read fills the guest's buffers in order and stops when the data ends.
        let mut memory = vec![0u8; 64];
        write_u32(&mut memory, 0, 32).unwrap();
        write_u32(&mut memory, 4, 2).unwrap();
        write_u32(&mut memory, 8, 40).unwrap();
        write_u32(&mut memory, 12, 8).unwrap();
        assert_eq!(capacity(&memory, 0, 2), Ok(10));
        assert_eq!(scatter(&mut memory, 0, 2, b"hello"), Ok(5));
        assert_eq!(&memory[32..34], b"he");
        assert_eq!(&memory[40..43], b"llo");
        assert_eq!(gather(&memory, 0, 2).unwrap()[..5], *b"hello");
        write_u32(&mut memory, 12, 1000).unwrap();
        assert_eq!(iovecs(&memory, 0, 2).unwrap_err(), EFAULT);
    }
}
