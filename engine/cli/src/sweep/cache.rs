//! The sweep's result store: one file per run, named by the digest of everything that decides
//! the run, so a sweep killed half-way resumes where it stopped (`--resume`, the store under
//! `--out`) and a sweep whose inputs did not change runs nothing again (`--cache DIR`, shared
//! between CI runs). docs/sweeps.md, "Resume and the result cache".
//!
//! A result is written to a temporary name and renamed, so a killed sweep leaves whole
//! results or none: never one that reads back wrong.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use simtape::tape::{hex_encode, InputEntry, Inputs};
use simtape_eval::sweep::SeedResult;

use crate::exit::CliError;

/// The store's directory under `--out` (scenario names have no `.`, so no scenario's tape
/// directory can take this name).
pub(crate) const OUT_STORE: &str = "results.cache";

/// The key's format: a new one invalidates every stored result.
const KEY_FORMAT: &str = "simtape-run-key/1";

/// What decides every run of one scenario but the seed: the engine (its version and this
/// binary's digest, since an engine built from other sources may run differently under the
/// same version), the scenario source and every file it reads. Seeds are added per run.
#[derive(Debug, Clone)]
pub(crate) struct ScenarioKey(Sha256);

impl ScenarioKey {
    /// Keys a scenario from the engine's digest, its source digest and its captured inputs.
    pub(crate) fn new(engine: &EngineDigest, scenario_digest: &str, inputs: &Inputs) -> Self {
        let mut hash = Sha256::new();
        let mut line = |text: &str| {
            hash.update(text.as_bytes());
            hash.update(b"\n");
        };
        line(KEY_FORMAT);
        line(&format!("engine {}", env!("CARGO_PKG_VERSION")));
        line(&format!("binary {}", engine.0));
        line(&format!("scenario {scenario_digest}"));
        // Entries are sorted by path and name every file by content: an edited fixture, a
        // file added to the `[fs]` tree, a changed executable bit all change the key.
        for entry in inputs.entries() {
            line(&match entry {
                InputEntry::Dir { path } => format!("input dir {path:?}"),
                InputEntry::File {
                    path,
                    sha256,
                    size,
                    executable,
                } => format!("input file {path:?} {sha256} {size} {executable}"),
                InputEntry::Symlink { path, target } => {
                    format!("input symlink {path:?} {target:?}")
                }
            });
        }
        ScenarioKey(hash)
    }

    /// Returns the key of this scenario's run at `seed`.
    pub(crate) fn run(&self, seed: u64) -> String {
        let mut hash = self.0.clone();
        hash.update(format!("seed {seed}\n").as_bytes());
        hex_encode(&hash.finalize())
    }
}

/// The hex SHA-256 of the running `simtape` binary.
#[derive(Debug, Clone)]
pub(crate) struct EngineDigest(String);

impl EngineDigest {
    /// Hashes the running executable, streamed (a debug build is hundreds of megabytes).
    pub(crate) fn of_this_binary() -> Result<EngineDigest, CliError> {
        let exe = std::env::current_exe().map_err(CliError::io("the simtape binary"))?;
        let mut file = std::fs::File::open(&exe).map_err(CliError::io(&exe))?;
        let mut hash = Sha256::new();
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let read = file.read(&mut buffer).map_err(CliError::io(&exe))?;
            if read == 0 {
                break;
            }
            hash.update(&buffer[..read]);
        }
        Ok(EngineDigest(hex_encode(&hash.finalize())))
    }
}

/// A result found in a store, with the tape it kept if the run kept one.
#[derive(Debug)]
pub(crate) struct Found {
    pub(crate) result: SeedResult,
    /// The stored copy of the failing seed's tape (a `--cache` store keeps one).
    pub(crate) tape: Option<PathBuf>,
}

/// One directory of results by run key.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    dir: PathBuf,
    /// Whether results are looked up here (`--resume` for the one under `--out`, always for
    /// `--cache`), or only written (`--out` without `--resume`, for a later resume).
    pub(crate) read: bool,
    /// Whether a failing seed's tape is copied in too: a `--cache` directory outlives the
    /// `--out` directory of the sweep that filled it.
    keeps_tapes: bool,
}

