//! Hosts, names and ports in canonical form: the one place where both rules and connection
//! targets are normalized, so that a rule and a target can only ever be compared after the
//! same rewriting.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// A host in canonical form: a lower-case name without a trailing dot, or an IP address
/// (an IPv4-mapped IPv6 address becomes its IPv4 address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// A DNS name.
    Name(String),
    /// An IP literal.
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Parses a host as a connection target names it: a name, an IP literal, or a bracketed
/// IPv6 literal. Returns why it is not one otherwise.
pub(crate) fn parse_host(text: &str) -> Result<Host, String> {
    if text.is_empty() {
        return Err("the host is empty".to_string());
    }
    if text.chars().any(char::is_whitespace) {
        return Err("the host contains whitespace".to_string());
    }
    if text.contains('@') {
        // `user@host` is URL user info, not a host; accepting it would let a credential
        // slip into the tape and hide which host is meant.
        return Err("the host contains user info (`user@`); name the host only".to_string());
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let ip: Ipv6Addr = inner
            .parse()
            .map_err(|_| format!("{inner:?} inside brackets is not an IPv6 address"))?;
        return Ok(Host::Ip(canonical_ip(IpAddr::V6(ip))));
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(Host::Ip(canonical_ip(ip)));
    }
    if text.contains(':') {
        return Err("the host contains ':' (give the port separately)".to_string());
    }
    normalize_name(text).map(Host::Name)
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
pub(crate) fn normalize_name(text: &str) -> Result<String, String> {
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    if name.is_empty() {
        return Err("the host is empty".to_string());
    }
    if !name.is_ascii() {
        return Err("non-ASCII host; write internationalized names in punycode (xn--…)".into());
    }
    if name.len() > 253 {
        return Err("the name is longer than 253 characters".to_string());
    }
    for label in name.split('.') {
        check_label(label)?;
    }
    // A numeric last label is never a DNS name: `10.0.0.256` or `1.2.3` is a mistyped
    // address, and treating it as a name would silently never match.
    let last = name.rsplit('.').next().unwrap_or_default();
    if last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{name:?} is neither an IP address nor a DNS name"));
    }
    Ok(name)
}

fn check_label(label: &str) -> Result<(), String> {
    if label.is_empty() {
        return Err("the name has an empty label (`..`, or a leading dot)".to_string());
    }
    if label.len() > 63 {
        return Err(format!("label {label:?} is longer than 63 characters"));
    }
    // Underscores are not valid in host names but appear in real service names
    // (`_dmarc`, some internal hosts), so they are accepted.
    match label
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        Some(c) => Err(format!("the name contains {c:?}")),
        None => Ok(()),
    }
}

/// Parses a port: decimal digits only, 1 to 65535. Port 0 is not a port one can connect to.
pub(crate) fn parse_port(text: &str) -> Result<u16, String> {
    if text.is_empty() {
        return Err("the port is empty".to_string());
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("port {text:?} is not a number"));
    }
    match text.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("port {text} is out of range 1-65535")),
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
