//! No type name means two things: a `pub` type's name is declared once in the engine's
//! library code, and within one crate no two crate-visible types share a name (a
//! reader meeting `InputFile` or `ToolFault` knows which one it is without its path).
//! Counted from the source, outside unit tests, like the other structure tests.

use std::collections::BTreeMap;

use super::source_tree::{root, texts};

/// The crates whose library code is held to it.
const CRATES: [&str; 7] = ["core", "mcp", "eval", "agent", "serve", "cli", "macros"];

/// A crate-visible type declaration (`pub` or `pub(crate)`, not a trait's associated
/// type): its name and whether it is `pub` without a restriction. A private or
/// `pub(super)` type is its module's own, read where it is declared.
fn declared(line: &str) -> Option<(&str, bool)> {
    let mut words = line.split_whitespace();
    let public = match words.next()? {
        "pub" => true,
        "pub(crate)" => false,
        _ => return None,
    };
    let kind = words.next()?;
    if !matches!(kind, "struct" | "enum" | "trait" | "type" | "union") {
        return None;
    }
    let name = words.next()?;
    let end = name
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    let name = &name[..end];
    name.starts_with(|c: char| c.is_ascii_uppercase())
        .then_some((name, public))
}

/// Every type declared in `krate`'s library code: name → (file:line, public) of each.
fn declarations(krate: &str) -> BTreeMap<String, Vec<(String, bool)>> {
    let mut found: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    for (shown, text) in texts(&root().join("engine").join(krate).join("src")) {
        for (number, line) in text.lines().enumerate() {
            if line.starts_with("#[cfg(test)]") {
                break;
            }
            if let Some((name, public)) = declared(line.trim_start()) {
                let place = format!("{shown}:{}", number + 1);
                found
                    .entry(name.to_string())
                    .or_default()
                    .push((place, public));
            }
        }
    }
    found
}

#[test]
fn no_type_name_is_declared_twice() {
    let mut public: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut twice = Vec::new();
    for krate in CRATES {
        for (name, places) in declarations(krate) {
            if places.len() > 1 {
                let at: Vec<&str> = places.iter().map(|(place, _)| place.as_str()).collect();
                twice.push(format!("{name} in {krate}: {}", at.join(", ")));
            }
            for (place, is_public) in places {
                if is_public {
                    public.entry(name.clone()).or_default().push(place);
                }
            }
        }
    }
    for (name, places) in public {
        if places.len() > 1 {
            twice.push(format!("pub {name}: {}", places.join(", ")));
        }
    }
    assert!(
        twice.is_empty(),
        "type names declared twice (rename one so each name means one thing):\n{}",
        twice.join("\n")
    );
}

#[test]
fn the_reader_sees_declarations_and_their_visibility() {
    assert_eq!(
        declared("pub struct Omissions {"),
        Some(("Omissions", true))
    );
    assert_eq!(declared("pub(crate) enum Step {"), Some(("Step", false)));
    assert_eq!(declared("struct Slot<T>(T);"), None);
    assert_eq!(declared("pub(super) struct Lines {"), None);
    assert_eq!(
        declared("pub type Result<T> = std::result::Result<T, E>;"),
        Some(("Result", true))
    );
    assert_eq!(declared("pub fn struct_like() {}"), None);
    assert_eq!(declared("let type_name = 1;"), None);
}
