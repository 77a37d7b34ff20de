"""Local model servers started by a test module are stopped when the module ends."""

import pytest

from ragapp.providers import local_llm
from ragapp.providers.chat import clear_chat_models_cache


@pytest.fixture(scope="module", autouse=True)
def stop_local_servers_after_the_module():
    """A module may share its llama.cpp servers between its tests, but not with later modules.

    A server left in the process-wide registry would hold its memory and threads for the rest of
    the session, and make a later module's "nothing is loaded" check depend on the test order
    (which pytest-xdist changes from run to run).
    """
    yield
    clear_chat_models_cache()  # clients of those servers, left by a test that failed midway
    # Dropping the last reference to its handle is what stops an xllamacpp server.
    local_llm._servers.clear()
    local_llm._readers.clear()
