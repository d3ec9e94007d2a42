//! `cargo test` helpers: run a pipeline over many seeds; a failure, returned or panicked, names
//! the seed, where it panicked, the one command that replays it and (for `#[simtape::test]`)
//! the tape it left under `target/simtape/`. `docs/testing.md` is the guide.
//! And the guard each crate's one integration-test binary keeps against a test file
//! nobody declared ([`assert_test_files_declared`]).
//!
//! ```
//! use std::time::Duration;
//! simtape::testing::check_seeds(0..20, |seed| {
//!     let mut builder = simtape::Sim::builder();
//!     builder.seed(seed);
//!     let report = builder.build().unwrap().run(|host| async move {
//!         let delay = host.rng("jitter").below(100);
//!         host.sleep(Duration::from_millis(delay)).await;
//!         host.now_ns()
//!     }).unwrap();
//!     assert!(report.output < 100_000_000, "waited {} ns", report.output);
//! });
//! ```
//!
//! The environment picks the seeds: `SIMTAPE_SEED=N` runs only seed `N`, `SIMTAPE_SEEDS=A..B`
//! replaces the range (for a longer nightly sweep); `SIMTAPE_SEED` wins when both are set.
//!
//! `error` holds what can go wrong: [`SeedOverrideError`], [`SeedFailure`], [`TapeKeepError`].

mod error;

use std::any::Any;
use std::cell::RefCell;
use std::fmt::Display;
use std::future::Future;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

pub use self::error::{SeedFailure, SeedOverrideError, TapeKeepError};
use crate::error::SimError;
use crate::sim::{Builder, Host, RunError, RunReport, Sim};

/// The environment variable that narrows a sweep to one seed.
pub const SEED_ENV: &str = "SIMTAPE_SEED";

/// The environment variable that replaces a sweep's seeds with the range `A..B`.
pub const SEEDS_ENV: &str = "SIMTAPE_SEEDS";

/// The seeds of a `#[simtape::test]` that names none: enough to meet the schedules a seed
/// draws, few enough that a small body's sweep takes milliseconds.
pub const SEEDS_DEFAULT: Range<u64> = 0..100;

/// At most this many panic locations are named per failing seed (a panic, then the `unwrap`
/// that turned its error into a second one, is the common case).
const PANIC_LOCATIONS_MAX: usize = 3;

/// What a seed's check returns: `()` (only a panic fails it) or `Result<(), E>`.
pub trait IntoFailure {
    /// Returns the failure's text, or `None` when the check passed.
    fn into_failure(self) -> Option<String>;
}

impl IntoFailure for () {
    fn into_failure(self) -> Option<String> {
        None
    }
}

impl<E: Display> IntoFailure for Result<(), E> {
    fn into_failure(self) -> Option<String> {
        self.err().map(|error| error.to_string())
    }
}

/// The seeds the environment asks for instead of a sweep's own.
///
/// ```
/// use simtape::testing::SeedOverride;
/// let nightly = SeedOverride::parse(None, Some("0..10000")).unwrap();
/// assert_eq!(nightly.select(0..200).count(), 10_000);
/// let one = SeedOverride::parse(Some("17"), Some("0..10000")).unwrap();
/// assert_eq!(one.select(0..200).collect::<Vec<_>>(), vec![17]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeedOverride {
    /// `SIMTAPE_SEED`: run this seed only.
    pub seed: Option<u64>,
    /// `SIMTAPE_SEEDS`: run these seeds instead.
    pub range: Option<Range<u64>>,
}

impl SeedOverride {
    /// Reads `SIMTAPE_SEED` and `SIMTAPE_SEEDS`. A value that is not UTF-8 is read lossily,
    /// so it fails to parse (and is named) rather than being taken as unset.
    pub fn from_env() -> Result<SeedOverride, SeedOverrideError> {
        // Reading the environment is banned in the engine core; this is test tooling that runs
        // around simulations, never inside one, and every seed it picks is printed on failure.
        #[allow(clippy::disallowed_methods)]
        let read = |name| std::env::var_os(name).map(|text| text.to_string_lossy().into_owned());
        let (seed, range) = (read(SEED_ENV), read(SEEDS_ENV));
        SeedOverride::parse(seed.as_deref(), range.as_deref())
    }

