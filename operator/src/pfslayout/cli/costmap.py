"""`pfslayout costmap` — placeholder until its issue lands; registers nothing yet."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    return None
