"""Settings of the litejobs demo marketplace. Environment is read here only (django-environ).

``PRODUCTION=true`` runs it as a deployment would: behind HTTPS only (redirects, HSTS, secure
cookies), mail over SMTP, and every secret from the environment (``SECRET_KEY``,
``DEMO_WEBHOOK_SECRET``; none of the demo's defaults), so that ``manage.py check --deploy``
is clean. Without it, the demo runs on plain http://localhost as ``make demo`` serves it.
"""

from pathlib import Path

import django
import environ
from django.core.exceptions import ImproperlyConfigured

from project.database import database_url

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

PRODUCTION = env.bool("PRODUCTION", default=False)
DEMO_SECRET_KEY = "litejobs-demo-not-secret"  # noqa: S105 - refused in production below
SECRET_KEY = env("SECRET_KEY", default=None if PRODUCTION else DEMO_SECRET_KEY)
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "pgtrigger",
    # TOTP devices: finance confirms bulk money actions with a code from a phone.
    "django_otp",
    "django_otp.plugins.otp_totp",
    "litejobs",
    "project.demo",
    "project.orders",
    "project.payments",
    "project.payouts",
    "project.partners",
    "project.catalog",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # request.user.is_verified() / otp_device; the admin does not require OTP at login (only
    # bulk money actions ask for a code, at confirmation).
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "project.urls"
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
WSGI_APPLICATION = None
# HTTP and the work-queue pages' websockets (project/asgi.py). Live updates need no channel
# layer: each web process LISTENs to PostgreSQL itself (litejobs.live), so no Redis and no
# CHANNEL_LAYERS setting.
ASGI_APPLICATION = "project.asgi.application"

DATABASES = {"default": env.db_url_config(database_url(env("DATABASE_URL", default=None)))}
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TASKS = {"default": {"BACKEND": "litejobs.tasks.LitejobsBackend"}}

LITEJOBS = {
    # Every key is optional; docs/reference/settings.md lists each with its default.
    # Outside production the demo delivers webhooks to its own partner view (project.partners)
    # on this machine; in production every endpoint must be a public host.
    "WEBHOOK_ALLOWED_HOSTS": [] if PRODUCTION else ["127.0.0.1", "localhost", "::1"],
    # The partner takes at most 600 webhooks a minute: deliveries (the webhooks queue) never
    # start more in any minute, however many workers run.
    "QUEUE_RATES": {"webhooks": {"limit": 600, "per": "1m"}},
    # /metrics answers signed-in staff, and a scraper sending this bearer token when it is set.
    "METRICS_TOKEN": env("METRICS_TOKEN", default=None),
}
# The signing secret the demo's webhook endpoint and its partner receiver share.
DEMO_WEBHOOK_DEFAULT = "whsec_litejobs_demo_not_secret"  # refused in production (below)
DEMO_WEBHOOK_SECRET = env(
    "DEMO_WEBHOOK_SECRET", default=None if PRODUCTION else DEMO_WEBHOOK_DEFAULT
)

# The issuer authenticator apps show beside the finance user's demo TOTP device.
OTP_TOTP_ISSUER = "litejobs demo"
# The admin never shows a saved device's key or QR code: a session that could read it could
# clone the finance phone (litejobs.W060 warns when bulk money actions exist without this).
OTP_ADMIN_HIDE_SENSITIVE_DATA = True

# The demo prints its emails (receipts) to the console; in production they go over SMTP.
if PRODUCTION:
    MAILER = {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {
            "host": env("EMAIL_HOST", default="localhost"),
            "port": env.int("EMAIL_PORT", 25),
        },
    }
else:
    MAILER = {"BACKEND": "django.core.mail.backends.console.EmailBackend"}
if django.VERSION >= (6, 1):
    MAILERS = {"default": MAILER}
else:
    EMAIL_BACKEND = MAILER["BACKEND"]
    EMAIL_HOST = env("EMAIL_HOST", default="localhost")
    EMAIL_PORT = env.int("EMAIL_PORT", 25)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / ".litejobs" / "static"
# Uploaded and imported files (the vendor catalog's CSV): beside the embedded database, in
# LITEJOBS_HOME (.litejobs/ by default, which git ignores).
MEDIA_ROOT = Path(env("LITEJOBS_HOME", default=str(BASE_DIR / ".litejobs"))) / "media"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "litejobs": {"handlers": ["console"], "level": env("LITEJOBS_LOG_LEVEL", default="INFO")}
    },
}

if PRODUCTION:
    # Refuse to run in production with the demo's well-known secrets or with DEBUG.
    if DEBUG:
        raise ImproperlyConfigured("PRODUCTION=true cannot run with DEBUG=true: unset DEBUG.")
    for name, value in (("SECRET_KEY", SECRET_KEY), ("DEMO_WEBHOOK_SECRET", DEMO_WEBHOOK_SECRET)):
        if not value or value in (DEMO_SECRET_KEY, DEMO_WEBHOOK_DEFAULT):
            raise ImproperlyConfigured(
                f"PRODUCTION=true needs {name} from the environment (not the demo's default): "
                "generate one with python -c 'import secrets; print(secrets.token_urlsafe(50))'."
            )
    # HTTPS only: every http request is redirected, browsers remember it (HSTS), and cookies
    # never travel over plain http. Behind a TLS-terminating proxy that sets
    # X-Forwarded-Proto, set SECURE_PROXY_SSL_HEADER=true (only then: the header is trusted).
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    if env.bool("SECURE_PROXY_SSL_HEADER", default=False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
