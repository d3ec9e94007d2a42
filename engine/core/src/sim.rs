//! `Sim` and its `Builder`: wire the seed, the start instant, the limits, the tape and the
//! actors, then run a pipeline.

use std::any::Any;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use crate::actor::{
    Actor, ActorRef, ActorSlot, Clock, ClockRequest, Events, UserEvent, BUILTIN_ACTORS,
    CLOCK_ACTOR, EVENTS_ACTOR,
};
use crate::capabilities::Capabilities;
use crate::error::SimError;
use crate::executor::{self, Core, JoinHandle, LoopEnd};
use crate::inbox::{ErasedInbox, Inbox, InboxState, Input, Outbox, OutboxState};
use crate::limits::Limits;
use crate::recorder::Recorder;
use crate::rng::RngStream;
use crate::run::Run;
use crate::summary::RunSummary;
use crate::tape::{
    sidecar_dir, BlobMode, InputStore, Inputs, ScenarioStamp, TapeHeader, TapeSink, TapeWriter,
    BLOB_THRESHOLD_DEFAULT_BYTES, CHECKPOINT_INTERVAL_RECORDS, FORMAT_VERSION,
};
use crate::time::START_DEFAULT_UNIX_NS;

#[derive(Debug, Clone)]
enum TapeTarget {
    None,
    File(PathBuf),
    Memory,
}

type ActorFactory = Rc<dyn Fn() -> Box<dyn Any>>;

/// Configures runs. One builder can build many runs (a sweep, a double run).
///
/// ```
/// let mut builder = simtape::Sim::builder();
/// builder.seed(7).start_at("2026-03-01T12:00:00Z").unwrap();
/// let report = builder.build().unwrap().run(|host| async move {
///     host.sleep(std::time::Duration::from_millis(5)).await;
///     host.now_ns()
/// }).unwrap();
/// assert_eq!(report.output, 5_000_000);
/// ```
#[derive(Clone)]
pub struct Builder {
    seed: u64,
    start_unix_ns: i64,
    limits: Limits,
    tape: TapeTarget,
    sidecar_blobs: bool,
    blob_threshold_bytes: usize,
    scenario: ScenarioStamp,
    sandbox: Option<String>,
    decisions: Option<Arc<crate::decision::DecisionBook>>,
    decisions_digest: Option<String>,
    branch: Option<crate::tape::Branch>,
    inputs: Option<Arc<Inputs>>,
    inputs_store: Option<InputStore>,
    actors: Vec<(String, ActorFactory)>,
    /// The actor ids of the registered inboxes.
    inboxes: Vec<u16>,
    pub(crate) capabilities: Capabilities,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("seed", &self.seed)
            .field("start_unix_ns", &self.start_unix_ns)
            .field("tape", &self.tape)
            .finish_non_exhaustive()
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            seed: 0,
            start_unix_ns: START_DEFAULT_UNIX_NS,
            limits: Limits::default(),
            tape: TapeTarget::None,
            sidecar_blobs: false,
            blob_threshold_bytes: BLOB_THRESHOLD_DEFAULT_BYTES,
            scenario: ScenarioStamp::default(),
            sandbox: None,
            decisions: None,
            decisions_digest: None,
            branch: None,
            inputs: None,
            inputs_store: None,
            actors: Vec::new(),
            inboxes: Vec::new(),
            capabilities: Capabilities::default(),
        }
    }
}

impl Builder {
    /// Sets the root seed (default 0).
    pub fn seed(&mut self, seed: u64) -> &mut Self {
        self.seed = seed;
        self
    }

    /// Sets the start instant from RFC 3339 text (default `2026-01-01T00:00:00Z`).
    pub fn start_at(&mut self, instant: &str) -> Result<&mut Self, SimError> {
        self.start_unix_ns = crate::time::parse_instant(instant)
            .map_err(|error| SimError::Config(error.to_string()))?;
        Ok(self)
    }

