"""A value of each kind that cannot work, for every ``LITEJOBS`` setting: the wrong type,
negative, zero, a nonsense string, a number too large, nothing, and bad values inside the
dict settings. The checks must name each, and nothing litejobs does at import may raise."""

from litejobs.checks import DURATION_SETTINGS, OUTBOX_DURATION_SETTINGS
from litejobs.conf import DEFAULTS

DURATIONS = {*DURATION_SETTINGS, *OUTBOX_DURATION_SETTINGS}
#: Kind of bad value -> the ``LITEJOBS`` dict with a value of that kind for every setting it
#: is invalid for (the setting's own where the common one would be valid).
BAD_VALUES = {
    "wrong type": {key: [1] for key in DEFAULTS},
    "negative": {key: "-5s" if key in DURATIONS else -1 for key in DEFAULTS},
    "zero": dict.fromkeys(DEFAULTS, 0),
    "nonsense": {
        **dict.fromkeys(DEFAULTS, "sixty"),
        "WEBHOOK_QUEUE": "bad queue!",
        "INGEST_QUEUE": "bad queue!",
        "REPORT_QUEUE": "bad queue!",
        "DEPLOYMENT": "   ",
    },
    "huge": dict.fromkeys(DEFAULTS, 10**20),
    "none": {key: None for key in DEFAULTS if key != "METRICS_TOKEN"},
    "inside a dict": {
        "DEFAULT_RETRY": {"attempts": 3, "give_up_on": 5},
        "WEBHOOK_RETRY": {"base": "1h", "max": "1m"},
        "RETENTION": {"done": "sixty"},
    },
}
