//! Serve within bounds: request bodies share one memory budget (a body that does not fit is
//! refused 503 with `retry-after`), and a connection that sends no headers is closed after
//! the header timeout; neither reaches the tape.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use simtape::tape::{RecordKind, TapeReader};
use simtape_agent::EvalScenario;
use simtape_serve::limits::{HEADER_READ_TIMEOUT, REQUEST_BODIES_BYTES_MAX};
use simtape_serve::{BodyNormalizer, ServeOptions, SETTLE_DEFAULT};

/// A serve session without an agent, on its own thread; `probe` runs against its address,
/// then the session stops. Returns how many requests the tape's `input` records hold.
fn session(probe: impl FnOnce(SocketAddr)) -> usize {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/endpoints.toml");
    let (stop_tx, stop) = smol::channel::bounded(1);
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let eval = EvalScenario::load(&scenario).unwrap();
        let mut builder = eval.builder(0);
        builder.tape_in_memory();
        let options = ServeOptions {
            addr: "127.0.0.1:0".parse().unwrap(),
            settle: SETTLE_DEFAULT,
            command: None,
            normalizer: BodyNormalizer::agent_defaults(),
            session_log: None,
            sandbox: None,
        };
        let session = simtape_serve::serve(&mut builder, options, stop, |endpoints| {
            addr_tx.send(endpoints.addr).unwrap();
        })
        .unwrap();
        let report = session.report.unwrap();
        report.summary.tape.unwrap().memory.unwrap()
    });
    probe(addr_rx.recv().unwrap());
    stop_tx.try_send(()).unwrap();
    let tape = server.join().unwrap();
    let mut reader = TapeReader::new(&tape[..]).unwrap();
    let mut inputs = 0;
    while let Some(record) = reader.next_record().unwrap() {
        // Requests only: closing the gateway's inbox at the end is an input record too.
        if record.kind == RecordKind::Input {
            let payload = simtape::tape::payload_to_json(&record.payload).unwrap();
            inputs += usize::from(payload[1] == "message");
        }
    }
    inputs
}

/// Sends a POST's head declaring `length` body bytes.
fn post_head(addr: SocketAddr, length: usize) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    // Without the bounds under test, serve would wait for the rest: fail, do not hang.
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: \
         application/json\r\ncontent-length: {length}\r\n\r\n"
    )
    .unwrap();
    stream
}

/// Reads what the server sends until it closes the connection.
fn read_all(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_body_over_the_remaining_budget_is_refused_503_with_retry_after_and_not_taped() {
    // Goal: while one request holds most of the budget (it declared 30 MiB and is still
    // sending), another that would pass the budget is refused at once, 503 with
    // `retry-after`, as an overloaded provider answers; once the first is gone, a request
    // is served again. Only that one reaches the tape.
    let inputs = session(|addr| {
        let held = 30 << 20;
        assert!(held < REQUEST_BODIES_BYTES_MAX && 2 * held > REQUEST_BODIES_BYTES_MAX);
        let mut first = post_head(addr, held);
        first.write_all(&vec![b' '; 1 << 20]).unwrap();
        let mut second = post_head(addr, held);
        let refused = read_all(&mut second);
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
        assert!(refused.contains("retry-after: 1"), "{refused}");
        drop(first);
        // The first's bytes come back when its connection is gone (a moment, on loopback).
        let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
        let started = Instant::now();
        loop {
            let mut third = post_head(addr, body.len());
            third.write_all(body.as_bytes()).unwrap();
            let answer = read_all(&mut third);
            if !answer.starts_with("HTTP/1.1 503") {
                assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "{answer}");
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    assert_eq!(inputs, 1);
}

#[test]
fn a_half_open_connection_is_closed_after_the_header_timeout_and_not_taped() {
    // Goal: a client that sends part of a request head and then nothing (a slowloris, a
    // half-open connection) is closed by serve once the header timeout passes, not held
    // for ever; nothing of it reaches the tape. (It waits the timeout out: 30 s.)
    let inputs = session(|addr| {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"POST /v1/messages HTTP/1.1\r\nhost: 127.0")
            .unwrap();
        stream
            .set_read_timeout(Some(HEADER_READ_TIMEOUT + Duration::from_secs(30)))
            .unwrap();
        let started = Instant::now();
        // Whatever serve sends first (hyper may answer 408), it must then close.
        read_all(&mut stream);
        let waited = started.elapsed();
        assert!(
            waited + Duration::from_millis(500) >= HEADER_READ_TIMEOUT
                && waited < HEADER_READ_TIMEOUT + Duration::from_secs(20),
            "closed after {waited:?}"
        );
    });
    assert_eq!(inputs, 0);
}
