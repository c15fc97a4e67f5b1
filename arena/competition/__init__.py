"""A competition over the one core: its definition (``competition.toml``) and the ladder,
an open-ended scheduler whose games run through :mod:`arena.play` and land in the
competition store. ``arena serve`` is a web front over it and runs no game itself."""
