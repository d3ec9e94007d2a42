//! The agent's scratch directory: a copy of the scenario's `[fs]` root made before the agent
//! starts (the real directory is never touched), and, once it ended, what it changed there,
//! as a list of changes the simulation applies to its overlay. Both walk in path order, so
//! the changes (an input on the tape) do not depend on the order the OS lists entries in.
//!
//! `.git` directories are copied but not compared: agents run `git status`, which rewrites
//! the index without changing the work.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::limits::{ENTRIES_MAX, FILE_BYTES_MAX};

/// One change the agent made, relative to the working directory (`/`-separated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChange {
    /// A directory was created.
    Mkdir(String),
    /// A file was created or changed: its new content.
    Write(String, #[serde(with = "bytes_as_text")] Vec<u8>),
    /// A file was deleted.
    Delete(String),
    /// A directory was deleted, with everything in it.
    RemoveDir(String),
}

/// Why the scratch directory could not be made or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkdirError {
    /// A file system call failed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The directory holds more entries than the limit.
    #[error("{path} holds more than {ENTRIES_MAX} entries")]
    TooMany {
        /// The directory.
        path: PathBuf,
    },
}

/// A session's scratch place: `work/` (the agent's working directory) and `home/` (its
/// `HOME`), removed when dropped.
#[derive(Debug)]
pub struct Workdir {
    root: PathBuf,
    /// The `[fs]` root the directory was copied from.
    origin: Option<PathBuf>,
    /// What the changes are against: the origin, or the files a session started with.
    base: Option<PathBuf>,
}

/// What a directory tree holds, by relative path.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    Dir,
    File(u64),
}

impl Workdir {
    /// Makes a scratch place under the system's temp directory, with `base`'s files copied
    /// into `work/`.
    pub fn create(base: Option<&Path>, label: &str) -> Result<Workdir, WorkdirError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root =
            std::env::temp_dir().join(format!("simtape-agent-{label}-{}-{n}", std::process::id()));
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| WorkdirError::Io { path, source }
        };
        let _ = std::fs::remove_dir_all(&root);
        let workdir = Workdir {
            root: root.clone(),
            origin: base.map(Path::to_path_buf),
            base: base.map(Path::to_path_buf),
        };
        std::fs::create_dir_all(workdir.work()).map_err(io(&root))?;
        std::fs::create_dir_all(workdir.home()).map_err(io(&root))?;
        if let Some(base) = base {
            copy_tree(base, &workdir.work())?;
        }
        Ok(workdir)
    }

    /// Lays out a session's directory afresh: `work/` holds the origin with `files` applied
    /// (the run's files as the simulation's overlay holds them), `home/` is empty, and the
    /// changes are from now on against that layout.
    pub fn mirror(&mut self, files: &[FileChange]) -> Result<(), WorkdirError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| WorkdirError::Io { path, source }
        };
        let layout = self.root.join("base");
        for dir in [&layout, &self.work(), &self.home()] {
            if dir.exists() {
                std::fs::remove_dir_all(dir).map_err(io(dir))?;
            }
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        if let Some(origin) = &self.origin {
            copy_tree(origin, &layout)?;
        }
        for change in files {
            apply(&layout, change)?;
        }
        copy_tree(&layout, &self.work())?;
        self.base = Some(layout);
        Ok(())
    }

    /// The agent's working directory.
    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    /// The agent's `HOME`.
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// Returns what the agent changed in `work/` against the base, in path order (a new
    /// directory before what it holds, a removed one after), and the paths it could not
    /// compare (files over [`FILE_BYTES_MAX`]).
    pub fn changes(&self) -> Result<(Vec<FileChange>, Vec<String>), WorkdirError> {
        let before = match &self.base {
            Some(base) => TreeSnapshot::of(base)?,
            None => TreeSnapshot::default(),
        };
        before.changes(&self.work())
    }
}

/// What a directory tree held at one moment: its directories, and its files' sizes and
/// content digests (`.git` directories left out), to tell later what changed in it.
#[derive(Debug, Default)]
pub struct TreeSnapshot {
    entries: BTreeMap<String, Entry>,
    digests: BTreeMap<String, [u8; 32]>,
}

impl TreeSnapshot {
    /// Reads the tree under `dir`.
    pub fn of(dir: &Path) -> Result<TreeSnapshot, WorkdirError> {
        let entries = walk(dir, true)?;
        let mut digests = BTreeMap::new();
        for (relative, entry) in &entries {
            if let Entry::File(size) = entry {
                if *size <= FILE_BYTES_MAX {
                    digests.insert(relative.clone(), digest(&read(dir, relative)?));
                }
            }
        }
        Ok(TreeSnapshot { entries, digests })
    }

