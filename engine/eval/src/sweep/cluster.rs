//! The failure cluster: what makes two failing seeds "the same failure". A sweep's summary
//! groups its failures by it, the failure database keeps one entry per cluster, `report
//! diff` names clusters new, resolved or ongoing, and a shrink keeps a run in its cluster.

use serde::{Deserialize, Serialize};

use super::report::SeedResult;
use crate::VerdictKind;

/// The key of a failure cluster within one scenario: the verdict, the reason's kind (the
/// `verifier` for a FAIL, the policy of a BLOCKED, `deadlock`, `step_failed`… for an ERROR)
/// and the first line of the reason (which names the verifier or the limit and what it
/// saw). Ordered, so clusters list in one order everywhere.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClusterKey {
    /// The verdict: `fail`, `error` or `blocked`.
    pub verdict: VerdictKind,
    /// The reason's kind.
    pub kind: String,
    /// The first line of the reason's message.
    pub reason: String,
}

impl ClusterKey {
    /// Returns the cluster of a seed's result, `None` when it passed.
    ///
    /// ```
    /// use simtape::RunSummary;
    /// use simtape_eval::sweep::{ClusterKey, SeedResult};
    /// use simtape_eval::Verdict;
    /// let verdict = Verdict::Error { reason: "deadlock at t=1ms\nmain waits".into() };
    /// let result = SeedResult::of(&RunSummary::unstarted(3), &verdict, Some("deadlock"));
    /// let key = ClusterKey::of(&result).unwrap();
    /// assert_eq!((key.kind.as_str(), key.reason.as_str()), ("deadlock", "deadlock at t=1ms"));
    /// assert_eq!(key.id().len(), 16);
    /// ```
    pub fn of(result: &SeedResult) -> Option<ClusterKey> {
        let (kind, reason) = result.reason.as_ref()?.cluster();
        Some(ClusterKey {
            verdict: result.verdict,
            kind: kind.to_string(),
            reason: reason.to_string(),
        })
    }

    /// Returns a short stable name of the cluster: the first 16 hex digits of the SHA-256 of
    /// `verdict`, `kind` and `reason`, each on its own line. The failure database names its
    /// files by it.
    pub fn id(&self) -> String {
        let text = format!("{}\n{}\n{}\n", self.verdict.label(), self.kind, self.reason);
        let mut id = simtape::tape::sha256_hex(text.as_bytes());
        id.truncate(16);
        id
    }
}

impl std::fmt::Display for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.kind,
            self.verdict.label(),
            self.reason
        )
    }
}
