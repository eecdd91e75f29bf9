"""No input makes optnet crash, hang, exhaust memory or write anything.

Grammar-aware fuzzing: the shipped examples, presets, bad fixtures and two boards are
parsed, mutated as YAML structure (values swapped between keys; numbers replaced by 0, -1,
2**64, 1e308 or NaN; control, zero-width and right-to-left characters in names and keys;
deep nesting; aliases, self-references and merge keys; tags such as ``!!python/object``
and ``!!binary``; huge lists), dumped in block or flow style and then mutated as text (a
byte-order mark, CRLF or CR line ends, NUL and other control characters, duplicated,
dropped or shuffled lines, bytes that are not UTF-8). Each document must lint to exit
status 0 or 1 (2 is for files that cannot be read, and these always can) -- never 3, an
exception, a signal or a hang -- within :data:`TIME_BOUND` seconds, writing no file.

Budgets are Hypothesis profiles (see tests/conftest.py): the fast tier lints ``fast``'s
few documents, the slow tier at least 10,000 (``ci``). A second slow test takes 100 small
clusters that lint clean through planning and hardware lowering. The regressions at the
end pin what fuzzing and review found, each by its diagnostic.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import json
import os
import random
import re
import signal
import string
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optnet.cli import cli
from optnet.diagnostics import Diagnostic, DiagnosticError, Location
from optnet.lint import lint_file
from optnet.render import render
from optnet.spec.source import load_yaml
from optnet.topology.generators import MAX_NODES

from .conftest import ROOT

TIME_BOUND = 60
"""Seconds one document may take to lint, generous for a loaded 2-core machine (most take
tens of milliseconds): the bound is there to turn a hang into a failure."""

SEED_FILES = [p for p in sorted((ROOT / "examples").glob("*.yaml"))
              + sorted((ROOT / "topologies").glob("*.yaml"))
              + sorted((ROOT / "tests" / "fixtures" / "bad").glob("*.yaml"))
              + [ROOT / "boards" / "ulx3s_12f.yaml", ROOT / "boards" / "vcu118.yaml"]
              if p.stat().st_size < 4000]
SEEDS = [p.read_text(encoding="utf-8") for p in SEED_FILES]


def _tree(text: str) -> dict | None:
    try:
        data, _, _ = load_yaml(text, "seed.yaml")
    except DiagnosticError:
        return None  # the malformed and alias-bomb fixtures: mutated as text only
    return data if isinstance(data, dict) else None


TREES = [tree for tree in map(_tree, SEEDS) if tree is not None]

# ------------------------------------------------------------------ mutation vocabulary

NUMBERS = [0, -1, 1, 2, 3, 7, 255, 256, 4097, 8193, 65536, 2**31, 2**63, 2**64, -2**63,
           10**40, 1e308, -1e308, 1e-308, 0.5, -0.0, float("nan"), float("inf"), True, None,
           "NaN", "nan", "-inf", "1e308", "1e999", "2**64", "0x1F", "0o17", "1_000", "+1",
           "0 flits", "-1 flits", "1.5 flits", "0Gbps", "-5Gbps", "NaN Gbps", "1e999Gbps",
           "18446744073709551616 packets", "0Hz", "1e-30MHz", "0m", "-1m", "16KiB", "on",
           "yes", "~", "", " ", [], {}]
TRICKS = ["\u200b", "\u200d", "\u200e", "\u200f", "\u202e", "\u2066", "\ufeff", "\u0301",
          "\x00", "\x01", "\x07", "\x1b[31m", "\x7f", "\x85", "\u2028", "\u2029", "\t", "\r",
          "\n", "\ud800", "\udfff", "\uffff", "\U0001f600", "\u0430", "\u0131", "\u00df",
          "\ufb01", " ", "../", "/", "\\", ":", "#", "&", "*", "!", "%", "@", "`", "'", '"',
          "{", "[", ",", "- ", "? ", "CON", "nul", "aux", "x" * 300, ""]
KEYS = ["optnet", "optnet_board", "name", "preset", "extends", "defaults", "board", "link",
        "topology", "kind", "nodes", "dims", "links", "from", "to", "lanes", "line_rate",
        "phy", "length", "network", "vcs", "flit_width", "max_packet", "router", "buffer",
        "routing", "algorithm", "broadcast", "endpoints", "width", "credit", "offset",
        "ports", "id", "enclosure", "prefix", "groups", "routers", "global_links", "zzz"]
VERSION_KEYS = ("optnet", "optnet_board")
TAGS = ["!!python/object/apply:os.system [ls]", "!!python/object:os.system {}",
        "!!python/name:os.system", "!!binary aGVsbG8=", "!!binary '!!!'", "!!set {a: null}",
        "!!omap [{a: 1}]", "!!pairs [[a, 1]]", "!!timestamp 2001-12-14", "!!float .nan",
        "!!float x", "!!int 0x1F", "!!int x", "!!str 12", "!!bool yes", "!!null ''",
        "!!map {a: 1}", "!!seq [1]", "!!merge <<", "!custom thing", "!<tag:x> 1",
        "!<tag:yaml.org,2002:int> 7", "&dup 1", "*nowhere", "'unterminated", "{a: 1",
        "[1, 2", "!", "!!", "? [a]", "|", ">-"]


def _nested(depth: int, mapping: bool) -> str:
    return ("{a: " * depth + "1" + "}" * depth) if mapping else ("[" * depth + "1" + "]" * depth)


class _Dumper(yaml.SafeDumper):
    """Dumps the mutated trees; ``ignore_aliases`` stays off so shared values become
    anchors and aliases (and a value that contains itself, a self-reference)."""


def _slots(tree: object) -> list[tuple[dict | list, object]]:
    """Every (container, key) of ``tree`` in document order, each container once."""
    out, seen, queue = [], set(), collections.deque([tree])
    while queue:
        node = queue.popleft()
        if id(node) in seen or not isinstance(node, (dict, list)):
            continue
        seen.add(id(node))
        for key, value in (node.items() if isinstance(node, dict) else enumerate(node)):
            out.append((node, key))
            queue.append(value)
    return out


def _raw(raws: list[str], text: str) -> str:
    # A placeholder dumped as a plain scalar, replaced by ``text`` after dumping: YAML that
    # no Python value dumps to (tags, deep nesting, undefined aliases).
    raws.append(text)
    return f"zzraw{len(raws) - 1}zz"


def _one(draw, items: list):
    # By index: drawing the containers themselves would print whole trees on failure.
    return items[draw(st.integers(0, len(items) - 1))] if items else None


def _pick(draw, tree, want: type | tuple = object):
    # Never the format version: Hypothesis favours the first slot, and a broken version
    # stops linting at E004 (_op_version breaks it on purpose).
    return _one(draw, [s for s in _slots(tree) if isinstance(s[0][s[1]], want)
                       and not (s[0] is tree and s[1] in VERSION_KEYS)]) or (None, None)


def _op_version(draw, tree, raws):
    key = next((k for k in VERSION_KEYS if k in tree), "optnet")
    tree[key] = copy.deepcopy(draw(st.sampled_from(NUMBERS)))
    return tree


def _dicts(tree) -> list[dict]:
    return [tree] + [c[k] for c, k in _slots(tree) if isinstance(c[k], dict)]


def _op_swap(draw, tree, raws):
    (a, i), (b, j) = _pick(draw, tree), _pick(draw, tree)
    if a is not None and b is not None:
        a[i], b[j] = b[j], a[i]  # may put a value inside itself: a self-reference
    return tree


def _op_number(draw, tree, raws):
    c, k = _pick(draw, tree)
    if c is not None:
        c[k] = copy.deepcopy(draw(st.sampled_from(NUMBERS)))
    return tree


def _op_tweak(draw, tree, raws):
    # A near miss that still parses: neighbouring counts, halved or doubled quantities,
    # so that mutants get past the schema into elaboration, routing and planning.
    c, k = _pick(draw, tree, (int, str))
    if c is not None:
        v = c[k]
        match = re.match(r"^(\d+)(.*)$", v) if isinstance(v, str) else None
        if isinstance(v, int) and not isinstance(v, bool):
            c[k] = max(0, draw(st.sampled_from([v - 1, v + 1, v * 2, v // 2, 1, 2, 3, 4])))
        elif match:
            n = int(match.group(1))
            n = draw(st.sampled_from([n - 1, n + 1, n * 2, n // 2, 1, 2, 3]))
            c[k] = f"{max(n, 0)}{match.group(2)}"
    return tree


def _op_name(draw, tree, raws):
    c, k = _pick(draw, tree, str)
    if c is not None:
        text, trick = c[k], draw(st.sampled_from(TRICKS))
        at = draw(st.integers(0, len(text)))
        c[k] = text[:at] + trick + text[at:]
    return tree


def _op_key(draw, tree, raws):
    d = _one(draw, _dicts(tree))
    if d:
        old = _one(draw, list(d))
        new = draw(st.sampled_from([f"{old}{t}" for t in TRICKS] + KEYS
                                   + [1, None, True, 1.5]))
        d[new] = d.pop(old)
    return tree


def _op_nest(draw, tree, raws):
    c, k = _pick(draw, tree)
    if c is not None:
        depth = draw(st.sampled_from([2, 60, 63, 64, 65, 66, 200, 5000, 30000]))
        c[k] = _raw(raws, _nested(depth, draw(st.booleans())))
    return tree


def _op_share(draw, tree, raws):
    (a, i), (b, j) = _pick(draw, tree), _pick(draw, tree, (dict, list))
    if a is not None and b is not None:
        a[i] = b[j]  # one object in two places: an anchor and an alias
    return tree


def _op_merge(draw, tree, raws):
    dicts = _dicts(tree)
    into, source = _one(draw, dicts), _one(draw, dicts)
    into["zzmergezz"] = draw(st.sampled_from([source, [source, source], [source, 1], 1,
                                              None, "x"]))
    return tree


def _op_tag(draw, tree, raws):
    c, k = _pick(draw, tree)
    if c is not None:
        c[k] = _raw(raws, draw(st.sampled_from(TAGS)))
    return tree


def _op_huge(draw, tree, raws):
    c, k = _pick(draw, tree, list)
    times = draw(st.sampled_from([2, 16, 300, 3000]))
    if c is not None and c[k] and len(c[k]) * times <= 6000:
        # Shared items dump as one anchor and many aliases; copies as a long document, of
        # at most some 20,000 values so that the generator does not fill the test's memory.
        size = len(_slots(c[k]))
        c[k] = (c[k] * times if draw(st.booleans()) or size * times > 20_000
                else [copy.deepcopy(v) for _ in range(times) for v in c[k]])
    return tree


def _op_delete(draw, tree, raws):
    c, k = _pick(draw, tree)
    if c is not None:
        del c[k]
    return tree


def _op_retype(draw, tree, raws):
    c, k = _pick(draw, tree)
    if c is not None:
        v = c[k]
        c[k] = draw(st.sampled_from([[v], {"x": v}, {"kind": v}, str(v)[:50], None, [], {}]))
    return tree


def _op_insert(draw, tree, raws):
    d = _one(draw, _dicts(tree))
    d[draw(st.sampled_from(KEYS))] = copy.deepcopy(draw(st.sampled_from(NUMBERS + TRICKS)))
    return tree


TREE_OPS = [_op_swap, _op_swap, _op_tweak, _op_tweak, _op_tweak, _op_number, _op_number,
            _op_name, _op_key, _op_nest, _op_share, _op_merge, _op_tag, _op_huge, _op_delete,
            _op_retype, _op_insert, _op_version]
"""Tree mutations; the ones that keep a document meaningful appear more than once."""


def _lines(draw, text: str) -> tuple[list[str], int]:
    lines = text.split("\n")
    return lines, draw(st.integers(0, len(lines) - 1))


def _text_dup_line(draw, text):
    lines, i = _lines(draw, text)
    lines.insert(i, lines[i])  # a mapping line twice: a duplicate key
    return "\n".join(lines)


def _text_drop_line(draw, text):
    lines, i = _lines(draw, text)
    del lines[i]
    return "\n".join(lines)


def _text_swap_lines(draw, text):
    lines, i = _lines(draw, text)
    j = draw(st.integers(0, len(lines) - 1))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _text_indent(draw, text):
    lines, i = _lines(draw, text)
    lines[i] = draw(st.sampled_from(["\t", " ", "   ", ""])) + lines[i].lstrip()
    return "\n".join(lines)


def _text_insert(draw, text):
    at = draw(st.integers(0, len(text)))
    what = draw(st.sampled_from(["\ufeff", "\x00", "\x01", "\x1b", "\x7f", "\x85", "\u2028",
                                 "\ufffe", "\uffff", "\r", "\r\n", "\t", "\ud800", "#", ":",
                                 "- ", "&a ", "*a", "<<: ", "%YAML 1.1\n---\n", "---\n",
                                 "...\n"]))
    return text[:at] + what + text[at:]


def _text_bom(draw, text):
    return "\ufeff" + text


def _text_line_ends(draw, text):
    return text.replace("\n", draw(st.sampled_from(["\r\n", "\r", "\n\n", "\x85",
                                                    "\u2028"])))


def _text_truncate(draw, text):
    return text[:draw(st.integers(0, len(text)))]


def _text_classic(draw, text):
    # The line mutator optnet's fuzzing started with: random lines and NASTY fragments.
    return _mutate(text, random.Random(draw(st.integers(0, 2**32))), draw(st.integers(1, 6)))


TEXT_OPS = [_text_dup_line, _text_drop_line, _text_swap_lines, _text_indent, _text_insert,
            _text_bom, _text_line_ends, _text_truncate, _text_classic]


def _bytes_invalid(draw, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                                b"\xc0\xaf", b"\xe2\x82"]))
    return data[:at] + bad + data[at:]


def _bytes_utf16(draw, data: bytes) -> bytes:
    return data.decode("utf-8", "replace").encode(draw(st.sampled_from(["utf-16",
                                                                        "utf-32"])))


BYTE_OPS = [_bytes_invalid, _bytes_utf16]


@st.composite
def documents(draw) -> bytes:
    """A mutated cluster, preset or board file, as the bytes of the file."""
    raws: list[str] = []
    if draw(st.integers(0, 19)) != 7:
        tree = copy.deepcopy(draw(st.sampled_from(TREES)))
        for _ in range(draw(st.integers(1, 4))):
            tree = draw(st.sampled_from(TREE_OPS))(draw, tree, raws)
        text = yaml.dump(tree, Dumper=_Dumper, sort_keys=False,
                         default_flow_style=draw(st.sampled_from([False, None, True])),
                         allow_unicode=draw(st.booleans()))
        for i, raw in enumerate(raws):
            text = text.replace(f"zzraw{i}zz", raw)
        text = text.replace("zzmergezz", "<<")
    else:
        text = draw(st.sampled_from(SEEDS))  # the malformed fixtures too
    # Most text and byte mutations end at the YAML reader; apply them to a part only.
    for _ in range(draw(st.sampled_from([0, 0, 0, 0, 1, 1, 2, 3]))):
        text = draw(st.sampled_from(TEXT_OPS))(draw, text)
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 19)) == 7:
        data = draw(st.sampled_from(BYTE_OPS))(draw, data)
    return data


# ------------------------------------------------------------------ running lint


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    def expire(signum, frame):
        raise _Timeout(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What a terminal acts on rather than shows (line feed and tab aside): never printed."""

