//! The overlay: an in-memory upper layer of files, directories and whiteouts over a read-only
//! real directory, with symlink-safe path resolution and a base snapshot for the diff.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

mod base;
mod lower;
mod resolve;

use lower::{Lower, LowerCache};

use super::diff::FsDiff;
use super::path;
use super::FsError;

/// Symlink hops allowed while resolving one path (Linux's own limit is 40).
const SYMLINK_HOPS_MAX: u32 = 40;

/// One entry of the upper layer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A file whose bytes live in memory.
    File(Vec<u8>),
    /// A directory; `opaque` hides whatever the real directory holds below it (a directory
    /// deleted and made again, or the destination of a rename, starts empty).
    Dir { opaque: bool },
    /// A deleted entry: hides the real entry at this key and everything below it.
    Whiteout,
}

/// What exists at a key in the merged view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    File,
    Dir,
    /// A symlink met in a walk, a FIFO, a socket: nothing the overlay reads or carries.
    Other,
}

/// The kind of an entry, as [`Overlay::stat`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// What [`Overlay::stat`] reports: kind and size only, because host metadata (times, inode
/// numbers, permissions) would differ between machines and must not reach the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FsStat {
    /// File or directory.
    pub kind: FileKind,
    /// Size in bytes (0 for a directory).
    pub size: u64,
}

/// A copy-on-write view of a real directory. Clones are independent views.
///
/// ```
/// let root = std::env::temp_dir().join("simtape-overlay-doc");
/// std::fs::create_dir_all(&root).unwrap();
/// let mut overlay = simtape::cap::fs::Overlay::new(&root).unwrap();
/// overlay.write("new.txt", b"hi".to_vec()).unwrap();
/// assert_eq!(overlay.read("new.txt").unwrap(), b"hi");
/// assert!(!root.join("new.txt").exists());
/// ```
#[derive(Debug, Clone)]
pub struct Overlay {
    /// The root as given, so absolute paths spelled with it resolve.
    root: PathBuf,
    /// The canonical root: every host access goes through it.
    root_canonical: PathBuf,
    upper: BTreeMap<String, Entry>,
    /// Whether a real directory lies below the upper layer (false for [`Overlay::in_memory`]).
    real: bool,
    /// Keys whose subtree the upper layer has changed; their base is in `base`.
    touched: BTreeSet<String>,
    /// The real files under touched keys, captured before the first change there, so the
    /// diff compares against what the run started from.
    base: BTreeMap<String, Vec<u8>>,
    /// The real entries' metadata, read once (shared by clones).
    lower: LowerCache,
}

