"""One module per ``arena`` command: ``register(subparsers)`` adds its parser (help,
description, options) and ``run(args) -> int`` calls into the package that does the work.
The registry of commands, in the order ``arena --help`` lists them, is ``arena.cli``."""
