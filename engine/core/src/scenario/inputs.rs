//! A scenario's inputs as files: capturing what its runs read into [`Inputs`] (for the tape's
//! inputs section), and unpacking them with the scenario source into a directory that runs
//! the same (what `simtape replay` runs from, and `simtape tape unpack` writes).
//!
//! The paths a scenario names are relative to its file. Omissions, each becomes a path
//! relative to the unpack directory, where the scenario file sits at `<name>.toml`; a path
//! that climbs out of the scenario's directory (`../shared/x`) puts the scenario file that
//! many directories down, under the names those directories have here, so the relative
//! paths in its source still hold. Absolute paths name one machine and are not captured.

use std::path::{Component, Path, PathBuf};

use crate::tape::{InputEntry, Inputs, INPUT_FILE_BYTES_MAX};

/// Where a run's `--process-wasi` directory goes in the unpack directory.
pub const PROCESS_WASI_ENTRY: &str = "process-wasi";
/// The most bytes of files one scenario's inputs may hold.
pub const INPUTS_BYTES_MAX: u64 = 512 << 20;
/// The most entries (files, directories, symlinks) one scenario's inputs may hold.
pub const INPUTS_ENTRIES_MAX: usize = 100_000;

/// Why a scenario's inputs could not be captured or unpacked. Each is fatal to the command
/// that asked (the run itself does not depend on it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputsError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The host path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The inputs pass a bound.
    #[error("the scenario's inputs pass {what}")]
    TooLarge {
        /// Which bound, with its value.
        what: String,
    },
    /// A path climbs above the directories there are.
    #[error("{written:?} climbs above the file system's root")]
    Climbs {
        /// The path as the scenario names it.
        written: String,
    },
    /// An entry of a tape's inputs would land outside the unpack directory or through a
    /// symlink.
    #[error("the tape's input {path:?} is not a plain relative path inside the directory")]
    UnsafePath {
        /// The entry's path.
        path: String,
    },
    /// The scenario's own files take the place reserved for the `--process-wasi` modules.
    #[error("the scenario's inputs hold {path:?}, the place of the --process-wasi modules")]
    Taken {
        /// The reserved path.
        path: String,
    },
    /// Unpacking would overwrite a file that is there.
    #[error("{path} exists; unpack into an empty or new directory")]
    Exists {
        /// The host path.
        path: PathBuf,
    },
    /// A file's bytes are not in the inputs.
    #[error("the tape's input {path:?} has no stored content")]
    MissingContent {
        /// The entry's path.
        path: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InputsError + '_ {
    move |source| InputsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a capture left out: the absolute paths, which name one machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Omissions {
    /// The inputs.
    pub inputs: Inputs,
    /// The paths not captured, as the scenario names them.
    pub skipped: Vec<String>,
}

impl super::Scenario {
    /// Returns every path the scenario's runs read, as the scenario names them (relative to
    /// its file): the `[fs]` root, the `[llm]` fixture (and its handover's), the `[process]` tape and WASI
    /// directory, and what the extension's tables opened (`[[mcp]]` files, an agent
    /// program).
    pub fn input_paths(&self) -> Vec<String> {
        let spec = &self.spec;
        let mut paths: Vec<String> = [
            spec.fs.as_ref().map(|fs| &fs.root),
            spec.llm.as_ref().map(|llm| &llm.fixture),
            spec.llm
                .as_ref()
                .and_then(|llm| llm.handover.as_ref())
                .map(|handover| &handover.fixture),
            spec.process.as_ref().and_then(|p| p.tape.as_ref()),
            spec.process.as_ref().and_then(|p| p.wasi_dir.as_ref()),
        ]
        .into_iter()
        .flatten()
        .map(|field| field.path.clone())
        .chain(self.extension_inputs.iter().cloned())
        .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    /// Reads every input of the scenario into [`Inputs`] (directories whole, symlinks in
    /// them as links), laid out as [`unpack`] writes them back; `process_wasi` is the
    /// directory of `simtape run --process-wasi`, carried as [`PROCESS_WASI_ENTRY`].
    pub fn capture_inputs(&self, process_wasi: Option<&Path>) -> Result<Omissions, InputsError> {
        let base = self.path.parent().unwrap_or(Path::new(""));
        let written = self.input_paths();
        let (relative, skipped): (Vec<String>, Vec<String>) = written
            .into_iter()
            .partition(|p| Path::new(p).is_relative());
        let highest = relative.iter().max_by_key(|p| climb(p));
        let prefix = prefix(base, highest.map_or(0, |p| climb(p)), highest)?;
        let mut scenario_file = prefix.clone();
        scenario_file.push(format!("{}.toml", self.name()));
        let mut capture = Capture {
            inputs: Inputs::new(&scenario_file.join("/")),
            bytes: 0,
            entries: 0,
        };
        for path in &relative {
            let Some(unpacked) = place(&prefix, path) else {
                return Err(InputsError::Climbs {
                    written: path.clone(),
                });
            };
            capture.named(&base.join(path), &unpacked)?;
        }
        if let Some(dir) = process_wasi {
            if capture.inputs.entries().any(|e| {
                e.path() == PROCESS_WASI_ENTRY
                    || e.path().starts_with(&format!("{PROCESS_WASI_ENTRY}/"))
            }) {
                return Err(InputsError::Taken {
                    path: PROCESS_WASI_ENTRY.into(),
                });
            }
            capture.dir(dir, &[PROCESS_WASI_ENTRY.to_string()])?;
            capture.inputs.set_process_wasi(PROCESS_WASI_ENTRY);
        }
        Ok(Omissions {
            inputs: capture.inputs,
            skipped,
        })
    }
}

/// Returns how many directories `path` climbs above its start at most.
fn climb(path: &str) -> usize {
    let (mut depth, mut lowest) = (0i64, 0i64);
    for component in Path::new(path).components() {
        match component {
            Component::ParentDir => {
                depth -= 1;
                lowest = lowest.min(depth);
            }
            Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    usize::try_from(-lowest).expect("lowest is never above zero")
}

/// Returns the names of the last `count` directories of `base` (as the host resolves it).
fn prefix(base: &Path, count: usize, named: Option<&String>) -> Result<Vec<String>, InputsError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let shown = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    let real = std::fs::canonicalize(shown).map_err(io(shown))?;
    let names: Vec<String> = real
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if names.len() < count {
        return Err(InputsError::Climbs {
            written: named.cloned().unwrap_or_default(),
        });
    }
    Ok(names[names.len() - count..].to_vec())
}

/// Returns `path` placed under `prefix`, lexically normalized, as unpack-relative components.
fn place(prefix: &[String], path: &str) -> Option<Vec<String>> {
    let mut placed = prefix.to_vec();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => placed.push(name.to_string_lossy().into_owned()),
            Component::ParentDir => {
                placed.pop()?;
            }
            _ => {}
        }
    }
    Some(placed)
}

struct Capture {
    inputs: Inputs,
    bytes: u64,
    entries: usize,
}

impl Capture {
    /// Captures a path the scenario names: followed if it is a symlink (the loader follows
    /// it), a directory whole.
    fn named(&mut self, host: &Path, unpacked: &[String]) -> Result<(), InputsError> {
        let meta = std::fs::metadata(host).map_err(io(host))?;
        if meta.is_dir() {
            self.dir(host, unpacked)
        } else {
            self.file(host, unpacked, &meta)
        }
    }

    fn count(&mut self, bytes: u64) -> Result<(), InputsError> {
        self.entries += 1;
        self.bytes += bytes;
        if self.entries > INPUTS_ENTRIES_MAX {
            let what = format!("{INPUTS_ENTRIES_MAX} entries");
            return Err(InputsError::TooLarge { what });
        }
        if self.bytes > INPUTS_BYTES_MAX {
            let what = format!("{INPUTS_BYTES_MAX} bytes");
            return Err(InputsError::TooLarge { what });
        }
        Ok(())
    }

    fn file(
        &mut self,
        host: &Path,
        unpacked: &[String],
        meta: &std::fs::Metadata,
    ) -> Result<(), InputsError> {
        if meta.len() > INPUT_FILE_BYTES_MAX {
            let what = format!("{INPUT_FILE_BYTES_MAX} bytes in {}", host.display());
            return Err(InputsError::TooLarge { what });
        }
        self.count(meta.len())?;
        let bytes = std::fs::read(host).map_err(io(host))?;
        self.parents(unpacked);
        self.inputs
            .add_file(&unpacked.join("/"), bytes, executable(meta));
        Ok(())
    }

    /// Adds the directories above an entry (so an unpack creates them in order).
    fn parents(&mut self, unpacked: &[String]) {
        for end in 1..unpacked.len() {
            self.inputs.add_dir(&unpacked[..end].join("/"));
        }
    }

    /// Captures a directory tree, in name order; symlinks inside stay links.
    fn dir(&mut self, host: &Path, unpacked: &[String]) -> Result<(), InputsError> {
        self.count(0)?;
        self.parents(unpacked);
        if !unpacked.is_empty() {
            self.inputs.add_dir(&unpacked.join("/"));
        }
        let mut names: Vec<_> = std::fs::read_dir(host)
            .map_err(io(host))?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(io(host))?;
        names.sort();
        for name in names {
            let path = host.join(&name);
            let mut child = unpacked.to_vec();
            child.push(name.to_string_lossy().into_owned());
            let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
            if meta.file_type().is_symlink() {
                self.count(0)?;
                let target = std::fs::read_link(&path).map_err(io(&path))?;
                self.inputs
                    .add_symlink(&child.join("/"), &target.to_string_lossy());
            } else if meta.is_dir() {
                self.dir(&path, &child)?;
            } else if meta.is_file() {
                self.file(&path, &child, &meta)?;
            }
            // FIFOs, sockets and devices are not files a run reads; the overlay shows them
            // as "other", and an unpack leaves them out.
        }
        Ok(())
    }
}

#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_meta: &std::fs::Metadata) -> bool {
    false
}

