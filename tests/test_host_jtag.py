"""The JTAG host scripts (host/optnet_openocd.tcl, host/optnet_quartus.tcl) under tclsh with
mock OpenOCD and quartus_stp commands over a model of the register bridge
(tests/tcl/mock_jtag.tcl): the scans they make, what they print, and their diagnostics."""

from __future__ import annotations

import functools
import json
import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from optnet.emit.build import host_files
from optnet.hw.jtag import DR_BITS
from optnet.plan import plan
from optnet.plan.registers import MAGIC

from .conftest import linted_example
from .hwtools import missing_tool

MOCK = Path(__file__).resolve().parent / "tcl" / "mock_jtag.tcl"


@functools.cache
def _host(stem: str) -> dict[str, str]:
    routed = linted_example(stem).routed
    return host_files(routed, plan(routed))


def _run(tmp_path, script: str, driver: str, *args: str, shell: str = "tclsh"
         ) -> tuple[list, str]:
    """Run ``driver`` (Tcl: sets the model up, sources the script) under the mock in
    ``shell`` (``tclsh``, or ``jimsh``: Jim Tcl, OpenOCD's interpreter); returns the calls
    it made and what it printed."""
    tclsh = shutil.which(shell)
    if tclsh is None:
        missing_tool(shell, f"apt-get install {'tcl' if shell == 'tclsh' else 'jimsh'}")
    (tmp_path / "script.tcl").write_text(script)
    (tmp_path / "driver.tcl").write_text(driver)
    log = tmp_path / "calls.log"
    proc = subprocess.run([tclsh, str(MOCK), str(log), str(tmp_path / "driver.tcl"), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in log.read_text().splitlines()], proc.stdout


def _model(registers: dict[int, int], writable=(), latency: int = 2) -> str:
    pairs = " ".join(f"{a} {v}" for a, v in registers.items())
    return (f"set mock_registers [dict create {pairs}]\n"
            f"set mock_writable [list {' '.join(map(str, writable))}]\n"
            f"set mock_latency {latency}\n")


REGS = {0x0000: MAGIC, 0x0002: 1, 0x0005: 3, 0x0100: 1, 0x0101: 7, 0x1000: 1, 0x1003: 1234}


@pytest.mark.parametrize("shell", ["tclsh", "jimsh"])
def test_openocd_script_dumps_a_node_and_writes_a_register(tmp_path, shell):
    script = _host("plasticnet_ring4")["host/optnet_openocd.tcl"]
    driver = (_model(REGS, writable=[0x1000]) + "set OPTNET_NODE fpga1\nsource script.tcl\n"
              "optnet_dump\noptnet_write 0x1000 0\nputs \"control [optnet_read 0x1000]\"\n")
    calls, out = _run(tmp_path, script, driver, shell=shell)
    assert not [c for c in calls if c[0] == "ERROR"], calls
    # The ZC706's XC7Z045: a 6-bit IR, the bridge behind USER1.
    assert calls[0] == ["jtag", "newtap", "optnet", "fpga", "-irlen", "6"]
    assert {tuple(c) for c in calls if c[0] == "irscan"} == {("irscan", "optnet.fpga", "0x02")}
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert lines["magic"].split() == ["0x0000", str(MAGIC), f"0x{MAGIC:08x}"]
    assert lines["link0.crc_errors"].split()[1] == "7"
    assert lines["pn0.sent"].split()[1] == "1234"
    assert lines["pn1.bad_beats"].split()[1] == "0"          # no such register: 0
    assert not any(name.startswith("link2.") for name in lines)     # fpga1 has two links
    assert lines["control"] == "0"
    # The write: one command scan with go set (data, address, write, go), then polls.
    scans = [c[2:] for c in calls if c[0] == "drscan"]
    k = scans.index(["32", "0x0", "16", "0x1000", "1", "1", "1", "1"])
    assert calls[[i for i, c in enumerate(calls) if c[0] == "drscan"][k] + 1] == ["runtest", "8"]
    assert scans[k + 1] == ["32", "0x0", "16", "0x0", "1", "0", "1", "0"]


def test_openocd_script_on_a_tap_the_user_declared_and_other_instructions(tmp_path):
    # ECP5: an 8-bit IR and ER1; Virtex-5: a 10-bit IR and USER1 0x3C2.
    assert "dict set optnet_nodes n0 [list 8 0x32 2]" in \
        _host("ulx3s_ring4")["host/optnet_openocd.tcl"]
    script = _host("bee3_four_x2")["host/optnet_openocd.tcl"]
    assert "[list 10 0x3c2 " in script
    driver = (_model(REGS) + "jtag newtap zynq_pl bs -irlen 6\nset OPTNET_TAP zynq_pl.bs\n"
              "set OPTNET_NODE n0\nset OPTNET_USER 0x03\nsource script.tcl\noptnet_check\n")
    calls, _ = _run(tmp_path, script, driver)
    assert not [c for c in calls if c[0] == "ERROR"], calls
    assert [c for c in calls if c[0] == "jtag"] == [["jtag", "newtap", "zynq_pl", "bs", "-irlen",
                                                     "6"]]
    assert {tuple(c) for c in calls if c[0] == "irscan"} == {("irscan", "zynq_pl.bs", "0x03")}


@pytest.mark.parametrize("shell", ["tclsh", "jimsh"])
@pytest.mark.parametrize("driver,message", [
    ("set OPTNET_NODE nosuch\nsource script.tcl\n",
     "optnet: set OPTNET_NODE to one of the nodes of cluster plasticnet_ring4: fpga0 fpga1 "
     "fpga2 fpga3 (openocd -c \"set OPTNET_NODE <node>\" before this file)"),
    ("set OPTNET_NODE fpga0\nsource script.tcl\nset optnet_polls 5\noptnet_read 0x1003\n",
     "optnet: no answer from node fpga0's register bridge (tap optnet.fpga, instruction 0x02) "
     "to a read of 0x1003: is the node's bitstream loaded and the tap the FPGA's?"),
    ("set OPTNET_NODE fpga0\nsource script.tcl\noptnet_check\n",
     "optnet: node fpga0 answered 0x00000000 for the magic word, not 0x4f50544e: not an "
     "optnet bring-up kit"),
])
def test_openocd_script_diagnostics(tmp_path, driver, message, shell):
    script = _host("plasticnet_ring4")["host/optnet_openocd.tcl"]
    latency = 10 if "polls 5" in driver else 2
    calls, _ = _run(tmp_path, script, _model({}, latency=latency) + driver, shell=shell)
    errors = [c for c in calls if c[0] == "ERROR"]
    assert [" ".join(e[1].split()) for e in errors] == [message]


def test_quartus_script_reads_writes_and_dumps_through_the_virtual_jtag(tmp_path):
    script = _host("optweb_4")["host/optnet_quartus.tcl"]
    calls, out = _run(tmp_path, script, _model(REGS, writable=[0x1000], latency=1)
                      + "source script.tcl\n", "n2", "read", "0x1003")
    assert not [c for c in calls if c[0] == "ERROR"], calls
    assert out.split() == ["1234", "0x000004d2"]
    assert ["open_device", "-hardware_name", "USB-BlasterII [1-3]", "-device_name",
            "@1: 1SM21BH (0x432AC0DD)"] in calls
    assert calls[-2:] == [["device_unlock"], ["close_device"]]
    shifts = [c for c in calls if c[0] == "device_virtual_dr_shift"]
    # the read command: address 0x1003, go (bit 49) set, as 13 hex digits
    assert shifts[0] == ["device_virtual_dr_shift", "-instance_index", "0", "-length",
                         str(DR_BITS), "-dr_value", f"{1 << 49 | 0x1003 << 32:013X}",
                         "-value_in_hex"]
    calls, out = _run(tmp_path, script, _model(REGS, writable=[0x1000]) + "source script.tcl\n",
                      "n0", "dump")
    assert not [c for c in calls if c[0] == "ERROR"], calls
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert lines["magic"].split()[1] == str(MAGIC)
    assert {name.split(".")[0] for name in lines} >= {"magic", "link0", "link2"}
    calls, _ = _run(tmp_path, script, _model(REGS, latency=200) + "source script.tcl\n",
                    "n1", "read", "0x0002")
    assert [" ".join(c[1].split()) for c in calls if c[0] == "ERROR"] == [
        "optnet: no answer from node n1's register bridge (virtual JTAG instance 0) to a read "
        "of 0x0002: is the node's bitstream loaded?"]
    assert calls[-3:-1] == [["device_unlock"], ["close_device"]]    # unlocked all the same
    calls, _ = _run(tmp_path, script, _model(REGS) + "source script.tcl\n", "n9", "dump")
    assert [c[1].split(";")[0] for c in calls if c[0] == "ERROR"] == [
        "usage: quartus_stp -t optnet_quartus.tcl NODE (dump | read ADDR | write ADDR VALUE)"]


def test_python_host_module_reads_and_writes_through_openocds_tcl_server():
    # A stand-in for OpenOCD's Tcl server (commands and answers end with 0x1a) that knows
    # the procs of optnet_openocd.tcl; OpenOCD answers the client's [list [catch ...] $r].
    namespace: dict = {}
    exec(_host("plasticnet_ring4")["host/optnet_host.py"], namespace)
    server = socket.create_server(("127.0.0.1", 0))
    commands = []

    def serve():
        conn, _ = server.accept()
        with conn:
            pending = b""
            while True:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                pending += chunk
                while b"\x1a" in pending:
                    text, _, pending = pending.partition(b"\x1a")
                    inner = re.fullmatch(r"list \[catch \{(.*)\} r\] \$r", text.decode())[1]
                    commands.append(inner)
                    if inner == "optnet_read 0x1004":
                        answer = "0 1234"
                    elif inner.startswith("optnet_write"):
                        answer = "0 {}"
                    else:
                        answer = "1 {optnet: no answer from node fpga0's register bridge}"
                    conn.sendall(answer.encode() + b"\x1a")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    jtag = namespace["OpenOcd"]("127.0.0.1", server.getsockname()[1])
    assert namespace["read"](jtag, 0x1004) == 1234
    namespace["write"](jtag, 0x1000, -1)
    with pytest.raises(RuntimeError, match=r"^optnet: no answer from node fpga0's register"):
        namespace["read"](jtag, 0x0777)
    jtag.close()
    thread.join(5)
    server.close()
    assert commands == ["optnet_read 0x1004", "optnet_write 0x1000 0xffffffff",
                        "optnet_read 0x0777"]
