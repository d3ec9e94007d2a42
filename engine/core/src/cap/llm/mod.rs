//! The LLM capability: model calls answered from fixtures, matched by request content.
//!
//! A pipeline calls [`LlmHandle::complete`] with a [`ChatRequest`]; the [`LlmActor`] (operation
//! `complete`) finds the fixture entry that matches, picks one of its weighted alternatives with
//! its own RNG stream, computes token usage and a virtual latency, and replies. The tape holds
//! the request and an [`LlmReply`] with the request digest, the entry's line, the alternative,
//! the usage and the response. A request that matches nothing is [`LlmError::Unmatched`]; it
//! never reaches a real provider. The format is documented in `docs/llm-fixtures.md`.
//!
//! Where the answers come from is the actor's [`ModelBackend`] ([`backend`]): the fixture
//! replay here, or a backend from outside the core given to [`Llm::from_backend`]. Record
//! mode (each call to a real provider, appended to a fixture a later run replays) is such a
//! backend, and lives with the providers' wire formats in the gateway crate, `simtape-serve`.
//!
//! Module map:
//! - [`request`] — the chat model: messages, roles, tool calls and results, tools, usage.
//! - [`fixture`] — entries, the simtape JSONL format, line-numbered [`FixtureError`]s.
//! - [`harn`] — Harn `--llm-mock` JSONL v0/v1 read into the same entries.
//! - [`matcher`] — the `match` block: substrings and globs, tools, turns.
//! - [`latency`] — the latency model and the default token rule.
//! - `digest` — request digests and usage counts streamed from the structs; the per-run memo.
//! - [`actor`] — [`LlmActor`], [`LlmHandle`], [`LlmError`], the fixture replay.
//! - [`backend`] — the [`ModelBackend`] seam and [`RecordError`].
//! - [`faults`] — injected HTTP errors and stream faults by call number or seeded rate
//!   (`[[faults.llm]]`).
//! - [`written`] — fixture entries written from answered calls (record mode, from-tape).
//! - [`provider`] — which provider a recording talks to ([`Provider`]), [`host_and_port`].

pub mod actor;
pub mod backend;
mod digest;
pub mod faults;
pub mod fixture;
pub mod from_tape;
pub mod harn;
pub mod latency;
pub mod matcher;
pub mod provider;
pub mod request;
pub mod written;

pub use actor::{Llm, LlmActor, LlmError, LlmHandle, LlmReply, RequestRecord};
pub use backend::{ModelBackend, RecordError};
pub use fixture::{Entry, Fixture, FixtureError, FixtureFormat, Outcome, Reuse, ScopeRule};
pub use from_tape::{
    answered_calls, fixture_from_tape, fixture_from_tape_matching, AnsweredCall, FromTapeError,
    TapeFixture,
};
pub use latency::{LatencyModel, UsageRule};
pub use matcher::{EntryMatch, GlobError, TextPattern};
pub use provider::{host_and_port, Provider};
pub use request::{
    ChatRequest, ChatResponse, MatchText, Message, Role, Thinking, ToolCall, ToolDefinition, Usage,
};
pub use written::{fixture_entry, fixture_header, recorded_entry, CallMatch};
