//! Allow rules: the grammar, parsing into a canonical [`Rule`], and matching one target.
//!
//! The grammar is documented in `docs/network.md`; in short, a rule is one of
//!
//! | form | example | matches |
//! |---|---|---|
//! | name | `api.github.com` | that name, any port |
//! | suffix | `*.github.com` | strict subdomains, any port (not `github.com` itself) |
//! | IP literal | `10.0.0.1`, `::1` | that address, any port |
//! | CIDR | `10.0.0.0/8` | IP literals inside the block, any port |
//! | with a port | `api.github.com:443`, `[::1]:8080`, `*.corp:22` | the above, that port only |
//! | URL | `https://api.github.com/v1` | its host, its port (explicit, or the scheme's default) |

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use ipnet::{IpNet, Ipv4Net};

use super::host::{
    canonical_ip, normalize_name, parse_host, parse_port, CanonicalHost, HostError, PortError,
};

/// Why a rule could not be parsed. No variant is fatal to a run: it is reported when the
/// policy is built, before anything runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// The rule is empty or only whitespace.
    #[error("empty network rule")]
    Empty,
    /// The rule has whitespace inside it (surrounding whitespace is trimmed).
    #[error("network rule {rule:?} contains whitespace")]
    Whitespace {
        /// The rule as given.
        rule: String,
    },
    /// The rule carries URL user info (`user@host`), which names a credential, not a host.
    #[error("network rule {rule:?} contains user info (`user@`); name the host only")]
    UserInfo {
        /// The rule as given.
        rule: String,
    },
    /// The host part is not a DNS name, a `*.suffix` or an IP literal.
    #[error("network rule {rule:?}: {reason}")]
    BadHost {
        /// The rule as given.
        rule: String,
        /// What is wrong with the host.
        reason: HostError,
    },
    /// The port is not a number from 1 to 65535.
    #[error("network rule {rule:?}: {reason}")]
    BadPort {
        /// The rule as given.
        rule: String,
        /// What is wrong with the port.
        reason: PortError,
    },
    /// The rule has a `/` but is not a CIDR block.
    #[error("network rule {rule:?} is not a CIDR block (address/prefix, prefix at most 32 for IPv4 and 128 for IPv6)")]
    BadCidr {
        /// The rule as given.
        rule: String,
    },
    /// The rule has a `://` but is not a URL this policy understands.
    #[error("network rule {rule:?}: {reason}")]
    BadUrl {
        /// The rule as given.
        rule: String,
        /// What is wrong with the URL.
        reason: UrlError,
    },
}

/// What is wrong with a URL rule besides its host and port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// The scheme is not a URL scheme.
    #[error("{scheme:?} is not a URL scheme")]
    Scheme {
        /// The scheme, lower-cased.
        scheme: String,
    },
    /// Nothing follows `://`.
    #[error("the URL has no host")]
    NoHost,
    /// The scheme has no known default port and the URL gives none.
    #[error("scheme {scheme:?} has no known default port; give one (`{scheme}://host:port`)")]
    NoDefaultPort {
        /// The scheme, lower-cased.
        scheme: String,
    },
}

/// What a rule matches, before its optional port.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Name(String),
    /// A name suffix, stored without the `*.`.
    Suffix(String),
    Ip(IpAddr),
    Cidr(IpNet),
}

/// One parsed allow rule, in canonical form.
///
/// ```
/// use simtape::cap::net::Rule;
///
/// let rule: Rule = "HTTPS://API.Example.com./v1".parse().unwrap();
/// assert_eq!(rule.to_string(), "api.example.com:443");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pattern: Pattern,
    port: Option<u16>,
    /// The canonical text, computed once: it is shown in every denial.
    text: String,
}

impl Rule {
    /// Parses one rule; surrounding whitespace is trimmed.
    pub fn parse(rule: &str) -> Result<Rule, RuleError> {
        let text = rule.trim();
        if text.is_empty() {
            return Err(RuleError::Empty);
        }
        let owned = || text.to_string();
        if text.chars().any(char::is_whitespace) {
            return Err(RuleError::Whitespace { rule: owned() });
        }
        let (pattern, port) = if let Some((scheme, rest)) = text.split_once("://") {
            parse_url(text, scheme, rest)?
        } else if text.contains('@') {
            return Err(RuleError::UserInfo { rule: owned() });
        } else if text.contains('/') {
            (parse_cidr(text)?, None)
        } else {
            parse_authority(text, text)?
        };
        Ok(Rule::new(pattern, port))
    }

    fn new(pattern: Pattern, port: Option<u16>) -> Rule {
        let base = match &pattern {
            Pattern::Name(name) => name.clone(),
            Pattern::Suffix(suffix) => format!("*.{suffix}"),
            Pattern::Ip(IpAddr::V6(ip)) if port.is_some() => format!("[{ip}]"),
            Pattern::Ip(ip) => ip.to_string(),
            Pattern::Cidr(net) => net.to_string(),
        };
        let text = match port {
            Some(port) => format!("{base}:{port}"),
            None => base,
        };
        Rule {
            pattern,
            port,
            text,
        }
    }

