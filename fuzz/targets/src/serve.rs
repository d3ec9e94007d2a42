//! The HTTP endpoints of `simtape serve`, in process: a request's method, path and body go
//! into an open run's gateway inbox exactly as the driver delivers them off the socket, and
//! the run answers through the model fixture and the `[[mcp]]` servers of the serve MCP
//! test's scenario (a world and a cassette). The headers the driver checks outside the run
//! (`Accept`, `Host`/`Origin`) go through the same functions it calls.

use std::sync::OnceLock;

use simtape_agent::EvalScenario;
use simtape_serve::{GatewayInput, HttpRequest};

/// The routes a request byte picks from: every endpoint, a trailing slash, an unknown MCP
/// server and a path that is nothing.
const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v1/messages"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/responses"),
    ("POST", "/v1/messages/count_tokens"),
    ("GET", "/v1/models"),
    ("POST", "/mcp/tickets"),
    ("POST", "/mcp/sums"),
    ("GET", "/mcp/tickets"),
    ("DELETE", "/mcp/sums"),
    ("POST", "/mcp/nope"),
    ("POST", "/mcp/"),
    ("POST", "/v1/chat/completions/"),
    ("PUT", "/v1/messages"),
];

/// The requests in one input, at most: each is answered inside one run.
const REQUESTS_MAX: usize = 64;

fn scenario() -> &'static EvalScenario {
    static SCENARIO: OnceLock<EvalScenario> = OnceLock::new();
    SCENARIO.get_or_init(|| {
        EvalScenario::load(&crate::repo().join("engine/serve/tests/data/mcp.toml"))
            .expect("the serve MCP test's scenario loads")
    })
}

/// Requests separated by the byte 0xFF (never in UTF-8 text): each one's first byte picks
/// its route from [`ROUTES`] (past them: the rest is `Accept`, `Host` and `Origin` header
/// lines, checked as the driver checks them), the rest is its body.
pub(crate) fn serve_endpoints(data: &[u8]) {
    let mut builder = scenario().builder(0);
    let (inbox, outbox) = simtape_serve::register(&mut builder);
    let Ok(sim) = builder.build() else {
        return;
    };
    let mut run = sim.start(move |host| simtape_serve::gateway::gateway(host, inbox, outbox));
    for (id, part) in data.split(|&b| b == 0xFF).take(REQUESTS_MAX).enumerate() {
        let Some((&route, body)) = part.split_first() else {
            continue;
        };
        let body = String::from_utf8_lossy(body);
        let Some(&(method, path)) = ROUTES.get(usize::from(route)) else {
            headers(&body);
            continue;
        };
        let request = HttpRequest {
            id: id as u64,
            method: method.into(),
            path: path.into(),
            body: body.into_owned(),
        };
        if run.deliver(inbox, GatewayInput::Request(request)).is_err() {
            break;
        }
        run.run_until_idle();
        let _ = run.take(outbox);
    }
    let _ = run.close(inbox);
    let _ = run.finish();
}

/// `Accept`, `Host` and `Origin` values, one a line, as the MCP endpoints check them.
fn headers(text: &str) {
    let mut lines = text.lines();
    let (accept, host, origin) = (lines.next(), lines.next(), lines.next());
    let _ = simtape_mcp::http::accepts(accept);
    let _ = simtape_mcp::http::rebinding_refusal(host, origin);
}
