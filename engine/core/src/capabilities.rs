//! The capability settings of the builder, the pipeline's handles to them, and the run's
//! capability artifacts: one setting per capability, each optional and independent.
//!
//! ```
//! use simtape::cap::{fs::FsActor, llm::Llm, net::Network};
//! # let dir = std::env::temp_dir().join(format!("simtape-caps-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # std::fs::write(dir.join("notes.txt"), "draft\n").unwrap();
//! let fixture = r#"{"simtape_llm": 1}
//! {"match": {"last_message": {"contains": "polish"}}, "response": {"text": "Done."}}"#;
//! let mut builder = simtape::Sim::builder();
//! builder
//!     .seed(7)
//!     .llm(Llm::replay_str("inline", fixture).unwrap())
//!     .fs(FsActor::new(&dir).unwrap())
//!     .network(Network::deny().allow("api.github.com"));
//! let report = builder.build().unwrap().run(|host| async move {
//!     use simtape::cap::llm::{ChatRequest, Message};
//!     let answer = host.llm().complete(ChatRequest::new("m", vec![Message::user("polish it")])).await;
//!     host.fs().write("notes.txt", answer.unwrap().text.into_bytes()).await.unwrap();
//!     host.net().connect("example.com", 443).await.is_err()
//! }).unwrap();
//! assert!(report.output, "example.com is not on the allow-list");
//! let diff = report.fs_diff().unwrap().unwrap();
//! assert_eq!(diff.modified.len(), 1);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::any::TypeId;
use std::sync::Arc;

use crate::actor::{Actor, ActorRef};
use crate::cap::fs::{FsActor, FsDiff, FsError, FsHandle};
use crate::cap::llm::{LlmActor, LlmHandle};
use crate::cap::net::{NetActor, NetHandle, Network};
use crate::cap::process::{ProcessActor, ProcessHandle, ProcessRecorder, ProcessRunner};
use crate::sim::{Builder, Host, RunReport};

/// The actor names the builder registers capabilities under (they appear in the tape's
/// actor table).
pub const FS_ACTOR: &str = "fs";
/// See [`FS_ACTOR`].
pub(crate) const NET_ACTOR: &str = "net";
/// See [`FS_ACTOR`].
pub const LLM_ACTOR: &str = "llm";
/// See [`FS_ACTOR`].
pub const PROCESS_ACTOR: &str = "process";

/// One capability of a run: an actor registered with [`Builder::capability`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityEntry {
    /// The actor's name, as in the tape's actor table (`fs`, `llm`, `mcp:tickets`, …).
    pub name: String,
    /// The actor id, as on the tape.
    pub id: u16,
    /// The actor's Rust type name, for listings and messages.
    pub type_name: &'static str,
    type_id: TypeId,
}

/// The registry of a run's capabilities: every capability actor by name and type, in the
/// order they were registered. A new kind of capability needs no field here: register it
/// with [`Builder::capability`] and find it with [`Capabilities::get`] or
/// [`Capabilities::all`]; a gateway lists every endpoint of a run with
/// [`Capabilities::iter`]. Cheap to clone (shared).
///
/// ```
/// use simtape::cap::net::{NetActor, Network};
/// let mut builder = simtape::Sim::builder();
/// builder.network(Network::deny());
/// let caps = builder.capabilities();
/// assert!(caps.net().is_some() && caps.fs().is_none());
/// assert!(caps.get::<NetActor>("net").is_some());
/// let names: Vec<&str> = caps.iter().map(|entry| entry.name.as_str()).collect();
/// assert_eq!(names, ["net"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Capabilities {
    entries: Arc<Vec<CapabilityEntry>>,
}

