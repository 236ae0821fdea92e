"""Plain Django Tasks, run by litejobs through its Tasks backend."""

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the django-tasks backport
    from django_tasks import task


@task
def add(a: int, b: int) -> int:
    return a + b


@task(takes_context=True)
def which_attempt(context, label: str) -> int:
    return context.attempt


@task
def explode(message: str) -> None:
    raise ValueError(message)
