"""Failed sign-ins are limited per address and per username from that address, on every password
check: the portal's sign-in, the admin's, the password change form and POST /api/token."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from ragapp import sign_in_throttle

pytestmark = pytest.mark.django_db

PASSWORD = "pw-owner-123"
ATTACKER = "203.0.113.66"
ELSEWHERE = "198.51.100.7"
START = 1_000_000.0  # 100 s into a 300 s window (999_900 to 1_000_200)
WAIT = 200  # seconds from START to the end of its window


class FakeClock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def limits(settings, fresh_cache, monkeypatch):
    """Small limits, a clock that only moves when told, and no per-address request limit on
    POST /api/token (RAG_API_TOKEN_RATE), so only failed sign-ins are under test."""
    settings.RAG_LOGIN_WINDOW_SECONDS = 300
    settings.RAG_LOGIN_FAILURES_PER_USERNAME = 3
    settings.RAG_LOGIN_FAILURES_PER_IP = 10
    settings.RAG_API_TOKEN_RATE = None
    clock = FakeClock(START)
    monkeypatch.setattr(sign_in_throttle, "clock", clock)
    return clock


@pytest.fixture
def owner(django_user_model, settings):
    # A fast hasher: these tests check dozens of passwords (PBKDF2 takes 0.4 s each here).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return django_user_model.objects.create_user("owner", password=PASSWORD, is_staff=True)


def portal(username, password, ip):
    body = {"username": username, "password": password}
    return Client().post("/accounts/login/", body, REMOTE_ADDR=ip)


def admin_site(username, password, ip):
    body = {"username": username, "password": password}
    return Client().post("/admin/login/", body, REMOTE_ADDR=ip)


def api(username, password, ip, **headers):
    body = {"username": username, "password": password}
    return APIClient().post("/api/token", body, format="json", REMOTE_ADDR=ip, **headers)


SIGN_INS = [portal, admin_site, api]
SIGNED_IN = {portal: 302, admin_site: 302, api: 200}
WRONG_PASSWORD = {portal: 200, admin_site: 200, api: 400}


def assert_signed_in(sign_in, response):
    assert response.status_code == SIGNED_IN[sign_in], response.content[:300]


def assert_wrong_password(sign_in, response):
    assert response.status_code == WRONG_PASSWORD[sign_in], response.content[:300]


def assert_refused(sign_in, response, wait=WAIT):
    assert response.status_code == 429
    assert response["Retry-After"] == str(wait)
    if sign_in is api:
        assert response.json() == {
            "detail": f"Too many failed sign-ins. Expected available in {wait} seconds."
        }
    else:  # the form again, saying why and for how long
        body = response.content.decode()
        assert f"Too many failed sign-ins; try again in {wait} s." in body
        assert 'name="password"' in body


def fail(sign_in, times, ip=ATTACKER, usernames=("owner",)):
    for n in range(times):
        response = sign_in(usernames[n % len(usernames)], "wrong-guess", ip)
        assert_wrong_password(sign_in, response)


@pytest.mark.parametrize("sign_in", SIGN_INS)
def test_an_address_is_blocked_after_n_failures_even_with_the_right_password(sign_in, owner):
    fail(sign_in, 3)
    assert_refused(sign_in, sign_in("owner", PASSWORD, ATTACKER))


@pytest.mark.parametrize("sign_in", SIGN_INS)
def test_the_owner_signs_in_from_another_address_while_the_guesser_is_blocked(sign_in, owner):
    fail(sign_in, 3)

    assert_refused(sign_in, sign_in("owner", "another-guess", ATTACKER))
    assert_signed_in(sign_in, sign_in("owner", PASSWORD, ELSEWHERE))


@pytest.mark.parametrize("sign_in", SIGN_INS)
def test_one_address_is_limited_across_usernames(sign_in, owner, settings):
    settings.RAG_LOGIN_FAILURES_PER_IP = 5
    # Two tries at each of many usernames: under the per-username limit, over the per-address one.
    fail(sign_in, 4, usernames=["alice", "bob"])
    # Signing in to one's own account does not reset the address's count for guessing at others.
    assert_signed_in(sign_in, sign_in("owner", PASSWORD, ATTACKER))
    fail(sign_in, 1, usernames=["carol"])

    assert_refused(sign_in, sign_in("dave", "a-guess", ATTACKER))
    assert_refused(sign_in, sign_in("owner", PASSWORD, ATTACKER))
    assert_signed_in(sign_in, sign_in("owner", PASSWORD, ELSEWHERE))


@pytest.mark.parametrize("sign_in", SIGN_INS)
def test_a_successful_sign_in_clears_the_count_for_that_username_and_address(sign_in, owner):
    fail(sign_in, 2)
    assert_signed_in(sign_in, sign_in("owner", PASSWORD, ATTACKER))

    fail(sign_in, 3)  # counted from zero again: the third is still checked
    assert_refused(sign_in, sign_in("owner", PASSWORD, ATTACKER))


def test_the_block_ends_with_its_window(owner, limits):
    fail(portal, 3)
    limits.now = START + WAIT - 1
    assert_refused(portal, portal("owner", PASSWORD, ATTACKER), wait=1)

    limits.now = START + WAIT
    assert_signed_in(portal, portal("owner", PASSWORD, ATTACKER))


def test_usernames_count_whatever_their_letter_case(owner):
    fail(portal, 3, usernames=["Owner", "OWNER", "owner"])
    assert_refused(portal, portal("owner", PASSWORD, ATTACKER))


def test_csrf_failures_and_incomplete_forms_check_no_password_and_are_not_counted(owner):
    csrf_checked = Client(enforce_csrf_checks=True)
    for _ in range(5):
        response = csrf_checked.post(
            "/accounts/login/", {"username": "owner", "password": "x"}, REMOTE_ADDR=ATTACKER
        )
        assert response.status_code == 403
        assert portal("owner", "", ATTACKER).status_code == 200  # "This field is required."
        assert portal("", "x", ATTACKER).status_code == 200
        assert api("owner", "", ATTACKER).status_code == 400

    fail(portal, 3)  # so only these count
    assert_refused(portal, portal("owner", PASSWORD, ATTACKER))


def test_all_password_checks_share_one_count(owner):
    fail(portal, 1)
    fail(admin_site, 1)
    fail(api, 1)
    assert_refused(portal, portal("owner", PASSWORD, ATTACKER))
    assert_refused(api, api("owner", PASSWORD, ATTACKER))


def test_wrong_old_passwords_at_password_change_count_as_failed_sign_ins(owner):
    client = Client()
    client.force_login(owner)

    def change(old_password):
        new = "n3w-Secret!x"
        form = {"old_password": old_password, "new_password1": new, "new_password2": new}
        return client.post("/accounts/password_change/", form, REMOTE_ADDR=ATTACKER)

    for _ in range(3):
        wrong = change("wrong-guess")
        assert wrong.status_code == 200 and "entered incorrectly" in wrong.content.decode()
    refused = change(PASSWORD)

    assert refused.status_code == 429 and refused["Retry-After"] == str(WAIT)
    assert f"Too many failed sign-ins; try again in {WAIT} s." in refused.content.decode()
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD)  # unchanged
    assert_refused(portal, portal("owner", PASSWORD, ATTACKER))


def test_forwarded_for_counts_only_behind_a_trusted_proxy(owner, settings):
    # No proxy configured: a client that claims other addresses is still one address.
    for n in range(3):
        response = api("owner", "wrong-guess", ATTACKER, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
        assert_wrong_password(api, response)
    assert_refused(api, api("owner", PASSWORD, ATTACKER, HTTP_X_FORWARDED_FOR="192.0.2.9"))

    # Behind one proxy, the address it appends is the client's: two clients, two counts.
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy, guesser = "10.0.0.2", "192.0.2.77"
    for _ in range(3):
        assert_wrong_password(api, api("owner", "x", proxy, HTTP_X_FORWARDED_FOR=guesser))
    assert_refused(api, api("owner", PASSWORD, proxy, HTTP_X_FORWARDED_FOR=guesser))
    assert_signed_in(api, api("owner", PASSWORD, proxy, HTTP_X_FORWARDED_FOR=ELSEWHERE))


def test_an_ipv6_client_counts_as_its_slash_64(owner):
    for n in range(3):
        assert_wrong_password(portal, portal("owner", "wrong-guess", f"2001:db8:0:1::{n + 1}"))

    assert_refused(portal, portal("owner", PASSWORD, "2001:db8:0:1::beef"))
    assert_signed_in(portal, portal("owner", PASSWORD, "2001:db8:0:2::1"))


class UnreachableCache:
    def get_many(self, keys):
        raise ConnectionError("Redis is down")


def test_while_the_cache_is_unreachable_passwords_are_not_checked(owner, monkeypatch):
    monkeypatch.setattr(sign_in_throttle, "cache", UnreachableCache())

    response = api("owner", PASSWORD, ELSEWHERE)
    assert response.status_code == 429 and response["Retry-After"] == "5"
    assert response.json()["detail"].startswith("Sign-in is unavailable for a moment.")
    page = portal("owner", PASSWORD, ELSEWHERE)
    assert page.status_code == 429
    assert "Sign-in is unavailable for a moment; try again in 5 s." in page.content.decode()
