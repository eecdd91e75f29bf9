"""One node's emitted Verilog in an event-driven simulator (Icarus, IEEE 1800 rules): the
fast representative of ``tests/test_verilog_cluster.py``.

The endpoint of ``n0`` of ``examples/ulx3s_ring4.yaml`` sends frames to its own node; each
must come back once, in order, intact, with its source id. Written for Verilator and
synthesis only, the Verilog once delivered nothing here: constant ``always @*`` blocks
never ran (an empty sensitivity list), and under IEEE 1800 the other processes did not run
at time zero either.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from click.testing import CliRunner

from optnet.cli import cli
from optnet.hw.endpoint import axis_rx_layout, axis_tx_layout
from optnet.plan import plan

from .conftest import ROOT, linted
from .hwtools import missing_tool

EXAMPLE = ROOT / "examples" / "ulx3s_ring4.yaml"
MODELS = ROOT / "tests" / "verilog" / "ecp5_io_models.v"
FRAMES = [[0x1000 + k * 16 + i for i in range(k + 1)] for k in range(4)]

TB = """`timescale 1ns/1ps
module tb;
  // The node starts from its initial state, as after configuration, with no reset pulse:
  // after one, its managed endpoint would first resynchronise with the cluster's other
  // nodes, which are not here (their links stay down). The PHY adapters are reset.
  reg clk = 0, pclk = 0, rst = 0, prst = 1;
  always #10 clk = ~clk;
  always #6 pclk = ~pclk;
  reg [{tx_bits}:0] s_payload = 0;
  reg s_valid = 0;
  wire s_ready, m_valid;
  wire [{rx_bits}:0] m_payload;
  {node} dut (.clk(clk), .rst(rst), {fields},
    .app_s_axis_tvalid(s_valid), .app_s_axis_tready(s_ready),
    .app_m_axis_tvalid(m_valid), .app_m_axis_tready(1'b1){ties});
  task send(input [{tx_bits}:0] beat);
    begin
      s_payload <= beat;
      s_valid <= 1'b1;
      @(posedge clk);
      while (!s_ready) @(posedge clk);
      s_valid <= 1'b0;
    end
  endtask
  always @(posedge clk) if (m_valid) $display("RX %h", m_payload);
  initial begin
    repeat (10) @(posedge clk);
    prst <= 1'b0;
    repeat (10) @(posedge clk);
{sends}
    repeat (2000) @(posedge clk);
    $display("END");
    $finish;
  end
endmodule
"""


def test_a_node_delivers_its_packets_to_itself_under_icarus(tmp_path):
    iverilog, vvp = shutil.which("iverilog"), shutil.which("vvp")
    if iverilog is None or vvp is None:
        missing_tool("iverilog", "apt-get install iverilog")
    routed = linted(EXAMPLE).routed
    node = plan(routed)[0]
    result = CliRunner().invoke(cli, ["hdl", str(EXAMPLE), "-o", str(tmp_path / "hdl"),
                                      "--nodes", node.node])
    assert result.exit_code == 0, result.output
    rtl = tmp_path / "hdl" / "nodes" / node.node / "rtl" / f"{node.node}.v"
    text = rtl.read_text()
    # combinational logic as continuous assignments, which every simulator evaluates at
    # time zero, and no call of an escaped name starting with $ (Icarus' system functions)
    assert "always @*" not in text and "\\$procmux" not in text

    tx, rx = axis_tx_layout(node.endpoints[0]), axis_rx_layout(node.endpoints[0])
    top = text[text.index(f"module {node.node}("):]
    top = top[:top.index("endmodule")]
    inputs = re.findall(r"^  input (?:\[(\d+):0\] )?(\w+);", top, re.M)
    ties = "".join(
        f",\n    .{name}({'pclk' if name.endswith('_clk_in') else 'prst'})"
        if name.endswith(("_clk_in", "_rst_in")) else f",\n    .{name}({int(msb or 0) + 1}'d0)"
        for msb, name in inputs if not name.startswith("app_") and name not in ("clk", "rst"))

    def beat(data, last):
        return data | last << tx["tlast"].offset | node.node_id << tx["tdest"].offset

    sends = "\n".join(f"    send({tx.size}'h{beat(d, i == len(f) - 1):x});"
                      for f in FRAMES for i, d in enumerate(f))
    # the AXI4-Stream signals, each a field of the testbench's packed beats
    fields = ",\n    ".join(
        f".app_{side}_axis_{name}({side}_payload[{info.offset + info.width - 1}:{info.offset}])"
        for side, layout in (("s", tx), ("m", rx)) for name, info in layout)
    (tmp_path / "tb.v").write_text(TB.format(
        node=node.node, tx_bits=tx.size - 1, rx_bits=rx.size - 1, ties=ties, sends=sends,
        fields=fields))
    program = tmp_path / "tb.vvp"
    compiled = subprocess.run([iverilog, "-g2012", "-o", str(program), "-s", "tb",
                               str(tmp_path / "tb.v"), str(rtl), str(MODELS)],
                              capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0 and not compiled.stderr.strip(), compiled.stderr
    run = subprocess.run([vvp, "-n", str(program)], capture_output=True, text=True,
                         timeout=300)
    assert "END" in run.stdout, run.stdout + run.stderr
    beats = [int(x, 16) for x in re.findall(r"^RX ([0-9a-f]+)$", run.stdout, re.M)]
    data_mask = (1 << node.endpoints[0].width) - 1
    got, frame = [], []
    for b in beats:
        assert b >> rx["tid"].offset == node.node_id
        frame.append(b & data_mask)
        if b >> rx["tlast"].offset & 1:
            got.append(frame)
            frame = []
    assert got == FRAMES and not frame
