//! The failure database: what a sweep remembers of its failures, so the next sweep (or
//! `simtape ci`) replays them first and says which still fail. docs/failures.md is the
//! format's reference.
//!
//! One directory (`OUT/failures` under a sweep's `--out`, or `--failures DIR`), one file
//! per failure cluster ([`ClusterKey`]) of each scenario:
//!
//! ```text
//! DIR/<scenario>/<cluster id>.json                      the entry (FailureEntry)
//! DIR/<scenario>/<cluster id>.seed-<N>.decisions.json   seed N's own decisions
//! ```
//!
//! Every file is written to a temporary name and renamed, so a killed sweep leaves each
//! entry old or new, never torn; every entry read is size-capped
//! ([`simtape::limits::InputFile::FailureEntry`]) and checked field by field, so a damaged
//! one is refused naming the file and the field. Deciding what an entry becomes after a
//! sweep ([`update`]) and what a replay of it says ([`Replayed::of`]) is here; running the
//! seeds is the command line's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::sweep::{ClusterKey, SeedResult};

/// The entry format's tag; a reader refuses any other.
pub const FAILURE_FORMAT: &str = "simtape-failure/1";

/// At most this many seeds an entry keeps (the smallest): enough to see a cluster again, few
/// enough that replaying every known failure first stays cheap.
pub const SEEDS_KEPT_MAX: usize = 16;

/// Whether a cluster still fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    /// The last sweep that ran the scenario saw the cluster.
    Failing,
    /// The last sweep that ran the scenario did not see it: its seeds are still replayed
    /// first, so a fix that comes undone is seen at once.
    Resolved,
}

/// One failure cluster of one scenario, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureEntry {
    /// Always [`FAILURE_FORMAT`].
    pub format: String,
    /// The scenario's name (entries follow a scenario across edits of its file).
    pub scenario: String,
    /// The hex SHA-256 of the scenario source the entry was last updated from.
    pub scenario_sha256: String,
    /// The cluster.
    pub cluster: ClusterKey,
    /// Failing or resolved.
    pub status: EntryStatus,
    /// The seeds known to fail in this cluster, ascending, at most [`SEEDS_KEPT_MAX`].
    pub seeds: Vec<u64>,
    /// The first seed's own decisions (`simtape run --decisions-out`), relative to the
    /// database directory; `None` when not written (an agent-program scenario).
    pub decisions: Option<String>,
    /// The shrunk decisions of one of the seeds, once `simtape shrink` wrote them; `None`
    /// until then. A sweep keeps what it finds here.
    pub shrunk: Option<ShrunkEntry>,
    /// Whether the cluster was found by `simtape explore`: its seed fails only with its
    /// `decisions` (swarm settings, a fork's kept draws), so a sweep does not replay it as a
    /// plain seed, and judges it only through its shrunk decisions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explored: bool,
}

/// A failing seed's shrunk decisions: the seed they were shrunk from (overrides replace only
/// their own draws; the rest come from the seed's streams) and the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShrunkEntry {
    /// The seed whose run was shrunk.
    pub seed: u64,
    /// The decisions file (as `simtape shrink` writes it), relative to the database
    /// directory.
    pub decisions: String,
}

impl FailureEntry {
    /// Returns the entry's file, relative to the database directory.
    pub fn relative_path(&self) -> String {
        format!("{}/{}.json", self.scenario, self.cluster.id())
    }

    /// Returns where the entry keeps seed `seed`'s decisions, relative to the directory.
    pub fn decisions_path(&self, seed: u64) -> String {
        format!(
            "{}/{}.seed-{seed}.decisions.json",
            self.scenario,
            self.cluster.id()
        )
    }
}

