//! `simtape-afl TARGET`: one fuzz target under AFL++'s persistent mode (`fuzz/run.sh`).

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(run) = simtape_fuzz_targets::target(&name) else {
        let names: Vec<&str> = simtape_fuzz_targets::TARGETS.iter().map(|t| t.0).collect();
        eprintln!("usage: simtape-afl TARGET (one of {})", names.join(", "));
        std::process::exit(2);
    };
    // Fixtures and lazily built tables load here, in the fork server's parent, not in the
    // first execution of each child (docs/fuzzing.md, "Speed and stability").
    simtape_fuzz_targets::warm_up(&name);
    afl::fuzz!(|data: &[u8]| run(data));
}
