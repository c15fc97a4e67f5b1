"""Sandbox tests: real subprocesses, real isolation."""