    /// Returns what changed under `dir` since the snapshot, in path order (a new directory
    /// before what it holds, a removed one after), and the paths it could not compare
    /// (files over [`FILE_BYTES_MAX`]).
    pub fn changes(&self, dir: &Path) -> Result<(Vec<FileChange>, Vec<String>), WorkdirError> {
        let before = &self.entries;
        let after = walk(dir, true)?;
        let mut changes = Vec::new();
        let mut skipped = Vec::new();
        for (relative, entry) in &after {
            let changed = match (before.get(relative), entry) {
                (Some(Entry::Dir), Entry::Dir) => continue,
                (_, Entry::Dir) => {
                    if matches!(before.get(relative), Some(Entry::File(_))) {
                        changes.push(FileChange::Delete(relative.clone()));
                    }
                    changes.push(FileChange::Mkdir(relative.clone()));
                    continue;
                }
                (_, Entry::File(size)) if *size > FILE_BYTES_MAX => {
                    skipped.push(relative.clone());
                    continue;
                }
                (Some(Entry::File(_)), Entry::File(_)) => {
                    let now = read(dir, relative)?;
                    (self.digests.get(relative) != Some(&digest(&now))).then_some(now)
                }
                (Some(Entry::Dir), Entry::File(_)) => {
                    changes.push(FileChange::RemoveDir(relative.clone()));
                    Some(read(dir, relative)?)
                }
                (None, Entry::File(_)) => Some(read(dir, relative)?),
            };
            if let Some(bytes) = changed {
                changes.push(FileChange::Write(relative.clone(), bytes));
            }
        }
        // Only the topmost removed entry is listed: a removed directory takes its children.
        let mut removed: Vec<(&String, &Entry)> = before
            .iter()
            .filter(|(relative, _)| !after.contains_key(*relative))
            .collect();
        removed.retain(|(relative, _)| {
            let parent_gone = parents(relative).any(|parent| {
                matches!(before.get(parent), Some(Entry::Dir)) && !after.contains_key(parent)
            });
            !parent_gone
        });
        for (relative, entry) in removed {
            changes.push(match entry {
                Entry::Dir => FileChange::RemoveDir(relative.clone()),
                Entry::File(_) => FileChange::Delete(relative.clone()),
            });
        }
        Ok((changes, skipped))
    }
}

