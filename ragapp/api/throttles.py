"""Rate limits of the API, read from settings at request time (so tests and deployments can
change them without re-importing DRF's settings)."""

import logging

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle

logger = logging.getLogger(__name__)


class _CacheOutage:
    """What a throttle does while its cache (Redis, with RAG_REDIS_URL) is unreachable."""

    fail_open = False  # True: let requests through uncounted; False: refuse them for now

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception as exc:  # the cache backend's connection errors
            logger.warning("throttle %s: cache unreachable (%s)", self.scope, exc)
            self.history, self.now = [], 0.0
            return self.fail_open

    def wait(self):
        return super().wait() if self.history else 5.0


class RunCreationThrottle(_CacheOutage, UserRateThrottle):
    """Runs started per user (RAG_API_RUN_RATE); a 429 carries Retry-After.

    While the cache is down, runs are let through uncounted: refusing every question for a cache
    outage would be worse than a few over the limit.
    """

    scope = "runs"
    fail_open = True

    def get_rate(self):
        return settings.RAG_API_RUN_RATE


class TokenObtainThrottle(_CacheOutage, SimpleRateThrottle):
    """Token requests per client address, right password or wrong (RAG_API_TOKEN_RATE).

    Failed ones are also counted with the portal's and the admin's sign-ins, per address and per
    username from that address (ragapp/sign_in_throttle.py). While the cache is down, attempts
    are refused (429): uncounted password guessing is not let through.
    """

    scope = "token"

    def get_rate(self):
        return settings.RAG_API_TOKEN_RATE

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
