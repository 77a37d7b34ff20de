"""Fixtures shared by the ragapp tests."""

from tests.ragapp.live_server import server  # noqa: F401  (a fixture)