fn read(dir: &Path, relative: &str) -> Result<Vec<u8>, WorkdirError> {
    let path = dir.join(relative);
    std::fs::read(&path).map_err(|source| WorkdirError::Io { path, source })
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Copies the tree under `from` into the existing directory `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), WorkdirError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| WorkdirError::Io { path, source }
    };
    for (relative, entry) in walk(from, false)? {
        let (source, target) = (from.join(&relative), to.join(&relative));
        match entry {
            Entry::Dir => std::fs::create_dir_all(&target).map_err(io(&target))?,
            Entry::File(_) => {
                std::fs::copy(&source, &target).map_err(io(&source))?;
            }
        }
    }
    Ok(())
}

/// Applies one change under `dir`. A path that would leave `dir` is refused.
pub(crate) fn apply(dir: &Path, change: &FileChange) -> Result<(), WorkdirError> {
    let relative = match change {
        FileChange::Mkdir(path)
        | FileChange::Write(path, _)
        | FileChange::Delete(path)
        | FileChange::RemoveDir(path) => path,
    };
    let inside = Path::new(relative)
        .components()
        .all(|part| matches!(part, std::path::Component::Normal(_)));
    let path = dir.join(relative);
    let io = |source| WorkdirError::Io {
        path: path.clone(),
        source,
    };
    if !inside {
        let refused = std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a relative path inside the directory",
        );
        return Err(io(refused));
    }
    match change {
        FileChange::Mkdir(_) => std::fs::create_dir_all(&path).map_err(io),
        FileChange::Write(_, bytes) => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::write(&path, bytes).map_err(io)
        }
        FileChange::Delete(_) => match std::fs::remove_file(&path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(io(error)),
            _ => Ok(()),
        },
        FileChange::RemoveDir(_) => match std::fs::remove_dir_all(&path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(io(error)),
            _ => Ok(()),
        },
    }
}

/// Each ancestor of a relative path, nearest first.
fn parents(relative: &str) -> impl Iterator<Item = &str> {
    let mut rest = relative;
    std::iter::from_fn(move || {
        let cut = rest.rfind('/')?;
        rest = &rest[..cut];
        Some(rest)
    })
}

/// Lists the tree under `root` by `/`-separated relative path; symbolic links and other
/// special files are left out. With `skip_git`, `.git` directories are left out too.
fn walk(root: &Path, skip_git: bool) -> Result<BTreeMap<String, Entry>, WorkdirError> {
    let mut entries = BTreeMap::new();
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let io = |source| WorkdirError::Io {
            path: dir.clone(),
            source,
        };
        for item in std::fs::read_dir(&dir).map_err(io)? {
            let item = item.map_err(io)?;
            let name = item.file_name().to_string_lossy().into_owned();
            if skip_git && name == ".git" {
                continue;
            }
            let relative = match prefix.is_empty() {
                true => name,
                false => format!("{prefix}/{name}"),
            };
            let kind = item.file_type().map_err(io)?;
            if kind.is_dir() {
                entries.insert(relative.clone(), Entry::Dir);
                pending.push((item.path(), relative));
            } else if kind.is_file() {
                let size = item.metadata().map_err(io)?.len();
                entries.insert(relative, Entry::File(size));
            }
            if entries.len() > ENTRIES_MAX {
                return Err(WorkdirError::TooMany {
                    path: root.to_path_buf(),
                });
            }
        }
    }
    Ok(entries)
}

/// File contents on the tape: text as a string (readable in `simtape tape show`), anything
/// else as a byte array.
mod bytes_as_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Repr::Text(text.to_string()).serialize(serializer),
            Err(_) => Repr::Bytes(bytes.to_vec()).serialize(serializer),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        Ok(match Repr::deserialize(deserializer)? {
            Repr::Text(text) => text.into_bytes(),
            Repr::Bytes(bytes) => bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirrored_session_holds_the_runs_files_and_its_changes_are_against_them() {
        // A harness session's directory is the origin with the overlay's files laid over it
        // (a deletion too); what the next process changes is relative to that layout, and a
        // fresh HOME carries nothing over.
        let origin =
            std::env::temp_dir().join(format!("simtape-mirror-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&origin);
        std::fs::create_dir_all(&origin).unwrap();
        std::fs::write(origin.join("a.txt"), "a\n").unwrap();
        std::fs::write(origin.join("b.txt"), "b\n").unwrap();
        let mut workdir = Workdir::create(Some(&origin), "mirror").unwrap();
        std::fs::write(workdir.home().join(".history"), "session 1").unwrap();
        std::fs::write(workdir.work().join("stray.txt"), "left by a killed process").unwrap();
        let files = [
            FileChange::Write("b.txt".into(), b"b, changed\n".to_vec()),
            FileChange::Write(".harness/state.json".into(), b"{}".to_vec()),
            FileChange::Delete("a.txt".into()),
        ];
        workdir.mirror(&files).unwrap();
        let work = workdir.work();
        assert!(!work.join("a.txt").exists());
        assert!(!work.join("stray.txt").exists());
        assert_eq!(
            std::fs::read_to_string(work.join("b.txt")).unwrap(),
            "b, changed\n"
        );
        assert_eq!(
            std::fs::read_to_string(work.join(".harness/state.json")).unwrap(),
            "{}"
        );
        assert!(std::fs::read_dir(workdir.home()).unwrap().next().is_none());
        assert_eq!(workdir.changes().unwrap(), (Vec::new(), Vec::new()));
        std::fs::write(work.join("c.txt"), "c\n").unwrap();
        std::fs::remove_file(work.join("b.txt")).unwrap();
        let (changes, _) = workdir.changes().unwrap();
        assert_eq!(
            changes,
            vec![
                FileChange::Write("c.txt".into(), b"c\n".to_vec()),
                FileChange::Delete("b.txt".into()),
            ]
        );
        // A path that would leave the directory is refused.
        let escape = [FileChange::Write("../out.txt".into(), Vec::new())];
        assert!(workdir.mirror(&escape).is_err());
        std::fs::remove_dir_all(&origin).unwrap();
    }

    #[test]
    fn changes_name_what_the_agent_added_changed_and_removed_in_path_order() {
        let base =
            std::env::temp_dir().join(format!("simtape-workdir-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("src/old")).unwrap();
        std::fs::create_dir_all(base.join(".git")).unwrap();
        std::fs::write(base.join("src/a.py"), "a = 1\n").unwrap();
        std::fs::write(base.join("src/old/b.py"), "b\n").unwrap();
        std::fs::write(base.join("keep.txt"), "same\n").unwrap();
        std::fs::write(base.join(".git/index"), "i1").unwrap();
        let workdir = Workdir::create(Some(&base), "test").unwrap();
        let work = workdir.work();
        assert_eq!(
            std::fs::read_to_string(work.join("src/a.py")).unwrap(),
            "a = 1\n"
        );
        std::fs::write(work.join("src/a.py"), "a = 2\n").unwrap();
        std::fs::remove_dir_all(work.join("src/old")).unwrap();
        std::fs::create_dir_all(work.join("new")).unwrap();
        std::fs::write(work.join("new/c.txt"), [0xff, 0x00]).unwrap();
        std::fs::write(work.join(".git/index"), "i2").unwrap();
        let (changes, skipped) = workdir.changes().unwrap();
        assert_eq!(
            changes,
            vec![
                FileChange::Mkdir("new".into()),
                FileChange::Write("new/c.txt".into(), vec![0xff, 0x00]),
                FileChange::Write("src/a.py".into(), b"a = 2\n".to_vec()),
                FileChange::RemoveDir("src/old".into()),
            ]
        );
        assert!(skipped.is_empty());
        let encoded = serde_json::to_string(&changes).unwrap();
        assert!(
            encoded.contains("\"a = 2\\n\""),
            "text stays text: {encoded}"
        );
        let decoded: Vec<FileChange> = serde_json::from_str(&encoded).unwrap();
        assert_eq!(decoded, changes);
        let root = workdir.root.clone();
        drop(workdir);
        assert!(!root.exists(), "the scratch place is removed when dropped");
        assert!(
            base.join("src/old/b.py").exists(),
            "the base is never touched"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
