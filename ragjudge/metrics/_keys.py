"""Identifiers as fixed-width byte strings, and exact integer keys over them.

Query and chunk ids are kept as numpy ``S`` arrays whose width is a multiple of 8, NUL padded.
Viewed as big-endian ``uint64`` words, the numeric order of the words is the byte order of the
ids (``strcmp`` order, which is how trec_eval breaks score ties), and word equality is id
equality. Nothing here builds a Python object per id: that is what makes 10-million-line runs
cheap.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

#: MASKS[n] keeps the first n bytes of a little-endian uint64 word (n = 0..8).
MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=np.uint64)

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def padded_width(width: int) -> int:
    """The smallest multiple of 8 that holds ``width`` bytes (at least 8)."""
    return max(8, -(-int(width) // 8) * 8)


def as_ids(values: Iterable[str] | Iterable[bytes] | np.ndarray) -> np.ndarray:
    """Ids (str, bytes or an ``S``/``U`` array) as a NUL-padded ``S`` array of width 8k."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "S":
        array = values
    else:
        if isinstance(values, np.ndarray) and values.dtype.kind == "U":
            items = values.tolist()
        else:
            items = list(values)
        encoded = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in items]
        array = np.array(encoded, dtype=bytes) if encoded else np.zeros(0, dtype="S8")
    array = np.ascontiguousarray(array.ravel())
    width = padded_width(array.dtype.itemsize)
    if array.dtype.itemsize != width:
        array = array.astype(f"S{width}")
    return array


def widen(array: np.ndarray, width: int) -> np.ndarray:
    """The same ids in a wider ``S`` array (NUL padding keeps their order and equality)."""
    return array if array.dtype.itemsize == width else array.astype(f"S{width}")


def pair_keys(query_ids: np.ndarray, chunk_ids: np.ndarray, wq: int, wc: int) -> np.ndarray:
    """One fixed-width byte string per (query, chunk) pair of ``as_ids`` arrays: the query id's
    bytes NUL-padded to ``wq``, then the chunk id's to ``wc``. Equal for equal pairs (ids hold no
    NUL) when both sides use the same widths: membership tests without a Python object a pair."""
    n = len(query_ids)
    both = np.empty((n, wq + wc), dtype=np.uint8)
    both[:, :wq] = widen(query_ids, wq).view(np.uint8).reshape(n, wq)
    both[:, wq:] = widen(chunk_ids, wc).view(np.uint8).reshape(n, wc)
    return both.view(f"V{wq + wc}").ravel()


