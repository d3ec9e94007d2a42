//! The network policy: rule grammar, matching, every bad input, and the actor's tape records.

use serde_json::json;
use simtape::cap::net::{Allowed, NetActor, NetError, NetHandle, Network, Rule, RuleError};
use simtape::tape::{payload_to_json, RecordKind, TapeReader};

/// Returns the canonical form of `rule`, or the error's variant name and message.
fn canonical(rule: &str) -> Result<String, RuleError> {
    Rule::parse(rule).map(|rule| rule.to_string())
}

/// Returns the rule that allows `host:port` under `rules`, or `None` when it is denied.
fn allowing_rule(rules: &[&str], host: &str, port: u16) -> Option<String> {
    let network = rules
        .iter()
        .fold(Network::deny(), |network, rule| network.allow(rule));
    match network.check(host, port) {
        Ok(allowed) => Some(allowed.rule),
        Err(NetError::Denied { .. }) => None,
        Err(error) => panic!("{host}:{port} is a valid target, got {error}"),
    }
}

#[test]
fn rules_parse_to_canonical_form() {
    // Goal: every rule kind parses, and prints in the one canonical form denials show.
    let table = [
        ("api.github.com", "api.github.com"),
        ("*.github.com", "*.github.com"),
        ("10.0.0.1", "10.0.0.1"),
        ("::1", "::1"),
        ("2001:DB8::1", "2001:db8::1"),
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("10.1.2.3/8", "10.0.0.0/8"),
        ("2001:db8::/32", "2001:db8::/32"),
        ("api.github.com:443", "api.github.com:443"),
        ("*.corp:22", "*.corp:22"),
        ("10.0.0.1:8080", "10.0.0.1:8080"),
        ("[::1]:8080", "[::1]:8080"),
        ("[::1]", "::1"),
        ("https://api.example.com/v1", "api.example.com:443"),
        ("http://api.example.com", "api.example.com:80"),
        (
            "wss://stream.example.com/socket?x=1",
            "stream.example.com:443",
        ),
        ("https://api.example.com:8443/v1", "api.example.com:8443"),
        ("https://[::1]/", "[::1]:443"),
        ("http://10.0.0.1:9000", "10.0.0.1:9000"),
        ("svc_a.internal", "svc_a.internal"),
        ("localhost", "localhost"),
    ];
    for (rule, expected) in table {
        assert_eq!(canonical(rule).as_deref(), Ok(expected), "rule {rule:?}");
    }
}

