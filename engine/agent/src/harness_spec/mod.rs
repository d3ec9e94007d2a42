//! What a `[harness]` is, as data: its policy and features ([`policy`]), its pluggable parts
//! ([`parts`]), the state files its sessions keep in the project ([`files`]) and its errors
//! ([`error`]). Users reach them as `simtape_agent::harness::{policy, parts, files, error}`;
//! the run loop that uses them is `harness`.
//!
//! They sit here, below the run's context (`ctx`), because the context holds them (a
//! scenario's `[harness]` is part of its eval parts): a part reaches its run only through
//! `parts::PartRun`, which the run loop implements.

pub mod error;
pub mod files;
pub mod parts;
pub mod policy;
