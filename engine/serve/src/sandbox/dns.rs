//! The sandbox's DNS server: every name a program looks up gets an address of its own in
//! 198.18.0.0/15 (a range reserved for benchmarking, never routed), so that the connect that
//! follows names the host it was for. Nothing is forwarded: simtape answers alone, and every
//! lookup is on the tape.
//!
//! Only what a stub resolver sends is understood: one question, class IN. An `A` question gets
//! the name's address; any other type (`AAAA` first among them) gets an empty answer, so
//! resolvers fall back to IPv4. A query that cannot be read gets no answer (the resolver
//! retries, then fails, as it would against a broken server).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// The first address handed out: 198.18.0.1.
const BASE: u32 = u32::from_be_bytes([198, 18, 0, 1]);
/// Addresses in 198.18.0.0/15 after [`BASE`] (the last one of the range is left out).
const SPAN: u32 = (1 << 17) - 2;
/// Bytes of a name a question may carry (RFC 1035's limit).
const NAME_BYTES_MAX: usize = 255;
/// Names one sandbox may give addresses to; past it, lookups get no answer.
pub(super) const NAMES_MAX: usize = 4096;

/// The names looked up so far and the address each was given.
#[derive(Debug, Default)]
pub(super) struct Names {
    by_name: BTreeMap<String, Ipv4Addr>,
    by_address: BTreeMap<Ipv4Addr, String>,
}

impl Names {
    /// The address of `name` (lower case, no trailing dot): the same for the same name in
    /// every run (a hash of the name; a collision takes the next free address).
    pub(super) fn address(&mut self, name: &str) -> Option<Ipv4Addr> {
        if let Some(address) = self.by_name.get(name) {
            return Some(*address);
        }
        if self.by_name.len() >= NAMES_MAX {
            return None;
        }
        let mut offset = (fnv1a(name.as_bytes()) % u64::from(SPAN)) as u32;
        loop {
            let address = Ipv4Addr::from(BASE + offset);
            if !self.by_address.contains_key(&address) {
                self.by_name.insert(name.to_string(), address);
                self.by_address.insert(address, name.to_string());
                return Some(address);
            }
            offset = (offset + 1) % SPAN;
        }
    }

