//! The serve bench at small size, under `cargo test`: simtape serve answers the 50 KB request
//! as JSON and SSE at both settle windows, aimock answers the same request, and Claude Code
//! passes under simtape and against the bare mock, so the benchmark cannot rot. A missing
//! peer (aimock, Claude Code) skips its part with a notice, and fails when CI is true.

use simtape_bench::{claude_code, serve};

/// Returns the peer, or `None` after a skip notice; under CI a missing peer fails.
fn peer(found: Result<std::path::PathBuf, String>) -> Option<std::path::PathBuf> {
    match found {
        Ok(path) => Some(path),
        Err(why) if serve::under_ci() => panic!("{why}"),
        Err(why) => {
            eprintln!("skip: {why}");
            None
        }
    }
}

#[test]
fn the_request_is_claude_code_sized() {
    let body = serve::request(true).to_string();
    assert!(
        (45_000..60_000).contains(&body.len()),
        "{} bytes",
        body.len()
    );
    assert_eq!(serve::request(false)["tools"].as_array().unwrap().len(), 12);
}

#[test]
fn simtape_serve_answers_every_round_trip_at_both_settle_windows() {
    // Every answer is checked inside (200, the fixture's text or a whole event stream), and
    // the run must have answered every request sent as a model call.
    for settle_ms in [0, 20] {
        let (json, sse) = serve::measure_simtape(settle_ms, 5).expect("serve answers");
        assert_eq!(json.round_trips_us.len(), 5);
        assert_eq!(sse.round_trips_us.len(), 5);
        assert!(!json.stream && sse.stream);
        // A settle window is a floor under each round trip.
        assert!(json.p50_ms() >= settle_ms as f64, "{}", json.p50_ms());
        assert!(json.p99_ms() >= json.p50_ms());
    }
}

#[test]
fn the_round_trip_report_compares_with_aimock() {
    let with_aimock = peer(serve::aimock_bin()).is_some();
    let trips = serve::measure(3, with_aimock).expect("every server answers");
    assert_eq!(trips.rows.len(), if with_aimock { 6 } else { 4 });
    let simtape = serve::Server::Simtape { settle_ms: 0 };
    assert!(trips.sse_overhead(simtape).is_some_and(|r| r > 0.0));
    assert_eq!(trips.ratio_to_aimock(simtape, false).is_some(), with_aimock);
    let bars = serve::bars(&trips);
    assert_eq!(bars.len(), 1);
    assert!(bars[0].measured.is_some_and(|p| p > 0.0));
    assert!(serve::table(&trips).contains("| simtape (settle 20 ms) | SSE |"));
}

#[test]
fn claude_code_passes_under_simtape_and_against_the_bare_mock() {
    let Some(claude) = peer(claude_code::claude_bin()) else {
        return;
    };
    // One run per side and pool size (plus one warm-up run each): every simtape run must
    // PASS, every bare run must answer all four turns and pass the gate.
    let rates = claude_code::measure(&claude, 1, 1).expect("every run passes");
    assert_eq!(rates.rows.len(), 6);
    assert!(rates.rows.iter().all(|row| row.runs_per_min() > 0.0));
    let bars = claude_code::bars(&rates);
    assert_eq!(bars.len(), 4);
    assert!(bars.iter().all(|bar| bar.measured.is_some()));
}

#[test]
fn a_trivial_program_runs_in_the_sandbox_and_as_a_plain_child() {
    // The sandbox bench, small: both ways run and give figures (their size is the bench's
    // to report, not this test's to judge).
    let trivial = simtape_bench::sandbox::measure(3).expect("both ways run");
    assert!(trivial.sandboxed_ms.is_finite() && trivial.sandboxed_ms > 0.0);
    assert!(trivial.plain_ms.is_finite() && trivial.plain_ms > 0.0);
    let bar = simtape_bench::sandbox::bar(&trivial);
    assert_eq!(bar.measured, Some(trivial.sandboxed_ms));
    assert!(simtape_bench::sandbox::table(&trivial).contains("| in the sandbox | 3 |"));
}
