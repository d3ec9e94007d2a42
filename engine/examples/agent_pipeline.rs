//! A small agent pipeline inside simtape: a model call, two concurrent file edits, a second
//! model call, against an LLM fixture and a copy-on-write overlay of `data/worktree`.
//!
//! Run it: `cargo run -p simtape --example agent_pipeline -- [SEED]`. It prints the fs diff and
//! the tape's hash; the same seed gives the same tape bytes, and another seed may pick the
//! other weighted answer of the fixture's first entry (and so a different diff and tape).

use std::path::{Path, PathBuf};

use simtape::cap::fs::{FsActor, FsDiff};
use simtape::cap::llm::{ChatRequest, ChatResponse, Llm, Message, ToolDefinition};
use simtape::cap::net::Network;
use simtape::Sim;

/// What one run of the pipeline leaves behind.
#[derive(Debug)]
pub struct PipelineRun {
    /// The model's final answer.
    pub answer: String,
    /// The overlay's diff against `data/worktree`.
    pub diff: FsDiff,
    /// The tape bytes.
    pub tape: Vec<u8>,
}

/// Returns the example's data directory.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data")
}

/// Runs the pipeline at `seed` and returns its answer, diff and tape.
pub fn run_pipeline(seed: u64) -> Result<PipelineRun, Box<dyn std::error::Error>> {
    let data = data_dir();
    let mut builder = Sim::builder();
    builder
        .seed(seed)
        .tape_in_memory()
        .llm(Llm::replay(data.join("llm.jsonl"))?)
        .fs(FsActor::new(data.join("worktree"))?)
        .network(Network::deny());
    let mut report = builder.build()?.run(|host| async move {
        let tools = vec![ToolDefinition::named("write_file")];
        let mut messages = vec![
            Message::system("You edit files in the worktree with write_file."),
            Message::user("Polish the worktree: greeting and README."),
        ];
        let first = complete(&host, &messages, &tools).await?;
        // The model asked for two edits: run them concurrently, as a harness would. The
        // overlay's seeded latencies decide which lands first.
        let edits: Vec<_> = first
            .tool_calls
            .iter()
            .map(|call| {
                let fs = host.fs();
                let path = call.arguments["path"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let content = call.arguments["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                host.spawn(&format!("edit {path}"), async move {
                    let bytes = content.len();
                    fs.write(&path, content.into_bytes())
                        .await
                        .map(|_| (path, bytes))
                })
            })
            .collect();
        messages.push(Message {
            tool_calls: first.tool_calls.clone(),
            ..Message::assistant(first.text.clone())
        });
        for (call, edit) in first.tool_calls.iter().zip(edits) {
            let (path, bytes) = edit
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            messages.push(Message::tool_result(
                &call.id,
                format!("wrote {bytes} bytes to {path}"),
            ));
        }
        let last = complete(&host, &messages, &tools).await?;
        Ok::<String, String>(last.text)
    })?;
    let answer = report.output.clone()?;
    let diff = report.fs_diff().expect("the run has a filesystem")?;
    let tape = report
        .summary
        .tape
        .take()
        .and_then(|t| t.memory)
        .expect("the tape is in memory");
    Ok(PipelineRun { answer, diff, tape })
}

async fn complete(
    host: &simtape::Host,
    messages: &[Message],
    tools: &[ToolDefinition],
) -> Result<ChatResponse, String> {
    let request = ChatRequest::new("example-model", messages.to_vec()).with_tools(tools.to_vec());
    host.llm()
        .complete(request)
        .await
        .map_err(|e| e.to_string())
}

#[allow(dead_code)] // the integration tests include this file for `run_pipeline` only
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(0);
    println!("seed={seed}");
    let run = run_pipeline(seed)?;
    println!("answer: {}", run.answer);
    print!("{}", run.diff.unified());
    println!(
        "tape: {} bytes, sha256 {}",
        run.tape.len(),
        simtape::tape::sha256_hex(&run.tape)
    );
    Ok(())
}
