"""docker-compose.yml: no built-in password, both services behind one, the site on loopback.

Docker cannot run here: the file is loaded as YAML (PyYAML comes with drf-spectacular) and its
`${...}` references are resolved the way compose resolves them, so the test sees what compose
would run with a given environment.
"""

import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings

COMPOSE = Path(settings.BASE_DIR) / "docker-compose.yml"
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}; $$ is a literal $.
REFERENCE = re.compile(r"\$\$|\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")

SECRETS = {
    "DJANGO_SECRET_KEY": "django-key-for-the-test",
    "POSTGRES_PASSWORD": "pg-pw-for-the-test",
    "REDIS_PASSWORD": "redis-pw-for-the-test",
}


class MissingVariable(Exception):
    pass


def resolve(value, env: dict[str, str]):
    """`value` from the YAML with every ${...} replaced, as compose would."""
    if isinstance(value, dict):
        return {k: resolve(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match["name"], match["op"] or "", match["arg"] or ""
        unset = name not in env if not op.startswith(":") else not env.get(name)
        if op.endswith("?") and unset:
            raise MissingVariable(name)
        if op.endswith("-") and unset:
            return arg
        return env.get(name, "")

    return REFERENCE.sub(substitute, value)


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_start_without_each_secret(raw, missing):
    env = {name: value for name, value in SECRETS.items() if name != missing}
    with pytest.raises(MissingVariable) as refused:
        resolve(raw, env)
    assert str(refused.value) == missing


def test_every_credential_comes_from_the_environment(raw):
    resolved = resolve(raw, SECRETS)
    services = resolved["services"]
    app_env = services["web"]["environment"]
    pg, redis = SECRETS["POSTGRES_PASSWORD"], SECRETS["REDIS_PASSWORD"]

    assert services["db"]["environment"]["POSTGRES_PASSWORD"] == pg
    assert app_env["DATABASE_URL"] == f"postgresql://rag:{pg}@db:5432/rag"
    assert app_env["RAG_REDIS_URL"] == f"redis://:{redis}@redis:6379/0"
    command = services["redis"]["command"]
    assert command[command.index("--requirepass") + 1] == redis
    assert app_env["DJANGO_SECRET_KEY"] == SECRETS["DJANGO_SECRET_KEY"]
    assert app_env["DJANGO_DEBUG"] == "false"
    for name in ("migrate", "worker"):  # one environment for every app service
        assert services[name]["environment"] == app_env


def test_no_password_is_written_in_the_file():
    text = COMPOSE.read_text()
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    # A URL's password and POSTGRES_PASSWORD must each be a ${...:?...} reference.
    url_passwords = re.findall(r"://[^:/@\s]*:(\$\{[^}]*\}|[^@\s/]*)@", body)
    assert len(url_passwords) == 2  # DATABASE_URL's and RAG_REDIS_URL's
    for url_password in url_passwords:
        assert re.fullmatch(r"\$\{\w+:\?[^}]+\}", url_password), url_password
    assert re.search(r"POSTGRES_PASSWORD: \$\{POSTGRES_PASSWORD:\?[^}]+\}", body)
    assert "rag:rag" not in body


def test_only_the_web_port_is_published_and_on_loopback_by_default(raw):
    services = resolve(raw, SECRETS)["services"]
    published = {name: s["ports"] for name, s in services.items() if s.get("ports")}
    assert published == {"web": ["127.0.0.1:8000:8000"]}
    wider = resolve(raw, {**SECRETS, "WEB_PUBLISH": "0.0.0.0:8080"})["services"]["web"]["ports"]
    assert wider == ["0.0.0.0:8080:8000"]  # configurable, on purpose only


def test_the_comment_at_the_top_says_what_to_set(raw):
    header = COMPOSE.read_text().split("\nx-app:", 1)[0]
    for name in (*SECRETS, "WEB_PUBLISH", "127.0.0.1"):
        assert name in header, name


def test_every_app_process_writes_metrics_into_one_directory_that_starts_empty(raw):
    resolved = resolve(raw, SECRETS)
    services = resolved["services"]
    directory = services["web"]["environment"]["PROMETHEUS_MULTIPROC_DIR"]

    for name in ("migrate", "web", "worker"):
        assert f"metrics:{directory}" in services[name]["volumes"], name
    # In memory, and emptied by the service that runs before the others.
    assert resolved["volumes"]["metrics"]["driver_opts"]["type"] == "tmpfs"
    assert services["migrate"]["command"][-1].startswith(f"rm -rf {directory}/* && ")


def test_metrics_stay_closed_unless_a_scraper_is_named(raw):
    closed = resolve(raw, SECRETS)["services"]["web"]["environment"]
    assert closed["RAG_METRICS_TOKEN"] == "" and closed["RAG_METRICS_ALLOWED_NETWORKS"] == ""
    token = "a-token-of-sixteen-chars"
    named = resolve(raw, {**SECRETS, "RAG_METRICS_TOKEN": token})["services"]["web"]
    assert named["environment"]["RAG_METRICS_TOKEN"] == token
