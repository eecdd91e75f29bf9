"""Array helpers that let the routing stage work on all (destination, node) pairs at once.

Routes, broadcast trees and the wait graph are N x N objects; at 1,024 nodes and more,
per-pair Python loops dominate a lint (issue 17). These helpers are the shared vocabulary of
the vectorised code: route tables as matrices, hop counts and last hops of every route by
pointer doubling, an equality join and a cycle test for graphs given as edge arrays.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np

__all__ = ["ROWS", "chunks", "distinct", "has_cycle", "join", "matrix", "walk"]

ROWS = 1 << 22
"""Matrix entries one vectorised step handles at most: large enough that per-call overhead
vanishes, small enough that an 8,192-node network's temporaries stay in the tens of MB."""


def chunks(rows: int, width: int) -> list[tuple[int, int]]:
    """``(start, stop)`` ranges that split ``rows`` rows of ``width`` entries into blocks of
    about :data:`ROWS` entries."""
    step = max(1, ROWS // max(width, 1))
    return [(start, min(start + step, rows)) for start in range(0, rows, step)]


def matrix(rows: Sequence[array], dtype: type) -> np.ndarray:
    """The equally long ``array`` rows as one 2-D numpy matrix of ``dtype`` (a copy)."""
    if not rows:
        return np.zeros((0, 0), dtype=dtype)
    return np.stack([np.frombuffer(row, dtype=dtype) for row in rows])


def walk(dst: np.ndarray, nxt: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hop count and second-to-last node of every route in a block of routing table rows.

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
    hops, before : ndarray of int32, shape (R, N)
        Channels on the route from ``x`` (0 at the destination, -1 where unreachable), and
        the node the route enters the destination from (``x`` itself when the route is at
        most one hop).

    Raises
    ------
    ValueError
        If a route runs in a loop.
    """
    r, n = nxt.shape
    # int32 throughout: a block's flat indices fit, and the gathers move half the bytes
    node = np.arange(n, dtype=np.int32)[None, :]
    valid = nxt >= 0
    ahead = np.where(valid, dst.astype(np.int32)[np.where(valid, nxt, 0)], node)
    # Jump to the node before the destination, never onto it: then after enough doublings
    # every node points at the node its route enters the destination from, and the hops
    # added up on the way count the route's length. log2(longest route) rounds, each only
    # over the routes not yet resolved.
    stop = ~valid | (ahead == targets[:, None])
    base = np.arange(r, dtype=np.int32)[:, None] * np.int32(n)
    jump = (np.where(stop, node, ahead) + base).ravel()
    length = (~stop).astype(np.int32).ravel()
    active = np.flatnonzero(~stop).astype(np.int32)
    for _ in range(n.bit_length() + 1):
        if not active.size:
            break
        to = jump[active]
        further, longer = jump[to], length[active] + length[to]
        jump[active], length[active] = further, longer
        active = active[jump[further] != further]
    # a route that loops lands on a node of its loop, which is not one it may stop at
    if active.size or not stop.ravel()[jump].all():
        raise ValueError("a route runs in a loop")
    hops = np.where(valid, length.reshape(r, n) + 1, -1).astype(np.int32)
    hops[nxt == -1] = 0
    return hops, jump.reshape(r, n) - base


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
    within = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(lo, count) + within