    /// Parses the two variables' texts; an error names the variable, its text and the form
    /// it takes.
    pub fn parse(
        seed: Option<&str>,
        range: Option<&str>,
    ) -> Result<SeedOverride, SeedOverrideError> {
        let seed = seed
            .map(|text| {
                parse_seed(text).ok_or_else(|| SeedOverrideError::Seed {
                    value: text.to_string(),
                })
            })
            .transpose()?;
        let range = range
            .map(|text| {
                let (start, end) = text.trim().split_once("..").unwrap_or((text, ""));
                match (parse_seed(start), parse_seed(end)) {
                    (Some(start), Some(end)) if start < end => Ok(start..end),
                    _ => Err(SeedOverrideError::Range {
                        value: text.to_string(),
                    }),
                }
            })
            .transpose()?;
        Ok(SeedOverride { seed, range })
    }

    /// Returns the seeds to run: the one seed, else the range, else `seeds`.
    pub fn select(&self, seeds: impl IntoIterator<Item = u64>) -> impl Iterator<Item = u64> {
        let range = self.range.clone().filter(|_| self.seed.is_none());
        let own = (self.seed.is_none() && self.range.is_none()).then_some(seeds);
        let one = self.seed.into_iter();
        one.chain(range.into_iter().flatten())
            .chain(own.into_iter().flatten())
    }
}

fn parse_seed(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// Runs `check(seed)` for every seed of `seeds` (or the environment's, see [`SeedOverride`])
/// and panics at the first failure, an `Err` or a panic, with the seed, the failure, where it
/// panicked and the replay command.
///
/// # Panics
/// At the first failing seed (that is the point), or when a seed variable is malformed.
#[track_caller]
pub fn check_seeds<R: IntoFailure>(
    seeds: impl IntoIterator<Item = u64>,
    check: impl FnMut(u64) -> R,
) {
    let overrides = SeedOverride::from_env().unwrap_or_else(|error| panic!("{error}"));
    if let Err(message) = sweep(seeds, &overrides, check) {
        panic!("{message}");
    }
    if let Some(message) = unmet_properties() {
        panic!("{message}");
    }
}

/// The logic of [`check_seeds`], with the overrides passed in: returns how many seeds ran, or
/// the first failing seed.
pub fn sweep<R: IntoFailure>(
    seeds: impl IntoIterator<Item = u64>,
    overrides: &SeedOverride,
    mut check: impl FnMut(u64) -> R,
) -> Result<usize, SeedFailure> {
    let test = std::thread::current()
        .name()
        .filter(|name| *name != "main")
        .unwrap_or("TEST_NAME")
        .to_string();
    run_seeds(overrides.select(seeds), &test, |seed| {
        Ok(check(seed).into_failure().map(Failure::returned))
    })
}

/// What `#[simtape::test]` knows about the test it wraps; the macro fills it in.
#[derive(Debug, Clone, Copy)]
pub struct TestSpec<'a> {
    /// `module_path!()::name`; the first segment (the crate) is dropped for the test's name.
    pub path: &'a str,
    /// The test crate's directory (`CARGO_MANIFEST_DIR` when it was compiled).
    pub manifest_dir: &'a str,
    /// Where a failing seed's tape goes; `{name}` and `{seed}` are replaced, a relative path
    /// is taken from `manifest_dir`. `None`: `<target dir>/simtape/{name}-{seed}.tape`.
    pub tape: Option<&'a str>,
    /// Configures each seed's builder (capabilities, limits, start instant) before the seed
    /// and the tape are set.
    pub configure: Option<fn(&mut Builder)>,
}

impl TestSpec<'_> {
    /// Returns the name `cargo test NAME -- --exact` knows the test by.
    pub fn name(&self) -> &str {
        self.path
            .split_once("::")
            .map_or(self.path, |(_, name)| name)
    }

    /// Returns where the tape of a failing `seed` is kept.
    pub fn tape_path(&self, seed: u64) -> PathBuf {
        let file_name = self.name().replace("::", "__");
        let template = match self.tape {
            Some(template) => Path::new(self.manifest_dir).join(template),
            None => target_dir(Path::new(self.manifest_dir)).join("simtape/{name}-{seed}.tape"),
        };
        let path = template.to_string_lossy();
        PathBuf::from(
            path.replace("{name}", &file_name)
                .replace("{seed}", &seed.to_string()),
        )
    }
}

