//! Long strings stored once: a string of more than [`STRING_REF_MIN_BYTES`] inside a payload
//! goes to the content store like a blob, and the payload holds a reference in its place
//! (`docs/tape-format.md`, "Long strings").
//!
//! Why: a request body that enters `simtape serve` is on the tape as the gateway's `input`
//! record (the HTTP body, JSON text) and again as the LLM actor's `request` record (the
//! decoded messages). A long message is the same text in both, once escaped as a JSON string
//! literal and once decoded; stored by the content hash of its decoded text, it is on the tape
//! once. An `input` record's long string is cut at its long JSON string literals, each stored
//! decoded when one of the two escapings below gives back its exact text; any other string
//! is stored whole.
//!
//! A reader puts every string back ([`join_long_strings`]): the payload a tool sees is
//! byte for byte the one the writer was given.

use super::TapeError;

/// Strings longer than this are stored by reference. The LLM actor keeps a message over the
/// same size of the previous call by its digest alone (`cap/llm/digest.rs`): such a message
/// is a file or a document, worth a content-store entry.
pub const STRING_REF_MIN_BYTES: usize = 64 * 1024;

/// The kind bit that marks a payload holding string references.
pub(crate) const KIND_STRING_REFS_BIT: u8 = 0x40;

/// The MessagePack extension type of a string reference: its data is an array of pieces.
pub(crate) const EXT_STRING_REF: i8 = 1;

/// Stores a blob (its hash, its bytes) before the record that refers to it.
pub(crate) type StoreBlob<'s> = dyn FnMut(&[u8; 32], &[u8]) -> Result<(), TapeError> + 's;

/// How a piece's blob is written into the string it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// JSON string escaping as serde_json, JavaScript's `JSON.stringify` and Python's
    /// `ensure_ascii=False` write it: `"` `\` and control characters only.
    Json = 1,
    /// As Python's `json.dumps` default: also every character outside ASCII `0x20..=0x7e`,
    /// as `\uXXXX` (surrogate pairs above U+FFFF).
    JsonAscii = 2,
}

/// One piece of a referenced string.
enum Piece<'a> {
    /// Text kept in the reference.
    Text(&'a str),
    /// A blob inserted as it is.
    Blob([u8; 32]),
    /// A blob inserted JSON-escaped.
    Escaped(Escape, [u8; 32]),
}

/// A payload's string to replace: its encoded span and its pieces.
struct Replacement<'a> {
    span: std::ops::Range<usize>,
    pieces: Vec<Piece<'a>>,
}

/// Rewrites `payload` with every string over [`STRING_REF_MIN_BYTES`] by reference, handing
/// each blob to `store` (hash, bytes) first; cuts strings at their long JSON literals when
/// `json_literals`. Returns `None` when nothing is replaced, or when the payload is not one
/// MessagePack value or already holds an extension of the reference's type (kept as it is).
pub(crate) fn split_long_strings(
    payload: &[u8],
    json_literals: bool,
    store: &mut StoreBlob<'_>,
) -> Result<Option<Vec<u8>>, TapeError> {
    let mut long = Vec::new();
    let mut has_ref_ext = false;
    let walked = walk(payload, &mut |value| match value {
        Value::Str { span, text } if text.len() > STRING_REF_MIN_BYTES => long.push((span, text)),
        Value::Ext { kind, .. } if kind == EXT_STRING_REF => has_ref_ext = true,
        _ => {}
    });
    if walked.is_none() || has_ref_ext || long.is_empty() {
        return Ok(None);
    }
    let mut replacements = Vec::with_capacity(long.len());
    for (span, text) in long {
        let Ok(text) = std::str::from_utf8(text) else {
            continue;
        };
        let pieces = match json_literals.then(|| literal_pieces(text, store)) {
            Some(Ok(Some(pieces))) => pieces,
            Some(Err(error)) => return Err(error),
            Some(Ok(None)) | None => {
                let hash = sha256(text.as_bytes());
                store(&hash, text.as_bytes())?;
                vec![Piece::Blob(hash)]
            }
        };
        replacements.push(Replacement { span, pieces });
    }
    if replacements.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(payload.len().min(4096));
    let mut at = 0;
    for replacement in replacements {
        out.extend_from_slice(&payload[at..replacement.span.start]);
        write_reference(&mut out, &replacement.pieces);
        at = replacement.span.end;
    }
    out.extend_from_slice(&payload[at..]);
    Ok(Some(out))
}

