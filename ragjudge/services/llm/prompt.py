"""The LLM judge's prompt: its template, the values filled in, and the grade read back."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING
from ragjudge.errors import InputError, why_unusable


if TYPE_CHECKING:
    from ragjudge.models import Scale
    from ragjudge.services.project.database import Project


PLACEHOLDERS = ("query", "description", "chunk", "scale", "guidelines")


DEFAULT_TEMPLATE = """\
You are grading search results for a relevance test collection. Read a search query and one \
passage, and decide how useful the passage is to someone who typed that query.

The grades:
{scale}
{guidelines}
Query: {query}
What the searcher is after: {description}

Passage:
{chunk}

Work it out in two short steps before you grade:
M: what the searcher most likely wants to learn, given the query and what they are after;
T: how well the passage meets that need, and how far its content can be trusted.
Then choose one grade from the list above. Finish your answer with a line of exactly this form, \
N being the grade:
##final score: N
"""


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}\s]*)\}")


_FINAL = re.compile(r"#+\s*final\s*score\s*[:=]\s*\**\s*(-?\d+)", re.IGNORECASE)


_BARE = re.compile(r"\s*(-?\d+)\s*\.?\s*")


def load_template(spec: str) -> str:
    """The prompt template: ``umbrela`` (the default) or a UTF-8 file with ``{query}``,
    ``{description}``, ``{chunk}``, ``{scale}`` and ``{guidelines}`` (``{{``/``}}`` for
    braces). An unknown placeholder is refused, naming the file."""
    if spec == "umbrela":
        return DEFAULT_TEMPLATE
    path = Path(spec)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}).", file=spec) from None
    except OSError as exc:
        raise InputError(why_unusable(exc, path), file=spec,
                         hint="--prompt takes 'umbrela' or a template file.") from None
    unknown = sorted({m.group(1) for m in _PLACEHOLDER.finditer(text)
                      if m.group(1) is not None and m.group(1) not in PLACEHOLDERS})
    if unknown:
        raise InputError(
            f"the prompt template has the unknown placeholder{'s' if len(unknown) > 1 else ''} "
            f"{', '.join('{' + u + '}' for u in unknown)}; a template may use "
            f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)} (write {{{{ and }}}} for literal "
            "braces).", file=spec, field="prompt")
    if "{chunk}" not in text:
        raise InputError("the prompt template has no {chunk} placeholder: the model would never "
                         "see the passage it grades.", file=spec, field="prompt")
    return text


def render(template: str, values: dict[str, str]) -> str:
    """The template with its placeholders filled (``{{`` and ``}}`` become braces)."""
    def fill(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole in ("{{", "}}"):
            return whole[0]
        return values.get(match.group(1), whole)

    return _PLACEHOLDER.sub(fill, template)


def scale_text(scale: Scale) -> str:
    """The scale as the prompt lists it: one line per grade, with its name and meaning. A grade
    the project has not named (``Grade 4``, no description) is placed on the scale instead, so
    that the model is not left with names that say nothing (``ragjudge scale names`` names
    them)."""
    lines = []
    for level in scale.levels:
        meaning = f": {level.description}" if level.description else ""
        if scale.unnamed(level.grade):
            meaning = _place(scale, level.grade)
        lines.append(f"{level.grade} = {level.name}{meaning}")
    return "\n".join(lines)


def _place(scale: Scale, grade: int) -> str:
    if grade == scale.min:
        return ": the lowest grade, not relevant"
    if grade == scale.max:
        return ": the highest grade, the most relevant"
    if grade == scale.threshold:
        return ": the lowest grade that counts as relevant"
    return ""


def prompt_values(project: Project) -> dict[str, str]:
    """The parts of the prompt that are the same for every pair of the project."""
    guidelines = (project.get_setting("guidelines") or "").strip()
    return {
        "scale": scale_text(project.scale),
        "guidelines": f"\nThe project's guidelines for judging:\n{guidelines}\n" if guidelines else "",
    }


def parse_grade(answer: str | None, scale: Scale) -> int | None:
    """The grade an answer gives: its last ``##final score: N`` line, or the whole answer when
    it is a bare integer; None when it names no grade of ``scale`` (the answer is unparsed)."""
    if not answer:
        return None
    found = _FINAL.findall(answer)
    text = found[-1] if found else None
    if text is None:
        bare = _BARE.fullmatch(answer)
        text = bare.group(1) if bare else None
    if text is None or len(text.lstrip("-")) > 4:
        return None
    grade = int(text)
    return grade if scale.contains(grade) else None


def prompt_digest(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()


def pair_prompt(project: Project, template: str, fixed: dict[str, str], query_id: str,
                chunk_id: str) -> str:
    from ragjudge.services.labels.texts import chunk_text, query_text

    query = query_text(project, query_id)
    chunk = chunk_text(project, chunk_id)
    description = query.description or query.narrative or "(not given: judge by the query)"
    return render(template, {**fixed, "query": query.text, "description": description,
                             "chunk": chunk.text})
