"""No error page shows a password, with DEBUG on or off: not even the debug page.

The passwords sit inside URL-valued settings (DATABASE_URL, RAG_REDIS_URL, CELERY_BROKER_URL, the
cache's LOCATION), whose names Django's own filter does not take for secrets, and in a request
header, which the debug page lists too.
"""

import pytest
from django.http import HttpResponse
from django.test import Client, override_settings
from django.urls import path

from config.error_reports import strip_url_credentials

DB_PASSWORD = "db-pw-4c1d"
REDIS_PASSWORD = "redis-pw-9e7f"
HEADER_PASSWORD = "header-pw-51ab"
PASSWORDS = (DB_PASSWORD, REDIS_PASSWORD, HEADER_PASSWORD)

REDIS_URL = f"redis://:{REDIS_PASSWORD}@redis.internal:6379/0"
SETTINGS_WITH_PASSWORDS = {
    "DATABASE_URL": f"postgresql://rag:{DB_PASSWORD}@db.internal:5432/rag",
    "RAG_REDIS_URL": REDIS_URL,
    "CELERY_BROKER_URL": REDIS_URL,
    "CACHES": {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    },
}


def fails(request):
    raise RuntimeError("this view always fails")


def works(request):
    return HttpResponse("fine")


urlpatterns = [path("fails/", fails), path("works/", works)]


@pytest.mark.parametrize("debug", [True, False], ids=["debug-on", "debug-off"])
@pytest.mark.parametrize(
    "url, host, status",
    [("/works/", "attacker.example", 400), ("/fails/", "testserver", 500)],
    ids=["wrong-host", "view-raises"],
)
def test_an_error_page_shows_no_password(debug, url, host, status):
    # The request goes nowhere near a database or Redis: the pages only print the settings.
    with override_settings(DEBUG=debug, ROOT_URLCONF=__name__, **SETTINGS_WITH_PASSWORDS):
        client = Client(raise_request_exception=False)
        response = client.get(
            url,
            HTTP_HOST=host,
            # Listed with the request's headers (under WSGI those include the environment).
            HTTP_X_UPSTREAM=f"https://deploy:{HEADER_PASSWORD}@ci.internal/hook",
        )
    assert response.status_code == status
    page = response.content.decode()
    if debug:  # the full debug page, with its settings and request sections
        assert "DATABASE_URL" in page and "redis.internal" in page and "X_UPSTREAM" in page
    leaked = [password for password in PASSWORDS if password in page]
    assert not leaked, f"passwords on the {status} page: {leaked}"


MASK = "********************"  # what Django's filter puts in place of a secret


@pytest.mark.parametrize(
    "text, expected",
    [
        ("postgresql://rag:s3cret@db:5432/rag", f"postgresql://rag:{MASK}@db:5432/rag"),
        ("redis://:s3cret@redis:6379/0", f"redis://:{MASK}@redis:6379/0"),
        ("https://TOKEN@github.com/x.git", f"https://{MASK}@github.com/x.git"),
        ("redis://:p@ss@redis/0", f"redis://:{MASK}@redis/0"),
        ("a://u:x@h/p, b://v:y@k", f"a://u:{MASK}@h/p, b://v:{MASK}@k"),
        ("redis://redis:6379/0 for user@example.com", "redis://redis:6379/0 for user@example.com"),
    ],
)
def test_url_credentials_are_masked_and_nothing_else(text, expected):
    assert strip_url_credentials(text) == expected
