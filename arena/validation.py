"""Settings errors in the arena's words: pydantic's messages for a file or the command
line, with "did you mean" for a misspelt setting (one wording for every config file)."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError


def explain_validation(
    exc: ValidationError, source: str, model: type[BaseModel], whole: str = "config"
) -> str:
    """One line per error, ``SOURCE: FIELD: what is wrong``; an unknown key names the
    closest known one of its table (:func:`difflib.get_close_matches`) or lists them."""
    lines = []
    for err in exc.errors():
        loc = err["loc"]
        field = ".".join(str(p) for p in loc) or whole
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden" and loc:
            msg = unknown_key(str(loc[-1]), known_keys(model, loc[:-1]))
        lines.append(f"{source}: {field}: {msg}")
    return "\n".join(lines)


def unknown_key(key: str, known: list[str]) -> str:
    """``unknown setting; did you mean `variants`?`` (or the known ones, when none is close)."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"unknown setting; did you mean `{close[0]}`?"
    if known:
        return "unknown setting; known here: " + ", ".join(sorted(known))
    return "unknown setting"


def known_keys(model: type[BaseModel], path: tuple[int | str, ...]) -> list[str]:
    """The keys a table at ``path`` inside ``model`` accepts (its fields' names or aliases)."""
    current: type[BaseModel] | None = model
    for part in path:
        if current is None:
            return []
        if isinstance(part, int):
            continue  # an item of a list: the same model
        info = current.model_fields.get(part) or next(
            (f for f in current.model_fields.values() if f.alias == part), None
        )
        current = _model_in(info.annotation) if info is not None else None
    if current is None:
        return []
    return [info.alias or name for name, info in current.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (``M``, ``M | None``, ``list[M]``...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return None
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