LINTED = {"documents": 0, "clean": 0, "findings": 0}
"""What the lint fuzzing has done in this session, for the report and the ci budget."""


def _lint_never_crashes(data: bytes, fmt: str = "json", no_route: bool = False) -> int:
    """Lint ``data`` as a file through the CLI in-process; assert it ends normally with exit
    status 0 or 1 within TIME_BOUND seconds and writes nothing. Returns the status."""
    with tempfile.TemporaryDirectory(prefix="optnet-fuzz-") as tmp:
        path = Path(tmp) / "cluster.yaml"
        path.write_bytes(data)
        args = ["lint", "--format", fmt, *(["--no-route"] if no_route else []), str(path)]
        start = time.perf_counter()
        with _time_limit(TIME_BOUND):
            result = CliRunner().invoke(cli, args, catch_exceptions=True)
        took = time.perf_counter() - start
        shown = data[:3000].decode("utf-8", "backslashreplace")
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"lint raised {result.exception!r} after {took:.1f} s on:\n{shown}")
        assert result.exit_code in (0, 1), f"exit {result.exit_code}: {result.output}\n{shown}"
        assert sorted(Path(tmp).iterdir()) == [path], "lint wrote a file"
        if fmt in ("text", "github"):
            bad = TERMINAL_CONTROLS.search(result.output)
            assert bad is None, f"lint printed {bad[0]!r} to the terminal:\n{shown}"
    LINTED["documents"] += 1
    LINTED["clean" if result.exit_code == 0 else "findings"] += 1
    return result.exit_code


