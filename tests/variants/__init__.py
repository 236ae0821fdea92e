"""Settings modules of the test project, changed the way a new user might (real `manage.py`
processes run with them: see tests/processes/test_startup.py)."""
