//! The tape: round trip, blobs, and detection of truncation and corruption.

use std::time::Duration;

use simtape::tape::{verify_path, RecordKind, TapeError, TapeReader};
use simtape::Sim;

fn write_tape(path: &std::path::Path, sidecar: bool) -> simtape::RunReport<()> {
    let mut builder = Sim::builder();
    builder
        .seed(11)
        .tape(path)
        .sidecar_blobs(sidecar)
        .blob_threshold_bytes(64);
    builder
        .build()
        .unwrap()
        .run(|host| async move {
            for i in 0..200u64 {
                host.sleep(Duration::from_micros(1 + i % 7)).await;
            }
            host.event("big", serde_json::json!({"text": "x".repeat(500)}))
                .await;
            host.event("big", serde_json::json!({"text": "x".repeat(500)}))
                .await;
        })
        .unwrap()
}

fn read_all(path: &std::path::Path) -> Result<Vec<simtape::tape::RawRecord>, TapeError> {
    let mut reader = TapeReader::open(path)?;
    let mut out = Vec::new();
    while let Some(record) = reader.next_record()? {
        out.push(record);
    }
    Ok(out)
}

#[test]
fn round_trip_and_verify() {
    // Goal: what the writer streams, the reader reads back, footer and all.
    let dir = crate::tempdir("tape", "round-trip");
    let path = dir.join("run.tape");
    let report = write_tape(&path, false);
    let records = read_all(&path).unwrap();
    let wakes = records
        .iter()
        .filter(|r| r.kind == RecordKind::Wake)
        .count();
    assert_eq!(wakes, 200);
    assert_eq!(records.last().unwrap().kind, RecordKind::Footer);
    let verified = verify_path(&path).unwrap();
    assert_eq!(verified.footer.verdict, "ok");
    assert_eq!(
        verified.footer.final_hash,
        report.summary.tape.as_ref().unwrap().final_hash
    );
    assert_eq!(verified.header.seed, 11);
    // One embedded blob for two identical large payloads.
    assert_eq!(
        records
            .iter()
            .filter(|r| r.kind == RecordKind::Blob)
            .count(),
        1
    );
    assert_eq!(records.iter().filter(|r| r.blob_ref).count(), 2);
}

#[test]
fn sidecar_blobs_live_beside_the_tape() {
    // Goal: in sidecar mode blobs are files under <tape>.cas and the tape has none inside.
    let dir = crate::tempdir("tape", "sidecar");
    let path = dir.join("run.tape");
    write_tape(&path, true);
    let records = read_all(&path).unwrap();
    assert_eq!(
        records
            .iter()
            .filter(|r| r.kind == RecordKind::Blob)
            .count(),
        0
    );
    assert_eq!(
        std::fs::read_dir(dir.join("run.tape.cas")).unwrap().count(),
        1
    );
    verify_path(&path).unwrap();
    std::fs::remove_dir_all(dir.join("run.tape.cas")).unwrap();
    assert!(matches!(
        verify_path(&path),
        Err(TapeError::MissingBlob { .. })
    ));
}

#[test]
fn every_truncation_is_detected() {
    // Goal: cutting the tape at any byte is reported as truncated, never accepted.
    let dir = crate::tempdir("tape", "truncate");
    let path = dir.join("run.tape");
    write_tape(&path, false);
    let bytes = std::fs::read(&path).unwrap();
    let cut = dir.join("cut.tape");
    for len in (0..bytes.len()).step_by(7).chain([bytes.len() - 1]) {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        match verify_path(&cut) {
            Err(TapeError::Truncated { .. }) | Err(TapeError::NotATape { .. }) => {}
            other => panic!("cut at {len}: expected truncation, got {other:?}"),
        }
    }
}

#[test]
fn every_flipped_byte_is_detected() {
    // Goal: corrupting any one byte fails verification with the record's index and offset.
    let dir = crate::tempdir("tape", "flip");
    let path = dir.join("run.tape");
    write_tape(&path, false);
    let bytes = std::fs::read(&path).unwrap();
    let bad = dir.join("bad.tape");
    for position in (0..bytes.len()).step_by(3) {
        let mut copy = bytes.clone();
        copy[position] ^= 0x5a;
        std::fs::write(&bad, &copy).unwrap();
        assert!(
            verify_path(&bad).is_err(),
            "flipping byte {position} went unnoticed"
        );
    }
}

