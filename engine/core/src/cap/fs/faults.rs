//! Seeded faults and the virtual latency model, both drawn from the fs actor's own stream.
//!
//! Every operation draws the same number of values in the same order whatever happens, so
//! the stream position depends only on the sequence of operations:
//! 1. EIO (every operation): one `chance`.
//! 2. ENOSPC (write, append, mkdir, rename): one `chance`.
//! 3. Partial write (write, append): one `chance`, then one `below(len)` for the prefix
//!    length (drawn as `below(1)` when the write is empty, and ignored then).
//! 4. Fault rules (`[[faults.fs]]`, [`super::FsActor::with_fault_rules`]): one `chance` per
//!    `rate` rule that names the operation or `*`, in rule order (none for `on_call` rules).
//! 5. Latency jitter (every operation, after the operation ran): one `below(jitter_ns + 1)`.
//!
//! A plan without rate rules draws exactly what the ratios alone draw, so adding `on_call`
//! rules never moves the jitter of any operation.

use serde::Serialize;

use crate::cap::fault_rules::FsFaultKind;
use crate::rng::{Ratio, RngStream};

/// The fault plan of the fs actor: each ratio is the chance per operation.
///
/// ```
/// use simtape::cap::fs::FsFaults;
/// use simtape::rng::Ratio;
/// let faults = FsFaults { eio: Ratio::new(1, 100).unwrap(), ..FsFaults::default() };
/// assert_eq!(faults.enospc, Ratio::ZERO);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsFaults {
    /// ENOSPC on writes, appends, mkdir and rename: the operation fails and nothing lands.
    pub enospc: Ratio,
    /// EIO on any operation: it fails and changes nothing.
    pub eio: Ratio,
    /// A partial write or append: a seeded strict prefix of the bytes lands, and the reply
    /// is [`super::FsError::PartialWrite`] with the count.
    pub partial_write: Ratio,
}

impl Default for FsFaults {
    fn default() -> Self {
        FsFaults {
            enospc: Ratio::ZERO,
            eio: Ratio::ZERO,
            partial_write: Ratio::ZERO,
        }
    }
}

/// The fault drawn for one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    Eio,
    NoSpace,
    /// Only this many bytes land.
    Partial(u64),
}

/// Which draws an operation takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Draws {
    /// Reads, listings, stats, deletes: EIO only.
    Plain,
    /// Creates something: EIO and ENOSPC.
    Allocating,
    /// Writes `len` bytes: EIO, ENOSPC and a partial write.
    Writing { len: u64 },
}

impl FsFaults {
    /// Draws this operation's fault. The first fault drawn wins; every draw is still taken.
    pub(crate) fn draw(&self, draws: Draws, rng: &mut RngStream) -> Fault {
        let eio = rng.chance(self.eio);
        let enospc = !matches!(draws, Draws::Plain) && rng.chance(self.enospc);
        let partial = match draws {
            Draws::Writing { len } => {
                let hit = rng.chance(self.partial_write);
                let prefix = rng.below(len.max(1));
                (hit && len > 0).then_some(prefix)
            }
            _ => None,
        };
        match (eio, enospc, partial) {
            (true, _, _) => Fault::Eio,
            (_, true, _) => Fault::NoSpace,
            (_, _, Some(prefix)) => Fault::Partial(prefix),
            _ => Fault::None,
        }
    }
}

/// Returns the fault a `[[faults.fs]]` rule of `kind` injects.
pub(crate) fn rule_fault(kind: FsFaultKind) -> Fault {
    match kind {
        FsFaultKind::Eio => Fault::Eio,
        FsFaultKind::Enospc => Fault::NoSpace,
    }
}

/// The virtual latency of one operation, in integer nanoseconds:
/// `base_ns + per_kib_ns × ⌈bytes / 1024⌉ + jitter`, with `jitter` uniform in
/// `0..=jitter_ns` from the actor's stream. `bytes` is what the operation moved (read or
/// written); it is 0 for the others.
///
/// ```
/// use simtape::cap::fs::FsLatency;
/// let fixed = FsLatency { base_ns: 1_000, per_kib_ns: 500, jitter_ns: 0 };
/// let mut rng = simtape::rng::RngStream::fork(1, "fs");
/// assert_eq!(fixed.latency_ns(2048, &mut rng), 2_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FsLatency {
    /// Fixed cost of every operation.
    pub base_ns: u64,
    /// Cost of each started KiB moved.
    pub per_kib_ns: u64,
    /// Upper bound of the uniform jitter added.
    pub jitter_ns: u64,
}

impl Default for FsLatency {
    /// A local SSD, roughly: 20 µs per operation, 1 µs per KiB, up to 5 µs of jitter.
    fn default() -> Self {
        FsLatency {
            base_ns: 20_000,
            per_kib_ns: 1_000,
            jitter_ns: 5_000,
        }
    }
}

impl FsLatency {
    /// Returns the latency of an operation that moved `bytes` (one draw from `rng`).
    pub fn latency_ns(&self, bytes: u64, rng: &mut RngStream) -> u64 {
        let kib = bytes.div_ceil(1024);
        let jitter = rng.below(self.jitter_ns.saturating_add(1).max(1));
        self.base_ns
            .saturating_add(self.per_kib_ns.saturating_mul(kib))
            .saturating_add(jitter)
    }
}
