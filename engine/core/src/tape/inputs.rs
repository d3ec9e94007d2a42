//! The inputs section: every file a run read (fixtures, cassettes, world specs, process tapes,
//! WASI modules, the `[fs]` root's tree), after the footer, so a tape replays on its own.
//!
//! The section follows the footer, outside the hash chain: the records of a run are the same
//! bytes with or without it (golden tapes carry none), and a reader that meets it stops the
//! record stream at the footer as before. Files are stored by SHA-256, each distinct content
//! once: inside the section (`embedded`), or in a content directory beside the tape
//! (`sidecar`), which a sweep's kept tapes share. Paths are relative to the directory the
//! inputs unpack into, `/`-separated; none is a host path. `docs/tape-format.md`, "Inputs".

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::reader::TapeError;
use super::sha256_hex;

/// The eight bytes that open the inputs section, right after the footer.
pub(crate) const INPUTS_MAGIC: &[u8; 8] = b"SIMINPUT";
/// The largest manifest a reader accepts.
const MANIFEST_BYTES_MAX: u32 = 64 << 20;
/// The largest single input file, the same bound as a record's payload.
pub const INPUT_FILE_BYTES_MAX: u64 = 64 << 20;

/// One entry of the inputs: a file with its content's address, a directory (kept so an empty
/// one exists again when unpacked) or a symlink with its target, as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum InputEntry {
    /// A directory.
    Dir {
        /// Its path, relative to the unpack directory.
        path: String,
    },
    /// A regular file.
    File {
        /// Its path, relative to the unpack directory.
        path: String,
        /// The hex SHA-256 of its bytes: its address in the content store.
        sha256: String,
        /// Its length in bytes.
        size: u64,
        /// Whether it is executable (a gate script, an agent program); git keeps this bit.
        executable: bool,
    },
    /// A symlink, not followed.
    Symlink {
        /// Its path, relative to the unpack directory.
        path: String,
        /// Its target, as stored.
        target: String,
    },
}

impl InputEntry {
    /// Returns the entry's path, relative to the unpack directory.
    pub fn path(&self) -> &str {
        match self {
            InputEntry::Dir { path }
            | InputEntry::File { path, .. }
            | InputEntry::Symlink { path, .. } => path,
        }
    }
}

/// What a run read: where its scenario file goes, every entry by path, and the bytes of
/// every distinct file by SHA-256.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    scenario_file: String,
    process_wasi: Option<String>,
    entries: BTreeMap<String, InputEntry>,
    blobs: BTreeMap<String, Arc<[u8]>>,
}

impl Inputs {
    /// Starts the inputs of a scenario whose file unpacks at `scenario_file` (relative,
    /// `/`-separated).
    pub fn new(scenario_file: &str) -> Inputs {
        Inputs {
            scenario_file: scenario_file.to_string(),
            ..Inputs::default()
        }
    }

    /// Returns where the scenario file goes, relative to the unpack directory.
    pub fn scenario_file(&self) -> &str {
        &self.scenario_file
    }

    /// Returns the directory (an entry's path) whose WASI modules the run ran programs from
    /// (`simtape run --process-wasi`), if it did.
    pub fn process_wasi(&self) -> Option<&str> {
        self.process_wasi.as_deref()
    }

    /// Names the directory entry that holds the run's `--process-wasi` modules.
    pub(crate) fn set_process_wasi(&mut self, path: &str) {
        self.process_wasi = Some(path.to_string());
    }

    /// Returns the entries, sorted by path.
    pub fn entries(&self) -> impl Iterator<Item = &InputEntry> {
        self.entries.values()
    }

    /// Returns the bytes of the file whose hex SHA-256 is `sha256`.
    pub fn blob(&self, sha256: &str) -> Option<&[u8]> {
        self.blobs.get(sha256).map(|bytes| &bytes[..])
    }

    /// Returns the distinct file contents and their total bytes.
    pub fn stored(&self) -> (usize, u64) {
        let bytes = self.blobs.values().map(|b| b.len() as u64).sum();
        (self.blobs.len(), bytes)
    }

    /// Adds a directory.
    pub fn add_dir(&mut self, path: &str) {
        let entry = InputEntry::Dir { path: path.into() };
        self.entries.insert(path.to_string(), entry);
    }

