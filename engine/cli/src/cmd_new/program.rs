//! `simtape new NAME --command "python3 agent.py"`: a scenario whose agent is a program (the
//! `generic` adapter), its project, and a fixture to fill in with the model's side.

use std::path::{Component, Path, PathBuf};

use crate::exit::{CliError, CliResult, Outcome};
use simtape_eval::reproduce::quote;

/// The comment that opens `new --command`'s scenario: `{name}` and `{shown}` are replaced.
const HEADER: &str = r#"# {name}: the program `{shown}` under simulation. Fill in data/{name}/llm.jsonl with
# the model's side (one entry per model turn: docs/llm-fixtures.md), or record it from a
# real provider:
#   simtape run {name}.toml --record-llm anthropic --fixture-out data/{name}/llm.jsonl
# then `simtape check` and `simtape run` it.
#
# What it shows: the program starts in a copy-on-write overlay of data/{name}/project, in
# simtape's sandbox, with the task in SIMTAPE_TASK and the model at ANTHROPIC_BASE_URL,
# OPENAI_BASE_URL and GOOGLE_GEMINI_BASE_URL (docs/agents.md, "Generic programs"). Its turns
# and tool calls are counted from its model traffic; each line it prints is a message and
# the last one its answer.
#
# Seeds: 0. Expected outcome: until the fixture answers the program's requests, the run is
# an ERROR naming the first request no entry matched, with its digest.
"#;

/// A scenario whose agent is a program (the `generic` adapter): what `new --command` and
/// `record` write, each with its own opening comment.
pub(crate) struct ProgramScenario<'a> {
    /// The opening comment, every line starting with `#`.
    pub(crate) header: &'a str,
    /// The scenario's name.
    pub(crate) name: &'a str,
    /// The program, as the scenario's `command`.
    pub(crate) program: &'a str,
    /// Its arguments.
    pub(crate) args: &'a [String],
    /// The project directory (`[fs] root`), from the scenario's directory.
    pub(crate) root: &'a str,
    /// The LLM fixture, from the scenario's directory.
    pub(crate) fixture: &'a str,
    /// The task, handed to the program in `SIMTAPE_TASK`.
    pub(crate) task: &'a str,
}

impl ProgramScenario<'_> {
    /// Returns the scenario file's text.
    pub(crate) fn text(&self) -> String {
        let args = self
            .args
            .iter()
            .map(|arg| toml_string(arg))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            r#"{header}
[scenario]
name = {name}
description = "An agent program under simulation."
seeds = [0]

[fs]
root = {root}

[llm]
fixture = {fixture}

[agent]
kind = "command"
adapter = "generic"
command = {program}
args = [{args}]
task = {task}

# Verifiers judge the run; "agent exits 0" is always there. For example:
# [[verify]]
# kind = "tool_called"
# tool = "read_file"
#
# [[verify]]
# kind = "answer"
# contains = "done"
"#,
            header = self.header,
            name = toml_string(self.name),
            root = toml_string(self.root),
            fixture = toml_string(self.fixture),
            program = toml_string(self.program),
            task = toml_string(self.task),
        )
    }
}

/// The fixture to fill in: one answer for the first model call.
const FIXTURE: &str = r#"# The model's side of the program's run (docs/llm-fixtures.md): one entry per model turn.
{"simtape_llm": 1, "latency": {"base_ms": 300}}
{"id": "first", "match": {"turn": 1}, "response": {"text": "TODO: the model's first answer."}}
"#;

/// What the project starts with.
const README: &str = "The project the agent program works on: it sees a copy-on-write \
overlay of this directory as its working directory (the directory itself is never touched).\n";

/// Writes the program scenario `name` into `dir` for `command` (a command line, split as a
/// shell splits words).
pub(super) fn write_scenario(name: &str, dir: &Path, command: &str) -> CliResult {
    let words = split_words(command)
        .map_err(|problem| CliError::Usage(format!("--command {command:?}: {problem}")))?;
    let Some((program, args)) = words.split_first() else {
        return Err(CliError::Usage(
            "--command is empty: name the program".into(),
        ));
    };
    let scenario = dir.join(format!("{name}.toml"));
    let data = dir.join("data").join(name);
    let fixture = data.join("llm.jsonl");
    let readme = data.join("project").join("README.md");
    for path in [&scenario, &fixture, &readme] {
        if path.exists() {
            return Err(CliError::Usage(format!(
                "{} exists; not overwriting it",
                path.display()
            )));
        }
    }
    // A file the command names (`agent.py` here) is named from the scenario's directory,
    // against which simtape resolves the scenario's arguments.
    let args: Vec<String> = args.iter().map(|arg| from_dir(arg, dir)).collect();
    let header = HEADER
        .replace("{name}", name)
        .replace("{shown}", command.trim());
    let text = ProgramScenario {
        header: &header,
        name,
        program,
        args: &args,
        root: &format!("data/{name}/project"),
        fixture: &format!("data/{name}/llm.jsonl"),
        task: "Describe the task here.",
    }
    .text();
    super::write(&scenario, &text)?;
    super::write(&fixture, FIXTURE)?;
    super::write(&readme, README)?;
    println!(
        "wrote {}, {} and {}",
        scenario.display(),
        fixture.display(),
        readme.display()
    );
    let scenario_arg = quote(&scenario.display().to_string());
    println!(
        "next: fill in {}; simtape check {scenario_arg}; simtape run {scenario_arg} --tape out/{name}.tape",
        fixture.display()
    );
    Ok(Outcome::Success)
}

/// `arg` as the scenario in `dir` names it: a file named from the current directory becomes
/// a path relative to `dir`; anything else is kept.
fn from_dir(arg: &str, dir: &Path) -> String {
    let path = Path::new(arg);
    if arg.starts_with('-') || path.is_absolute() || !path.is_file() {
        return arg.to_string();
    }
    let (Ok(file), Ok(dir)) = (std::path::absolute(path), std::path::absolute(dir)) else {
        return arg.to_string();
    };
    relative(&file, &dir).display().to_string()
}

/// `path` relative to `base` (both absolute, without `..`).
fn relative(path: &Path, base: &Path) -> PathBuf {
    let (path, base) = (normal(path), normal(base));
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut relative = PathBuf::new();
    for _ in common..base.len() {
        relative.push("..");
    }
    for component in &path[common..] {
        relative.push(component);
    }
    relative
}

/// The components of `path` but `.`.
fn normal(path: &Path) -> Vec<Component<'_>> {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// `text` as a TOML basic string.
pub(crate) fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// Splits a command line into words as a POSIX shell does for plain words and quotes
/// (`'…'` literal, `"…"` with `\"` and `\\`, `\` outside quotes); no expansions.
fn split_words(line: &str) -> Result<Vec<String>, &'static str> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let word = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a ' quote is not closed"),
                    }
                }
            }
            '"' => {
                let word = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a \" quote is not closed"),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a \" quote is not closed"),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("it ends with a lone \\"),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_splits_as_a_shell_splits_it() {
        let words = split_words(r#"python3  'my agent.py' --task "say \"hi\"" a\ b ''"#).unwrap();
        assert_eq!(
            words,
            ["python3", "my agent.py", "--task", "say \"hi\"", "a b", ""]
        );
        assert!(split_words("python3 'open").is_err());
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_file_is_named_from_the_scenario_directory() {
        let base = Path::new("/p/scenarios");
        assert_eq!(
            relative(Path::new("/p/agent.py"), base),
            Path::new("../agent.py")
        );
        assert_eq!(
            relative(Path::new("/p/scenarios/a.py"), base),
            Path::new("a.py")
        );
    }
}