impl Capabilities {
    /// Returns the capability registered as `name`, if it is an `A`.
    pub fn get<A: 'static>(&self, name: &str) -> Option<ActorRef<A>> {
        self.entries
            .iter()
            .find(|entry| entry.name == name)
            .filter(|entry| entry.type_id == TypeId::of::<A>())
            .map(|entry| ActorRef::new(entry.id))
    }

    /// Returns every capability of type `A`, with its name, in registration order.
    pub fn all<A: 'static>(&self) -> impl Iterator<Item = (&str, ActorRef<A>)> + '_ {
        self.entries
            .iter()
            .filter(|entry| entry.type_id == TypeId::of::<A>())
            .map(|entry| (entry.name.as_str(), ActorRef::new(entry.id)))
    }

    /// Returns every capability, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &CapabilityEntry> + '_ {
        self.entries.iter()
    }

    /// Returns the filesystem actor, if the run has one.
    pub fn fs(&self) -> Option<ActorRef<FsActor>> {
        self.get(FS_ACTOR)
    }

    /// Returns the network actor, if the run has one.
    pub fn net(&self) -> Option<ActorRef<NetActor>> {
        self.get(NET_ACTOR)
    }

    /// Returns the LLM actor, if the run has one.
    pub fn llm(&self) -> Option<ActorRef<LlmActor>> {
        self.get(LLM_ACTOR)
    }

    /// Returns the process actor, if the run has one.
    pub fn process(&self) -> Option<ActorRef<ProcessActor>> {
        self.get(PROCESS_ACTOR)
    }

    fn contains(&self, name: &str) -> bool {
        self.entries.iter().any(|entry| entry.name == name)
    }
}

impl Builder {
    /// Registers `actor` as a capability named `name` (see [`Capabilities`]): an actor like
    /// any other ([`Builder::actor`]), which pipelines, verifiers and gateways can also find
    /// by name and type.
    ///
    /// # Panics
    /// When the run already has a capability (or any actor) named `name`.
    pub fn capability<A: Actor + Clone>(&mut self, name: &str, actor: A) -> ActorRef<A> {
        assert!(
            !self.capabilities.contains(name),
            "the run already has a capability named {name:?}"
        );
        let actor_ref = self.actor(name, actor);
        Arc::make_mut(&mut self.capabilities.entries).push(CapabilityEntry {
            name: name.to_string(),
            id: actor_ref.id(),
            type_name: std::any::type_name::<A>(),
            type_id: TypeId::of::<A>(),
        });
        actor_ref
    }

    /// Returns the capabilities registered so far.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    /// Gives the run a filesystem: a copy-on-write overlay (see [`crate::cap::fs`]).
    ///
    /// # Panics
    /// When the run already has a filesystem.
    pub fn fs(&mut self, fs: FsActor) -> &mut Self {
        self.capability(FS_ACTOR, fs);
        self
    }

    /// Gives the run a network policy (see [`crate::cap::net`]); without one, a pipeline has
    /// no network actor at all.
    ///
    /// # Panics
    /// When the run already has a network policy.
    pub fn network(&mut self, policy: Network) -> &mut Self {
        self.capability(NET_ACTOR, NetActor::new(policy));
        self
    }

    /// Gives the run a model (see [`crate::cap::llm`]).
    ///
    /// # Panics
    /// When the run already has a model.
    pub fn llm(&mut self, llm: LlmActor) -> &mut Self {
        self.capability(LLM_ACTOR, llm);
        self
    }

    /// Runs every program without a mode (or, under a replay default, without a process
    /// tape entry) as the WASI guest `<dir>/<program>.wasm`: what `simtape run
    /// --process-wasi DIR` does (see [`ProcessActor::wasi_fallback`]). A run without a
    /// process actor gets one that runs every program so.
    ///
    /// ```
    /// use simtape::cap::process::{Command, ProcessActor, ProcessError};
    /// let mut builder = simtape::Sim::builder();
    /// builder.process(ProcessActor::hermetic()).process_wasi_dir("no-such-dir");
    /// let report = builder.build().unwrap().run(|host| async move {
    ///     host.process().run(Command::new("tool")).await
    /// }).unwrap();
    /// // A guest now, not `NotCovered` (without the `wasi` feature: `WasiUnavailable`).
    /// assert!(matches!(
    ///     report.output,
    ///     Err(ProcessError::WasmModuleMissing { .. } | ProcessError::WasiUnavailable { .. })
    /// ));
    /// ```
    pub fn process_wasi_dir(&mut self, dir: impl AsRef<std::path::Path>) -> &mut Self {
        let dir = dir.as_ref();
        match self.capabilities.process() {
            Some(process) => self.update_actor(process, |actor| actor.wasi_fallback(dir)),
            None => {
                let actor = ProcessActor::wasi(dir).limits(self.limits_value());
                self.process(actor);
            }
        }
        self
    }

