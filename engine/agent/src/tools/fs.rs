//! The built-in filesystem tools, over the run's overlay (`host.fs()`).
//!
//! Each tool is one fs call, except `edit_file`: it stats the file (a directory or a file over
//! [`EDIT_BYTES_MAX`] is refused), reads it, replaces the first occurrence of `old` with `new`,
//! and writes it back: three separate calls with the fs actor's latency between them, **not
//! atomic**, as the edit tools of real harnesses are. Two concurrent edits of one file can
//! therefore lose an update (one reads the old text before the other's write lands, and its
//! own write then drops that edit); which seeds lose it depends on the latencies the seed
//! draws for the stats, reads and writes. The shipped race scenario relies on exactly this, so
//! it must stay that way.

use serde_json::{json, Value};
use simtape::cap::fs::{FileKind, FsHandle};
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

/// Returns the fs tools in the order the model is offered them. The parameter schemas are
/// kept to names and types: every model call carries them, so each byte is paid for on every
/// turn (the descriptions say what the arguments mean).
pub(crate) fn tools() -> Vec<Tool> {
    let tool = |name: &str, description: &str, keys: &[&str], kind| {
        let properties: serde_json::Map<String, Value> = keys
            .iter()
            .map(|key| (key.to_string(), json!({"type": "string"})))
            .collect();
        let parameters = json!({"type": "object", "properties": properties, "required": keys});
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
            "Returns the text of the file at `path` (relative to the workspace root).",
            &["path"],
            FsTool::Read,
        ),
        tool(
            "write_file",
            "Creates or replaces the file at `path` with `content`.",
            &["path", "content"],
            FsTool::Write,
        ),
        tool(
            "append_file",
            "Appends `content` to the file at `path`, creating it when missing.",
            &["path", "content"],
            FsTool::Append,
        ),
        tool(
            "edit_file",
            "Replaces the first occurrence of the exact text `old` in the file at `path` with `new`.",
            &["path", "old", "new"],
            FsTool::Edit,
        ),
        tool(
            "list_dir",
            "Lists the names in the directory at `path`, one a line (\".\" is the root).",
            &["path"],
            FsTool::List,
        ),
        tool(
            "delete_file",
            "Deletes the file at `path`.",
            &["path"],
            FsTool::Delete,
        ),
        tool(
            "rename",
            "Moves the file or directory at `from` to `to`.",
            &["from", "to"],
            FsTool::Rename,
        ),
        tool(
            "make_dir",
            "Creates the directory at `path`.",
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

/// The largest file `edit_file` edits, in bytes.
pub const EDIT_BYTES_MAX: u64 = 1 << 20;

/// `edit_file`: stat, read, replace the first occurrence, write; three fs calls (see the
/// module docs).
async fn edit(fs: FsHandle, path: &str, arguments: &Value) -> Result<String, Failure> {
    let old = text_argument(arguments, "old");
    let new = text_argument(arguments, "new");
    if old.is_empty() {
        return Err(Failure::Tool("\"old\" must not be empty".to_string()));
    }
    let stat = fs.stat(path).await?;
    if stat.kind != FileKind::File {
        return Err(Failure::Tool(format!("{path} is a directory")));
    }
    if stat.size > EDIT_BYTES_MAX {
        let size = stat.size;
        return Err(Failure::Tool(format!(
            "{path} is {size} bytes; edit_file edits files of at most {EDIT_BYTES_MAX} bytes"
        )));
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
