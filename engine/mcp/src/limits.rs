//! Every bound the MCP tools keep, in one place.

/// The longest JSON-RPC line accepted on stdio, in bytes. Longer lines are discarded while
/// being read (never buffered whole) and answered with an Invalid Request error, so a hostile
/// or broken peer cannot make the process allocate without bound.
pub const LINE_BYTES_MAX: usize = 16 * 1024 * 1024;

/// How long `record` and `verify` wait for a server to exit after its stdin is closed before
/// killing it, in milliseconds.
pub const SHUTDOWN_GRACE_MS: u64 = 5_000;

/// How long `verify` waits for a live server to answer one request, in milliseconds.
pub const LIVE_RESPONSE_TIMEOUT_MS: u64 = 30_000;

/// Once one live request went unanswered, how long `verify` waits for each later one, in
/// milliseconds: a hung server then costs seconds, not minutes.
pub const LIVE_RESPONSE_TIMEOUT_AFTER_MISS_MS: u64 = 1_000;

/// The most messages one cassette may hold; a longer recording is refused when loaded.
pub const CASSETTE_MESSAGES_MAX: usize = 1_000_000;

/// The most findings a drift report lists; the count of all findings is always exact.
pub const DRIFT_FINDINGS_MAX: usize = 1_000;

/// The longest excerpt of a JSON value quoted in an error message, in characters.
pub const EXCERPT_CHARS_MAX: usize = 200;

/// The most final states one `simtape mcp eval` scores. It keeps C(n, k) exact in a `u128`
/// (C(100, 50) ≈ 1.0e29, far below 2^128 ≈ 3.4e38, with room for one more factor of n).
pub const EVAL_STATES_MAX: usize = 100;
