//! The command lines simtape prints for a person to paste: POSIX shell quoting, and the
//! `simtape run` line that reproduces one run of a scenario at its seed.
//!
//! ```
//! use simtape_eval::reproduce::{command_line, run_command};
//! assert_eq!(command_line(&["cat", "my file"]), "cat 'my file'");
//! let line = run_command("s.toml".as_ref(), 7, None, None, &["--no-sandbox".to_string()]);
//! assert_eq!(line, "simtape run s.toml --seed 7 --no-sandbox");
//! ```

use std::path::Path;

/// Quotes one argument for a POSIX shell when it needs it.
pub fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@,+%".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Joins arguments into one shell command line.
pub fn command_line<S: AsRef<str>>(args: &[S]) -> String {
    args.iter()
        .map(|a| quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Returns the exact command line that reproduces a run of `scenario` at `seed`.
/// The guests of `--process-wasi` are part of the run, so the command names them too.
/// `deciding` are the run's other flags that decide its tape (`--decisions FILE`,
/// `--no-sandbox`): without them the command would run another run.
pub fn run_command(
    scenario: &Path,
    seed: u64,
    tape: Option<&Path>,
    process_wasi: Option<&Path>,
    deciding: &[String],
) -> String {
    let mut words = vec![
        "simtape".to_string(),
        "run".to_string(),
        scenario.display().to_string(),
        "--seed".to_string(),
        seed.to_string(),
    ];
    if let Some(tape) = tape {
        words.push("--tape".into());
        words.push(tape.display().to_string());
    }
    if let Some(dir) = process_wasi {
        words.push("--process-wasi".into());
        words.push(dir.display().to_string());
    }
    words.extend(deciding.iter().cloned());
    command_line(&words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_quoting() {
        // Goal: plain paths stay readable; spaces and quotes survive a shell round trip.
        assert_eq!(quote("scenarios/hello.toml"), "scenarios/hello.toml");
        assert_eq!(quote("my file.toml"), "'my file.toml'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }
}
