//! The agent loop: the harness under test in scenario mode.
//!
//! ```text
//! messages = [system (if any), user(task)]
//! for turn in 1..=max_turns:
//!     response = model(messages, tools)        retried with back-off on 429/5xx/retry hints
//!     no tool calls → final answer, end
//!     append the assistant message (with its tool calls)
//!     run the calls concurrently (≤ tool_concurrency at a time), one task each
//!     append one tool-result message per call, in call order
//! end: max_turns
//! ```
//!
//! The conversation is kept once, here, as the request itself: each model call hands it to the
//! model actor and gets it back with the answer (`LlmHandle::complete_returning`), and the
//! turn's messages are appended to it, so a call copies neither the conversation nor the tool
//! definitions.

use std::rc::Rc;
use std::sync::Arc;

use simtape::cap::llm::{ChatRequest, ChatResponse, LlmError, Message, Role, ToolCall};

use crate::ctx::Ctx;
use crate::log::AgentEvent;
use crate::report::AgentError;
use crate::retry::wait_ms;
use crate::slots::{join_all, Slots};
use crate::tools::{ToolReply, Toolbox};
use crate::transcript::{EndReason, TranscriptCall, TranscriptTurn};

/// Runs the agent to its end; the error is what stops the run.
pub(crate) async fn run(ctx: Rc<Ctx>) -> Result<(), AgentError> {
    let agent = spec(&ctx);
    session(&ctx, &agent.task, agent.max_turns).await.map(drop)
}

/// The built-in agent's settings.
fn spec(ctx: &Ctx) -> &crate::spec::AgentSpec {
    ctx.shared
        .eval
        .agent
        .as_ref()
        .expect("the agent runs only when the scenario has one")
}

/// Runs one session of the agent on `task`: a fresh conversation of at most `max_turns`
/// model turns. Returns why it ended; the error is what stops the run.
pub(crate) async fn session(
    ctx: &Rc<Ctx>,
    task: &str,
    max_turns: u32,
) -> Result<EndReason, AgentError> {
    let agent = spec(ctx);
    let present = ctx.host.capabilities().llm().is_some();
    ctx.require(present, "the agent's model calls", "[llm]")?;
    let toolbox = Rc::new(Toolbox::open(ctx, &agent.tools).await?);
    *ctx.state.offered_tools.borrow_mut() = Some(toolbox.names());
    let start = AgentEvent::Start {
        model: agent.model.clone(),
        tools: toolbox.names(),
    };
    ctx.record(start).await;
    let mut messages = Vec::new();
    if !agent.system.is_empty() {
        messages.push(Message::system(agent.system.clone()));
    }
    messages.push(Message::user(task.to_owned()));
    let mut request = ChatRequest::new(agent.model.clone(), messages)
        .with_tools(Arc::clone(toolbox.definitions()));
    let mut turns = 0;
    let end = loop {
        if turns == max_turns {
            break EndReason::MaxTurns;
        }
        turns += 1;
        ctx.record(AgentEvent::Turn { turn: turns }).await;
        let Some(response) = ask(ctx, turns, &mut request).await? else {
            break EndReason::RetryBudgetSpent;
        };
        let ChatResponse {
            text, tool_calls, ..
        } = response;
        begin_turn(ctx, turns, &text, &tool_calls);
        if tool_calls.is_empty() {
            ctx.state.transcript.borrow_mut().answer = Some(text);
            break EndReason::FinalAnswer;
        }
        let calls = Rc::new(tool_calls);
        let results = run_calls(ctx, &toolbox, &calls).await?;
        let calls = Rc::try_unwrap(calls).unwrap_or_else(|shared| shared.as_ref().clone());
        let results: Vec<Message> = calls
            .iter()
            .zip(results)
            .map(|(call, result)| Message::tool_result(call.id.clone(), result))
            .collect();
        request.messages.push(Message {
            role: Role::Assistant,
            content: text,
            tool_calls: calls,
            tool_call_id: None,
        });
        request.messages.extend(results);
    };
    ctx.state.transcript.borrow_mut().end = Some(end);
    ctx.record(AgentEvent::End { reason: end, turns }).await;
    Ok(end)
}

