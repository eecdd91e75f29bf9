"""The wheel carries the board, topology, template, schema and IP data libraries and works
alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import pytest

from .conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(out), str(ROOT)], check=True)
    [path] = out.glob("optnet-*.whl")
    return path


def test_wheel_contains_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("optnet/_data/boards/vc707.yaml", "optnet/_data/topologies/bee3_two_x4.yaml",
                 "optnet/_data/templates/docs/format.md.j2",
                 "optnet/_data/schema/cluster.schema.json", "optnet/_data/ipdata/link_ip.yaml",
                 "optnet/_data/examples/ulx3s_ring4.yaml", "optnet/cli.py"):
        assert name in names
    shipped = {p.name for p in (ROOT / "boards").glob("*.yaml")}
    assert shipped == {n.rsplit("/", 1)[1] for n in names
                       if n.startswith("optnet/_data/boards/")}


def test_installed_wheel_works_from_any_directory(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
                    "--target", str(target), str(wheel)], check=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "ring.yaml").write_text(
        "optnet: 1\nname: ring\ndefaults: {board: vc707, link: {line_rate: 10Gbps}}\n"
        "topology: {kind: ring, nodes: 4}\n")
    env = {**os.environ, "PYTHONPATH": str(target)}

    def optnet(*args):
        return subprocess.run([sys.executable, "-m", "optnet", *args], cwd=work, env=env,
                              capture_output=True, text=True, check=False)

    probe = subprocess.run([sys.executable, "-c", "import optnet; print(optnet.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    assert probe.stdout.startswith(str(target))
    boards = optnet("boards", "--format", "json")
    assert boards.returncode == 0
    assert "vc707" in {row["name"] for row in json.loads(boards.stdout)}
    assert optnet("lint", "ring.yaml").returncode == 0
    assert json.loads(optnet("topologies", "--format", "json").stdout)
    assert optnet("--version").stdout.strip() == "optnet, version 0.1.0"
    # the examples ship in the wheel: a new user starts from one without the checkout
    assert "ulx3s_ring4" in {row["name"] for row in json.loads(
        optnet("examples", "--format", "json").stdout)}
    assert optnet("init", "--from", "plasticnet_ring4").returncode == 0
    assert optnet("lint", "plasticnet_ring4.yaml").returncode == 0