/// Writes `source` (the scenario) and every entry of `inputs` under `dir`, which must be
/// empty or absent; returns the scenario file's path. Nothing is overwritten, and no entry
/// lands outside `dir` or through a symlink the inputs hold.
pub fn unpack(inputs: &Inputs, source: &str, dir: &Path) -> Result<PathBuf, InputsError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    if std::fs::read_dir(dir).map_err(io(dir))?.next().is_some() {
        return Err(InputsError::Exists {
            path: dir.to_path_buf(),
        });
    }
    let links: std::collections::BTreeSet<&str> = inputs
        .entries()
        .filter(|e| matches!(e, InputEntry::Symlink { .. }))
        .map(InputEntry::path)
        .collect();
    for entry in inputs.entries() {
        let path = safe_path(entry.path(), &links)?;
        let host = dir.join(&path);
        match entry {
            InputEntry::Dir { .. } => std::fs::create_dir_all(&host).map_err(io(&host))?,
            InputEntry::File {
                sha256, executable, ..
            } => {
                let bytes = inputs
                    .blob(sha256)
                    .ok_or_else(|| InputsError::MissingContent {
                        path: entry.path().to_string(),
                    })?;
                write_new(&host, bytes, *executable)?;
            }
            InputEntry::Symlink { target, .. } => symlink(target, &host)?,
        }
    }
    let scenario = dir.join(safe_path(inputs.scenario_file(), &links)?);
    if let Some(parent) = scenario.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    // The inputs may hold the scenario file itself (an `[fs]` root of "."): the same bytes.
    std::fs::write(&scenario, source).map_err(io(&scenario))?;
    Ok(scenario)
}

