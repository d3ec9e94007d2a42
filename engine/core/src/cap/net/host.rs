//! Hosts, names and ports in canonical form: the one place where both rules and connection
//! targets are normalized, so that a rule and a target can only ever be compared after the
//! same rewriting.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// A host in canonical form: a lower-case name without a trailing dot, or an IP address
/// (an IPv4-mapped IPv6 address becomes its IPv4 address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CanonicalHost {
    /// A DNS name.
    Name(String),
    /// An IP literal.
    Ip(IpAddr),
}

impl fmt::Display for CanonicalHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CanonicalHost::Name(name) => f.write_str(name),
            CanonicalHost::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Why a host or a port is not one. Never fatal to a run: a bad rule is reported when the
/// policy is built, a bad connection target is refused (and the refusal is on the tape).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The host is empty.
    #[error("the host is empty")]
    Empty,
    /// The host contains whitespace.
    #[error("the host contains whitespace")]
    Whitespace,
    /// The host carries URL user info (`user@host`).
    #[error("the host contains user info (`user@`); name the host only")]
    UserInfo,
    /// A bracketed literal is not an IPv6 address.
    #[error("{inner:?} inside brackets is not an IPv6 address")]
    NotIpv6 {
        /// The text inside the brackets.
        inner: String,
    },
    /// The host contains `:` but is no IP literal (a port belongs elsewhere).
    #[error("the host contains ':' (give the port separately)")]
    Colon,
    /// The name is not ASCII.
    #[error("non-ASCII host; write internationalized names in punycode (xn--…)")]
    NonAscii,
    /// The name is longer than 253 characters.
    #[error("the name is longer than 253 characters")]
    NameTooLong,
    /// The name ends in a numeric label, so it is a mistyped address.
    #[error("{name:?} is neither an IP address nor a DNS name")]
    Numeric {
        /// The name, lower-cased.
        name: String,
    },
    /// The name has an empty label.
    #[error("the name has an empty label (`..`, or a leading dot)")]
    EmptyLabel,
    /// A label is longer than 63 characters.
    #[error("label {label:?} is longer than 63 characters")]
    LabelTooLong {
        /// The label.
        label: String,
    },
    /// The name contains a character a host name cannot.
    #[error("the name contains {character:?}")]
    Character {
        /// The first such character.
        character: char,
    },
    /// A rule's `[` has no closing `]`.
    #[error("'[' without a closing ']'")]
    Unclosed,
    /// A rule has something other than `:port` after `]`.
    #[error("unexpected {after:?} after ']'")]
    AfterBracket {
        /// What follows the `]`.
        after: String,
    },
    /// A rule has more than one `:` without brackets.
    #[error("not an IPv6 address (with a port, write [address]:port)")]
    UnbracketedIpv6,
    /// A rule's `*` is not the whole first label.
    #[error("'*' is only allowed as the whole first label (`*.suffix`)")]
    Wildcard,
}

/// Why a port is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PortError {
    /// The port is empty.
    #[error("the port is empty")]
    Empty,
    /// The port is not decimal digits.
    #[error("port {text:?} is not a number")]
    NotANumber {
        /// The port as given.
        text: String,
    },
    /// The port is 0 or above 65535.
    #[error("port {text} is out of range 1-65535")]
    OutOfRange {
        /// The port as given.
        text: String,
    },
}

/// Parses a host as a connection target names it: a name, an IP literal, or a bracketed
/// IPv6 literal. Returns why it is not one otherwise.
pub(crate) fn parse_host(text: &str) -> Result<CanonicalHost, HostError> {
    if text.is_empty() {
        return Err(HostError::Empty);
    }
    if text.chars().any(char::is_whitespace) {
        return Err(HostError::Whitespace);
    }
    if text.contains('@') {
        // `user@host` is URL user info, not a host; accepting it would let a credential
        // slip into the tape and hide which host is meant.
        return Err(HostError::UserInfo);
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let ip: Ipv6Addr = inner.parse().map_err(|_| HostError::NotIpv6 {
            inner: inner.to_string(),
        })?;
        return Ok(CanonicalHost::Ip(canonical_ip(IpAddr::V6(ip))));
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(CanonicalHost::Ip(canonical_ip(ip)));
    }
    if text.contains(':') {
        return Err(HostError::Colon);
    }
    normalize_name(text).map(CanonicalHost::Name)
}

/// Returns `ip` with an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) replaced by its IPv4
/// address, since both reach the same IPv4 host. IPv4-compatible addresses (`::a.b.c.d`,
/// deprecated) are left alone: `::1` must stay the IPv6 loopback.
pub(crate) fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// Lower-cases a DNS name and strips one trailing dot, checking its labels.
pub(crate) fn normalize_name(text: &str) -> Result<String, HostError> {
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    if name.is_empty() {
        return Err(HostError::Empty);
    }
    if !name.is_ascii() {
        return Err(HostError::NonAscii);
    }
    if name.len() > 253 {
        return Err(HostError::NameTooLong);
    }
    for label in name.split('.') {
        check_label(label)?;
    }
    // A numeric last label is never a DNS name: `10.0.0.256` or `1.2.3` is a mistyped
    // address, and treating it as a name would silently never match.
    let last = name.rsplit('.').next().unwrap_or_default();
    if last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HostError::Numeric { name });
    }
    Ok(name)
}

fn check_label(label: &str) -> Result<(), HostError> {
    if label.is_empty() {
        return Err(HostError::EmptyLabel);
    }
    if label.len() > 63 {
        return Err(HostError::LabelTooLong {
            label: label.to_string(),
        });
    }
    // Underscores are not valid in host names but appear in real service names
    // (`_dmarc`, some internal hosts), so they are accepted.
    match label
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        Some(character) => Err(HostError::Character { character }),
        None => Ok(()),
    }
}

/// Parses a port: decimal digits only, 1 to 65535. Port 0 is not a port one can connect to.
pub(crate) fn parse_port(text: &str) -> Result<u16, PortError> {
    if text.is_empty() {
        return Err(PortError::Empty);
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PortError::NotANumber {
            text: text.to_string(),
        });
    }
    match text.parse::<u16>() {
        Ok(0) | Err(_) => Err(PortError::OutOfRange {
            text: text.to_string(),
        }),
        Ok(port) => Ok(port),
    }
}

/// Formats `host:port`, bracketing an IPv6 host so the port stays unambiguous.
pub(crate) fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}