/// Runs the body of a `#[simtape::test]` as the main task of one simulation per seed and
/// panics at the first failing seed, keeping its tape (see [`run_test_with`]).
///
/// # Panics
/// At the first failing seed, or when a seed variable is malformed.
#[track_caller]
pub fn run_test<F, Fut, R>(spec: TestSpec<'_>, seeds: impl IntoIterator<Item = u64>, body: F)
where
    F: Fn(Host) -> Fut,
    Fut: Future<Output = R> + 'static,
    R: IntoFailure + 'static,
{
    let overrides = SeedOverride::from_env().unwrap_or_else(|error| panic!("{error}"));
    if let Err(message) = run_test_with(&spec, seeds, &overrides, body) {
        panic!("{message}");
    }
    if let Some(message) = unmet_properties() {
        panic!("{message}");
    }
}

/// The logic of [`run_test`], with the overrides passed in: returns how many seeds ran, or the
/// first failing seed, with its tape kept. A seed fails when the body panics (inside the simulation: a task panic),
/// returns an `Err`, or the run ends in error (a deadlock, a limit).
pub fn run_test_with<F, Fut, R>(
    spec: &TestSpec<'_>,
    seeds: impl IntoIterator<Item = u64>,
    overrides: &SeedOverride,
    body: F,
) -> Result<usize, SeedFailure>
where
    F: Fn(Host) -> Fut,
    Fut: Future<Output = R> + 'static,
    R: IntoFailure + 'static,
{
    run_seeds(overrides.select(seeds), spec.name(), |seed| {
        let mut builder = Sim::builder();
        if let Some(configure) = spec.configure {
            configure(&mut builder);
        }
        // Every seed writes its tape to memory and only a failing one goes to disk: the file
        // is then the very run that failed (no second run, which could repeat real side
        // effects of record modes or, for a nondeterministic body, not fail at all), and a
        // passing seed costs the in-memory encoding only.
        builder.seed(seed).tape_in_memory();
        let sim = builder.build().map_err(|error| {
            Failure::returned(format!("the simulation could not be built: {error}"))
        })?;
        let failure = match sim.run(&body) {
            Ok(RunReport {
                output, summary, ..
            }) => output.into_failure().map(|message| {
                let tape = summary.tape.and_then(|t| t.memory);
                (Failure::returned(message), tape)
            }),
            Err(error) => Some(run_failure(error)),
        };
        Ok(failure.map(|(failure, tape)| failure.keep_tape(tape, &spec.tape_path(seed))))
    })
}

fn run_failure(error: RunError) -> (Failure, Option<Vec<u8>>) {
    let failure = match *error.error {
        SimError::TaskPanicked { .. } => Failure::panicked(error.to_string()),
        _ => Failure::returned(error.to_string()),
    };
    (failure, error.summary.tape.and_then(|tape| tape.memory))
}

/// Why one seed failed, before [`run_seeds`] names the seed and the places it panicked.
#[derive(Debug)]
struct Failure {
    message: String,
    /// Whether it panicked (then [`run_seeds`] fills in where).
    panicked: bool,
    /// The kept tape, or why there is none.
    tape: Option<Result<PathBuf, TapeKeepError>>,
}

impl Failure {
    fn returned(message: String) -> Failure {
        Failure {
            message,
            panicked: false,
            tape: None,
        }
    }

    fn panicked(message: String) -> Failure {
        Failure {
            panicked: true,
            ..Failure::returned(message)
        }
    }

    fn keep_tape(mut self, bytes: Option<Vec<u8>>, path: &Path) -> Failure {
        let kept = match bytes {
            None => Err(TapeKeepError::Unfinished),
            Some(bytes) => path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(path, bytes))
                .map(|()| path.to_path_buf())
                .map_err(|source| TapeKeepError::Write {
                    path: path.to_path_buf(),
                    source,
                }),
        };
        self.tape = Some(kept);
        self
    }

    /// Names the seed, the test and (for a panic) the places it panicked at.
    fn of_seed(self, seed: u64, test: &str, panicked_at: Vec<String>) -> SeedFailure {
        SeedFailure {
            seed,
            test: test.to_string(),
            message: self.message,
            panicked_at: if self.panicked {
                panicked_at
            } else {
                Vec::new()
            },
            tape: self.tape,
        }
    }
}