    /// Sets the start instant in nanoseconds since the Unix epoch.
    pub fn start_unix_ns(&mut self, unix_ns: i64) -> &mut Self {
        self.start_unix_ns = unix_ns;
        self
    }

    /// Sets the limits.
    pub fn limits(&mut self, limits: Limits) -> &mut Self {
        self.limits = limits;
        self
    }

    /// Streams the tape to the file at `path`.
    pub fn tape(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.tape = TapeTarget::File(path.as_ref().to_path_buf());
        self
    }

    /// Keeps the tape in memory; [`crate::RunSummary::tape`] holds its bytes.
    pub fn tape_in_memory(&mut self) -> &mut Self {
        self.tape = TapeTarget::Memory;
        self
    }

    /// Writes no tape (the run still keeps a fingerprint of every record).
    pub fn no_tape(&mut self) -> &mut Self {
        self.tape = TapeTarget::None;
        self
    }

    /// Stores large payloads in `<tape>.cas/` beside a file tape instead of inside it.
    pub fn sidecar_blobs(&mut self, sidecar: bool) -> &mut Self {
        self.sidecar_blobs = sidecar;
        self
    }

    /// Sets the payload size above which payloads go to the content store.
    pub fn blob_threshold_bytes(&mut self, bytes: usize) -> &mut Self {
        self.blob_threshold_bytes = bytes;
        self
    }

    /// Stamps the tape header with the scenario the run comes from.
    pub fn scenario(&mut self, stamp: ScenarioStamp) -> &mut Self {
        self.scenario = stamp;
        self
    }

    /// Takes the run's random choices through `book` (see [`crate::decision`]). With a
    /// `digest` (of the decisions file), the tape header carries it and the overrides, so the
    /// tape replays alone; without one the header is unchanged (a book that only logs).
    pub fn decisions(
        &mut self,
        book: Arc<crate::decision::DecisionBook>,
        digest: Option<String>,
    ) -> &mut Self {
        self.decisions = Some(book);
        self.decisions_digest = digest;
        self
    }

    /// Names, in the header's decisions stamp, the run this one was forked from (with
    /// [`Builder::decisions`] and a digest).
    pub fn branch(&mut self, branch: crate::tape::Branch) -> &mut Self {
        self.branch = Some(branch);
        self
    }

    /// Names, on the tape header, how the programs the run starts outside the simulation are
    /// contained (`"namespaces"`, `"off"`); a run that starts none leaves it unset.
    pub fn sandbox(&mut self, label: &str) -> &mut Self {
        self.sandbox = Some(label.to_string());
        self
    }

    /// Writes `inputs` (the files the run reads) after the tape's footer, so the tape replays
    /// on its own. Their files go where the payload blobs go (inside the tape, or
    /// `<tape>.cas/` with [`Builder::sidecar_blobs`]) unless [`Builder::inputs_store`] says
    /// otherwise. The records are the same bytes with or without them.
    pub fn inputs(&mut self, inputs: Arc<Inputs>) -> &mut Self {
        self.inputs = Some(inputs);
        self
    }

    /// Keeps the files of [`Builder::inputs`] as `store` says (a sweep's kept tapes share one
    /// content directory).
    pub fn inputs_store(&mut self, store: InputStore) -> &mut Self {
        self.inputs_store = Some(store);
        self
    }

    /// Registers an actor under `name`; each run gets a fresh clone of `actor` and an RNG
    /// stream forked from `(seed, name)`.
    ///
    /// # Panics
    /// When `name` is already taken or more than 65,535 actors are registered.
    pub fn actor<A: Actor + Clone>(&mut self, name: &str, actor: A) -> ActorRef<A> {
        ActorRef::new(self.register(name, Rc::new(move || Box::new(actor.clone()))))
    }