#[test]
fn rules_match_the_targets_they_name() {
    // Goal: each rule kind allows exactly the hosts and ports documented in docs/network.md.
    let table: &[(&[&str], &str, u16, Option<&str>)] = &[
        (&[], "api.github.com", 443, None),
        (
            &["api.github.com"],
            "api.github.com",
            443,
            Some("api.github.com"),
        ),
        (
            &["api.github.com"],
            "api.github.com",
            22,
            Some("api.github.com"),
        ),
        (&["api.github.com"], "github.com", 443, None),
        (&["api.github.com"], "x.api.github.com", 443, None),
        (
            &["*.github.com"],
            "api.github.com",
            443,
            Some("*.github.com"),
        ),
        (
            &["*.github.com"],
            "a.b.github.com",
            443,
            Some("*.github.com"),
        ),
        (&["*.github.com"], "github.com", 443, None),
        (&["*.github.com"], "evilgithub.com", 443, None),
        (&["*.github.com"], "github.com.evil.org", 443, None),
        (&["10.0.0.1"], "10.0.0.1", 80, Some("10.0.0.1")),
        (&["10.0.0.1"], "10.0.0.2", 80, None),
        (&["::1"], "::1", 80, Some("::1")),
        (&["::1"], "[::1]", 80, Some("::1")),
        (&["::1"], "0:0:0:0:0:0:0:1", 80, Some("::1")),
        (&["10.0.0.0/8"], "10.255.0.7", 5432, Some("10.0.0.0/8")),
        (&["10.0.0.0/8"], "11.0.0.1", 5432, None),
        (
            &["2001:db8::/32"],
            "2001:db8:1::5",
            443,
            Some("2001:db8::/32"),
        ),
        (&["2001:db8::/32"], "2001:db9::5", 443, None),
        // No resolution in the simulation: a name never matches an address rule, and back.
        (&["127.0.0.0/8"], "localhost", 80, None),
        (&["localhost"], "127.0.0.1", 80, None),
        (
            &["api.github.com:443"],
            "api.github.com",
            443,
            Some("api.github.com:443"),
        ),
        (&["api.github.com:443"], "api.github.com", 80, None),
        (&["*.corp:22"], "git.corp", 22, Some("*.corp:22")),
        (&["*.corp:22"], "git.corp", 23, None),
        (&["[::1]:8080"], "::1", 8080, Some("[::1]:8080")),
        (&["[::1]:8080"], "::1", 8081, None),
        (
            &["https://api.example.com/v1"],
            "api.example.com",
            443,
            Some("api.example.com:443"),
        ),
        (&["https://api.example.com/v1"], "api.example.com", 80, None),
        (
            &["https://api.example.com:8443"],
            "api.example.com",
            8443,
            Some("api.example.com:8443"),
        ),
        (
            &["https://api.example.com:8443"],
            "api.example.com",
            443,
            None,
        ),
        // The first matching rule, in insertion order, is the one reported.
        (
            &["*.github.com", "api.github.com"],
            "api.github.com",
            1,
            Some("*.github.com"),
        ),
        (
            &["x.org", "10.0.0.0/8", "*.github.com"],
            "10.9.9.9",
            1,
            Some("10.0.0.0/8"),
        ),
    ];
    for (rules, host, port, expected) in table {
        assert_eq!(
            allowing_rule(rules, host, *port).as_deref(),
            *expected,
            "{rules:?} for {host}:{port}"
        );
    }
}

#[test]
fn user_info_is_rejected_as_rule_and_as_target() {
    // Goal: `user@host` is never taken for a host, in a rule, a URL rule or a target.
    for rule in [
        "user@host",
        "user:pass@api.github.com",
        "https://user@api.github.com/",
    ] {
        assert!(
            matches!(Rule::parse(rule), Err(RuleError::UserInfo { .. })),
            "{rule:?}"
        );
    }
    let network = Network::deny().allow("host");
    let error = network.check("user@host", 443).unwrap_err();
    assert!(matches!(error, NetError::InvalidTarget { .. }), "{error:?}");
    assert!(error.to_string().contains("user info"), "{error}");
}

#[test]
fn uppercase_hosts_compare_case_insensitively() {
    // Goal: case never matters, in rules or targets, and the canonical form is lower case.
    assert_eq!(canonical("API.GitHub.COM").as_deref(), Ok("api.github.com"));
    assert_eq!(canonical("*.GitHub.com").as_deref(), Ok("*.github.com"));
    assert_eq!(
        canonical("HTTPS://API.GITHUB.COM").as_deref(),
        Ok("api.github.com:443")
    );
    let network = Network::deny().allow("API.GITHUB.COM").allow("*.Corp");
    let allowed = network.check("Api.GitHub.Com", 443).unwrap();
    assert_eq!(allowed.host, "api.github.com");
    assert_eq!(network.check("GIT.CORP", 22).unwrap().rule, "*.corp");
}

#[test]
fn trailing_dots_are_stripped_once() {
    // Goal: `host.` is `host` in rules and targets; an empty label (`host..`) is an error.
    assert_eq!(
        canonical("api.github.com.").as_deref(),
        Ok("api.github.com")
    );
    assert_eq!(
        canonical("*.github.com.:443").as_deref(),
        Ok("*.github.com:443")
    );
    let network = Network::deny().allow("api.github.com");
    assert_eq!(
        network.check("api.github.com.", 443).unwrap().host,
        "api.github.com"
    );
    for rule in ["api.github.com..", ".github.com", "a..b", "."] {
        assert!(
            matches!(Rule::parse(rule), Err(RuleError::BadHost { .. })),
            "{rule:?}"
        );
    }
    for host in ["api.github.com..", ".", ".github.com"] {
        assert!(
            matches!(
                network.check(host, 443),
                Err(NetError::InvalidTarget { .. })
            ),
            "{host:?}"
        );
    }
}