def words(ids: np.ndarray) -> np.ndarray:
    """(n, width/8) big-endian uint64 view of an ``as_ids`` array: compare as integers."""
    return ids.view(">u8").reshape(len(ids), ids.dtype.itemsize // 8)


def decode(ids: np.ndarray) -> list[str]:
    """Ids back to Python strings (only for output: one object per id)."""
    return [b.decode("utf-8", "replace") for b in ids.tolist()]


#: rows hashed at once: the temporaries of a block stay in the processor's cache
_HASH_BLOCK = 1 << 16


def mix(h: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Combine a uint64 hash with a uint64 column (splitmix64 finaliser); exact ids are
    re-checked after any lookup, so a collision can cost time but never a wrong answer.
    ``out``: where to write the result (may be ``h``)."""
    x = np.bitwise_xor(h, w.astype(np.uint64, copy=False), out=out)
    x *= _GOLDEN
    t = x >> np.uint64(30)
    x ^= t
    x *= _MIX1
    np.right_shift(x, np.uint64(27), out=t)
    x ^= t
    x *= _MIX2
    np.right_shift(x, np.uint64(31), out=t)
    x ^= t
    return x


def _mix_words(h: np.ndarray, ids: np.ndarray, low_bit: bool = False) -> np.ndarray:
    """``h`` mixed with each row's id, a block of rows at a time; ``low_bit`` sets bit 0."""
    # all-zero words are NUL padding (ids hold no NUL byte): skipping them makes the hash
    # independent of the array's width; the first word of a non-empty id is never zero
    w = words(ids)
    out = np.empty(len(ids), dtype=np.uint64)
    for lo in range(0, len(ids), _HASH_BLOCK):
        hi = min(lo + _HASH_BLOCK, len(ids))
        x = mix(h[lo:hi], w[lo:hi, 0], out=out[lo:hi])
        for j in range(1, w.shape[1]):
            column = w[lo:hi, j]
            np.copyto(x, mix(x, column), where=column != 0)
        if low_bit:
            x |= np.uint64(1)
    return out


def id_hash(ids: np.ndarray, seed: int = 0) -> np.ndarray:
    """A uint64 hash of each id (the same for an id in arrays of any width)."""
    return _mix_words(np.full(len(ids), np.uint64(seed + 1) * _GOLDEN, dtype=np.uint64), ids)


def pair_hash(query_hash: np.ndarray, ids: np.ndarray, seed: int = 0) -> np.ndarray:
    """A uint64 hash of (query, id) per row, from the rows' query-id hashes (``id_hash``)."""
    h = query_hash ^ (np.uint64(seed) * _MIX2) if seed else query_hash
    # odd, so that 0 can mark an empty slot of a PairIndex
    return _mix_words(h, ids, low_bit=True)


def factorize(ids: np.ndarray, *, counts: bool = False) -> tuple[np.ndarray, ...]:
    """Sorted unique ids and the index of each row's id among them (and, with ``counts``,
    how many rows each unique id has).

    Rows of a TREC file come grouped by query, so the unique ids are found among the heads of
    the runs of equal ids, which are few; ungrouped input is still correct, only slower.
    """
    n = len(ids)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return (ids[:0], empty, empty) if counts else (ids[:0], empty)
    w = words(ids)
    change = w[1:, 0] != w[:-1, 0] if w.shape[1] == 1 else np.any(w[1:] != w[:-1], axis=1)
    starts = np.flatnonzero(np.concatenate(([True], change)))
    unique, head_index = np.unique(ids[starts], return_inverse=True)
    head_index = head_index.ravel()
    lengths = np.diff(np.append(starts, n))
    index = np.repeat(head_index, lengths)
    if not counts:
        return unique, index
    per_id = np.bincount(head_index, weights=lengths, minlength=len(unique)).astype(np.int64)
    return unique, index, per_id


def lookup(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Index of each id in ``sorted_ids`` (sorted, unique), or -1 when absent."""
    if len(sorted_ids) == 0:
        return np.full(len(ids), -1, dtype=np.int64)
    width = max(sorted_ids.dtype.itemsize, ids.dtype.itemsize)
    a, b = widen(sorted_ids, width), widen(ids, width)
    pos = np.searchsorted(a, b)
    pos = np.minimum(pos, len(a) - 1)
    found = a[pos] == b
    return np.where(found, pos, -1)


def first_duplicate(hashes: np.ndarray, query_index: np.ndarray,
                    ids: np.ndarray) -> tuple[int, int] | None:
    """Rows (i, j), i < j, of the first repeated (query, id) pair, or None.

    Sorting the uint64 pair hashes is the only full pass; rows are located only when a hash
    repeats, and compared on their exact ids.
    """
    if len(ids) < 2:
        return None
    hs = np.sort(hashes)
    if not np.any(hs[1:] == hs[:-1]):
        return None
    order = np.argsort(hashes, kind="stable")
    hs = hashes[order]
    same = np.flatnonzero(hs[1:] == hs[:-1])
    a, b = order[same], order[same + 1]
    exact = (query_index[a] == query_index[b]) & (ids[a] == ids[b])
    if not np.any(exact):
        return None
    pairs = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)[exact]
    first = pairs[np.argmin(pairs[:, 1])]
    return int(first[0]), int(first[1])


class PairIndex:
    """An open-addressing hash table from (query index, id) to a row, built in numpy.

    Built once per qrels (whose pairs must be unique); a run's (query, chunk) pairs are looked
    up in a few vectorised probe rounds, and each hit is verified on the exact id bytes.

    Most pairs a run ranks are not judged: a byte map over the top bits of the pair hashes
    (about 32 entries per pair, so that an absent pair passes it once in 32) lets a lookup
    probe the table only for the pairs that may be there.
    """

    #: the byte map has 2**k entries, k at most this (64 MB)
    MAX_FILTER_BITS = 26

    def __init__(self, query_index: np.ndarray, ids: np.ndarray,
                 query_hash: np.ndarray | None = None) -> None:
        """``query_index``: each row's query (for exact checks); ``query_hash``: each row's
        ``id_hash`` of its query id (default: hash of the index)."""
        self.query_index = np.asarray(query_index, dtype=np.int64)
        self.ids = ids
        if query_hash is None:
            query_hash = mix(np.zeros(len(ids), dtype=np.uint64), self.query_index.astype(np.uint64))
        self.query_hash = query_hash
        n = len(ids)
        size = 1 << max(4, int(np.ceil(np.log2(max(n, 1) * 2.5))))
        self.mask = np.uint64(size - 1)
        self.slots = np.full(size, -1, dtype=np.int64)
        self.seed = 0
        while True:
            self.hashes = pair_hash(query_hash, ids, self.seed)
            hs = np.sort(self.hashes)
            if not np.any(hs[1:] == hs[:-1]):
                break
            self.seed += 1  # a 64-bit collision between distinct pairs: rehash
        self._insert()
        bits = min(self.MAX_FILTER_BITS, max(10, int(np.ceil(np.log2(max(n, 1) * 32)))))
        self.filter_shift = np.uint64(64 - bits)
        self.filter = np.zeros(1 << bits, dtype=bool)
        self.filter[(self.hashes >> self.filter_shift).view(np.intp)] = True

    def _insert(self) -> None:
        self.table_hash = np.zeros(len(self.slots), dtype=np.uint64)
        pending = np.arange(len(self.hashes), dtype=np.int64)
        slot = (self.hashes & self.mask).astype(np.int64)
        mask = int(self.mask)
        while len(pending):
            s = slot[pending]
            free = self.slots[s] < 0
            cand, cand_slot = pending[free], s[free]
            self.slots[cand_slot] = cand  # rows racing for one slot: one wins, others probe on
            placed = np.zeros(len(pending), dtype=bool)
            placed[np.flatnonzero(free)] = self.slots[cand_slot] == cand
            pending = pending[~placed]
            slot[pending] = (slot[pending] + 1) & mask
        used = self.slots >= 0
        self.table_hash[used] = self.hashes[self.slots[used]]

    def get(self, query_index: np.ndarray, ids: np.ndarray, query_hash: np.ndarray | None = None,
            hashes: np.ndarray | None = None) -> np.ndarray:
        """Row of each (query index, id) pair, -1 when absent.

        ``query_hash``: each row's query-id hash when the index was built with them; or the
        ready pair ``hashes`` (used while the index has seed 0).
        """
        query_index = np.asarray(query_index, dtype=np.int64)
        if hashes is not None and self.seed == 0:
            h = hashes
        else:
            if query_hash is None:
                query_hash = mix(np.zeros(len(ids), dtype=np.uint64),
                                 query_index.astype(np.uint64))
            h = pair_hash(query_hash, ids, self.seed)
        result = np.full(len(ids), -1, dtype=np.int64)
        at, rows = self.find(h, ids, query_index)
        result[at] = rows
        return result

    def find(self, hashes: np.ndarray, ids: np.ndarray, query_index: np.ndarray,
             query_map: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The positions of the pairs present, and their rows: pair i is (query ``query_index[i]``,
        or ``query_map[query_index[i]]`` when a map is given, id ``ids[i]``), its hash
        ``hashes[i]`` (``pair_hash`` with this index's seed). Only the pairs the byte map lets
        through are looked at further, so a run's mostly unjudged pairs cost little."""
        maybe = np.flatnonzero(self.filter[(hashes >> self.filter_shift).view(np.intp)])
        if len(maybe) == 0:
            return maybe, np.zeros(0, dtype=np.int64)
        queries = np.asarray(query_index[maybe], dtype=np.int64)
        if query_map is not None:
            queries = np.asarray(query_map, dtype=np.int64)[queries]
        rows = self._probe(queries, ids[maybe], hashes[maybe])
        found = rows >= 0
        return maybe[found], rows[found]

    def _probe(self, query_index: np.ndarray, ids: np.ndarray, h: np.ndarray) -> np.ndarray:
        """Row of each pair (-1 when absent), its hash ``h`` known: the table's probe rounds."""
        result = np.full(len(ids), -1, dtype=np.int64)
        slot = (h & self.mask).astype(np.intp)
        # the table keeps each slot's hash (0 = empty): one random read per probe
        th = self.table_hash[slot]
        hit = np.flatnonzero(th == h)
        result[hit] = self.slots[slot[hit]]
        pending = np.flatnonzero((th != h) & (th != 0))
        mask = int(self.mask)
        while len(pending):
            s = (slot[pending] + 1) & mask
            slot[pending] = s
            th = self.table_hash[s]
            hp = h[pending]
            hit = th == hp
            result[pending[hit]] = self.slots[s[hit]]
            pending = pending[~hit & (th != 0)]
        found = np.flatnonzero(result >= 0)
        if len(found):
            width = max(self.ids.dtype.itemsize, ids.dtype.itemsize)
            rows = result[found]
            exact = (self.query_index[rows] == query_index[found]) & (
                widen(self.ids[rows], width) == widen(ids[found], width)
            )
            result[found[~exact]] = -1
        return result


def unaligned_words(buf: np.ndarray) -> np.ndarray:
    """A uint64 view starting at every byte offset of ``buf`` (whose last 8 bytes are padding;
    numpy handles the unaligned loads)."""
    return np.ndarray(shape=(len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))


def gather(view: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Tokens (at ``starts``, of ``lengths`` bytes, in the buffer ``view`` is the
    :func:`unaligned_words` of) as a NUL-padded ``S`` array of width 8k, 8 bytes per gather."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype="S8")
    k = padded_width(int(lengths.max())) // 8
    out = np.empty((n, k), dtype="<u8")
    last = len(view) - 1
    for j in range(k):
        at = starts + 8 * j
        if j:
            np.minimum(at, last, out=at)
        rest = np.clip(lengths - 8 * j, 0, 8)
        np.bitwise_and(view[at], MASKS[rest], out=out[:, j])
    return out.view(f"S{8 * k}").ravel()


def packed_ids(data: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Ids stored one after another (their bytes ``data``, their ``lengths``) as a
    NUL-padded ``S`` array of width 8k."""
    n = len(lengths)
    if n == 0:
        return np.zeros(0, dtype="S8")
    buf = np.zeros(len(data) + 9, dtype=np.uint8)
    buf[:len(data)] = data
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return gather(unaligned_words(buf), starts, lengths.astype(np.int64))