    /// Registers an inbox under `name`: the door through which the driver of an open run
    /// ([`Sim::start`]) delivers input of type `M` (see [`crate::inbox`]).
    ///
    /// # Panics
    /// When `name` is already taken or more than 65,535 actors are registered.
    pub fn inbox<M: Input>(&mut self, name: &str) -> Inbox<M> {
        let id = self.register(
            name,
            Rc::new(|| {
                let erased: ErasedInbox = Box::new(InboxState::<M>::new());
                Box::new(erased)
            }),
        );
        self.inboxes.push(id);
        Inbox::new(id)
    }

    /// Registers an outbox under `name`: where the run's tasks leave output of type `M` for
    /// the driver of an open run (see [`crate::inbox`]).
    ///
    /// # Panics
    /// When `name` is already taken or more than 65,535 actors are registered.
    pub fn outbox<M: 'static>(&mut self, name: &str) -> Outbox<M> {
        let id = self.register(
            name,
            Rc::new(|| {
                Box::new(OutboxState::<M> {
                    queue: std::collections::VecDeque::new(),
                })
            }),
        );
        Outbox::new(id)
    }

    fn register(&mut self, name: &str, factory: ActorFactory) -> u16 {
        assert!(
            !BUILTIN_ACTORS.contains(&name) && self.actors.iter().all(|(n, _)| n != name),
            "actor name {name:?} is already taken"
        );
        let id = u16::try_from(BUILTIN_ACTORS.len() + self.actors.len())
            .expect("fewer than 65,536 actors");
        self.actors.push((name.to_string(), factory));
        id
    }

    /// Returns the configured seed.
    pub fn seed_value(&self) -> u64 {
        self.seed
    }

    /// Replaces the prototype of the registered `actor` with `change` of it; each run then
    /// clones the changed actor (so state shared across clones, like a cache, stays shared).
    pub(crate) fn update_actor<A: Actor + Clone>(
        &mut self,
        actor: ActorRef<A>,
        change: impl FnOnce(A) -> A,
    ) {
        let index = usize::from(actor.id()) - BUILTIN_ACTORS.len();
        let factory = &mut self.actors[index].1;
        let current = *factory()
            .downcast::<A>()
            .expect("an ActorRef's type matches its factory");
        let changed = change(current);
        *factory = Rc::new(move || Box::new(changed.clone()));
    }

    /// Returns the configured limits.
    pub(crate) fn limits_value(&self) -> &Limits {
        &self.limits
    }

    fn actor_names(&self) -> Vec<String> {
        BUILTIN_ACTORS
            .iter()
            .map(|s| s.to_string())
            .chain(self.actors.iter().map(|(n, _)| n.clone()))
            .collect()
    }

    fn header(&self) -> TapeHeader {
        TapeHeader {
            format_version: FORMAT_VERSION,
            engine_version: env!("CARGO_PKG_VERSION").to_string(),
            seed: self.seed,
            start_unix_ns: self.start_unix_ns,
            scenario: self.scenario.clone(),
            actors: self.actor_names(),
            blob_mode: if self.sidecar_blobs {
                "sidecar"
            } else {
                "embedded"
            }
            .to_string(),
            blob_threshold_bytes: self.blob_threshold_bytes as u64,
            checkpoint_interval_records: CHECKPOINT_INTERVAL_RECORDS,
            sandbox: self.sandbox.clone(),
            decisions: match (&self.decisions, &self.decisions_digest) {
                (Some(book), Some(digest)) => Some(crate::tape::DecisionsStamp {
                    digest: digest.clone(),
                    overrides: book.overrides(),
                    branch: self.branch.clone(),
                }),
                _ => None,
            },
        }
    }

    fn writer(&self) -> Result<Option<TapeWriter>, SimError> {
        let (sink, blob_mode) = match &self.tape {
            TapeTarget::None => return Ok(None),
            TapeTarget::Memory => (TapeSink::Memory(Vec::new()), BlobMode::Embedded),
            TapeTarget::File(path) => {
                let mode = if self.sidecar_blobs {
                    BlobMode::Sidecar(sidecar_dir(path))
                } else {
                    BlobMode::Embedded
                };
                (TapeSink::create(path)?, mode)
            }
        };
        let writer = TapeWriter::new(sink, &self.header(), blob_mode, self.limits.tape_bytes_max)?;
        let Some(inputs) = &self.inputs else {
            return Ok(Some(writer));
        };
        let store = match (&self.inputs_store, &self.tape) {
            (Some(store), _) => store.clone(),
            (None, TapeTarget::File(path)) if self.sidecar_blobs => {
                let dir = sidecar_dir(path);
                let relative = dir
                    .file_name()
                    .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
                InputStore::Sidecar {
                    relative,
                    dir: Some(dir),
                }
            }
            (None, _) => InputStore::Embedded,
        };
        Ok(Some(writer.with_inputs(Arc::clone(inputs), store)))
    }

    /// Builds one run. The tape file, if any, is created now.
    pub fn build(&mut self) -> Result<Sim, SimError> {
        let writer = self.writer()?;
        let recorder = Recorder::new(writer, self.limits.payload_bytes_max);
        let mut actors: Vec<ActorSlot> = Vec::new();
        let builtin: [Box<dyn Any>; 3] =
            [Box::new(()), Box::new(Clock), Box::new(Events::default())];
        for (name, state) in BUILTIN_ACTORS.iter().zip(builtin) {
            actors.push(ActorSlot {
                name: name.to_string(),
                rng: RngStream::fork_decided(self.seed, name, self.decisions.clone()),
                state: Some(state),
            });
        }
        for (name, factory) in &self.actors {
            actors.push(ActorSlot {
                name: name.clone(),
                rng: RngStream::fork_decided(self.seed, name, self.decisions.clone()),
                state: Some(factory()),
            });
        }
        let mut core = Core::new(
            self.seed,
            self.start_unix_ns,
            self.limits.clone(),
            recorder,
            actors,
        );
        core.inboxes.clone_from(&self.inboxes);
        core.decisions.clone_from(&self.decisions);
        Ok(Sim {
            core,
            tape_path: self.tape_file(),
            capabilities: self.capabilities.clone(),
            decisions: self.decisions.clone(),
        })
    }

    fn tape_file(&self) -> Option<PathBuf> {
        match &self.tape {
            TapeTarget::File(path) => Some(path.clone()),
            _ => None,
        }
    }
}

