//! `simtape new NAME`: writes a small working scenario (and the worktree it edits) to start from.

use std::path::{Path, PathBuf};

use crate::args::NewArgs;
use crate::exit::{CliError, CliResult, OK};

/// The scenario template; `{name}` is replaced by the scenario's name.
const TEMPLATE: &str = r#"# {name}: a starting point. Edit it, then `simtape check` and `simtape run` it.
#
# What it shows: a writer task edits a file in a copy-on-write overlay of data/{name}/worktree
# (the real directory is never touched) after a seeded random delay, tells a reviewer task over
# a channel, and the reviewer logs an event and declares the outcome. The network is closed
# except for one allowed host.
#
# Seeds: 1, 2, 3.
# Expected outcome: every seed ends ok with the outcome `reviewed = true` and an fs diff of one
# modified file (notes.md); the end time differs between seeds.

[scenario]
name = "{name}"
description = "A writer and a reviewer over an overlay."
seeds = [1, 2, 3]

[limits]
virtual_time_max_ns = "10m"

[fs]
root = "data/{name}/worktree"

[network]
allow = ["api.example.com"]

[[task]]
name = "writer"
steps = [
  { sleep_random = { min = "10ms", max = "200ms" } },
  { read = "notes.md" },
  { append = "notes.md", content = "- reviewed by the simulation\n" },
  { connect = "api.example.com:443" },
  { send = "edits", value = "notes.md" },
]

[[task]]
name = "reviewer"
steps = [
  { recv = "edits", log = "edit-received" },
  { sleep = "50ms" },
  { event = "review", fields = { verdict = "looks good" } },
  { outcome = "reviewed", value = true },
]
"#;

/// The file the scenario's worktree starts with.
const NOTES: &str = "# Notes\n\n- written by hand\n";

pub(crate) fn run(args: &NewArgs) -> CliResult {
    let name = &args.name;
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !valid {
        return Err(CliError::usage(format!(
            "scenario name {name:?}: expected lower-case letters, digits and '-'"
        )));
    }
    let scenario = args.dir.join(format!("{name}.toml"));
    let notes = args
        .dir
        .join("data")
        .join(name)
        .join("worktree")
        .join("notes.md");
    for path in [&scenario, &notes] {
        if path.exists() {
            return Err(CliError::usage(format!(
                "{} exists; not overwriting it",
                path.display()
            )));
        }
    }
    write(&scenario, &TEMPLATE.replace("{name}", name))?;
    write(&notes, NOTES)?;
    println!("wrote {} and {}", scenario.display(), notes.display());
    println!(
        "next: simtape check {0}; simtape run {0} --tape out/{1}.tape",
        scenario.display(),
        name
    );
    Ok(OK)
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    let io = |e: std::io::Error| CliError::usage(format!("{}: {e}", path.display()));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(path, text).map_err(io)
}

/// Returns the default directory for new scenarios: `scenarios/` when it exists, else `.`.
pub(crate) fn default_dir() -> PathBuf {
    let scenarios = PathBuf::from("scenarios");
    if scenarios.is_dir() {
        scenarios
    } else {
        PathBuf::from(".")
    }
}