/// A database file that could not be read or written. Fatal to the command: a damaged
/// database is never silently skipped (it would forget failures).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FailureDbError {
    /// The file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An entry that does not read: the file, the field (`(file)` for the whole), and why.
    #[error("{}: {field}: {problem}", path.display())]
    Field {
        /// The entry's file.
        path: PathBuf,
        /// The field.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// The database in a directory: its entries, sorted by (scenario, cluster).
#[derive(Debug, Clone)]
pub struct FailureDb {
    dir: PathBuf,
    entries: Vec<FailureEntry>,
}

impl FailureDb {
    /// Reads every entry under `dir`; a directory that does not exist is an empty database.
    pub fn open(dir: &Path) -> Result<FailureDb, FailureDbError> {
        let mut entries = Vec::new();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| FailureDbError::Io { path, source }
        };
        let scenarios = match std::fs::read_dir(dir) {
            Ok(list) => list,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(FailureDb {
                    dir: dir.to_path_buf(),
                    entries,
                })
            }
            Err(e) => return Err(io(dir)(e)),
        };
        let mut files = Vec::new();
        for scenario in scenarios {
            let scenario = scenario.map_err(io(dir))?.path();
            if !scenario.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&scenario).map_err(io(&scenario))? {
                let path = file.map_err(io(&scenario))?.path();
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                // Entries are `<cluster id>.json`; every other file (decisions, what
                // `simtape shrink` writes beside them) is an entry's, or someone else's.
                let is_entry = name.as_deref().is_some_and(|n| {
                    n.strip_suffix(".json").is_some_and(|id| {
                        id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())
                    })
                });
                if is_entry {
                    files.push(path);
                }
            }
        }
        files.sort();
        for path in files {
            entries.push(read_entry(&path)?);
        }
        entries.sort_by(|a, b| (&a.scenario, &a.cluster).cmp(&(&b.scenario, &b.cluster)));
        Ok(FailureDb {
            dir: dir.to_path_buf(),
            entries,
        })
    }

    /// Returns the directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Returns every entry, sorted by (scenario, cluster).
    pub fn entries(&self) -> &[FailureEntry] {
        &self.entries
    }

    /// Returns the entries of scenario `name`.
    pub fn of_scenario<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a FailureEntry> {
        self.entries.iter().filter(move |e| e.scenario == name)
    }

    /// Writes `entry` (atomically) and keeps it in this view of the database.
    pub fn put(&mut self, entry: FailureEntry) -> Result<(), FailureDbError> {
        let mut text = serde_json::to_string_pretty(&entry).expect("an entry serializes");
        text.push('\n');
        self.write_file(&entry.relative_path(), text.as_bytes())?;
        match self
            .entries
            .iter_mut()
            .find(|e| e.scenario == entry.scenario && e.cluster == entry.cluster)
        {
            Some(slot) => *slot = entry,
            None => {
                self.entries.push(entry);
                self.entries
                    .sort_by(|a, b| (&a.scenario, &a.cluster).cmp(&(&b.scenario, &b.cluster)));
            }
        }
        Ok(())
    }

    /// Removes the file `relative` under the directory, if it is there.
    pub fn remove_file(&self, relative: &str) -> Result<(), FailureDbError> {
        let path = self.dir.join(relative);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(FailureDbError::Io { path, source: e })
            }
            _ => Ok(()),
        }
    }

    /// Writes `bytes` to `relative` under the directory: to a temporary name, then renamed.
    pub fn write_file(&self, relative: &str, bytes: &[u8]) -> Result<(), FailureDbError> {
        let path = self.dir.join(relative);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| FailureDbError::Io { path, source }
        };
        let parent = path.parent().expect("a relative path under the directory");
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let name = path.file_name().expect("a file name").to_string_lossy();
        let temporary = parent.join(format!(".{name}.partial"));
        std::fs::write(&temporary, bytes).map_err(io(&temporary))?;
        std::fs::rename(&temporary, &path).map_err(io(&path))
    }
}

