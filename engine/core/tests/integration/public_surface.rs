//! The core's public surface, counted from its source, may only shrink: an item declared
//! `pub` (not `pub(crate)`) outside unit tests. The workspace warns on `unreachable_pub` and
//! CI denies warnings, so every such item is reachable from outside the crate, and the count
//! is the surface. docs/ARCHITECTURE.md gives the counts and how they were cut.

use super::source_tree::{root, sources};

/// The surface as of the last cut (types, functions, fields, constants), with 4 functions
/// added on purpose since (453 then): the one text normalizer's `place`, `absolute_paths`
/// and `changed_words` (the evidence's log goes through it) and `ScenarioFailure::policy`
/// (the agent's failure holds the core's).
const SURFACE_MAX: Surface = Surface {
    types: 225,
    functions: 457,
    fields: 358,
    constants: 34,
};

/// Public items by kind: types (struct, enum, trait, type alias, union), functions (free
/// and inherent methods; trait methods carry no `pub`), named fields, constants and statics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Surface {
    types: usize,
    functions: usize,
    fields: usize,
    constants: usize,
}

/// Counts the public items of one file's text, up to its unit tests.
fn count(text: &str, surface: &mut Surface) {
    for line in text.lines() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let Some(item) = line.trim_start().strip_prefix("pub ") else {
            continue;
        };
        let mut words = item.split_whitespace();
        let mut first = words.next().unwrap_or("");
        while matches!(first, "const" | "async" | "unsafe")
            && words
                .clone()
                .next()
                .is_some_and(|next| matches!(next, "fn" | "async" | "unsafe" | "const"))
        {
            first = words.next().unwrap_or("");
        }
        match first {
            "struct" | "enum" | "trait" | "type" | "union" => surface.types += 1,
            "fn" => surface.functions += 1,
            "const" | "static" => surface.constants += 1,
            name if name.ends_with(':') && line.starts_with(char::is_whitespace) => {
                surface.fields += 1
            }
            _ => {}
        }
    }
}

#[test]
fn the_core_public_surface_does_not_grow() {
    // Goal: a new public item of the core is a decision (raise the ratchet here, with the
    // reason), not an accident of a forgotten `pub(crate)`.
    let files = sources(&root().join("engine/core/src"));
    let mut surface = Surface::default();
    for file in files {
        count(&std::fs::read_to_string(file).unwrap(), &mut surface);
    }
    let grew = surface.types > SURFACE_MAX.types
        || surface.functions > SURFACE_MAX.functions
        || surface.fields > SURFACE_MAX.fields
        || surface.constants > SURFACE_MAX.constants;
    assert!(
        !grew,
        "the core's public surface grew: {surface:?}, at most {SURFACE_MAX:?}"
    );
}

#[test]
fn public_items_are_counted_by_kind() {
    // Goal: the counter tells items, fields and constants apart, and skips crate-private
    // items and unit tests.
    let text = "pub struct A {\n    pub x: u8,\n    pub(crate) y: u8,\n}\npub const fn f() {}\n\
                pub(crate) fn g() {}\npub const N: u8 = 1;\n#[cfg(test)]\nmod tests { pub fn t() {} }\n";
    let mut surface = Surface::default();
    count(text, &mut surface);
    assert_eq!(
        surface,
        Surface {
            types: 1,
            functions: 1,
            fields: 1,
            constants: 1
        }
    );
}
