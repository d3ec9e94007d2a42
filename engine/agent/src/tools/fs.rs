//! The built-in filesystem tools, over the run's overlay (`host.fs()`).
//!
//! Each tool is one fs call, except `edit_file`: it reads the file, replaces the first
//! occurrence of `old` with `new`, and writes the file back: two separate calls with the fs
//! actor's latency between them, **not atomic**, as the edit tools of real harnesses are. Two
//! concurrent edits of one file can therefore lose an update (both read the old text, the
//! second write wins); which seeds lose it depends on the latencies the seed draws. The
//! shipped race scenario relies on exactly this, so it must stay that way.

use serde_json::{json, Value};
use simtape::cap::fs::FsHandle;
use simtape::cap::llm::ToolDefinition;

use super::{text_argument, Failure, Kind, Tool};

/// A built-in filesystem tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FsTool {
    Read,
    Write,
    Append,
    Edit,
    List,
    Delete,
    Rename,
    MakeDir,
}

/// Returns the fs tools in the order the model is offered them.
pub(crate) fn tools() -> Vec<Tool> {
    let path =
        || json!({"type": "string", "description": "A path relative to the workspace root."});
    let text = |what: &str| json!({"type": "string", "description": what});
    let tool = |name: &str, description: &str, properties: Value, required: &[&str], kind| {
        let parameters = json!({"type": "object", "properties": properties, "required": required});
        Tool::new(
            ToolDefinition {
                name: name.to_string(),
                description: description.to_string(),
                parameters,
            },
            Kind::Fs(kind),
        )
    };
    vec![
        tool(
            "read_file",
            "Returns the text of a file.",
            json!({"path": path()}),
            &["path"],
            FsTool::Read,
        ),
        tool(
            "write_file",
            "Creates or replaces a file with the given text.",
            json!({"path": path(), "content": text("The file's new text.")}),
            &["path", "content"],
            FsTool::Write,
        ),
        tool(
            "append_file",
            "Appends text to a file, creating it when missing.",
            json!({"path": path(), "content": text("The text to add at the end.")}),
            &["path", "content"],
            FsTool::Append,
        ),
        tool(
            "edit_file",
            "Replaces the first occurrence of `old` in a file with `new`.",
            json!({"path": path(), "old": text("The exact text to replace."), "new": text("The replacement.")}),
            &["path", "old", "new"],
            FsTool::Edit,
        ),
        tool(
            "list_dir",
            "Lists the names in a directory, one a line (\".\" is the root).",
            json!({"path": path()}),
            &["path"],
            FsTool::List,
        ),
        tool(
            "delete_file",
            "Deletes a file.",
            json!({"path": path()}),
            &["path"],
            FsTool::Delete,
        ),
        tool(
            "rename",
            "Moves a file or directory.",
            json!({"from": path(), "to": path()}),
            &["from", "to"],
            FsTool::Rename,
        ),
        tool(
            "make_dir",
            "Creates a directory.",
            json!({"path": path()}),
            &["path"],
            FsTool::MakeDir,
        ),
    ]
}

/// Runs `tool` with checked `arguments`; the result text says what happened.
pub(crate) async fn call(fs: FsHandle, tool: FsTool, arguments: &Value) -> Result<String, Failure> {
    let path = text_argument(arguments, "path");
    match tool {
        FsTool::Read => {
            let bytes = fs.read(path).await?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        }
        FsTool::Write => {
            let content = text_argument(arguments, "content");
            fs.write(path, content.as_bytes()).await?;
            Ok(format!("wrote {} bytes to {path}", content.len()))
        }
        FsTool::Append => {
            let content = text_argument(arguments, "content");
            fs.append(path, content.as_bytes()).await?;
            Ok(format!("appended {} bytes to {path}", content.len()))
        }
        FsTool::Edit => edit(fs, path, arguments).await,
        FsTool::List => Ok(fs.list(path).await?.join("\n")),
        FsTool::Delete => {
            fs.remove(path).await?;
            Ok(format!("deleted {path}"))
        }
        FsTool::Rename => {
            let (from, to) = (
                text_argument(arguments, "from"),
                text_argument(arguments, "to"),
            );
            fs.rename(from, to).await?;
            Ok(format!("renamed {from} to {to}"))
        }
        FsTool::MakeDir => {
            fs.create_dir(path).await?;
            Ok(format!("created directory {path}"))
        }
    }
}

/// `edit_file`: read, replace the first occurrence, write; two fs calls (see the module docs).
async fn edit(fs: FsHandle, path: &str, arguments: &Value) -> Result<String, Failure> {
    let old = text_argument(arguments, "old");
    let new = text_argument(arguments, "new");
    if old.is_empty() {
        return Err(Failure::Tool("\"old\" must not be empty".to_string()));
    }
    let bytes = fs.read(path).await?;
    let text = String::from_utf8_lossy(&bytes);
    if !text.contains(old) {
        return Err(Failure::Tool(format!("{old:?} not found in {path}")));
    }
    let edited = text.replacen(old, new, 1);
    fs.write(path, edited.into_bytes()).await?;
    Ok(format!("edited {path}"))
}