/// Cuts `text` at its JSON string literals longer than [`STRING_REF_MIN_BYTES`] whose exact
/// text one [`Escape`] gives back from the decoded string; stores each decoded string.
/// Returns `None` when no literal qualifies.
fn literal_pieces<'t>(
    text: &'t str,
    store: &mut StoreBlob<'_>,
) -> Result<Option<Vec<Piece<'t>>>, TapeError> {
    let bytes = text.as_bytes();
    let mut pieces = Vec::new();
    let (mut kept_from, mut at) = (0, 0);
    while let Some(open) = find_byte(bytes, at, b'"') {
        let Some(close) = literal_end(bytes, open + 1) else {
            break;
        };
        at = close + 1;
        let raw = &text[open + 1..close];
        if raw.len() <= STRING_REF_MIN_BYTES {
            continue;
        }
        let Some((escape, decoded)) = [Escape::Json, Escape::JsonAscii]
            .into_iter()
            .find_map(|escape| Some((escape, decode_canonical(raw, escape)?)))
        else {
            continue;
        };
        let hash = sha256(decoded.as_bytes());
        store(&hash, decoded.as_bytes())?;
        pieces.push(Piece::Text(&text[kept_from..=open]));
        pieces.push(Piece::Escaped(escape, hash));
        kept_from = close;
    }
    if pieces.is_empty() {
        return Ok(None);
    }
    pieces.push(Piece::Text(&text[kept_from..]));
    Ok(Some(pieces))
}

/// Returns the index of the `"` that closes a literal whose text starts at `from`.
fn literal_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let next = from
            + bytes
                .get(from..)?
                .iter()
                .position(|b| *b == b'"' || *b == b'\\')?;
        if bytes[next] == b'"' {
            return Some(next);
        }
        from = next + 2;
    }
}

fn find_byte(bytes: &[u8], from: usize, byte: u8) -> Option<usize> {
    Some(from + bytes.get(from..)?.iter().position(|b| *b == byte)?)
}

/// Decodes the text `raw` of a JSON string literal when escaping the result as `escape`
/// writes `raw` back exactly; `None` otherwise (another escaping, or not JSON). One pass:
/// runs of literal bytes are copied whole.
fn decode_canonical(raw: &str, escape: Escape) -> Option<String> {
    let bytes = raw.as_bytes();
    let literal = |b: u8| match escape {
        Escape::Json => b >= 0x20 && b != b'\\' && b != b'"',
        Escape::JsonAscii => (0x20..=0x7e).contains(&b) && b != b'\\' && b != b'"',
    };
    let mut decoded = String::with_capacity(raw.len());
    let mut at = 0;
    let mut buf = [0u8; 12];
    while at < bytes.len() {
        let run = bytes[at..].iter().position(|b| !literal(*b));
        let end = run.map_or(bytes.len(), |run| at + run);
        decoded.push_str(&raw[at..end]);
        at = end;
        if at == bytes.len() {
            break;
        }
        // Not a literal byte: it must start an escape, and the canonical one.
        if bytes[at] != b'\\' {
            return None;
        }
        let c = match *bytes.get(at + 1)? {
            b'u' => {
                let unit = hex4(bytes.get(at + 2..at + 6)?)?;
                if (0xd800..0xdc00).contains(&unit) {
                    let low = bytes.get(at + 6..at + 12)?;
                    if &low[..2] != b"\\u" {
                        return None;
                    }
                    let low = hex4(&low[2..])?;
                    char::decode_utf16([unit, low]).next()?.ok()?
                } else {
                    char::from_u32(u32::from(unit))?
                }
            }
            b'"' => '"',
            b'\\' => '\\',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            _ => return None,
        };
        let written = escape_char(c, escape, &mut buf);
        if bytes.get(at..at + written)? != &buf[..written] {
            return None;
        }
        decoded.push(c);
        at += written;
    }
    Some(decoded)
}

/// Reads four lower-case hex digits (the canonical `\uXXXX`).
fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0u16, |acc, d| {
        let value = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return None,
        };
        Some(acc << 4 | u16::from(value))
    })
}