impl Store {
    /// The store under `--out`, read only when resuming.
    pub(crate) fn under_out(out: &Path, resume: bool) -> Result<Store, CliError> {
        Store::open(out.join(OUT_STORE), resume, false, "--out")
    }

    /// A `--cache DIR` store.
    pub(crate) fn cache(dir: &Path) -> Result<Store, CliError> {
        Store::open(dir.to_path_buf(), true, true, "--cache")
    }

    fn open(dir: PathBuf, read: bool, keeps_tapes: bool, flag: &str) -> Result<Store, CliError> {
        crate::common::files::create_output_dir(&dir, &dir, flag)?;
        Ok(Store {
            dir,
            read,
            keeps_tapes,
        })
    }

    fn result_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    fn tape_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.tape"))
    }

    /// Returns the stored result of run `key`, if this store is read and has it. A file
    /// that is not a result is an error naming it (it was not written by a sweep).
    pub(crate) fn get(&self, key: &str) -> Result<Option<Found>, CliError> {
        if !self.read {
            return Ok(None);
        }
        let path = self.result_path(key);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(CliError::io(&path)(error)),
        };
        let result: SeedResult = serde_json::from_slice(&bytes).map_err(|error| {
            CliError::Input(format!(
                "{}: not a stored sweep result ({error}); remove it to run that seed again",
                path.display()
            ))
        })?;
        let tape = self.tape_path(key);
        Ok(Some(Found {
            result,
            tape: (self.keeps_tapes && tape.is_file()).then_some(tape),
        }))
    }

    /// Stores the result of run `key` (without its tape path and replay command, which name
    /// this sweep's files), and a copy of its kept tape if this store keeps tapes.
    pub(crate) fn put(
        &self,
        key: &str,
        result: &SeedResult,
        tape: Option<&Path>,
    ) -> Result<(), CliError> {
        if let (true, Some(tape)) = (self.keeps_tapes, tape) {
            let bytes = std::fs::read(tape).map_err(CliError::io(tape))?;
            write_atomically(&self.tape_path(key), &bytes)?;
        }
        let mut stored = result.clone();
        stored.tape = None;
        stored.replay = None;
        let json = serde_json::to_vec(&stored).expect("a seed result always encodes");
        write_atomically(&self.result_path(key), &json)
    }
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename: a reader (or a
/// resumed sweep after `kill -9`) sees the whole file or none.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    // Unique per write: two workers may store the same content-addressed file at once.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(
        ".{}-{}.partial",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let partial = path.with_file_name(name);
    std::fs::write(&partial, bytes).map_err(CliError::io(&partial))?;
    std::fs::rename(&partial, path).map_err(CliError::io(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(fixture: &[u8]) -> Inputs {
        let mut inputs = Inputs::new("s.toml");
        inputs.add_file("data/llm.jsonl", fixture.to_vec(), false);
        inputs.add_dir("data/tree");
        inputs
    }

    #[test]
    fn a_run_key_changes_with_every_input_that_decides_the_run() {
        // Goal: the engine binary, the scenario source, any input file's bytes and the seed
        // each change the key; the same of each gives the same key.
        let engine = EngineDigest("e1".into());
        let base = ScenarioKey::new(&engine, "s1", &inputs(b"a")).run(7);
        assert_eq!(base, ScenarioKey::new(&engine, "s1", &inputs(b"a")).run(7));
        let others = [
            ScenarioKey::new(&EngineDigest("e2".into()), "s1", &inputs(b"a")).run(7),
            ScenarioKey::new(&engine, "s2", &inputs(b"a")).run(7),
            ScenarioKey::new(&engine, "s1", &inputs(b"b")).run(7),
            ScenarioKey::new(&engine, "s1", &Inputs::new("s.toml")).run(7),
            ScenarioKey::new(&engine, "s1", &inputs(b"a")).run(8),
        ];
        for other in others {
            assert_ne!(base, other);
        }
    }
}