/// One simulation run, ready to go.
pub struct Sim {
    core: Core,
    tape_path: Option<PathBuf>,
    capabilities: Capabilities,
    decisions: Option<Arc<crate::decision::DecisionBook>>,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("seed", &self.core.seed)
            .finish_non_exhaustive()
    }
}

/// What a completed run returns.
#[derive(Debug)]
pub struct RunReport<T> {
    /// The pipeline's output.
    pub output: T,
    /// The seed, time, counts, fingerprint and tape of the run.
    pub summary: RunSummary,
    /// The actors' final states (the fs overlay and its diff, a world state, …).
    pub actors: ActorStates,
    /// The capability actors the run was built with, to find their states in `actors`.
    pub capabilities: Capabilities,
}

/// The final states of a run's actors, taken out of the simulation when it ends.
#[derive(Default)]
pub struct ActorStates {
    states: Vec<Option<Box<dyn Any>>>,
}

impl std::fmt::Debug for ActorStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActorStates")
            .field("actors", &self.states.len())
            .finish()
    }
}

impl ActorStates {
    /// Returns the final state of `actor`, if it is of type `A`.
    pub fn get<A: 'static>(&self, actor: ActorRef<A>) -> Option<&A> {
        self.states
            .get(usize::from(actor.id()))?
            .as_ref()?
            .downcast_ref::<A>()
    }

    /// Takes the final state of `actor` out of the report.
    pub fn take<A: 'static>(&mut self, actor: ActorRef<A>) -> Option<A> {
        let slot = self.states.get_mut(usize::from(actor.id()))?;
        match slot.take()?.downcast::<A>() {
            Ok(state) => Some(*state),
            Err(other) => {
                *slot = Some(other);
                None
            }
        }
    }
}

