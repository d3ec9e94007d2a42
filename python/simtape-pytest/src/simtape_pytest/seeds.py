"""Seed sets as `simtape sweep --seeds` spells them: `N`, `A..B` (B excluded), and lists of
those joined by commas."""

from typing import List, Union


class SeedsError(ValueError):
    """A seed set that cannot be read; the message names it and what was expected."""


SEEDS_MAX = 1_000_000


def parse_seeds(spec: Union[str, int, List[int], range]) -> List[int]:
    """The seeds of `spec`, in order, without repeats."""
    if isinstance(spec, bool):
        raise SeedsError(f"seeds {spec!r}: expected N, A..B or a list of seeds")
    if isinstance(spec, int):
        return _checked([spec], spec)
    if isinstance(spec, (list, tuple, range)):
        if not all(isinstance(seed, int) and not isinstance(seed, bool) for seed in spec):
            raise SeedsError(f"seeds {spec!r}: every seed must be an integer")
        return _checked(list(spec), spec)
    if not isinstance(spec, str):
        raise SeedsError(f"seeds {spec!r}: expected N, A..B or a list of seeds")
    seeds: List[int] = []
    for part in spec.split(","):
        part = part.strip()
        start, sep, end = part.partition("..")
        try:
            if sep:
                low, high = int(start), int(end)
                if high <= low:
                    raise SeedsError(f"seeds {spec!r}: the range {part!r} is empty (A..B runs A to B-1)")
                if high - low > SEEDS_MAX:
                    raise SeedsError(f"seeds {spec!r}: more than {SEEDS_MAX} seeds")
                seeds.extend(range(low, high))
            else:
                seeds.append(int(part))
        except ValueError as error:
            if isinstance(error, SeedsError):
                raise
            raise SeedsError(f"seeds {spec!r}: {part!r} is not N or A..B (e.g. 0..20, or 3,7)") from None
    return _checked(seeds, spec)


def _checked(seeds: List[int], spec: object) -> List[int]:
    if not seeds:
        raise SeedsError(f"seeds {spec!r}: no seeds")
    for seed in seeds:
        if seed < 0 or seed >= 2**64:
            raise SeedsError(f"seeds {spec!r}: seed {seed} is outside 0..2^64")
    return list(dict.fromkeys(seeds))
