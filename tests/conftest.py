"""Test-suite wide settings."""

# Bot programs used as fixtures are not test modules (and must not be imported).
collect_ignore_glob = ["*/fixtures/*"]
