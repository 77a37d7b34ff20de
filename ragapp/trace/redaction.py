"""What a user may read of an error: its cause, without the server's addresses or file paths.

A run's error is stored whole (`QueryRun.error`) for staff, who read it in the run page, the
API and the admin. Everyone else, and every trace event, gets this form: "the chat model server
at http://10.0.0.5:8080/v1 failed with HTTP 500" tells a user what happened without mapping the
deployment for them.
"""

from __future__ import annotations

import re

WITHHELD_ADDRESS = "[server address withheld]"
WITHHELD_PATH = "[path withheld]"

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"()<>]+", re.IGNORECASE)
# host:port, an IPv4 address, or a dotted host name with a port.
_HOST_PORT = re.compile(r"\b(?:[a-z0-9-]+\.)*[a-z0-9-]+:\d{2,5}\b", re.IGNORECASE)
_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
# An absolute path of two parts or more (a Unix socket, a data dir, a model file).
_POSIX_PATH = re.compile(r"(?<![\w.:/])/(?:[\w.@%+~-]+/)+[\w.@%+~-]*")
_WINDOWS_PATH = re.compile(r"\b[A-Z]:\\[^\s'\"]+")


def public_message(message: str) -> str:
    """`message` with URLs, host:port pairs, IP addresses and absolute paths withheld."""
    text = _URL.sub(WITHHELD_ADDRESS, message)
    text = _HOST_PORT.sub(WITHHELD_ADDRESS, text)
    text = _IPV4.sub(WITHHELD_ADDRESS, text)
    text = _POSIX_PATH.sub(WITHHELD_PATH, text)
    return _WINDOWS_PATH.sub(WITHHELD_PATH, text)


def error_for(user, error: str) -> str:
    """The run's error as `user` may read it: whole for staff, else its public form."""
    return error if getattr(user, "is_staff", False) else public_message(error)
