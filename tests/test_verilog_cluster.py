"""The emitted Verilog of a whole cluster under Icarus Verilog: the network never deadlocks.

``optnet hdl`` lowers every node of ``examples/ulx3s_ring4.yaml`` (four ECP5 boards in a
ring of LVDS/DDR links); this test cables the nodes' pads together as the cabling plan
says, gives every node its own clocks (a few hundred ppm apart, as separate boards have)
and resets, and drives every endpoint with heavy random traffic, broadcasts included.
From the drivers' logs it checks that every unicast frame reaches its destination once,
every broadcast reaches every other node once, each flow (source, destination,
unicast or broadcast) arrives in order, and every beat is intact; a run in which nothing
arrives for a long time while frames are missing is reported as a deadlock, with the
frames and flows still outstanding.

Unlike ``tests/test_hw_cluster.py`` (Amaranth's simulator, link models in place of the
PHYs), this runs the Verilog that goes to synthesis: the LVDS PHYs with their word
alignment and clock-domain crossings, the link layers' CRC and replay, the routers with
their block-RAM tables, and the endpoints. Only the four ECP5 I/O primitives are models
(``tests/verilog/ecp5_io_models.v``).

The testbench is ``tests/verilog/cluster_tb.v`` (progress watch) with
``tests/verilog/axis_traffic.v`` (one driver per endpoint); the cluster-specific part
(clocks, node instances, cabling) is generated here into ``cluster_nodes.vh``, so any
cluster of ECP5 nodes joined by LVDS links can be simulated the same way. It is compiled
once per module; each traffic mix is a schedule file per endpoint that the drivers read at
run time.
"""

from __future__ import annotations

import hashlib
import random
import re
import shutil
import subprocess
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from optnet.cli import cli
from optnet.hw.endpoint import axis_rx_layout, axis_tx_layout
from optnet.hw.top import LINK_COUNTERS
from optnet.plan import NodePlan, plan
from optnet.plan.configs import EndpointConfig
from optnet.routing.route import Routed

from .conftest import ROOT, linted
from .hwtools import missing_tool

EXAMPLE = ROOT / "examples" / "ulx3s_ring4.yaml"
VERILOG = ROOT / "tests" / "verilog"

#: First-beat tag layout (low 32 bits): magic, source node id, broadcast flag, endpoint
#: index and frame number, so a frame identifies itself wherever it turns up.
TAG_MAGIC = 0xA
#: Cable delay per metre (the latency model's 5 ns/m), and the length of a link that
#: gives none.
NS_PER_M = 5.0
DEFAULT_CABLE_M = 0.3
#: Clock offsets of the boards' oscillators, ppm, taken in turn. Crystal oscillators are
#: typically within +-50 ppm; larger offsets make the clock crossings slip phase sooner.
PPM = (120, -80, 200, -150, 60, -30, 170, -110)
#: Network cycles without a single delivery (while copies are missing) that count as a
#: deadlock: 200 us at 50 MHz. A flit crosses a link in about 20 network cycles here (a
#: 6-word link frame, 5 PHY cycles a word), a whole packet in under 200.
STALL_CYCLES = 10_000
#: Wall-clock limit of one simulation.
RUN_TIMEOUT_S = 900


# -- the cluster ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One endpoint of one node: the testbench drives and watches each with a driver."""

    index: int
    node: str
    node_id: int
    endpoint: str
    ep_index: int
    config: EndpointConfig

    @property
    def name(self) -> str:
        return f"{self.node}_{self.endpoint}"


@dataclass(frozen=True)
class Wire:
    """One direction of one cable: ``tx``'s pads drive ``rx``'s pads.

    Attributes
    ----------
    tx, rx : tuple of (str, int)
        Node and router port number (the ``port<p>_`` of the pads) at each end.
    lanes : tuple of (int, int)
        Pairs of pad indices (transmit lane, receive lane) joined by the cable.
    delay_ns : float
    """

    tx: tuple[str, int]
    rx: tuple[str, int]
    lanes: tuple[tuple[int, int], ...]
    delay_ns: float


@dataclass(frozen=True)
class Cluster:
    """Everything the testbench generator needs about the cluster."""

    routed: Routed
    plans: tuple[NodePlan, ...]
    units: tuple[Unit, ...]
    wires: tuple[Wire, ...]
    ports: dict[str, dict[str, tuple[str, int]]]   # node -> port name -> (dir, width)


