"""Settings of the test suite: litejobs with its extras and the test apps, and nothing of the demo
project (whose own tests run on ``tests.demo.settings``).

The database is ``DATABASE_URL``'s or the suite's embedded server's (``tests/database.py``).
Processes a test starts receive their ``LITEJOBS`` settings through the environment
(``LITEJOBS_<KEY>``: ``tests/conftest.py``).
"""

import os
import tempfile

from litejobs.conf import DEFAULTS
from tests import database

SECRET_KEY = "litejobs-tests-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1", "[::1]"]

INSTALLED_APPS = [
    # runserver serves ASGI (HTTP and the live work-queue pages' websockets) through daphne.
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "pgtrigger",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "litejobs",
    "tests.testapp",
    "tests.outboxapp",
]
# Rolling-deploy tests start workers of an "old" and a "new" release of tests.release's jobs.
if os.environ.get("LITEJOBS_TEST_RELEASE"):
    INSTALLED_APPS = [*INSTALLED_APPS, "tests.release"]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # request.user.is_verified() and its device: bulk money actions confirm with a TOTP code.
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
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
ASGI_APPLICATION = "tests.asgi.application"
STATIC_URL = "static/"

DATABASES = {"default": database.settings_from_url(database.database_url())}
# Several test runs may share one server: LITEJOBS_TEST_DB gives each its own test database.
if os.environ.get("LITEJOBS_TEST_DB"):
    DATABASES["default"]["TEST"] = {"NAME": os.environ["LITEJOBS_TEST_DB"]}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
# Files the ingest tests import (real worker processes are told the same directory).
MEDIA_ROOT = os.environ.get("LITEJOBS_TEST_MEDIA_ROOT") or os.path.join(
    tempfile.gettempdir(), "litejobs-test-media"
)

TASKS = {"default": {"BACKEND": "litejobs.tasks.LitejobsBackend"}}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The admin never shows a saved TOTP device's key (litejobs.W060 warns without this).
OTP_ADMIN_HIDE_SENSITIVE_DATA = True


def _from_environment(key: str, default):
    value = os.environ[f"LITEJOBS_{key}"]
    if isinstance(default, bool):
        return value.lower() in ("1", "true", "yes")
    return type(default)(value) if isinstance(default, int) else value


LITEJOBS = {
    key: _from_environment(key, default)
    for key, default in DEFAULTS.items()
    if f"LITEJOBS_{key}" in os.environ
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "litejobs": {
            "handlers": ["console"],
            "level": os.environ.get("LITEJOBS_LOG_LEVEL", "WARNING"),
        }
    },
}
