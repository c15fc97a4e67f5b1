"""Test-suite wide settings."""

import os

from hypothesis import settings

# Bot programs used as fixtures are not test modules (and must not be imported).
collect_ignore_glob = ["*/fixtures/*"]

# CI must be deterministic: the same examples on every run (`derandomize`), no example
# database carried between runs.  Locally the default profile explores new examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
