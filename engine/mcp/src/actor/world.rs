//! The world backend of [`McpActor`](super::McpActor): a seeded world spec answering in
//! virtual time.
//!
//! Every request goes through [`WorldServer`], the code `simtape mcp world` serves with, so a
//! call inside a simulation and a call over stdio give the same result and the same state. The
//! backend adds what only a simulation has:
//!
//! * rate faults that draw from the actor's own stream (the core's fault engine, through
//!   [`WorldServer::call_tool_drawing`]), so the faults follow the simulation seed;
//! * the latency of each answer, from the spec's integer latency model with jitter drawn from
//!   the same stream (before the call's fault draws), or a `timeout` fault's `after_ms`.

use serde_json::Value;
use simtape::rng::RngStream;

use super::{McpCallError, McpReply, McpRequest};
use crate::world::server::{WorldReport, TIMEOUT_CODE};
use crate::world::Scored;
use crate::world::{World, WorldServer};

/// A world served inside a simulation.
#[derive(Debug, Clone)]
pub(super) struct WorldBackend {
    server: WorldServer,
    /// Requests answered so far; the next one's number is this plus one.
    requests: u64,
}

impl WorldBackend {
    /// Starts `world` in its initial state. Its faults draw from the actor's stream, so the
    /// spec's seed only names the world in its report.
    pub(super) fn new(world: World) -> WorldBackend {
        let seed = world.spec.seed;
        WorldBackend {
            server: WorldServer::new(world, seed),
            requests: 0,
        }
    }

    /// Returns the indices of the world's `rate` fault rules (its spec's and the scenario's).
    pub(super) fn rate_rules(&self) -> Vec<usize> {
        simtape::cap::fault_rules::rate_rules(&self.server.world().spec.faults)
    }

    /// Returns the current state.
    pub(super) fn state(&self) -> &Value {
        self.server.state()
    }

    /// Returns the report on the current state.
    pub(super) fn report(&self) -> WorldReport {
        self.server.report()
    }

    /// Returns the current state's score (the report without the calls).
    pub(super) fn score(&self) -> Scored {
        self.server.score()
    }

    /// Answers `request`, drawing the jitter and the rate faults from `rng`.
    pub(super) fn answer(&mut self, request: &McpRequest, rng: &mut RngStream) -> McpReply {
        if let McpRequest::Describe = request {
            // Before the seed and without a draw: describing the server changes no later answer.
            return McpReply {
                request_seq: None,
                latency_ms: 0,
                result: super::describe(|line| self.server.handle_line(line)),
            };
        }
        self.requests += 1;
        let request_seq = self.requests;
        let tool = match request {
            McpRequest::Describe => unreachable!("answered above"),
            McpRequest::ListTools | McpRequest::ListToolsAnswering => None,
            McpRequest::CallTool { name, .. } | McpRequest::CallToolAnswering { name, .. } => {
                Some(name.as_str())
            }
            McpRequest::Answer { .. } | McpRequest::Continue { .. } => None,
        };
        let model = self.server.world().latency(tool);
        let jitter_ms = match model.jitter_ms {
            0 => 0,
            jitter_ms => rng.range_inclusive(0, jitter_ms),
        };
        let mut latency_ms = model.base_ms.saturating_add(jitter_ms);
        let result = match request {
            McpRequest::Describe => unreachable!("answered above"),
            McpRequest::ListTools | McpRequest::ListToolsAnswering => Ok(self.server.tools_list()),
            McpRequest::Answer { .. } | McpRequest::Continue { .. } => Err(McpCallError::Rpc {
                request_seq,
                code: crate::jsonrpc::INVALID_PARAMS,
                message: "a world sends nothing on its own, so there is nothing to answer".into(),
                data: None,
            }),
            McpRequest::CallTool { .. } | McpRequest::CallToolAnswering { .. } => {
                let params = request.params().expect("a tools/call request has params");
                let calls_before = self.server.calls().len();
                let answer = self.server.call_tool_drawing(&params, rng);
                let timed_out = self.server.calls().len() > calls_before
                    && self.server.calls().last().map(|c| c.outcome.as_str()) == Some("timeout");
                answer.map_err(|(code, message, data)| {
                    if timed_out && code == TIMEOUT_CODE {
                        // The client waited the fault's whole `after_ms` before giving up.
                        let after_ms = data.as_ref().and_then(|d| d["timeoutMs"].as_u64());
                        latency_ms = after_ms.expect("a timeout fault reports its timeoutMs");
                    }
                    McpCallError::Rpc {
                        request_seq,
                        code,
                        message,
                        data,
                    }
                })
            }
        };
        McpReply {
            request_seq: Some(request_seq),
            latency_ms,
            result,
        }
    }
}