#[test]
fn chain_error_names_the_record() {
    // Goal: a changed payload byte is reported at exactly its record and offset.
    let dir = crate::tempdir("tape", "chain");
    let path = dir.join("run.tape");
    write_tape(&path, false);
    let records = read_all(&path).unwrap();
    let target = records
        .iter()
        .find(|r| r.kind == RecordKind::Wake && r.index > 50)
        .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    // The dt_ns field follows the fixarray marker: flip the low bit of its last byte, which
    // changes the record's time by 1 ns and keeps the encoding the smallest.
    let dt_offset = target.offset as usize + 1;
    let dt_last = dt_offset
        + match bytes[dt_offset] {
            0xcc => 1,
            0xcd => 2,
            0xce => 4,
            0xcf => 8,
            _ => 0,
        };
    bytes[dt_last] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let error = verify_path(&path).unwrap_err();
    match error {
        TapeError::ChainBroken { index, offset, .. } | TapeError::Corrupt { index, offset, .. } => {
            assert_eq!(index, target.index);
            assert_eq!(offset, target.offset);
        }
        other => panic!("expected a chain error, got {other}"),
    }
}

#[test]
fn fuzzed_tapes_never_panic_and_are_never_accepted() {
    // Goal: thousands of seeded mutations (flips, cuts, insertions, splices) of a real tape
    // never panic the reader, verify, JSON rendering or the oracle, and every mutation that
    // changes the bytes is rejected.
    use simtape::rng::RngStream;
    let dir = crate::tempdir("tape", "fuzz");
    let path = dir.join("run.tape");
    write_tape(&path, false);
    let original = std::fs::read(&path).unwrap();
    let mut rng = RngStream::fork(7, "tape-fuzz");
    let mutated_path = dir.join("mutated.tape");
    for round in 0..2_000u32 {
        let mut bytes = original.clone();
        let position = rng.below(bytes.len() as u64) as usize;
        match rng.below(5) {
            0 => bytes[position] ^= 1 << rng.below(8),
            1 => bytes.truncate(position),
            2 => bytes.insert(position, rng.below(256) as u8),
            3 => {
                let end = (position + 1 + rng.below(16) as usize).min(bytes.len());
                let chunk = bytes[position..end].to_vec();
                let at = rng.below(bytes.len() as u64) as usize;
                bytes.splice(at..at, chunk);
            }
            _ => bytes[position] = rng.below(256) as u8,
        }
        if bytes == original {
            continue;
        }
        std::fs::write(&mutated_path, &bytes).unwrap();
        let outcome = std::panic::catch_unwind(|| {
            let verified = verify_path(&mutated_path);
            if let Ok(mut reader) = TapeReader::open(&mutated_path) {
                while let Ok(Some(record)) = reader.next_record() {
                    let _ = simtape::tape::payload_to_json(&record.payload);
                }
            }
            let _ = simtape::oracle::diff_bytes(&original, &bytes, simtape::oracle::Mode::Exact);
            verified.is_ok()
        });
        match outcome {
            Ok(accepted) => assert!(!accepted, "round {round}: a mutated tape verified"),
            Err(_) => panic!("round {round}: a mutated tape panicked the reader"),
        }
    }
}