    /// Gives the programs in record mode their process tape: each real run of one appends an
    /// entry to `recorder` (`simtape run` of a scenario whose `[process]` puts a program in
    /// `record` mode gives it the gateway's `ProcessTapeWriter`). Every run built from this
    /// builder appends to the same one. Without a process actor, nothing to do.
    pub fn process_record_to(&mut self, recorder: Arc<dyn ProcessRecorder>) -> &mut Self {
        if let Some(process) = self.capabilities.process() {
            self.update_actor(process, |actor| actor.with_recorder(recorder));
        }
        self
    }

    /// Puts the programs in replay mode in record mode ([`ProcessActor::record_replayed`])
    /// and gives them, with those already in record mode, `recorder`
    /// ([`Builder::process_record_to`]): what `simtape run --record` does.
    pub fn process_record_replayed(&mut self, recorder: Arc<dyn ProcessRecorder>) -> &mut Self {
        if let Some(process) = self.capabilities.process() {
            self.update_actor(process, ProcessActor::record_replayed);
        }
        self.process_record_to(recorder)
    }

    /// Gives the programs in `real` and `record` mode what runs them
    /// ([`ProcessActor::with_runner`]). Without a process actor, nothing to do.
    pub fn process_runner(&mut self, runner: Arc<dyn ProcessRunner>) -> &mut Self {
        if let Some(process) = self.capabilities.process() {
            self.update_actor(process, |actor| actor.with_runner(runner));
        }
        self
    }

    /// Gives the run subprocesses (see [`crate::cap::process`]); without it, a pipeline has
    /// no process actor at all.
    ///
    /// # Panics
    /// When the run already has a process actor.
    pub fn process(&mut self, process: ProcessActor) -> &mut Self {
        self.capability(PROCESS_ACTOR, process);
        self
    }
}

impl Host {
    /// Returns the run's filesystem.
    ///
    /// # Panics
    /// When the run was built without `Builder::fs`: a pipeline bug, not an input error.
    pub fn fs(&self) -> FsHandle {
        FsHandle::new(
            self.capabilities
                .fs()
                .expect("no filesystem: build the run with Builder::fs"),
        )
    }

    /// Returns the run's network.
    ///
    /// # Panics
    /// When the run was built without `Builder::network`.
    pub fn net(&self) -> NetHandle {
        NetHandle::new(
            self.capabilities
                .net()
                .expect("no network policy: build the run with Builder::network"),
        )
    }

    /// Returns the run's model.
    ///
    /// # Panics
    /// When the run was built without `Builder::llm`.
    pub fn llm(&self) -> LlmHandle {
        LlmHandle::new(
            self.capabilities
                .llm()
                .expect("no model: build the run with Builder::llm"),
        )
    }

    /// Returns the run's subprocesses.
    ///
    /// # Panics
    /// When the run was built without `Builder::process`.
    pub fn process(&self) -> ProcessHandle {
        ProcessHandle::new(
            self.capabilities
                .process()
                .expect("no process actor: build the run with Builder::process"),
        )
        .with_fs(self.capabilities.fs())
    }

    /// Returns which capabilities the run has.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }
}

impl<T> RunReport<T> {
    /// Returns the run's filesystem diff, when the run had a filesystem.
    pub fn fs_diff(&self) -> Option<Result<FsDiff, FsError>> {
        let fs = self.capabilities.fs()?;
        Some(self.actors.get(fs)?.diff())
    }

    /// Returns the final LLM actor (its unused `once` entries, for instance).
    pub fn llm(&self) -> Option<&LlmActor> {
        self.actors.get(self.capabilities.llm()?)
    }

    /// Returns the final process actor (its unused replay entries, for instance).
    pub fn process(&self) -> Option<&ProcessActor> {
        self.actors.get(self.capabilities.process()?)
    }
}