/// Writes `c` as `escape` writes it inside a JSON string into `out`; returns the length.
fn escape_char(c: char, escape: Escape, out: &mut [u8; 12]) -> usize {
    let short = match c {
        '"' => Some(b'"'),
        '\\' => Some(b'\\'),
        '\n' => Some(b'n'),
        '\r' => Some(b'r'),
        '\t' => Some(b't'),
        '\u{8}' => Some(b'b'),
        '\u{c}' => Some(b'f'),
        _ => None,
    };
    if let Some(letter) = short {
        out[0] = b'\\';
        out[1] = letter;
        return 2;
    }
    let code = u32::from(c);
    let as_unicode = code < 0x20 || (escape == Escape::JsonAscii && !(0x20..=0x7e).contains(&code));
    if !as_unicode {
        return c.encode_utf8(out).len();
    }
    let mut units = [0u16; 2];
    let mut len = 0;
    for unit in c.encode_utf16(&mut units).iter() {
        out[len..len + 2].copy_from_slice(b"\\u");
        for (i, shift) in [12, 8, 4, 0].into_iter().enumerate() {
            out[len + 2 + i] = b"0123456789abcdef"[usize::from((unit >> shift) & 0xf)];
        }
        len += 6;
    }
    len
}

/// Writes `escape`'s JSON escaping of `decoded` to `out`.
fn escape_into(out: &mut Vec<u8>, decoded: &str, escape: Escape) {
    let mut buf = [0u8; 12];
    for c in decoded.chars() {
        let written = escape_char(c, escape, &mut buf);
        out.extend_from_slice(&buf[..written]);
    }
}

