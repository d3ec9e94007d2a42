"""One `simtape serve --in-process` session: started before the test function runs, told how
it ended afterwards, and read for its verdict."""

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

READY = "serve: waiting for the agent"
# Set for the test as well: the OpenAI Agents SDK uploads traces to its vendor by default,
# which an agent under simulation must not reach.
EXTRA_ENV = {"OPENAI_AGENTS_DISABLE_TRACING": "1"}


class ServeFailed(Exception):
    """`simtape serve` could not start or did not end as a session does."""


def find_binary() -> str:
    """The `simtape` binary: $SIMTAPE_BIN, else `simtape` on PATH."""
    named = os.environ.get("SIMTAPE_BIN")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise ServeFailed(f"SIMTAPE_BIN={named} is not an executable file")
        return named
    found = shutil.which("simtape")
    if found is None:
        raise ServeFailed(
            "the simtape binary was not found on PATH and SIMTAPE_BIN is not set: "
            "install it (pip install simtape, or cargo install --path engine/cli in the "
            "simtape repository) or name it in SIMTAPE_BIN"
        )
    return found


@dataclass
class Verdict:
    """How serve judged the session: `ok`, `fail: …` or `error: …`, and its summary lines."""

    line: str
    exit_code: int
    summary: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.line == "ok"

    @property
    def kind(self) -> str:
        """FAIL, ERROR, BLOCKED or PASS, as `simtape run` names verdicts."""
        head = self.line.split(":", 1)[0].strip()
        return {"ok": "PASS", "fail": "FAIL", "blocked": "BLOCKED"}.get(head, "ERROR")

    @property
    def reason(self) -> str:
        return self.line.split(":", 1)[1].strip() if ":" in self.line else self.line


class Served:
    """A running `simtape serve --in-process` for one seed of one scenario."""

    def __init__(self, binary: str, scenario: Path, seed: int, tape: Path, settle_ms: Optional[int] = None):
        self.scenario = scenario
        self.seed = seed
        self.tape = tape
        self.env: Dict[str, str] = {}
        tape.parent.mkdir(parents=True, exist_ok=True)
        command = [binary, "serve", str(scenario), "--seed", str(seed), "--tape", str(tape), "--in-process"]
        if settle_ms is not None:
            command += ["--settle-ms", str(settle_ms)]
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._before: List[str] = []
        assert self._process.stdout is not None
        for line in self._process.stdout:
            line = line.rstrip("\n")
            self._before.append(line)
            stripped = line.strip()
            if stripped.startswith("export "):
                name, _, value = stripped[len("export "):].partition("=")
                self.env[name] = value
            if line.startswith(READY):
                break
        else:
            error = self._process.stderr.read() if self._process.stderr else ""
            code = self._process.wait()
            raise ServeFailed(f"simtape serve {scenario} --seed {seed} ended (exit {code}) before serving: {error.strip()}")
        self.env.update(EXTRA_ENV)

    def finish(self, exit_code: int) -> Verdict:
        """Tells serve the agent ended with `exit_code`; waits for the tape and the verdict."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(f"exit {exit_code}\n")
            process.stdin.flush()
            process.stdin.close()
        except BrokenPipeError:
            pass
        rest = process.stdout.read()
        error = process.stderr.read() if process.stderr else ""
        code = process.wait()
        lines = [line for line in rest.splitlines() if line.strip()]
        verdicts = [line[len("verdict: "):] for line in lines if line.startswith("verdict: ")]
        if not verdicts:
            raise ServeFailed(f"simtape serve ended (exit {code}) without a verdict: {error.strip()}")
        summary = [line for line in lines if line.startswith("serve: ")]
        return Verdict(line=verdicts[-1], exit_code=code, summary=summary)

    def kill(self) -> None:
        """Ends serve at once (the test run was interrupted)."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
