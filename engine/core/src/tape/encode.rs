//! Hand-written MessagePack encoding for the hot path: the same bytes as `rmp`, with no
//! generic writer layers (tests compare them).

/// Bytes of the stack buffer a small record is assembled in before one copy to the buffer.
pub(crate) const FRAME_STAGING_BYTES: usize = 96;

/// Writes `value` as the smallest MessagePack unsigned integer into `out`; returns the length.
#[inline(always)]
pub(crate) fn encode_uint(out: &mut [u8], value: u64) -> usize {
    if value < 0x80 {
        out[0] = value as u8;
        1
    } else if value <= 0xff {
        out[0] = 0xcc;
        out[1] = value as u8;
        2
    } else if value <= 0xffff {
        out[0] = 0xcd;
        out[1..3].copy_from_slice(&(value as u16).to_be_bytes());
        3
    } else if value <= 0xffff_ffff {
        out[0] = 0xce;
        out[1..5].copy_from_slice(&(value as u32).to_be_bytes());
        5
    } else {
        out[0] = 0xcf;
        out[1..9].copy_from_slice(&value.to_be_bytes());
        9
    }
}

/// [`encode_uint`] at offset `at` of a staging buffer. `at` must be below 64 (a record's
/// fixed fields always are): the mask tells the compiler so, and every store below goes
/// unchecked, where slicing `out[at..]` checked each one.
#[inline(always)]
pub(crate) fn put_uint(out: &mut [u8; FRAME_STAGING_BYTES], at: usize, value: u64) -> usize {
    debug_assert!(at < 64, "a record's fixed fields start below byte 64");
    let at = at & 0x3f;
    if value < 0x80 {
        out[at] = value as u8;
        1
    } else if value <= 0xff {
        out[at] = 0xcc;
        out[at + 1] = value as u8;
        2
    } else if value <= 0xffff {
        out[at] = 0xcd;
        out[at + 1..at + 3].copy_from_slice(&(value as u16).to_be_bytes());
        3
    } else if value <= 0xffff_ffff {
        out[at] = 0xce;
        out[at + 1..at + 5].copy_from_slice(&(value as u32).to_be_bytes());
        5
    } else {
        out[at] = 0xcf;
        out[at + 1..at + 9].copy_from_slice(&value.to_be_bytes());
        9
    }
}

/// Writes a MessagePack bin length marker into `out`; returns its length.
#[inline(always)]
pub(crate) fn encode_bin_len(out: &mut [u8], len: usize) -> usize {
    if len <= 0xff {
        out[0] = 0xc4;
        out[1] = len as u8;
        2
    } else if len <= 0xffff {
        out[0] = 0xc5;
        out[1..3].copy_from_slice(&(len as u16).to_be_bytes());
        3
    } else {
        out[0] = 0xc6;
        let len = u32::try_from(len).expect("payloads are limited far below 4 GiB");
        out[1..5].copy_from_slice(&len.to_be_bytes());
        5
    }
}

/// Writes a MessagePack str length marker into `out`; returns its length.
#[inline]
pub(crate) fn encode_str_len(out: &mut [u8], len: usize) -> usize {
    if len < 32 {
        out[0] = 0xa0 | len as u8;
        1
    } else if len <= 0xff {
        out[0] = 0xd9;
        out[1] = len as u8;
        2
    } else if len <= 0xffff {
        out[0] = 0xda;
        out[1..3].copy_from_slice(&(len as u16).to_be_bytes());
        3
    } else {
        out[0] = 0xdb;
        let len = u32::try_from(len).expect("names are far below 4 GiB");
        out[1..5].copy_from_slice(&len.to_be_bytes());
        5
    }
}

/// A small payload assembled on the stack: the spawn and exit records of the hot path.
#[derive(Debug)]
pub(crate) struct SmallPayload {
    bytes: [u8; 64],
    len: usize,
}

