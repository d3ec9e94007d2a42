//! The network policy: deny by default, allow-list by host, suffix, IP, CIDR, port or URL.
//!
//! A pipeline never opens a socket inside the simulation; it asks the network actor, and the
//! answer is the policy's decision. Every attempt, allowed or denied, is a pair of tape
//! records (`request` / `reply`, operation `connect`). The rule grammar and the matching
//! semantics are in `docs/network.md`.
//!
//! - `host` — canonical hosts, names and ports, shared by rules and targets.
//! - `rule` — [`Rule`]: the grammar, parsing, one rule's match; [`RuleError`].
//! - `policy` — [`Network`]: the ordered rule list and [`Network::check`]; [`Allowed`],
//!   [`NetError`].
//! - `actor` — [`NetActor`] (the [`Actor`](crate::actor::Actor)), [`NetRequest`], and
//!   [`NetHandle`], the typed handle pipelines dial through.

mod actor;
mod host;
mod policy;
mod rule;

pub use actor::{NetActor, NetHandle, NetRequest};
pub use host::{HostError, PortError};
pub use policy::{Allowed, NetError, Network};
pub use rule::{Rule, RuleError, UrlError};