#[test]
fn ipv4_mapped_ipv6_is_its_ipv4_address() {
    // Goal: `::ffff:a.b.c.d` matches IPv4 literal and CIDR rules, as a rule or as a target.
    assert_eq!(canonical("::ffff:10.0.0.1").as_deref(), Ok("10.0.0.1"));
    assert_eq!(
        canonical("[::ffff:10.0.0.1]:80").as_deref(),
        Ok("10.0.0.1:80")
    );
    assert_eq!(
        canonical("::ffff:10.0.0.0/104").as_deref(),
        Ok("10.0.0.0/8")
    );
    let network = Network::deny().allow("10.0.0.0/8").allow("192.168.1.1");
    let allowed = network.check("::ffff:10.0.0.1", 443).unwrap();
    assert_eq!(
        (allowed.host.as_str(), allowed.rule.as_str()),
        ("10.0.0.1", "10.0.0.0/8")
    );
    assert_eq!(
        network.check("[::ffff:192.168.1.1]", 80).unwrap().rule,
        "192.168.1.1"
    );
    assert_eq!(
        network.check("::ffff:c0a8:101", 80).unwrap().rule,
        "192.168.1.1"
    );
    let mapped_rule = Network::deny().allow("::ffff:192.168.1.1");
    assert_eq!(
        mapped_rule.check("192.168.1.1", 80).unwrap().rule,
        "192.168.1.1"
    );
    // The deprecated IPv4-compatible form is not mapped: `::1` stays the IPv6 loopback.
    assert!(matches!(
        network.check("::10.0.0.1", 443),
        Err(NetError::Denied { .. })
    ));
    assert!(matches!(
        Network::deny().allow("0.0.0.1").check("::1", 80),
        Err(NetError::Denied { .. })
    ));
}

#[test]
fn ports_out_of_range_are_rejected() {
    // Goal: a port is 1-65535 in decimal; 0, 65536, empty and non-numeric are named errors.
    for rule in [
        "api.github.com:0",
        "api.github.com:65536",
        "api.github.com:99999999999999999999",
        "api.github.com:https",
        "api.github.com:-1",
        "api.github.com:+443",
        "api.github.com:",
        "[::1]:0",
        "[::1]:",
        "https://api.github.com:65536/",
        "https://api.github.com:abc/",
    ] {
        assert!(
            matches!(Rule::parse(rule), Err(RuleError::BadPort { .. })),
            "{rule:?} gave {:?}",
            Rule::parse(rule)
        );
    }
    assert_eq!(
        canonical("api.github.com:65535").as_deref(),
        Ok("api.github.com:65535")
    );
    let error = Network::deny()
        .allow("api.github.com")
        .check("api.github.com", 0);
    assert!(
        matches!(error, Err(NetError::InvalidTarget { .. })),
        "{error:?}"
    );
}

#[test]
fn empty_rules_and_empty_hosts_are_rejected() {
    // Goal: nothing empty is a rule or a target; an empty policy denies everything.
    for rule in ["", "   ", "\n"] {
        assert_eq!(Rule::parse(rule), Err(RuleError::Empty), "{rule:?}");
    }
    assert!(matches!(
        Rule::parse(":443"),
        Err(RuleError::BadHost { .. })
    ));
    assert!(matches!(Rule::parse("*."), Err(RuleError::BadHost { .. })));
    assert!(matches!(
        Rule::parse("https://"),
        Err(RuleError::BadUrl { .. })
    ));
    assert!(matches!(
        Rule::parse("https:///path"),
        Err(RuleError::BadUrl { .. })
    ));
    let error = Network::deny().try_allow("").unwrap_err();
    assert_eq!(error.to_string(), "empty network rule");
    let deny_all = Network::deny();
    assert!(matches!(
        deny_all.check("", 443),
        Err(NetError::InvalidTarget { .. })
    ));
    assert!(matches!(
        deny_all.check("[]", 443),
        Err(NetError::InvalidTarget { .. })
    ));
    assert_eq!(
        deny_all.check("example.com", 443).unwrap_err().to_string(),
        "connection to example.com:443 denied: no rules (deny all)"
    );
}

