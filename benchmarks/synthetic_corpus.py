"""A seeded synthetic parallel corpus of any size, word-aligned, with the
Bible's statistics, for measuring training as the corpus grows.

No large corpus can be downloaded here, and repeating the 28k Bible verses
would keep the vocabulary and the distinct phrase pairs fixed while the
corpus grows, which is not what real text does. So:

1. Each Bible verse pair (``train.tok.es``/``.en`` with its
   grow-diag-final-and alignment) is cut into blocks at every point where
   the alignment allows a monotone cut (the source prefix is linked only to
   the target prefix and the rest to the rest; unaligned words join the
   block that follows). Blocks keep the verse's words, internal alignment
   and reordering; the bank holds every block occurrence of the corpus.
2. A synthetic sentence pair takes a number of blocks drawn from the verses'
   distribution of blocks per verse, joined monotonically: the first drawn
   from the bank (so by its corpus frequency), each next one the block that
   followed it in the Bible with probability ``--follow``, else drawn anew;
   so word sequences across blocks are the Bible's in part, new in part.
3. Vocabulary growth: each occurrence of a rare block type (at most
   ``--rare`` occurrences in the Bible: names, content words, not
   punctuation or function words) sits at a table of a Pitman-Yor Chinese
   restaurant of its type (discount ``--discount``, concentration
   ``--concentration``); a new table is a new variant of the block, whose
   words (both sides) get the suffix ``~k``. Types and distinct phrase pairs
   then grow as a power of the corpus size (Heaps's law, exponent about the
   discount), as in real text.

Writes ``corpus.es``, ``corpus.en`` (tokenised, one sentence a line) and
``corpus.gdfa`` (``i-j`` links) to ``--out`` and prints the sizes.

    python benchmarks/synthetic_corpus.py --pairs 250k --out /tmp/syn250k [--seed 1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from pbmt.base.files import atomic_write, read_lines

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"


def parse_count(text: str) -> int:
    """``28k`` -> 28000, ``1M`` -> 1000000, ``5000`` -> 5000."""
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def verse_blocks(src: list[str], tgt: list[str], links: list[tuple[int, int]]):
    """The blocks of one aligned verse pair: (source words, target words,
    links relative to the block) in order; see the module docstring."""
    targets_of = [[] for _ in src]
    for i, j in links:
        targets_of[i].append(j)
    max_before = [-1] * (len(src) + 1)
    for i in range(len(src)):
        max_before[i + 1] = max([max_before[i]] + targets_of[i])
    min_after = [len(tgt)] * (len(src) + 1)
    for i in range(len(src) - 1, -1, -1):
        min_after[i] = min([min_after[i + 1]] + targets_of[i])
    cuts = [(0, 0)]
    for i in range(1, len(src)):
        j = max_before[i] + 1
        if max_before[i] >= 0 and j <= min_after[i] and (i, j) != cuts[-1] and j > cuts[-1][1]:
            cuts.append((i, j))
    cuts.append((len(src), len(tgt)))
    blocks = []
    for (i0, j0), (i1, j1) in zip(cuts[:-1], cuts[1:]):
        inside = [(i - i0, j - j0) for i, j in links if i0 <= i < i1]
        blocks.append((tuple(src[i0:i1]), tuple(tgt[j0:j1]), tuple(inside)))
    return blocks


def block_bank(data: Path):
    """(blocks, blocks per verse): every block occurrence of the Bible training corpus."""
    src = [line.split() for _, line in read_lines(data / "train.tok.es")]
    tgt = [line.split() for _, line in read_lines(data / "train.tok.en")]
    align = [[tuple(map(int, p.split("-"))) for p in line.split()] for _, line in read_lines(data / "train.align.gdfa")]
    bank, per_verse = [], []
    for f, e, a in zip(src, tgt, align):
        blocks = verse_blocks(f, e, a)
        bank.extend(blocks)
        per_verse.append(len(blocks))
    return bank, np.array(per_verse)


def generate(n_pairs: int, out: Path, seed: int = 1, follow: float = 0.5, rare: int = 10, discount: float = 0.5,
             concentration: float = 0.1, data: Path = DATA) -> dict:
    """Write the corpus of ``n_pairs`` sentence pairs to ``out``; returns its sizes."""
    rng = np.random.default_rng(seed)
    bank, per_verse = block_bank(data)
    types: dict[tuple, int] = {}
    type_of = np.array([types.setdefault(block, len(types)) for block in bank])
    n_blocks = per_verse[rng.integers(len(per_verse), size=n_pairs)]
    total = int(n_blocks.sum())
    # a block follows its Bible predecessor unless it starts a sentence or is drawn anew
    fresh = rng.random(total) >= follow
    fresh[np.cumsum(n_blocks)[:-1]] = True
    fresh[0] = True
    start = np.maximum.accumulate(np.where(fresh, np.arange(total), 0))
    chosen = (rng.integers(len(bank), size=total)[start] + np.arange(total) - start) % len(bank)
    variant = np.zeros(total, dtype=np.int64)
    varied = np.flatnonzero(np.bincount(type_of, minlength=len(types))[type_of[chosen]] <= rare)
    uniform = rng.random((len(varied), 2))
    customers: dict[int, list[int]] = {}  # the table of each customer of a block type
    tables: dict[int, int] = {}
    for k, block_type, (u, v) in zip(varied.tolist(), type_of[chosen[varied]].tolist(), uniform.tolist()):
        seated = customers.setdefault(block_type, [])
        n, t = len(seated), tables.get(block_type, 0)
        if n == 0 or u * (n + concentration) < concentration + discount * t:
            table = t
            tables[block_type] = t + 1
        else:
            table = seated[int(v * n)]
        seated.append(table)
        variant[k] = table
    out.mkdir(parents=True, exist_ok=True)
    src_words, tgt_words = set(), set()
    tokens = 0
    with atomic_write(out / "corpus.es") as fs, atomic_write(out / "corpus.en") as fe, \
            atomic_write(out / "corpus.gdfa") as fa:
        k = 0
        for count in n_blocks.tolist():
            f, e, a = [], [], []
            for _ in range(count):
                bf, be, ba = bank[chosen[k]]
                suffix = f"~{variant[k]}" if variant[k] else ""
                a.extend(f"{i + len(f)}-{j + len(e)}" for i, j in ba)
                f.extend(w + suffix for w in bf)
                e.extend(w + suffix for w in be)
                k += 1
            src_words.update(f)
            tgt_words.update(e)
            tokens += len(f) + len(e)
            fs.write(" ".join(f) + "\n")
            fe.write(" ".join(e) + "\n")
            fa.write(" ".join(a) + "\n")
    return {"pairs": n_pairs, "tokens": tokens, "src_types": len(src_words), "tgt_types": len(tgt_words),
            "block_types": len(types), "variants": int(sum(tables.values()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", required=True, help="sentence pairs, e.g. 250k or 1M")
    parser.add_argument("--out", type=Path, required=True, help="folder to write corpus.{es,en,gdfa} to")
    parser.add_argument("--seed", type=int, default=1, help="random seed")
    parser.add_argument("--follow", type=float, default=0.5, help="probability that a block is followed by its "
                        "Bible successor")
    parser.add_argument("--rare", type=int, default=10, help="block types seen at most this often get variants")
    parser.add_argument("--discount", type=float, default=0.5, help="Pitman-Yor discount (vocabulary growth)")
    parser.add_argument("--concentration", type=float, default=0.1, help="Pitman-Yor concentration")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the shared Bible data")
    args = parser.parse_args()
    sizes = generate(parse_count(args.pairs), args.out, args.seed, args.follow, args.rare, args.discount,
                     args.concentration, args.data)
    print(" ".join(f"{k}={v:,}" for k, v in sizes.items()))


if __name__ == "__main__":
    main()