/// A run that ended with an error; its tape (if any) is complete, with the error as verdict.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RunError {
    /// What stopped the run (boxed: it keeps `Result<_, RunError>` small).
    pub error: Box<SimError>,
    /// The seed, time, counts and fingerprint as far as the run got, and its tape when one
    /// was written and could be finished (boxed to keep the error small).
    pub summary: Box<RunSummary>,
    /// The actors' final states, as far as the run got.
    pub actors: ActorStates,
}

impl Sim {
    /// Starts configuring a run.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Runs `pipeline` as the main task until it completes; the tape's footer verdict is
    /// `ok` or the error.
    pub fn run<F, Fut, T>(self, pipeline: F) -> Result<RunReport<T>, RunError>
    where
        F: FnOnce(Host) -> Fut,
        Fut: Future<Output = T> + 'static,
        T: 'static,
    {
        self.run_with_verdict(pipeline, |outcome| match outcome {
            Ok(_) => "ok".to_string(),
            Err(error) => format!("error: {error}"),
        })
    }

    /// Runs `pipeline` and writes `verdict(outcome)` into the tape footer.
    pub fn run_with_verdict<F, Fut, T>(
        self,
        pipeline: F,
        verdict: impl FnOnce(Result<&T, &SimError>) -> String,
    ) -> Result<RunReport<T>, RunError>
    where
        F: FnOnce(Host) -> Fut,
        Fut: Future<Output = T> + 'static,
        T: 'static,
    {
        let (core, main, failure, tape_path, capabilities) = self.spawn_main(pipeline);
        let (core, end) = match failure {
            Some(error) => (core, LoopEnd::Failed(error)),
            None => executor::run_to_end(core, &main),
        };
        finish_run(core, main, end, tape_path, capabilities, verdict)
    }

    /// Starts an open run: spawns `pipeline` as the main task, runs it until nothing is
    /// runnable at time zero, and hands the run to its driver (see [`crate::run`]).
    pub fn start<F, Fut, T>(self, pipeline: F) -> Run<T>
    where
        F: FnOnce(Host) -> Fut,
        Fut: Future<Output = T> + 'static,
        T: 'static,
    {
        let (core, main, failure, tape_path, capabilities) = self.spawn_main(pipeline);
        Run::new(core, main, failure, tape_path, capabilities)
    }

    #[allow(clippy::type_complexity)]
    fn spawn_main<F, Fut, T>(
        self,
        pipeline: F,
    ) -> (
        Core,
        JoinHandle<T>,
        Option<SimError>,
        Option<PathBuf>,
        Capabilities,
    )
    where
        F: FnOnce(Host) -> Fut,
        Fut: Future<Output = T> + 'static,
        T: 'static,
    {
        let host = Host {
            seed: self.core.seed,
            start_unix_ns: self.core.start_unix_ns,
            capabilities: self.capabilities.clone(),
            decisions: self.decisions.clone(),
        };
        let (core, main, failure) = executor::start(self.core, pipeline(host));
        (core, main, failure, self.tape_path, self.capabilities)
    }
}

