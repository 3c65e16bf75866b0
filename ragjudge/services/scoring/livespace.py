"""Where the live evaluation keeps its numbers: the project's queries, its runs, every judged
(query, chunk) pair numbered once, each run's ranked chunks as pair numbers, and the pool.

:class:`PairSpace` holds

- the queries in the byte order of their ids (the row order of every evaluation context, so
  that means summed in that order are bit-for-bit the means ``ragjudge eval`` prints), with
  their categories and meta;
- every stored run, read once, and for each the row of each query in it and how many chunks
  it ranks there;
- *pairs*: every pair that labels, adjudications or a complete reference's closed world
  judged, numbered once (:class:`~ragjudge.services.scoring.livecore.LivePairs`, append-only),
  and each run's ranked chunks as pair numbers (:class:`RunLayout`: one hash lookup per entry,
  when the labels are first taken in);
- the pool, the union of every run's top :data:`POOL_DEPTH`: its pairs per query row (made
  when first asked: the ranges and the details pass ask, the first numbers do not), whether
  each numbered pair is in it, and per annotator how many of their labels fall in it.

A view's grades are one number per pair number, so a run's grade matrix is a gather from its
layout, not a lookup of every ranked chunk. Nothing here reads the database.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import select

from ragjudge.metrics import _keys
from ragjudge.metrics.data import Qrels, Run
from ragjudge.services.events.labels import NO_GRADE
from ragjudge.services.scoring.livecore import LivePairs, LiveView, RunLayout, encode_id_runs, encode_ids

if TYPE_CHECKING:
    from ragjudge.services.events.labels import CodedLabels
    from ragjudge.services.project.database import Project


POOL_DEPTH = 10
"""The pool is the union of every run's top ``POOL_DEPTH``."""


_Entries = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""Run entries as query ids, chunk ids, pair hashes and query rows (-1: a query not listed)."""


PARALLEL_CELLS = 200_000
"""From this many cells (run entries, or query x rank of a view) work is split over two threads
(numpy lets go of the interpreter in its array loops, so the second core does half of it)."""


_THREADS: ThreadPoolExecutor | None = None


_THREADS_LOCK = threading.Lock()


def worker_pool() -> ThreadPoolExecutor:
    """The two worker threads of the engines' large passes (made once per process; a task never
    waits on another task of the pool)."""
    global _THREADS
    with _THREADS_LOCK:
        if _THREADS is None:
            _THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ragjudge-eval")
        return _THREADS


@dataclass(frozen=True)
class Queries:
    """The project's queries in the byte order of their ids, with their facts."""

    ids: list[str]
    id_bytes: np.ndarray
    categories: list[str | None]
    meta: list[dict]

    @classmethod
    def none(cls) -> Queries:
        """No query (an engine before it loads)."""
        return cls([], _keys.as_ids([]), [], [])


def read_queries(project: Project) -> Queries:
    """Every query of ``project``, ordered by the bytes of its id."""
    from ragjudge.store.schema import Query

    with project.connect() as connection:
        rows = connection.execute(select(Query.id, Query.category, Query.meta)).all()
    ids = _keys.as_ids([r[0] for r in rows])
    order = (np.lexsort(_keys.words(ids).T[::-1]) if len(ids) else np.zeros(0, dtype=int)).tolist()
    return Queries([rows[i][0] for i in order], ids[order], [rows[i][1] for i in order],
                   [rows[i][2] if isinstance(rows[i][2], dict) else {} for i in order])