fn write_reference(out: &mut Vec<u8>, pieces: &[Piece<'_>]) {
    let mut data = Vec::with_capacity(64);
    rmp::encode::write_array_len(&mut data, pieces.len() as u32).expect("a Vec takes every write");
    for piece in pieces {
        match piece {
            Piece::Text(text) => {
                rmp::encode::write_str(&mut data, text).expect("a Vec takes every write")
            }
            Piece::Blob(hash) => {
                rmp::encode::write_bin(&mut data, hash).expect("a Vec takes every write")
            }
            Piece::Escaped(escape, hash) => {
                rmp::encode::write_array_len(&mut data, 2).expect("a Vec takes every write");
                rmp::encode::write_uint(&mut data, *escape as u64)
                    .expect("a Vec takes every write");
                rmp::encode::write_bin(&mut data, hash).expect("a Vec takes every write");
            }
        }
    }
    rmp::encode::write_ext_meta(out, data.len() as u32, EXT_STRING_REF)
        .expect("a Vec takes every write");
    out.extend_from_slice(&data);
}

/// Why a payload's string references do not resolve (the reader names the record).
#[derive(Debug)]
pub(crate) enum ResolveError {
    /// The payload or a reference does not decode.
    Bad(String),
    /// A referenced blob is not in the tape or its store.
    Missing([u8; 32]),
}

/// Puts back every string `payload` holds by reference, fetching blobs from `blob`.
pub(crate) fn join_long_strings(
    payload: &[u8],
    blob: &mut dyn FnMut(&[u8; 32]) -> Option<Vec<u8>>,
) -> Result<Vec<u8>, ResolveError> {
    let mut refs = Vec::new();
    walk(payload, &mut |value| {
        if let Value::Ext { kind, span, data } = value {
            if kind == EXT_STRING_REF {
                refs.push((span, data));
            }
        }
    })
    .ok_or_else(|| ResolveError::Bad("the payload is not one MessagePack value".into()))?;
    let mut out = Vec::with_capacity(payload.len());
    let mut at = 0;
    for (span, data) in refs {
        out.extend_from_slice(&payload[at..span.start]);
        let text = join_pieces(data, blob)?;
        rmp::encode::write_str_len(&mut out, text.len() as u32).expect("a Vec takes every write");
        out.extend_from_slice(&text);
        at = span.end;
    }
    out.extend_from_slice(&payload[at..]);
    Ok(out)
}

fn join_pieces(
    mut data: &[u8],
    blob: &mut dyn FnMut(&[u8; 32]) -> Option<Vec<u8>>,
) -> Result<Vec<u8>, ResolveError> {
    let bad = |what: &str| ResolveError::Bad(format!("a string reference: {what}"));
    let value = rmpv::decode::read_value(&mut data).map_err(|e| bad(&e.to_string()))?;
    let pieces = value.as_array().ok_or_else(|| bad("not an array"))?;
    let hash_of = |value: &rmpv::Value| -> Result<[u8; 32], ResolveError> {
        value
            .as_slice()
            .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
            .ok_or_else(|| bad("a hash that is not 32 bytes"))
    };
    let mut text = Vec::new();
    for piece in pieces {
        match piece {
            rmpv::Value::String(kept) => text.extend_from_slice(kept.as_bytes()),
            rmpv::Value::Binary(_) => {
                let hash = hash_of(piece)?;
                text.extend(blob(&hash).ok_or(ResolveError::Missing(hash))?);
            }
            rmpv::Value::Array(escaped) if escaped.len() == 2 => {
                let escape = match escaped[0].as_u64() {
                    Some(1) => Escape::Json,
                    Some(2) => Escape::JsonAscii,
                    _ => return Err(bad("an unknown escaping")),
                };
                let hash = hash_of(&escaped[1])?;
                let bytes = blob(&hash).ok_or(ResolveError::Missing(hash))?;
                let decoded = std::str::from_utf8(&bytes).map_err(|_| bad("a blob not UTF-8"));
                escape_into(&mut text, decoded?, escape);
            }
            _ => return Err(bad("an unknown piece")),
        }
    }
    Ok(text)
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// A value of interest met by [`walk`].
enum Value<'a> {
    Str {
        span: std::ops::Range<usize>,
        text: &'a [u8],
    },
    Ext {
        kind: i8,
        span: std::ops::Range<usize>,
        data: &'a [u8],
    },
}

/// Visits every string and extension value of the one MessagePack value `bytes` holds, in
/// order; returns `None` when `bytes` is not exactly one value. Iterative: a count of the
/// values still to read stands in for the nesting.
fn walk<'a>(bytes: &'a [u8], visit: &mut dyn FnMut(Value<'a>)) -> Option<()> {
    let mut pending: u64 = 1;
    let mut at = 0usize;
    let be = |at: usize, n: usize| -> Option<usize> {
        let field = bytes.get(at..at + n)?;
        Some(
            field
                .iter()
                .fold(0usize, |acc, b| acc << 8 | usize::from(*b)),
        )
    };
    while pending > 0 {
        pending -= 1;
        let start = at;
        let marker = *bytes.get(at)?;
        at += 1;
        // (bytes of a length field, then whether it is a str, bin or ext)
        let (len_bytes, what) = match marker {
            0x00..=0x7f | 0xc0 | 0xc2 | 0xc3 | 0xe0..=0xff => continue,
            0x80..=0x8f => {
                pending += 2 * u64::from(marker & 0x0f);
                continue;
            }
            0x90..=0x9f => {
                pending += u64::from(marker & 0x0f);
                continue;
            }
            0xa0..=0xbf => {
                let len = usize::from(marker & 0x1f);
                visit(Value::Str {
                    span: start..at + len,
                    text: bytes.get(at..at + len)?,
                });
                at += len;
                continue;
            }
            _ => sized(marker)?,
        };
        match what {
            b'n' => at += len_bytes,
            b'a' | b'm' => {
                let count = be(at, len_bytes)? as u64;
                pending += if what == b'm' { 2 * count } else { count };
                at += len_bytes;
            }
            b'f' => {
                let kind = *bytes.get(at)? as i8;
                let data = bytes.get(at + 1..at + 1 + len_bytes)?;
                at += 1 + len_bytes;
                visit(Value::Ext {
                    kind,
                    span: start..at,
                    data,
                });
            }
            _ => {
                let len = be(at, len_bytes)?;
                at += len_bytes;
                if what == b'e' {
                    let kind = *bytes.get(at)? as i8;
                    at += 1;
                    let data = bytes.get(at..at + len)?;
                    at += len;
                    visit(Value::Ext {
                        kind,
                        span: start..at,
                        data,
                    });
                } else {
                    let text = bytes.get(at..at + len)?;
                    at += len;
                    if what == b's' {
                        visit(Value::Str {
                            span: start..at,
                            text,
                        });
                    }
                }
            }
        }
    }
    (at == bytes.len()).then_some(())
}

/// The length field (in bytes) and the shape of a marker whose value is not in the marker
/// itself: `n` a number, `b` bin, `s` str, `e` ext, `f` fixext (the length is its data's),
/// `a` array, `m` map. `None` for `0xc1`, which MessagePack never uses.
fn sized(marker: u8) -> Option<(usize, u8)> {
    Some(match marker {
        0xc1 => return None,
        0xc4 => (1, b'b'),
        0xc5 => (2, b'b'),
        0xc6 => (4, b'b'),
        0xc7 => (1, b'e'),
        0xc8 => (2, b'e'),
        0xc9 => (4, b'e'),
        0xca => (4, b'n'),
        0xcb => (8, b'n'),
        0xcc | 0xd0 => (1, b'n'),
        0xcd | 0xd1 => (2, b'n'),
        0xce | 0xd2 => (4, b'n'),
        0xcf | 0xd3 => (8, b'n'),
        0xd4 => (1, b'f'),
        0xd5 => (2, b'f'),
        0xd6 => (4, b'f'),
        0xd7 => (8, b'f'),
        0xd8 => (16, b'f'),
        0xd9 => (1, b's'),
        0xda => (2, b's'),
        0xdb => (4, b's'),
        0xdc => (2, b'a'),
        0xdd => (4, b'a'),
        0xde => (2, b'm'),
        0xdf => (4, b'm'),
        // Every other marker holds its value (`walk` reads those itself).
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    type Blobs = BTreeMap<[u8; 32], Vec<u8>>;

    fn split(payload: &[u8], json: bool) -> (Option<Vec<u8>>, Blobs) {
        let mut blobs = BTreeMap::new();
        let out = split_long_strings(payload, json, &mut |hash, bytes| {
            blobs.insert(*hash, bytes.to_vec());
            Ok(())
        })
        .unwrap();
        (out, blobs)
    }

    fn join(payload: &[u8], blobs: &Blobs) -> Vec<u8> {
        join_long_strings(payload, &mut |hash| blobs.get(hash).cloned()).unwrap()
    }

    #[test]
    fn a_long_string_is_stored_once_and_comes_back() {
        // Goal: a message in a JSON body and the same message decoded share one blob, and
        // both payloads read back byte for byte.
        let content = format!("line \"one\"\n{}é", "x".repeat(STRING_REF_MIN_BYTES));
        let body = serde_json::json!({"model": "m", "messages": [
            {"role": "user", "content": content}]})
        .to_string();
        let input = rmp_serde::to_vec(&(7u64, "message", ("POST", &body))).unwrap();
        let request = rmp_serde::to_vec(&("chat", [("user", &content)])).unwrap();
        let (input_refs, mut blobs) = split(&input, true);
        let (request_refs, request_blobs) = split(&request, false);
        assert_eq!(
            blobs.keys().collect::<Vec<_>>(),
            request_blobs.keys().collect::<Vec<_>>()
        );
        blobs.extend(request_blobs);
        let (input_refs, request_refs) = (input_refs.unwrap(), request_refs.unwrap());
        assert!(input_refs.len() < 200, "{}", input_refs.len());
        assert!(request_refs.len() < 100, "{}", request_refs.len());
        assert_eq!(join(&input_refs, &blobs), input);
        assert_eq!(join(&request_refs, &blobs), request);
    }

    #[test]
    fn python_ascii_escapes_are_kept_and_other_escapes_stay_text() {
        // Goal: a literal escaped as Python's json.dumps writes it is stored decoded; one no
        // escaping here reproduces (`\/`) stays in the reference as text, exactly.
        let long = "é\u{1F600}\u{7f}/".repeat(STRING_REF_MIN_BYTES / 4);
        let ascii = format!("{{\"a\": \"{}\"}}", escape_string(&long, Escape::JsonAscii));
        assert!(ascii.contains("\\ud83d\\ude00") && ascii.contains("\\u007f"));
        let odd = format!("[\"{}\"]", long.replace('/', "\\/"));
        for body in [ascii, odd] {
            let payload = rmp_serde::to_vec(&(&body,)).unwrap();
            let (refs, blobs) = split(&payload, true);
            let refs = refs.unwrap();
            assert_eq!(join(&refs, &blobs), payload);
        }
    }

    #[test]
    fn short_payloads_and_foreign_extensions_are_left_alone() {
        // Goal: nothing over the size, or an extension of the reference's type already in
        // the payload, leaves the payload as it is; bad MessagePack too.
        assert!(split(&rmp_serde::to_vec(&("a", 1, [2, 3])).unwrap(), true)
            .0
            .is_none());
        let mut foreign = vec![0x92];
        rmp::encode::write_ext_meta(&mut foreign, 1, EXT_STRING_REF).unwrap();
        foreign.push(0);
        rmp::encode::write_str(&mut foreign, &"x".repeat(STRING_REF_MIN_BYTES + 1)).unwrap();
        assert!(split(&foreign, false).0.is_none());
        assert!(split(&[0xc1], false).0.is_none());
        assert!(split(&[0x92, 0x01], false).0.is_none());
    }

    fn escape_string(text: &str, escape: Escape) -> String {
        let mut out = Vec::new();
        escape_into(&mut out, text, escape);
        String::from_utf8(out).unwrap()
    }
}
