//! The sweep's result stores: one file per run, named by the digest of everything that
//! decides the run (`simtape_eval::sweep::key`), so a sweep killed half-way resumes where it
//! stopped (`--resume`, the store under `--out`) and a sweep whose inputs did not change runs
//! nothing again (`--cache DIR`, shared between CI runs). docs/sweeps.md, "Resume and the
//! result cache".
//!
//! A result is written to a temporary name and renamed, so a killed sweep leaves whole
//! results or none: never one that reads back wrong.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use simtape::tape::hex_encode;
use simtape_eval::sweep::key::EngineDigest;
use simtape_eval::sweep::SeedResult;

use super::SweepError;

/// The store's directory under `--out` (scenario names have no `.`, so no scenario's tape
/// directory can take this name).
pub const OUT_STORE: &str = "results.cache";

/// Hashes the running executable, streamed (a debug build is hundreds of megabytes).
pub fn this_binary() -> Result<EngineDigest, SweepError> {
    let exe = std::env::current_exe().map_err(SweepError::io("the simtape binary"))?;
    let mut file = std::fs::File::open(&exe).map_err(SweepError::io(&exe))?;
    let mut hash = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).map_err(SweepError::io(&exe))?;
        if read == 0 {
            break;
        }
        hash.update(&buffer[..read]);
    }
    Ok(EngineDigest::new(hex_encode(&hash.finalize())))
}

/// A result found in a store, with the tape it kept if the run kept one.
#[derive(Debug)]
pub struct Found {
    /// The stored result, without a tape path or replay command.
    pub result: SeedResult,
    /// The stored copy of the failing seed's tape (a `--cache` store keeps one).
    pub tape: Option<PathBuf>,
}

/// One directory of results by run key.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    /// Whether results are looked up here (`--resume` for the one under `--out`, always for
    /// `--cache`), or only written (`--out` without `--resume`, for a later resume).
    pub read: bool,
    /// Whether a failing seed's tape is copied in too: a `--cache` directory outlives the
    /// `--out` directory of the sweep that filled it.
    keeps_tapes: bool,
}

impl Store {
    /// The store under `--out` (its directory [`OUT_STORE`], made by the caller), read only
    /// when resuming.
    pub fn under_out(out: &Path, resume: bool) -> Store {
        Store {
            dir: out.join(OUT_STORE),
            read: resume,
            keeps_tapes: false,
        }
    }

    /// A `--cache DIR` store (the directory made by the caller).
    pub fn cache(dir: &Path) -> Store {
        Store {
            dir: dir.to_path_buf(),
            read: true,
            keeps_tapes: true,
        }
    }

    /// Returns the store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn result_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    fn tape_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.tape"))
    }

    /// Returns the stored result of run `key`, if this store is read and has it. A file
    /// that is not a result is an error naming it (it was not written by a sweep).
    pub fn get(&self, key: &str) -> Result<Option<Found>, SweepError> {
        if !self.read {
            return Ok(None);
        }
        let path = self.result_path(key);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(SweepError::io(&path)(error)),
        };
        let result: SeedResult = serde_json::from_slice(&bytes)
            .map_err(|source| SweepError::NotAResult { path, source })?;
        let tape = self.tape_path(key);
        Ok(Some(Found {
            result,
            tape: (self.keeps_tapes && tape.is_file()).then_some(tape),
        }))
    }

    /// Stores the result of run `key` (without its tape path and replay command, which name
    /// this sweep's files), and a copy of its kept tape if this store keeps tapes.
    pub fn put(
        &self,
        key: &str,
        result: &SeedResult,
        tape: Option<&Path>,
    ) -> Result<(), SweepError> {
        if let (true, Some(tape)) = (self.keeps_tapes, tape) {
            let bytes = std::fs::read(tape).map_err(SweepError::io(tape))?;
            write_atomically(&self.tape_path(key), &bytes)?;
        }
        let mut stored = result.clone();
        stored.tape = None;
        stored.replay = None;
        let json = serde_json::to_vec(&stored).expect("a seed result always encodes");
        write_atomically(&self.result_path(key), &json)
    }
}

/// Writes `bytes` to `path` whole or not at all (`crate::files::write_atomic`): a reader (or
/// a resumed sweep after `kill -9`) sees the whole file or none.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    crate::files::write_atomic(path, bytes).map_err(SweepError::io(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_result_reads_back_without_this_sweeps_paths() {
        // Goal: put then get gives the result, its tape path and replay command dropped
        // (they name one sweep's files); a store that is not read finds nothing.
        let dir = std::env::temp_dir().join(format!("simtape-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let store = Store::cache(&dir);
        let mut result = SeedResult::of(
            &simtape::RunSummary::unstarted(3),
            &simtape_eval::Verdict::Pass,
            None,
        );
        result.replay = Some("simtape run s.toml --seed 3".into());
        store.put("k", &result, None).expect("stored");
        let found = store.get("k").expect("read").expect("present");
        assert_eq!(found.result.seed, 3);
        assert_eq!(found.result.replay, None);
        assert!(Store::under_out(&dir, false)
            .get("k")
            .expect("not read")
            .is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
