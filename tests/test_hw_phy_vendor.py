"""Vendor-IP PHY adapters: port tables, stubs, and lint/synthesis of designs using them."""

from __future__ import annotations

import itertools
import re

import pytest
from amaranth.back import verilog
from amaranth.hdl import Fragment, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from optnet.devices.linkip import (
    IP_SETTINGS,
    V5_AURORA_REFCLK,
    VENDOR_PHYS,
    ip_family,
    ip_ports,
    ip_settings,
    user_width_for,
)
from optnet.emit.stubs import stub_verilog
from optnet.hw.phy import PhyInterface, vendor
from optnet.hw.phy.vendor import AuroraPhy8b10b, InterlakenPhy, make_vendor_phy
from optnet.phys import PHY_WIDTH_PER_LANE
from tests.hwtools import lint_verilog, yosys_synth

# The adapter creates its user domain and the design around it uses it, as the PhyInterface
# contract says; Amaranth 0.5 deprecates that pattern (removed in 0.6), which is the
# contract's concern, not this test's.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Domain '.*' is used in '.*', but defined in:DeprecationWarning")

# (phy, family, lanes): every protocol at 1, 2, 4 and 8 lanes where its IP allows them, and
# the Virtex-5 Aurora 8B/10B (CORE Generator v5.2) at the lane counts of the example boards.
CASES = [
    *((phy, family, lanes)
      for phy in ("aurora_8b10b", "aurora_64b66b")
      for family in ("7series", "ultrascale_plus")
      for lanes in (1, 2, 4, 8)),
    *(("aurora_8b10b", "virtex5", lanes) for lanes in (1, 2, 4)),
    *(("serial_lite_3", "stratix10", lanes) for lanes in (1, 2, 4, 8)),
    *(("interlaken", "stratix10", lanes) for lanes in (4, 8)),
]
IDS = [f"{phy}-{family}-x{lanes}" for phy, family, lanes in CASES]


