"""Benchmarks (`arena bench ...`): speed targets are checked here, never in unit tests."""