    /// Returns the canonical text of the rule (lower case, no trailing dot, a URL shown as
    /// `host:port`, a CIDR block by its network address).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Returns the port the rule is restricted to, if any.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// Returns whether the rule allows `host` (canonical) on `port`.
    pub(crate) fn matches(&self, host: &CanonicalHost, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match (&self.pattern, host) {
            (Pattern::Name(rule), CanonicalHost::Name(name)) => rule == name,
            (Pattern::Suffix(suffix), CanonicalHost::Name(name)) => is_subdomain(name, suffix),
            (Pattern::Ip(rule), CanonicalHost::Ip(ip)) => rule == ip,
            (Pattern::Cidr(net), CanonicalHost::Ip(ip)) => net.contains(ip),
            // Names are never resolved inside the simulation, so a name never matches an
            // address rule and an address never matches a name rule.
            _ => false,
        }
    }
}

/// Returns whether `name` is a strict subdomain of `suffix` (`a.b.com` of `b.com`, not
/// `b.com` itself and not `ab.com`).
fn is_subdomain(name: &str, suffix: &str) -> bool {
    name.strip_suffix(suffix)
        .and_then(|head| head.strip_suffix('.'))
        .is_some_and(|label| !label.is_empty())
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(rule: &str) -> Result<Rule, RuleError> {
        Rule::parse(rule)
    }
}

/// Parses `host`, `*.suffix`, `ip`, `host:port`, `*.suffix:port` or `[ipv6]:port`.
fn parse_authority(rule: &str, text: &str) -> Result<(Pattern, Option<u16>), RuleError> {
    let bad_host = |reason: HostError| RuleError::BadHost {
        rule: rule.to_string(),
        reason,
    };
    if let Some(bracketed) = text.strip_prefix('[') {
        let (inner, after) = bracketed
            .split_once(']')
            .ok_or_else(|| bad_host(HostError::Unclosed))?;
        let host = parse_host(&format!("[{inner}]")).map_err(bad_host)?;
        let port = match after {
            "" => None,
            _ => {
                let port = after.strip_prefix(':').ok_or_else(|| {
                    bad_host(HostError::AfterBracket {
                        after: after.to_string(),
                    })
                })?;
                Some(parse_rule_port(rule, port)?)
            }
        };
        return Ok((host_pattern(host), port));
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok((Pattern::Ip(canonical_ip(ip)), None));
    }
    let (host, port) = match text.split_once(':') {
        None => (text, None),
        Some((_, port)) if port.contains(':') => {
            return Err(bad_host(HostError::UnbracketedIpv6));
        }
        Some((host, port)) => (host, Some(parse_rule_port(rule, port)?)),
    };
    Ok((parse_host_pattern(host).map_err(bad_host)?, port))
}

/// Parses the host part of a rule: `*.suffix`, a name or an IP literal.
fn parse_host_pattern(host: &str) -> Result<Pattern, HostError> {
    if let Some(suffix) = host.strip_prefix("*.") {
        if suffix.contains('*') {
            return Err(HostError::Wildcard);
        }
        return normalize_name(suffix).map(Pattern::Suffix);
    }
    if host.contains('*') {
        return Err(HostError::Wildcard);
    }
    parse_host(host).map(host_pattern)
}

fn host_pattern(host: CanonicalHost) -> Pattern {
    match host {
        CanonicalHost::Name(name) => Pattern::Name(name),
        CanonicalHost::Ip(ip) => Pattern::Ip(ip),
    }
}

fn parse_rule_port(rule: &str, port: &str) -> Result<u16, RuleError> {
    parse_port(port).map_err(|reason| RuleError::BadPort {
        rule: rule.to_string(),
        reason,
    })
}

/// Parses a CIDR block. An IPv4-mapped IPv6 block (`::ffff:10.0.0.0/104`) becomes the IPv4
/// block it covers, just as a mapped address becomes its IPv4 address.
fn parse_cidr(rule: &str) -> Result<Pattern, RuleError> {
    let net: IpNet = rule.parse().map_err(|_| RuleError::BadCidr {
        rule: rule.to_string(),
    })?;
    let net = match net {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.addr().to_ipv4_mapped() {
            Some(v4) => {
                let v4 = Ipv4Net::new(v4, v6.prefix_len() - 96)
                    .expect("a prefix of at most 128 - 96 = 32 bits is valid for IPv4");
                IpNet::V4(v4)
            }
            None => net,
        },
        _ => net,
    };
    Ok(Pattern::Cidr(net.trunc()))
}

/// Parses a URL rule: the scheme picks the default port, an explicit port wins, and the
/// path, query and fragment are ignored (the policy decides connections, not requests).
fn parse_url(rule: &str, scheme: &str, rest: &str) -> Result<(Pattern, Option<u16>), RuleError> {
    let bad_url = |reason: UrlError| RuleError::BadUrl {
        rule: rule.to_string(),
        reason,
    };
    let scheme = scheme.to_ascii_lowercase();
    let valid_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid_scheme {
        return Err(bad_url(UrlError::Scheme { scheme }));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(RuleError::UserInfo {
            rule: rule.to_string(),
        });
    }
    if authority.is_empty() {
        return Err(bad_url(UrlError::NoHost));
    }
    let (pattern, port) = parse_authority(rule, authority)?;
    let port = match port.or_else(|| default_port(&scheme)) {
        Some(port) => port,
        None => {
            return Err(bad_url(UrlError::NoDefaultPort { scheme }));
        }
    };
    Ok((pattern, Some(port)))
}

/// Returns the default port of the schemes an agent pipeline dials.
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}
