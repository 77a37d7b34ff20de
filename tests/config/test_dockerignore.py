"""`.dockerignore`: local state never reaches the image, and everything the app needs does.

Docker cannot run here, so the file is read with Docker's rules: one pattern a line, `#` starts a
comment line, `*` and `?` stay within one path segment, `**` spans any number of them, a pattern
that matches a folder excludes everything in it, and the last matching line wins (`!` re-includes).
"""

import re
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)


def _segment_regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out.append(pattern[i : end + 1])
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def dockerignore_rules() -> list[tuple[bool, re.Pattern]]:
    """(excludes, regex) per line of .dockerignore, in order."""
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.lstrip("!").strip().strip("/")
        rules.append((not negated, re.compile(_segment_regex(pattern) + r"\Z")))
    return rules


def is_excluded(path: str, rules) -> bool:
    """Whether Docker leaves `path` (relative, with /) out of the build context."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for excludes, regex in rules:
        if any(regex.match(prefix) for prefix in prefixes):
            excluded = excludes
    return excluded


def test_the_matcher_reads_patterns_as_docker_does():
    rules = [
        (True, re.compile(_segment_regex("**/__pycache__") + r"\Z")),
        (True, re.compile(_segment_regex("docs/*.md") + r"\Z")),
        (False, re.compile(_segment_regex("docs/keep.md") + r"\Z")),
    ]
    assert is_excluded("__pycache__/x.pyc", rules) and is_excluded("a/b/__pycache__/x", rules)
    assert is_excluded("docs/api.md", rules) and not is_excluded("docs/keep.md", rules)
    assert not is_excluded("docs/sub/api.md", rules) and not is_excluded("mydocs/api.md", rules)


def test_local_state_secrets_and_caches_stay_out_of_the_image():
    rules = dockerignore_rules()
    must_stay_out = [
        ".data/secret_key",  # the generated Django secret key
        ".data/pgdata/global/pg_control",  # the embedded database: users, password hashes, runs
        ".data/staticfiles/admin/css/base.css",
        ".venv/bin/python",
        ".git/config",
        ".env",
        "ragapp/__pycache__/views.cpython-312.pyc",
        "config/settings.pyc",
        ".pytest_cache/v/cache/lastfailed",
        ".ruff_cache/CACHEDIR.TAG",
        "tests/artifacts/replay.png",
    ]
    kept = [path for path in must_stay_out if not is_excluded(path, rules)]
    assert not kept, f".dockerignore lets these into the image: {kept}"


def _files_under(folder: Path):
    for path in folder.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path.relative_to(ROOT).as_posix()


def test_everything_the_image_needs_is_in_the_build_context():
    rules = dockerignore_rules()
    # What the Dockerfile copies by name, then what the app runs from after `COPY . .`.
    dockerfile = (ROOT / "Dockerfile").read_text()
    copied_by_name = re.search(r"^COPY (.+) \./$", dockerfile, re.MULTILINE).group(1).split()
    assert "uv.lock" in copied_by_name
    needed = [*copied_by_name, "manage.py"]
    for folder in ("config", "ragapp", "ingestion", "templates", "static", "docs"):
        needed.extend(_files_under(ROOT / folder))
    assert len(needed) > 50  # the folders were found
    left_out = [path for path in needed if is_excluded(path, rules)]
    assert not left_out, f".dockerignore leaves out files the image needs: {left_out[:10]}"


def test_the_image_turns_debug_off_itself():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ENV DJANGO_DEBUG=false$", dockerfile, re.MULTILINE)
