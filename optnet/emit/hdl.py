"""Verilog per node, with black-box stubs of the vendor IP and primitives it instantiates."""

from __future__ import annotations

import os
import re
from concurrent.futures import Executor
from pathlib import Path, PurePosixPath

from optnet.emit.stubs import PRIMITIVES, port_stub, primitive_stubs
from optnet.emit.writer import write_into
from optnet.hw.bringup import SimBringUp
from optnet.hw.cdc import synchronizer_platform
from optnet.hw.direct import DirectLink, DirectSwitch
from optnet.hw.link import LinkLayer
from optnet.hw.router import Router
from optnet.hw.top import SHARED_PHY_DOMAIN, NodeTop, parts
from optnet.hw.verilog import Lowered, lower, to_verilog
from optnet.plan import NodePlan
from optnet.plan.ip import ip_name

__all__ = ["lower_router", "node_files", "node_verilog", "one_per_role", "write_files"]


def lower_router(plan: NodePlan) -> Lowered:
    """``plan``'s router lowered on its own, as module ``<node>.router``; it instantiates its
    input buffer (:func:`node_verilog` lowers that). On a direct node, its direct switch, as
    module ``<node>.switch``."""
    names = parts(plan)
    platform = synchronizer_platform(plan.vendor)
    if plan.direct is not None:
        return lower(DirectSwitch(plan.direct), names.switch, ["sync"], platform)
    return lower(Router(plan.router, buffers=names.buffer), names.router, ["sync"], platform)


def node_verilog(plan: NodePlan, executor: Executor | None = None, phys: str = "vendor",
                 bringup: bool = False) -> str:
    """The Verilog of ``plan``'s :class:`~optnet.hw.top.NodeTop`: module ``<node>`` and its
    submodules, then the parts it instantiates (:func:`optnet.hw.top.parts`): the router
    ``<node>.router``, its input buffer ``<node>.router_buf`` (one module for all ports) and
    one module ``<node>.link_cfg<k>`` per distinct link layer configuration. Lowering each
    once rather than once per port is what keeps a node with 63 links quick to build. A
    direct node's parts are its switch ``<node>.switch`` and one module
    ``<node>.link_cfg<k>`` per distinct direct link configuration.

    With ``executor``, the router (for a 64-port router, most of the work) or the direct
    switch is lowered there while the rest is lowered here.

    Every part is elaborated for the node's vendor
    (:func:`optnet.hw.cdc.synchronizer_platform`): the synchroniser flip-flops of the link
    layers and PHY adapters carry the vendor's synchroniser attribute.

    ``phys``: as :class:`~optnet.hw.top.NodeTop`'s. With ``sim`` the module has no PHY
    adapters but each link port's PHY side, ``phy<p>_tx``/``_rx``/``_up`` in clock domain
    ``phy<p>`` (ports ``phy<p>_clk``/``phy<p>_rst``), for ``optnet sim``; every other module
    is the same as with ``vendor``. With ``bringup`` (and ``sim``), the module is
    :class:`~optnet.hw.bringup.SimBringUp`: the network with its bring-up kit.
    """
    names = parts(plan)
    platform = synchronizer_platform(plan.vendor)
    router = executor.submit(lower_router, plan) if executor else None
    shared = [] if plan.direct is not None else [
        lower(Router.input_buffer(plan.router), names.buffer, ["sync"], platform)]
    link = LinkLayer if plan.direct is None else DirectLink
    shared += [lower(link(cfg), name, ["sync", SHARED_PHY_DOMAIN], platform)
               for cfg, name in names.links.items()]
    domains = ["sync", *(f"phy{port.port}" for port in plan.ports)] if phys == "sim" else ()
    top = SimBringUp(plan, names) if bringup else NodeTop(plan, phys, names)
    top = to_verilog(top, plan.node, domains, platform)
    router = router.result() if router else lower_router(plan)
    return top + router.verilog + "".join(part.verilog for part in shared)


def node_files(plan: NodePlan, executor: Executor | None = None) -> dict[str, str]:
    """Files of one node, relative to its folder.

    ``rtl/<node>.v`` is the design (top module ``<node>``); ``stubs/*.v`` are black-box
    modules of the vendor IP cores and I/O primitives it instantiates, for lint and
    open-source synthesis only (the vendor flow generates the real ones). ``executor``: see
    :func:`node_verilog`.
    """
    verilog = node_verilog(plan, executor)
    files = {f"rtl/{plan.node}.v": verilog}
    for port in plan.ports:
        if port.phy != "lvds":
            name = ip_name(port)
            files[f"stubs/{name}.v"] = port_stub(port, plan.family)
    used = {name for name in PRIMITIVES if re.search(rf"^\s*{name}\b", verilog, re.M)}
    if used:
        files["stubs/primitives.v"] = primitive_stubs(used)
    return files


def one_per_role(plans: list[NodePlan]) -> list[NodePlan]:
    """The first node of every hardware role (nodes of one role differ only in tables and
    node id, so linting one of them checks them all)."""
    seen, out = set(), []
    for plan in plans:
        role = plan.role()
        if role not in seen:
            seen.add(role)
            out.append(plan)
    return out


def write_files(root: Path, node: str, files: dict[str, str]) -> list[Path]:
    """Write ``files`` under ``root/nodes/<node>/`` with
    :func:`optnet.emit.writer.write_into` (other files in ``root`` are left as they are);
    returns the paths of all of them, absolute.

    Raises
    ------
    OutputError
        As :func:`~optnet.emit.writer.write_into`.
    """
    base = PurePosixPath("nodes", node)
    write_into(root, {str(base / rel): text.encode("utf-8") for rel, text in files.items()})
    root = Path(os.path.abspath(root))
    return [root.joinpath(*(base / rel).parts) for rel in sorted(files)]
