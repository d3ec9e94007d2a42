//! The fs actor: the overlay behind the actor seam, with seeded faults and virtual latency,
//! and the typed handle pipeline code uses.

use std::path::Path;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::faults::{rule_fault, Draws, Fault};
use super::{FsDiff, FsError, FsFaults, FsLatency, FsStat, Overlay};
use crate::actor::{Actor, ActorContext, ActorRef, Answer};
use crate::cap::fault_rules::FaultRules;
use crate::cap::fault_rules::FsFault;
use crate::tape::sha256_hex;

/// File bytes that go to the tape as `{size, sha256}` only: a large write costs the tape a
/// few dozen bytes, and the pipeline still gets the bytes themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content(pub Vec<u8>);

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut record = serializer.serialize_struct("Content", 2)?;
        record.serialize_field("size", &(self.0.len() as u64))?;
        record.serialize_field("sha256", &sha256_hex(&self.0))?;
        record.end()
    }
}

/// A request to the [`FsActor`]. Paths are relative to the overlay root (absolute paths
/// under the root are accepted too, but put host paths on the tape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum FsRequest {
    /// Read a file (`read`).
    Read {
        /// The file.
        path: String,
    },
    /// Replace or create a file (`write`).
    Write {
        /// The file.
        path: String,
        /// Its new bytes.
        bytes: Content,
    },
    /// Append to a file, creating it when missing (`append`).
    Append {
        /// The file.
        path: String,
        /// The bytes to add.
        bytes: Content,
    },
    /// Delete a file (`delete`).
    Delete {
        /// The file.
        path: String,
    },
    /// Move a file or directory (`rename`).
    Rename {
        /// The current path.
        from: String,
        /// The new path.
        to: String,
    },
    /// Create a directory (`mkdir`).
    Mkdir {
        /// The directory.
        path: String,
    },
    /// Delete a directory and everything below it (`rmdir`).
    Rmdir {
        /// The directory.
        path: String,
    },
    /// List a directory (`list`).
    List {
        /// The directory.
        path: String,
    },
    /// Report kind and size (`stat`).
    Stat {
        /// The file or directory.
        path: String,
    },
    /// Apply changes made elsewhere, in order, stopping at the first that fails (`apply`):
    /// how a WASI guest's writes, made in its own view of the overlay, reach the run's
    /// filesystem. No faults are drawn and no time passes; the changes are on the tape.
    Apply {
        /// The changes: writes, deletes, renames, mkdirs and rmdirs.
        changes: Vec<FsRequest>,
    },
}

/// A successful answer of the [`FsActor`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum FsReply {
    /// A file's bytes (on the tape: size and hash).
    Data(Content),
    /// The operation took effect.
    Done,
    /// A directory's names, sorted.
    Names(Vec<String>),
    /// Kind and size.
    Stat(FsStat),
}

/// What the [`FsActor`] answers.
pub type FsResponse = Result<FsReply, FsError>;

/// The filesystem actor: an [`Overlay`] with a fault plan and a latency model.
///
/// After a run, `report.actors.take(fs_ref)` returns it; [`FsActor::diff`] is the run's diff.
#[derive(Debug, Clone)]
pub struct FsActor {
    overlay: Overlay,
    faults: FsFaults,
    rules: FaultRules<FsFault>,
    latency: FsLatency,
}

impl FsActor {
    /// Returns an actor over the directory `root`, with no faults and the default latency.
    pub fn new(root: impl AsRef<Path>) -> Result<FsActor, FsError> {
        Ok(FsActor {
            overlay: Overlay::new(root)?,
            faults: FsFaults::default(),
            rules: FaultRules::default(),
            latency: FsLatency::default(),
        })
    }

    /// Sets the fault plan.
    pub fn with_faults(mut self, faults: FsFaults) -> FsActor {
        self.faults = faults;
        self
    }

