"""pytest's root configuration.

With the compiled engine built, ``arena.engine.game`` is the C extension, and pytest cannot
collect the pure ``arena/engine/game.py`` (its doctests) under the same module name: it is
left out then; the pure pass (``ARENA_PURE_ENGINE=1``, as CI runs the suite) collects it.
"""

import arena.engine

collect_ignore = ["arena/engine/game.py"] if arena.engine.COMPILED else []
