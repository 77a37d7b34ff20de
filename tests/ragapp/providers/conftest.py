"""Local model servers started by a test module are stopped when the module ends."""

import gc

import pytest

from ragapp.providers import local_llm


@pytest.fixture(scope="module", autouse=True)
def stop_local_servers_after_the_module():
    """A module may share its llama.cpp servers between its tests, but not with later modules.

    A server left in the process-wide registry would hold its memory and threads for the rest of
    the session, and make a later module's "nothing is loaded" check depend on the test order
    (which pytest-xdist changes from run to run).
    """
    yield
    local_llm._servers.clear()
    local_llm._readers.clear()
    gc.collect()  # the handle going away is what stops an xllamacpp server
