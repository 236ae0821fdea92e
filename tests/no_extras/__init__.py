"""A project that installs litejobs alone (see ``settings``): jobs, a schedule, a subscriber."""
