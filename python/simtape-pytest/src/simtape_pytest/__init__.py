"""simtape-pytest: a pytest test function as the agent of a simtape scenario.

`@pytest.mark.simtape("scenario.toml", seeds="0..20")` runs the test once per seed with
`simtape serve --in-process` answering its model and MCP calls; the provider base URLs and
keys are in `os.environ` while it runs. See docs/pytest.md.
"""

from .serve import Served, ServeFailed, Verdict, find_binary
from .seeds import SeedsError, parse_seeds

__all__ = ["Served", "ServeFailed", "Verdict", "find_binary", "SeedsError", "parse_seeds"]