/// Calls the model with `request` (handed back each time), retrying what a client would
/// retry; `None` when the retry budget is spent. The error is always [`AgentError::Model`].
pub(crate) async fn ask(
    ctx: &Ctx,
    turn: u32,
    request: &mut ChatRequest,
) -> Result<Option<ChatResponse>, AgentError> {
    let mut failures = 0;
    loop {
        // The placeholder allocates nothing; the request comes back with the answer.
        let asked = std::mem::replace(request, ChatRequest::new(String::new(), Vec::new()));
        let (asked, answer) = ctx.host.llm().complete_returning(asked).await;
        *request = asked;
        let error = match answer {
            Ok(response) => return Ok(Some(response)),
            Err(error) => error,
        };
        let LlmError::Http {
            status,
            retry_after_ms,
            ..
        } = &error
        else {
            return Err(AgentError::Model { turn, error });
        };
        let retryable = *status == 429 || *status >= 500 || retry_after_ms.is_some();
        if !retryable {
            return Err(AgentError::Model { turn, error });
        }
        failures += 1;
        if !ctx.take_retry() {
            return Ok(None);
        }
        let wait = ctx.retries.backoff_ms(failures, *retry_after_ms);
        let retry = AgentEvent::Retry {
            what: "model".to_string(),
            attempt: failures,
            wait_ms: wait,
            error: error.to_string(),
        };
        ctx.record(retry).await;
        wait_ms(wait).await;
    }
}

/// Adds the turn to the transcript, its calls still without results.
fn begin_turn(ctx: &Ctx, turn: u32, text: &str, calls: &[ToolCall]) {
    let tool_calls = calls
        .iter()
        .map(|call| TranscriptCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            ok: false,
            result: String::new(),
        })
        .collect();
    ctx.state
        .transcript
        .borrow_mut()
        .turns
        .push(TranscriptTurn {
            turn,
            text: text.to_string(),
            tool_calls,
        });
}

/// Runs one turn's calls, each as a task named after it, at most `tool_concurrency` at a
/// time; returns the result texts in call order.
async fn run_calls(
    ctx: &Rc<Ctx>,
    toolbox: &Rc<Toolbox>,
    calls: &Rc<Vec<ToolCall>>,
) -> Result<Vec<String>, AgentError> {
    let agent = ctx.shared.eval.agent.as_ref().expect("the agent runs");
    let limit = agent.tool_concurrency.max(1);
    let slots = (calls.len() > limit as usize).then(|| Slots::new(limit));
    let handles = calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            // Boxed: the call's state machine is large, and the spawn would otherwise move it
            // through several frames; a box moves as one pointer.
            let task = Box::pin(run_call(
                Rc::clone(ctx),
                Rc::clone(toolbox),
                Rc::clone(calls),
                index,
                slots.clone(),
            ));
            ctx.host
                .spawn(&format!("tool {} {}", call.name, call.id), task)
        })
        .collect();
    join_all(handles).await
}

/// The task of one call: wait for a slot, record the call, run it, record the result.
async fn run_call(
    ctx: Rc<Ctx>,
    toolbox: Rc<Toolbox>,
    calls: Rc<Vec<ToolCall>>,
    index: usize,
    slots: Option<Rc<Slots>>,
) -> Result<String, AgentError> {
    let _slot = match slots {
        Some(slots) => Some(slots.acquire().await),
        None => None,
    };
    let call = &calls[index];
    let started = AgentEvent::Call {
        id: call.id.clone(),
        tool: call.name.clone(),
        arguments: call.arguments.clone(),
    };
    ctx.record(started).await;
    let (ok, content) = match toolbox.call(&ctx, call).await? {
        ToolReply::Text(text) => (true, text),
        ToolReply::Error(error) => (false, format!("error: {error}")),
    };
    let ended = AgentEvent::Result {
        id: call.id.clone(),
        ok,
        size: content.len() as u64,
        sha256: simtape::tape::sha256_hex(content.as_bytes()),
    };
    ctx.record(ended).await;
    if let Some(turn) = ctx.state.transcript.borrow_mut().turns.last_mut() {
        let entry = &mut turn.tool_calls[index];
        entry.ok = ok;
        entry.result = content.clone();
    }
    Ok(content)
}