def load_cluster(example: Path, rtl: Path | None) -> Cluster:
    """Routes and plans ``example`` and reads the top-module ports of each node's Verilog
    under ``rtl`` (``<node>/rtl/<node>.v``; no ports without it)."""
    result = linted(example)
    assert result.routed is not None
    routed = result.routed
    plans = tuple(plan(routed))
    units = []
    for p in plans:
        for k, (name, cfg) in enumerate(zip(p.endpoint_names, p.endpoints, strict=True)):
            units.append(Unit(len(units), p.node, p.node_id, name, k, cfg))
    by_node = {p.node: p for p in plans}

    def router_port(node: str, board_port: str, lanes: tuple[int, ...]):
        for port in by_node[node].ports:
            if port.board_port == board_port and port.lanes == lanes:
                return port
        raise AssertionError(f"no router port of {node} on {board_port} lanes {lanes}")

    wires = []
    for link in routed.cluster.links:
        a = router_port(link.a.node, link.a.port, link.a.lanes)
        b = router_port(link.b.node, link.b.port, link.b.lanes)
        if a.phy != "lvds" or b.phy != "lvds":
            pytest.skip("only LVDS/DDR links have simulation models of their I/O primitives")
        metres = DEFAULT_CABLE_M if link.length is None else float(link.length.value)
        # Cable pair k joins the k-th listed lane of each end (the cabling plan pairs the
        # ends' lane lists in order); a pad index is the lane's place in its port's lanes.
        pairs = tuple((k, k) for k in range(len(link.a.lanes)))
        wires.append(Wire((link.a.node, a.port), (link.b.node, b.port), pairs,
                          metres * NS_PER_M))
        wires.append(Wire((link.b.node, b.port), (link.a.node, a.port), pairs,
                          metres * NS_PER_M))
    ports = {} if rtl is None else {
        p.node: top_ports(rtl / p.node / "rtl" / f"{p.node}.v", p.node) for p in plans}
    return Cluster(routed, plans, tuple(units), tuple(wires), ports)


def top_ports(path: Path, module: str) -> dict[str, tuple[str, int]]:
    """Direction and width of each port of ``module`` in ``path``."""
    text = path.read_text()
    start = text.index(f"module {module}(")
    body = text[start:text.index("endmodule", start)]
    ports = {}
    for direction, msb, name in re.findall(
            r"^\s*(input|output|inout)\s+(?:\[(\d+):0\]\s+)?([A-Za-z_][\w$]*)\s*;", body,
            re.MULTILINE):
        ports[name] = (direction, int(msb) + 1 if msb else 1)
    return ports


# -- the cluster-specific part of the testbench -----------------------------------------------

#: Pads of an LVDS/DDR port (optnet/hw/phy/lvds.py), by direction on the node.
LVDS_OUT_PADS = ("clk_p", "clk_n", "tx_p", "tx_n")
LVDS_IN_PADS = ("rclk_p", "rclk_n", "rx_p", "rx_n")


def _ppm(plans: tuple[NodePlan, ...], node: str) -> int:
    return PPM[[p.node for p in plans].index(node) % len(PPM)]


def _phy_hz(port) -> float:
    # DDR: two bits per pair and clock cycle.
    return port.line_rate / 2


def _clock(name: str, period_ns: float, phase_ns: float) -> list[str]:
    return [f"reg {name} = 1'b0;",
            f"initial begin #({phase_ns:.6f}); forever #({period_ns / 2:.6f}) "
            f"{name} = ~{name}; end"]


def _reset(name: str, clock: str, cycles: int) -> list[str]:
    # Released with a nonblocking assignment on the clock edge, as a reset synchroniser
    # would, so the design's synchronous resets see it cleanly.
    return [f"reg {name} = 1'b1;",
            f"initial begin repeat ({cycles}) @(posedge {clock}); {name} <= 1'b0; end"]


