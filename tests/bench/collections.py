"""Classic test collections turned into close retriever variants, for ragjudge's benchmarks.

Given a folder holding one or more of the classic small collections, this script builds, per
collection, ten runs with retrieval models written here in numpy (BM25 with three parameter
settings, TF-IDF cosine, query likelihood with Dirichlet and Jelinek-Mercer smoothing, with and
without a small suffix stripper, and two fusions) and writes, under ``--out``:

    <collection>/qrels.trec           the official judgments, TREC 4 columns (graded for CRAN)
    <collection>/runs/<model>.trec    each run, TREC 6 columns, the top 1,000 per query
    <collection>/chunks.jsonl         one chunk per document (``id, text, doc_id``)
    <collection>/queries.jsonl        the queries that have judgments (``id, text``)
    <collection>/summary.json         the paths above and each run's MAP, nDCG@10, P@10
    summary.json                      every collection's summary.json, in one list

so that a benchmark can load a project and replay ``qrels.trec`` as labels in ragjudge's queue
order::

    ragjudge init --db cacm.db --scale binary      # CRAN: the default graded scale 0-3 won't
    ragjudge import chunks  OUT/cacm/chunks.jsonl  --db cacm.db   # hold grade 4: --scale 0-4
    ragjudge import queries OUT/cacm/queries.jsonl --db cacm.db
    ragjudge import run     OUT/cacm/runs/bm25_k0.9_b0.4.trec --db cacm.db   # each run
    ragjudge import qrels   OUT/cacm/qrels.trec    --db cacm.db   # the full judgments

(``ragjudge eval --db cacm.db -m AP`` then gives the MAP printed here.) Scores are ragjudge's
own ``evaluate`` under the full qrels (every judged query counts; an unjudged document is not
relevant), printed side by side.

Figures this script printed (MAP of BM25 k1=0.9 b=0.4 / the best run): CACM 0.307 / 0.330
(RRF), CISI 0.188 / 0.218, CRAN 0.284 / 0.299, NPL 0.227 / 0.286 (stemmed BM25), MED 0.492 /
0.513 (TF-IDF); the published BM25 baselines are about 0.3 on CACM, 0.2 on CISI, 0.3 on NPL
(Vaswani) and 0.5 on MED.

The collections are not in the repository; they are public and come from their old research
homes (Glasgow's IR test collections page, the SMART ftp archive, Cornell/Virginia Tech CDs)
and many mirrors. Lay them out as (folder and file names as distributed)::

    cacm/cacm.all  cacm/query.text  cacm/qrels.text        (SMART .I/.T/.W; qrels "q d 0 0")
    cisi/CISI.ALL  cisi/CISI.QRY    cisi/CISI.REL          (SMART; qrels "q d 0 0.000000")
    cran/cran.all.1400  cran/cran.qry  cran/cranqrel       (SMART; qrels "q d code")
    med/MED.ALL    med/MED.QRY      med/MED.REL            (SMART, or <DOC>/<DOCNO> blocks with
                                                            ids MED-n; qrels "q 0 d 1")
    npl/doc-text   npl/query-text   npl/rlv-ass            (id, text, "/" blocks)

Run::

    PYTHONPATH=. python tests/bench/collections.py /work/collections --out /work/bench/collections

Conventions worth knowing: CRAN's qrels number its queries 1..225 in file order (the ``.I``
numbers of ``cran.qry`` skip), and grade on Cleverdon's scale 1 (a complete answer) to 4
(minimum interest), -1 marking a line of no interest; here grade = 5 - code (4 best), and the
-1 lines are left out. CACM's and CISI's queries without judgments are left out. Documents are
title and abstract (``.T`` and ``.W``); the words are lowercase runs of letters and digits,
without a small stop list.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DEPTH = 1000
_STOP_WORDS = """a about above after again against all also am an and any are as at be because
been before being below between both but by can could did do does doing down during each few for
from further had has have having he her here hers him his how i if in into is it its itself just
me more most my no nor not now of off on once only or other our ours out over own same she should
so some such than that the their theirs them then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you
your yours may must shall upon etc eg ie"""
STOP = frozenset(_STOP_WORDS.split())
SUFFIXES = ("ational", "ization", "fulness", "iveness", "ations", "ation", "ness", "ment", "ings",
            "ing", "ies", "ied", "ers", "er", "edly", "ed", "ly", "es", "s")


# -- reading the collections --------------------------------------------------------------------


def smart_records(path: Path, fields: tuple[str, ...] = ("T", "W")) -> Iterator[tuple[str, str]]:
    """(id, text) of each ``.I`` record of a SMART file; text = the wanted fields, joined."""
    ident, keep, parts = None, False, []
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(".I"):
            if ident is not None:
                yield ident, " ".join(parts)
            ident, keep, parts = line[2:].strip(), False, []
        elif re.match(r"^\.[A-Z]\b", line):
            keep = line[1] in fields
        elif keep:
            parts.append(line.strip())
    if ident is not None:
        yield ident, " ".join(parts)


def slash_records(path: Path) -> Iterator[tuple[str, str]]:
    """(id, text) of each block of an NPL file: an id line, text lines, a "/" line."""
    block: list[str] = []
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.strip() == "/":
            if block:
                yield block[0].strip(), " ".join(s.strip() for s in block[1:])
            block = []
        elif line.strip() or block:
            block.append(line)


@dataclass
class Collection:
    name: str
    docs: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    notes: list[str] = field(default_factory=list)


def _pairs(path: Path, query_col: int, doc_col: int) -> Iterator[tuple[str, str, list[str]]]:
    for line in path.read_text(encoding="latin-1").splitlines():
        parts = line.split()
        if len(parts) > max(query_col, doc_col):
            yield str(int(parts[query_col])), str(int(parts[doc_col])), parts


def _judged(queries: dict[str, str], qrels: dict[str, dict[str, int]]) -> dict[str, str]:
    return {q: text for q, text in queries.items() if q in qrels}


def read_cacm(folder: Path) -> Collection:
    docs = {str(int(i)): t for i, t in smart_records(folder / "cacm.all")}
    queries = {str(int(i)): t for i, t in smart_records(folder / "query.text", ("W",))}
    qrels: dict[str, dict[str, int]] = {}
    for q, d, _ in _pairs(folder / "qrels.text", 0, 1):
        qrels.setdefault(q, {})[d] = 1
    return Collection("cacm", docs, _judged(queries, qrels), qrels)


def read_cisi(folder: Path) -> Collection:
    docs = {str(int(i)): t for i, t in smart_records(folder / "CISI.ALL")}
    queries = {str(int(i)): t for i, t in smart_records(folder / "CISI.QRY", ("T", "W"))}
    qrels: dict[str, dict[str, int]] = {}
    for q, d, _ in _pairs(folder / "CISI.REL", 0, 1):
        qrels.setdefault(q, {})[d] = 1
    return Collection("cisi", docs, _judged(queries, qrels), qrels)


def docno_records(path: Path) -> Iterator[tuple[str, str]]:
    """(id, text) of each ``<DOC>`` of a TREC-style file: ``<DOCNO>`` the id, the rest the text."""
    text = path.read_text(encoding="latin-1")
    for block in re.findall(r"<DOC>(.*?)</DOC>", text, flags=re.S):
        number = re.search(r"<DOCNO>\s*(.*?)\s*</DOCNO>", block, flags=re.S)
        if number is not None:
            body = re.sub(r"<[^>]+>", " ", block[number.end():])
            yield number.group(1), " ".join(body.split())


def _med_id(ident: str) -> str:
    """MED's documents are numbered 1..1033, written ``MED-13`` in some copies, ``13`` in others."""
    return str(int(ident.removeprefix("MED-")))


