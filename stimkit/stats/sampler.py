"""Sums of values over independent uniform random k-subsets: the sampled permutation null.

A subset of M items is held as bits in 64-bit words. Items go 12 to a 16-bit lane, four
lanes to a word, so the sum over a subset is one lookup per lane in a 4,096-entry table
of that lane's subset sums (small enough to stay in cache), and a fresh random subset is
one raw 64-bit draw per word, masked to the lanes' low 12 bits.

Two exact samplers share that layout:

- `SplitPlan` (the default): split the items into halves A and B. For a uniform
  k-subset S, |S n A| is hypergeometric, and given |S n A| = a the two halves are
  independent uniform subsets of sizes a and k - a. So each row draws a, then takes a
  fair-coin subset of A that happens to have exactly a items (and one of B with k - a)
  from a pool of coin subsets sorted by size. Which pool subset a row gets depends only
  on the sizes, never on the contents, so each row is uniform and rows are independent.
  No Python loop per row or per item: a few array passes per batch of rows, the two
  halves on two threads, each half with its own random stream (so threads never change
  a result).
- `flip_subset_sums`: each item joins by a fair coin, then uniformly chosen items are
  flipped until the row holds exactly k. Used when k is so far from M/2 that a coin pool
  would rarely hold subsets of the sizes wanted.

Many value columns at once (the influence of every word: a test per column over the same
partitions) make the per-column lookup tables the cost (M/12 tables of 4,096 sums each, per
column). Beyond DENSE_COLUMNS columns `dense_subset_sums` draws each subset as the k smallest
of M uniform numbers (a uniform k-subset) and sums every column by one matrix product.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from math import comb

import numpy as np

NAME = "split-match/sfc64"              # recorded with each result
LANE_BITS, LANES = 12, 4                # items per table lookup, lanes per 64-bit word
MAX_POOL_FACTOR = 4.0                   # beyond this many coin subsets per row, flip instead
MAX_ROWS = 1 << 17                      # rows per batch, and
MAX_POOL_BYTES = 1 << 26                # at most this much memory for the coin words of a batch
DENSE_COLUMNS = 4                       # more value columns than this: dense_subset_sums
DENSE_CELLS = 1 << 22                   # rows x items of one batch of dense_subset_sums
# LANE_SUBSETS[s, i] = 1 when subset s (read as 12 bits) of a lane holds its item i
LANE_SUBSETS = ((np.arange(1 << LANE_BITS)[:, None] >> np.arange(LANE_BITS)) & 1).astype(np.float64)


class Layout:
    """Where each of `M` items sits in a row of 64-bit words, and sums over such rows."""

    def __init__(self, M: int):
        self.M = M
        # sizes as int16 where they fit: numpy sorts 16-bit integers by radix, 30x faster
        self.size_dtype = np.int16 if M < 2**15 else np.int32
        self.lanes = -(-M // LANE_BITS)
        self.words = -(-self.lanes // LANES)
        items_in_lane = np.clip(M - LANE_BITS * np.arange(self.words * LANES), 0, LANE_BITS)
        lane_masks = (np.uint64(1) << items_in_lane.astype(np.uint64)) - np.uint64(1)
        shifts = np.uint64(16) * np.arange(LANES, dtype=np.uint64)
        self.masks = np.bitwise_or.reduce(lane_masks.reshape(self.words, LANES) << shifts, axis=1)
        item = np.arange(M)
        self.item_word = (item // LANE_BITS) // LANES
        self.item_bit = np.uint64(1) << (16 * ((item // LANE_BITS) % LANES) + item % LANE_BITS).astype(np.uint64)

    def coins(self, bitgen: np.random.BitGenerator, rows: int) -> np.ndarray:
        """(words, rows): every item in or out by a fair coin, independently."""
        words = bitgen.random_raw(self.words * rows).reshape(self.words, rows)
        words &= self.masks[:, None]
        return words

    def sizes(self, words: np.ndarray) -> np.ndarray:
        return np.bitwise_count(words).sum(axis=0, dtype=self.size_dtype)

    def tables(self, values: np.ndarray) -> np.ndarray:
        """(m, lanes, 4096): the sum of each value column over every subset of each lane."""
        padded = np.zeros((self.lanes * LANE_BITS, values.shape[1]))
        padded[:self.M] = values
        per_lane = padded.T.reshape(values.shape[1], self.lanes, LANE_BITS)
        return per_lane @ LANE_SUBSETS.T

    def sums(self, words: np.ndarray, tables: np.ndarray) -> np.ndarray:
        """(rows, m): each row's sums, one table lookup per lane."""
        lanes = words.view(np.uint16).reshape(self.words, -1, LANES)
        out = np.zeros((lanes.shape[1], len(tables)))
        looked_up = np.empty(lanes.shape[1])
        for col, col_tables in enumerate(tables):
            for lane, table in enumerate(col_tables):
                np.take(table, lanes[lane // LANES, :, lane % LANES], out=looked_up, mode="wrap")
                out[:, col] += looked_up
        return out


def subset_sums(values: np.ndarray, k: int, size: int, rng: np.random.Generator, dense: bool = False) -> np.ndarray:
    """Sums of `values` ((M,) or (M, m)) over `size` independent uniform k-subsets of its rows.
    dense: draw them with `dense_subset_sums` whatever the shape (cheaper for a few thousand
    draws, where the split sampler's pools cost more than they save)."""
    vals = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    if not 0 <= k <= len(vals):
        raise ValueError(f"cannot draw {k} of {len(vals)} items")
    # SFC64 draws raw bits about twice as fast as PCG64. Its seeds come from the caller's
    # generator, so every result stays a function of the run seed: one stream for the
    # sizes in half A, one per half for its coins.
    if dense or vals.shape[1] > DENSE_COLUMNS:
        out = dense_subset_sums(vals, k, size, rng)
        return out[:, 0] if np.ndim(values) == 1 else out
    seeds = [int(x) for x in rng.integers(2**63, size=3)]
    split = SplitPlan.build(vals, k)
    out = split.sums(size, seeds) if split else flip_subset_sums(vals, k, size, np.random.SFC64(seeds[0]))
    return out[:, 0] if np.ndim(values) == 1 else out


def dense_subset_sums(vals: np.ndarray, k: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """(size, m): sums of each column of `vals` (M, m) over `size` independent uniform
    k-subsets of its rows, each the k smallest of M uniform draws, summed by one product."""
    M, m = vals.shape
    out = np.empty((size, m))
    batch = max(1, DENSE_CELLS // max(M, 1))
    for start in range(0, size, batch):
        rows = min(batch, size - start)
        picked = np.argpartition(rng.random((rows, M)), k - 1, axis=1)[:, :k] if 0 < k < M else \
            np.broadcast_to(np.arange(k), (rows, k))
        member = np.zeros((rows, M))
        np.put_along_axis(member, picked, 1.0, axis=1)
        out[start:start + rows] = member @ vals
    return out


# --------------------------------------------------------------------------- split and match

class SplitPlan:
    """Halves A (the first M // 2 items) and B, the law of |S n A|, and the pool sizes needed."""

    def __init__(self, vals: np.ndarray, k: int, law: SizeLaw):
        self.k, self.law = k, law
        half = len(vals) // 2
        self.halves = (Layout(half), Layout(len(vals) - half))
        self.tables = (self.halves[0].tables(vals[:half]), self.halves[1].tables(vals[half:]))
        self.batch = _batch_rows(sum(f * h.words for f, h in zip(law.factors, self.halves)))

    @classmethod
    def build(cls, vals: np.ndarray, k: int) -> SplitPlan | None:
        """The plan, or None when k is so far from M/2 that pools would be wastefully large."""
        law = size_law(len(vals), k)
        return cls(vals, k, law) if law else None

    def draw_sizes_in_a(self, u: np.ndarray) -> np.ndarray:
        """|S n A| by inversion, searchsorted(cdf, u, 'right'), with one comparison per draw."""
        cdf, guide = self.law.cdf, self.law.guide
        g = (u * (len(guide) - 1)).astype(np.intp)
        lo, hi = guide[g], guide[g + 1]
        a = lo + (cdf[lo] <= u)
        wide = np.flatnonzero(hi - lo > 1)          # the rare cells holding several sizes
        a[wide] = np.searchsorted(cdf, u[wide], side="right")
        return a.astype(self.halves[0].size_dtype)

    def sums(self, size: int, seeds: list[int]) -> np.ndarray:
        draws = np.random.Generator(np.random.SFC64(seeds[0]))
        coins = [np.random.SFC64(seed) for seed in seeds[1:]]
        out = np.empty((size, self.tables[0].shape[0]))
        done = 0
        for start in range(0, size, self.batch):
            rows = min(self.batch, size - start)
            # the pools do not depend on the sizes the rows want: the two halves draw theirs
            # on two threads while this one draws the sizes
            pools = self.start_pools(rows, coins)
            a = self.draw_sizes_in_a(draws.random(rows))
            while True:
                a = np.sort(a, kind="stable")
                rank = np.arange(a.size) - _starts(a, self.halves[0].M)[a]   # i-th row wanting its size
                ok, picked = np.ones(a.size, bool), []
                for pool, want in zip(pools, (a, (self.k - a).astype(a.dtype))):
                    first, by_size, pool_sums = pool.result()
                    ok &= rank < first[want + 1] - first[want]
                    picked.append(pool_sums[by_size[np.minimum(first[want] + rank, len(by_size) - 1)]])
                n_ok = int(ok.sum())
                out[done:done + n_ok] = picked[0][ok] + picked[1][ok]
                done += n_ok
                a = a[~ok]
                if not a.size:
                    break
                # rows whose size a pool ran short of try again with fresh pools
                pools = self.start_pools(a.size, coins)
        return out

    def start_pools(self, rows: int, coins: list[np.random.BitGenerator]):
        """Both halves' pools for `rows` rows, drawn on the two sampler threads."""
        return [threads().submit(self.pool, h, rows, coins[h]) for h in (0, 1)]

    def pool(self, h: int, rows: int, bitgen: np.random.BitGenerator):
        """Coin subsets of half h, enough for `rows` rows: where each size starts in size
        order, that order, and each subset's sums (summing all, then picking, costs less
        than gathering the picked subsets' words)."""
        half = self.halves[h]
        words = half.coins(bitgen, int(self.law.factors[h] * 1.05 * rows) + 64)
        sizes = half.sizes(words)
        return _starts(sizes, half.M), np.argsort(sizes, kind="stable"), half.sums(words, self.tables[h])


@dataclass(frozen=True)
class SizeLaw:
    cdf: np.ndarray                  # of |S n A|, the number of the k in half A
    guide: np.ndarray                # u in [g/G, (g+1)/G) gives sizes guide[g]..guide[g+1]
    factors: tuple[float, float]     # coin subsets needed per row in each half


EXACT_LAW = 2_000


def _binomials(n: int) -> list[int]:
    """C(n, j) for j = 0..n, exactly."""
    row = [1]
    for j in range(1, n + 1):
        row.append(row[-1] * (n - j + 1) // j)
    return row


@lru_cache(maxsize=256)
def size_law(M: int, k: int) -> SizeLaw | None:
    """The law of |S n A| for uniform k-subsets S of M items, or None when coin pools
    would need more than MAX_POOL_FACTOR subsets per row. Depends on (M, k) only: cached."""
    half = M // 2
    if half == 0:
        return None
    a = np.arange(half + 1)
    # hypergeometric and binomial(1/2) probabilities. Up to EXACT_LAW items from exact
    # binomial coefficients, each rounded once (scipy.stats agrees to 1e-15; importing it
    # costs half a second, and a word test needs it nowhere else); beyond, big integers cost
    # more than the import
    if M <= EXACT_LAW:
        c_half, c_rest = _binomials(half), _binomials(M - half)
        total = comb(M, k)
        pmf_a = np.array([c_half[j] * c_rest[k - j] / total if 0 <= k - j <= M - half else 0.0 for j in a])
        coins = [np.array([c / 2 ** (len(row) - 1) for c in row]) for row in (c_half, c_rest)]
    else:
        from scipy import stats as sps

        pmf_a = sps.hypergeom.pmf(a, M, half, k)
        coins = [sps.binom.pmf(np.arange(n + 1), n, 0.5) for n in (half, M - half)]
    b = k - a
    inside = (b >= 0) & (b <= M - half)
    pmf_b = np.zeros(M - half + 1)
    pmf_b[b[inside]] = pmf_a[inside]
    # a pool of coin subsets holds size j with probability binom(j); the rows want it
    # with probability pmf(j): the pool must be max(pmf / binom) times the rows
    factors = (float(np.max(pmf_a / coins[0])), float(np.max(pmf_b / coins[1])))
    if max(factors) > MAX_POOL_FACTOR:
        return None
    cdf = np.cumsum(pmf_a) / pmf_a.sum()
    cdf[-1] = 1.0
    G = 8 * len(cdf)
    guide = np.searchsorted(cdf, np.arange(G + 1) / G, side="right")
    cdf.flags.writeable = guide.flags.writeable = False
    return SizeLaw(cdf, guide, factors)


_POOL = None


def threads() -> ThreadPoolExecutor:
    """The sampler's two threads (also for work that releases the GIL: stats.metrics' nulls)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="stimkit-sampler")
    return _POOL



def _batch_rows(words_per_row: float) -> int:
    """Rows per batch so that a batch's coin words stay within MAX_POOL_BYTES."""
    return int(np.clip(MAX_POOL_BYTES // (8 * words_per_row), 1024, MAX_ROWS))


def _starts(values: np.ndarray, top: int) -> np.ndarray:
    """first[j] = how many values (each in 0..top) are below j, for j in 0..top+1: where
    the run of j starts once the values are sorted."""
    return np.concatenate([[0], np.cumsum(np.bincount(values, minlength=top + 1))])


def subset_masks(M: int, k: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """`size` independent uniform k-subsets of M items as a (size, M) 0/1 uint8 array: the
    flipped coins of `flipped_coins`, unpacked from their bits (no loop per row or item). For
    statistics that are not sums of per-item values (a centroid's norm, a rank correlation)."""
    if not 0 <= k <= M:
        raise ValueError(f"cannot draw {k} of {M} items")
    layout = Layout(M)
    words = flipped_coins(layout, k, size, np.random.SFC64(int(rng.integers(2**63))))
    bits = np.unpackbits(np.ascontiguousarray(words.T).view(np.uint8), axis=1, bitorder="little")
    item = np.arange(M)
    column = 64 * layout.item_word + 16 * ((item // LANE_BITS) % LANES) + item % LANE_BITS
    return bits[:, column]


# --------------------------------------------------------------------------- coins and flips

def flip_subset_sums(vals: np.ndarray, k: int, size: int, bitgen: np.random.BitGenerator) -> np.ndarray:
    layout = Layout(len(vals))
    tables = layout.tables(vals)
    batch = _batch_rows(max(layout.words, 1))
    return np.concatenate([layout.sums(flipped_coins(layout, k, min(batch, size - start), bitgen), tables)
                           for start in range(0, size, batch)] or [np.zeros((0, vals.shape[1]))])


def flipped_coins(layout: Layout, k: int, rows: int, bitgen: np.random.BitGenerator) -> np.ndarray:
    """`rows` uniform k-subsets: fair coins, then uniformly chosen items flipped (out of
    rows with too many, into rows with too few) until each row holds exactly k. Coins and
    flips treat all items alike, so a row's law is invariant under any permutation of the
    items, and the only such law on k-subsets is the uniform one."""
    rng = np.random.Generator(bitgen)
    words = layout.coins(bitgen, rows)
    need = layout.sizes(words) - k                  # > 0: too many in
    flat = words.reshape(-1)                        # word w of row r at w * rows + r
    todo = np.flatnonzero(need)
    while todo.size:
        item = rng.integers(0, layout.M, size=todo.size)
        pos = layout.item_word[item] * rows + todo
        bit = layout.item_bit[item]
        inside = (flat[pos] & bit) != 0
        hit = inside == (need[todo] > 0)            # take out an item that is in, or add one that is out
        flat[pos[hit]] ^= bit[hit]
        need[todo[hit]] -= np.sign(need[todo[hit]])
        todo = todo[need[todo] != 0]
    return words