def _vec(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def tb_nodes(cluster: Cluster) -> str:
    """``cluster_nodes.vh``: clocks, resets, node instances, cabling and drivers (see
    ``tests/verilog/cluster_tb.v`` for what it must define)."""
    rng = random.Random(2024)   # clock phases: fixed, so a failure reproduces
    plans = cluster.plans
    by_node = {p.node: p for p in plans}
    lines = [f"// Generated by {Path(__file__).name} for {cluster.routed.cluster.name}."]
    w = lines.append
    units_of = defaultdict(list)
    for u in cluster.units:
        units_of[u.node].append(u)
    link_up_width = {p.node: cluster.ports[p.node]["link_up"][1] for p in plans}
    w(f"localparam integer UNITS = {len(cluster.units)};")
    w(f"localparam integer NODES = {len(plans)};")
    w(f"localparam integer LINKS = {sum(link_up_width.values())};")
    for k, p in enumerate(plans):
        n = p.node
        # Both clocks of a board come from one oscillator: the same ppm offset.
        scale = 1 + _ppm(plans, n) * 1e-6
        period = 1e9 / p.clock_hz * scale
        w(f"// -- node {n} (id {p.node_id}) " + "-" * 60)
        lines += _clock(f"clk_{n}", period, rng.uniform(0, period))
        # Nodes leave reset at different times, as boards configured one by one do.
        lines += _reset(f"rst_{n}", f"clk_{n}", 8 + 5 * k)
        for port in p.ports:
            q = f"{n}_p{port.port}"
            phy_period = 1e9 / _phy_hz(port) * scale
            lines += _clock(f"pclk_{q}", phy_period, rng.uniform(0, phy_period))
            lines += _reset(f"prst_{q}", f"pclk_{q}", 10 + 7 * k + port.port)
            lanes = len(port.lanes)
            w(f"wire {q}_clk_p, {q}_clk_n, {q}_rclk_p, {q}_rclk_n;")
            w(f"wire {_vec(lanes)}{q}_tx_p, {q}_tx_n, {q}_rx_p, {q}_rx_n;")
        w(f"wire {_vec(link_up_width[n])}{n}_link_up;")
        w(f"wire [15:0] {n}_dropped;")
        for u in units_of[n]:
            lines += _unit_wires(u, cluster)
        lines += _instance(p, units_of[n], cluster)
        for u in units_of[n]:
            lines += _driver(u, len(plans), n)
    w("// -- cabling " + "-" * 80)
    for wire in cluster.wires:
        (a, pa), (b, pb) = wire.tx, wire.rx
        tx_port = next(q for q in by_node[a].ports if q.port == pa)
        src, dst = f"{a}_p{pa}", f"{b}_p{pb}"
        # The forwarded clock leaves edge-aligned with the data; centring the sampling
        # point is the board integration's job (optnet/hw/phy/lvds.py, "Clocking"), done
        # here by a quarter of a clock period of extra delay on the clock pair.
        quarter = 1e9 / _phy_hz(tx_port) / 4
        for pol in ("p", "n"):
            w(f"assign #({wire.delay_ns + quarter:.6f}) {dst}_rclk_{pol} = {src}_clk_{pol};")
        for i, j in wire.lanes:
            # A little lane-to-lane skew, well within a bit, for the deskew to absorb.
            skew = 0.2 * i
            for pol in ("p", "n"):
                idx = f"[{j}]" if len(tx_port.lanes) > 1 else ""
                sidx = f"[{i}]" if len(tx_port.lanes) > 1 else ""
                w(f"assign #({wire.delay_ns + skew:.6f}) {dst}_rx_{pol}{idx} = "
                  f"{src}_tx_{pol}{sidx};")
    w("// -- aggregates for cluster_tb.v " + "-" * 60)
    w(f"wire tb_clk = clk_{plans[0].node};")
    w("wire tb_rst = " + " | ".join(f"rst_{p.node}" for p in plans) + ";")
    rev = list(reversed(cluster.units))
    for agg, member in (("copies_sent_all", "copies_sent"), ("received_all", "received")):
        w(f"wire [32 * UNITS - 1:0] {agg} = {{"
          + ", ".join(f"u{u.index}_{member}" for u in rev) + "};")
    w("wire [UNITS - 1:0] done_all = {" + ", ".join(f"u{u.index}_done" for u in rev) + "};")
    w("wire [LINKS - 1:0] link_up_all = {"
      + ", ".join(f"{p.node}_link_up" for p in reversed(plans)) + "};")
    w("wire [16 * NODES - 1:0] dropped_all = {"
      + ", ".join(f"{p.node}_dropped" for p in reversed(plans)) + "};")
    w("task report_state;")
    w("    begin")
    for p in plans:
        n = p.node
        w(f'        $display("STATE node {n} link_up=%b dropped=%0d", {n}_link_up, '
          f"{n}_dropped);")
        for port in p.ports:
            # The link layer's error counters are not top-level ports; read them inside.
            w(f'        $display("STATE link {n}.port{port.port} crc_errors=%0d '
              f'resent=%0d", dut_{n}.link{port.port}.crc_errors, '
              f"dut_{n}.link{port.port}.resent);")
    for u in cluster.units:
        v = f"u{u.index}"
        w(f'        $display("STATE unit {u.name} frames_sent=%0d frames_received=%0d '
          f'done=%b s_valid=%b s_ready=%b m_valid=%b m_ready=%b", {v}_frames_sent, '
          f"{v}_received, {v}_done, {v}_s_tvalid, {v}_s_tready, {v}_m_tvalid, "
          f"{v}_m_tready);")
    w("    end")
    w("endtask")
    return "\n".join(lines) + "\n"


def _unit_wires(u: Unit, cluster: Cluster) -> list[str]:
    v, cfg = f"u{u.index}", u.config
    ids = cfg.fmt.id_bits
    out = [f"wire {_vec(cfg.width)}{v}_s_tdata, {v}_m_tdata;",
           f"wire {_vec(ids)}{v}_s_tdest, {v}_m_tid;",
           f"wire {v}_s_tlast, {v}_s_tuser, {v}_s_tvalid, {v}_s_tready;",
           f"wire {v}_m_tlast, {v}_m_tvalid, {v}_m_tready;",
           f"wire [31:0] {v}_copies_sent, {v}_frames_sent, {v}_received;",
           f"wire {v}_done;"]
    ports = cluster.ports[u.node]
    for side, field, width in _axis_fields(u):
        name = f"{u.endpoint}_{side}_axis_{field}"
        assert ports[name][1] == width, f"{u.node}.{name}: width differs from the layout"
    return out


def _axis_fields(u: Unit) -> list[tuple[str, str, int]]:
    """(side, AXI4-Stream signal, width) of every port of ``u``'s endpoint."""
    return [(side, field, width)
            for side, layout in (("s", axis_tx_layout(u.config)), ("m", axis_rx_layout(u.config)))
            for field, width in (("tvalid", 1), ("tready", 1),
                                 *((f, info.width) for f, info in layout))]


def _instance(p: NodePlan, units: list[Unit], cluster: Cluster) -> list[str]:
    n = p.node
    conn = {"clk": f"clk_{n}", "rst": f"rst_{n}", "link_up": f"{n}_link_up",
            "dropped": f"{n}_dropped", "node_id": ""}
    for u in units:
        for side, field, _ in _axis_fields(u):
            conn[f"{u.endpoint}_{side}_axis_{field}"] = f"u{u.index}_{side}_{field}"
    for k, port in enumerate(p.ports):
        q = f"{n}_p{port.port}"
        conn.update((f"link{k}_{name}", "") for name in LINK_COUNTERS)    # (not watched)
        conn[f"port{port.port}_clk_in"] = f"pclk_{q}"
        conn[f"port{port.port}_rst_in"] = f"prst_{q}"
        for pad in LVDS_OUT_PADS + LVDS_IN_PADS:
            conn[f"port{port.port}_{pad}"] = f"{q}_{pad}"
    ports = cluster.ports[n]
    assert ports["dropped"][1] == 16, f"{n}: dropped is not 16 bits"
    # Every port of the design must be driven or watched: a port the testbench does not
    # know (a new one in optnet's output) fails here rather than floating silently.
    assert set(ports) == set(conn), (
        f"{n}: ports not in the testbench: {sorted(set(ports) - set(conn))}, "
        f"testbench signals not in the design: {sorted(set(conn) - set(ports))}")
    body = ",\n".join(f"    .{name}({conn[name]})" for name in sorted(ports))
    return [f"{n} dut_{n} (", body, ");"]


def _driver(u: Unit, nodes: int, node: str) -> list[str]:
    v, cfg = f"u{u.index}", u.config
    return [
        f"axis_traffic #(.WIDTH({cfg.width}), .ID_BITS({cfg.fmt.id_bits}), "
        f".NODES({nodes}), .INDEX({u.index}), .SCHEDULE(\"sched_{u.name}.txt\"), "
        f".TX_LOG(\"tx_{u.name}.log\"), .RX_LOG(\"rx_{u.name}.log\")) drv_{v} (",
        f"    .clk(clk_{node}), .rst(rst_{node}),",
        f"    .s_tdata({v}_s_tdata), .s_tlast({v}_s_tlast), .s_tdest({v}_s_tdest), "
        f".s_tuser({v}_s_tuser), .s_tvalid({v}_s_tvalid), .s_tready({v}_s_tready),",
        f"    .m_tdata({v}_m_tdata), .m_tlast({v}_m_tlast), .m_tid({v}_m_tid), "
        f".m_tvalid({v}_m_tvalid), .m_tready({v}_m_tready),",
        f"    .frames_sent({v}_frames_sent), .copies_sent({v}_copies_sent), "
        f".frames_received({v}_received), .done({v}_done), .cycle());",
    ]


# -- traffic ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Traffic:
    """A traffic mix: per endpoint, ``frames`` frames, each a broadcast with probability
    ``bcast`` (else to a random node, itself included: the router's local port turns
    round), and ``m_axis`` ready with probability ``ready_pct`` percent each cycle."""

    frames: int
    bcast: float
    ready_pct: int
    seed: int = 1


@dataclass(frozen=True)
class Frame:
    """One AXI4-Stream frame of a schedule, as sent and as it must arrive."""

    src: Unit
    number: int
    bcast: bool
    dst: int            # destination node id; the source's own for a broadcast
    beats: tuple[int, ...]
    gaps: tuple[int, ...]   # idle cycles before each beat


def tag(src: Unit, number: int, bcast: bool) -> int:
    """The low 32 bits of a frame's first beat: magic, source node id (bits 27:20),
    broadcast flag (19), endpoint index (18:16) and frame number (15:0)."""
    return (TAG_MAGIC << 28 | src.node_id << 20 | int(bcast) << 19 | src.ep_index << 16
            | number)


def untag(word: int) -> tuple[int, int, bool, int] | None:
    """(source node id, endpoint index, broadcast, frame number) of a first beat."""
    word &= 0xFFFF_FFFF
    if word >> 28 != TAG_MAGIC:
        return None
    return word >> 20 & 0xFF, word >> 16 & 0x7, bool(word >> 19 & 1), word & 0xFFFF


def beat(src: Unit, number: int, k: int) -> int:
    """Beat ``k`` of a frame, a deterministic function of the frame (so the receiver can
    check it) that differs between beats, frames and sources."""
    width = src.config.width
    digest = hashlib.blake2b(f"{src.node_id}.{src.ep_index}.{number}.{k}".encode(),
                             digest_size=(width + 7) // 8).digest()
    return int.from_bytes(digest, "little") & ((1 << width) - 1)


def make_frames(cluster: Cluster, traffic: Traffic) -> dict[int, list[Frame]]:
    """Every endpoint's frames, by :attr:`Unit.index`, in sending order."""
    rng = random.Random(traffic.seed)
    ids = [p.node_id for p in cluster.plans]
    frames = {}
    for u in cluster.units:
        # The tag's fields (see tag()) must hold the ids and numbers.
        assert u.config.width >= 32, "the frame tag needs 32 bits of tdata"
        assert traffic.frames <= 1 << 16 and u.node_id < 1 << 8 and u.ep_index < 1 << 3
        items = []
        for i in range(traffic.frames):
            bcast = rng.random() < traffic.bcast
            dst = u.node_id if bcast else rng.choice(ids)
            # Longer frames would be cut into several packets (tlast at each cut), which
            # the checker does not model.
            most = (u.config.broadcast_flits if bcast else u.config.max_packet) - 1
            length = rng.randint(1, most)
            beats = [tag(u, i, bcast) | (beat(u, i, 0) & ~0xFFFF_FFFF)]
            beats += [beat(u, i, k) for k in range(1, length)]
            # Mostly back to back (heavy load), sometimes a pause between frames and
            # rarely a bubble inside one.
            gaps = [0 if rng.random() < 0.7 else rng.randint(1, 40)]
            gaps += [0 if rng.random() < 0.9 else rng.randint(1, 4) for _ in beats[1:]]
            items.append(Frame(u, i, bcast, dst, tuple(beats), tuple(gaps)))
        frames[u.index] = items
    return frames


def receivers(frame: Frame, cluster: Cluster) -> list[Unit]:
    """The endpoints that must receive ``frame`` once each."""
    same_ep = [u for u in cluster.units if u.ep_index == frame.src.ep_index]
    if frame.bcast:
        return [u for u in same_ep if u.node_id != frame.src.node_id]
    return [u for u in same_ep if u.node_id == frame.dst]


def write_schedules(frames: dict[int, list[Frame]], cluster: Cluster, where: Path) -> None:
    """One schedule file per endpoint in ``where``, in the format that
    ``tests/verilog/axis_traffic.v`` reads."""
    for u in cluster.units:
        with open(where / f"sched_{u.name}.txt", "w") as f:
            for fr in frames[u.index]:
                for k, (word, gap) in enumerate(zip(fr.beats, fr.gaps, strict=True)):
                    last = int(k == len(fr.beats) - 1)
                    f.write(f"{gap} {int(fr.bcast)} {fr.dst} {last} {word:x}\n")


# -- checking ---------------------------------------------------------------------------------


@dataclass
class Check:
    """What the logs show."""

    errors: list[str]
    expected: int
    delivered: int
    missing: list[str]      # one line per flow with copies missing


def check_logs(frames: dict[int, list[Frame]], cluster: Cluster, where: Path) -> Check:
    """Checks the drivers' logs in ``where`` against ``frames``.

    Received beats are put together per receiving endpoint and source (``tid``) up to
    ``tlast``; each frame then identifies itself by its first beat's tag.
    """
    by_tag = {(f.src.node_id, f.src.ep_index, f.number): f
              for items in frames.values() for f in items}
    sent = {}
    for u in cluster.units:
        sent[u.index] = {int(line.split()[1]): int(line.split()[0])
                         for line in (where / f"tx_{u.name}.log").read_text().splitlines()}
    errors = []
    got = set()                      # (frame tag, receiving unit index)
    order = defaultdict(list)        # (src unit, dst unit, bcast) -> frame numbers
    for u in cluster.units:
        partial = defaultdict(list)  # source id -> beats of the frame being received
        for line in (where / f"rx_{u.name}.log").read_text().splitlines():
            cycle, tid, last, word = line.split()
            try:
                value = int(word, 16)
            except ValueError:       # X or Z bits in tdata
                errors.append(f"{u.name} cycle {cycle}: undefined tdata {word} from {tid}")
                value = -1
            partial[int(tid)].append(value)
            if last != "1":
                continue
            beats = partial.pop(int(tid))
            ident = untag(beats[0]) if beats[0] >= 0 else None
            frame = by_tag.get(ident[:2] + ident[3:]) if ident else None
            where_ = f"{u.name} cycle {cycle} (tid {tid})"
            if frame is None:
                errors.append(f"{where_}: frame with unknown tag {beats[0]:#x}")
                continue
            key = (frame.src.node_id, frame.src.ep_index, frame.number)
            name = f"frame {frame.number} of {frame.src.name}"
            if frame.bcast != ident[2]:
                errors.append(f"{where_}: {name} has a corrupt broadcast flag")
            if int(tid) != frame.src.node_id:
                errors.append(f"{where_}: {name} arrived with tid {tid}")
            if tuple(beats) != frame.beats:
                errors.append(f"{where_}: {name} corrupt: {len(beats)} beats "
                              f"{[hex(b) for b in beats]}, sent {len(frame.beats)} "
                              f"{[hex(b) for b in frame.beats]}")
            if u not in receivers(frame, cluster):
                errors.append(f"{where_}: {name} is not addressed here")
                continue
            if (key, u.index) in got:
                errors.append(f"{where_}: {name} arrived twice")
            got.add((key, u.index))
            order[frame.src.index, u.index, frame.bcast].append(frame.number)
        for tid, beats in partial.items():
            errors.append(f"{u.name}: {len(beats)} beats from {tid} without tlast at the end")
    expected = 0
    missing = defaultdict(list)
    flows = defaultdict(list)
    for items in frames.values():
        for f in items:
            for r in receivers(f, cluster):
                expected += 1
                flows[f.src.index, r.index, f.bcast].append(f.number)
                if ((f.src.node_id, f.src.ep_index, f.number), r.index) not in got:
                    missing[f.src.index, r.index, f.bcast].append(f.number)
    for flow, numbers in order.items():
        want = flows[flow]
        if numbers != [n for n in want if n in set(numbers)]:
            src, dst, bcast = flow
            errors.append(f"flow {cluster.units[src].name} -> {cluster.units[dst].name} "
                          f"{'broadcast' if bcast else 'unicast'} out of order: {numbers}")
    lines = []
    for (src, dst, bcast), numbers in sorted(missing.items()):
        unsent = [n for n in numbers if n not in sent[src]]
        first = numbers[0]
        when = "never sent" if first in unsent else f"sent at cycle {sent[src][first]}"
        lines.append(
            f"{cluster.units[src].name} -> {cluster.units[dst].name} "
            f"{'broadcast' if bcast else 'unicast'}: {len(numbers)} missing (first: frame "
            f"{first}, {when}; {len(numbers) - len(unsent)} of the missing were sent)")
    return Check(errors, expected, len(got), lines)


# -- running ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Compiled:
    """The compiled simulation (``vvp`` runs ``program``) of ``cluster``."""

    cluster: Cluster
    vvp: str
    program: Path


def icarus() -> tuple[str, str]:
    """Paths of ``iverilog`` and ``vvp`` (skip, or fail in CI, when absent)."""
    iverilog, vvp = shutil.which("iverilog"), shutil.which("vvp")
    if iverilog is None or vvp is None:
        missing_tool("iverilog", "apt-get install iverilog")
    return iverilog, vvp


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> Compiled:
    """The ring's Verilog from ``optnet hdl``, with the testbench, compiled once."""
    iverilog, vvp = icarus()
    out = tmp_path_factory.mktemp("verilog_cluster")
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["hdl", str(EXAMPLE), "-o", str(out / "hdl")])
    assert result.exit_code == 0, result.output
    cluster = load_cluster(EXAMPLE, out / "hdl" / "nodes")
    (out / "cluster_nodes.vh").write_text(tb_nodes(cluster))
    sources = [VERILOG / "ecp5_io_models.v", VERILOG / "axis_traffic.v",
               VERILOG / "cluster_tb.v"]
    # Not the stubs: their primitives are black boxes with outputs tied to zero.
    for p in cluster.plans:
        sources.append(out / "hdl" / "nodes" / p.node / "rtl" / f"{p.node}.v")
    program = out / "cluster.vvp"
    proc = subprocess.run(
        [iverilog, "-g2012", "-o", str(program), "-s", "cluster_tb", "-I", str(out)]
        + [str(s) for s in sources], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    print(f"optnet hdl + iverilog: {time.monotonic() - started:.1f} s")
    warnings = tuple(line for line in (proc.stdout + proc.stderr).splitlines() if line)
    # Any warning is taken seriously: a process that never runs leaves its outputs X for
    # the whole simulation, a port of the wrong width is silently cut or padded.
    assert not warnings, "\n".join(warnings)
    return Compiled(cluster, vvp, program)


#: Every endpoint sends at once, from before the links are up. The links are the
#: bottleneck (a 2-lane link carries a flit every 375 ns, the endpoints can offer one
#: every 20 ns), so the network saturates in every case. The back-pressure case takes
#: 1 % of the beats offered on m_axis, slower than the links deliver: the receive buffers
#: fill and the network backs up behind them, broadcasts included, which is where a
#: cyclic wait would show. Each case runs for 1 to 2 minutes (Icarus manages about 250
#: network cycles a second with all four nodes busy).
CASES = [
    pytest.param(Traffic(frames=60, bcast=0.6, ready_pct=100), id="bcast60"),
    pytest.param(Traffic(frames=30, bcast=0.6, ready_pct=1, seed=2), id="bcast60-backpressure"),
    pytest.param(Traffic(frames=100, bcast=0.05, ready_pct=100, seed=3), id="bcast5"),
]


@pytest.mark.slow
@pytest.mark.parametrize("traffic", CASES)
def test_every_frame_once_in_order(compiled: Compiled, traffic: Traffic, tmp_path: Path):
    """Every frame arrives once, in order and intact, everywhere it is addressed; the
    cluster never deadlocks."""
    cluster = compiled.cluster
    frames = make_frames(cluster, traffic)
    write_schedules(frames, cluster, tmp_path)
    expected = sum(len(receivers(f, cluster)) for items in frames.values() for f in items)
    started = time.monotonic()
    proc = subprocess.run(
        [compiled.vvp, "-n", str(compiled.program), f"+expected={expected}",
         f"+ready_pct={traffic.ready_pct}", f"+seed={traffic.seed}", f"+stall={STALL_CYCLES}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    elapsed = time.monotonic() - started
    output = proc.stdout + proc.stderr
    print(f"vvp: {elapsed:.1f} s")
    print(output)
    result = re.search(r"^RESULT (\w+)", output, re.MULTILINE)
    check = check_logs(frames, cluster, tmp_path)
    report = "\n".join(
        [output[-6000:], "errors:", *check.errors[:30], "missing:", *check.missing])
    assert proc.returncode == 0, report
    assert result is not None, report
    assert not check.errors, report
    assert result.group(1) == "DONE", report
    assert check.delivered == check.expected == expected, report
    # Ideal wires: a lost lock or a bad CRC would be a sampling problem, not traffic.
    assert "link_drops=0" in output, report
    assert not re.search(r"crc_errors=[1-9]", output), report
    assert not re.search(r"dropped=[1-9]", output), report


def test_checker_finds_every_fault(tmp_path: Path):
    """The log checker itself: perfect logs pass, and a lost, duplicated, reordered,
    corrupted or misdelivered frame is each reported (a checker that passes everything
    would make the simulation test worthless)."""
    cluster = load_cluster(EXAMPLE, None)
    frames = make_frames(cluster, Traffic(frames=12, bcast=0.5, ready_pct=100))
    by_name = {u.name: u for u in cluster.units}

    def deliveries():
        # (receiver, frame) in a valid order: each source's frames in sending order.
        return [(r, f) for items in frames.values() for f in items
                for r in receivers(f, cluster)]

    def check(copies) -> Check:
        for u in cluster.units:
            lines = [f"{f.number} {f.number}" for f in frames[u.index]]
            (tmp_path / f"tx_{u.name}.log").write_text("".join(x + "\n" for x in lines))
            rx = [f"0 {f.src.node_id} {int(k == len(beats) - 1)} {b:x}\n"
                  for r, f, beats in copies if r is u for k, b in enumerate(beats)]
            (tmp_path / f"rx_{u.name}.log").write_text("".join(rx))
        return check_logs(frames, cluster, tmp_path)

    good = [(r, f, f.beats) for r, f in deliveries()]
    result = check(good)
    assert not result.errors and not result.missing
    assert result.delivered == result.expected == len(good)

    assert check(good[1:]).missing                                  # lost
    assert "twice" in " ".join(check(good + good[:1]).errors)       # duplicated
    r, f = good[0][:2]
    later = next(i for i, (r2, f2, _) in enumerate(good)
                 if r2 is r and f2.src is f.src and f2.bcast == f.bcast and f2 is not f)
    swapped = list(good)
    swapped[0], swapped[later] = swapped[later], swapped[0]
    assert "out of order" in " ".join(check(swapped).errors)       # reordered
    longest = max(range(len(good)), key=lambda i: len(good[i][2]))
    bad = list(good)
    r, f, beats = bad[longest]
    bad[longest] = (r, f, (*beats[:-1], beats[-1] ^ 1))
    assert "corrupt" in " ".join(check(bad).errors)                 # corrupted
    unicast = next(i for i, (_, f, _) in enumerate(good) if not f.bcast)
    r, f, beats = good[unicast]
    other = next(u for u in by_name.values() if u is not r)
    misdelivered = [*good[:unicast], (other, f, beats), *good[unicast + 1:]]
    assert "not addressed here" in " ".join(check(misdelivered).errors)
