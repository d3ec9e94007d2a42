//! What the overlay knows of the real (lower) directory's entries: kind, size and symlink
//! target, each read from the host once.
//!
//! The real directory is only ever read, and must not change while runs use it, so an
//! entry's metadata is asked of the host the first time any clone of the overlay needs it.
//! Clones share one snapshot (a sweep's runs, each built from the same `FsActor`, stat each
//! real path once between them), and each overlay also keeps the entries it has looked up in
//! a table of its own, so a run touches the shared, locked snapshot once per path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

/// A real entry, as `symlink_metadata` (and `read_link`) showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Lower {
    /// Nothing there, or the host refused to say.
    Missing,
    /// A regular file of this many bytes.
    File { len: u64 },
    /// A directory.
    Dir,
    /// A symlink, with its target when it could be read.
    Symlink(Option<PathBuf>),
    /// A FIFO, a socket, a device.
    Other,
}

impl Lower {
    /// Reads the entry at `path` from the host, without following a symlink.
    fn read(path: &Path) -> Lower {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return Lower::Missing;
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            Lower::Symlink(std::fs::read_link(path).ok())
        } else if kind.is_dir() {
            Lower::Dir
        } else if kind.is_file() {
            Lower::File { len: meta.len() }
        } else {
            Lower::Other
        }
    }
}

type Table = BTreeMap<String, Lower>;

/// The lower entries seen so far: this overlay's own table, then the snapshot its clones share.
#[derive(Debug, Default)]
pub(super) struct LowerCache {
    local: Mutex<Table>,
    shared: Arc<RwLock<Table>>,
}

impl Clone for LowerCache {
    fn clone(&self) -> LowerCache {
        LowerCache {
            local: Mutex::new(lock(&self.local).clone()),
            shared: Arc::clone(&self.shared),
        }
    }
}

fn lock(table: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    // A panic elsewhere cannot leave a half-written entry: inserts are single calls.
    table
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl LowerCache {
    /// Returns the real entry at `key`, whose host path is `path`.
    pub(super) fn get(&self, key: &str, path: impl FnOnce() -> PathBuf) -> Lower {
        if let Some(found) = lock(&self.local).get(key) {
            return found.clone();
        }
        let shared = self
            .shared
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(key)
            .cloned();
        let found = match shared {
            Some(found) => found,
            None => {
                let found = Lower::read(&path());
                self.shared
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert(key.to_string(), found.clone());
                found
            }
        };
        lock(&self.local).insert(key.to_string(), found.clone());
        found
    }
}
