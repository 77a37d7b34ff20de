"""Errors shown to users keep their cause and lose the server's addresses and paths."""

import pytest

from ragapp.trace.redaction import error_for, public_message


@pytest.mark.parametrize(
    ("message", "leaked", "kept"),
    [
        (
            "ChatModelError: the chat model server at http://10.0.0.5:8080/v1/chat/completions "
            "failed with HTTP 500 (Internal Server Error)",
            ["10.0.0.5", "8080", "/v1/chat"],
            ["ChatModelError", "HTTP 500", "chat model server"],
        ),
        (
            'OperationalError: connection to server on socket "/srv/rag/.data/pgsock/.s.PGSQL.5432"'
            " failed",
            ["/srv/rag", ".s.PGSQL"],
            ["OperationalError", "failed"],
        ),
        (
            "ConnectError: [Errno 111] Connection refused (models.internal.example.com:11434)",
            ["models.internal.example.com", "11434"],
            ["Connection refused"],
        ),
        (
            "ModelFileError: /opt/app/.venv/lib/python3.12/site-packages/x/model.gguf is 3 bytes",
            ["/opt/app", "site-packages"],
            ["ModelFileError", "is 3 bytes"],
        ),
        (
            r"FileNotFoundError: C:\rag\data\secret_key",
            [r"C:\rag"],
            ["FileNotFoundError"],
        ),
    ],
)
def test_addresses_and_paths_are_withheld_and_the_cause_kept(message, leaked, kept):
    public = public_message(message)
    for piece in leaked:
        assert piece not in public, public
    for piece in kept:
        assert piece in public, public


def test_plain_causes_pass_unchanged():
    for message in (
        "JudgeError: grade_docs: malformed structured output twice",
        "The run never started: it waited in the queue for more than 900 s.",
        "ValueError: ratio 0.5 and/or 2.4 are out of range",
    ):
        assert public_message(message) == message


class User:
    def __init__(self, is_staff):
        self.is_staff = is_staff


def test_staff_read_the_whole_error():
    error = "ChatModelError: the server at http://10.0.0.5:8080/v1 failed"
    assert error_for(User(True), error) == error
    assert "10.0.0.5" not in error_for(User(False), error)
    assert "10.0.0.5" not in error_for(None, error)