    /// Adds a symlink.
    pub(crate) fn add_symlink(&mut self, path: &str, target: &str) {
        let entry = InputEntry::Symlink {
            path: path.into(),
            target: target.into(),
        };
        self.entries.insert(path.to_string(), entry);
    }

    /// Adds a file and its bytes (stored once per distinct content).
    pub fn add_file(&mut self, path: &str, bytes: Vec<u8>, executable: bool) {
        let sha256 = sha256_hex(&bytes);
        let entry = InputEntry::File {
            path: path.into(),
            sha256: sha256.clone(),
            size: bytes.len() as u64,
            executable,
        };
        self.entries.insert(path.to_string(), entry);
        self.blobs.entry(sha256).or_insert_with(|| bytes.into());
    }

    /// Returns the hashes of the distinct files, in the order the section stores them (the
    /// order of their first entry).
    fn blob_order(&self) -> Vec<&str> {
        let mut seen = std::collections::BTreeSet::new();
        self.entries
            .values()
            .filter_map(|entry| match entry {
                InputEntry::File { sha256, .. } if seen.insert(sha256.as_str()) => {
                    Some(sha256.as_str())
                }
                _ => None,
            })
            .collect()
    }
}

/// Where the files of an inputs section are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputStore {
    /// Inside the section, after the manifest.
    Embedded,
    /// In a content directory (`<hex sha256>` files), named in the section relative to the
    /// tape's directory, so the tape and its store move together.
    Sidecar {
        /// The directory as the section names it, relative to the tape's directory.
        relative: String,
        /// Where the writer puts the files; `None` when they are there already (a replay
        /// writing the section of the tape it replays).
        dir: Option<PathBuf>,
    },
}

/// The manifest as encoded: `[scenario_file, store, cas, entries, process_wasi]`.
#[derive(Serialize, Deserialize)]
struct Manifest {
    scenario_file: String,
    store: String,
    cas: String,
    entries: Vec<InputEntry>,
    /// Empty when the run had no `--process-wasi` directory.
    process_wasi: String,
}

/// Encodes the inputs section (magic through check), storing sidecar files as it goes.
pub(crate) fn encode(inputs: &Inputs, store: &InputStore) -> Result<Vec<u8>, TapeError> {
    let (store_name, cas) = match store {
        InputStore::Embedded => ("embedded", String::new()),
        InputStore::Sidecar { relative, .. } => ("sidecar", relative.clone()),
    };
    let manifest = Manifest {
        scenario_file: inputs.scenario_file.clone(),
        store: store_name.into(),
        cas,
        entries: inputs.entries.values().cloned().collect(),
        process_wasi: inputs.process_wasi.clone().unwrap_or_default(),
    };
    let manifest = rmp_serde::to_vec(&manifest).map_err(|e| TapeError::BadPayload {
        detail: format!("the inputs manifest: {e}"),
    })?;
    let mut out = Vec::with_capacity(manifest.len() + 32);
    out.extend_from_slice(INPUTS_MAGIC);
    rmp::encode::write_bin(&mut out, &manifest).expect("writes to a Vec cannot fail");
    for sha256 in inputs.blob_order() {
        let bytes = &inputs.blobs[sha256];
        match store {
            InputStore::Embedded => {
                rmp::encode::write_bin(&mut out, bytes).expect("writes to a Vec cannot fail")
            }
            InputStore::Sidecar { dir: Some(dir), .. } => store_file(dir, sha256, bytes)?,
            InputStore::Sidecar { dir: None, .. } => {}
        }
    }
    let check = xxhash_rust::xxh3::xxh3_64(&out);
    rmp::encode::write_uint(&mut out, check).expect("writes to a Vec cannot fail");
    Ok(out)
}

