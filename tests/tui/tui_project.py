"""A small project built in the test: 4 queries, 14 chunks, 2 runs of depth 5, a 0-3 scale."""

from __future__ import annotations

from ragjudge.models import Scale
from ragjudge.services.project.database import Project
from ragjudge.store.schema import Chunk, Query, Run, RunEntry

GUIDELINES = "# Judging guidelines\n\nGrade how well the chunk answers the query.\n\n- 3: answers it fully\n- 0: unrelated\n"
MARKUP_CHUNK = "Refunds [bold red]x[/] take \x1b[31mfive\x1b[0m days [link=http://e.x]click[/link]."

QUERIES = [
    ("q1", "How long does a refund take?", "Customer asks about refund timing.", "billing"),
    ("q2", "Track a parcel sent abroad", "International tracking numbers.", "tracking"),
    ("q3", "Can I change the delivery address?", None, "delivery"),
    ("q4", "What if my parcel arrives damaged?", "Damage claims.", "returns"),
]


def build_project(path, *, scale: str = "0-3", guidelines: str | None = GUIDELINES) -> Project:
    project = Project.init(str(path), scale=Scale.parse(scale), name="parcel help",
                           guidelines=guidelines)

    def seed(session) -> None:
        for qid, text, desc, cat in QUERIES:
            session.add(Query(id=qid, text=text, description=desc, category=cat))
        texts = {
            "c01": MARKUP_CHUNK,
            "c02": "A refund is issued to the original payment method within 5 working days.",
            "c03": "Tracking numbers for international parcels start with two letters.",
            "c04": "You can change the delivery address until the parcel leaves the depot.",
            "c05": "Damaged parcels: take photos and open a claim within 14 days.",
            "c06": "Our lockers are open around the clock.",
            "c07": "Weekend delivery costs extra in some postcodes.",
            "c08": "Customs duty is paid by the recipient on arrival.",
            "c09": "Refund status appears in your account under Orders.",
            "c10": "Redirecting a parcel to a neighbour is free.",
            "c11": "Insurance covers damage up to 500 euros.",
            "c12": "Parcels abroad are handed to a partner carrier at the border.",
            "c13": "Express parcels arrive the next working day.",
            "c14": "Returns are free within 30 days.",
        }
        for cid, text in texts.items():
            session.add(Chunk(id=cid, text=text, doc_id="doc-" + cid[-1]))
        session.add(Run(name="bm25"))
        session.add(Run(name="dense"))
        session.flush()
        ranked = {
            ("bm25", "q1"): ["c02", "c09", "c01", "c14", "c06"],
            ("dense", "q1"): ["c09", "c02", "c11", "c13", "c01"],
            ("bm25", "q2"): ["c03", "c12", "c08", "c13", "c06"],
            ("dense", "q2"): ["c12", "c03", "c10", "c08", "c07"],
            ("bm25", "q3"): ["c04", "c10", "c07", "c06", "c13"],
            ("dense", "q3"): ["c10", "c04", "c06", "c12", "c03"],
            ("bm25", "q4"): ["c05", "c11", "c14", "c02", "c09"],
            ("dense", "q4"): ["c11", "c05", "c14", "c06", "c08"],
        }
        for (run, qid), chunks in ranked.items():
            for rank, cid in enumerate(chunks, 1):
                session.add(RunEntry(run=run, query_id=qid, chunk_id=cid, rank=rank, score=10.0 - rank))

    project.write(seed)
    return project


def sync(test):
    """Run an ``async def`` test with asyncio.run (the suite has no async plugin)."""
    import asyncio
    import functools

    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return run
