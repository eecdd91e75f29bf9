"""Lowering once per hardware role.

Nodes of one role (:meth:`optnet.plan.NodePlan.role`) have the same hardware but for their
name, their node id and the contents of their routing tables. Lowering a node through
Amaranth and Yosys takes seconds; a 256-node torus has one role. So the build lowers one
node per role and derives the Verilog of the others from it by rewriting exactly those
three things, all of which the generated Verilog keeps in recognisable places:

- the module names: the top module is the node's name, and every submodule is an escaped
  identifier ``\\<node>.<path>``;
- the node id, a one-word ROM ``node_id_rom`` in the top module (see
  :class:`optnet.hw.top.NodeTop`), or with block RAM tables the last word of ``table0``;
- the routers' tables ``table<p>`` (:func:`optnet.hw.router.route_table`).

Each memory is rewritten through its ``initial`` block, which must be found exactly once
with the expected number of words; anything else is an error rather than a silently wrong
node. The tests compare rewritten Verilog with a direct lowering.
"""

from __future__ import annotations

import re

from optnet.hw.router import route_table
from optnet.plan import NodePlan

__all__ = ["RoleError", "initialise_memories", "retarget", "retarget_top"]


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
    _check_role(rep, plan)
    if plan == rep:
        return verilog
    text = _rename(verilog, rep.node, plan.node)
    memories = {f"table{port}": route_table(plan.router, port)
                for port in range(plan.router.ports)}
    if not plan.router.block_tables:
        memories["node_id_rom"] = [plan.node_id]
    return initialise_memories(text, memories)


def retarget_top(verilog: str, rep: NodePlan, plan: NodePlan) -> str:
    """The board top of ``plan``'s node (:func:`optnet.emit.board.board_top_files`) from
    that of ``rep``'s node of the same role: the top holds no tables or ids, only the two
    module names (its own and the network's it instantiates as ``net``).

    Raises
    ------
    ValueError, RoleError
        As :func:`retarget`.
    """
    _check_role(rep, plan)
    text = _rename(verilog, f"{rep.node}_top", f"{plan.node}_top")
    text, count = re.subn(rf"^  {re.escape(rep.node)} net \(", f"  {plan.node} net (", text,
                          flags=re.M)
    if count != 1:
        raise RoleError(f"the board top instantiates network module {rep.node!r} {count} "
                        "times (expected once)")
    return text


def _check_role(rep: NodePlan, plan: NodePlan) -> None:
    if rep.role() != plan.role():
        raise ValueError(f"nodes {rep.node!r} and {plan.node!r} are of different roles")


def _rename(verilog: str, old: str, new: str) -> str:
    # The top module is ``old``; its submodules are escaped identifiers ``\old.<path>``.
    # (String methods rather than a multi-line regex: node Verilog can be megabytes.)
    head, text = f"\nmodule {old}(", "\n" + verilog
    count = text.count(head)
    if count != 1:
        raise RoleError(f"module {old!r} is defined {count} times in the Verilog (expected "
                        "once)")
    return text.replace(head, f"\nmodule {new}(").replace(f"\\{old}.", f"\\{new}.")[1:]


# An initial block of a memory: ``name[i] = W'hXX;`` per word, the name escaped if it needs
# to be and possibly with a ``$n`` suffix (how Amaranth writes memory contents).
_BLOCK = re.compile(r"  initial begin\n((?:    \\?([A-Za-z_]\w*)(?:\$\d+)? ?\[\d+\] = "
                    r"\d+'h[0-9a-f]+;\n)+)  end\n")
_WORD = re.compile(r"(.* = )(\d+)'h")


def initialise_memories(text: str, memories: dict[str, list[int]]) -> str:
    """``text`` with the contents of each memory in ``memories`` replaced, in one pass."""
    seen: dict[str, int] = dict.fromkeys(memories, 0)

    def replace(match: re.Match) -> str:
        memory = match.group(2)
        if memory not in memories:
            return match.group(0)
        seen[memory] += 1
        lines, words = match.group(1).splitlines(), memories[memory]
        if len(lines) != len(words):
            raise RoleError(f"memory {memory!r} has {len(lines)} words, expected {len(words)}")
        out = []
        for line, word in zip(lines, words, strict=True):
            head, width = _WORD.match(line).groups()
            if word >> int(width):
                raise RoleError(f"word {word:#x} does not fit memory {memory!r} "
                                f"({width} bits)")
            out.append(f"{head}{width}'h{word:0{-(-int(width) // 4)}x};")
        return "  initial begin\n" + "\n".join(out) + "\n  end\n"

    text = _BLOCK.sub(replace, text)
    for memory, count in seen.items():
        if count != 1:
            raise RoleError(f"memory {memory!r} has {count} initial blocks in the Verilog "
                            "(expected one)")
    return text