/// Reads and checks one entry, field by field, so a damaged one names what is wrong.
fn read_entry(path: &Path) -> Result<FailureEntry, FailureDbError> {
    let field_error = |field: &str, problem: String| FailureDbError::Field {
        path: path.to_path_buf(),
        field: field.to_string(),
        problem,
    };
    let text = simtape::input::read_input_text(path, simtape::limits::InputFile::FailureEntry)
        .map_err(|error| field_error("(file)", error.problem.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| field_error("(file)", format!("not JSON: {error}")))?;
    let object = value
        .as_object()
        .ok_or_else(|| field_error("(file)", "expected a JSON object".into()))?;
    const FIELDS: [&str; 9] = [
        "format",
        "scenario",
        "scenario_sha256",
        "cluster",
        "status",
        "seeds",
        "decisions",
        "shrunk",
        "explored",
    ];
    if let Some(key) = object.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(field_error(
            key,
            format!("unknown field (expected {})", FIELDS.join(", ")),
        ));
    }
    for field in FIELDS {
        let Some(value) = object.get(field) else {
            // Written only when true.
            if field == "explored" {
                continue;
            }
            return Err(field_error(field, "missing".into()));
        };
        let fits = match field {
            "format" => value.as_str() == Some(FAILURE_FORMAT),
            "scenario" | "scenario_sha256" => value.as_str().is_some_and(|s| !s.is_empty()),
            "cluster" => serde_json::from_value::<ClusterKey>(value.clone()).is_ok(),
            "status" => serde_json::from_value::<EntryStatus>(value.clone()).is_ok(),
            "seeds" => value.as_array().is_some_and(|seeds| {
                !seeds.is_empty()
                    && seeds.len() <= SEEDS_KEPT_MAX
                    && seeds.iter().all(|s| s.as_u64().is_some())
            }),
            "decisions" => value.is_null() || value.as_str().is_some_and(relative_inside),
            "explored" => value.is_boolean(),
            _ => {
                value.is_null()
                    || serde_json::from_value::<ShrunkEntry>(value.clone())
                        .is_ok_and(|shrunk| relative_inside(&shrunk.decisions))
            }
        };
        if !fits {
            let expected = match field {
                "format" => format!("expected {FAILURE_FORMAT:?}"),
                "scenario" | "scenario_sha256" => "expected a non-empty string".into(),
                "cluster" => "expected {verdict, kind, reason}".into(),
                "status" => "expected \"failing\" or \"resolved\"".into(),
                "seeds" => format!("expected 1 to {SEEDS_KEPT_MAX} unsigned 64-bit seeds"),
                "decisions" => {
                    "expected null or a path relative to the database directory".into()
                }
                "explored" => "expected true or false".into(),
                _ => "expected null or {seed, decisions} with a path relative to the database directory".into(),
            };
            return Err(field_error(field, format!("{expected}, found {value}")));
        }
    }
    let entry: FailureEntry =
        serde_json::from_value(value).map_err(|error| field_error("(file)", error.to_string()))?;
    if entry.relative_path() != relative_of(path) {
        return Err(field_error(
            "cluster",
            format!(
                "the entry's scenario and cluster belong at {}",
                entry.relative_path()
            ),
        ));
    }
    Ok(entry)
}

/// Whether `path` is a plain relative path that stays under the directory.
fn relative_inside(path: &str) -> bool {
    let path = Path::new(path);
    !path.as_os_str().is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Returns `…/<scenario>/<file>` of an entry's path as `<scenario>/<file>`.
fn relative_of(path: &Path) -> String {
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    format!("{}/{}", name(path.parent()), name(Some(path)))
}

/// What replaying a known failure's seeds gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayOutcome {
    /// At least one seed failed in the same cluster.
    StillFails,
    /// No seed failed in the cluster, but some failed otherwise.
    FailsOtherwise,
    /// Every seed passed.
    Resolved,
}

impl ReplayOutcome {
    /// Returns the outcome as printed.
    pub fn label(self) -> &'static str {
        match self {
            ReplayOutcome::StillFails => "still fails",
            ReplayOutcome::FailsOtherwise => "fails otherwise",
            ReplayOutcome::Resolved => "resolved",
        }
    }
}

/// One known failure replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    /// The scenario.
    pub scenario: String,
    /// The cluster.
    pub cluster: ClusterKey,
    /// The status the entry had before the replay.
    pub was: EntryStatus,
    /// The seeds replayed.
    pub seeds: Vec<u64>,
    /// Of those, the ones that failed in the cluster.
    pub same: Vec<u64>,
    /// Of those, the ones that failed in another cluster.
    pub otherwise: Vec<u64>,
    /// What the replay says.
    pub outcome: ReplayOutcome,
}

