"""What error reports (the debug page, mailed error reports) may show of settings and requests.

Django's own filter hides a setting whose *name* looks secret (`SECRET_KEY`, `PASSWORD`, ...).
Here the secrets also hide inside values: `DATABASE_URL`, `RAG_REDIS_URL`, `CELERY_BROKER_URL` and
the cache's `LOCATION` are URLs with the password in them, under names that look harmless. So
every string a report shows is also stripped of the credentials in any URL it contains.
"""

import re

from django.views.debug import SafeExceptionReporterFilter

# scheme://userinfo@ : the userinfo runs to the last "@" before the host's end ("/", "?", "#",
# whitespace), as urllib splits it, so a password with a stray "@" is hidden whole.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^/?#\s]*)@")


def _mask_userinfo(match: re.Match) -> str:
    user, has_password, _ = match["userinfo"].partition(":")
    # user:password keeps the user, which helps to read the report; a lone userinfo may itself be
    # the secret (https://TOKEN@host), so it goes whole.
    hidden = SafeExceptionReporterFilter.cleansed_substitute
    masked = f"{user}:{hidden}" if has_password else hidden
    return f"{match['scheme']}{masked}@"


def strip_url_credentials(text: str) -> str:
    """`text` with the user information of every URL in it masked."""
    return _URL_USERINFO.sub(_mask_userinfo, text)


class UrlCredentialsFilter(SafeExceptionReporterFilter):
    """Django's filter, plus: no password inside a URL-valued setting or request header."""

    def cleanse_setting(self, key, value):
        # Django's version hides secret-named keys and recurses into dicts, lists and tuples
        # through this method, so nested values (DATABASES, CACHES) come back here one by one.
        value = super().cleanse_setting(key, value)
        if isinstance(value, str):
            return strip_url_credentials(value)
        return value
