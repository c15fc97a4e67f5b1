"""Azul Arena: an exact Azul referee, sandboxed bots, tournaments and ratings."""

__version__ = "0.1.0"
