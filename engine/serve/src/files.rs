//! Writing output files so that a reader never sees half of one: the bytes go to a temporary
//! file beside the target, unique per write, are synced, and the temporary is renamed over
//! the target (a rename within one file system is atomic on POSIX). A process killed at any
//! instant leaves the old file or the whole new one, and at most a temporary beside it.

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically: either the old file or the whole new one is there.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    // Unique per write: two threads may write the same content-addressed file at once.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(
        ".{}-{}.partial",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let temporary = path.with_file_name(name);
    let written = std::fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
    if renamed.is_err() {
        // Best effort: a failed write leaves no temporary behind.
        let _ = std::fs::remove_file(&temporary);
    }
    renamed
}