/// Runs `run_seed` for each seed until one fails; a panic out of it fails the seed too.
/// Returns how many seeds ran, or the report of the failing one.
fn run_seeds(
    seeds: impl Iterator<Item = u64>,
    test: &str,
    run_seed: impl FnMut(u64) -> Result<Option<Failure>, Failure>,
) -> Result<usize, SeedFailure> {
    watch_panic_locations();
    COLLECTED.with(|collected| *collected.borrow_mut() = Some(Collected::default()));
    SWEEPING.with(|sweeping| sweeping.set(true));
    let ran = seed_loop(seeds, test, run_seed);
    SWEEPING.with(|sweeping| sweeping.set(false));
    ran
}

fn seed_loop(
    seeds: impl Iterator<Item = u64>,
    test: &str,
    mut run_seed: impl FnMut(u64) -> Result<Option<Failure>, Failure>,
) -> Result<usize, SeedFailure> {
    let mut ran = 0;
    for seed in seeds {
        PANICKED_AT.with(|at| at.borrow_mut().clear());
        let failure = match catch_unwind(AssertUnwindSafe(|| run_seed(seed))) {
            Ok(Ok(None)) => None,
            Ok(Ok(Some(failure)) | Err(failure)) => Some(failure),
            Err(payload) => Some(Failure::panicked(panic_text(payload.as_ref()))),
        };
        ran += 1;
        if let Some(failure) = failure {
            let panicked_at = PANICKED_AT.with(|at| at.take());
            return Err(failure.of_seed(seed, test, panicked_at));
        }
    }
    Ok(ran)
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    let text = payload.downcast_ref::<&str>().copied();
    text.map(str::to_string)
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic whose payload is not text".to_string())
}

/// Notes the properties one run evaluated, while a sweep of this thread runs its seeds
/// ([`Sim::run`] calls this as the run ends; outside a sweep it keeps nothing).
pub(crate) fn collect_properties(properties: &[crate::property::Evaluated]) {
    if !SWEEPING.with(std::cell::Cell::get) {
        return;
    }
    COLLECTED.with(|collected| {
        if let Some(collected) = collected.borrow_mut().as_mut() {
            collected.runs += 1;
            for property in properties {
                match collected
                    .hits
                    .iter_mut()
                    .find(|(name, ..)| *name == property.name)
                {
                    Some(known) => known.2 |= property.hit,
                    None => {
                        collected
                            .hits
                            .push((property.name.clone(), property.kind, property.hit))
                    }
                }
            }
        }
    });
}

/// After a sweep of this thread: the report of every `sometimes!` or `reachable!` that no seed
/// hit, or `None` when each was hit (or none was evaluated). Ends the collection.
pub fn unmet_properties() -> Option<String> {
    let collected = COLLECTED.with(|collected| collected.borrow_mut().take())?;
    let unmet: Vec<String> = collected
        .hits
        .iter()
        .filter(|(_, kind, hit)| kind.needs_a_hit() && !hit)
        .map(|(name, kind, _)| format!("{kind} property {name:?}"))
        .collect();
    (!unmet.is_empty()).then(|| {
        format!(
            "{} never hit in {} run(s): the seeds never reached what it names",
            unmet.join(", "),
            collected.runs
        )
    })
}

/// The properties a sweep's runs evaluated: per name, its kind and whether any run hit it.
#[derive(Default)]
struct Collected {
    runs: usize,
    hits: Vec<(String, crate::property::PropertyKind, bool)>,
}