#[test]
fn garbage_cidr_is_rejected() {
    // Goal: a `/` makes a rule a CIDR block, and anything that is not one is a BadCidr.
    for rule in [
        "10.0.0.0/33",
        "::/129",
        "10.0.0.0/",
        "10.0.0.0/x",
        "10.0.0/8",
        "api.github.com/8",
        "/8",
        "10.0.0.0/8/8",
        "10.0.0.0/-1",
    ] {
        assert!(
            matches!(Rule::parse(rule), Err(RuleError::BadCidr { .. })),
            "{rule:?} gave {:?}",
            Rule::parse(rule)
        );
    }
    let error = Rule::parse("10.0.0.0/33").unwrap_err();
    assert!(error.to_string().contains("\"10.0.0.0/33\""), "{error}");
}

#[test]
fn whitespace_is_trimmed_around_and_rejected_inside() {
    // Goal: surrounding whitespace is forgiven in rules; inside a rule or a target it is not.
    assert_eq!(
        canonical("  api.github.com \t").as_deref(),
        Ok("api.github.com")
    );
    for rule in [
        "api. github.com",
        "api.github.com :443",
        "10.0.0.0 /8",
        "https://a b.com",
    ] {
        assert!(
            matches!(Rule::parse(rule), Err(RuleError::Whitespace { .. })),
            "{rule:?}"
        );
    }
    let network = Network::deny().allow("api.github.com");
    for host in [" api.github.com", "api.github.com ", "api .github.com"] {
        assert!(
            matches!(
                network.check(host, 443),
                Err(NetError::InvalidTarget { .. })
            ),
            "{host:?}"
        );
    }
}

#[test]
fn other_malformed_rules_and_targets_are_named_errors() {
    // Goal: wildcards, IPv6 without brackets, odd schemes and non-hosts never panic.
    let bad_host = [
        "*",
        "*.*.com",
        "api.*.com",
        "a*.com",
        "*.10.0.0.1",
        "10.0.0.256",
        "1.2.3",
        "exa mple",
        "::1:80:zz",
        "[::1",
        "[10.0.0.1]:80",
        "[::1]x",
        "ünï.com",
        "a/b",
    ];
    for rule in bad_host {
        let result = Rule::parse(rule);
        assert!(result.is_err(), "{rule:?} parsed as {result:?}");
    }
    assert!(matches!(
        Rule::parse("ftp://files.example.com"),
        Err(RuleError::BadUrl { .. })
    ));
    assert!(matches!(
        Rule::parse("1http://x.com"),
        Err(RuleError::BadUrl { .. })
    ));
    assert_eq!(
        canonical("ftp://files.example.com:21").as_deref(),
        Ok("files.example.com:21")
    );
    let network = Network::deny().allow("10.0.0.0/8");
    for host in ["10.0.0.1:80", "*.corp", "[::1", "10.0.0.256", "ünï.com"] {
        assert!(
            matches!(
                network.check(host, 443),
                Err(NetError::InvalidTarget { .. })
            ),
            "{host:?}"
        );
    }
}

#[test]
fn denial_names_host_port_and_rule_set() {
    // Goal: a denial is a named error that says which host, which port and which rules.
    let network = Network::deny()
        .allow("API.github.com")
        .allow("10.0.0.0/8")
        .allow("https://Example.org/x");
    let error = network.check("Evil.COM.", 443).unwrap_err();
    assert_eq!(
        error,
        NetError::Denied {
            host: "evil.com".to_string(),
            port: 443,
            rules: vec![
                "api.github.com".to_string(),
                "10.0.0.0/8".to_string(),
                "example.org:443".to_string()
            ],
        }
    );
    assert_eq!(
        error.to_string(),
        "connection to evil.com:443 denied: no rule allows it \
         (rules: api.github.com, 10.0.0.0/8, example.org:443)"
    );
    let v6 = network.check("2001:db8::1", 8443).unwrap_err().to_string();
    assert!(
        v6.starts_with("connection to [2001:db8::1]:8443 denied"),
        "{v6}"
    );
}

