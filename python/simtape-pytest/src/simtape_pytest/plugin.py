"""The pytest hooks: a `simtape` marker parametrizes a test by seed; each seed's test function
runs as the agent of a `simtape serve --in-process` session and is judged by its verdict."""

import os
import re
import subprocess
import traceback
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from .seeds import SeedsError, parse_seeds
from .serve import Served, ServeFailed, Verdict, find_binary

SEED_VARIABLE = "SIMTAPE_SEED"
_SERVED = pytest.StashKey[Served]()
# Each marked test's spec, by its node id without the seed parameter (collection reads it
# once per test function; its items, one per seed, look it up).
_SPECS: Dict[str, "Spec"] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("simtape", "simtape: test functions as agents under simulation")
    group.addoption(
        "--simtape-seeds",
        metavar="SEEDS",
        help="the seeds of every simtape test (N, A..B with B excluded, or a comma list), "
        "over the marker's; SIMTAPE_SEED=N wins over both",
    )
    group.addoption(
        "--simtape-check-determinism",
        action="store_true",
        help="run each seed twice and fail naming the first divergence when the tapes differ",
    )
    group.addoption(
        "--simtape-tapes",
        metavar="DIR",
        help="where the tapes go (default: .simtape/tapes under the rootdir)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "simtape(scenario, seeds=None, settle_ms=None): run the test once per seed as the "
        "agent of the scenario under `simtape serve` (docs/pytest.md)",
    )
    for source, spec in _seed_overrides(config):
        try:
            parse_seeds(spec)
        except SeedsError as error:
            raise pytest.UsageError(f"simtape: {source}: {error}") from None


def _seed_overrides(config: pytest.Config) -> List[tuple]:
    """The seed sets that override a marker's, strongest first, with where each came from."""
    found = []
    if os.environ.get(SEED_VARIABLE):
        found.append((SEED_VARIABLE, os.environ[SEED_VARIABLE]))
    if config.getoption("simtape_seeds"):
        found.append(("--simtape-seeds", config.getoption("simtape_seeds")))
    return found


class Spec:
    """A marked test's scenario and seeds, read once at collection."""

    def __init__(self, scenario: Path, seeds: List[int], settle_ms: Optional[int], binary: str):
        self.scenario = scenario
        self.seeds = seeds
        self.settle_ms = settle_ms
        self.binary = binary


_checked: Dict[Path, None] = {}


def _spec(metafunc: pytest.Metafunc, marker: pytest.Mark) -> Spec:
    where = f"{metafunc.definition.nodeid}: @pytest.mark.simtape"
    if len(marker.args) != 1 or not isinstance(marker.args[0], (str, os.PathLike)):
        raise pytest.UsageError(f"{where}: expected one scenario path, as simtape(\"scenario.toml\", seeds=\"0..20\")")
    named = Path(marker.args[0])
    # A scenario is named from the test file's directory, else from the rootdir.
    candidates = [named] if named.is_absolute() else [
        Path(metafunc.definition.path).parent / named,
        Path(metafunc.config.rootpath) / named,
    ]
    scenario = next((path for path in candidates if path.is_file()), None)
    if scenario is None:
        tried = ", ".join(str(path) for path in candidates)
        raise pytest.UsageError(f"{where}: scenario {str(named)!r} not found (looked at {tried})")
    try:
        binary = find_binary()
    except ServeFailed as error:
        raise pytest.UsageError(f"simtape: {error}") from None
    if scenario not in _checked:
        checked = subprocess.run([binary, "check", str(scenario)], capture_output=True, text=True)
        if checked.returncode != 0:
            problems = (checked.stdout + checked.stderr).strip()
            raise pytest.UsageError(f"{where}: scenario {scenario} does not check:\n{problems}")
        _checked[scenario] = None
    overrides = _seed_overrides(metafunc.config)
    source, spec = overrides[0] if overrides else ("seeds=", marker.kwargs.get("seeds", 0))
    try:
        seeds = parse_seeds(spec)
    except SeedsError as error:
        raise pytest.UsageError(f"{where}: {source}: {error}") from None
    settle_ms = marker.kwargs.get("settle_ms")
    if settle_ms is not None and (not isinstance(settle_ms, int) or settle_ms < 0):
        raise pytest.UsageError(f"{where}: settle_ms={settle_ms!r}: expected whole milliseconds >= 0")
    return Spec(scenario.resolve(), seeds, settle_ms, binary)


# Bad markers found while collecting: raised together once collection ends, as a usage
# error (raised inside a collector, pytest would report it as that file's collection error).
_BAD_MARKERS: List[str] = []


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("simtape")
    if marker is None:
        return
    try:
        spec = _spec(metafunc, marker)
    except pytest.UsageError as error:
        _BAD_MARKERS.append(str(error))
        return
    _SPECS[metafunc.definition.nodeid] = spec
    metafunc.parametrize("simtape_seed", spec.seeds, ids=[f"seed{seed}" for seed in spec.seeds])


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    if _BAD_MARKERS:
        problems = list(dict.fromkeys(_BAD_MARKERS))
        _BAD_MARKERS.clear()
        raise pytest.UsageError("\n".join(problems))


@pytest.fixture
def simtape_seed(request: pytest.FixtureRequest) -> Optional[int]:
    """The seed this run of a simtape test serves (None outside one)."""
    return getattr(request, "param", None)


class SimtapeRun:
    """What a simtape test can read about its run: the seed, the tape and the endpoints."""

    def __init__(self, served: Served):
        self.seed = served.seed
        self.scenario = served.scenario
        self.tape = served.tape
        self.env = dict(served.env)

    @property
    def openai_base_url(self) -> str:
        return self.env["OPENAI_BASE_URL"]