thread_local! {
    /// Each run's properties while a sweep on this thread collects them (`run_seeds`); test
    /// tooling like `PANICKED_AT`, read by nothing in a run.
    static COLLECTED: RefCell<Option<Collected>> = const { RefCell::new(None) };
    /// Whether a sweep on this thread is running its seeds.
    static SWEEPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Where this thread panicked since its current seed started (written by the hook).
    static PANICKED_AT: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Installs, once per process, a panic hook that notes each panic's location for the
/// failure report (a panic's payload carries no location) and then calls the hook it
/// replaced, so the usual panic output is unchanged. Process-wide, and so outside the
/// engine's no-global-state rule: it is test tooling, and it only ever writes the
/// panicking thread's own list, which nothing in a run reads.
fn watch_panic_locations() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(location) = info.location() {
                let _ = PANICKED_AT.try_with(|at| {
                    if let Ok(mut at) = at.try_borrow_mut() {
                        if at.len() < PANIC_LOCATIONS_MAX {
                            at.push(location.to_string());
                        }
                    }
                });
            }
            previous(info);
        }));
    });
}

/// Returns the directory cargo builds into: `$CARGO_TARGET_DIR` when it is an absolute path,
/// else the one holding the running test executable (`<target>/<profile>/deps/<test>`), else
/// `<manifest_dir>/target`. A relative `$CARGO_TARGET_DIR` is skipped: it is relative to
/// wherever cargo was started, which a test cannot know.
pub fn target_dir(manifest_dir: &Path) -> PathBuf {
    // Test tooling, as in `SeedOverride::from_env`: where to keep a failing tape.
    #[allow(clippy::disallowed_methods)]
    let from_env = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from);
    let from_exe = || {
        let exe = std::env::current_exe().ok()?;
        let dir = exe.parent()?;
        if !matches!(dir.file_name()?.to_str()?, "deps" | "examples") {
            return None;
        }
        dir.parent()?.parent().map(Path::to_path_buf)
    };
    from_env
        .filter(|dir| dir.is_absolute())
        .or_else(from_exe)
        .unwrap_or_else(|| manifest_dir.join("target"))
}

/// Asserts that every `.rs` file beside an integration-test binary's `main.rs` in `dir` is
/// declared there as `mod <name>;`. Cargo builds only what `main.rs` declares, so a file
/// that is not would never compile or run, silently.
///
/// ```
/// // Each crate's tests/integration/main.rs calls it from a #[test]:
/// let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
/// simtape::testing::assert_test_files_declared(&dir);
/// ```
///
/// # Panics
/// Naming the first file that is not declared, or when `dir` or its `main.rs` cannot be read.
pub fn assert_test_files_declared(dir: &Path) {
    let main = std::fs::read_to_string(dir.join("main.rs"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("main.rs").display()));
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let name = entry.expect("a directory entry").file_name();
        let name = name.to_string_lossy();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        assert!(
            module == "main" || main.contains(&format!("mod {module};")),
            "{name} is not declared in {}",
            dir.join("main.rs").display()
        );
    }
}