    /// Sets the fault rules by call number or rate (`[[faults.fs]]`), on top of the ratios
    /// of [`FsActor::with_faults`]; a rule that fires beats a fault the ratios drew. A faulted
    /// operation changes nothing.
    ///
    /// ```
    /// # let root = std::env::temp_dir().join("simtape-fs-rules-doc");
    /// # std::fs::create_dir_all(&root).unwrap();
    /// use simtape::cap::fs::{FsActor, FsError, FsHandle};
    /// use simtape::cap::fault_rules::{FsFault, FsFaultKind, Trigger};
    /// let full = FsFault { op: "write".into(), trigger: Trigger::OnCall(2), kind: FsFaultKind::Enospc };
    /// let mut builder = simtape::Sim::builder();
    /// let fs = FsHandle::new(builder.actor("fs", FsActor::new(&root).unwrap().with_fault_rules(vec![full])));
    /// let report = builder.build().unwrap().run(move |_host| async move {
    ///     (fs.write("a.txt", "1").await, fs.write("b.txt", "2").await)
    /// }).unwrap();
    /// assert!(report.output.0.is_ok());
    /// assert!(matches!(report.output.1, Err(FsError::NoSpace { .. })));
    /// ```
    pub fn with_fault_rules(mut self, rules: Vec<FsFault>) -> FsActor {
        self.rules = FaultRules::new(rules);
        self
    }

    /// Sets the latency model.
    pub fn with_latency(mut self, latency: FsLatency) -> FsActor {
        self.latency = latency;
        self
    }

    /// Returns the overlay (the merged view as the run left it).
    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// Returns the overlay to change directly, past the actor's latency and faults: for what
    /// happened outside the simulation and reached it as a recorded input (an agent
    /// program's changes to its working directory).
    pub fn overlay_mut(&mut self) -> &mut Overlay {
        &mut self.overlay
    }

    /// Returns what the run changed (see [`Overlay::diff`]).
    pub fn diff(&self) -> Result<FsDiff, FsError> {
        self.overlay.diff()
    }

    /// Runs `request` against the overlay after the drawn fault; returns the response and
    /// the bytes moved.
    fn apply(&mut self, request: &FsRequest, fault: Fault) -> (FsResponse, u64) {
        if let FsRequest::Apply { changes } = request {
            for change in changes {
                if let (Err(error), _) = self.apply(change, Fault::None) {
                    return (Err(error), 0);
                }
            }
            return (Ok(FsReply::Done), 0);
        }
        let path = match request {
            FsRequest::Apply { .. } => unreachable!("applied above"),
            FsRequest::Rename { from, .. } => from,
            FsRequest::Read { path }
            | FsRequest::Write { path, .. }
            | FsRequest::Append { path, .. }
            | FsRequest::Delete { path }
            | FsRequest::Mkdir { path }
            | FsRequest::Rmdir { path }
            | FsRequest::List { path }
            | FsRequest::Stat { path } => path,
        };
        match fault {
            Fault::Eio => return (Err(injected_eio(path)), 0),
            Fault::NoSpace => return (Err(FsError::NoSpace { path: path.clone() }), 0),
            Fault::None | Fault::Partial(_) => {}
        }
        let overlay = &mut self.overlay;
        let done = |result: Result<(), FsError>| (result.map(|()| FsReply::Done), 0);
        match request {
            FsRequest::Read { path } => match overlay.read(path) {
                Ok(bytes) => {
                    let moved = bytes.len() as u64;
                    (Ok(FsReply::Data(Content(bytes))), moved)
                }
                Err(e) => (Err(e), 0),
            },
            FsRequest::Write { path, bytes } | FsRequest::Append { path, bytes } => {
                let append = matches!(request, FsRequest::Append { .. });
                write(overlay, path, &bytes.0, append, fault)
            }
            FsRequest::Delete { path } => done(overlay.remove(path)),
            FsRequest::Rename { from, to } => done(overlay.rename(from, to)),
            FsRequest::Mkdir { path } => done(overlay.create_dir(path)),
            FsRequest::Rmdir { path } => done(overlay.remove_dir(path)),
            FsRequest::List { path } => (overlay.list(path).map(FsReply::Names), 0),
            FsRequest::Stat { path } => (overlay.stat(path).map(FsReply::Stat), 0),
            FsRequest::Apply { .. } => unreachable!("applied above"),
        }
    }
}

