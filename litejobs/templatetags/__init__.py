"""litejobs' template tags (the admin's dashboard)."""