class PairSpace:
    """The queries, the runs, the numbered pairs and the runs' layouts, the pool (see the
    module's docstring). Built from the queries and runs; :meth:`number_labels` numbers the
    labels' pairs and lays the runs out."""

    def __init__(self, queries: Queries, runs: dict[str, Run]) -> None:
        self.query_ids = queries.ids
        self.query_bytes = queries.id_bytes
        self.categories = queries.categories
        self.meta = queries.meta
        self.row = {q: i for i, q in enumerate(self.query_ids)}
        self.query_hash = _keys.id_hash(self.query_bytes)
        self.runs = runs
        self.run_rows: dict[str, np.ndarray] = {}
        """run -> the run's row of each query row (-1: the run has no entry for it)"""
        self.run_lengths: dict[str, np.ndarray] = {}
        """run -> chunks it ranks for each query row"""
        for name, run in runs.items():
            rr = _keys.lookup(run.query_id_bytes, self.query_bytes)
            self.run_rows[name] = rr
            lengths = np.diff(run.offsets)
            self.run_lengths[name] = np.where(rr >= 0, lengths[np.maximum(rr, 0)], 0) \
                if len(lengths) else np.zeros(len(rr), dtype=np.int64)
        self.pairs = LivePairs(np.zeros(0, dtype=np.int64), _keys.as_ids([]), len(self.query_ids),
                               self.query_hash)
        self.layouts: dict[str, RunLayout] = {}
        self.in_pool = np.zeros(0, dtype=bool)
        """per pair number: in the pool (some run ranks it in its top :data:`POOL_DEPTH`)"""
        self.covered: dict[int, np.ndarray] = {}
        """annotator code -> their labels in the pool, per query row"""
        self._pool: tuple[np.ndarray, int] | None = None
        self._pool_lock = threading.Lock()

    @property
    def pool_rows(self) -> np.ndarray:
        """The pool's pairs per query row (made when first asked: the first numbers do not
        need it, the ranges and the details pass do)."""
        return self._pool_of_runs_once()[0]

    @property
    def pool_total(self) -> int:
        """The pool's size: distinct (query, chunk) pairs of every run's top :data:`POOL_DEPTH`."""
        return self._pool_of_runs_once()[1]

    def _pool_of_runs_once(self) -> tuple[np.ndarray, int]:
        """:meth:`_pool_of_runs`, made once (the runs never change; the details pass may ask on
        its own thread while the ranges ask on the engine's)."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = self._pool_of_runs()
            return self._pool

    @property
    def width(self) -> int:
        """The most chunks any run ranks for a query (the layouts' width)."""
        return max((layout.pairs.shape[1] for layout in self.layouts.values()), default=0)

    def rows(self, query_ids: Iterable[str]) -> np.ndarray:
        """The rows of some query ids."""
        return np.fromiter((self.row[q] for q in query_ids), dtype=np.int64)

    # -- numbering pairs ---------------------------------------------------------------------

    def number_labels(self, labels: CodedLabels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Number the pairs of every current label (dropping a query the space does not list:
        added since it was read), lay every run out over them (on two threads for large runs),
        mark the pool; returns the labels as rows ``(pair, annotator code, grade)``."""
        row_of_query = _keys.lookup(self.query_bytes, labels.queries)
        pair_row = row_of_query[labels.pair_query]
        kept = pair_row >= 0
        width = max([labels.chunks.dtype.itemsize] + [r.chunk_ids.dtype.itemsize for r in self.runs.values()])
        self.pairs = LivePairs(pair_row[kept], _keys.widen(labels.chunks[labels.pair_chunk[kept]], width),
                               len(self.query_ids), self.query_hash)
        number = np.cumsum(kept) - 1
        rows_kept = kept[labels.pair]
        self.in_pool = np.zeros(0, dtype=bool)
        self.layouts = {}
        names = list(self.runs)
        if sum(len(r) for r in self.runs.values()) >= PARALLEL_CELLS and len(names) > 1:
            self.pairs.index()  # built once, before the threads read it
            self.layouts = dict(zip(names, worker_pool().map(self._layout, names)))
        else:
            self.layouts = {name: self._layout(name) for name in names}
        self.fit_pool()
        for layout in self.layouts.values():
            top = layout.pairs[:, :POOL_DEPTH]
            self.in_pool[top[top >= 0]] = True
        return number[labels.pair[rows_kept]], labels.annotator[rows_kept], labels.grade[rows_kept]

    def _layout(self, name: str) -> RunLayout:
        """A run's ranked chunks as pair numbers (one hash lookup of every entry)."""
        run = self.runs[name]
        n_rows = len(self.query_ids)
        lengths = self.run_lengths[name]
        width = int(lengths.max()) if n_rows else 0
        pairs = np.full((n_rows, width), -1, dtype=np.int32)
        row_of = _keys.lookup(self.query_bytes, run.query_id_bytes)
        if len(row_of) == n_rows and len(run) == n_rows * width and np.array_equal(row_of, np.arange(n_rows)):
            # every query ranked to the same depth: the entries are the matrix, row by row
            numbers = self.pairs.find(run.qidx, run.chunk_ids, run.pair_hashes)
            return RunLayout(numbers.astype(np.int32).reshape(n_rows, width), lengths)
        entry_row = row_of[run.qidx]
        known = entry_row >= 0
        if known.all():
            numbers = self.pairs.find(entry_row, run.chunk_ids, run.pair_hashes)
            pos = np.arange(len(run)) - run.offsets[run.qidx]
            pairs[entry_row, pos] = numbers
        elif known.any():
            sel = np.flatnonzero(known)
            numbers = self.pairs.find(entry_row[sel], run.chunk_ids[sel], run.pair_hashes[sel])
            pos = sel - run.offsets[run.qidx[sel]]
            pairs[entry_row[sel], pos] = numbers
        return RunLayout(pairs, lengths)

    def numbers_of(self, rows: Sequence[int] | np.ndarray, chunks: Any) -> np.ndarray:
        """The pair numbers of ``(row, chunk id)`` pairs, numbering the new ones (and pointing
        the runs' layouts and the pool at them). A few pairs are found among their rows' own
        pairs; many through the hash index of every pair."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return np.zeros(0, dtype=np.int64)
        chunks = _keys.as_ids(chunks)
        if len(rows) <= 256:
            numbers = np.empty(len(rows), dtype=np.int64)
            listed = chunks.tolist()
            for row in np.unique(rows).tolist():
                at = np.flatnonzero(rows == row)
                numbers[at] = self._row_numbers(row, [listed[i] for i in at.tolist()])
            return numbers
        numbers = self.pairs.find(rows, chunks)
        missing = np.flatnonzero(numbers < 0)
        if len(missing):
            key_rows, key_chunks = rows[missing], chunks[missing]
            order = np.lexsort([*_keys.words(key_chunks).T[::-1], key_rows])
            r, c = key_rows[order], key_chunks[order]
            first = np.ones(len(order), dtype=bool)
            first[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
            new = self.pairs.add(r[first], c[first])
            self._point_runs_at(new)
            numbers[missing[order]] = new[np.cumsum(first) - 1]
        return numbers

    def pair_numbers(self, row: int, chunks: list[str]) -> np.ndarray:
        """The pair numbers of one query row's chunks (new pairs numbered)."""
        return self._row_numbers(row, [c.encode("utf-8") for c in chunks])

    def _row_numbers(self, row: int, chunks: list[bytes]) -> np.ndarray:
        """:meth:`pair_numbers` of chunk ids as bytes: found among the row's own pairs, without
        the hash index (the few pairs of a label event)."""
        mine = self.pairs.of_row(row)
        known = dict(zip(self.pairs.chunks[mine].tolist(), mine.tolist()))
        numbers = [known.get(c, -1) for c in chunks]
        missing = list(dict.fromkeys(c for c, n in zip(chunks, numbers) if n < 0))
        if missing:
            new = self.pairs.add(np.full(len(missing), row, dtype=np.int64), _keys.as_ids(missing))
            self._point_runs_at(new)
            known.update(zip(missing, new.tolist()))
            numbers = [known[c] for c in chunks]
        return np.array(numbers, dtype=np.int64)

    def _point_runs_at(self, numbers: np.ndarray) -> None:
        """Enter newly numbered pairs in every run's layout and in the pool flags."""
        self.fit_pool()
        if not self.layouts:
            return
        if len(numbers) > 64:
            self._point_many(numbers)
            return
        rows, chunks = self.pairs.rows[numbers], self.pairs.chunks[numbers]
        for name, run in self.runs.items():
            layout = self.layouts[name]
            rr = self.run_rows[name]
            for i in np.flatnonzero(rr[rows] >= 0).tolist():
                r = int(rr[rows[i]])
                ranked = run.chunk_ids[run.offsets[r]:run.offsets[r + 1]]
                width = max(ranked.dtype.itemsize, chunks.dtype.itemsize)
                at = np.flatnonzero(_keys.widen(ranked, width) == _keys.widen(chunks[i:i + 1], width)[0])
                if len(at):
                    layout.pairs[rows[i], at[0]] = numbers[i]
                    if at[0] < POOL_DEPTH:
                        self.in_pool[numbers[i]] = True

    def _point_many(self, numbers: np.ndarray) -> None:
        """:meth:`_point_runs_at` for many pairs: every entry of their queries looked up in a
        hash index of the new pairs."""
        rows, chunks = self.pairs.rows[numbers], self.pairs.chunks[numbers]
        index = _keys.PairIndex(rows, chunks, self.query_hash[rows])
        affected = np.unique(rows)
        for name, run in self.runs.items():
            rr = self.run_rows[name]
            have = affected[rr[affected] >= 0]
            if not len(have):
                continue
            starts, ends = run.offsets[rr[have]], run.offsets[rr[have] + 1]
            entries = np.concatenate([np.arange(s, e) for s, e in zip(starts.tolist(), ends.tolist())])
            entry_rows = np.repeat(have, ends - starts)
            hit = index.get(entry_rows, run.chunk_ids[entries], query_hash=self.query_hash[entry_rows])
            found = hit >= 0
            pos = entries[found] - run.offsets[run.qidx[entries[found]]]
            self.layouts[name].pairs[entry_rows[found], pos] = numbers[hit[found]]
            self.in_pool[numbers[hit[found]][pos < POOL_DEPTH]] = True

    def ranked_pairs(self, rows: np.ndarray) -> np.ndarray:
        """The pair numbers of every chunk any run ranks for the query rows ``rows`` (pairs
        nobody judged yet are numbered now)."""
        found: list[np.ndarray] = []
        for name, run in self.runs.items():
            rr = self.run_rows[name][rows]
            have = rr >= 0
            if not have.any():
                continue
            starts, ends = run.offsets[rr[have]], run.offsets[rr[have] + 1]
            entries = np.concatenate([np.arange(s, e) for s, e in zip(starts.tolist(), ends.tolist())])
            entry_rows = np.repeat(rows[have], ends - starts)
            found.append(self.numbers_of(entry_rows, run.chunk_ids[entries]))
        return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)

    # -- the pool ----------------------------------------------------------------------------

    def fit_pool(self) -> None:
        """The pool flags grown to every pair numbered so far."""
        if len(self.in_pool) < self.pairs.n:
            grown = np.zeros(max(self.pairs.n, 2 * len(self.in_pool)), dtype=bool)
            grown[:len(self.in_pool)] = self.in_pool
            self.in_pool = grown

    def _pool_of_runs(self) -> tuple[np.ndarray, int]:
        """The pool's pairs per query row, and its size: distinct (query, chunk) pairs of every
        run's top :data:`POOL_DEPTH`. Once the runs are laid out, the numbered pairs are those
        the pool flags mark (:meth:`number_labels`), and only the entries no label numbered
        are told apart by their ids; before, every entry is."""
        if not self.runs or set(self.layouts) != set(self.runs):
            return self._distinct_pairs([self._top_entries(name, run) for name, run in self.runs.items()])
        self.fit_pool()
        pooled = np.flatnonzero(self.in_pool[:self.pairs.n])
        per_row, rest = self._distinct_pairs([self._unnumbered_entries(name, run)
                                              for name, run in self.runs.items()])
        per_row += np.bincount(self.pairs.rows[pooled], minlength=len(self.query_ids))
        return per_row, len(pooled) + rest

    def _top_entries(self, name: str, run: Run) -> _Entries:
        """Every entry of the run's top :data:`POOL_DEPTH`: query ids, chunk ids, pair hashes,
        query rows (-1: a query the project does not list)."""
        starts = run.offsets[:-1]
        keep = (np.arange(len(run)) - starts[run.qidx]) < POOL_DEPTH
        rows = _keys.lookup(self.query_bytes, run.query_id_bytes)[run.qidx[keep]]
        return run.query_id_bytes[run.qidx[keep]], run.chunk_ids[keep], run.pair_hashes[keep], rows

    def _unnumbered_entries(self, name: str, run: Run) -> _Entries:
        """The entries of the run's top :data:`POOL_DEPTH` its layout has no pair number for
        (no label judges them), and those of queries the project does not list, as
        :meth:`_top_entries` gives them."""
        top = self.layouts[name].pairs[:, :POOL_DEPTH]
        depth = np.minimum(self.run_lengths[name], POOL_DEPTH)
        rows, pos = np.nonzero((top < 0) & (np.arange(top.shape[1]) < depth[:, None]))
        entries = [run.offsets[self.run_rows[name][rows]] + pos]
        unlisted = np.flatnonzero(_keys.lookup(self.query_bytes, run.query_id_bytes) < 0)
        if len(unlisted):  # counted in the pool's size, in no row
            starts, ends = run.offsets[unlisted], np.minimum(run.offsets[unlisted + 1], run.offsets[unlisted] + POOL_DEPTH)
            entries.append(np.concatenate([np.arange(a, b) for a, b in zip(starts.tolist(), ends.tolist())]))
            rows = np.concatenate([rows, np.full(len(entries[-1]), -1, dtype=rows.dtype)])
        at = np.concatenate(entries).astype(np.int64)
        return run.query_id_bytes[run.qidx[at]], run.chunk_ids[at], run.pair_hashes[at], rows

    def _distinct_pairs(self, parts: list[_Entries]) -> tuple[np.ndarray, int]:
        """Distinct (query, chunk) pairs among entries (:meth:`_top_entries`): per query row,
        and in all."""
        empty = np.zeros(len(self.query_ids), dtype=np.int64)
        parts = [p for p in parts if len(p[0])]
        if not parts:
            return empty, 0
        q, c, h, rows = zip(*parts)
        width_q, width_c = max(x.dtype.itemsize for x in q), max(x.dtype.itemsize for x in c)
        qa = np.concatenate([_keys.widen(x, width_q) for x in q])
        ca = np.concatenate([_keys.widen(x, width_c) for x in c])
        ha = np.concatenate(h)
        ra = np.concatenate(rows)
        # distinct pairs by their hash, every equal hash checked on the exact ids
        order = np.argsort(ha)
        hs, qs, cs = ha[order], qa[order], ca[order]
        same = hs[1:] == hs[:-1]
        if np.any(same & ((qs[1:] != qs[:-1]) | (cs[1:] != cs[:-1]))):  # a collision: sort the ids
            order = np.lexsort([*_keys.words(ca).T[::-1], *_keys.words(qa).T[::-1]])
            qs, cs = qa[order], ca[order]
            same = (qs[1:] == qs[:-1]) & (cs[1:] == cs[:-1])
        first = np.ones(len(order), dtype=bool)
        first[1:] = ~same
        distinct_rows = ra[order][first]
        distinct_rows = distinct_rows[distinct_rows >= 0]
        return np.bincount(distinct_rows, minlength=len(self.query_ids)).astype(np.int64), int(first.sum())

    def count_covered(self, pair: np.ndarray, who: np.ndarray, codes: int) -> None:
        """Per annotator code (of ``codes``), their labels in the pool of each query row."""
        self.fit_pool()
        n = len(self.query_ids)
        pooled = self.in_pool[pair]
        counts = np.bincount(who[pooled] * n + self.pairs.rows[pair[pooled]], minlength=codes * n)
        self.covered = {c: counts[c * n:(c + 1) * n].copy() for c in range(codes)}

    def cover_row(self, row: int, pair: np.ndarray, who: np.ndarray) -> None:
        """One query row's labels in the pool per annotator, counted again (its labels as just
        read: ``pair`` and ``who``)."""
        self.fit_pool()
        pooled = self.in_pool[pair]
        for code, counts in self.covered.items():
            counts[row] = int(np.count_nonzero(pooled & (who == code)))
        for code in set(who.tolist()) - set(self.covered):
            self.covered[code] = np.zeros(len(self.query_ids), dtype=np.int64)
            self.covered[code][row] = int(np.count_nonzero(pooled & (who == code)))

    def coverage(self, code: int, judged: np.ndarray) -> float:
        """The share of the pool of the query rows ``judged`` (a mask) that the labels of the
        annotator ``code`` cover."""
        size = int(self.pool_rows[judged].sum())
        if not size:
            return 0.0
        counts = self.covered.get(code)
        mine = int(counts[judged].sum()) if counts is not None else 0
        return min(1.0, mine / size)

    def pool_judged(self, grades: np.ndarray) -> int:
        """Pairs of the pool that ``grades`` (per pair number) judge."""
        self.fit_pool()
        return int(np.count_nonzero((grades != NO_GRADE) & self.in_pool[:len(grades)]))

    # -- qrels and runs of some queries ------------------------------------------------------

    def view_qrels(self, grades: np.ndarray, top_grade: int) -> Qrels:
        """The qrels of a view's grades per pair number (rows grouped by query row)."""
        judged = np.flatnonzero(grades != NO_GRADE)
        rows = self.pairs.rows[judged]
        if len(rows) > 1 and np.any(rows[1:] < rows[:-1]):  # pairs numbered since: regroup
            n = max(self.pairs.n, 1)
            judged = np.sort(rows * n + judged) % n
            rows = self.pairs.rows[judged]
        counts = np.bincount(rows, minlength=len(self.query_ids))
        present = np.flatnonzero(counts)
        counts = counts[present]
        return Qrels.from_grouped(self.query_bytes[present], counts, self.pairs.chunks[judged],
                                  grades[judged], top_grade=top_grade)

    def qrels_of(self, view: LiveView, query_ids: Iterable[str], top_grade: int) -> Qrels:
        """A view's qrels of some queries, chunk ids as wide as the runs' (the pair index
        compares ids as words of equal width)."""
        qs: list[str] = []
        cs: list[str] = []
        gs: list[int] = []
        for qid in query_ids:
            for cid, grade in view.judgments_of(qid).items():
                qs.append(qid)
                cs.append(cid)
                gs.append(grade)
        q, c, g = np.array(qs, dtype=object), np.array(cs, dtype=object), np.array(gs, dtype=np.int64)
        chunks = encode_ids(c)
        width = max([chunks.dtype.itemsize] + [r.chunk_ids.dtype.itemsize for r in self.runs.values()])
        return Qrels(encode_id_runs(q), chunks.astype(f"S{width}"), np.asarray(g, dtype=np.int64),
                     top_grade=top_grade)

    def sub_run(self, name: str, query_ids: list[str]) -> Run:
        """Run ``name`` on some queries only (its ranking, in order)."""
        run = self.runs[name]
        rr = self.run_rows[name]
        q, c = [], []
        for qid in query_ids:
            r = rr[self.row[qid]]
            if r >= 0:
                chunks = run.chunk_ids[run.offsets[r]:run.offsets[r + 1]]
                q.append(np.full(len(chunks), qid.encode("utf-8")))
                c.append(chunks)
        if not q:
            return Run([], [], None, ordered=True, name=name)
        return Run(np.concatenate(q), np.concatenate(c), None, ordered=True, name=name)

    def top_chunks(self, query_id: str, depth: int) -> list[str]:
        """The chunks of every run's top ``depth`` for one query, each once, in run order."""
        row = self.row.get(query_id)
        if row is None:
            return []
        out: dict[str, None] = {}
        for name, run in self.runs.items():
            r = self.run_rows[name][row]
            if r < 0:
                continue
            top = run.chunk_ids[run.offsets[r]:min(run.offsets[r] + depth, run.offsets[r + 1])]
            for c in _keys.decode(top):
                out.setdefault(c, None)
        return list(out)
