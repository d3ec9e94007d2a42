//! Which real provider a recording talks to, as the scenario format and the CLI name it: the
//! provider's identity, its official base URL and the environment variables its SDKs read.
//!
//! Only the identity lives in the core, because `[llm.record]` is checked with the rest of a
//! scenario (its host against `[network]`). The wire shapes (request bodies, answers, event
//! streams) and the HTTP client belong to the gateway crate, `simtape-serve`, which is the
//! only crate that talks to a provider.

use serde::Serialize;

use super::backend::RecordError;

/// A provider's wire format: the API a recorded call is sent to, or an agent's request is
/// served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI Chat Completions, `POST {base}/chat/completions`, `Authorization: Bearer`.
    OpenAiChat,
    /// OpenAI Responses, `POST {base}/responses`, `Authorization: Bearer`.
    OpenAiResponses,
    /// Anthropic Messages, `POST {base}/v1/messages`, `x-api-key` and `anthropic-version`.
    AnthropicMessages,
    /// Google's Gemini API, `POST {base}/v1beta/models/{model}:generateContent`,
    /// `x-goog-api-key`. Served by `simtape serve`; record mode does not call it.
    GeminiGenerateContent,
}

impl Provider {
    /// Returns the provider's name as fixtures and errors show it.
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai_chat",
            Provider::OpenAiResponses => "openai_responses",
            Provider::AnthropicMessages => "anthropic_messages",
            Provider::GeminiGenerateContent => "gemini_generate_content",
        }
    }

    /// Returns the real provider's base URL, in the form its official SDK takes.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "https://api.openai.com/v1",
            Provider::AnthropicMessages => "https://api.anthropic.com",
            Provider::GeminiGenerateContent => "https://generativelanguage.googleapis.com",
        }
    }

    /// Returns the environment variable that holds the API key.
    pub fn api_key_variable(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "OPENAI_API_KEY",
            Provider::AnthropicMessages => "ANTHROPIC_API_KEY",
            Provider::GeminiGenerateContent => "GEMINI_API_KEY",
        }
    }

    /// Returns the environment variable that may override the base URL (as in the SDKs).
    pub fn base_url_variable(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "OPENAI_BASE_URL",
            Provider::AnthropicMessages => "ANTHROPIC_BASE_URL",
            Provider::GeminiGenerateContent => "GOOGLE_GEMINI_BASE_URL",
        }
    }
}

/// Returns the host and port of an `http` or `https` URL (the scheme's port by default): what
/// a recording dials, so what the network policy is asked about.
///
/// ```
/// use simtape::cap::llm::host_and_port;
/// assert_eq!(host_and_port("http://127.0.0.1:4010/v1").unwrap(), ("127.0.0.1".to_string(), 4010));
/// assert_eq!(host_and_port("https://api.openai.com/v1").unwrap(), ("api.openai.com".to_string(), 443));
/// assert!(host_and_port("ftp://example.com").is_err());
/// ```
pub fn host_and_port(url: &str) -> Result<(String, u16), RecordError> {
    let bad = |reason: &str| RecordError::BadBaseUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad("it does not parse as a URL"));
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return Err(bad("expected the scheme http or https")),
    };
    // The authority runs to the first '/', '?' or '#' (RFC 3986, section 3.2).
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(bad("expected no user name or password in the URL"));
    }
    let (host, port) = match authority.strip_prefix('[') {
        // An IPv6 literal keeps its brackets out of the host, as the policy names it.
        Some(literal) => {
            let (host, after) = literal
                .split_once(']')
                .ok_or_else(|| bad("it does not parse as a URL"))?;
            let port = match after {
                "" => None,
                after => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| bad("it does not parse as a URL"))?,
                ),
            };
            (host, port)
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return Err(bad("expected a host"));
    }
    let valid = |c: char| c.is_ascii_alphanumeric() || "-._~%!$&'()*+,;=:".contains(c);
    if !host.chars().all(valid) {
        return Err(bad("it does not parse as a URL"));
    }
    let port = match port {
        None | Some("") => default_port,
        Some(port) => port
            .parse::<u16>()
            .map_err(|_| bad("it does not parse as a URL"))?,
    };
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_ports_and_refusals() {
        // Goal: the host and port a recording dials, the scheme's port by default, and a
        // clear refusal for what is no http(s) URL with a host.
        let ok = |url: &str| host_and_port(url).unwrap();
        assert_eq!(ok("http://localhost"), ("localhost".into(), 80));
        assert_eq!(
            ok("https://h.example:8443/v1?x#y"),
            ("h.example".into(), 8443)
        );
        assert_eq!(ok("http://[::1]:4010/v1"), ("::1".into(), 4010));
        let reason = |url: &str| match host_and_port(url).unwrap_err() {
            RecordError::BadBaseUrl { reason, .. } => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason("ftp://h"), "expected the scheme http or https");
        assert_eq!(reason("no scheme"), "it does not parse as a URL");
        assert_eq!(reason("http:///v1"), "expected a host");
        assert_eq!(
            reason("http://user:pw@h/"),
            "expected no user name or password in the URL"
        );
        assert_eq!(reason("http://h:99999/"), "it does not parse as a URL");
    }
}