impl Overlay {
    /// Opens an overlay over the directory `root` (which is only ever read).
    pub fn new(root: impl AsRef<Path>) -> Result<Overlay, FsError> {
        let root = root.as_ref().to_path_buf();
        let shown = root.to_string_lossy().into_owned();
        let root_canonical = std::fs::canonicalize(&root).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FsError::NotFound {
                path: shown.clone(),
            },
            _ => FsError::host(&shown, &e),
        })?;
        if !root_canonical.is_dir() {
            return Err(FsError::NotADirectory { path: shown });
        }
        Ok(Overlay {
            root,
            root_canonical,
            real: true,
            upper: BTreeMap::new(),
            touched: BTreeSet::new(),
            base: BTreeMap::new(),
            lower: LowerCache::default(),
        })
    }

    /// Returns an overlay over nothing: an empty root directory that lives in memory only
    /// (what a WASI guest sees when the run has no filesystem).
    ///
    /// ```
    /// let mut overlay = simtape::cap::fs::Overlay::in_memory();
    /// overlay.create_dir("d").unwrap();
    /// overlay.write("d/f", b"x".to_vec()).unwrap();
    /// assert_eq!(overlay.list("").unwrap(), ["d"]);
    /// ```
    pub fn in_memory() -> Overlay {
        Overlay {
            root: PathBuf::new(),
            root_canonical: PathBuf::new(),
            real: false,
            upper: BTreeMap::new(),
            touched: BTreeSet::new(),
            base: BTreeMap::new(),
            lower: LowerCache::default(),
        }
    }

    /// Returns the bytes of the file at `input`.
    pub fn read(&self, input: &str) -> Result<Vec<u8>, FsError> {
        let key = self.resolve(input)?;
        match self.node(&key, input)? {
            Some(Node::File) => self.file_bytes(&key, input),
            Some(Node::Dir) => Err(FsError::IsADirectory { path: input.into() }),
            Some(Node::Other) => Err(not_regular(input)),
            None => Err(FsError::NotFound { path: input.into() }),
        }
    }

    /// Returns the kind and size of the entry at `input`.
    pub fn stat(&self, input: &str) -> Result<FsStat, FsError> {
        let key = self.resolve(input)?;
        match self.node(&key, input)? {
            Some(Node::File) => Ok(FsStat {
                kind: FileKind::File,
                size: self.file_size(&key, input)?,
            }),
            Some(Node::Dir) => Ok(FsStat {
                kind: FileKind::Dir,
                size: 0,
            }),
            Some(Node::Other) => Err(not_regular(input)),
            None => Err(FsError::NotFound { path: input.into() }),
        }
    }

    /// Returns the names in the directory at `input`, both layers merged, sorted.
    pub fn list(&self, input: &str) -> Result<Vec<String>, FsError> {
        let key = self.resolve(input)?;
        match self.node(&key, input)? {
            Some(Node::Dir) => self.list_key(&key, input),
            Some(_) => Err(FsError::NotADirectory { path: input.into() }),
            None => Err(FsError::NotFound { path: input.into() }),
        }
    }

    /// Replaces (or creates) the file at `input`; its parent directory must exist.
    pub fn write(&mut self, input: &str, bytes: Vec<u8>) -> Result<(), FsError> {
        let key = self.writable_file(input)?;
        self.touch(&key, input)?;
        self.upper.insert(key, Entry::File(bytes));
        Ok(())
    }

    /// Appends to the file at `input`, creating it when missing.
    pub fn append(&mut self, input: &str, bytes: &[u8]) -> Result<(), FsError> {
        let key = self.writable_file(input)?;
        let mut content = match self.node(&key, input)? {
            Some(_) => self.file_bytes(&key, input)?,
            None => Vec::new(),
        };
        content.extend_from_slice(bytes);
        self.touch(&key, input)?;
        self.upper.insert(key, Entry::File(content));
        Ok(())
    }

    /// Deletes the file at `input`.
    pub fn remove(&mut self, input: &str) -> Result<(), FsError> {
        let key = self.resolve(input)?;
        match self.node(&key, input)? {
            Some(Node::Dir) => Err(FsError::IsADirectory { path: input.into() }),
            Some(_) => self.delete(&key, input),
            None => Err(FsError::NotFound { path: input.into() }),
        }
    }

    /// Creates the directory at `input`; its parent must exist.
    pub fn create_dir(&mut self, input: &str) -> Result<(), FsError> {
        let key = self.resolve(input)?;
        if self.node(&key, input)?.is_some() {
            return Err(FsError::AlreadyExists { path: input.into() });
        }
        self.require_parent_dir(&key, input)?;
        self.touch(&key, input)?;
        // A real entry here must have been deleted in this run: keep it and its children hidden.
        let opaque = self.real_node(&key).is_some();
        self.upper.insert(key, Entry::Dir { opaque });
        Ok(())
    }

    /// Deletes the directory at `input` and everything below it.
    pub fn remove_dir(&mut self, input: &str) -> Result<(), FsError> {
        let key = self.resolve(input)?;
        if key.is_empty() {
            return Err(invalid(input, "the overlay root cannot be removed"));
        }
        match self.node(&key, input)? {
            Some(Node::Dir) => self.delete(&key, input),
            Some(_) => Err(FsError::NotADirectory { path: input.into() }),
            None => Err(FsError::NotFound { path: input.into() }),
        }
    }

    /// Moves the file or directory at `from` to `to`, replacing a file or an empty directory
    /// there.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), FsError> {
        let (source, target) = (self.resolve(from)?, self.resolve(to)?);
        if source.is_empty() || target.is_empty() {
            return Err(invalid(from, "the overlay root cannot be renamed"));
        }
        let kind = self
            .node(&source, from)?
            .ok_or_else(|| FsError::NotFound { path: from.into() })?;
        self.require_parent_dir(&target, to)?;
        if source == target {
            return Ok(());
        }
        if path::is_within(&target, &source) {
            return Err(invalid(to, "a directory cannot move into itself"));
        }
        self.check_rename_target(kind, &target, from, to)?;
        let mut moved = Vec::new();
        self.materialize(&source, "", from, &mut moved)?;
        self.touch(&source, from)?;
        self.touch(&target, to)?;
        if self.node(&target, to)?.is_some() {
            self.delete(&target, to)?;
        }
        self.delete(&source, from)?;
        for (suffix, entry) in moved {
            self.upper.insert(path::join(&target, &suffix), entry);
        }
        Ok(())
    }

    /// Returns what the run changed under the root, against the real files as they were
    /// when first changed.
    pub fn diff(&self) -> Result<FsDiff, FsError> {
        let mut after = BTreeMap::new();
        for region in &self.touched {
            let covered = path::ancestors(region).any(|a| self.touched.contains(a));
            if !covered {
                self.merged_files(region, &mut after)?;
            }
        }
        Ok(FsDiff::between(&self.base, &after))
    }

    /// Returns what the merged view holds at `key`.
    fn node(&self, key: &str, input: &str) -> Result<Option<Node>, FsError> {
        let mut masked = false;
        for ancestor in path::ancestors(key) {
            match self.upper.get(ancestor) {
                Some(Entry::Whiteout) => return Ok(None),
                Some(Entry::File(_)) => return Err(FsError::NotADirectory { path: input.into() }),
                Some(Entry::Dir { opaque }) => masked |= *opaque,
                None if masked => return Ok(None),
                None => match self.real_node(ancestor) {
                    Some(Node::Dir) => {}
                    Some(_) => return Err(FsError::NotADirectory { path: input.into() }),
                    None => return Ok(None),
                },
            }
        }
        Ok(match self.upper.get(key) {
            Some(Entry::Whiteout) => None,
            Some(Entry::File(_)) => Some(Node::File),
            Some(Entry::Dir { .. }) => Some(Node::Dir),
            None if masked => None,
            None => self.real_node(key),
        })
    }

    /// Returns what the real directory holds at `key`, without following a symlink.
    fn real_node(&self, key: &str) -> Option<Node> {
        if !self.real {
            return key.is_empty().then_some(Node::Dir);
        }
        match self.lower(key) {
            Lower::Missing => None,
            Lower::Dir => Some(Node::Dir),
            Lower::File { .. } => Some(Node::File),
            Lower::Symlink(_) | Lower::Other => Some(Node::Other),
        }
    }

    /// Returns the real entry at `key`, read from the host once (nothing, without a real
    /// directory).
    fn lower(&self, key: &str) -> Lower {
        if !self.real {
            return Lower::Missing;
        }
        self.lower.get(key, || self.real_path(key))
    }

    fn real_path(&self, key: &str) -> PathBuf {
        self.root_canonical.join(key)
    }

    fn file_bytes(&self, key: &str, input: &str) -> Result<Vec<u8>, FsError> {
        match self.upper.get(key) {
            Some(Entry::File(bytes)) => Ok(bytes.clone()),
            _ => std::fs::read(self.real_path(key)).map_err(|e| FsError::host(input, &e)),
        }
    }

    fn file_size(&self, key: &str, input: &str) -> Result<u64, FsError> {
        match self.upper.get(key) {
            Some(Entry::File(bytes)) => Ok(bytes.len() as u64),
            _ => match self.lower(key) {
                Lower::File { len } => Ok(len),
                // Not a file after all: let the host say why.
                _ => std::fs::symlink_metadata(self.real_path(key))
                    .map(|meta| meta.len())
                    .map_err(|e| FsError::host(input, &e)),
            },
        }
    }

    /// Lists the directory at `key`: real names (unless hidden), then the upper layer's
    /// additions and whiteouts. Non-UTF-8 real names are not visible.
    fn list_key(&self, key: &str, input: &str) -> Result<Vec<String>, FsError> {
        let mut names = BTreeSet::new();
        if self.real && self.real_children_visible(key) {
            match std::fs::read_dir(self.real_path(key)) {
                Ok(entries) => {
                    for entry in entries {
                        let entry = entry.map_err(|e| FsError::host(input, &e))?;
                        if let Ok(name) = entry.file_name().into_string() {
                            names.insert(name);
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(FsError::host(input, &e)),
            }
        }
        let prefix = path::children_start(key);
        for (child, entry) in self.upper.range(prefix.clone()..) {
            let Some(rest) = child.strip_prefix(&prefix) else {
                break;
            };
            if rest.contains('/') {
                continue;
            }
            if *entry == Entry::Whiteout {
                names.remove(rest);
            } else {
                names.insert(rest.to_string());
            }
        }
        Ok(names.into_iter().collect())
    }

    fn real_children_visible(&self, key: &str) -> bool {
        let opaque = |k: &str| matches!(self.upper.get(k), Some(Entry::Dir { opaque: true }));
        !opaque(key) && !path::ancestors(key).any(opaque)
    }

    /// Returns the key of a file that may be written at `input`.
    fn writable_file(&self, input: &str) -> Result<String, FsError> {
        let key = self.resolve(input)?;
        match self.node(&key, input)? {
            Some(Node::Dir) => Err(FsError::IsADirectory { path: input.into() }),
            Some(Node::Other) => Err(not_regular(input)),
            Some(Node::File) => Ok(key),
            None => self.require_parent_dir(&key, input).map(|()| key),
        }
    }

    fn require_parent_dir(&self, key: &str, input: &str) -> Result<(), FsError> {
        let parent = path::parent(key).unwrap_or("");
        match self.node(parent, input)? {
            Some(Node::Dir) => Ok(()),
            Some(_) => Err(FsError::NotADirectory { path: input.into() }),
            None => Err(FsError::NotFound { path: input.into() }),
        }
    }

    fn check_rename_target(
        &self,
        kind: Node,
        target: &str,
        from: &str,
        to: &str,
    ) -> Result<(), FsError> {
        match (kind, self.node(target, to)?) {
            (Node::Other, _) => Err(not_regular(from)),
            (Node::File, Some(Node::Dir)) => Err(FsError::IsADirectory { path: to.into() }),
            (Node::Dir, Some(Node::File | Node::Other)) => {
                Err(FsError::NotADirectory { path: to.into() })
            }
            (Node::Dir, Some(Node::Dir)) if !self.list_key(target, to)?.is_empty() => {
                Err(FsError::NotEmpty { path: to.into() })
            }
            _ => Ok(()),
        }
    }

    /// Collects the merged subtree at `key` as upper entries keyed by their path below the
    /// moved root. Directories come out opaque: the copy is complete, so nothing real may
    /// show through at the destination. Symlinks and special files are not carried.
    fn materialize(
        &self,
        key: &str,
        suffix: &str,
        input: &str,
        out: &mut Vec<(String, Entry)>,
    ) -> Result<(), FsError> {
        match self.node(key, input)? {
            Some(Node::File) => out.push((
                suffix.to_string(),
                Entry::File(self.file_bytes(key, input)?),
            )),
            Some(Node::Dir) => {
                out.push((suffix.to_string(), Entry::Dir { opaque: true }));
                for name in self.list_key(key, input)? {
                    let (child, child_suffix) = (path::join(key, &name), path::join(suffix, &name));
                    self.materialize(&child, &child_suffix, input, out)?;
                }
            }
            Some(Node::Other) | None => {}
        }
        Ok(())
    }

    /// Removes `key` and its subtree from the merged view.
    fn delete(&mut self, key: &str, input: &str) -> Result<(), FsError> {
        self.touch(key, input)?;
        let prefix = path::children_start(key);
        let below: Vec<String> = self
            .upper
            .range(prefix.clone()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(&prefix))
            .cloned()
            .collect();
        for child in below {
            self.upper.remove(&child);
        }
        if self.real_node(key).is_some() {
            self.upper.insert(key.to_string(), Entry::Whiteout);
        } else {
            self.upper.remove(key);
        }
        Ok(())
    }
}

fn invalid(input: &str, reason: &str) -> FsError {
    FsError::InvalidPath {
        path: input.into(),
        reason: reason.into(),
    }
}

fn not_regular(input: &str) -> FsError {
    FsError::Io {
        path: input.into(),
        detail: "not a regular file".into(),
    }
}
