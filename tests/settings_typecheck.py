"""Settings that mypy's django-stubs plugin loads: litejobs and the apps it builds on, no database.

The plugin imports these to learn the models; nothing connects, so no server is started.
"""

SECRET_KEY = "type-checking-only"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "pgtrigger",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "litejobs",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "litejobs"}}
USE_TZ = True