/// Returns a scratch directory for one of the core's unit tests, `<temp>/simtape-<name>-<pid>`
/// (not created). Unit tests run outside any simulation and their files reach no tape, so the
/// ban on the host's temp dir does not apply; this is its one exception.
#[cfg(test)]
#[allow(clippy::disallowed_methods)]
pub(crate) fn unit_test_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("simtape-{name}-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failure_names_the_seed_and_the_replay_command() {
        // Goal: the first failing seed is reported with an env-var command naming this test.
        let failure = sweep(0..10, &SeedOverride::default(), |seed| {
            if seed == 7 {
                Err("boom")
            } else {
                Ok(())
            }
        });
        let message = failure.unwrap_err().to_string();
        assert!(message.starts_with("seed 7 failed: boom"), "{message}");
        assert!(
            message.contains(
                "SIMTAPE_SEED=7 cargo test testing::tests::the_failure_names_the_seed_and_the_replay_command"
            ),
            "{message}"
        );
        let mut seen = Vec::new();
        let only = SeedOverride::parse(Some("3"), None).unwrap();
        let ran = sweep(0..10, &only, |seed| seen.push(seed));
        assert_eq!((ran.unwrap(), seen), (1, vec![3]));
    }

    #[test]
    fn malformed_seed_variables_are_named_with_what_they_expect() {
        // Goal: a bad SIMTAPE_SEED or SIMTAPE_SEEDS is an error naming the variable, its text
        // and the form it takes.
        let bad_seed = SeedOverride::parse(Some("seven"), Some("0..5")).unwrap_err();
        assert_eq!(
            bad_seed,
            SeedOverrideError::Seed {
                value: "seven".into()
            }
        );
        assert_eq!(
            (bad_seed.variable(), bad_seed.value(), bad_seed.expected()),
            ("SIMTAPE_SEED", "seven", "a seed (a u64)")
        );
        assert_eq!(
            bad_seed.to_string(),
            "SIMTAPE_SEED=\"seven\" is not a seed (a u64)"
        );
        for text in [
            "5",
            "9..3",
            "3..3",
            "a..b",
            "..4",
            "1..18446744073709551616",
        ] {
            let error = SeedOverride::parse(Some("1"), Some(text)).unwrap_err();
            let value = text.to_string();
            assert_eq!(error, SeedOverrideError::Range { value });
            assert_eq!(error.variable(), "SIMTAPE_SEEDS");
            assert_eq!(
                error.to_string(),
                format!("SIMTAPE_SEEDS={text:?} is not a seed range (A..B with A < B, B excluded)")
            );
        }
        let range = SeedOverride::parse(None, Some(" 4..7 ")).unwrap();
        assert_eq!(range.select(0..100).collect::<Vec<_>>(), vec![4, 5, 6]);
    }

    #[test]
    fn a_failing_seed_reports_each_place_and_why_its_tape_is_missing() {
        // Goal: a seed failure renders every part it has; a tape that cannot be kept says
        // why (never finished, or the write failed at a named path) instead of failing.
        let dir = crate::testing::unit_test_dir("keep");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let blocker = dir.join("a-file");
        std::fs::write(&blocker, "").unwrap();
        let failure =
            |tape| Failure::panicked("boom".into()).keep_tape(tape, &blocker.join("1.tape"));
        let unwritable = failure(Some(vec![1])).of_seed(1, "t", vec!["a.rs:1:1".into()]);
        let Some(Err(TapeKeepError::Write { path, .. })) = &unwritable.tape else {
            panic!("{unwritable:?}");
        };
        assert_eq!(path, &blocker.join("1.tape"));
        let report = unwritable.to_string();
        let expected_start = format!(
            "seed 1 failed: boom\n  panicked at: a.rs:1:1\n  replay it alone: SIMTAPE_SEED=1 \
             cargo test t -- --exact\n  no tape: could not write {}: ",
            blocker.join("1.tape").display()
        );
        assert!(report.starts_with(&expected_start), "{report}");
        let unfinished = failure(None).of_seed(2, "t", Vec::new());
        assert!(matches!(
            unfinished.tape,
            Some(Err(TapeKeepError::Unfinished))
        ));
        assert!(
            unfinished
                .to_string()
                .ends_with("-- --exact\n  no tape: the run's tape could not be finished"),
            "{unfinished}"
        );
        let returned = Failure::returned("no".into()).of_seed(3, "t", vec!["b.rs:2:2".into()]);
        assert!(returned.panicked_at.is_empty(), "only a panic names places");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_test_name_drops_the_crate_and_names_the_tape() {
        // Goal: `krate::tests::name` replays as `tests::name`; its tape template is filled in.
        let spec = TestSpec {
            path: "krate::tests::slow_reply",
            manifest_dir: "/home/user/krate",
            tape: Some("tapes/{name}/{seed}.tape"),
            configure: None,
        };
        assert_eq!(spec.name(), "tests::slow_reply");
        assert_eq!(
            spec.tape_path(12),
            Path::new("/home/user/krate/tapes/tests__slow_reply/12.tape")
        );
        let top_level = TestSpec {
            path: "fixture::fails",
            ..spec
        };
        assert_eq!(top_level.name(), "fails");
    }

    #[test]
    fn a_test_file_main_rs_does_not_declare_is_named() {
        // Goal: the guard passes when every file is declared and names the one that is not.
        let dir = crate::testing::unit_test_dir("guard");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.rs"), "mod declared;\n").unwrap();
        std::fs::write(dir.join("declared.rs"), "").unwrap();
        std::fs::write(dir.join("notes.txt"), "").unwrap();
        assert_test_files_declared(&dir);
        std::fs::write(dir.join("forgotten.rs"), "").unwrap();
        let panic = std::panic::catch_unwind(|| assert_test_files_declared(&dir)).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.starts_with("forgotten.rs is not declared in"),
            "{message}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