def read_med(folder: Path) -> Collection:
    path = folder / "MED.ALL"
    records = (docno_records(path) if path.read_text(encoding="latin-1").lstrip().startswith("<DOC>")
               else smart_records(path, ("T", "W")))
    docs = {_med_id(i): t for i, t in records}
    queries = {str(int(i)): t for i, t in smart_records(folder / "MED.QRY", ("W",))}
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "MED.REL").read_text(encoding="latin-1").splitlines():
        parts = line.split()
        if len(parts) >= 3:
            qrels.setdefault(str(int(parts[0])), {})[_med_id(parts[2])] = 1
    return Collection("med", docs, _judged(queries, qrels), qrels)


def read_cran(folder: Path) -> Collection:
    docs = {str(int(i)): t for i, t in smart_records(folder / "cran.all.1400")}
    # cranqrel numbers the queries 1..225 in the order of cran.qry
    queries = {str(n): t for n, (_, t) in enumerate(smart_records(folder / "cran.qry", ("W",)), 1)}
    qrels: dict[str, dict[str, int]] = {}
    for q, d, parts in _pairs(folder / "cranqrel", 0, 1):
        code = int(parts[2])
        if 1 <= code <= 4:
            qrels.setdefault(q, {})[d] = 5 - code
    return Collection("cran", docs, _judged(queries, qrels), qrels,
                      ["grade = 5 - Cleverdon's code (4 = a complete answer); -1 lines left out"])