impl Replayed {
    /// Judges the replay of `entry` from the results of its seeds (`results` may hold more:
    /// only the entry's seeds are read).
    pub fn of(entry: &FailureEntry, results: &[SeedResult]) -> Replayed {
        let (mut same, mut otherwise) = (Vec::new(), Vec::new());
        for result in results.iter().filter(|r| entry.seeds.contains(&r.seed)) {
            match ClusterKey::of(result) {
                Some(key) if key == entry.cluster => same.push(result.seed),
                Some(_) => otherwise.push(result.seed),
                None => {}
            }
        }
        let outcome = match (same.is_empty(), otherwise.is_empty()) {
            (false, _) => ReplayOutcome::StillFails,
            (true, false) => ReplayOutcome::FailsOtherwise,
            (true, true) => ReplayOutcome::Resolved,
        };
        Replayed {
            scenario: entry.scenario.clone(),
            cluster: entry.cluster.clone(),
            was: entry.status,
            seeds: entry.seeds.clone(),
            same,
            otherwise,
            outcome,
        }
    }
}

/// Returns a scenario's entries as they stand after a sweep whose results (every seed it
/// ran, known failures included) are `results`, from the entries it had (`known`):
///
/// * a cluster the sweep saw is `failing`, with the sweep's seeds in it and the seeds of its
///   old entry the sweep did not run (another shard's, written meanwhile: nothing says they
///   stopped failing), the smallest [`SEEDS_KEPT_MAX`];
/// * a known cluster the sweep did not see, though it ran some of its seeds, is `resolved`,
///   its seeds kept (replayed again next time, so a fix that comes undone is seen);
/// * a known cluster none of whose seeds the sweep ran is left out: it stays as it is.
///
/// `decisions` is kept when the first seed and the scenario are unchanged, else `None` (the
/// caller writes the new first seed's); `shrunk` is always kept. Sorted by cluster.
pub fn update(
    scenario: &str,
    scenario_sha256: &str,
    known: &[&FailureEntry],
    results: &[SeedResult],
) -> Vec<FailureEntry> {
    let mut seen: std::collections::BTreeMap<ClusterKey, BTreeSet<u64>> = Default::default();
    for result in results {
        if let Some(key) = ClusterKey::of(result) {
            seen.entry(key).or_default().insert(result.seed);
        }
    }
    let ran: BTreeSet<u64> = results.iter().map(|r| r.seed).collect();
    let mut out = Vec::new();
    for (cluster, seeds) in &seen {
        let old = known.iter().find(|e| &e.cluster == cluster);
        // An explored entry's seed fails only with its decisions: a sweep that sees the
        // cluster keeps its own seeds instead.
        let not_run = old
            .into_iter()
            .filter(|old| !old.explored)
            .flat_map(|old| old.seeds.iter().filter(|seed| !ran.contains(seed)));
        let all: BTreeSet<u64> = seeds.iter().chain(not_run).copied().collect();
        let seeds: Vec<u64> = all.into_iter().take(SEEDS_KEPT_MAX).collect();
        let keep_decisions = old.is_some_and(|old| {
            !old.explored
                && old.seeds.first() == seeds.first()
                && old.scenario_sha256 == scenario_sha256
        });
        out.push(FailureEntry {
            format: FAILURE_FORMAT.to_string(),
            scenario: scenario.to_string(),
            scenario_sha256: scenario_sha256.to_string(),
            cluster: cluster.clone(),
            status: EntryStatus::Failing,
            seeds,
            decisions: old
                .filter(|_| keep_decisions)
                .and_then(|o| o.decisions.clone()),
            shrunk: old.and_then(|old| old.shrunk.clone()),
            explored: false,
        });
    }
    let judged = |e: &&&FailureEntry| !e.explored && e.seeds.iter().any(|seed| ran.contains(seed));
    for old in known
        .iter()
        .filter(|e| !seen.contains_key(&e.cluster))
        .filter(judged)
    {
        out.push(FailureEntry {
            status: EntryStatus::Resolved,
            ..(*old).clone()
        });
    }
    out.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    out
}

