"""pytest under mpiexec: every rank runs the same tests, which are collective.
A test that fails on one rank would leave the others waiting in the next
collective, so a failure (or an error) on any rank aborts the whole job at
once, with the failing rank's report printed first."""

import sys

import pytest
from mpi4py import MPI


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        rank = MPI.COMM_WORLD.rank
        sys.stderr.write(f"\n[rank {rank}] {item.nodeid} FAILED ({report.when}):\n{report.longreprtext}\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)


@pytest.fixture
def comm():
    return MPI.COMM_WORLD


@pytest.fixture
def rank():
    return MPI.COMM_WORLD.rank


@pytest.fixture
def size():
    return MPI.COMM_WORLD.size


def agree(value):
    """The same Python value on every rank (rank 0's), e.g. random data."""
    return MPI.COMM_WORLD.bcast(value, root=0)