impl SmallPayload {
    /// Encodes `[task_id, name]`, or returns `None` when the name does not fit.
    #[inline]
    pub(crate) fn spawn(task_id: u32, name: &str) -> Option<SmallPayload> {
        let mut out = SmallPayload {
            bytes: [0; 64],
            len: 1,
        };
        if name.len() > 64 - 16 {
            return None;
        }
        out.bytes[0] = 0x92; // fixarray of 2
        out.len += encode_uint(&mut out.bytes[out.len..], u64::from(task_id));
        out.len += encode_str_len(&mut out.bytes[out.len..], name.len());
        out.bytes[out.len..out.len + name.len()].copy_from_slice(name.as_bytes());
        out.len += name.len();
        Some(out)
    }

    /// Encodes `[status]` for a short status word.
    #[inline]
    pub(crate) fn exit(status: &str) -> SmallPayload {
        assert!(status.len() < 32, "exit statuses are short words");
        let mut out = SmallPayload {
            bytes: [0; 64],
            len: 2,
        };
        out.bytes[0] = 0x91; // fixarray of 1
        out.bytes[1] = 0xa0 | status.len() as u8;
        out.bytes[2..2 + status.len()].copy_from_slice(status.as_bytes());
        out.len += status.len();
        out
    }

    /// Returns the encoded bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[test]
    fn hand_encoding_matches_rmp() {
        // Goal: the hot-path encoder writes exactly the bytes rmp writes, at every boundary.
        let values = [
            0,
            1,
            0x7f,
            0x80,
            0xff,
            0x100,
            0xffff,
            0x1_0000,
            0xffff_ffff,
            0x1_0000_0000,
            u64::MAX,
        ];
        for value in values {
            let mut ours = [0u8; 9];
            let len = encode_uint(&mut ours, value);
            let mut theirs = Vec::new();
            rmp::encode::write_uint(&mut theirs, value).unwrap();
            assert_eq!(&ours[..len], theirs.as_slice(), "uint {value}");
            let mut staged = [0u8; FRAME_STAGING_BYTES];
            let put = put_uint(&mut staged, 7, value);
            assert_eq!(&staged[7..7 + put], theirs.as_slice(), "put uint {value}");
        }
        for len in [0usize, 1, 0xff, 0x100, 0xffff, 0x1_0000] {
            let mut ours = [0u8; 5];
            let n = encode_bin_len(&mut ours, len);
            let mut theirs = Vec::new();
            rmp::encode::write_bin_len(&mut theirs, len as u32).unwrap();
            assert_eq!(&ours[..n], theirs.as_slice(), "bin len {len}");
        }
    }

    #[test]
    fn small_payloads_match_rmp_serde() {
        // Goal: the hand-built spawn and exit payloads are rmp-serde's bytes for the tuples.
        fn rmp<T: Serialize>(value: &T) -> Vec<u8> {
            rmp_serde::to_vec(value).unwrap()
        }
        for name in [
            "main",
            "",
            "a-name-of-exactly-thirty-two-ch!",
            &"n".repeat(48),
        ] {
            for id in [0u32, 1, 200, 70_000, u32::MAX] {
                let ours = SmallPayload::spawn(id, name).unwrap();
                assert_eq!(
                    ours.as_bytes(),
                    rmp(&(id, name)).as_slice(),
                    "{id} {name:?}"
                );
            }
        }
        assert!(SmallPayload::spawn(1, &"n".repeat(49)).is_none());
        for status in ["ok", "aborted", "panicked"] {
            assert_eq!(
                SmallPayload::exit(status).as_bytes(),
                rmp(&(status,)).as_slice()
            );
        }
        let mut out = [0u8; 5];
        for len in [0usize, 31, 32, 255, 256, 65_535, 65_536] {
            let n = encode_str_len(&mut out, len);
            let mut theirs = Vec::new();
            rmp::encode::write_str_len(&mut theirs, len as u32).unwrap();
            assert_eq!(&out[..n], theirs.as_slice(), "str len {len}");
        }
    }
}
