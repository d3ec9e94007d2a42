//! An agent program as the worker of a `[harness]` run: one process per session.
//!
//! Inside the simulation, the harness asks `GatewaySessions` for a session; it leaves a
//! [`SessionOrder::Start`] in the `gateway-sessions` outbox, with the task and the run's
//! files as the overlay holds them, and serves the session's requests through the gateway
//! within the session's turn budget. The driver outside takes the order, lays the files out
//! in the agent's directory, starts the program, and delivers its events, its exit and what
//! it changed, as for a single run. A request for a turn past the budget is not answered: a
//! [`SessionOrder::Stop`] tells the driver to stop the process there (a seeded crash, or the
//! session's context running out). Orders are outputs, not inputs: they follow from the tape,
//! so a replay needs no driver.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use simtape::cap::fs::FsDiff;
use simtape::inbox::{Inbox, Outbox};
use simtape::{Builder, Host};
use simtape_agent::{AgentExit, ProgramSessions, SessionEnd, SessionRequest};

use crate::adapter::SessionEvent;
use crate::gateway::{self, GatewayInput, HttpResponse, TurnBudget};
use crate::workdir::FileChange;

/// The name of the outbox the harness's session orders leave through.
pub const SESSIONS_OUTBOX: &str = "gateway-sessions";

pub use crate::order::{SessionOrder, SessionStart};

/// Registers the session orders' outbox (a `[harness]` run of an agent program, and its
/// replay, register it; no other run does, so their tapes are unchanged).
pub fn register(builder: &mut Builder) -> Outbox<SessionOrder> {
    builder.outbox::<SessionOrder>(SESSIONS_OUTBOX)
}

/// The driver's side inside the simulation: each session through the gateway.
pub(crate) struct GatewaySessions {
    pub(crate) host: Host,
    pub(crate) inputs: Inbox<GatewayInput>,
    pub(crate) responses: Outbox<HttpResponse>,
    pub(crate) orders: Outbox<SessionOrder>,
    /// Every session's events, in order, for the evidence.
    pub(crate) seen: Rc<RefCell<Vec<SessionEvent>>>,
}

impl ProgramSessions for GatewaySessions {
    fn session(&self, request: SessionRequest) -> Pin<Box<dyn Future<Output = SessionEnd>>> {
        let (host, inputs, responses, orders) =
            (self.host.clone(), self.inputs, self.responses, self.orders);
        let seen = Rc::clone(&self.seen);
        Box::pin(async move {
            // The overlay's diff reads the `[fs]` root: one that became unreadable gives no
            // files here, and the driver's copy of that root then fails, naming the path.
            let files = host
                .capabilities()
                .fs()
                .map(|fs| fs.with_state(|fs| fs.diff()))
                .transpose()
                .ok()
                .flatten()
                .map(|diff| as_changes(&diff))
                .unwrap_or_default();
            orders.send(SessionOrder::Start(SessionStart {
                session: request.session,
                task: request.task,
                files,
            }));
            let budget = TurnBudget::new(request.session, request.max_turns, orders);
            let outcome = gateway::session(&host, inputs, responses, budget).await;
            crate::command::apply_changes(&host, &outcome.workdir);
            seen.borrow_mut().extend(outcome.events.iter().cloned());
            let mut transcript = crate::command::transcript(&outcome.events);
            transcript.retries = u32::try_from(outcome.model_faults).unwrap_or(u32::MAX);
            SessionEnd {
                transcript,
                exit: outcome.agent_exit.unwrap_or(AgentExit::Signaled),
                turns_spent: outcome.turns_spent,
                unmatched: crate::command::unmatched(&outcome),
                denied: outcome.denied.clone(),
                sandbox_failed: outcome.sandbox_failed.clone(),
            }
        })
    }
}

/// The overlay's files against the `[fs]` root as changes that lay them out in a copy of
/// the root.
fn as_changes(diff: &FsDiff) -> Vec<FileChange> {
    let written = diff.added.iter().map(|file| (&file.path, &file.bytes));
    let written = written.chain(diff.modified.iter().map(|file| (&file.path, &file.after)));
    let mut changes: Vec<FileChange> = written
        .map(|(path, bytes)| FileChange::Write(path.clone(), bytes.clone()))
        .collect();
    changes.extend(
        diff.deleted
            .iter()
            .map(|file| FileChange::Delete(file.path.clone())),
    );
    changes
}
