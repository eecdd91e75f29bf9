"""No input makes optnet lint crash, hang or write anything: thousands of mutated files."""

from __future__ import annotations

import random
import string
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optnet.cli import cli

from .conftest import ROOT

SEEDS = [p.read_text() for p in sorted((ROOT / "examples").glob("*.yaml"))
         + sorted((ROOT / "tests" / "fixtures" / "bad").glob("*.yaml"))
         if p.stat().st_size < 4000]
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


def _lint_never_crashes(text: str, tmp: Path) -> None:
    path = tmp / "cluster.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    before = sorted(tmp.iterdir())
    result = CliRunner().invoke(cli, ["lint", "--format", "json", str(path)],
                                catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"lint raised {result.exception!r} on:\n{text}")
    assert result.exit_code in (0, 1, 2), result.output
    assert sorted(tmp.iterdir()) == before, "lint wrote a file"


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32), which=st.integers(0, 10**6), steps=st.integers(1, 8))
def test_mutated_files(tmp_path_factory, seed, which, steps):
    text = _mutate(SEEDS[which % len(SEEDS)], random.Random(seed), steps)
    _lint_never_crashes(text, tmp_path_factory.mktemp("fuzz"))


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["optnet", "name", "topology", "kind", "nodes", "links",
                                       "dims", "from", "to", "board", "network", "defaults",
                                       "lanes", "line_rate", "endpoints", "width", "zzz"]),
                      children, max_size=5),
    max_leaves=30))
def test_random_documents(tmp_path_factory, doc):
    import yaml
    text = yaml.safe_dump({"optnet": 1, "name": "fuzz", "extra": doc}
                          if not isinstance(doc, dict) else doc, allow_unicode=True)
    _lint_never_crashes(text, tmp_path_factory.mktemp("fuzz"))
