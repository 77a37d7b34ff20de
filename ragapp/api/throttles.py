"""Rate limits of the API, read from settings at request time (so tests and deployments can
change them without re-importing DRF's settings)."""

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle


class RunCreationThrottle(UserRateThrottle):
    """Runs started per user (RAG_API_RUN_RATE); a 429 carries Retry-After."""

    scope = "runs"

    def get_rate(self):
        return settings.RAG_API_RUN_RATE


class TokenObtainThrottle(SimpleRateThrottle):
    """Password attempts per client address (RAG_API_TOKEN_RATE)."""

    scope = "token"

    def get_rate(self):
        return settings.RAG_API_TOKEN_RATE

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class TokenUsernameThrottle(TokenObtainThrottle):
    """Password attempts per username, from any number of addresses (RAG_API_TOKEN_RATE)."""

    scope = "token-user"

    def get_cache_key(self, request, view):
        username = request.data.get("username") if hasattr(request.data, "get") else None
        if not isinstance(username, str) or not username:
            return None  # nothing to guess at; the serializer rejects the request
        return self.cache_format % {"scope": self.scope, "ident": username.lower()[:150]}
