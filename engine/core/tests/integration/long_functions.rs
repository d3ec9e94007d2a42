//! No function in the engine's library code runs over [`LINES_MAX`] lines without a comment
//! saying why (`// Long because: …` directly above it, among its doc comment and
//! attributes): a long function is read as a whole, and the reader is owed the reason it
//! was not split.

use super::source_tree::{root, sources};

/// The longest function that needs no reason.
const LINES_MAX: usize = 100;

/// What marks the reason.
const REASON: &str = "Long because:";

/// Whether `line` starts a function item.
fn starts_fn(line: &str) -> bool {
    let mut words = line.split_whitespace().peekable();
    while let Some(word) = words.next() {
        match word {
            "pub" | "async" | "unsafe" | "const" | "extern" | "\"C\"" => continue,
            _ if word.starts_with("pub(") => continue,
            "fn" => return words.peek().is_some(),
            _ => return false,
        }
    }
    false
}

/// The braces of `line` outside string and char literals and comments, as a net count.
fn net_braces(line: &str) -> i64 {
    let mut net = 0;
    let mut in_string = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (in_string, c) {
            (false, '/') if chars.peek() == Some(&'/') => break,
            (false, '"') => in_string = true,
            (true, '\\') => {
                chars.next();
            }
            (true, '"') => in_string = false,
            // A char literal of a brace: '{' or '}'.
            (false, '\'') if matches!(chars.peek(), Some('{' | '}')) => {
                chars.next();
            }
            (false, '{') => net += 1,
            (false, '}') => net -= 1,
            _ => {}
        }
    }
    net
}

/// The functions of `text` over the limit with no reason above them: (line, name, length).
fn unexplained(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut in_tests = false;
    for (index, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("mod tests") {
            in_tests = true;
        }
        if in_tests || !starts_fn(line) {
            continue;
        }
        // Find the body's end: braces counted from the signature on.
        let mut depth = 0;
        let mut opened = false;
        let mut end = None;
        for (offset, body) in lines[index..].iter().enumerate() {
            let net = net_braces(body);
            if !opened && body.contains('{') {
                opened = true;
            }
            if !opened && body.trim_end().ends_with(';') {
                break; // a declaration without a body
            }
            depth += net;
            if opened && depth <= 0 {
                end = Some(index + offset);
                break;
            }
        }
        let Some(end) = end else { continue };
        let length = end - index + 1;
        if length <= LINES_MAX {
            continue;
        }
        let mut above = index;
        let mut reasoned = false;
        while above > 0 {
            above -= 1;
            let prior = lines[above].trim_start();
            if !(prior.starts_with("//") || prior.starts_with("#[")) {
                break;
            }
            reasoned |= prior.contains(REASON);
        }
        if !reasoned {
            let name = line
                .split("fn ")
                .nth(1)
                .unwrap_or("")
                .split(['(', '<'])
                .next();
            found.push((index + 1, name.unwrap_or("").to_string(), length));
        }
    }
    found
}

#[test]
fn every_function_over_the_limit_says_why_it_is_long() {
    let mut files = Vec::new();
    for krate in ["core", "mcp", "eval", "agent", "serve", "cli", "macros"] {
        files.extend(sources(&root().join("engine").join(krate).join("src")));
    }
    let mut unexplained_all = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, name, length) in unexplained(&text) {
            let shown = file
                .strip_prefix(root())
                .unwrap_or(file)
                .display()
                .to_string();
            unexplained_all.push(format!("{shown}:{line} {name} ({length} lines)"));
        }
    }
    assert!(
        unexplained_all.is_empty(),
        "functions over {LINES_MAX} lines without a `// {REASON}` comment above:\n{}",
        unexplained_all.join("\n")
    );
}

#[test]
fn the_count_finds_a_long_function_and_takes_a_reason() {
    // Goal: the scan is not vacuous: a 101-line body is found, and the reason clears it.
    let body: String = (0..LINES_MAX)
        .map(|i| format!("    let _x{i} = \"}}\";\n"))
        .collect();
    let long = format!("pub(crate) fn long() {{\n{body}}}\n");
    assert_eq!(unexplained(&long).len(), 1, "{long}");
    let reasoned = format!("/// Doc.\n// {REASON} one match over every kind.\n{long}");
    assert!(unexplained(&reasoned).is_empty());
    let short = "fn short() {\n    let s = '{';\n}\n";
    assert!(unexplained(short).is_empty());
}
