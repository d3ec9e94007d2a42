//! The named errors of the filesystem capability.

use serde::Serialize;

/// Why a filesystem operation failed. Every variant is an answer the pipeline can act on;
/// none ends the run. Paths are as the pipeline named them, so tapes stay machine-independent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// The path leaves the overlay root: through `..`, as an absolute path outside the root,
    /// or through a symlink in the real directory; `resolved` is the symlink's target text.
    #[error("path {path:?} escapes the overlay root{}", resolved.as_ref().map(|r| format!(" (symlink to {r:?})")).unwrap_or_default())]
    Escape {
        /// The path as requested.
        path: String,
        /// The target of the symlink that leads outside, when a symlink is the cause.
        resolved: Option<String>,
    },
    /// Nothing exists at the path (or a parent directory is missing).
    #[error("no such file or directory: {path:?}")]
    NotFound {
        /// The path as requested.
        path: String,
    },
    /// Something already exists at the path.
    #[error("already exists: {path:?}")]
    AlreadyExists {
        /// The path as requested.
        path: String,
    },
    /// A component of the path (or the path itself) is a file where a directory is needed.
    #[error("not a directory: {path:?}")]
    NotADirectory {
        /// The path as requested.
        path: String,
    },
    /// The path is a directory where a file is needed.
    #[error("is a directory: {path:?}")]
    IsADirectory {
        /// The path as requested.
        path: String,
    },
    /// A rename would replace a directory that is not empty.
    #[error("directory not empty: {path:?}")]
    NotEmpty {
        /// The path as requested.
        path: String,
    },
    /// The path cannot name what the operation needs (the root, a non-UTF-8 component,
    /// a directory moved into itself).
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as requested.
        path: String,
        /// Why it is invalid.
        reason: String,
    },
    /// Symlinks in the real directory chain more than the allowed number of hops.
    #[error("too many levels of symbolic links: {path:?}")]
    SymlinkLoop {
        /// The path as requested.
        path: String,
    },
    /// ENOSPC (an injected fault): nothing was written.
    #[error("no space left on device: {path:?}")]
    NoSpace {
        /// The path as requested.
        path: String,
    },
    /// EIO (an injected fault), or a host error reading the real directory.
    #[error("input/output error on {path:?}: {detail}")]
    Io {
        /// The path as requested.
        path: String,
        /// What failed: `injected EIO`, or the host error kind (never OS-specific text).
        detail: String,
    },
    /// An injected partial write: the first `written` of `requested` bytes landed.
    #[error("partial write to {path:?}: {written} of {requested} bytes landed")]
    PartialWrite {
        /// The path as requested.
        path: String,
        /// Bytes that landed.
        written: u64,
        /// Bytes the pipeline asked to write.
        requested: u64,
    },
}

impl FsError {
    /// Wraps a host I/O error; only its kind is kept, because OS message text differs
    /// between machines and would make tapes differ.
    pub(crate) fn host(path: &str, error: &std::io::Error) -> FsError {
        FsError::Io {
            path: path.to_string(),
            detail: format!("host {:?}", error.kind()),
        }
    }
}
