//! Decoding of `[normalize]`: the scenario's own rules for volatile fields of an agent
//! program's requests (beyond the built-in ones): JSON pointers whose value is replaced, and
//! patterns replaced in the request text. Patterns compile here, so a bad one is a check
//! error at its field.

use simtape::scenario::decoder::{one_of, Decoder, Field};

use crate::spec::{NormalizeSpec, Pattern};

/// The keys of `[normalize]`.
const NORMALIZE_KEYS: [&str; 2] = ["pointers", "patterns"];
/// The keys of one pattern rule.
const PATTERN_KEYS: [&str; 2] = ["match", "replace"];

/// Decodes `[normalize]`.
pub(crate) fn normalize(decoded: &mut Decoder, field: &Field<'_>) -> Option<NormalizeSpec> {
    let what = "a [normalize] table like { pointers = [\"/metadata/user_id\"] }";
    let mut fields = decoded.table(field, what)?;
    let pointers = match fields.take("pointers") {
        Some(field) => pointers(decoded, &field),
        None => Some(Vec::new()),
    };
    let patterns = match fields.take("patterns") {
        Some(field) => patterns(decoded, &field),
        None => Some(Vec::new()),
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&NORMALIZE_KEYS)),
    );
    Some(NormalizeSpec {
        pointers: pointers?,
        patterns: patterns?,
    })
}

fn pointers(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<String>> {
    let items = decoded.array(
        field,
        "an array of JSON pointers like [\"/metadata/user_id\"]",
    )?;
    let mut pointers = Vec::with_capacity(items.len());
    let mut complete = true;
    for item in &items {
        let what = "a JSON pointer starting with `/`";
        match decoded.string(item, what) {
            Some(pointer) if pointer.starts_with('/') => pointers.push(pointer.to_string()),
            Some(_) => {
                decoded.expected(item, what);
                complete = false;
            }
            None => complete = false,
        }
    }
    complete.then_some(pointers)
}

fn patterns(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<(Pattern, String)>> {
    let what = "an array of rules like [{ match = \"build \\\\d+\", replace = \"build <n>\" }]";
    let items = decoded.array(field, what)?;
    let mut patterns = Vec::with_capacity(items.len());
    let mut complete = true;
    for item in &items {
        match pattern(decoded, item) {
            Some(rule) => patterns.push(rule),
            None => complete = false,
        }
    }
    complete.then_some(patterns)
}

fn pattern(decoded: &mut Decoder, field: &Field<'_>) -> Option<(Pattern, String)> {
    let mut fields = decoded.table(field, "a rule like { match = \"…\", replace = \"…\" }")?;
    let regex = match fields.take("match") {
        Some(source) => {
            let text = decoded.string(&source, "a regular expression");
            text.and_then(|text| match Pattern::new(text) {
                Ok(pattern) => Some(pattern),
                Err(error) => {
                    let message = format!("expected a regular expression, found {text:?}: {error}");
                    decoded.problem(source.span.clone(), source.path.clone(), message);
                    None
                }
            })
        }
        None => {
            decoded.missing(&fields, "match", "a regular expression");
            None
        }
    };
    let replace = match fields.take("replace") {
        Some(text) => decoded
            .string(&text, "the replacement text")
            .map(String::from),
        None => {
            decoded.missing(&fields, "replace", "the replacement text");
            None
        }
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&PATTERN_KEYS)),
    );
    Some((regex?, replace?))
}