class _Top(wiring.Component):
    """The adapter with tx fed by a counter and rx captured in a register.

    Every pad of the adapter becomes a top-level port; ``result`` depends on the received
    word and ``up`` so that synthesis keeps the whole datapath.
    """

    def __init__(self, phy: PhyInterface):
        self.phy = phy
        self.pads = {name: member for name, member in phy.signature.members.items()
                     if name not in ("tx", "rx", "up")}
        super().__init__({**self.pads, "result": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.phy = phy = self.phy
        for name, member in self.pads.items():
            if member.flow == In:
                m.d.comb += getattr(phy, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(phy, name))
        count = Signal(phy.width)
        last = Signal(phy.width)
        m.d.comb += [phy.tx.payload.eq(count), phy.tx.valid.eq(1)]
        with m.If(phy.tx.ready):
            m.d[phy.domain] += count.eq(count + 1)
        with m.If(phy.rx.valid):
            m.d[phy.domain] += last.eq(phy.rx.payload)
        m.d.comb += self.result.eq(last.xor() ^ phy.up)
        return m


def _ip_name(phy: str, family: str, lanes: int) -> str:
    return f"optnet_{phy}_{family}_x{lanes}"


def _instance_ports(text: str, module: str) -> list[str]:
    """Port names connected on the (single) instance of ``module`` in Verilog ``text``."""
    pattern = re.compile(rf"^\s*\\?{re.escape(module)}\s+\\?\S+\s*\((.*?)\);", re.M | re.S)
    found = pattern.findall(text)
    assert len(found) == 1, f"expected one instance of {module}, found {len(found)}"
    return re.findall(r"\.(\w+)\s*\(", found[0])


def _stub_ports(text: str) -> list[str]:
    return re.findall(r"^\s*(?:input|output)\s+wire\s+(?:\[[^\]]*\]\s*)?(\w+)", text, re.M)


@pytest.fixture(params=CASES, ids=IDS)
def design(request, tmp_path):
    """(phy, family, lanes, ip_name, stub path, top path, top Verilog text)."""
    phy, family, lanes = request.param
    ip_name = _ip_name(phy, family, lanes)
    adapter = make_vendor_phy(phy, lanes, "link0", ip_name, family=family)
    top_text = verilog.convert(_Top(adapter), name="top")
    stub = tmp_path / "stub.v"
    top = tmp_path / "top.v"
    stub.write_text(stub_verilog(phy, lanes, ip_name, family))
    top.write_text(top_text)
    return phy, family, lanes, ip_name, stub, top, top_text


def test_instance_stub_and_table_agree(design):
    phy, family, lanes, ip_name, stub, _, top_text = design
    table = [p.name for p in ip_ports(phy, lanes, family)]
    assert len(set(table)) == len(table)
    stub_names = _stub_ports(stub.read_text())
    assert stub_names == table
    assert sorted(_instance_ports(top_text, ip_name)) == sorted(table)


def test_verilator_lint(design):
    *_, stub, top, _ = design
    lint_verilog([stub, top], "top")


def test_yosys_synth(design):
    *_, stub, top, _ = design
    yosys_synth([stub, top], "top")


@pytest.mark.parametrize(("phy", "lanes"), [
    ("aurora_8b10b", 3), ("aurora_64b66b", 5), ("serial_lite_3", 6), ("interlaken", 8)])
def test_user_widths(phy, lanes):
    adapter = make_vendor_phy(phy, lanes, "d", "ip")
    Fragment.get(adapter, None)
    assert adapter.width == PHY_WIDTH_PER_LANE[phy] * lanes
    ports = {p.name: p for p in ip_ports(phy, lanes)}
    data = {"aurora_8b10b": "s_axi_tx_tdata", "aurora_64b66b": "s_axi_tx_tdata",
            "serial_lite_3": "data_tx", "interlaken": "itx_din_words"}[phy]
    assert ports[data].width == adapter.width


def test_aurora_names_follow_family_and_lane():
    seven = [p.name for p in ip_ports("aurora_8b10b", 3, "7series")]
    assert [n for n in seven if n.startswith("drpaddr")] == [
        "drpaddr_in", "drpaddr_in_lane1", "drpaddr_in_lane2"]
    usp = {p.name: p for p in ip_ports("aurora_8b10b", 2, "ultrascale_plus")}
    assert usp["gt1_drpaddr"].width == 10
    assert usp["gt_powergood"].width == 2
    assert "drpclk_in" not in usp
    one = {p.name: p for p in ip_ports("aurora_8b10b", 1)}
    assert one["rxp"].range == ""                      # scalar on a one-lane 8B/10B core
    assert {p.name: p for p in ip_ports("aurora_64b66b", 1)}["rxp"].range == "[0:0] "
    assert one["m_axi_rx_tdata"].range == "[0:31] "


def test_inputs_all_driven_or_tied():
    # Elaboration asserts that every input is driven or tied, and every driven name exists.
    for phy, family, lanes in CASES:
        Fragment.get(make_vendor_phy(phy, lanes, "d", "ip", family=family), None)
        for port in ip_ports(phy, lanes, family):
            assert port.direction in ("input", "output")
            if port.direction == "output":
                assert port.tie is None


def test_families_and_errors():
    assert ip_family("aurora_8b10b", "zynq7000") == "7series"
    assert ip_family("aurora_64b66b", "ultrascale_plus") == "ultrascale_plus"
    assert ip_family("serial_lite_3") == "stratix10"
    assert ip_family("aurora_8b10b", "virtex5") == "virtex5"
    assert ip_family("aurora_8b10b") == "7series"        # the default stays the Vivado core
    with pytest.raises(ValueError, match="virtex5"):
        ip_family("aurora_64b66b", "virtex5")
    with pytest.raises(ValueError, match="virtex5"):
        make_vendor_phy("aurora_64b66b", 1, "d", "ip", family="virtex5")
    with pytest.raises(ValueError):
        make_vendor_phy("aurora_8b10b", 17, "d", "ip", family="virtex5")
    with pytest.raises(ValueError, match="not a vendor-IP PHY"):
        make_vendor_phy("lvds", 1, "d", "ip")
    with pytest.raises(ValueError, match="4 or 8"):
        make_vendor_phy("interlaken", 2, "d", "ip")
    with pytest.raises(ValueError):
        make_vendor_phy("aurora_8b10b", 17, "d", "ip")
    with pytest.raises(NotImplementedError):
        InterlakenPhy(4, "d", "ip", vendor="xilinx")


def test_settings_cover_every_protocol():
    assert set(IP_SETTINGS) == set(VENDOR_PHYS)
    assert IP_SETTINGS["aurora_8b10b"]["Interface_Mode"] == "Streaming"
    assert IP_SETTINGS["aurora_64b66b"]["interface_mode"] == "Streaming"
    assert ip_settings("aurora_8b10b", "kintex7") == IP_SETTINGS["aurora_8b10b"]
    v5 = ip_settings("aurora_8b10b", "virtex5")
    assert (v5["interface_mode"], v5["c_lane_width"], v5["flow_mode"]) == (
        "Streaming", "2", "None")
    assert v5["c_gt_clock_1"] == V5_AURORA_REFCLK


# -- Virtex-5: Aurora 8B/10B LogiCORE v5.2 --------------------------------------------------

# The top-level port list of a CORE Generator v5.2 Streaming duplex GTP core with 2-byte
# lanes, in declaration order (UG353; confirmed against a generated 1-lane top, see the spec).
V5_PORTS = [
    ("TX_D", "input"), ("TX_SRC_RDY_N", "input"), ("TX_DST_RDY_N", "output"),
    ("RX_D", "output"), ("RX_SRC_RDY_N", "output"),
    ("DO_CC", "input"), ("WARN_CC", "input"),
    ("RXP", "input"), ("RXN", "input"), ("TXP", "output"), ("TXN", "output"),
    ("GTPD0", "input"),
    ("HARD_ERR", "output"), ("SOFT_ERR", "output"), ("CHANNEL_UP", "output"),
    ("LANE_UP", "output"),
    ("USER_CLK", "input"), ("SYNC_CLK", "input"), ("RESET", "input"),
    ("POWER_DOWN", "input"), ("LOOPBACK", "input"), ("GT_RESET", "input"),
    ("TX_OUT_CLK", "output"), ("TX_LOCK", "output"),
]


@pytest.mark.parametrize("lanes", [1, 2, 4])
def test_virtex5_port_table(lanes):
    ports = ip_ports("aurora_8b10b", lanes, "virtex5")
    assert [(p.name, p.direction) for p in ports] == V5_PORTS
    by_name = {p.name: p for p in ports}
    assert by_name["TX_D"].range == f"[0:{16 * lanes - 1}] "
    assert by_name["RX_D"].width == 16 * lanes
    for name in ("RXP", "RXN", "TXP", "TXN", "LANE_UP"):
        assert by_name[name].width == lanes
        assert by_name[name].range == ("" if lanes == 1 else f"[0:{lanes - 1}] ")
    assert by_name["LOOPBACK"].range == "[2:0] "
    # The user clock is an input of this core generation (an output of the Vivado cores).
    assert by_name["USER_CLK"].direction == by_name["SYNC_CLK"].direction == "input"
    # Only unused controls are tied; clocks, resets and CC requests come from the adapter.
    assert {p.name for p in ports if p.tie is not None} == {"POWER_DOWN", "LOOPBACK"}
    text = stub_verilog("aurora_8b10b", lanes, "v5", "virtex5")
    assert "UG353" in text and "CORE Generator" in text


def test_virtex5_user_width():
    assert user_width_for("aurora_8b10b", 4, "virtex5") == 64
    assert user_width_for("aurora_8b10b", 4, "virtex7") == 128
    assert user_width_for("aurora_8b10b", 4) == 128
    assert user_width_for("lvds", 4, "virtex5") == PHY_WIDTH_PER_LANE["lvds"] * 4
    adapter = make_vendor_phy("aurora_8b10b", 3, "d", "ip", family="virtex5")
    Fragment.get(adapter, None)
    assert adapter.width == 48
    pads = {n: m.flow for n, m in adapter.signature.members.items()
            if n not in ("tx", "rx", "up")}
    assert pads == {
        "gt_refclk": In, "txp": Out, "txn": Out, "rxp": In, "rxn": In, "init_clk": In,
        "reset": In, "user_clk": In, "sync_clk": In, "pll_not_locked": In,
        "tx_out_clk": Out, "tx_lock": Out}


class _FakeCore:
    """Stands in for :class:`Instance` so the adapter's glue logic can be simulated.

    Records the connections; the core's outputs stay undriven, for the testbench to set.
    """

    def __init__(self):
        self.inputs = {}
        self.outputs = {}

    def __call__(self, module, *args):
        for kind, name, value in args:
            (self.outputs if kind == "o" else self.inputs)[name] = value
        return Module()


@pytest.mark.slow
def test_virtex5_handshakes_reset_and_clock_compensation(monkeypatch):
    core = _FakeCore()
    monkeypatch.setattr(vendor, "Instance", core)
    lanes = 2
    dut = AuroraPhy8b10b(lanes, "link", "aurora_v5", family="virtex5")
    ins, outs = core.inputs, core.outputs
    fragment = Fragment.get(dut, None)
    assert set(ins) | set(outs) == {name for name, _ in V5_PORTS}
    sim = Simulator(fragment)
    log = {"do_cc": [], "warn_cc": [], "reset": []}

    async def clocks(ctx):
        # init_clk and user_clk at the same rate: only cycle counts matter here.
        while True:
            await ctx.delay(5e-9)
            ctx.set(dut.init_clk, 1)
            ctx.set(dut.user_clk, 1)
            await ctx.delay(5e-9)
            ctx.set(dut.init_clk, 0)
            ctx.set(dut.user_clk, 0)

    async def bench(ctx):
        async def cycles(n):
            for _ in range(n):
                await ctx.posedge(dut.user_clk)
                log["do_cc"].append(ctx.get(ins["DO_CC"]))
                log["warn_cc"].append(ctx.get(ins["WARN_CC"]))
                log["reset"].append(ctx.get(ins["RESET"]))

        # Active-low LocalLink handshakes onto the active-high stream (combinational).
        ctx.set(outs["TX_DST_RDY_N"], 1)
        ctx.set(dut.tx.valid, 1)
        assert (ctx.get(dut.tx.ready), ctx.get(ins["TX_SRC_RDY_N"])) == (0, 0)
        ctx.set(outs["TX_DST_RDY_N"], 0)
        ctx.set(dut.tx.valid, 0)
        assert (ctx.get(dut.tx.ready), ctx.get(ins["TX_SRC_RDY_N"])) == (1, 1)
        ctx.set(outs["RX_SRC_RDY_N"], 1)
        assert ctx.get(dut.rx.valid) == 0
        ctx.set(outs["RX_SRC_RDY_N"], 0)
        ctx.set(outs["RX_D"], 0xBEEF_CAFE)
        assert ctx.get(dut.rx.valid) == 1
        assert ctx.get(dut.rx.payload) == 0xBEEF_CAFE
        ctx.set(outs["CHANNEL_UP"], 1)
        assert ctx.get(dut.up) == 1

        # Resets: the GT reset is sequenced from reset on init_clk; the core reset also
        # waits for the GTP PLL (TX_LOCK) and the clock module (pll_not_locked).
        ctx.set(dut.pll_not_locked, 1)
        await cycles(2100)
        assert ctx.get(ins["GT_RESET"]) == 0
        assert ctx.get(ins["RESET"]) == 1                  # TX_LOCK still low
        ctx.set(outs["TX_LOCK"], 1)
        assert ctx.get(dut.tx_lock) == 1
        await cycles(10)
        assert ctx.get(ins["RESET"]) == 1                  # clock module not locked
        ctx.set(dut.pll_not_locked, 0)
        await cycles(10)
        assert ctx.get(ins["RESET"]) == 0

        # Clock compensation waits for every lane to be up, then repeats every 4992 cycles.
        ctx.set(outs["LANE_UP"], 0b01)
        await cycles(100)
        assert not any(log["do_cc"][-100:])
        ctx.set(outs["LANE_UP"], 0b11)
        start = len(log["do_cc"])
        await cycles(3 * 4992 + 50)
        do = log["do_cc"][start - 1:]                      # from the last cycle held
        rises = [i for i in range(1, len(do)) if do[i] and not do[i - 1]]
        assert len(rises) == 4
        assert rises[0] <= 2                               # one request as soon as all are up
        assert [b - a for a, b in itertools.pairwise(rises[1:])] == [4992, 4992]
        assert do[rises[1]:rises[1] + 8] == [1] * 7 + [0]
        warn = log["warn_cc"][start - 1:]
        assert warn[rises[1] - 11:rises[1] + 1] == [0] + [1] * 10 + [0]
        ctx.set(outs["LANE_UP"], 0b10)                   # a lane drops: no more requests
        await cycles(5000)
        assert not any(log["do_cc"][-4990:])

    sim.add_process(clocks)
    sim.add_testbench(bench)
    sim.run_until(1e-3)


def test_stub_is_rendered_black_box():
    text = stub_verilog("serial_lite_3", 2, "sl3_x2")
    assert "(* blackbox *)\nmodule sl3_x2 (" in text
    assert "UG-683330" in text
    assert "assign data_rx = 128'd0;" in text
    assert "ascending" not in text                    # Intel buses are all descending
    assert "input  wire [0:63] s_axi_tx_tdata," in stub_verilog("aurora_64b66b", 1, "a")


# ------------------------------------------------------------ Virtex-5 GTP_DUAL tiles


class _TilePair(wiring.Component):
    """Two one-lane Virtex-5 adapters of one GTP_DUAL: a master on ``channel`` and a slave on
    the other channel, their share_* pads wired as :class:`optnet.hw.top.NodeTop` wires
    them; each adapter's other pads are top-level ports ``<m|s>_<pad>``, and ``result``
    keeps both datapaths."""

    def __init__(self, channel: int):
        self.master = make_vendor_phy("aurora_8b10b", 1, "link0", "v5", family="virtex5",
                                      role="master", channel=channel)
        self.slave = make_vendor_phy("aurora_8b10b", 1, "link1", "v5", family="virtex5",
                                     role="slave", channel=1 - channel)
        self.pads = {(k, name): member for k, phy in (("m", self.master), ("s", self.slave))
                     for name, member in phy.signature.members.items()
                     if name not in ("tx", "rx", "up") and not name.startswith("share_")}
        super().__init__({f"{k}_{name}": member for (k, name), member in self.pads.items()}
                         | {"result": Out(2)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.master, m.submodules.slave = self.master, self.slave
        phys = {"m": self.master, "s": self.slave}
        for (k, name), member in self.pads.items():
            outer, inner = getattr(self, f"{k}_{name}"), getattr(phys[k], name)
            m.d.comb += (inner.eq(outer) if member.flow == In else outer.eq(inner))
        for name, member in self.slave.signature.members.items():
            if name.startswith("share_"):
                mine, theirs = getattr(self.slave, name), getattr(self.master, name)
                m.d.comb += (mine.eq(theirs) if member.flow == In else theirs.eq(mine))
        for i, phy in enumerate(phys.values()):
            last = Signal(16)
            m.d.comb += [phy.tx.payload.eq(0x1234 + i), phy.tx.valid.eq(1)]
            with m.If(phy.rx.valid):
                m.d[phy.domain] += last.eq(phy.rx.payload)
            m.d.comb += self.result[i].eq(last.xor() ^ phy.up)
        return m


@pytest.mark.parametrize("channel", [0, 1])
def test_virtex5_tile_pair_wiring(tmp_path, channel):
    """One GTP_TILE holds both links: each channel's data, serial pins and clocks are its own
    link's; GTPRESET and the PLL lock are shared (netlist by Yosys, stubs from the tables)."""
    from tests.cdc_netlist import netlist

    stub = tmp_path / "stub.v"
    stub.write_text(stub_verilog("aurora_8b10b", 1, "v5", "virtex5", tiled=True))
    top = tmp_path / "top.v"
    top.write_text(verilog.convert(_TilePair(channel), name="top"))
    lint_verilog([stub, top], "top")
    net = netlist([stub, top], "top")
    cells = {}
    for name, cell in net["cells"].items():
        cells.setdefault(cell["type"], []).append((name, cell["connections"]))
    assert len(cells["v5_GTP_TILE"]) == 1
    for module in ("AURORA_LANE", "GLOBAL_LOGIC", "TX_STREAM", "RX_STREAM"):
        assert len(cells[f"v5_{module}"]) == 2
    tile = cells["v5_GTP_TILE"][0][1]
    pins = {n: d["bits"] for n, d in net["netnames"].items() if "." not in n}
    lanes = {name.split(".")[0]: c for name, c in cells["v5_AURORA_LANE"]}
    for k, who in ((channel, "master"), (1 - channel, "slave")):
        pad = who[0]
        assert tile[f"RXP{k}_IN"] == pins[f"{pad}_rxp"]
        assert tile[f"TXP{k}_OUT"] == pins[f"{pad}_txp"]
        assert tile[f"TXDATA{k}_IN"] == lanes[who]["TX_DATA"]
        assert tile[f"RXDATA{k}_OUT"] == lanes[who]["RX_DATA"]
        assert tile[f"TXUSRCLK2{k}_IN"] == pins[f"{pad}_user_clk"]
        assert lanes[who]["RESETDONE"] == tile[f"RESETDONE{k}_OUT"]
    assert tile["CLKIN_IN"] == pins["m_gt_refclk"] and "s_gt_refclk" not in pins
    assert pins["m_tx_lock"] == pins["s_tx_lock"] == tile["PLLLKDET_OUT"]


def test_virtex5_single_tile_ties_the_other_channel(tmp_path):
    """A one-lane link alone in its tile: the other channel's inputs are tied low."""
    adapter = make_vendor_phy("aurora_8b10b", 1, "link0", "v5", family="virtex5", channel=1)
    text = verilog.convert(_Top(adapter), name="top")
    ports = dict(re.findall(r"\.(\w+)\(([^)]*)\)", text.split("v5_GTP_TILE", 1)[1]))
    for port in ("TXDATA0_IN", "TXCHARISK0_IN", "RXUSRCLK0_IN", "TXRESET0_IN"):
        assert re.fullmatch(r"\d+'h0+", ports[port].strip()), (port, ports[port])
    assert ports["TXDATA1_IN"].strip() != ports["TXDATA0_IN"].strip()
    stub = tmp_path / "stub.v"
    stub.write_text(stub_verilog("aurora_8b10b", 1, "v5", "virtex5", tiled=True))
    top = tmp_path / "top.v"
    top.write_text(text)
    lint_verilog([stub, top], "top")