/// Returns the decisions files of `known` entries that their updated versions (`updated`,
/// before the caller writes new decisions) no longer name: a cluster whose first seed
/// changed, or whose scenario changed, gets new decisions, and the old file would be left
/// behind. A file an entry still names as `shrunk` is kept.
pub fn stale_decisions(known: &[&FailureEntry], updated: &[FailureEntry]) -> Vec<String> {
    known
        .iter()
        .filter_map(|old| {
            let file = old.decisions.as_ref()?;
            let new = updated.iter().find(|e| e.cluster == old.cluster)?;
            let named = new.decisions.as_ref() == Some(file)
                || new.shrunk.as_ref().is_some_and(|s| &s.decisions == file);
            (!named).then(|| file.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Reason;

    fn failing(seed: u64, reason: &str) -> SeedResult {
        let mut result = SeedResult::of(
            &simtape::RunSummary::unstarted(seed),
            &crate::Verdict::Fail {
                verifier: "v".into(),
                saw: reason.into(),
            },
            None,
        );
        result.reason = Some(Reason {
            kind: "verifier".into(),
            message: reason.into(),
        });
        result
    }

    fn passing(seed: u64) -> SeedResult {
        SeedResult::of(
            &simtape::RunSummary::unstarted(seed),
            &crate::Verdict::Pass,
            None,
        )
    }

    #[test]
    fn a_sweep_updates_entries_and_a_replay_says_what_became_of_them() {
        // Goal: a cluster seen is failing with its smallest seeds, a known cluster not seen
        // is resolved and keeps its seeds, the shrunk field survives; a replay names
        // still-failing, failing-otherwise and resolved entries.
        let first = update(
            "s",
            "aa",
            &[],
            &(0..40)
                .map(|seed| failing(seed, "lost"))
                .chain([failing(50, "late")])
                .collect::<Vec<_>>(),
        );
        assert_eq!(first.len(), 2);
        assert_eq!(first[1].cluster.reason, "lost");
        assert_eq!(
            first[1].seeds,
            (0..SEEDS_KEPT_MAX as u64).collect::<Vec<_>>()
        );
        let mut lost = first[1].clone();
        let shrunk = ShrunkEntry {
            seed: 0,
            decisions: "s/x.shrunk.json".into(),
        };
        lost.shrunk = Some(shrunk.clone());
        let late = first[0].clone();
        let second = update(
            "s",
            "bb",
            &[&late, &lost],
            &[failing(50, "late"), passing(0)],
        );
        assert_eq!(second[0].status, EntryStatus::Failing);
        assert_eq!(second[1].status, EntryStatus::Resolved);
        assert_eq!(second[1].seeds, lost.seeds);
        assert_eq!(second[1].shrunk, Some(shrunk));
        let replays = [failing(0, "other"), passing(1)];
        let replayed = Replayed::of(&lost, &replays);
        assert_eq!(replayed.outcome, ReplayOutcome::FailsOtherwise);
        assert_eq!(replayed.otherwise, [0]);
        assert_eq!(
            Replayed::of(&late, &[passing(50)]).outcome,
            ReplayOutcome::Resolved
        );
        assert_eq!(
            Replayed::of(&late, &[failing(50, "late")]).outcome,
            ReplayOutcome::StillFails
        );
        // A first seed that changes leaves its old decisions file stale; a kept one does not.
        let mut with_file = late.clone();
        with_file.decisions = Some(with_file.decisions_path(50));
        let moved = update(
            "s",
            "aa",
            &[&with_file],
            &[failing(7, "late"), failing(50, "late")],
        );
        assert_eq!(moved[0].seeds, [7, 50]);
        assert_eq!(
            stale_decisions(&[&with_file], &moved),
            [with_file.decisions_path(50)]
        );
        let kept = update("s", "aa", &[&with_file], &[failing(50, "late")]);
        assert!(stale_decisions(&[&with_file], &kept).is_empty());
        // Another shard's seeds the sweep did not run stay; a cluster none of whose seeds
        // ran is not judged.
        let other_shard = update("s", "aa", &[&with_file, &lost], &[failing(40, "late")]);
        assert_eq!(
            other_shard.len(),
            1,
            "lost's seeds did not run: {other_shard:?}"
        );
        assert_eq!(other_shard[0].seeds, [40, 50]);
    }
}
