"""Lowering once per hardware role.

Nodes of one role (:meth:`optnet.plan.NodePlan.role`) have the same hardware but for their
name, their node id and the contents of their routing tables. Lowering a node through
Amaranth and Yosys takes seconds; a 256-node torus has one role. So the build lowers one
node per role and derives the Verilog of the others from it by rewriting exactly those
three things, all of which the generated Verilog keeps in recognisable places:

- the module names: the top module is the node's name, and every submodule is an escaped
  identifier ``\\<node>.<path>``;
- the node id, a one-word ROM ``node_id_rom`` in the top module (see
  :class:`optnet.hw.top.NodeTop`);
- the routers' tables ``table<p>`` (:func:`optnet.hw.router.route_table`).

Each memory is rewritten through its ``initial`` block, which must be found exactly once
with the expected number of words; anything else is an error rather than a silently wrong
node. The tests compare rewritten Verilog with a direct lowering.
"""

from __future__ import annotations

import re

from optnet.hw.router import route_table
from optnet.plan import NodePlan

__all__ = ["RoleError", "retarget"]


class RoleError(Exception):
    """The representative's Verilog does not have the shape :func:`retarget` rewrites."""


def retarget(verilog: str, rep: NodePlan, plan: NodePlan) -> str:
    """The Verilog of ``plan``'s node, from ``verilog``, that of ``rep``'s node of the same
    role.

    Raises
    ------
    ValueError
        If the two plans are not of the same role.
    RoleError
        If a memory to rewrite is missing or ambiguous in ``verilog``.
    """
    if rep.role() != plan.role():
        raise ValueError(f"nodes {rep.node!r} and {plan.node!r} are of different roles")
    if plan is rep or plan == rep:
        return verilog
    text = re.sub(rf"^module {re.escape(rep.node)}\(", f"module {plan.node}(", verilog,
                  count=1, flags=re.M)
    text = text.replace(f"\\{rep.node}.", f"\\{plan.node}.")
    text = _initialise(text, "node_id_rom", [plan.node_id])
    for port in range(plan.router.ports):
        text = _initialise(text, f"table{port}", route_table(plan.router, port))
    return text


def _initialise(text: str, memory: str, words: list[int]) -> str:
    # Amaranth writes ``name[i] = W'hXX;`` per word (the name escaped if it needs to be,
    # possibly with a ``$n`` suffix), all in one initial block.
    name = rf"\\?{re.escape(memory)}(?:\$\d+)?"
    block = re.compile(rf"  initial begin\n((?:    {name} ?\[\d+\] = \d+'h[0-9a-f]+;\n)+)  end\n")
    found = [b for b in block.finditer(text)]
    if len(found) != 1:
        raise RoleError(f"memory {memory!r} has {len(found)} initial blocks in the Verilog "
                        "(expected one)")
    match = found[0]
    lines = match.group(1).splitlines()
    if len(lines) != len(words):
        raise RoleError(f"memory {memory!r} has {len(lines)} words, expected {len(words)}")
    out = []
    for line, word in zip(lines, words, strict=True):
        head, width = re.match(r"(.* = )(\d+)'h", line).groups()
        digits = -(-int(width) // 4)
        if word >> int(width):
            raise RoleError(f"word {word:#x} does not fit memory {memory!r} ({width} bits)")
        out.append(f"{head}{width}'h{word:0{digits}x};")
    new = "  initial begin\n" + "\n".join(out) + "\n  end\n"
    return text[:match.start()] + new + text[match.end():]