#[test]
fn a_tape_of_a_newer_format_version_is_refused_by_name() {
    // Goal: a tape from an engine newer than this one is refused before any record is read,
    // naming its version and the newest this engine reads.
    use simtape::tape::{BlobMode, TapeSink, TapeWriter, FORMAT_VERSION};
    let dir = crate::tempdir("tape", "version");
    let path = dir.join("v-next.tape");
    let next = FORMAT_VERSION + 1;
    let writer = TapeWriter::new(
        TapeSink::create(&path).unwrap(),
        &header_of_version(next),
        BlobMode::Embedded,
        u64::MAX,
    )
    .unwrap();
    writer.finish(0, "ok").unwrap();
    let error = read_all(&path).unwrap_err();
    assert!(
        matches!(error, TapeError::UnsupportedVersion { found, supported } if found == next && supported == FORMAT_VERSION),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "tape format version {next} is not supported (this engine reads versions 1 to \
             {FORMAT_VERSION}; a newer engine wrote this tape)"
        )
    );
    assert!(verify_path(&path).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tapes_of_every_older_format_version_read_and_only_their_own_kinds() {
    // Goal: versions 1 to 4 read (1 to 3 share the framing and the byte chain, 4 has its
    // own; all share the header and footer) to the same records, but an `input` record,
    // which came with version 3, is refused in 1 and 2 by name.
    use simtape::tape::{BlobMode, TapeSink, TapeWriter};
    let mut records_of_version = Vec::new();
    for version in [1, 2, 3, 4] {
        let tape = |kind: RecordKind| {
            let mut writer = TapeWriter::new(
                TapeSink::Memory(Vec::new()),
                &header_of_version(version),
                BlobMode::Embedded,
                u64::MAX,
            )
            .unwrap();
            writer
                .write_value(5, 0, 0, kind, &(0u64, "stop", ()))
                .unwrap();
            writer.finish(5, "ok").unwrap().memory.unwrap()
        };
        let read = |bytes: Vec<u8>| -> Result<u64, TapeError> {
            let mut reader = TapeReader::new(&bytes[..])?;
            let mut records = 0;
            while reader.next_record()?.is_some() {
                records += 1;
            }
            Ok(records)
        };
        assert_eq!(
            read(tape(RecordKind::Outcome)).unwrap(),
            2,
            "version {version}"
        );
        let outcome = tape(RecordKind::Outcome);
        let mut reader = TapeReader::new(&outcome[..]).unwrap();
        let mut records = Vec::new();
        while let Some(record) = reader.next_record().unwrap() {
            // The footer's payload holds the final chain hash, which differs by version.
            let payload = (record.kind != RecordKind::Footer).then_some(record.payload);
            records.push((record.index, record.t_ns, record.kind, payload));
        }
        records_of_version.push(records);
        let input = read(tape(RecordKind::Input));
        if version >= 3 {
            assert_eq!(input.unwrap(), 2);
        } else {
            let error = input.unwrap_err().to_string();
            assert!(
                error.contains(&format!(
                    "unknown record kind 9 (in format version {version})"
                )),
                "{error}"
            );
        }
    }
    // Format 4 frames records otherwise (no seq, time differences, a chain over values):
    // every version reads back the same records.
    for records in &records_of_version[1..] {
        assert_eq!(records, &records_of_version[0]);
    }
}

/// Returns the header of an empty run in format `format_version`.
fn header_of_version(format_version: u32) -> simtape::tape::TapeHeader {
    simtape::tape::TapeHeader {
        format_version,
        engine_version: "test".into(),
        seed: 1,
        start_unix_ns: 0,
        scenario: Default::default(),
        actors: vec!["engine".into(), "clock".into(), "events".into()],
        blob_mode: "embedded".into(),
        blob_threshold_bytes: 4096,
        checkpoint_interval_records: simtape::tape::CHECKPOINT_INTERVAL_RECORDS,
        sandbox: None,
        decisions: None,
    }
}

#[test]
fn a_tape_reader_returns_the_inputs_section_after_the_footer_outside_the_size_bound() {
    // Goal: the inputs section follows the footer of a real tape, is read back by the
    // reader, does not count against `tape_bytes_max` (which bounds the records), and a cut
    // one is an error naming the section.
    use simtape::tape::{
        BlobMode, InputStore, Inputs, TapeReader, TapeSink, TapeWriter, FORMAT_VERSION,
    };
    let mut inputs = Inputs::new("x.toml");
    inputs.add_file("data/big", vec![7; 10_000], false);
    inputs.add_file("data/small", b"small".to_vec(), true);
    let writer = TapeWriter::new(
        TapeSink::Memory(Vec::new()),
        &header_of_version(FORMAT_VERSION),
        BlobMode::Embedded,
        1_000,
    )
    .unwrap()
    .with_inputs(std::sync::Arc::new(inputs.clone()), InputStore::Embedded);
    let summary = writer.finish(0, "ok").unwrap();
    let bytes = summary.memory.unwrap();
    assert!(bytes.len() > 10_000);
    assert_eq!(summary.bytes, bytes.len() as u64);
    let mut reader = TapeReader::new(&bytes[..]).unwrap();
    while reader.next_record().unwrap().is_some() {}
    assert_eq!(reader.inputs().map(|s| &s.inputs), Some(&inputs));
    let cut = &bytes[..bytes.len() - 3];
    let mut reader = TapeReader::new(cut).unwrap();
    let error = loop {
        match reader.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a cut section reads"),
            Err(error) => break error.to_string(),
        }
    };
    assert!(error.contains("the inputs section"), "{error}");
}

#[test]
fn a_tape_file_is_readable_from_its_first_byte_and_up_to_its_last_checkpoint() {
    // Goal: the tape's path names a tape holding its header as soon as the writer exists
    // (never an empty file, never a temporary one left beside it), and every checkpoint
    // puts the records before it on disk, whatever the write buffer holds.
    use simtape::tape::{
        BlobMode, TapeSink, TapeWriter, CHECKPOINT_INTERVAL_RECORDS, FORMAT_VERSION,
    };
    let dir = crate::tempdir("tape", "first-byte");
    let path = dir.join("run.tape");
    let mut writer = TapeWriter::new(
        TapeSink::create(&path).unwrap(),
        &header_of_version(FORMAT_VERSION),
        BlobMode::Embedded,
        u64::MAX,
    )
    .unwrap();
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, ["run.tape"], "only the tape, under its own name");
    let error = verify_path(&path).unwrap_err().to_string();
    assert!(
        error.contains("the footer is missing (after 0 complete records")
            && error.contains("no record is whole; the header is"),
        "{error}"
    );
    // One record past the first checkpoint: the checkpoint and everything before it are on
    // disk (the buffer alone would hold under 64 KiB of these 10-byte wakes).
    let records = CHECKPOINT_INTERVAL_RECORDS + 1;
    for i in 0..records {
        writer.write_empty(i, 1, 1, RecordKind::Wake).unwrap();
    }
    let mut reader = TapeReader::open(&path).unwrap().up_to_truncation();
    let mut read = 0;
    while reader.next_record().unwrap().is_some() {
        read += 1;
    }
    assert!(read > CHECKPOINT_INTERVAL_RECORDS, "{read} records on disk");
    writer.finish(records, "ok").unwrap();
    assert_eq!(verify_path(&path).unwrap().records, records + 1);
}

