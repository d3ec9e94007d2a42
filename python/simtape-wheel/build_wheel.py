"""Builds the `simtape` wheel: an already-built `simtape` binary and the pytest plugin in one
platform wheel, so `pip install` puts `simtape` on PATH and the plugin in place with no Rust
toolchain (docs/pytest.md, "simtape without Rust").

    python python/simtape-wheel/build_wheel.py --binary target/release/simtape --out dist/

The binary is packed as the wheel's script (`simtape-VERSION.data/scripts/simtape`), as
maturin's `bindings = "bin"` packs it; it is stripped of symbols first unless --no-strip.
Standard library only.
"""

import argparse
import base64
import hashlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

NAME = "simtape"
PLUGIN = Path(__file__).resolve().parent.parent / "simtape-pytest"


def version() -> str:
    """The plugin's version, which the wheel carries too."""
    for line in (PLUGIN / "pyproject.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    raise SystemExit(f"{PLUGIN / 'pyproject.toml'}: no version line")


def platform_tag() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(binary: Path, out: Path, strip: bool) -> Path:
    if not binary.is_file():
        raise SystemExit(f"--binary {binary}: not a file (build it with cargo build -p simtape-cli)")
    ver = version()
    dist_info = f"{NAME}-{ver}.dist-info"
    tag = f"py3-none-{platform_tag()}"
    files = []  # (name in the wheel, bytes, unix mode)
    with tempfile.TemporaryDirectory() as scratch:
        packed = Path(scratch) / "simtape"
        shutil.copy(binary, packed)
        if strip:
            subprocess.run(["strip", str(packed)], check=True)
        files.append((f"{NAME}-{ver}.data/scripts/simtape", packed.read_bytes(), 0o755))
    for path in sorted((PLUGIN / "src" / "simtape_pytest").glob("*.py")):
        files.append((f"simtape_pytest/{path.name}", path.read_bytes(), 0o644))
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\nVersion: {ver}\n"
        "Summary: simtape, a deterministic simulation engine for testing LLM-agent pipelines: "
        "the binary and its pytest plugin\n"
        "License: MIT OR Apache-2.0\nRequires-Python: >=3.9\nRequires-Dist: pytest>=7\n"
        "Classifier: Framework :: Pytest\n"
    )
    wheel = f"Wheel-Version: 1.0\nGenerator: simtape build_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n"
    entry_points = "[pytest11]\nsimtape = simtape_pytest.plugin\n"
    for name, text in (("METADATA", metadata), ("WHEEL", wheel), ("entry_points.txt", entry_points)):
        files.append((f"{dist_info}/{name}", text.encode(), 0o644))
    record = "\n".join(record_line(name, data) for name, data, _ in files)
    record += f"\n{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode(), 0o644))
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{NAME}-{ver}-{tag}.whl"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in files:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, required=True, help="the built simtape binary")
    parser.add_argument("--out", type=Path, required=True, help="the directory to write the wheel to")
    parser.add_argument("--no-strip", action="store_true", help="pack the binary as it is")
    args = parser.parse_args()
    print(build(args.binary, args.out, not args.no_strip))


if __name__ == "__main__":
    sys.exit(main())