/// Writes or appends, landing only a prefix under a partial-write fault.
fn write(
    overlay: &mut Overlay,
    path: &str,
    bytes: &[u8],
    append: bool,
    fault: Fault,
) -> (FsResponse, u64) {
    let landed = match fault {
        Fault::Partial(prefix) => {
            usize::try_from(prefix).map_or(bytes.len(), |p| p.min(bytes.len()))
        }
        _ => bytes.len(),
    };
    let result = if append {
        overlay.append(path, &bytes[..landed])
    } else {
        overlay.write(path, bytes[..landed].to_vec())
    };
    let response = match result {
        Err(e) => Err(e),
        Ok(()) if landed < bytes.len() => Err(FsError::PartialWrite {
            path: path.to_string(),
            written: landed as u64,
            requested: bytes.len() as u64,
        }),
        Ok(()) => Ok(FsReply::Done),
    };
    (response, landed as u64)
}

/// Returns the name `[[faults.fs]]` rules give the operation of `request`.
fn rule_op(request: &FsRequest) -> &'static str {
    match request {
        FsRequest::Read { .. } => "read",
        FsRequest::Write { .. } => "write",
        FsRequest::Append { .. } => "append",
        FsRequest::Delete { .. } | FsRequest::Rmdir { .. } => "remove",
        FsRequest::Rename { .. } => "rename",
        FsRequest::Mkdir { .. } => "mkdir",
        FsRequest::List { .. } => "list",
        FsRequest::Stat { .. } => "stat",
        FsRequest::Apply { .. } => "apply",
    }
}

fn injected_eio(path: &str) -> FsError {
    FsError::Io {
        path: path.to_string(),
        detail: "injected EIO".to_string(),
    }
}

impl Actor for FsActor {
    type Request = FsRequest;
    type Response = FsResponse;

    fn operation(&self, request: &FsRequest) -> &'static str {
        match request {
            FsRequest::Read { .. } => "read",
            FsRequest::Write { .. } => "write",
            FsRequest::Append { .. } => "append",
            FsRequest::Delete { .. } => "delete",
            FsRequest::Rename { .. } => "rename",
            FsRequest::Mkdir { .. } => "mkdir",
            FsRequest::Rmdir { .. } => "rmdir",
            FsRequest::List { .. } => "list",
            FsRequest::Stat { .. } => "stat",
            FsRequest::Apply { .. } => "apply",
        }
    }

    fn handle(&mut self, request: &FsRequest, cx: &mut ActorContext<'_>) -> Answer<FsResponse> {
        let draws = match request {
            FsRequest::Write { bytes, .. } | FsRequest::Append { bytes, .. } => Draws::Writing {
                len: bytes.0.len() as u64,
            },
            FsRequest::Mkdir { .. } | FsRequest::Rename { .. } => Draws::Allocating,
            FsRequest::Apply { .. } => {
                let (response, _) = self.apply(request, Fault::None);
                return Answer {
                    latency_ns: 0,
                    response,
                };
            }
            _ => Draws::Plain,
        };
        let drawn = self.faults.draw(draws, cx.rng);
        let fault = self
            .rules
            .fire(rule_op(request), cx.rng)
            .map_or(drawn, |rule| rule_fault(rule.kind));
        let (response, moved) = self.apply(request, fault);
        Answer {
            latency_ns: self.latency.latency_ns(moved, cx.rng),
            response,
        }
    }
}

