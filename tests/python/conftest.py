"""Shared by the python tests (tests/python, run by CTest: cmake/python.cmake).

A session in which every test was skipped exits 77, which CTest shows as
skipped (SKIP_RETURN_CODE), with pytest's -rs lines giving the reasons.
"""
import pytest


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != 0:
        return
    stats = reporter.stats
    if stats.get("skipped") and not stats.get("passed") and not stats.get("failed") and not stats.get("error"):
        session.exitstatus = 77


@pytest.fixture(scope="module")
def comm():
    """The communicator of the job xccl-run started (Comm.from_env)."""
    import xccl
    c = xccl.Comm.from_env()
    yield c
    c.destroy()
