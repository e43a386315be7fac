"""A scheduler that exits is started again by the harness, as its Deployment would restart it
(LocalControlPlane.revive, run every second by TidalCluster). MindCluster's plugin ended
vc-scheduler with a panic on the super-pod day; left down, the day bound nothing more and two
runs recorded no figures at all. A planned restart (`restart`, from a thread) is never doubled."""
from __future__ import annotations

from homing_e2e.cluster import LocalControlPlane

PROGRAM = "/bin/sh"  # an absolute path: `run` looks for any other program in e2e/.bin


def test_a_program_that_exits_is_started_again_with_its_arguments(tmp_path):
    cp = LocalControlPlane(tmp_path)
    cp.run("scheduler", ["-c", "echo up; sleep 0.6; exit 3"], binary=PROGRAM)
    first = cp.procs["scheduler"]
    assert cp.revive("scheduler") is None  # running: left alone
    first.wait(timeout=10)
    assert cp.revive("scheduler") == 3
    second = cp.procs["scheduler"]
    assert second is not first
    second.wait(timeout=10)
    log = (tmp_path / "scheduler.log").read_text()
    assert log.count("up\n") == 2  # the same arguments, the log going on in the same file
    assert "exited with code 3; started again by the harness" in log


def test_a_program_restart_is_replacing_is_left_to_it(tmp_path):
    cp = LocalControlPlane(tmp_path)
    cp.run("scheduler", ["-c", "sleep 0.5"], binary=PROGRAM)
    first = cp.procs["scheduler"]
    first.wait(timeout=10)
    with cp.replacing:  # `restart` between stopping the old process and starting the new one
        assert cp.revive("scheduler") is None
    assert cp.procs["scheduler"] is first