_HEALTH = settings(suppress_health_check=list(HealthCheck), deadline=None)


@settings(_HEALTH, max_examples=settings.get_profile("fast").max_examples)
@given(data=documents(), fmt=st.sampled_from(["text", "json", "sarif", "github"]),
       no_route=st.booleans())
def test_grammar_mutants(data, fmt, no_route):
    _lint_never_crashes(data, fmt, no_route)


def _slow_profile() -> settings:
    # The profile chosen with --hypothesis-profile or HYPOTHESIS_PROFILE, else "ci".
    name = settings.get_current_profile_name()
    return settings.get_profile("ci" if name == "default" else name)


GRAMMAR_SHARDS = 4
"""The slow lint fuzzing in parts of a few minutes each; together they lint the profile's
``max_examples`` documents (10,000 under ``ci``)."""


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(GRAMMAR_SHARDS))
def test_grammar_mutants_ci(shard):
    profile = _slow_profile()
    share = -(-profile.max_examples // GRAMMAR_SHARDS)
    before = LINTED["documents"]

    @settings(profile, max_examples=share, suppress_health_check=list(HealthCheck),
              deadline=None)
    @given(data=documents(), fmt=st.sampled_from(["text", "json", "sarif", "github"]),
           no_route=st.booleans())
    def mutants(data, fmt, no_route):
        _lint_never_crashes(data, fmt, no_route)

    mutants()
    ran = LINTED["documents"] - before
    print(f"\nlint fuzzing, shard {shard}: {ran} documents; {LINTED}")
    assert ran >= share


# ------------------------------------------------------------------ build mutants

BUILD_BOARDS = {
    "ulx3s": [{"phy": "lvds", "lanes": 2, "line_rate": "160Mbps"},
              {"phy": "lvds", "lanes": 1, "line_rate": "100Mbps"},
              {"phy": "lvds", "lanes": 4, "line_rate": "200Mbps"}],
    "zc706": [{"phy": "aurora_8b10b", "lanes": 1, "line_rate": "5Gbps"},
              {"phy": "aurora_64b66b", "lanes": 1, "line_rate": "10Gbps"}],
    "vc707": [{"phy": "aurora_8b10b", "lanes": 1, "line_rate": "5Gbps"},
              {"lanes": 1, "line_rate": "10Gbps"}],
    "vcu118": [{"lanes": 1, "line_rate": "10Gbps"},
               {"phy": "aurora_64b66b", "lanes": 4, "line_rate": "25Gbps"}],
    "stratix10mx_optics": [{"phy": "serial_lite_3", "lanes": 2, "line_rate": "25Gbps"},
                           {"lanes": 1, "line_rate": "10Gbps"}],
    "ecp5_versa5g": [{"lanes": 1, "line_rate": "2.5Gbps"}],
    "alveo_u280": [{"lanes": 1, "line_rate": "10Gbps"},
                   {"phy": "aurora_64b66b", "lanes": 4, "line_rate": "25Gbps"}],
}
BUILD_TOPOLOGIES = [{"kind": "ring", "nodes": 3}, {"kind": "ring", "nodes": 4},
                    {"kind": "line", "nodes": 2}, {"kind": "line", "nodes": 3},
                    {"kind": "full", "nodes": 3}, {"kind": "full", "nodes": 4},
                    {"kind": "mesh", "dims": [2, 2]}, {"kind": "torus", "dims": [2, 2]},
                    {"kind": "torus", "dims": [3]}, {"kind": "hypercube", "dimension": 2}]
BUILD_NETWORK = [("flit_width", [32, 32, 64, 64, 128, 8, 16]), ("vcs", [1, 2, 3, 4]),
                 ("max_packet", ["1 flits", "2 flits", "4 flits", "8 flits", "16 flits"]),
                 ("flow_control", ["credit", "xon_xoff", "none"]),
                 ("clock", ["50MHz", "100MHz", "156.25MHz", "250MHz"]),
                 ("priorities", [1, 2, 3])]
BUILD_ROUTER = [("buffer", ["2 flits", "4 flits", "8 flits", "16 flits"]),
                ("allocator", ["round_robin", "islip"]), ("pipeline", [1, 2, 3, 4])]
BUILD_RELIABILITY = [("crc", ["crc32", "crc16", "none"]), ("retransmit", ["go_back_n", "none"]),
                     ("window", [1, 2, 8, 32])]
BUILD_ROUTING = [("algorithm", ["auto", "shortest", "up_down", "dimension_order", "direct"]),
                 ("broadcast", ["tree", "cascade", "unicast"])]
BUILD_ENDPOINT = [("buffer", ["4 packets", "16 packets", "64 packets"]),
                  ("credit", [1, 2, 4, 8, 16]), ("offset", [0, 1, 2]), ("init_budget", [0, 1, 2])]


def _some(rnd: random.Random, choices: list[tuple[str, list]], p: float) -> dict:
    return {key: rnd.choice(values) for key, values in choices if rnd.random() < p}


def small_cluster(rnd: random.Random) -> dict:
    """A small cluster (2-4 nodes of one board) with random network, routing and endpoint
    settings, most of which lint clean."""
    board = rnd.choice(sorted(BUILD_BOARDS))
    doc = {"optnet": 1, "name": f"m{rnd.randrange(10**6)}",
           "defaults": {"board": board, "link": dict(rnd.choice(BUILD_BOARDS[board]))},
           "topology": dict(rnd.choice(BUILD_TOPOLOGIES))}
    network = _some(rnd, BUILD_NETWORK, 0.5)
    for key, choices in (("router", BUILD_ROUTER), ("reliability", BUILD_RELIABILITY)):
        if settings_ := _some(rnd, choices, 0.4):
            network[key] = settings_
    if network:
        doc["network"] = network
    if routing := _some(rnd, BUILD_ROUTING, 0.3):
        doc["routing"] = routing
    endpoints = []
    for i in range(rnd.choice([0, 1, 1, 2, 3])):
        endpoint = {"name": f"e{i}", "width": rnd.choice([8, 32, 64, 256])}
        if rnd.random() < 0.25:
            endpoint["managed"] = False
        else:
            endpoint.update(_some(rnd, BUILD_ENDPOINT, 0.4))
        if rnd.random() < 0.2:
            endpoint["priority"] = rnd.choice([0, 1, 2])
        endpoints.append(endpoint)
    if endpoints:
        doc["endpoints"] = endpoints
    return doc


def _lower_to_rtlil(plan) -> None:
    """What :func:`optnet.emit.hdl.node_verilog` lowers, taken to RTLIL by Amaranth but not
    through Yosys: every Python-side step of hardware generation, in about a second."""
    from optnet.hw.direct import DirectLink, DirectSwitch
    from optnet.hw.link import LinkLayer
    from optnet.hw.router import Router
    from optnet.hw.top import SHARED_PHY_DOMAIN, NodeTop, parts
    from optnet.hw.verilog import to_rtlil

    names = parts(plan)
    if plan.direct is not None:
        components = [(DirectSwitch(plan.direct), names.switch, ["sync"])]
        link = DirectLink
    else:
        components = [(Router(plan.router, buffers=names.buffer), names.router, ["sync"]),
                      (Router.input_buffer(plan.router), names.buffer, ["sync"])]
        link = LinkLayer
    components += [(link(cfg), name, ["sync", SHARED_PHY_DOMAIN])
                   for cfg, name in names.links.items()]
    components.append((NodeTop(plan, parts=names), plan.node, []))
    for component, name, domains in components:
        to_rtlil(component, name, domains)


BUILD_SHARDS = 4
"""The build fuzzing is split so that each part runs in minutes. Under the ``ci`` profile
each shard lowers 25 lint-clean small clusters, 100 in all (a four-hundredth of the
profile's examples each, and at least 2). Every tenth goes through
:func:`optnet.emit.hdl.node_files` (Yosys included), the others through
:func:`_lower_to_rtlil`. OPTNET_FUZZ_SEED varies the clusters from run to run."""

BUILT = {"attempts": 0, "lowered": 0, "verilog": 0, "plan_refused": 0, "lint_errors": 0}


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(BUILD_SHARDS))
def test_build_mutants(shard, tmp_path):
    import warnings

    from amaranth.hdl import UnusedElaboratable

    from optnet.emit.hdl import node_files, one_per_role
    from optnet.plan import PlanError, plan

    wanted = max(2, _slow_profile().max_examples // 400)
    rnd = random.Random(f"build-{shard}-{os.environ.get('OPTNET_FUZZ_SEED', '')}")
    path = tmp_path / "cluster.yaml"
    lowered = attempts = 0
    while lowered < wanted:
        attempts += 1
        assert attempts <= 6 * wanted + 10, f"only {lowered} of {attempts} mutants built"
        text = yaml.safe_dump(small_cluster(rnd), sort_keys=False)
        path.write_text(text)
        BUILT["attempts"] += 1
        with _time_limit(TIME_BOUND):
            result = lint_file(path)
        if not result.ok or result.routed is None:
            BUILT["lint_errors"] += 1
            continue
        full = lowered % 10 == 0
        try:
            try:
                plans = plan(result.routed)
            except PlanError:
                BUILT["plan_refused"] += 1  # the CLI's exit 1: a refusal, not a crash
                continue
            with _time_limit(600), warnings.catch_warnings():
                warnings.simplefilter("ignore", UnusedElaboratable)
                for role in one_per_role(plans):
                    if full:
                        node_files(role)
                    else:
                        _lower_to_rtlil(role)
        except Exception as exc:
            pytest.fail(f"planning or lowering raised {exc!r} on this lint-clean cluster:\n"
                        f"{text}")
        lowered += 1
        BUILT["lowered"] += 1
        BUILT["verilog"] += full
    print(f"\nbuild fuzzing, shard {shard}: {lowered} lowered of {attempts}; {BUILT}")


# ------------------------------------------------------------------ line-level mutations

NASTY = ["", "~", "null", "[]", "{}", "-1", "1e999", "99999999999999999999999999", "0x1F",
         "!!binary aGk=", "&a [*a]", "*undefined", "\t", "\x00", "é", "𝔣", "\u202e", "../../x",
         "/etc/passwd", "n0.sfp0[999..0]", "on", "yes", "1 flits", "5Gbps", "-5Gbps", "'", '"',
         "{kind: torus, dims: [65536, 65536]}", "{kind: full, nodes: 1024}",
         "{kind: hypercube, dimension: 16}", "[" * 50, "? [a]: b", "<<: 1", "!!python/name:os"]


def _mutate(text: str, rnd: random.Random, steps: int) -> str:
    lines = text.splitlines()
    for _ in range(steps):
        op = rnd.randrange(6)
        i = rnd.randrange(len(lines) + 1)
        if op == 0 and lines:
            del lines[min(i, len(lines) - 1)]
        elif op == 1:
            lines.insert(i, rnd.choice(lines) if lines else "")
        elif op == 2 and lines:
            j = min(i, len(lines) - 1)
            line = lines[j]
            k = rnd.randrange(len(line) + 1)
            lines[j] = line[:k] + rnd.choice(NASTY) + line[k + rnd.randrange(4):]
        elif op == 3 and lines:
            j = min(i, len(lines) - 1)
            lines[j] = "".join(rnd.choice(string.printable) if rnd.random() < 0.1 else c
                               for c in lines[j])
        elif op == 4:
            lines.insert(i, f"{rnd.choice(['name', 'nodes', 'links', 'topology', 'x'])}: "
                            f"{rnd.choice(NASTY)}")
        else:
            rnd.shuffle(lines)
    return "\n".join(lines)


@settings(_HEALTH, max_examples=40)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["optnet", "name", "topology", "kind", "nodes", "links",
                                       "dims", "from", "to", "board", "network", "defaults",
                                       "lanes", "line_rate", "endpoints", "width", "zzz"]),
                      children, max_size=5),
    max_leaves=30))