    /// The name an address was given to.
    pub(super) fn name(&self, address: Ipv4Addr) -> Option<&str> {
        self.by_address.get(&address).map(String::as_str)
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A question read from a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Question {
    /// The name, lower case, without the trailing dot.
    pub name: String,
    /// The type asked for (1 = A, 28 = AAAA, …).
    pub kind: u16,
}

impl Question {
    /// The type as its mnemonic, for the tape.
    pub(super) fn kind_name(&self) -> String {
        match self.kind {
            1 => "A".into(),
            5 => "CNAME".into(),
            12 => "PTR".into(),
            15 => "MX".into(),
            16 => "TXT".into(),
            28 => "AAAA".into(),
            33 => "SRV".into(),
            65 => "HTTPS".into(),
            other => format!("TYPE{other}"),
        }
    }
}

/// Reads the one question of `query`; `None` for anything else.
pub(super) fn question(query: &[u8]) -> Option<(Question, usize)> {
    if query.len() < 12 {
        return None;
    }
    let flags = u16::from_be_bytes([query[2], query[3]]);
    let questions = u16::from_be_bytes([query[4], query[5]]);
    // A query (QR = 0), opcode QUERY, exactly one question.
    if flags & 0x8000 != 0 || (flags >> 11) & 0xf != 0 || questions != 1 {
        return None;
    }
    let mut at = 12;
    let mut name = String::new();
    loop {
        let length = usize::from(*query.get(at)?);
        at += 1;
        if length == 0 {
            break;
        }
        // A compression pointer has no place in a question.
        if length & 0xc0 != 0 {
            return None;
        }
        let label = query.get(at..at + length)?;
        at += length;
        if !name.is_empty() {
            name.push('.');
        }
        for &byte in label {
            if !(byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_') {
                return None;
            }
            name.push(char::from(byte.to_ascii_lowercase()));
        }
        if name.len() > NAME_BYTES_MAX {
            return None;
        }
    }
    let kind = u16::from_be_bytes([*query.get(at)?, *query.get(at + 1)?]);
    let class = u16::from_be_bytes([*query.get(at + 2)?, *query.get(at + 3)?]);
    if class != 1 || name.is_empty() {
        return None;
    }
    Some((Question { name, kind }, at + 4))
}

/// The answer to `query`, whose question ends at `end`: the question echoed, and for an `A`
/// question the one address (TTL 60 s).
pub(super) fn answer(query: &[u8], end: usize, address: Option<Ipv4Addr>) -> Vec<u8> {
    let mut reply = Vec::with_capacity(end + 16);
    reply.extend_from_slice(&query[..2]);
    // QR, opcode QUERY, AA, RD copied from the query, RA; rcode NOERROR.
    let recursion = query[2] & 0x01;
    reply.extend_from_slice(&[0x84 | recursion, 0x80]);
    let answers: u16 = u16::from(address.is_some());
    reply.extend_from_slice(&1u16.to_be_bytes());
    reply.extend_from_slice(&answers.to_be_bytes());
    reply.extend_from_slice(&[0, 0, 0, 0]);
    reply.extend_from_slice(&query[12..end]);
    if let Some(address) = address {
        // The name by a pointer to the question's, type A, class IN, TTL, length 4.
        reply.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
        reply.extend_from_slice(&address.octets());
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &str, kind: u16) -> Vec<u8> {
        let mut query = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.') {
            query.push(label.len() as u8);
            query.extend_from_slice(label.as_bytes());
        }
        query.push(0);
        query.extend_from_slice(&kind.to_be_bytes());
        query.extend_from_slice(&1u16.to_be_bytes());
        query
    }

    #[test]
    fn a_name_gets_the_same_address_every_time_and_back() {
        let mut names = Names::default();
        let api = names.address("api.openai.com").unwrap();
        assert_eq!(names.address("api.openai.com"), Some(api));
        let other = names.address("example.com").unwrap();
        assert_ne!(api, other);
        assert_eq!(api.octets()[0], 198);
        assert!(api.octets()[1] == 18 || api.octets()[1] == 19);
        assert_eq!(names.name(api), Some("api.openai.com"));
        // A fresh table (another run) gives the same address.
        assert_eq!(Names::default().address("api.openai.com"), Some(api));
    }

    #[test]
    fn an_a_question_is_answered_with_its_address_and_others_empty() {
        let bytes = query("Api.Example.COM", 1);
        let (question, end) = question(&bytes).unwrap();
        assert_eq!(question.name, "api.example.com");
        assert_eq!(question.kind_name(), "A");
        let reply = answer(&bytes, end, Some(Ipv4Addr::new(198, 18, 0, 7)));
        assert_eq!(&reply[..2], &[0x12, 0x34]);
        assert_eq!(reply[2] & 0x80, 0x80, "a response");
        assert_eq!(u16::from_be_bytes([reply[6], reply[7]]), 1, "one answer");
        assert_eq!(&reply[reply.len() - 4..], &[198, 18, 0, 7]);
        let aaaa = query("example.com", 28);
        let (question, end) = super::question(&aaaa).unwrap();
        assert_eq!(question.kind_name(), "AAAA");
        let reply = answer(&aaaa, end, None);
        assert_eq!(u16::from_be_bytes([reply[6], reply[7]]), 0, "no answer");
        assert_eq!(reply.len(), end);
    }

    #[test]
    fn what_is_not_a_plain_query_gets_no_answer() {
        assert_eq!(question(&[0; 5]), None);
        let mut response = query("a.b", 1);
        response[2] |= 0x80;
        assert_eq!(question(&response), None);
        let mut two = query("a.b", 1);
        two[5] = 2;
        assert_eq!(question(&two), None);
        let mut truncated = query("a.b", 1);
        truncated.truncate(truncated.len() - 3);
        assert_eq!(question(&truncated), None);
        let mut pointer = query("a.b", 1);
        pointer[12] = 0xc0;
        assert_eq!(question(&pointer), None);
        // Every prefix and every one-byte change: never a panic.
        let sample = query("api.example.com", 1);
        for cut in 0..sample.len() {
            let _ = question(&sample[..cut]);
        }
        for at in 0..sample.len() {
            for byte in [0u8, 0x3f, 0xc0, 0xff] {
                let mut mutated = sample.clone();
                mutated[at] = byte;
                if let Some((_, end)) = question(&mutated) {
                    let _ = answer(&mutated, end, None);
                }
            }
        }
    }
}
