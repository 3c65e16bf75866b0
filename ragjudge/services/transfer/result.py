"""What an import reports (no SQLAlchemy here: the lean run import reports it too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


Progress = Callable[..., None]
"""``progress(done, total_or_None, description, unit="bytes")``, called now and then (see
:mod:`ragjudge.cli.progress`): bytes of a file read, or entries, lines, records written."""


@dataclass
class ImportResult:
    """What an import did (all counts are lines or rows of the one file)."""

    kind: str
    file: str
    read: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    created_queries: int = 0
    created_chunks: int = 0
    run: str | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        what = f"run '{self.run}'" if self.run else self.kind
        parts = [f"{self.added:,} added"]
        if self.updated:
            parts.append(f"{self.updated:,} updated")
        if self.unchanged:
            parts.append(f"{self.unchanged:,} already in the project")
        text = f"{self.file}: {what}: {self.read:,} read, " + ", ".join(parts) + "."
        if self.created_queries or self.created_chunks:
            text += (f" Created {self.created_queries:,} placeholder queries and "
                     f"{self.created_chunks:,} placeholder chunks (empty text).")
        for note in self.notes:
            text += " " + note
        return text