def read_npl(folder: Path) -> Collection:
    docs = dict(slash_records(folder / "doc-text"))
    queries = dict(slash_records(folder / "query-text"))
    qrels: dict[str, dict[str, int]] = {}
    for q, text in slash_records(folder / "rlv-ass"):
        qrels[q] = {d: 1 for d in text.split()}
    return Collection("npl", docs, _judged(queries, qrels), qrels)


READERS: dict[str, tuple[str, Callable[[Path], Collection]]] = {
    "cacm": ("cacm.all", read_cacm), "cisi": ("CISI.ALL", read_cisi),
    "cran": ("cran.all.1400", read_cran), "med": ("MED.ALL", read_med),
    "npl": ("doc-text", read_npl),
}


def find_collections(root: Path) -> list[Collection]:
    """Every collection whose document file is in ``root/<name>/``."""
    return [reader(root / name) for name, (marker, reader) in READERS.items()
            if (root / name / marker).is_file()]


# -- text and index ------------------------------------------------------------------------------


def stem(word: str) -> str:
    """Strip one common English suffix, keeping a stem of at least three letters."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def tokens(text: str, stemmed: bool) -> list[str]:
    words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) > 1]
    return [stem(w) for w in words] if stemmed else words


@dataclass
class Index:
    """Postings grouped by term: ``docs[offsets[t]:offsets[t+1]]`` and their ``tf``."""

    vocab: dict[str, int]
    offsets: np.ndarray
    docs: np.ndarray
    tf: np.ndarray
    length: np.ndarray
    df: np.ndarray
    cf: np.ndarray

    @classmethod
    def build(cls, texts: list[str], stemmed: bool) -> Index:
        vocab: dict[str, int] = {}
        term_ids, doc_ids = [], []
        for d, text in enumerate(texts):
            ids = [vocab.setdefault(w, len(vocab)) for w in tokens(text, stemmed)]
            term_ids.extend(ids)
            doc_ids.extend([d] * len(ids))
        t = np.asarray(term_ids, dtype=np.int64)
        d = np.asarray(doc_ids, dtype=np.int64)
        key = np.unique(t * len(texts) + d, return_counts=True)
        pair, tf = key
        term, doc = pair // len(texts), pair % len(texts)
        offsets = np.concatenate(([0], np.cumsum(np.bincount(term, minlength=len(vocab)))))
        length = np.bincount(d, minlength=len(texts)).astype(np.float64)
        df = np.diff(offsets).astype(np.float64)
        cf = np.bincount(term, weights=tf, minlength=len(vocab))
        return cls(vocab, offsets, doc, tf.astype(np.float64), length, df, cf)

    def query_terms(self, text: str, stemmed: bool) -> tuple[np.ndarray, np.ndarray]:
        """Known term ids of a query and their counts."""
        ids = [self.vocab[w] for w in tokens(text, stemmed) if w in self.vocab]
        if not ids:
            return np.zeros(0, np.int64), np.zeros(0)
        terms, counts = np.unique(ids, return_counts=True)
        return terms, counts.astype(np.float64)

    def postings(self, terms: np.ndarray, qtf: np.ndarray) -> tuple[np.ndarray, ...]:
        """For every posting of the query's terms: document, tf, the term and its query count."""
        spans = [np.arange(self.offsets[t], self.offsets[t + 1]) for t in terms]
        which = np.repeat(np.arange(len(terms)), [len(s) for s in spans])
        at = np.concatenate(spans) if spans else np.zeros(0, np.int64)
        return self.docs[at], self.tf[at], terms[which], qtf[which]


# -- retrieval models (score of every document matching at least one query term) ---------------

