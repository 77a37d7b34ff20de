"""Failed password checks, counted per client address and per username from that address.

Every view that checks a password goes through `SignInAttempt`: the portal's sign-in, the admin's,
the password change form and `POST /api/token`, so guessing on one of them counts against all.

Two counts, in Django's default cache (per process, or shared through Redis with RAG_REDIS_URL):

- per username *and* address: RAG_LOGIN_FAILURES_PER_USERNAME. Keyed on both, so failures from
  an attacker's address block that address only: the account's owner, elsewhere, still signs in.
- per address, whatever the username: RAG_LOGIN_FAILURES_PER_IP, so one client cannot spread its
  guesses over many accounts.

Counts live in fixed windows of RAG_LOGIN_WINDOW_SECONDS (an atomic `incr` per window, so
parallel guesses are all counted); a blocked client waits for its window to end. A blocked
attempt is refused without checking the password, so the block is no oracle, and is not counted.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import logging
import math
import time
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm
from django.contrib.auth.views import LoginView, PasswordChangeView
from django.core.cache import cache
from django.core.exceptions import ValidationError
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)

# What the windows are cut from; tests move it instead of sleeping.
clock = time.time

# While the cache is unreachable, attempts are refused (like POST /api/token's request limit):
# password checks that cannot be counted are not let through.
CACHE_OUTAGE_RETRY_SECONDS = 5


@dataclass(frozen=True)
class Refusal:
    reason: str
    retry_after: int  # seconds

    @property
    def message(self) -> str:
        return f"{self.reason}; try again in {self.retry_after} s."


def client_address(request) -> str:
    """The client's address exactly as the API's throttles take it (DJANGO_NUM_PROXIES).

    An IPv6 client counts as its /64: one host usually holds the whole block and could take a
    fresh address for every guess.
    """
    address = BaseThrottle().get_ident(request) or ""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _cache_key(kind: str, identity: object, window: int) -> str:
    # Hashed: usernames and forwarded addresses may hold characters cache keys must not.
    digest = hashlib.sha256(repr(identity).encode()).hexdigest()[:32]
    return f"sign-in-failures:{kind}:{digest}:{window}"


class SignInAttempt:
    """One password check for `username` from the request's client address."""

    def __init__(self, request, username: str):
        now = clock()
        length = settings.RAG_LOGIN_WINDOW_SECONDS
        window = int(now // length)
        self.window_ends_at = (window + 1) * length
        self.window_length = length
        address = client_address(request)
        # The form's normalisation (NFKC) and any letter case: "Owner" is no fresh username.
        username = unicodedata.normalize("NFKC", username).casefold()
        self.address_key = _cache_key("address", address, window)
        self.username_key = _cache_key("username", (username, address), window)

    def refusal(self) -> Refusal | None:
        """Why this attempt must not check the password, or None when it may."""
        try:
            counts = cache.get_many([self.address_key, self.username_key])
        except Exception as exc:  # the cache backend's connection errors
            logger.warning("sign-in throttle: cache unreachable (%s); refusing", exc)
            return Refusal("Sign-in is unavailable for a moment", CACHE_OUTAGE_RETRY_SECONDS)
        if (
            counts.get(self.address_key, 0) >= settings.RAG_LOGIN_FAILURES_PER_IP
            or counts.get(self.username_key, 0) >= settings.RAG_LOGIN_FAILURES_PER_USERNAME
        ):
            wait = max(1, math.ceil(self.window_ends_at - clock()))
            return Refusal("Too many failed sign-ins", wait)
        return None

    def record(self, *, authenticated: bool) -> None:
        """Count a wrong password; a right one clears this username's count from this address.

        The address's count stays: signing in to one's own account must not reset the budget
        for guessing at others.
        """
        try:
            if authenticated:
                cache.delete(self.username_key)
                return
            for key in (self.address_key, self.username_key):
                # `add` opens the window's count without resetting one another process opened.
                cache.add(key, 0, timeout=self.window_length)
                cache.incr(key)
        except Exception as exc:  # unreachable cache, or the count expired in between
            logger.warning("sign-in throttle: could not record an attempt (%s)", exc)


class SignInThrottleMixin:
    """For AuthenticationForm and its subclasses: refuse blocked attempts, count the others."""

    sign_in_refusal: Refusal | None = None

    def clean(self):
        username = self.cleaned_data.get("username")
        if username is None or not self.cleaned_data.get("password"):
            return super().clean()  # an incomplete form checks no password: no attempt
        attempt = SignInAttempt(self.request, username)
        self.sign_in_refusal = attempt.refusal()
        if self.sign_in_refusal:
            raise ValidationError(self.sign_in_refusal.message, code="throttled")
        try:
            cleaned = super().clean()
        except ValidationError:
            # The password may have been right for an account that may not sign in here
            # (inactive, or not staff at the admin): that is no failed guess.
            attempt.record(authenticated=self.user_cache is not None)
            raise
        attempt.record(authenticated=True)
        return cleaned


class PortalSignInForm(SignInThrottleMixin, AuthenticationForm):
    pass


class AdminSignInForm(SignInThrottleMixin, AdminAuthenticationForm):
    pass


class PasswordChangeThrottledForm(PasswordChangeForm):
    """The old password is checked like a sign-in: a stolen session is no free guessing oracle."""

    sign_in_refusal: Refusal | None = None

    def __init__(self, user, *args, request, **kwargs):
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self):
        attempt = SignInAttempt(self.request, self.user.get_username())
        self.sign_in_refusal = attempt.refusal()
        if self.sign_in_refusal:
            raise ValidationError(self.sign_in_refusal.message, code="throttled")
        try:
            old_password = super().clean_old_password()
        except ValidationError:
            attempt.record(authenticated=False)
            raise
        attempt.record(authenticated=True)
        return old_password


def answer_429_when_refused(view):
    """The view's page as usual, but with status 429 and Retry-After when its form refused."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        form = (getattr(response, "context_data", None) or {}).get("form")
        refusal = getattr(form, "sign_in_refusal", None)
        if refusal:
            response.status_code = 429
            response["Retry-After"] = str(refusal.retry_after)
        return response

    return wrapped


class _PasswordChangeView(PasswordChangeView):
    form_class = PasswordChangeThrottledForm

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "request": self.request}


portal_login = answer_429_when_refused(LoginView.as_view(authentication_form=PortalSignInForm))
password_change = answer_429_when_refused(_PasswordChangeView.as_view())


@answer_429_when_refused
def admin_login(request):
    """The admin's own sign-in view; config/urls.py gives the admin site AdminSignInForm."""
    return admin.site.login(request)
