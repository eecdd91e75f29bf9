"""The bring-up register map of a node: what a host reads and writes over the UART
(:mod:`optnet.hw.uart`), planned as data so that the hardware
(:mod:`optnet.hw.bringup`) and the host header and module the emit stage writes agree.

Registers are 32 bits at 16-bit word addresses:

- ``0x0000`` ``magic``: ``0x4F50544E`` ("OPTN"), to check the line and the baud rate;
  ``0x0001`` ``version`` of this map; ``0x0002`` ``node_id``; ``0x0003`` ``endpoints`` and
  ``0x0004`` ``links``, how many blocks follow; ``0x0005`` ``link_up``, bit ``k`` for
  link ``k`` (the first 32); ``0x0006`` ``dropped``, packets the router (switch) dropped.
- Per link ``k`` (``plan.ports[k]``, in router port order), at ``0x0100 + 0x10 k``:
  ``up``, then the link
  layer's counters ``crc_errors``, ``resent``, ``lost`` and ``restarts``
  (:class:`optnet.hw.link.LinkLayer`; on a direct node, where links have no such
  counters, only ``up``).
- Per endpoint ``e`` (in the cluster file's order), at ``0x1000 + 0x10 e``: ``control``
  (bit 0: the traffic generator sends; set from configuration, so a board without a UART
  runs traffic too), ``length`` (beats per packet, at first as many as one network packet
  carries), ``gap`` (idle
  cycles after each), then the counters ``sent``, ``received``, ``out_of_sequence`` and
  ``bad_beats`` (:mod:`optnet.hw.bringup`).

Counters wrap; a host takes differences.
"""

from __future__ import annotations

from dataclasses import dataclass

from optnet.plan import NodePlan

__all__ = ["ENDPOINT_BASE", "LINK_BASE", "MAGIC", "MAP_VERSION", "Register", "register_map"]

MAGIC = 0x4F50544E
MAP_VERSION = 1
LINK_BASE, ENDPOINT_BASE, BLOCK = 0x0100, 0x1000, 0x10

#: (name, writable, description) of the registers of each block, in address order.
_NODE = (("magic", False, '0x4F50544E, "OPTN"'), ("version", False, "of this register map"),
         ("node_id", False, "this node's id"), ("endpoints", False, "endpoint blocks"),
         ("links", False, "link blocks"),
         ("link_up", False, "bit k: link k is up (links 0 to 31)"),
         ("dropped", False, "packets the router dropped"))
_ENDPOINT = (("control", True, "bit 0: the traffic generator sends (from configuration)"),
             ("length", True, "beats per generated packet (at first, a network packet's)"),
             ("gap", True, "idle cycles after each generated packet"),
             ("sent", False, "packets generated"), ("received", False, "packets checked"),
             ("out_of_sequence", False, "packets not the next from their source"),
             ("bad_beats", False, "beats whose data differ from what was sent"))
_LINK = (("up", False, "1: the link is up"), ("crc_errors", False, "frames that failed CRC"),
         ("resent", False, "frames sent again"), ("lost", False, "frames lost"),
         ("restarts", False, "times the link restarted"))


@dataclass(frozen=True)
class Register:
    """One register: ``name`` is ``<register>`` for the node's,
    ``<endpoint>.<register>`` for an endpoint's and ``link<k>.<register>`` for a link's;
    ``init``, a writable register's value after configuration (and reset)."""

    name: str
    addr: int
    writable: bool
    doc: str
    init: int = 0


def register_map(plan: NodePlan) -> tuple[Register, ...]:
    """The registers of ``plan``'s node, in address order (module docstring).

    Raises
    ------
    ValueError
        If the node has more links or endpoints than the map has blocks for.
    """
    links, endpoints = len(plan.ports), len(plan.endpoint_names)
    if LINK_BASE + BLOCK * links > ENDPOINT_BASE or ENDPOINT_BASE + BLOCK * endpoints > 1 << 16:
        raise ValueError(f"node {plan.node}: the register map has blocks for "
                         f"{(ENDPOINT_BASE - LINK_BASE) // BLOCK} links and "
                         f"{((1 << 16) - ENDPOINT_BASE) // BLOCK} endpoints, not {links} "
                         f"and {endpoints}")
    regs = [Register(name, i, w, doc) for i, (name, w, doc) in enumerate(_NODE)]
    counters = _LINK if plan.direct is None else _LINK[:1]
    for k in range(links):
        regs += [Register(f"link{k}.{reg}", LINK_BASE + BLOCK * k + i, w, doc)
                 for i, (reg, w, doc) in enumerate(counters)]
    for e, (name, cfg) in enumerate(zip(plan.endpoint_names, plan.endpoints, strict=True)):
        # packets as long as one network packet carries (a direct node's messages: 16 beats)
        init = {"control": 1, "length": 16 if cfg.length_bits else cfg.max_packet - 1}
        regs += [Register(f"{name}.{reg}", ENDPOINT_BASE + BLOCK * e + i, w, doc,
                          init.get(reg, 0))
                 for i, (reg, w, doc) in enumerate(_ENDPOINT)]
    return tuple(regs)
