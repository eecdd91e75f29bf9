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
- the routers' tables ``table<p>`` (:func:`optnet.hw.router.route_table`), or on a direct
  node its hub's two tables, ``direct_port_rom`` and ``direct_id_rom``
  (:meth:`optnet.plan.NodePlan.direct_tables`), in place of the routers.

Each memory is rewritten through its ``initial`` block, which must be found exactly once
with the expected number of words; anything else is an error rather than a silently wrong
node. The tests compare rewritten Verilog with a direct lowering.
"""

from __future__ import annotations

import re

from optnet.hw.router import route_table
from optnet.plan import NodePlan

__all__ = ["RoleError", "RoleTemplate", "initialise_memories", "retarget", "retarget_top",
           "role_memories"]


class RoleError(Exception):
    """The representative's Verilog does not have the shape :func:`retarget` rewrites."""


def retarget(verilog: str, rep: NodePlan, plan: NodePlan) -> str:
    """The Verilog of ``plan``'s node, from ``verilog``, that of ``rep``'s node of the same
    role (:class:`RoleTemplate` once, then :meth:`RoleTemplate.render`).

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
    return RoleTemplate(verilog, rep).render(plan)


def role_memories(plan: NodePlan) -> dict[str, list[int]]:
    """The memories that differ between nodes of a role, by name, with ``plan``'s contents
    (what :func:`retarget` rewrites, and what ``optnet sim`` writes into each node's model)."""
    if plan.direct is not None:
        ports, ids = plan.direct_tables()
        return {"direct_port_rom": list(ports), "direct_id_rom": list(ids),
                "node_id_rom": [plan.node_id]}
    memories = {f"table{port}": route_table(plan.router, port)
                for port in range(plan.router.ports)}
    if not plan.router.block_tables:
        memories["node_id_rom"] = [plan.node_id]
    return memories


class RoleTemplate:
    """The Verilog of ``rep``'s node cut, once, at every place where another node of its
    role differs: its module names and the contents of its tables and node id.

    :meth:`render` fills the cuts in for a node: one join of the pieces rather than a rewrite
    of the whole text, which for a 64-port router is megabytes per node.

    Raises
    ------
    RoleError
        If the top module or a memory to rewrite is not found exactly once in ``verilog``.
    """

    def __init__(self, verilog: str, rep: NodePlan):
        self.rep = rep
        expected = role_memories(rep)
        seen = dict.fromkeys(expected, 0)
        names = re.compile(rf"(\\{re.escape(rep.node)}\.|^module {re.escape(rep.node)}\()",
                           re.M)
        pieces: list[str | tuple] = []
        pos = 0
        for match in _BLOCK.finditer(verilog):
            memory = match.group(2)
            if memory not in seen:
                continue
            seen[memory] += 1
            pieces += _cut(names, verilog[pos:match.start()])
            pieces.append((memory, _heads(match, len(expected[memory]))))
            pos = match.end()
        pieces += _cut(names, verilog[pos:])
        tops = pieces.count(_MODULE)
        if tops != 1:
            raise RoleError(f"module {rep.node!r} is defined {tops} times in the Verilog "
                            "(expected once)")
        for memory, count in seen.items():
            if count != 1:
                raise RoleError(f"memory {memory!r} has {count} initial blocks in the Verilog "
                                "(expected one)")
        self.pieces = pieces

    def render(self, plan: NodePlan) -> str:
        """The Verilog of ``plan``'s node.

        Raises
        ------
        ValueError
            If ``plan`` is not of the template's role.
        RoleError
            If a word does not fit its memory.
        """
        _check_role(self.rep, plan)
        memories = role_memories(plan)
        out = []
        for piece in self.pieces:
            if isinstance(piece, str):
                out.append(piece)
            elif piece is _MODULE:
                out.append(f"module {plan.node}(")
            elif piece is _PREFIX:
                out.append(f"\\{plan.node}.")
            else:
                out.append(_block(piece[0], piece[1], memories[piece[0]]))
        return "".join(out)


# Markers of the module name cuts in RoleTemplate.pieces.
_MODULE, _PREFIX = ("module",), ("prefix",)


def _cut(names: re.Pattern, text: str) -> list[str | tuple]:
    # ``text`` split at the node's module names: the top module's header and the ``\<node>.``
    # prefix of every submodule name
    out: list[str | tuple] = []
    for i, part in enumerate(names.split(text)):
        if i % 2 == 0:
            out.append(part)
        else:
            out.append(_MODULE if part.startswith("module") else _PREFIX)
    return out


def _heads(block: re.Match, words: int) -> tuple[tuple[str, int], ...]:
    # the left-hand side and width of each word of a memory's initial block (_BLOCK)
    memory, lines = block.group(2), block.group(1).splitlines()
    if len(lines) != words:
        raise RoleError(f"memory {memory!r} has {len(lines)} words, expected {words}")
    return tuple((head, int(width)) for head, width in
                 (_WORD.match(line).groups() for line in lines))


def _block(memory: str, heads: tuple[tuple[str, int], ...], words: list[int]) -> str:
    # an initial block giving ``memory`` the contents ``words``
    out = []
    for (head, width), word in zip(heads, words, strict=True):
        if word >> width:
            raise RoleError(f"word {word:#x} does not fit memory {memory!r} ({width} bits)")
        out.append(f"{head}{width}'h{word:0{-(-width // 4)}x};")
    return "  initial begin\n" + "\n".join(out) + "\n  end\n"


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
        return _block(memory, _heads(match, len(memories[memory])), memories[memory])

    text = _BLOCK.sub(replace, text)
    for memory, count in seen.items():
        if count != 1:
            raise RoleError(f"memory {memory!r} has {count} initial blocks in the Verilog "
                            "(expected one)")
    return text
