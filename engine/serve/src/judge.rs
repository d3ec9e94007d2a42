//! serve's judgement of an in-process agent (a test function under the pytest plugin or the
//! node helper): the scenario's verifiers that read what serve sees, judged inside the
//! simulation when the session ends, each result an `outcome` record on the tape, so a
//! replay of the tape judges the same.
//!
//! serve sees the model traffic and the MCP worlds, not the agent's files or programs (they
//! are the test's own): `answer` reads the model's last reply, `tool_called` the tool calls
//! the replies asked for (with the results later requests sent back, checked against the
//! tools the requests offered), `world_goal` the world's score. `fs`, `gate` and `outcome`
//! verifiers are not judged, and serve's summary names them.

use std::collections::BTreeMap;

use serde_json::json;
use simtape::Host;
use simtape_agent::{
    judge_observed, AgentExit, EndReason, Judged, Observed, Transcript, VerifySpec,
};
use simtape_mcp::actor::McpActor;

use crate::gateway::GatewayOutcome;

/// Judges `verify` against the in-process session `outcome` describes; records each result.
pub(crate) fn in_process(
    host: &Host,
    verify: &[VerifySpec],
    outcome: &GatewayOutcome,
) -> Vec<Judged> {
    if verify.is_empty() {
        return Vec::new();
    }
    let transcript = transcript(outcome);
    let worlds: BTreeMap<String, _> = host
        .capabilities()
        .all::<McpActor>()
        .filter_map(|(actor, actor_ref)| {
            let server = crate::mcp_http::server_name(actor)?.to_string();
            Some((server, actor_ref.with_state(|actor| actor.world_score())))
        })
        .collect();
    let offered: Vec<String> = outcome.traffic.offered.iter().cloned().collect();
    let observed = Observed {
        transcript: &transcript,
        offered: Some(&offered),
        worlds: &worlds,
    };
    let judged = judge_observed(verify, &observed);
    for result in judged.iter().filter_map(|judged| match judged {
        Judged::Result(result) => Some(result),
        Judged::Unseen { .. } => None,
    }) {
        let fields = json!({"name": result.name, "held": result.held, "saw": result.saw});
        host.outcome("verifier", &fields);
    }
    judged
}

/// The agent's transcript as the traffic shows it. Its final answer is the model's last
/// reply when that reply asked for no tool and the agent then ended well: a test that
/// raised gave no answer, whatever the model said last.
fn transcript(outcome: &GatewayOutcome) -> Transcript {
    let mut transcript = Transcript {
        turns: outcome.traffic.turns(),
        ..Transcript::default()
    };
    let last = outcome.traffic.answers.last();
    let last = last.filter(|answer| answer.tool_calls.is_empty());
    match (outcome.agent_exit, last) {
        (Some(AgentExit::Exited(0)), Some(answer)) => {
            transcript.answer = Some(answer.text.clone());
            transcript.end = Some(EndReason::FinalAnswer);
        }
        _ => transcript.end = Some(EndReason::AgentExit),
    }
    transcript
}
