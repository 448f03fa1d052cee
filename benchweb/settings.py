"""benchweb settings: every value comes from the environment, with defaults that run a fresh checkout.

Every variable read here is listed, with a comment, in `.env.example`.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

from benchweb.secretfiles import read_or_create

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("BENCHWEB_VAR_DIR", BASE_DIR / "var")).resolve()


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("BENCHWEB_DEBUG", False)

# Secrets that nobody configured are generated once into 0600 files under var/, so a fresh
# checkout runs and restarts keep working; a multi-machine deployment sets them explicitly.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or read_or_create(VAR_DIR / "secret_key", "django")
FIELD_KEYS_FROM_ENV = bool(os.environ.get("BENCHWEB_FIELD_KEYS"))
FIELD_KEYS_FILE = VAR_DIR / "field_keys"
FIELD_KEYS = env_list("BENCHWEB_FIELD_KEYS", "") or read_or_create(FIELD_KEYS_FILE, "fernet").split(",")

ALLOWED_HOSTS = env_list("BENCHWEB_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("BENCHWEB_CSRF_TRUSTED_ORIGINS", "")
# Where people reach this site: the links an alert carries to e-mail, webhooks and chat (no request there).
PUBLIC_URL = os.environ.get("BENCHWEB_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")

# Behind TLS (a reverse proxy or load balancer terminating HTTPS): secure cookies, HSTS, redirect plain HTTP.
# `manage.py check --deploy` is clean with BENCHWEB_BEHIND_TLS=1 (tests/stack/test_security.py runs it).
BEHIND_TLS = env_bool("BENCHWEB_BEHIND_TLS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT = BEHIND_TLS
SECURE_HSTS_SECONDS = int(os.environ.get("BENCHWEB_HSTS_SECONDS", "31536000")) if BEHIND_TLS else 0
# Only when every subdomain is served over HTTPS too; set both to 0 otherwise (see .env.example).
SECURE_HSTS_INCLUDE_SUBDOMAINS = BEHIND_TLS and env_bool("BENCHWEB_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = BEHIND_TLS and env_bool("BENCHWEB_HSTS_PRELOAD", True)
if BEHIND_TLS and env_bool("BENCHWEB_TRUST_X_FORWARDED_PROTO", True):
    # The proxy says which scheme the browser used; it must strip this header from client requests.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # the container health check speaks plain HTTP on the inside
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# Content-Security-Policy: scripts and styles from this site only. Inline style *attributes* are allowed
# (the calendar positions its bars with them); inline scripts, style elements and eval are not.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Sign-in lockout (django-axes): after this many failures for one username from one address, that pair is
# locked out for the cool-off; a successful sign-in resets the count.
AXES_FAILURE_LIMIT = int(os.environ.get("BENCHWEB_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("BENCHWEB_LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "axes",
    "csp",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "jobs",
    "jobs.api",
    "audit",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Each page in its reader's time zone (jobs.clock); after authentication, which it reads.
    "jobs.middleware.TimeZoneMiddleware",
    # A RecursionError out of a view (data nested too deeply to read) answered with 400, not a server error.
    "jobs.middleware.TooDeepMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses sign-ins while a username + address is locked out
    # Django's ModelBackend, loading the person's Preferences (time zone) with them: no extra query per page.
    "jobs.teams.backends.ModelBackendWithPreferences",
    # Sessions signed in before the one above existed name this backend; listed so they stay signed in.
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "benchweb.urls"
WSGI_APPLICATION = "benchweb.wsgi.application"

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
                "jobs.context_processors.current_team",
                "jobs.context_processors.clock",
            ],
            # Every template writes times with jobs.templatetags.times (|when), so it needs no {% load %}.
            "builtins": ["jobs.templatetags.times"],
        },
    },
]

# Each web process's own memory: the overview's and disk pages' rendered parts (jobs/results/page_cache.py, keys
# read from the database, so no process needs another's entries) and the share links' guess counts. Bounded: the
# oldest entries go past MAX_ENTRIES (a kept part is 10-100 KB: at most some 30 MB a process).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "OPTIONS": {"MAX_ENTRIES": 300},
    }
}

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'benchweb.sqlite3'}",
        conn_max_age=int(os.environ.get("BENCHWEB_DB_CONN_MAX_AGE", "60")),
        # A kept connection that the server dropped is noticed before it is used, not by a failed query.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server, the worker and beat write to one SQLite file at once: WAL lets readers
    # go on during a write, and IMMEDIATE transactions wait for the lock instead of failing.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    # A file, not pytest's in-memory default, so that Celery workers started by tests share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
BENCHWEB_ALLOW_SIGNUP = env_bool("BENCHWEB_ALLOW_SIGNUP", True)

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("BENCHWEB_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise expects it; files come from the finders
NODE_MODULES = BASE_DIR / "node_modules"
# Front-end libraries come from npm (package.json); only their built files are served.
VENDOR_BUILDS = {
    "chart.js": "dist",
    "chartjs-plugin-annotation": "dist",
    "chartjs-plugin-zoom": "dist",
}
# hammerjs (touch gestures for the zoom plugin) has no dist/ folder: its package root also holds sources and an
# old test page with jQuery, which must not be served from this origin. Only its built file is linked into a
# folder of its own under var/.
VENDOR_FILES = {"hammerjs": ["hammer.min.js"]}
STATICFILES_DIRS = [BASE_DIR / "static"] + [
    (f"vendor/{name}", NODE_MODULES / name / build)
    for name, build in VENDOR_BUILDS.items()
    if (NODE_MODULES / name / build).is_dir()
]
for _name, _files in VENDOR_FILES.items():
    _folder = VAR_DIR / "vendor-files" / _name
    _folder.mkdir(parents=True, exist_ok=True)
    for _file in _files:
        if (NODE_MODULES / _name / _file).is_file() and not (_folder / _file).exists():
            (_folder / _file).symlink_to(NODE_MODULES / _name / _file)
    STATICFILES_DIRS.append((f"vendor/{_name}", _folder))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True

# The API (api/): personal tokens (Authorization: Bearer ...) or the browser session with its CSRF check.
# Request bodies are read into memory up to this size (Django's default is 2.5 MiB). An import takes up to
# MAX_IMPORT_CHARS (2,000,000) characters, which a form post (percent-encoded, up to 3 bytes a character) or a
# JSON body (escaped) can make several times larger; 16 MiB leaves that to the import's own limit, with its
# message. Larger bodies get 413 with the limit and the way round it (jobs/errors.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 2**20

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "jobs.api.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "jobs.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "jobs.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "jobs.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON bodies only: a form cannot say null, so its schema would promise what it cannot carry. The import
    # endpoint adds multipart for files. DRF's parser with a nesting limit (jobs/nesting.py).
    "DEFAULT_PARSER_CLASSES": ["jobs.api.parsers.JSONParser"],
}
# OpenAPI 3 at /api/schema/, Swagger UI at /api/docs/, its files served from here (drf-spectacular-sidecar).
# Texts in the schema are Markdown on the docs page: a bare <token> would be dropped as an HTML tag, so headers
# go in code spans.
SPECTACULAR_SETTINGS = {
    "TITLE": "benchweb API",
    "DESCRIPTION": "Hosts, disks, profiles, schedules, runs and results of one team. Authenticate with "
    "`Authorization: Bearer <token>` (`POST /api/v1/tokens/` makes one) or the browser session.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Fields named "state" or "kind" with different choices (a run's state, its steady-state stamp, an alert's kind
    # beside a credential's or an annotation's) get names of their own.
    "ENUM_NAME_OVERRIDES": {
        "RunStateEnum": "jobs.models.Run.State",
        "AlertKindEnum": "jobs.models.alerts.Kind",
        "SteadyStateEnum": ["steady", "not_steady", "not_checked"],
        "ShareLinkKindEnum": "jobs.models.ShareLink.Kind",
        "ShareLinkStateEnum": ["active", "expired", "revoked"],
        "CompareMetricEnum": ["iops", "bandwidth", "read_p99", "write_p99"],
        "RunSetKindEnum": "jobs.models.RunSet.Kind",
        "RunSetStateEnum": "jobs.models.RunSet.State",
        "SweepOnFailureEnum": "jobs.models.RunSet.OnFailure",
        "ProfileToolEnum": "jobs.models.Profile.Tool",
        "ImportToolEnum": ["auto", "fio", "ndisk64"],
        # Who judged a steady state, and who synchronised a group: the same two names.
        "FioOrBenchwebEnum": ["benchweb", "fio"],
    },
}

# With no REDIS_URL the run command starts an embedded redis-server on this socket.
REDIS_SOCKET = VAR_DIR / "redis.sock"
REDIS_URL = os.environ.get("REDIS_URL") or f"redis+socket://{REDIS_SOCKET}"
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker waits for its broker as long as it takes (Redis restarting, a host rebooting) instead of exiting
# after 100 attempts; benchweb.celery keeps a restart from ending it while it holds a message.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TIMEZONE = "UTC"
# Celery's Django fix-up closes every database connection around every task unless this is set; then it
# recycles them only every 2 x this many tasks, and benchweb.celery applies Django's own per-request rule
# (CONN_MAX_AGE, health checks) around each task instead. A short poll or tick then reuses its thread's
# PostgreSQL connection rather than paying a new one (~4 ms, a tenth of a busy tick).
CELERY_DB_REUSE_MAX = 1000
# Runs of hosts with a site go to the queue site.<name>; everything else to this one.
CELERY_TASK_DEFAULT_QUEUE = "celery"
# A worker that also consumes site.<name> for every site a host has, added as hosts get sites (jobs/runs/sites.py);
# `./bw run` sets it for its one worker, which reaches every host from this machine.
WORKER_EVERY_SITE = os.environ.get("BENCHWEB_WORKER_EVERY_SITE", "0") == "1"
# Seconds between the beat's alerts sweeps (stale disks, and alerts whose hook was missed).
ALERTS_SWEEP_SECONDS = float(os.environ.get("BENCHWEB_ALERTS_SWEEP_SECONDS", "60"))
# Seconds between the beat's ticks; the beat schedule itself is declared with the Celery app (benchweb/celery.py).
TICK_SECONDS = float(os.environ.get("BENCHWEB_TICK_SECONDS", "5"))
# Prometheus: GET /metrics answers a team's API token with that team's series; this token, when set, scrapes
# every team (give Prometheus a long random value, e.g. from `openssl rand -hex 32`).
METRICS_TOKEN = os.environ.get("BENCHWEB_METRICS_TOKEN", "").strip()
# Grafana: with both set, every new change point and annotation is posted to Grafana as an annotation (by a
# worker, never holding up the run or the page that made it). The token is a service account's, role Editor.
GRAFANA_URL = os.environ.get("BENCHWEB_GRAFANA_URL", "").strip().rstrip("/")
GRAFANA_TOKEN = os.environ.get("BENCHWEB_GRAFANA_TOKEN", "").strip()

# Retention: with BENCHWEB_RETENTION_DAYS set, a daily beat entry drops the raw output and per-second samples
# of runs older than that (manage.py prune_results does the same by hand); summaries and charts stay.
RETENTION_DAYS = int(os.environ.get("BENCHWEB_RETENTION_DAYS") or 0)

# Alerts reach people through the team's channels (jobs/notify/): a worker sends each delivery, retrying a failed
# one after each of these waits in turn (seconds), then gives up. A channel whose last CHANNEL_DEAD_AFTER attempts
# all failed is shown as dead. A beat entry re-sends deliveries whose message was lost (Redis restarted).
DELIVERY_RETRY_SECONDS = [float(wait) for wait in env_list("BENCHWEB_DELIVERY_RETRY_SECONDS", "30,120,600,3600")]
CHANNEL_DEAD_AFTER = int(os.environ.get("BENCHWEB_CHANNEL_DEAD_AFTER", "3"))
WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("BENCHWEB_WEBHOOK_TIMEOUT_SECONDS", "10"))
# A webhook or Apprise URL may name any host, so benchweb judges the addresses it resolves to, when a channel is
# saved and again before each delivery (jobs/egress.py): cloud metadata and link-local addresses never; loopback,
# private, CGNAT, multicast and reserved ones only inside these networks (comma-separated, e.g. 127.0.0.0/8).
CHANNEL_ALLOW_NETWORKS = env_list("BENCHWEB_CHANNEL_ALLOW_NETWORKS", "")
# Seconds between the beat's sweeps for deliveries whose message was lost.
DELIVERY_SWEEP_SECONDS = float(os.environ.get("BENCHWEB_DELIVERY_SWEEP_SECONDS", "30"))
# The SMTP server alert e-mails go through (Django's own settings, read from variables of the same names).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = int(os.environ.get("EMAIL_TIMEOUT", "10"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "benchweb@localhost")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("BENCHWEB_LOG_LEVEL", "INFO")},
    # django-axes logs every sign-in at INFO; lockouts still show at WARNING.
    "loggers": {"paramiko": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}