@pytest.fixture
def simtape(request: pytest.FixtureRequest, _simtape_agent: Optional[Served]) -> SimtapeRun:
    """The run of a `@pytest.mark.simtape` test: its seed, tape and endpoint variables."""
    if _simtape_agent is None:
        raise pytest.UsageError(f"{request.node.nodeid}: the simtape fixture needs @pytest.mark.simtape(\"scenario.toml\")")
    return SimtapeRun(request.node.stash[_SERVED])


@pytest.fixture(autouse=True)
def _simtape_agent(request: pytest.FixtureRequest, simtape_seed: Optional[int]):
    """Starts serve for a simtape test's seed and puts its endpoints in os.environ; restores
    the environment afterwards."""
    spec = _item_spec(request.node)
    if spec is None or simtape_seed is None:
        yield None
        return
    served = _start(request.node, spec, simtape_seed, _tape_path(request.node, simtape_seed))
    saved = _enter(served)
    request.node.stash[_SERVED] = served
    try:
        yield served
    finally:
        _leave(saved)
        served.kill()


def _item_spec(item: pytest.Item) -> Optional[Spec]:
    return _SPECS.get(item.nodeid.split("[", 1)[0])


def _start(item: pytest.Item, spec: Spec, seed: int, tape: Path) -> Served:
    try:
        return Served(spec.binary, spec.scenario, seed, tape, spec.settle_ms)
    except ServeFailed as error:
        pytest.fail(f"simtape: seed {seed}: {error}", pytrace=False)


def _enter(served: Served) -> Dict[str, Optional[str]]:
    saved = {name: os.environ.get(name) for name in served.env}
    os.environ.update(served.env)
    return saved


def _leave(saved: Dict[str, Optional[str]]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _tape_path(item: pytest.Item, seed: int, again: bool = False) -> Path:
    configured = item.config.getoption("simtape_tapes")
    root = Path(configured) if configured else Path(item.config.rootpath) / ".simtape" / "tapes"
    test = item.nodeid.split("[", 1)[0]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", test).strip("_")
    return root / name / (f"seed-{seed}.again.tape" if again else f"seed-{seed}.tape")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    served = item.stash.get(_SERVED, None)
    if served is None:
        return (yield)
    raised: Optional[str] = None
    try:
        result = yield
    except (KeyboardInterrupt, SystemExit):
        served.kill()
        raise
    except pytest.skip.Exception:
        _finish(served, 0)
        raise
    except BaseException as error:
        # Judged outside this block: the failure then stands alone, not chained to `error`
        # (whose summary it carries).
        raised = _exception_line(error)
    verdict = _finish(served, 0 if raised is None else 1)
    if raised is not None or not verdict.ok:
        pytest.fail(_failure(item, served, verdict, raised), pytrace=False)
    if item.config.getoption("simtape_check_determinism"):
        _check_determinism(item, served)
    return result


def _finish(served: Served, exit_code: int) -> Verdict:
    try:
        return served.finish(exit_code)
    except ServeFailed as error:
        pytest.fail(f"simtape: seed {served.seed}: {error}", pytrace=False)


def _reproduce(item: pytest.Item, seed: int) -> str:
    return f"{SEED_VARIABLE}={seed} python -m pytest '{item.nodeid.split('[', 1)[0]}'"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _exception_line(error: BaseException) -> str:
    """The exception's own last line (`openai.RateLimitError: Error code: 429 - …`), without
    the notes a framework adds after it (LangGraph's names its node and a per-run id)."""
    lines = "".join(traceback.format_exception_only(type(error), error)).strip().splitlines()
    notes = sum(len(str(note).splitlines()) for note in getattr(error, "__notes__", None) or [])
    return (lines[: len(lines) - notes] or lines)[-1]


def _failure(item: pytest.Item, served: Served, verdict: Verdict, raised: Optional[str]) -> str:
    lines = [f"simtape: seed {served.seed} of {_shown(served.scenario)}: {verdict.kind}: {verdict.reason}"]
    if raised:
        lines.append(f"  the test raised: {raised}")
    lines += [f"  {line}" for line in verdict.summary]
    lines.append(f"  reproduce: {_reproduce(item, served.seed)}")
    lines.append(f"  tape: {_shown(served.tape)}")
    lines.append(f"  replay without the agent: simtape replay {_shown(served.tape)} --scenario {_shown(served.scenario)}")
    return "\n".join(lines)


def _check_determinism(item: pytest.Item, first: Served) -> None:
    """Runs the seed's test function again against a second serve and compares the tapes."""
    spec = _item_spec(item)
    assert spec is not None
    again = _start(item, spec, first.seed, _tape_path(item, first.seed, again=True))
    saved = _enter(again)
    try:
        try:
            item.runtest()
            code = 0
        except (KeyboardInterrupt, SystemExit):
            again.kill()
            raise
        except BaseException:
            code = 1
        _finish(again, code)
    finally:
        _leave(saved)
        again.kill()
    if first.tape.read_bytes() == again.tape.read_bytes():
        again.tape.unlink()
        return
    diff = subprocess.run(
        [spec.binary, "diff", str(first.tape), str(again.tape)], capture_output=True, text=True
    )
    shown = (diff.stdout + diff.stderr).strip()
    pytest.fail(
        f"simtape: seed {first.seed} is not deterministic: two runs wrote different tapes\n"
        f"  {_shown(first.tape)}\n  {_shown(again.tape)}\n"
        + "\n".join(f"  {line}" for line in shown.splitlines())
        + f"\n  reproduce: {_reproduce(item, first.seed)} --simtape-check-determinism",
        pytrace=False,
    )
