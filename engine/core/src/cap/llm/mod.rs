//! The LLM capability: model calls answered from fixtures, matched by request content.
//!
//! A pipeline calls [`LlmHandle::complete`] with a [`ChatRequest`]; the [`LlmActor`] (operation
//! `complete`) finds the fixture entry that matches, picks one of its weighted alternatives with
//! its own RNG stream, computes token usage and a virtual latency, and replies. The tape holds
//! the request and an [`LlmReply`] with the request digest, the entry's line, the alternative,
//! the usage and the response. A request that matches nothing is [`LlmError::Unmatched`]; it
//! never reaches a real provider. The format is documented in `docs/llm-fixtures.md`.
//!
//! [`Llm::record`] builds the same actor in record mode: each call goes to a real provider
//! (OpenAI Chat Completions, OpenAI Responses or Anthropic Messages), through the network
//! policy, and is appended to a fixture that a later run replays ([`record`]).
//!
//! Module map:
//! - [`request`] — the chat model: messages, roles, tool calls and results, tools, usage.
//! - [`fixture`] — entries, the simtape JSONL format, line-numbered [`FixtureError`]s.
//! - [`harn`] — Harn `--llm-mock` JSONL v0/v1 read into the same entries.
//! - [`matcher`] — the `match` block: substrings and globs, tools, turns.
//! - [`latency`] — the latency model and the default token rule.
//! - `digest` — request digests and usage counts streamed from the structs; the per-run memo.
//! - [`actor`] — [`LlmActor`], its [`Backend`] seam, [`LlmHandle`], [`LlmError`].
//! - [`faults`] — injected HTTP errors and stream faults by call number or seeded rate
//!   (`[[faults.llm]]`).
//! - [`record`] — record mode: [`RecordConfig`], the recorder, the fixture it writes.
//! - [`wire`] — the providers' wire formats ([`Provider`]): requests out, answers in.

pub mod actor;
mod digest;
pub mod faults;
pub mod fixture;
pub mod from_tape;
pub mod harn;
pub mod latency;
pub mod matcher;
pub mod record;
pub mod request;
pub mod wire;

pub use actor::{Backend, Llm, LlmActor, LlmError, LlmHandle, LlmReply, RequestRecord};
pub use fixture::{Entry, Fixture, FixtureError, FixtureFormat, Mode, Outcome, ScopeRule};
pub use from_tape::{fixture_from_tape, FromTapeError, TapeFixture};
pub use latency::{LatencyModel, UsageRule};
pub use matcher::{EntryMatch, GlobError, TextPattern};
pub use record::{LlmRecorder, RecordConfig, RecordError};
pub use request::{
    ChatRequest, ChatResponse, MatchText, Message, Role, Thinking, ToolCall, ToolDefinition, Usage,
};
pub use wire::{Provider, ServedBody, ServedRequest};
