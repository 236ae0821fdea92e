"""Settings of the litejobs demo marketplace. Environment is read here only (django-environ)."""

from pathlib import Path

import django
import environ

from project.database import database_url

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

SECRET_KEY = env("SECRET_KEY", default="litejobs-demo-not-secret")
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
    # Every key is optional; see litejobs/conf.py and the README for the defaults.
    # The demo delivers webhooks to its own partner view (project.partners) on this machine.
    "WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1", "localhost", "::1"],
}
# The signing secret the demo's webhook endpoint and its partner receiver share.
DEMO_WEBHOOK_SECRET = env("DEMO_WEBHOOK_SECRET", default="whsec_litejobs_demo_not_secret")

# The issuer authenticator apps show beside the finance user's demo TOTP device.
OTP_TOTP_ISSUER = "litejobs demo"
# The admin never shows a saved device's key or QR code: a session that could read it could
# clone the finance phone (litejobs.W060 warns when bulk money actions exist without this).
OTP_ADMIN_HIDE_SENSITIVE_DATA = True

# The demo prints its emails (receipts) to the console.
if django.VERSION >= (6, 1):
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / ".litejobs" / "static"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "litejobs": {"handlers": ["console"], "level": env("LITEJOBS_LOG_LEVEL", default="INFO")}
    },
}