#[cfg(unix)]
#[test]
// The pipe is made by mkfifo and read by a thread of the test, outside any simulation.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn a_tape_to_a_pipe_is_written_through_it_not_renamed_over_it() {
    // Goal: a tape path naming something other than a file (a named pipe here; /dev/null or
    // /dev/stdout in use) is written in place: the temporary-name-and-rename that keeps a
    // file tape readable from its first byte would replace it.
    use simtape::tape::{BlobMode, TapeSink, TapeWriter, FORMAT_VERSION};
    use std::os::unix::fs::FileTypeExt;
    let dir = crate::tempdir("tape", "pipe");
    let pipe = dir.join("tape.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(made.success());
    let reader = {
        let pipe = pipe.clone();
        std::thread::spawn(move || std::fs::read(pipe).unwrap())
    };
    let writer = TapeWriter::new(
        TapeSink::create(&pipe).unwrap(),
        &header_of_version(FORMAT_VERSION),
        BlobMode::Embedded,
        u64::MAX,
    )
    .unwrap();
    writer.finish(0, "ok").unwrap();
    let bytes = reader.join().unwrap();
    assert!(bytes.starts_with(b"SIMTAPE\0"));
    assert!(std::fs::metadata(&pipe).unwrap().file_type().is_fifo());
}

#[test]
fn a_long_message_in_an_input_body_and_a_request_is_on_the_tape_once() {
    // Goal: a 1 MB message that enters as an HTTP body (an `input` record's JSON text) and
    // is recorded again decoded (a `request` record) is stored once, embedded or in the
    // sidecar store; every reader gets both payloads back byte for byte, and verify checks
    // the references (a missing blob is named).
    use simtape::tape::{BlobMode, TapeSink, TapeWriter, FORMAT_VERSION};
    let content = format!("a \"quoted\"\nline, é {}", "x".repeat(1 << 20));
    let body = serde_json::json!({"model": "m", "messages": [
        {"role": "user", "content": content}]})
    .to_string();
    let input =
        rmp_serde::to_vec(&(3u64, "message", ("POST", "/v1/chat/completions", &body))).unwrap();
    let request = rmp_serde::to_vec(&("chat", [("user", &content)])).unwrap();
    let dir = crate::tempdir("tape", "long-strings");
    for sidecar in [false, true] {
        let path = dir.join(format!("sidecar-{sidecar}.tape"));
        let cas = dir.join(format!("sidecar-{sidecar}.tape.cas"));
        let mode = if sidecar {
            BlobMode::Sidecar(cas.clone())
        } else {
            BlobMode::Embedded
        };
        let sink = TapeSink::create(&path).unwrap();
        let mut header = header_of_version(FORMAT_VERSION);
        header.blob_mode = mode.name().into();
        let mut writer = TapeWriter::new(sink, &header, mode, u64::MAX).unwrap();
        writer
            .write_payload(1, 2, 0, RecordKind::Input, &input)
            .unwrap();
        writer
            .write_payload(2, 2, 1, RecordKind::Request, &request)
            .unwrap();
        writer.finish(3, "ok").unwrap();
        let stored = std::fs::metadata(&path).unwrap().len()
            + std::fs::read_dir(&cas)
                .map(|files| files.map(|f| f.unwrap().metadata().unwrap().len()).sum())
                .unwrap_or(0);
        assert!(stored >= content.len() as u64);
        assert!(stored < content.len() as u64 + 4096, "{stored} bytes");
        let mut reader = TapeReader::open(&path).unwrap().keep_blobs(true);
        let mut payloads = Vec::new();
        while let Some(record) = reader.next_record().unwrap() {
            if matches!(record.kind, RecordKind::Input | RecordKind::Request) {
                assert!(record.string_refs);
                payloads.push(reader.resolve(&record).unwrap());
            }
        }
        assert_eq!(payloads, [input.clone(), request.clone()]);
        verify_path(&path).unwrap();
        if sidecar {
            for file in std::fs::read_dir(&cas).unwrap() {
                std::fs::remove_file(file.unwrap().path()).unwrap();
            }
            let error = verify_path(&path).unwrap_err();
            assert!(
                matches!(error, TapeError::MissingBlob { index: 0, .. }),
                "{error}"
            );
        }
    }
}