/// Writes `bytes` to `dir/<sha256>` unless it is there: through a temporary file of its own
/// (the threads of a sweep may store the same content at once), renamed into place.
pub(crate) fn store_file(dir: &Path, sha256: &str, bytes: &[u8]) -> Result<(), TapeError> {
    let path = dir.join(sha256);
    if path.exists() {
        return Ok(());
    }
    let io = |path: &Path| {
        let shown = path.display().to_string();
        move |source| TapeError::Io {
            path: shown,
            source,
        }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut attempt = 0u32;
    let (temp, mut file) = loop {
        let temp = dir.join(format!("{sha256}.tmp{attempt}"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => break (temp, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 1024 => {
                attempt += 1
            }
            Err(e) => return Err(io(&temp)(e)),
        }
    };
    use std::io::Write;
    file.write_all(bytes).map_err(io(&temp))?;
    drop(file);
    std::fs::rename(&temp, &path).map_err(io(&path))
}

/// A decoded inputs section: the inputs (with the files it embeds) and where the rest are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputsSection {
    /// The inputs; files of a sidecar section are loaded by [`InputsSection::load_files`].
    pub inputs: Inputs,
    /// `None` when the files are embedded; the content directory relative to the tape's
    /// directory otherwise.
    pub cas: Option<String>,
}

impl InputsSection {
    /// Returns how the section stores its files, for a writer that writes it again
    /// unchanged: the files of a sidecar section are already in their store.
    pub fn store(&self) -> InputStore {
        match &self.cas {
            None => InputStore::Embedded,
            Some(relative) => InputStore::Sidecar {
                relative: relative.clone(),
                dir: None,
            },
        }
    }

    /// Loads every file of a sidecar section from its content directory (relative to
    /// `tape_dir`), checking each against its address; an embedded section has them all.
    pub fn load_files(&mut self, tape_dir: &Path) -> Result<(), TapeError> {
        let Some(relative) = &self.cas else {
            return Ok(());
        };
        let dir = tape_dir.join(relative);
        let wanted: Vec<String> = self
            .inputs
            .blob_order()
            .into_iter()
            .map(str::to_string)
            .collect();
        for sha256 in wanted {
            let path = dir.join(&sha256);
            let missing = |detail: String| TapeError::MissingInput {
                hash: sha256.clone(),
                detail,
            };
            let bytes =
                std::fs::read(&path).map_err(|e| missing(format!("{}: {e}", path.display())))?;
            if sha256_hex(&bytes) != sha256 {
                return Err(missing(format!("{} has other content", path.display())));
            }
            self.inputs.blobs.insert(sha256, bytes.into());
        }
        Ok(())
    }
}

/// Reads an inputs section whose magic has been read, through to its check; `offset` is
/// where it starts, for errors.
pub(crate) fn decode<R: Read>(reader: &mut R, offset: u64) -> Result<InputsSection, TapeError> {
    let corrupt = |detail: String| TapeError::CorruptInputs { offset, detail };
    let mut section = INPUTS_MAGIC.to_vec();
    let manifest_bytes = read_bin(reader, &mut section, MANIFEST_BYTES_MAX, "the manifest")
        .map_err(|e| corrupt(e.to_string()))?;
    let manifest: Manifest = rmp_serde::from_slice(&manifest_bytes)
        .map_err(|e| corrupt(format!("the manifest does not decode: {e}")))?;
    let mut inputs = Inputs::new(&manifest.scenario_file);
    if !manifest.process_wasi.is_empty() {
        inputs.process_wasi = Some(manifest.process_wasi);
    }
    for entry in manifest.entries {
        inputs.entries.insert(entry.path().to_string(), entry);
    }
    let cas = match manifest.store.as_str() {
        "embedded" => None,
        "sidecar" => Some(manifest.cas),
        other => return Err(corrupt(format!("unknown store {other:?}"))),
    };
    if cas.is_none() {
        let order: Vec<String> = inputs
            .blob_order()
            .into_iter()
            .map(str::to_string)
            .collect();
        let file_max = u32::try_from(INPUT_FILE_BYTES_MAX).expect("the bound fits in u32");
        for sha256 in order {
            let bytes = read_bin(reader, &mut section, file_max, "a file")
                .map_err(|e| corrupt(e.to_string()))?;
            if sha256_hex(&bytes) != sha256 {
                return Err(corrupt(format!(
                    "the file stored as {sha256} has other content"
                )));
            }
            inputs.blobs.insert(sha256, bytes.into());
        }
    }
    let expected = xxhash_rust::xxh3::xxh3_64(&section);
    let found = rmp::decode::read_int::<u64, _>(reader)
        .map_err(|e| corrupt(format!("the check does not read: {e}")))?;
    if found != expected {
        return Err(corrupt(format!(
            "the check is {found:#018x}, the section hashes to {expected:#018x}"
        )));
    }
    let mut trailing = [0u8; 1];
    if reader
        .read(&mut trailing)
        .map_err(|e| corrupt(e.to_string()))?
        > 0
    {
        return Err(corrupt("bytes after the inputs section".into()));
    }
    Ok(InputsSection { inputs, cas })
}

/// Why one bin of the inputs section does not read.
#[derive(Debug, thiserror::Error)]
enum BinError {
    /// Its length or bytes do not read.
    #[error("{what}: {detail}")]
    Read { what: &'static str, detail: String },
    /// It is longer than its kind may be.
    #[error("{what} of {len} bytes exceeds the {max}-byte maximum")]
    TooLong {
        what: &'static str,
        len: u32,
        max: u32,
    },
    /// The section ends inside it.
    #[error("{what} is cut short")]
    Short { what: &'static str },
}

/// Reads one MessagePack bin of at most `max` bytes, appending its encoding to `section`.
fn read_bin<R: Read>(
    reader: &mut R,
    section: &mut Vec<u8>,
    max: u32,
    what: &'static str,
) -> Result<Vec<u8>, BinError> {
    let read = |detail: &dyn std::fmt::Display| BinError::Read {
        what,
        detail: detail.to_string(),
    };
    let len = rmp::decode::read_bin_len(reader).map_err(|e| read(&e))?;
    if len > max {
        return Err(BinError::TooLong { what, len, max });
    }
    let mut bytes = Vec::new();
    reader
        .take(u64::from(len))
        .read_to_end(&mut bytes)
        .map_err(|e| read(&e))?;
    if bytes.len() != len as usize {
        return Err(BinError::Short { what });
    }
    rmp::encode::write_bin_len(section, len).expect("writes to a Vec cannot fail");
    section.extend_from_slice(&bytes);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Inputs {
        let mut inputs = Inputs::new("x.toml");
        inputs.add_dir("data");
        inputs.add_file("data/a.txt", b"same".to_vec(), false);
        inputs.add_file("data/b.txt", b"same".to_vec(), true);
        inputs.add_file("data/c.txt", b"other".to_vec(), false);
        inputs.add_symlink("data/link", "a.txt");
        inputs.set_process_wasi("data");
        inputs
    }

    #[test]
    fn an_embedded_section_round_trips_and_stores_each_content_once() {
        // Goal: decode(encode(x)) is x, and two files with the same bytes share one blob.
        let inputs = sample();
        let bytes = encode(&inputs, &InputStore::Embedded).unwrap();
        assert_eq!(bytes.windows(5).filter(|w| w == b"other").count(), 1);
        assert_eq!(bytes.windows(4).filter(|w| w == b"same").count(), 1);
        let mut reader = &bytes[INPUTS_MAGIC.len()..];
        let section = decode(&mut reader, 0).unwrap();
        assert_eq!(section.inputs, inputs);
        assert_eq!(section.cas, None);
        assert_eq!(inputs.stored(), (2, 9));
    }

    #[test]
    fn a_damaged_section_is_refused_by_its_check() {
        // Goal: one flipped byte anywhere in the section is found.
        let bytes = encode(&sample(), &InputStore::Embedded).unwrap();
        let at = bytes.windows(5).position(|w| w == b"other").unwrap();
        let mut damaged = bytes.clone();
        damaged[at] = b'O';
        let mut reader = &damaged[INPUTS_MAGIC.len()..];
        let error = decode(&mut reader, 0).unwrap_err().to_string();
        assert!(error.contains("other content"), "{error}");
    }

    #[test]
    fn a_sidecar_section_holds_only_the_manifest_and_loads_its_files_from_the_store() {
        // Goal: sidecar files go to the content directory once and come back checked.
        let dir = crate::testing::unit_test_dir("inputs");
        let _ = std::fs::remove_dir_all(&dir);
        let store = InputStore::Sidecar {
            relative: "cas".into(),
            dir: Some(dir.join("cas")),
        };
        let inputs = sample();
        let bytes = encode(&inputs, &store).unwrap();
        assert!(!bytes.windows(5).any(|w| w == b"other"));
        assert_eq!(std::fs::read_dir(dir.join("cas")).unwrap().count(), 2);
        let mut reader = &bytes[INPUTS_MAGIC.len()..];
        let mut section = decode(&mut reader, 0).unwrap();
        assert_eq!(section.cas.as_deref(), Some("cas"));
        section.load_files(&dir).unwrap();
        assert_eq!(section.inputs, inputs);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