def test_random_documents(doc):
    text = yaml.safe_dump({"optnet": 1, "name": "fuzz", "extra": doc}
                          if not isinstance(doc, dict) else doc, allow_unicode=True)
    _lint_never_crashes(text.encode("utf-8", "surrogatepass"))


# ------------------------------------------------------------------ regressions

def _codes(path: Path, routing: bool = True) -> list[tuple[str, int, int, str]]:
    result = lint_file(path, routing=routing)
    return [(d.code, d.location.line, d.location.column, d.message) for d in result.diagnostics]


ISLANDS = """\
optnet: 1
name: islands
defaults: {board: vc707, link: {line_rate: 10Gbps}}
nodes: [{name: a}, {name: b}, {name: c}, {name: d}]
links:
  - {from: a.sfp0, to: b.sfp0}
  - {from: c.sfp0, to: d.sfp0}
endpoints: [{name: data, width: 64}]
"""


@pytest.mark.parametrize("routing", [True, False])
def test_disconnected_cluster_with_endpoints_is_e111(tmp_path, routing):
    # The credit check measured the diameter of a disconnected graph: NetworkXError, exit 3.
    path = tmp_path / "islands.yaml"
    path.write_text(ISLANDS)
    assert _codes(path, routing) == [
        ("E111", 5, 1, "The cluster falls apart into 2 parts that cannot reach each other: "
                       "{a, b}; {c, d}.")]


