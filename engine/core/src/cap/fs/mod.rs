//! The filesystem capability: a copy-on-write overlay over a real directory.
//!
//! The pipeline sees a directory tree. Reads fall through to the real directory (the *base*);
//! every change (write, append, delete, rename, mkdir, rmdir) stays in an in-memory upper layer,
//! so the real directory is never modified. After the run, [`Overlay::diff`] says what the
//! pipeline changed, as data ([`FsDiff`]) and as a unified diff ([`FsDiff::unified`]).
//!
//! ```
//! use simtape::cap::fs::{FsActor, FsHandle};
//! let root = std::env::temp_dir().join("simtape-fs-doc");
//! std::fs::create_dir_all(&root).unwrap();
//! std::fs::write(root.join("notes.txt"), "one\n").unwrap();
//!
//! let mut builder = simtape::Sim::builder();
//! let fs = builder.actor("fs", FsActor::new(&root).unwrap());
//! let mut report = builder.build().unwrap().run(move |_host| async move {
//!     let fs = FsHandle::new(fs);
//!     fs.append("notes.txt", b"two\n".to_vec()).await
//! }).unwrap();
//! report.output.unwrap();
//! let diff = report.actors.take(fs).unwrap().diff().unwrap();
//! assert_eq!(diff.modified[0].path, "notes.txt");
//! assert_eq!(std::fs::read(root.join("notes.txt")).unwrap(), b"one\n"); // untouched
//! ```
//!
//! Module map:
//! - `error` — [`FsError`], the named errors every operation returns.
//! - `path` — lexical path handling: root stripping, components, keys.
//! - `overlay` — [`Overlay`]: the layers and whiteouts; `overlay/resolve` (symlink-safe
//!   resolution) and `overlay/base` (the diff base).
//! - `diff` — [`FsDiff`]: the structured diff and its unified rendering.
//! - `faults` — [`FsFaults`] (ENOSPC, EIO, partial writes) and [`FsLatency`].
//! - `actor` — [`FsActor`], its requests and replies, and the typed [`FsHandle`].
//!
//! `docs/fs.md` is the reference for semantics, errors, faults, latency and tape records.

mod actor;
mod diff;
mod error;
mod faults;
mod overlay;
mod path;

pub use actor::{Content, FsActor, FsHandle, FsReply, FsRequest, FsResponse};
pub use diff::{FileAdded, FileDeleted, FileModified, FsDiff};
pub use error::FsError;
pub use faults::{FsFaults, FsLatency};
pub use overlay::{FileKind, FsStat, Overlay};
