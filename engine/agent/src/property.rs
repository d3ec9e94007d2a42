//! A run's properties (`[[property]]`), judged once its verifiers have: each condition's
//! parts read the run as the verifiers do, and each property leaves a `property` record on
//! the tape with whether its condition was true. An `always` false or an `unreachable` true
//! fails the run (after the verifiers, which name a failure first); `sometimes` and
//! `reachable` are judged over a sweep (`simtape_eval::property`).

use serde_json::Value;
use simtape_eval::property::PropertyResult;
use simtape_eval::{Verdict, VerifierResult};

use crate::ctx::Ctx;
use crate::log::AgentEvent;
use crate::report::AgentError;
use crate::spec::PropertySpec;
use crate::verify::{read_only, Mismatch, Seen};

/// Judges every property of the scenario against the run as it ended.
pub(crate) async fn judge(
    ctx: &Ctx,
    outcomes: &[(String, Value)],
    verifiers: &[VerifierResult],
) -> Result<Vec<PropertyResult>, AgentError> {
    let verdict = Verdict::of(verifiers).kind();
    let retries = ctx.state.transcript.borrow().retries;
    let mut diff = None;
    let mut results = Vec::new();
    for spec in &ctx.shared.eval.properties {
        let seen = condition(ctx, spec, verdict, retries, &mut diff, outcomes)?;
        let hit = seen.is_ok();
        let saw = seen.unwrap_or_else(|mismatch| mismatch.0);
        ctx.record(AgentEvent::Property {
            name: spec.name.clone(),
            kind: spec.kind.name().to_string(),
            hit,
            saw: saw.clone(),
        })
        .await;
        results.push(PropertyResult {
            name: spec.name.clone(),
            kind: spec.kind,
            hit,
            saw,
        });
    }
    Ok(results)
}

/// Whether every part of `spec`'s condition is true: the evidence, or the first part that
/// is not.
fn condition(
    ctx: &Ctx,
    spec: &PropertySpec,
    verdict: simtape_eval::VerdictKind,
    retries: u32,
    diff: &mut Option<Result<simtape::cap::fs::FsDiff, simtape::cap::fs::FsError>>,
    outcomes: &[(String, Value)],
) -> Result<Seen, AgentError> {
    let mut evidence = Vec::new();
    if let Some(min) = spec.retries {
        if retries < min {
            return Ok(Err(Mismatch(format!(
                "{retries} retr(ies), expected at least {min}"
            ))));
        }
        evidence.push(format!("{retries} retr(ies)"));
    }
    if let Some(expected) = spec.verdict {
        if verdict != expected {
            return Ok(Err(Mismatch(format!(
                "verdict {}, expected {}",
                verdict.label(),
                expected.label()
            ))));
        }
        evidence.push(format!("verdict {}", verdict.label()));
    }
    if let Some(check) = &spec.check {
        match read_only(ctx, &spec.name, check, diff, outcomes)? {
            Ok(saw) => evidence.push(saw),
            Err(mismatch) => return Ok(Err(mismatch)),
        }
    }
    Ok(Ok(evidence.join("; ")))
}

/// The run's verdict with its properties: the verifiers' verdict, unless every verifier held
/// and a property failed this run, which then fails it, named.
pub(crate) fn verdict(verifiers: &[VerifierResult], properties: &[PropertyResult]) -> Verdict {
    let verdict = Verdict::of(verifiers);
    match (&verdict, properties.iter().find(|p| p.violated())) {
        (Verdict::Pass, Some(failed)) => Verdict::Fail {
            verifier: format!("property {:?} ({})", failed.name, failed.kind),
            saw: if failed.hit {
                format!(
                    "its condition was true, and it must never be: {}",
                    failed.saw
                )
            } else {
                format!(
                    "its condition was false, and it must always be true: {}",
                    failed.saw
                )
            },
        },
        _ => verdict,
    }
}