def test_one_node_torus_with_explicit_nodes_is_e111(tmp_path):
    path = tmp_path / "t1.yaml"
    path.write_text("optnet: 1\nname: t1\ndefaults: {board: vc707, link: {line_rate: 10Gbps}}\n"
                    "topology: {kind: torus, dims: [1]}\nnodes: [{name: a}, {name: b}]\n"
                    "links: [{from: a.sfp0, to: b.sfp0}]\nendpoints: [{name: d, width: 64}]\n")
    assert _codes(path) == [
        ("E111", 6, 1, "The cluster falls apart into 2 parts that cannot reach each other: "
                       "{a, b}; {n0}.")]


def test_explicit_nodes_count_against_the_node_limit(tmp_path):
    path = tmp_path / "many.yaml"
    path.write_text("optnet: 1\nname: many\ndefaults: {board: vc707}\nnodes:\n"
                    + "".join(f"  - {{name: x{i}}}\n" for i in range(MAX_NODES + 1)))
    assert _codes(path, routing=False) == [
        ("E014", MAX_NODES + 5, 5, "The cluster has 8,193 nodes; optnet handles at most "
                                   "8,192. Node 'x8192' is the first one past the limit.")]


def test_generated_and_explicit_nodes_count_together(tmp_path):
    path = tmp_path / "many.yaml"
    path.write_text("optnet: 1\nname: many\ndefaults: {board: vc707}\n"
                    "topology: {kind: torus, dims: [128, 64]}\n"
                    "nodes: [{name: n5}, {name: extra}]\n")
    assert _codes(path, routing=False) == [
        ("E014", 5, 21, "The cluster has 8,193 nodes (8,192 from the topology and 1 more "
                        "under 'nodes'); optnet handles at most 8,192. Node 'extra' is the "
                        "first one past the limit.")]


