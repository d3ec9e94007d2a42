//! The policy: an ordered list of allow rules over a default of deny.

use std::fmt;

use serde::Serialize;

use super::host::{authority, parse_host};
use super::rule::{Rule, RuleError};

/// The network policy: deny by default, allow what a rule matches.
///
/// It is a plain value: the [`NetActor`](super::NetActor) consults it for the pipeline's
/// connections, and any other actor that dials out (LLM record mode, MCP over HTTP) can hold
/// a clone and consult the same policy.
///
/// ```
/// use simtape::cap::net::{NetError, Network};
///
/// let network = Network::deny().allow("api.github.com").allow("10.0.0.0/8");
/// assert_eq!(network.check("API.GitHub.com.", 443).unwrap().rule, "api.github.com");
/// assert_eq!(network.check("10.1.2.3", 22).unwrap().rule, "10.0.0.0/8");
/// let denied = network.check("example.com", 80).unwrap_err();
/// assert!(matches!(denied, NetError::Denied { .. }));
/// assert_eq!(
///     denied.to_string(),
///     "connection to example.com:80 denied: no rule allows it (rules: api.github.com, 10.0.0.0/8)"
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Network {
    rules: Vec<Rule>,
}

impl Network {
    /// Returns a policy that denies every connection; add exceptions with [`Network::allow`].
    pub fn deny() -> Network {
        Network::default()
    }

    /// Returns the policy with `rule` allowed too, for rules written in code.
    ///
    /// # Panics
    ///
    /// Panics when `rule` does not parse, like a bad literal anywhere else in code. Rules
    /// that come from users (files, flags) go through [`Network::try_allow`] or
    /// [`Network::parse_list`], which return the error instead.
    ///
    /// ```should_panic
    /// simtape::cap::net::Network::deny().allow("user@example.com");
    /// ```
    pub fn allow(self, rule: &str) -> Network {
        match self.try_allow(rule) {
            Ok(network) => network,
            Err(error) => panic!("{error}"),
        }
    }

    /// Returns the policy with `rule` allowed too, or why `rule` is not a rule.
    ///
    /// ```
    /// use simtape::cap::net::{Network, RuleError};
    ///
    /// let error = Network::deny().try_allow("10.0.0.0/33").unwrap_err();
    /// assert!(matches!(error, RuleError::BadCidr { .. }));
    /// ```
    pub fn try_allow(mut self, rule: &str) -> Result<Network, RuleError> {
        self.rules.push(Rule::parse(rule)?);
        Ok(self)
    }

    /// Parses a rule list as Harn writes one: rules separated by `,`, `;` or newlines,
    /// each trimmed. Empty entries are skipped, so a trailing separator is harmless.
    ///
    /// ```
    /// let network = simtape::cap::net::Network::parse_list("api.github.com, *.corp;\n").unwrap();
    /// assert_eq!(network.rules().len(), 2);
    /// ```
    pub fn parse_list(list: &str) -> Result<Network, RuleError> {
        list.split([',', ';', '\n'])
            .filter(|entry| !entry.trim().is_empty())
            .try_fold(Network::deny(), Network::try_allow)
    }

    /// Returns the rules, in the order they were added.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Decides whether a connection to `host` on `port` is allowed.
    ///
    /// `host` is a DNS name (compared case-insensitively, without a trailing dot), an IP
    /// literal, or a bracketed IPv6 literal; an IPv4-mapped IPv6 address is treated as its
    /// IPv4 address. The first matching rule is the one reported.
    pub fn check(&self, host: &str, port: u16) -> Result<Allowed, NetError> {
        let invalid = |reason: String| NetError::InvalidTarget {
            host: host.to_string(),
            port,
            reason,
        };
        if port == 0 {
            return Err(invalid("port 0 is out of range 1-65535".to_string()));
        }
        // The reason is text on the tape, so the typed error is rendered here.
        let target = parse_host(host).map_err(|error| invalid(error.to_string()))?;
        match self.rules.iter().find(|rule| rule.matches(&target, port)) {
            Some(rule) => Ok(Allowed {
                host: target.to_string(),
                port,
                rule: rule.to_string(),
            }),
            None => Err(NetError::Denied {
                host: target.to_string(),
                port,
                rules: self.rules.iter().map(Rule::to_string).collect(),
            }),
        }
    }
}

/// A connection the policy allowed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Allowed {
    /// The host in canonical form (lower case, no trailing dot, IPv4 for a mapped address).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The canonical text of the first rule that matched.
    pub rule: String,
}

/// A connection the policy did not allow. Neither variant is fatal to a run: the pipeline
/// sees it as the result of its connect, like a firewall's refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NetError {
    /// No rule allows the connection.
    Denied {
        /// The host in canonical form.
        host: String,
        /// The port.
        port: u16,
        /// The whole rule set, canonical, in order (empty: deny all).
        rules: Vec<String>,
    },
    /// The target is not a host and port one can connect to (empty, `user@host`, port 0,
    /// whitespace, …); it is refused before any rule is consulted.
    InvalidTarget {
        /// The host as given.
        host: String,
        /// The port as given.
        port: u16,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetError::Denied { host, port, rules } if rules.is_empty() => write!(
                f,
                "connection to {} denied: no rules (deny all)",
                authority(host, *port)
            ),
            NetError::Denied { host, port, rules } => write!(
                f,
                "connection to {} denied: no rule allows it (rules: {})",
                authority(host, *port),
                rules.join(", ")
            ),
            NetError::InvalidTarget { host, port, reason } => {
                write!(f, "connection to {host:?} port {port} refused: {reason}")
            }
        }
    }
}

impl std::error::Error for NetError {}
