"""``arena doctor``: which sandbox layers this machine has, where builds are cached, and which
rules engine build runs."""

from __future__ import annotations

import argparse

from rich.markup import escape

from arena.commands.output import console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor",
        help="show which sandbox layers are available",
        description=(
            "Detect each sandbox layer (bubblewrap, seccomp, separate uid, rlimits, cgroups, "
            "process group) and print it as on/off with the reason; also where built bots "
            "are cached, and which rules engine runs (the compiled build or the pure-Python "
            "one, and why). Exit status 1 if `--sandbox strict` would refuse to run."
        ),
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.engine import ENGINE_BUILD
    from arena.play.build import describe_cache
    from arena.sandbox import detect_layers

    layers = detect_layers()
    for layer in layers:
        mark = "[green]on [/green]" if layer.on else "[red]off[/red]"
        console.print(f"{mark} {layer.name:<14} {layer.reason}")
    console.print(f"\n{escape(describe_cache())}")
    console.print(f"Rules engine: {escape(ENGINE_BUILD)}")
    missing = [layer.name for layer in layers if not layer.on]
    if missing:
        console.print(
            f"\nRunning with {len(layers) - len(missing)}/{len(layers)} layers; "
            "`--sandbox strict` would refuse to run."
        )
        return 1
    console.print("\nAll sandbox layers are on: `--sandbox strict` will run.")
    return 0
