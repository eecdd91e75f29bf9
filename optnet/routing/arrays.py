"""Array helpers that let the routing stage work on all (destination, node) pairs at once.

Routes, broadcast trees and the wait graph are N x N objects; at 1,024 nodes and more,
per-pair Python loops dominate a lint (issue 17). These helpers are the shared vocabulary of
the vectorised code: route tables as matrices, hop counts and last channels of every route
(a breadth-first walk of each destination's in-tree), an equality join, distinct values and
a cycle test for graphs given as edge arrays.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np

__all__ = ["ROWS", "chunks", "distinct", "has_cycle", "join", "matrix", "transpose", "walk"]

ROWS = 1 << 20
"""Matrix entries one vectorised step handles at most: large enough that per-call overhead
vanishes, small enough that an 8,192-node network's temporaries stay in the tens of MB."""


def chunks(rows: int, width: int, size: int | None = None) -> list[tuple[int, int]]:
    """``(start, stop)`` ranges that split ``rows`` rows of ``width`` entries into blocks of
    about ``size`` (default :data:`ROWS`) entries."""
    step = max(1, (size or ROWS) // max(width, 1))
    return [(start, min(start + step, rows)) for start in range(0, rows, step)]


def matrix(rows: Sequence[array], dtype: type) -> np.ndarray:
    """The equally long ``array`` rows as one 2-D numpy matrix of ``dtype`` (a copy)."""
    if not rows:
        return np.zeros((0, 0), dtype=dtype)
    return np.stack([np.frombuffer(row, dtype=dtype) for row in rows])


def walk(dst: np.ndarray, nxt: np.ndarray,
         targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hop count and last channel of every route in a block of routing table rows.

    Parameters
    ----------
    dst : ndarray of int
        Head node of every channel.
    nxt : ndarray of int, shape (R, N)
        ``nxt[i, x]``: the channel node ``x`` sends on towards destination ``targets[i]``;
        negative at the destination and where it is unreachable.
    targets : ndarray of int, shape (R,)

    Returns
    -------
    hops, last : ndarray of int32, shape (R, N)
        Channels on the route from ``x`` and the channel it enters the destination on;
        0 and -1 at the destination, -1 and -1 where the route never arrives.
    """
    r, n = nxt.shape
    hops = np.empty((r, n), dtype=np.int32)
    last = np.empty((r, n), dtype=np.int32)
    # The walk scatters to every entry of its block in an order the routes set: blocks
    # that stay in the processor's cache run twice as fast as larger ones.
    for start, stop in chunks(r, n, 1 << 20):
        hops[start:stop], last[start:stop] = _walk(dst, nxt[start:stop], targets[start:stop])
    return hops, last


def _walk(dst: np.ndarray, nxt: np.ndarray,
          targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r, n = nxt.shape
    # int32 throughout: a block's flat indices fit, and the gathers move half the bytes
    flat = nxt.reshape(-1).astype(np.int32)
    ahead = np.where(flat >= 0, dst.astype(np.int32)[np.maximum(flat, 0)], n)
    # Each destination's routes form an in-tree; walk it breadth-first from the root, one
    # level of every tree of the block per step. A node's children are the nodes that send
    # to it: each row sorted by next node (a radix sort), with each node's range found by
    # counting.
    order = np.argsort(ahead.reshape(r, n).astype(np.int16 if n < 1 << 15 else np.int32),
                       axis=1, kind="stable").astype(np.int32)
    order += (np.arange(r, dtype=np.int32) * np.int32(n))[:, None]
    order = order.reshape(-1)
    rows = np.repeat(np.arange(r, dtype=np.int32), n)
    count = np.bincount(rows * np.int32(n + 1) + ahead, minlength=r * (n + 1)).astype(np.int32)
    start = (np.cumsum(count) - count).astype(np.int32)
    hops = np.full(r * n, -1, dtype=np.int32)
    last = np.full(r * n, -1, dtype=np.int32)
    level = np.arange(r, dtype=np.int32) * np.int32(n) + targets.astype(np.int32)
    hops[level] = 0
    depth = 0
    while level.size:
        key = level + level // n  # (row, node) as row * (n + 1) + node
        many = count[key]
        kids = order[_ranges(start[key], many)]
        depth += 1
        hops[kids] = depth
        last[kids] = flat[kids] if depth == 1 else np.repeat(last[level], many)
        level = kids
    return hops.reshape(r, n), last.reshape(r, n)


def transpose(a: np.ndarray) -> np.ndarray:
    """A copy of the 2-D ``a`` transposed, tile by tile: ``a.T.copy()`` reads a large matrix
    with a stride of a whole row per element, three times slower."""
    out = np.empty((a.shape[1], a.shape[0]), dtype=a.dtype)
    tile = 256
    for i in range(0, a.shape[0], tile):
        for j in range(0, a.shape[1], tile):
            out[j:j + tile, i:i + tile] = a[i:i + tile, j:j + tile].T
    return out


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted: ``np.unique``, which numpy 2 computes by hashing, several
    times slower than this sort on the many-times repeated edge codes of a wait graph."""
    values = np.sort(values, axis=None)
    keep = np.ones(len(values), dtype=bool)
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def join(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every index pair ``(i, j)`` with ``left[i] == right[j]``: an equality join of two
    arrays of non-negative keys, in no particular order."""
    if len(left) == 0 or len(right) == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    top = int(left.max())
    if top < 4 * (len(left) + len(right)) and np.bincount(left).max() == 1:
        # Distinct left keys (a tree: one channel into each node): a lookup table.
        at = np.full(top + 1, -1)
        at[left] = np.arange(len(left))
        i = at[np.minimum(right, top)]
        j = np.flatnonzero((i >= 0) & (right <= top))
        return i[j], j
    order = np.argsort(right, kind="stable")
    keys = right[order]
    lo = np.searchsorted(keys, left, "left")
    count = np.searchsorted(keys, left, "right") - lo
    return np.repeat(np.arange(len(left)), count), order[_ranges(lo, count)]


def has_cycle(tails: np.ndarray, heads: np.ndarray, vertices: int) -> bool:
    """Whether the directed graph with edges ``tails[i] -> heads[i]`` on ``vertices``
    vertices has a cycle (Kahn's algorithm: peel vertices without incoming edges, one
    layer per round; a cycle is what can never be peeled)."""
    order = np.argsort(tails, kind="stable")
    heads = heads[order]
    start = np.searchsorted(tails[order], np.arange(vertices + 1))
    waiting = np.bincount(heads, minlength=vertices)
    layer = np.flatnonzero(waiting == 0)
    peeled = 0
    while layer.size:
        peeled += layer.size
        reached = heads[_ranges(start[layer], start[layer + 1] - start[layer])]
        np.subtract.at(waiting, reached, 1)
        layer = distinct(reached[waiting[reached] == 0])
    return peeled < vertices


def _ranges(lo: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The indices ``lo[0] .. lo[0] + count[0] - 1``, then those of the next range, ..."""
    ends = np.cumsum(count, dtype=lo.dtype)
    within = np.arange(ends[-1] if len(ends) else 0, dtype=lo.dtype)
    return within + np.repeat(lo - (ends - count), count)
