//! Quotes command lines so a printed reproduce command can be pasted into a POSIX shell.

/// Quotes one argument for a POSIX shell when it needs it.
pub(crate) fn quote(arg: &str) -> String {
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
pub(crate) fn command_line<S: AsRef<str>>(args: &[S]) -> String {
    args.iter()
        .map(|a| quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
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