#[test]
fn rule_lists_split_like_harn() {
    // Goal: a user-supplied list splits on `,` `;` and newlines, and a bad entry is an error.
    let network = Network::parse_list("api.github.com, *.corp;\n10.0.0.0/8,\n").unwrap();
    let rules: Vec<&str> = network.rules().iter().map(Rule::as_str).collect();
    assert_eq!(rules, ["api.github.com", "*.corp", "10.0.0.0/8"]);
    assert!(matches!(
        Network::parse_list("api.github.com, user@x"),
        Err(RuleError::UserInfo { .. })
    ));
}

#[test]
fn connects_are_tape_records_allowed_or_denied() -> Result<(), Box<dyn std::error::Error>> {
    // Goal: the actor answers per the policy and records each attempt with its decision.
    let mut b = simtape::Sim::builder();
    let net = b.actor(
        "net",
        NetActor::new(Network::deny().allow("api.github.com").allow("10.0.0.0/8")),
    );
    let net = NetHandle::new(net);
    let report = b.tape_in_memory().build()?.run(move |_host| async move {
        let allowed = net.connect("API.github.com", 443).await;
        let denied = net.connect("example.com", 80).await;
        let invalid = net.connect("user@api.github.com", 443).await;
        (allowed, denied, invalid)
    })?;
    let (allowed, denied, invalid) = report.output;
    assert_eq!(
        allowed,
        Ok(Allowed {
            host: "api.github.com".to_string(),
            port: 443,
            rule: "api.github.com".to_string(),
        })
    );
    assert!(
        matches!(denied, Err(NetError::Denied { port: 80, .. })),
        "{denied:?}"
    );
    assert!(
        matches!(invalid, Err(NetError::InvalidTarget { .. })),
        "{invalid:?}"
    );
    assert_eq!(
        report.summary.end_ns, 0,
        "a policy decision takes no virtual time"
    );

    let bytes = report.summary.tape.unwrap().memory.unwrap();
    let mut reader = TapeReader::new(&bytes[..])?;
    let mut records = Vec::new();
    while let Some(record) = reader.next_record()? {
        if reader.actor_name(record.actor) == "net" {
            let payload = payload_to_json(&reader.resolve(&record)?)?;
            records.push((record.kind, payload));
        }
    }
    let rules = json!(["api.github.com", "10.0.0.0/8"]);
    assert_eq!(
        records,
        [
            (
                RecordKind::Request,
                json!(["connect", {"connect": ["API.github.com", 443]}])
            ),
            (
                RecordKind::Reply,
                json!(["connect", {"Ok": ["api.github.com", 443, "api.github.com"]}])
            ),
            (
                RecordKind::Request,
                json!(["connect", {"connect": ["example.com", 80]}])
            ),
            (
                RecordKind::Reply,
                json!(["connect", {"Err": {"denied": ["example.com", 80, rules]}}])
            ),
            (
                RecordKind::Request,
                json!(["connect", {"connect": ["user@api.github.com", 443]}])
            ),
            (
                RecordKind::Reply,
                json!(["connect", {"Err": {"invalid_target": [
                    "user@api.github.com",
                    443,
                    "the host contains user info (`user@`); name the host only"
                ]}}])
            ),
        ]
    );
    Ok(())
}

#[test]
fn other_actors_consult_the_same_policy() {
    // Goal: the policy a NetActor enforces is the plain value other actors can check.
    let actor = NetActor::new(Network::deny().allow("*.openai.com:443"));
    let policy = actor.network().clone();
    assert_eq!(
        policy.check("api.openai.com", 443).unwrap().rule,
        "*.openai.com:443"
    );
    assert!(policy.check("api.openai.com", 80).is_err());
}