/// The typed handle pipeline code uses to reach the [`FsActor`] inside a run.
///
/// ```
/// # let root = std::env::temp_dir().join("simtape-fs-handle-doc");
/// # std::fs::create_dir_all(&root).unwrap();
/// use simtape::cap::fs::{FsActor, FsHandle};
/// let mut builder = simtape::Sim::builder();
/// let fs = builder.actor("fs", FsActor::new(&root).unwrap());
/// let report = builder.build().unwrap().run(move |_host| async move {
///     let fs = FsHandle::new(fs);
///     fs.write("a.txt", "hello").await.unwrap();
///     fs.read("a.txt").await.unwrap()
/// }).unwrap();
/// assert_eq!(report.output, b"hello");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FsHandle(pub ActorRef<FsActor>);

impl FsHandle {
    /// Wraps the actor reference `Builder::actor` returned.
    pub fn new(actor: ActorRef<FsActor>) -> FsHandle {
        FsHandle(actor)
    }

    /// Reads the file at `path`.
    pub async fn read(&self, path: &str) -> Result<Vec<u8>, FsError> {
        match self.0.call(FsRequest::Read { path: path.into() }).await? {
            FsReply::Data(content) => Ok(content.0),
            other => unreachable!("the fs actor answers a read with data, not {other:?}"),
        }
    }

    /// Replaces or creates the file at `path`.
    pub async fn write(&self, path: &str, bytes: impl Into<Vec<u8>>) -> Result<(), FsError> {
        let bytes = Content(bytes.into());
        self.done(FsRequest::Write {
            path: path.into(),
            bytes,
        })
        .await
    }

    /// Appends to the file at `path`, creating it when missing.
    pub async fn append(&self, path: &str, bytes: impl Into<Vec<u8>>) -> Result<(), FsError> {
        let bytes = Content(bytes.into());
        self.done(FsRequest::Append {
            path: path.into(),
            bytes,
        })
        .await
    }

    /// Deletes the file at `path`.
    pub async fn remove(&self, path: &str) -> Result<(), FsError> {
        self.done(FsRequest::Delete { path: path.into() }).await
    }

    /// Moves `from` to `to`.
    pub async fn rename(&self, from: &str, to: &str) -> Result<(), FsError> {
        self.done(FsRequest::Rename {
            from: from.into(),
            to: to.into(),
        })
        .await
    }

    /// Creates the directory at `path`.
    pub async fn create_dir(&self, path: &str) -> Result<(), FsError> {
        self.done(FsRequest::Mkdir { path: path.into() }).await
    }

    /// Deletes the directory at `path` and everything below it.
    pub async fn remove_dir(&self, path: &str) -> Result<(), FsError> {
        self.done(FsRequest::Rmdir { path: path.into() }).await
    }

    /// Lists the directory at `path` (sorted names).
    pub async fn list(&self, path: &str) -> Result<Vec<String>, FsError> {
        match self.0.call(FsRequest::List { path: path.into() }).await? {
            FsReply::Names(names) => Ok(names),
            other => unreachable!("the fs actor answers a list with names, not {other:?}"),
        }
    }

    /// Returns the kind and size of the entry at `path`.
    pub async fn stat(&self, path: &str) -> Result<FsStat, FsError> {
        match self.0.call(FsRequest::Stat { path: path.into() }).await? {
            FsReply::Stat(stat) => Ok(stat),
            other => unreachable!("the fs actor answers a stat with a stat, not {other:?}"),
        }
    }

    /// Applies `changes` in order, with no faults and no latency (see [`FsRequest::Apply`]).
    pub async fn apply(&self, changes: Vec<FsRequest>) -> Result<(), FsError> {
        self.done(FsRequest::Apply { changes }).await
    }

    async fn done(&self, request: FsRequest) -> Result<(), FsError> {
        match self.0.call(request).await? {
            FsReply::Done => Ok(()),
            other => unreachable!("the fs actor answers a change with done, not {other:?}"),
        }
    }
}