/// Checks that an entry's path is relative, plain (no `.`, `..` or empty part) and not
/// below one of the symlinks the inputs hold.
fn safe_path(path: &str, links: &std::collections::BTreeSet<&str>) -> Result<PathBuf, InputsError> {
    let unsafe_path = || InputsError::UnsafePath { path: path.into() };
    let parts: Vec<&str> = path.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains('\\'))
    {
        return Err(unsafe_path());
    }
    for end in 1..parts.len() {
        if links.contains(parts[..end].join("/").as_str()) {
            return Err(unsafe_path());
        }
    }
    Ok(parts.iter().collect())
}

fn write_new(host: &Path, bytes: &[u8], executable: bool) -> Result<(), InputsError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if executable { 0o755 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = executable;
    let mut file = options.open(host).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            InputsError::Exists {
                path: host.to_path_buf(),
            }
        } else {
            InputsError::Io {
                path: host.to_path_buf(),
                source,
            }
        }
    })?;
    file.write_all(bytes).map_err(io(host))
}

#[cfg(unix)]
fn symlink(target: &str, host: &Path) -> Result<(), InputsError> {
    std::os::unix::fs::symlink(target, host).map_err(io(host))
}

#[cfg(not(unix))]
fn symlink(_target: &str, host: &Path) -> Result<(), InputsError> {
    Err(InputsError::Io {
        path: host.to_path_buf(),
        source: std::io::Error::other("symlinks are unpacked on Unix only"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn climbing_paths_are_placed_under_the_directories_they_climb_out_of() {
        // Goal: `../x` from scenarios/ lands at x, with the scenario under scenarios/.
        assert_eq!(climb("data/a/../b"), 0);
        assert_eq!(climb("../shared/x"), 1);
        assert_eq!(climb("a/../../../x"), 2);
        let prefix = vec!["scenarios".to_string()];
        assert_eq!(place(&prefix, "../shared/x").unwrap(), ["shared", "x"]);
        assert_eq!(
            place(&prefix, "./data/f").unwrap(),
            ["scenarios", "data", "f"]
        );
        assert_eq!(place(&[], "../x"), None);
    }

    #[test]
    fn unpack_refuses_paths_that_leave_the_directory_or_pass_through_a_link() {
        // Goal: a doctored tape cannot write outside the unpack directory.
        let links: std::collections::BTreeSet<&str> = ["data/link"].into_iter().collect();
        for bad in ["../x", "/etc/x", "a//b", "a/./b", "data/link/x"] {
            assert!(safe_path(bad, &links).is_err(), "{bad}");
        }
        assert_eq!(safe_path("data/x", &links).unwrap(), Path::new("data/x"));
    }
}