Scorer = Callable[[Index, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _accumulate(index: Index, doc: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scores = np.bincount(doc, weights=weight, minlength=len(index.length))
    matched = np.bincount(doc, minlength=len(index.length)) > 0
    return np.flatnonzero(matched), scores[matched]


def bm25(k1: float, b: float) -> Scorer:
    """Robertson-Walker BM25 with Lucene's idf ``log(1 + (N - df + 0.5) / (df + 0.5))``."""
    def score(index: Index, terms: np.ndarray, qtf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        doc, tf, term, q = index.postings(terms, qtf)
        n = len(index.length)
        idf = np.log(1.0 + (n - index.df[term] + 0.5) / (index.df[term] + 0.5))
        norm = k1 * (1.0 - b + b * index.length[doc] / index.length.mean())
        return _accumulate(index, doc, q * idf * tf * (k1 + 1.0) / (tf + norm))
    return score


def tfidf_cosine(index: Index, terms: np.ndarray, qtf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SMART lnc.ltc: document (1 + log tf), cosine-normalised; query (1 + log tf) idf."""
    if not hasattr(index, "_doc_norm"):
        w = 1.0 + np.log(index.tf)
        index._doc_norm = np.sqrt(np.bincount(index.docs, weights=w * w,  # type: ignore[attr-defined]
                                              minlength=len(index.length)))
    doc, tf, term, q = index.postings(terms, qtf)
    idf = np.log(len(index.length) / index.df[term])
    wq = (1.0 + np.log(q)) * idf
    wd = (1.0 + np.log(tf)) / index._doc_norm[doc]  # type: ignore[attr-defined]
    return _accumulate(index, doc, wq * wd)


def ql_dirichlet(mu: float) -> Scorer:
    """Query likelihood, Dirichlet prior (Zhai & Lafferty 2001), rank-equivalent form:
    ``sum_t qtf log(1 + tf / (mu p(t|C))) + |q| log(mu / (|d| + mu))`` over matching docs."""
    def score(index: Index, terms: np.ndarray, qtf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        doc, tf, term, q = index.postings(terms, qtf)
        p_c = index.cf[term] / index.length.sum()
        docs, s = _accumulate(index, doc, q * np.log(1.0 + tf / (mu * p_c)))
        return docs, s + qtf.sum() * np.log(mu / (index.length[docs] + mu))
    return score


def ql_jelinek_mercer(lam: float) -> Scorer:
    """Query likelihood, Jelinek-Mercer smoothing with weight ``lam`` on the collection:
    ``sum_t qtf log(1 + (1 - lam) tf / |d| / (lam p(t|C)))`` over matching docs."""
    def score(index: Index, terms: np.ndarray, qtf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        doc, tf, term, q = index.postings(terms, qtf)
        p_c = index.cf[term] / index.length.sum()
        return _accumulate(index, doc, q * np.log(1.0 + (1.0 - lam) * tf / index.length[doc] / (lam * p_c)))
    return score


@dataclass
class Model:
    name: str
    scorer: Scorer
    stemmed: bool


MODELS = [
    Model("bm25_k0.9_b0.4", bm25(0.9, 0.4), False),
    Model("bm25_k1.2_b0.75", bm25(1.2, 0.75), False),
    Model("bm25_k1.5_b0.9", bm25(1.5, 0.9), False),
    Model("bm25_k0.9_b0.4_stem", bm25(0.9, 0.4), True),
    Model("tfidf_lnc_ltc", tfidf_cosine, False),
    Model("ql_dir_mu1000", ql_dirichlet(1000.0), False),
    Model("ql_dir_mu1000_stem", ql_dirichlet(1000.0), True),
    Model("ql_jm_l0.7", ql_jelinek_mercer(0.7), False),
]
#: fusions of two runs above: (name, how, first, second)
FUSIONS = [("rrf_bm25stem_qldirstem", "rrf", "bm25_k0.9_b0.4_stem", "ql_dir_mu1000_stem"),
           ("combsum_bm25_tfidf", "combsum", "bm25_k0.9_b0.4", "tfidf_lnc_ltc")]

Ranking = dict[str, list[tuple[str, float]]]


def retrieve(coll: Collection, model: Model, index: Index, doc_ids: list[str]) -> Ranking:
    run: Ranking = {}
    for qid, text in coll.queries.items():
        terms, qtf = index.query_terms(text, model.stemmed)
        docs, scores = model.scorer(index, terms, qtf)
        order = np.lexsort((-docs, -scores))[:DEPTH]
        run[qid] = [(doc_ids[d], float(scores[d_i])) for d_i, d in zip(order, docs[order])]
    return run


def fuse(how: str, a: Ranking, b: Ranking) -> Ranking:
    """RRF (Cormack, Clarke & Buettcher 2009; k = 60) or CombSUM of min-max normalised
    scores (Fox & Shaw 1994)."""
    out: Ranking = {}
    for qid in a.keys() | b.keys():
        total: dict[str, float] = {}
        for ranking in (a.get(qid, []), b.get(qid, [])):
            if how == "rrf":
                for rank, (doc, _) in enumerate(ranking, 1):
                    total[doc] = total.get(doc, 0.0) + 1.0 / (60 + rank)
            elif ranking:
                scores = [s for _, s in ranking]
                low, span = min(scores), (max(scores) - min(scores)) or 1.0
                for doc, s in ranking:
                    total[doc] = total.get(doc, 0.0) + (s - low) / span
        out[qid] = sorted(total.items(), key=lambda item: (-item[1], item[0]))[:DEPTH]
    return out


# -- output ---------------------------------------------------------------------------------------


def write_run(path: Path, name: str, run: Ranking) -> None:
    with path.open("w") as out:
        for qid in sorted(run, key=int):
            for rank, (doc, score) in enumerate(run[qid], 1):
                out.write(f"{qid} Q0 {doc} {rank} {score:.6f} {name}\n")


def write_collection(coll: Collection, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "runs").mkdir(exist_ok=True)
    paths = {k: folder / f for k, f in (("qrels", "qrels.trec"), ("chunks", "chunks.jsonl"),
                                         ("queries", "queries.jsonl"))}
    with paths["qrels"].open("w") as out:
        for qid in sorted(coll.qrels, key=int):
            for doc, grade in sorted(coll.qrels[qid].items(), key=lambda item: int(item[0])):
                out.write(f"{qid} 0 {doc} {grade}\n")
    with paths["chunks"].open("w") as out:
        for doc, text in coll.docs.items():
            out.write(json.dumps({"id": doc, "text": text or "(empty)", "doc_id": doc}) + "\n")
    with paths["queries"].open("w") as out:
        for qid, text in coll.queries.items():
            out.write(json.dumps({"id": qid, "text": text}) + "\n")
    return paths


def build(coll: Collection, out: Path) -> dict[str, object]:
    from ragjudge.metrics import Qrels, Run, evaluate_runs

    started = time.perf_counter()
    doc_ids = list(coll.docs)
    texts = [coll.docs[d] for d in doc_ids]
    indexes = {s: Index.build(texts, s) for s in (False, True)}
    runs = {m.name: retrieve(coll, m, indexes[m.stemmed], doc_ids) for m in MODELS}
    for name, how, a, b in FUSIONS:
        runs[name] = fuse(how, runs[a], runs[b])
    folder = out / coll.name
    paths = write_collection(coll, folder)
    run_paths = {}
    for name, run in runs.items():
        run_paths[name] = folder / "runs" / f"{name}.trec"
        write_run(run_paths[name], name, run)
    qrels = Qrels.from_trec(paths["qrels"])
    measures = ["AP", "nDCG@10", "P@10"]
    results = evaluate_runs(qrels, [Run.from_trec(p, name=n) for n, p in run_paths.items()], measures)
    scores = {n: {k: round(v, 4) for k, v in r.aggregate().items()} for n, r in results.items()}
    summary = {
        "collection": coll.name, "documents": len(coll.docs), "queries": len(coll.queries),
        "judgments": sum(len(v) for v in coll.qrels.values()),
        "relevant": sum(1 for v in coll.qrels.values() for g in v.values() if g > 0),
        "notes": coll.notes, "seconds": round(time.perf_counter() - started, 1),
        **{f"{k}_file": str(p) for k, p in paths.items()},
        "runs": {n: str(p) for n, p in run_paths.items()}, "scores": scores,
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def print_summary(summary: dict) -> None:
    print(f"\n{summary['collection']}: {summary['documents']} documents, {summary['queries']} "
          f"judged queries, {summary['judgments']} judgments ({summary['seconds']} s)")
    print(f"  {'run':<26} {'MAP':>7} {'nDCG@10':>8} {'P@10':>7}")
    for name, row in summary["scores"].items():
        print(f"  {name:<26} {row['AP']:>7.4f} {row['nDCG@10']:>8.4f} {row['P@10']:>7.4f}")
    for key in ("qrels", "chunks", "queries"):
        print(f"  {key:<8} {summary[key + '_file']}")
    print(f"  runs     {Path(summary['qrels_file']).parent / 'runs'}/*.trec")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("collections", type=Path, help="folder holding cacm/, cisi/, cran/, med/, npl/")
    parser.add_argument("--out", type=Path, required=True, help="where to write (outside the repository)")
    parser.add_argument("--only", default="", help="comma-separated collection names")
    args = parser.parse_args(argv)
    wanted = {w for w in args.only.split(",") if w}
    found = [c for c in find_collections(args.collections) if not wanted or c.name in wanted]
    if not found:
        print(f"no collection found in {args.collections} (see this script's docstring)", file=sys.stderr)
        return 2
    summaries = [build(c, args.out) for c in found]
    for s in summaries:
        print_summary(s)
    (args.out / "summary.json").write_text(json.dumps(summaries, indent=1) + "\n")
    print(f"\nall: {args.out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
