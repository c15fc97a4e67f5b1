"""Game records of a tournament folder, for ``arena replay`` and viewers (read-only)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import ValidationError

from arena.engine import GameRecord
from arena.store.tournament import Store, StoreError, store_location


def stored_records(folder: Path, game_ids: Sequence[str] = ()) -> Iterator[tuple[str, GameRecord]]:
    """(``folder:game_id``, record) of every finished game in schedule order (streamed),
    or only ``game_ids``. Raises ``StoreError`` for an unusable folder, an unknown game id
    or an invalid stored record."""
    try:
        store = Store(store_location(folder), readonly=True)
    except StoreError as exc:
        raise StoreError(f"{folder}: not a record file nor a tournament folder ({exc})") from None
    with store:  # a damaged store or record: the store's StoreError says so
        unknown = [g for g in game_ids if store.game_index_of(g) is None]
        if unknown:
            raise StoreError(f"{folder}: no game {sorted(unknown)[0]!r} in this tournament")
        for game_id, data in store.records(game_ids):
            try:
                record = GameRecord.model_validate_json(data)
            except ValidationError as exc:
                raise StoreError(
                    f"{folder}: stored record of {game_id} is invalid: {exc}"
                ) from None
            yield f"{folder}:{game_id}", record
