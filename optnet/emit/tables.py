"""Routing table files of a node: ``routes.json``, ``$readmemh`` hex and a C header.

The tables and their canonical JSON form are the routing stage's
(:mod:`optnet.routing.tables`, which documents the entry layouts); this module renders the
files from them.
"""

from __future__ import annotations

import json

from optnet.emit.env import render_template
from optnet.routing.tables import NodeTable, to_json

__all__ = ["render_c_header", "render_hex", "table_files"]


def render_hex(table: NodeTable) -> tuple[str, str]:
    """(unicast hex, multicast hex) for ``$readmemh``."""
    w = table.widths
    unicast = render_template("tables/routes.hex.j2", table=table,
                              words=table.unicast_words(),
                              digits=(w.entry_bits + 3) // 4, kind="unicast")
    multicast = render_template("tables/routes.hex.j2", table=table,
                                words=table.multicast_words(),
                                digits=(w.ports * (1 + w.vc_bits) + 3) // 4,
                                kind="multicast")
    return unicast, multicast


def render_c_header(table: NodeTable) -> str:
    """A C header with the tables and their field layout, for host software."""
    words = (table.widths.ports + 31) // 32
    rows = [(g, [g.mask >> (32 * i) & 0xFFFF_FFFF for i in range(words)])
            for g in table.multicast]
    return render_template("tables/routes.h.j2", t=table, w=table.widths, mask_words=words,
                           mask_rows=rows, guard=f"OPTNET_ROUTES_{table.node.upper()}_H")


def table_files(tables: list[NodeTable]) -> dict[str, bytes]:
    """Each node's table files as ``<node>/routes.json``, ``routes.hex``, ``mcast.hex`` and
    ``routes.h`` (relative path to contents), for ``optnet route --emit`` to write.

    Nothing is written here: the command line writes them with
    :func:`optnet.emit.writer.write_into`.
    """
    files: dict[str, bytes] = {}
    for table in tables:
        unicast, multicast = render_hex(table)
        texts = {"routes.json": json.dumps(to_json(table), indent=2) + "\n",
                 "routes.hex": unicast, "mcast.hex": multicast,
                 "routes.h": render_c_header(table)}
        files.update((f"{table.node}/{name}", text.encode("utf-8"))
                     for name, text in texts.items())
    return files
