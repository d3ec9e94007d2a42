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

use crate::actor::ActorRef;
use crate::cap::fs::{FsActor, FsDiff, FsError, FsHandle};
use crate::cap::llm::{LlmActor, LlmHandle};
use crate::cap::net::{NetActor, NetHandle, Network};
use crate::cap::process::{ProcessActor, ProcessHandle};
use crate::sim::{Builder, Host, RunReport};

/// The actor names the builder registers capabilities under (they appear in the tape's
/// actor table).
pub const FS_ACTOR: &str = "fs";
/// See [`FS_ACTOR`].
pub const NET_ACTOR: &str = "net";
/// See [`FS_ACTOR`].
pub const LLM_ACTOR: &str = "llm";
/// See [`FS_ACTOR`].
pub const PROCESS_ACTOR: &str = "process";

/// Which capabilities a run was built with.
#[derive(Debug, Clone, Copy, Default)]
pub struct Capabilities {
    fs: Option<ActorRef<FsActor>>,
    net: Option<ActorRef<NetActor>>,
    llm: Option<ActorRef<LlmActor>>,
    process: Option<ActorRef<ProcessActor>>,
}

impl Capabilities {
    /// Returns the filesystem actor, if the run has one.
    pub fn fs(&self) -> Option<ActorRef<FsActor>> {
        self.fs
    }

    /// Returns the network actor, if the run has one.
    pub fn net(&self) -> Option<ActorRef<NetActor>> {
        self.net
    }

    /// Returns the LLM actor, if the run has one.
    pub fn llm(&self) -> Option<ActorRef<LlmActor>> {
        self.llm
    }

    /// Returns the process actor, if the run has one.
    pub fn process(&self) -> Option<ActorRef<ProcessActor>> {
        self.process
    }
}

impl Builder {
    /// Gives the run a filesystem: a copy-on-write overlay (see [`crate::cap::fs`]).
    ///
    /// # Panics
    /// When the run already has a filesystem.
    pub fn fs(&mut self, fs: FsActor) -> &mut Self {
        assert!(
            self.capabilities.fs.is_none(),
            "the run already has a filesystem"
        );
        self.capabilities.fs = Some(self.actor(FS_ACTOR, fs));
        self
    }

    /// Gives the run a network policy (see [`crate::cap::net`]); without one, a pipeline has
    /// no network actor at all.
    ///
    /// # Panics
    /// When the run already has a network policy.
    pub fn network(&mut self, policy: Network) -> &mut Self {
        assert!(
            self.capabilities.net.is_none(),
            "the run already has a network policy"
        );
        self.capabilities.net = Some(self.actor(NET_ACTOR, NetActor::new(policy)));
        self
    }

    /// Gives the run a model (see [`crate::cap::llm`]).
    ///
    /// # Panics
    /// When the run already has a model.
    pub fn llm(&mut self, llm: LlmActor) -> &mut Self {
        assert!(
            self.capabilities.llm.is_none(),
            "the run already has a model"
        );
        self.capabilities.llm = Some(self.actor(LLM_ACTOR, llm));
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
        match self.capabilities.process {
            Some(process) => self.update_actor(process, |actor| actor.wasi_fallback(dir)),
            None => {
                let actor = ProcessActor::wasi(dir).limits(self.limits_value());
                self.process(actor);
            }
        }
        self
    }

    /// Gives the run subprocesses (see [`crate::cap::process`]); without it, a pipeline has
    /// no process actor at all.
    ///
    /// # Panics
    /// When the run already has a process actor.
    pub fn process(&mut self, process: ProcessActor) -> &mut Self {
        assert!(
            self.capabilities.process.is_none(),
            "the run already has a process actor"
        );
        self.capabilities.process = Some(self.actor(PROCESS_ACTOR, process));
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
                .fs
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
                .net
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
                .llm
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
                .process
                .expect("no process actor: build the run with Builder::process"),
        )
        .with_fs(self.capabilities.fs)
    }

    /// Returns which capabilities the run has.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }
}

impl<T> RunReport<T> {
    /// Returns the run's filesystem diff, when the run had a filesystem.
    pub fn fs_diff(&self) -> Option<Result<FsDiff, FsError>> {
        let fs = self.capabilities.fs?;
        Some(self.actors.get(fs)?.diff())
    }

    /// Returns the final LLM actor (its unused `once` entries, for instance).
    pub fn llm(&self) -> Option<&LlmActor> {
        self.actors.get(self.capabilities.llm?)
    }

    /// Returns the final process actor (its unused replay entries, for instance).
    pub fn process(&self) -> Option<&ProcessActor> {
        self.actors.get(self.capabilities.process?)
    }
}
