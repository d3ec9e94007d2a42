//! The key of a sweep run's stored result: the SHA-256 of everything that decides the run, so
//! a result is reused only by a run that would give it again (`--resume`, `--cache`;
//! docs/sweeps.md, "Resume and the result cache"). The stores themselves are files, and the
//! gateway's (`simtape_serve::sweep::store`).
//!
//! ```
//! use simtape::tape::Inputs;
//! use simtape_eval::sweep::key::{EngineDigest, ScenarioKey};
//! let key = ScenarioKey::new(&EngineDigest::new("e1"), "s1", &Inputs::new("s.toml"));
//! assert_eq!(key.run(7).len(), 64);
//! assert_ne!(key.run(7), key.run(8));
//! ```

use simtape::tape::{sha256_hex, InputEntry, Inputs};

/// The key's format: a new one invalidates every stored result.
const KEY_FORMAT: &str = "simtape-run-key/1";

/// The hex SHA-256 of the engine binary that runs the sweep (an engine built from other
/// sources may run differently under the same version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineDigest(String);

impl EngineDigest {
    /// Wraps the hex digest of an engine binary.
    pub fn new(hex: impl Into<String>) -> EngineDigest {
        EngineDigest(hex.into())
    }
}

/// What decides every run of one scenario but the seed: the engine (its version and its
/// binary's digest), the scenario source and every file it reads. Seeds are added per run.
#[derive(Debug, Clone)]
pub struct ScenarioKey(String);

impl ScenarioKey {
    /// Keys a scenario from the engine's digest, its source digest and its captured inputs.
    pub fn new(engine: &EngineDigest, scenario_digest: &str, inputs: &Inputs) -> ScenarioKey {
        let mut text = String::new();
        let mut line = |line: &str| {
            text.push_str(line);
            text.push('\n');
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
        ScenarioKey(text)
    }

    /// Returns the key of this scenario's run at `seed` (hex SHA-256).
    pub fn run(&self, seed: u64) -> String {
        sha256_hex(format!("{}seed {seed}\n", self.0).as_bytes())
    }
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
        let engine = EngineDigest::new("e1");
        let base = ScenarioKey::new(&engine, "s1", &inputs(b"a")).run(7);
        assert_eq!(base, ScenarioKey::new(&engine, "s1", &inputs(b"a")).run(7));
        let others = [
            ScenarioKey::new(&EngineDigest::new("e2"), "s1", &inputs(b"a")).run(7),
            ScenarioKey::new(&engine, "s2", &inputs(b"a")).run(7),
            ScenarioKey::new(&engine, "s1", &inputs(b"b")).run(7),
            ScenarioKey::new(&engine, "s1", &Inputs::new("s.toml")).run(7),
            ScenarioKey::new(&engine, "s1", &inputs(b"a")).run(8),
        ];
        for other in others {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn a_run_key_is_the_digest_the_format_names() {
        // Goal: stored results stay valid across this refactor: the key is the SHA-256 of the
        // key lines then `seed N`, the bytes the earlier incremental hash was fed.
        let key = ScenarioKey::new(&EngineDigest::new("e1"), "s1", &Inputs::new("s.toml"));
        let text = format!(
            "{KEY_FORMAT}\nengine {}\nbinary e1\nscenario s1\nseed 3\n",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(key.run(3), sha256_hex(text.as_bytes()));
    }
}