/// Ends a run: tears it down (taking the main task's output), writes the footer with
/// `verdict(outcome)`, and builds the report or the error.
pub(crate) fn finish_run<T: 'static>(
    core: Core,
    main: JoinHandle<T>,
    end: LoopEnd,
    tape_path: Option<PathBuf>,
    capabilities: Capabilities,
    verdict: impl FnOnce(Result<&T, &SimError>) -> String,
) -> Result<RunReport<T>, RunError> {
    let (mut core, output) = executor::teardown(core, main);
    let seed = core.seed;
    let (end_ns, events) = (core.now_ns, core.events());
    let outcome = match (end, output) {
        (LoopEnd::Finished, Some(output)) => Ok(output),
        (LoopEnd::Finished, None) => unreachable!("a finished main task has an output"),
        (LoopEnd::Failed(error), _) => Err(error),
        (LoopEnd::Paused | LoopEnd::AwaitingInput(_), _) => {
            unreachable!("a run is finished only once its loop ended")
        }
    };
    let verdict_text = verdict(outcome.as_ref());
    let tape = core
        .recorder
        .writer
        .take()
        .map(|w| w.finish(end_ns, &verdict_text))
        .transpose();
    let (records, fingerprint) = (core.recorder.records(), core.recorder.fingerprint());
    let properties = std::mem::take(&mut core.properties);
    crate::testing::collect_properties(&properties);
    let actors = ActorStates {
        states: core
            .actors
            .iter_mut()
            .map(|slot| slot.state.take())
            .collect(),
    };
    let summary = |tape| RunSummary {
        seed,
        end_ns,
        events,
        records,
        fingerprint,
        tape,
        tape_path,
        properties: properties.clone(),
    };
    match (outcome, tape) {
        (Ok(output), Ok(tape)) => Ok(RunReport {
            output,
            summary: summary(tape),
            actors,
            capabilities,
        }),
        (Ok(_), Err(tape_error)) => Err(RunError {
            error: Box::new(SimError::Tape(tape_error)),
            summary: Box::new(summary(None)),
            actors,
        }),
        (Err(error), tape) => Err(RunError {
            error: Box::new(error),
            summary: Box::new(summary(tape.ok().flatten())),
            actors,
        }),
    }
}

/// The pipeline's view of the simulation: time, tasks, the built-in actors.
#[derive(Debug, Clone)]
pub struct Host {
    seed: u64,
    start_unix_ns: i64,
    pub(crate) capabilities: Capabilities,
    /// The run's decisions, when it takes them through a book: the pipeline's own streams
    /// are decisions too.
    decisions: Option<Arc<crate::decision::DecisionBook>>,
}

impl Host {
    /// Returns the run's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Returns the start instant, nanoseconds since the Unix epoch.
    pub fn start_unix_ns(&self) -> i64 {
        self.start_unix_ns
    }

    /// Returns virtual time, in nanoseconds since the start of the run.
    pub fn now_ns(&self) -> u64 {
        crate::time::now_ns()
    }

    /// Sleeps for `duration` of virtual time (a `wake` record of the clock).
    pub fn sleep(&self, duration: std::time::Duration) -> crate::time::Sleep {
        crate::time::sleep(duration)
    }

    /// Spawns a named task.
    pub fn spawn<F>(&self, name: &str, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        executor::spawn(name.to_string(), future)
    }

    /// Returns the clock actor (reads and sleeps recorded as requests and replies).
    pub fn clock(&self) -> ActorRef<Clock> {
        ActorRef::new(CLOCK_ACTOR)
    }

    /// Reads the simulated wall clock through the clock actor (recorded on the tape).
    pub async fn wall_clock(&self) -> i64 {
        self.clock().call(ClockRequest::Now).await
    }

    /// Declares a final effect of the run (an `outcome` record, compared by the oracle's
    /// outcome mode).
    pub fn outcome<T: serde::Serialize + ?Sized>(&self, name: &str, value: &T) {
        executor::record_engine(crate::tape::RecordKind::Outcome, &(name, value));
    }

    /// Returns a random stream forked from `(seed, name)`, independent of every actor's. In
    /// a run with decisions, its draws are the decisions `name#n` (two streams of one name
    /// draw the same, so they share their decisions).
    pub fn rng(&self, name: &str) -> RngStream {
        RngStream::fork_decided(self.seed, name, self.decisions.clone())
    }

    /// Logs a structured event onto the tape through the user-event actor; returns its
    /// number (1 for the first event of the run).
    pub async fn event(&self, name: &str, fields: serde_json::Value) -> u64 {
        let events: ActorRef<Events> = ActorRef::new(EVENTS_ACTOR);
        events
            .call(UserEvent {
                name: name.to_string(),
                fields,
            })
            .await
    }
}
