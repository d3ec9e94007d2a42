//! The `run` tool: a program through the process capability (replay, record, real or WASI,
//! as `[process]` says per program).

use serde_json::{json, Value};
use simtape::cap::llm::ToolDefinition;
use simtape::cap::process::{Command, ExitStatus, Output, ProcessError, ProcessHandle};

use super::{text_argument, Failure, Kind, Tool};

/// Returns the `run` tool.
pub(crate) fn tool() -> Tool {
    let parameters = json!({
        "type": "object",
        "properties": {
            "program": {"type": "string"},
            "args": {"type": "array", "items": {"type": "string"}},
            "stdin": {"type": "string"}
        },
        "required": ["program"]
    });
    Tool::new(
        ToolDefinition {
            name: "run".to_string(),
            description: "Runs `program` with `args` and `stdin` (optional); returns its exit code, stdout and stderr as JSON."
                .to_string(),
            parameters,
        },
        Kind::Run,
    )
}

/// Returns whether a process error stops the run rather than going back to the model: the
/// replay cannot answer (divergence, exhaustion) or the process tape itself failed.
pub(crate) fn stops_the_run(error: &ProcessError) -> bool {
    matches!(
        error,
        ProcessError::Diverged { .. }
            | ProcessError::Exhausted { .. }
            | ProcessError::NoTape { .. }
            | ProcessError::UnusedEntries { .. }
            | ProcessError::Tape(_)
    )
}

/// Runs the program; the text is `{"exit_code", "stdout", "stderr"}` JSON (a signal shows as
/// 128 + its number, as shells report it).
pub(crate) async fn call(process: ProcessHandle, arguments: &Value) -> Result<String, Failure> {
    let program = text_argument(arguments, "program");
    let args = match arguments.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let strings: Option<Vec<String>> = items
                .iter()
                .map(|item| item.as_str().map(String::from))
                .collect();
            strings.ok_or_else(|| {
                Failure::Tool("invalid arguments: every item of \"args\" must be a string".into())
            })?
        }
        Some(other) => {
            let found = super::params::kind_of(other);
            let why =
                format!("invalid arguments: argument \"args\" must be an array, found {found}");
            return Err(Failure::Tool(why));
        }
    };
    let command = Command::new(program)
        .args(args)
        .stdin(text_argument(arguments, "stdin").as_bytes());
    let output = process.run(command).await?;
    Ok(render(&output))
}

/// Renders a program's output for the model.
pub(crate) fn render(output: &Output) -> String {
    json!({
        "exit_code": exit_code(output.status),
        "stdout": String::from_utf8_lossy(&output.stdout),
        "stderr": String::from_utf8_lossy(&output.stderr),
    })
    .to_string()
}

/// Returns the exit code a shell would report.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    match status {
        ExitStatus::Code(code) => code,
        ExitStatus::Signal(signal) => 128 + signal,
    }
}