def test_lint_refuses_a_fifo_and_a_device(run, tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    with _time_limit(30):
        result = run("lint", str(fifo))
    assert result.exit_code == 2
    assert f"optnet: cannot read {fifo}: it is a named pipe, not a regular file." \
        in result.output
    with _time_limit(30):
        result = run("lint", str(zero))
    assert result.exit_code == 2
    assert "optnet: cannot read /dev/zero: it is a character device, not a regular file." \
        in result.output


def test_lint_dir_skips_pipes_devices_and_dangling_links(run, tmp_path):
    (tmp_path / "good.yaml").write_text((ROOT / "examples" / "optweb_4.yaml").read_text())
    os.mkfifo(tmp_path / "pipe.yaml")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    (tmp_path / "folder.yaml").mkdir()
    with _time_limit(60):
        result = run("lint", "--format", "json", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["summary"] == {"errors": 0, "warnings": 1, "files": 1}


def test_board_and_preset_folders_are_read_safely(tmp_path):
    # Next to the cluster: boards/ and topologies/ with a pipe, a device and a dangling
    # link; stat()ing the dangling link crashed, reading the others would block or fill
    # memory.
    for folder in ("boards", "topologies"):
        (tmp_path / folder).mkdir()
        os.mkfifo(tmp_path / folder / "pipe.yaml")
        (tmp_path / folder / "zero.yaml").symlink_to("/dev/zero")
        (tmp_path / folder / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    path = tmp_path / "c.yaml"
    path.write_text((ROOT / "examples" / "ulx3s_ring4.yaml").read_text())
    with _time_limit(60):
        result = lint_file(path)
    found = sorted((d.code, d.location.file, d.message) for d in result.diagnostics)
    boards = tmp_path / "boards"
    # The reader names a link by its target, as shown_path() does for every file.
    assert found == [
        ("E001", "/dev/zero", "The board file cannot be read: it is a character device, not "
                              "a regular file."),
        ("E001", str(boards / "pipe.yaml"), "The board file cannot be read: it is a named "
                                            "pipe, not a regular file."),
        ("E001", str(tmp_path / "nowhere.yaml"), "The board file cannot be read: No such "
                                                 "file or directory."),
    ]


def test_text_rendering_splits_each_source_once():
    # Each diagnostic split the whole source again: 20,000 findings took 28 s to print.
    calls = []

    class Counting(str):
        def splitlines(self, keepends=False):
            calls.append(1)
            return super().splitlines(keepends)

    source = Counting("".join(f"k{i}: 1\n" for i in range(1000)))
    diags = [Diagnostic("E010", f"Unknown key k{i}.", Location("f.yaml", i + 1, 1, i + 1, 3))
             for i in range(1000)]
    out = render(diags, "text", {"f.yaml": source}, 1)
    assert out.count("error[E010]") == 1000 and " 1000 | k999: 1" in out
    assert len(calls) == 1


def test_control_characters_from_the_input_are_shown_escaped(run, tmp_path):
    # A value with an escape sequence retitled and cleared the terminal, and a line feed in
    # it started a fake GitHub workflow command. (Board names are refused by their form, E014,
    # and shown through repr; a link end is quoted as written.)
    path = tmp_path / "c.yaml"
    path.write_text('optnet: 1\nname: x\ndefaults: {board: vc707, link: {line_rate: 10Gbps}}\n'
                    'nodes: [{name: a}, {name: b}]\nlinks:\n'
                    '  - {from: "a\\e]0;t\\a\\n::warning ::x\\u202e", to: b.sfp0}\n')
    text = run("lint", str(path)).output.splitlines()
    assert text[0] == (f"{path}:6:12: error[E023]: The link end "
                       "'a\\x1b]0;t\\x07\\x0a::warning ::x\\u202e' is not written as node.port, "
                       "node.port[lane] or node.port[first..last].")
    github = run("lint", "--format", "github", str(path)).output.splitlines()
    assert len(github) == 1 and "'a\\x1b]0;t\\x07%0A::warning ::x\\u202e'" in github[0]


def test_islip_with_priorities_has_no_combinational_loop():
    # iSLIP took an input's highest priority by comparing a signal with itself: every
    # cluster with `allocator: islip` made `optnet hdl` exit 3 with CombinationalCycle, and
    # the simulation below never ended. The higher-priority input must win every cycle.
    from .test_hw_router import _flood

    with _time_limit(120):
        times = _flood("islip", 150, levels=2, prio={1: 1})
    assert (len(times[0]), len(times[2])) == (0, 0) and len(times[1]) > 140


def test_one_flit_packets_are_refused_by_plan(run, tmp_path):
    # Lint passed it, but the endpoints' ValueError (a header and one beat need two flits)
    # and the router's (a multicast waiting for 0 credits) made `optnet hdl` exit 3.
    path = tmp_path / "c.yaml"
    path.write_text("optnet: 1\nname: c\ndefaults: {board: vc707, link: {line_rate: 10Gbps}}\n"
                    "topology: {kind: ring, nodes: 3}\n"
                    "network: {flit_width: 32, max_packet: 1 flits}\n")
    found = run("lint", str(path))
    assert found.exit_code == 1 and "error[E305]: A packet of at most 1 flit has no room " \
        "for data after its header flit in cluster 'c'." in found.output
    assert run("hdl", "-o", str(tmp_path / "out"), str(path)).exit_code == 1


def test_text_output_shows_names_as_written(run, tmp_path):
    # Rich printed the text format and turned ':thumbs_up:' into an emoji, in the message
    # and in the quoted source line.
    path = tmp_path / "c.yaml"
    path.write_text('optnet: 1\nname: ":thumbs_up:"\ntopology: {kind: ring, nodes: 3}\n')
    lines = run("lint", str(path)).output.splitlines()
    assert lines[:2] == [
        f"{path}:2:7: error[E020]: The cluster name ':thumbs_up:' is not a legal name: it "
        "must start with a letter and contain only ASCII letters, digits and underscores.",
        ' 2 | name: ":thumbs_up:"']
