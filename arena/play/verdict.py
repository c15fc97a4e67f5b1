"""check-bot's findings in words, written once: ``arena check-bot`` prints them and a
hosted competition keeps them in the submission's log, so an author reads the same
sentences in both places.

``terminal=True`` gives rich markup (bot text escaped, labels aligned and coloured, the
last lines of a stderr tail); ``terminal=False`` gives plain lines for a log (the whole
tail).  Bot-controlled text always goes through :func:`arena.textsafe.visible`.
"""

from __future__ import annotations

from rich.markup import escape

from arena.engine.record import FaultRecord
from arena.play.checkbot import CheckReport, advice, spread
from arena.referee.clock import TimeControl
from arena.textsafe import visible

TERMINAL_TAIL_LINES = 5
"""Lines of a stderr tail shown on a terminal (a log keeps the whole tail)."""


def _safe(text: str, terminal: bool, *, multiline: bool = False) -> str:
    shown = visible(text, multiline=multiline)
    return escape(shown) if terminal else shown


def fault_evidence(fault: FaultRecord, indent: str, *, terminal: bool) -> list[str]:
    """A fault's last line and stderr tail (what the bot wrote), made safe to show."""
    lines = []
    if fault.last_message:
        lines.append(f"{indent}last line: {_safe(fault.last_message, terminal)}")
    if fault.stderr_tail:
        tail = visible(fault.stderr_tail.strip(), multiline=True).split("\n")
        if terminal:
            tail = tail[-TERMINAL_TAIL_LINES:]
        body = "\n".join(f"{indent}  {line}" for line in tail)
        lines.append(f"{indent}stderr tail:\n" + (escape(body) if terminal else body))
    return lines


def check_lines(report: CheckReport, time_control: TimeControl, *, terminal: bool) -> list[str]:
    """Timings, problems, faults with their evidence and advice, and warnings."""
    lines = _measurements(report, time_control, terminal)
    for problem in report.problems:  # may quote the build's output: bot-controlled
        lines.append(_tagged("problem", "red", _safe(problem, terminal, multiline=True), terminal))
    for where, fault in report.faults:
        text = f"in the {where}, round {fault.round}: {_safe(fault.message, terminal)}"
        lines.append(f"  [red]{fault.kind}[/red] {text}" if terminal else f"{fault.kind} {text}")
        lines += fault_evidence(fault, "      " if terminal else "  ", terminal=terminal)
    indent = "  " if terminal else ""
    for kind in dict.fromkeys(fault.kind for _, fault in report.faults):
        lines.append(f"{indent}how to fix {kind}: {_safe(advice(kind, report.language), terminal)}")
    for note in report.explanations():  # quotes the bot's line
        lines.append(f"{indent}why: {_safe(note, terminal)}")
    for warning in report.warnings():
        lines.append(_tagged("warning", "yellow", _safe(warning, terminal), terminal))
    return lines


def _measurements(report: CheckReport, tc: TimeControl, terminal: bool) -> list[str]:
    facts: list[tuple[str, str]] = []
    if report.spawn_ms is not None:
        facts.append(("start", f"{report.spawn_ms:.0f} ms (sandboxed spawn)"))
    if report.handshake_ms is not None:
        who = ", ".join(f"{k} {v}" for k, v in report.reported.items() if v)
        charged = report.handshake_charged_ms
        if charged is not None and report.clock == "cpu":
            cost = f"charged {charged:.0f} ms of cpu time, {report.handshake_ms:.0f} ms wall"
        elif report.clock == "wall":
            cost = f"{report.handshake_ms:.0f} ms wall time, charged"
        else:
            cost = f"{report.handshake_ms:.0f} ms wall"
        facts.append(("handshake", f"{cost} (limit {tc.init_ms} ms); says: {_safe(who, terminal)}"))
    if report.games:
        mean = sum(report.scores) / len(report.scores)
        played = ", ".join(f"{n}p {wall}" for n, wall in report.played)
        count = f"{report.games} of {report.planned}" if report.planned > report.games else ""
        count = count or str(report.games)
        facts.append(
            (
                "games",
                f"{count} vs random ({played}): {report.wins} won, mean score {mean:.1f}",
            )
        )
    charged_spread = report.charged()
    if charged_spread:
        facts.append(
            (
                "charged time",
                f"{_spread_text(charged_spread)} per decision on the {report.clock} clock "
                f"(limit: {tc.describe()})",
            )
        )
    latency = report.latency()
    if latency and report.clock == "cpu":
        facts.append(("wall time", f"{_spread_text(latency)} (not charged on the cpu clock)"))
    if report.cpu_ms and report.clock == "wall":
        cpu = spread(report.cpu_ms)
        assert cpu is not None
        facts.append(("CPU time", f"{_spread_text(cpu)} (not charged on the wall clock)"))
    return [f"  {label:<14} {text}" if terminal else f"{label} {text}" for label, text in facts]


def _spread_text(spread: tuple[float, float, float]) -> str:
    med, p95, worst = spread
    return f"median {med:.2f} ms, p95 {p95:.2f} ms, max {worst:.2f} ms"


def _tagged(label: str, colour: str, text: str, terminal: bool) -> str:
    """``problem``/``warning`` lines: coloured on a terminal (continuations indented)."""
    if terminal:
        return f"  [{colour}]{label}[/{colour}] " + text.replace("\n", "\n      ")
    return f"{label}: " + text.replace("\n", "\n  ")


def first_problem(report: CheckReport) -> str:
    """The reason a failed check failed, in one line (a submission's verdict)."""
    if report.problems:
        return report.problems[0].splitlines()[0]
    if report.faults:
        where, fault = report.faults[0]
        return f"{fault.kind} in the {where}, round {fault.round}: {fault.message}"
    return "no game was played"


def passed(report: CheckReport) -> str:
    """What a passed check played, in one line."""
    return (
        f"passed check-bot ({report.games} games, {played_settings(report)}, "
        f"{report.wins} won against the random policy)"
    )


def played_settings(report: CheckReport) -> str:
    """The player counts and walls a check played, in words ("2-4 players, both
    walls"; a check limited to a bot's or a competition's games says so)."""
    counts = sorted({n for n, _ in report.played}) or [2, 3, 4]
    walls = sorted({w for _, w in report.played}) or ["coloured", "gray"]
    if counts == list(range(counts[0], counts[-1] + 1)) and len(counts) > 1:
        players = f"{counts[0]}-{counts[-1]} players"
    elif len(counts) == 1:
        players = f"{counts[0]} players"
    else:
        players = " and ".join(str(n) for n in counts) + " players"
    wall = "both walls" if len(walls) == 2 else f"{walls[0]} wall"
    return f"{players}, {wall}"
