"""Numba kernels that parse a Moses phrase table's text from its bytes (UTF-8, already checked valid).

``scan_lines`` splits a run of whole lines into fields and tokens and reads the numbers, with no state between
runs, so the caller can show progress run by run; ``intern_words`` (``pbmt.base.byte_text``) and ``source_trie``
then number the words and source phrases of the whole table in order of first sight. Fields, tokens and numbers are read as
``pbmt.base.byte_text`` reads them, so a table reads the same as it would through Python strings.

A kernel that meets a line it does not accept reports its first byte and stops; the Python layer then names the
line and what is wrong with it (``pbmt.model.phrase_table``).
"""

import numpy as np
from numba import njit

from pbmt.base.byte_text import alignment_point, decimal_number, field_end, line_span, next_token, token_spans
from pbmt.base.hashtable import build_table, insert

MAX_PHRASE_POSITION = 2 ** 15 - 1  # the largest word position of a phrase pair's links (int16)


@njit(cache=True)
def scan_lines(buf, start, end, n_scores, lines, src, tgt, scores, align):
    """Fields, tokens and numbers of the lines in ``buf[start:end]`` (whole lines; blank ones skipped).

    buf: uint8[n], UTF-8 text; ``n_scores``: scores per line, or -1 to take the first line's count. Written:
    ``lines`` int64[>= n_lines, 4] (a line's first byte, its source tokens, target tokens, alignment points),
    ``src``, ``tgt`` int64[>= n_tokens, 2] (each token's first byte and length), ``scores`` float64[>= n_lines *
    n_scores] (row by row; NaN where the text needs Python's ``float``), ``align`` int16[>= n_points, 2].
    Returns (n_scores, the first byte of the first line not accepted or -1 (the lines before it are written),
    n_lines, n_src_tokens, n_tgt_tokens, n_points).
    """
    n_lines = n_src = n_tgt = n_points = 0
    bad = -1
    line = start
    while line < end:
        first, line_end, next_line = line_span(buf, line, end)
        if next_token(buf, first, line_end)[0] == line_end:
            line = next_line
            continue
        bad = line
        src_end = field_end(buf, first, line_end)
        tgt_end = field_end(buf, src_end + 3, line_end) if src_end < line_end else line_end
        if tgt_end == line_end:
            break
        n_src_line = token_spans(buf, first, src_end, src, n_src)
        n_tgt_line = token_spans(buf, src_end + 3, tgt_end, tgt, n_tgt)
        if n_src_line == 0 or n_tgt_line == 0:
            break
        score_end = field_end(buf, tgt_end + 3, line_end)
        i, found = tgt_end + 3, 0
        row = n_lines * max(n_scores, 0)
        while True:
            s, e = next_token(buf, i, score_end)
            if s == e:
                break
            if n_scores < 0 or found < n_scores:
                scores[row + found] = decimal_number(buf, s, e)
            found += 1
            i = e
        if n_scores < 0:
            n_scores = found
        if found == 0 or found != n_scores:
            break
        points = 0
        if score_end < line_end:  # alignment points i-j inside the pair
            align_end = field_end(buf, score_end + 3, line_end)
            i = score_end + 3
            while True:
                s, e = next_token(buf, i, align_end)
                if s == e:
                    break
                ok, a, b = alignment_point(buf, s, e)
                if not ok or a >= n_src_line or b >= n_tgt_line or max(a, b) > MAX_PHRASE_POSITION:
                    points = -1
                    break
                align[n_points + points, 0] = a
                align[n_points + points, 1] = b
                points += 1
                i = e
        if points < 0:
            break
        bad = -1
        lines[n_lines, 0] = line
        lines[n_lines, 1] = n_src_line
        lines[n_lines, 2] = n_tgt_line
        lines[n_lines, 3] = points
        n_src += n_src_line
        n_tgt += n_tgt_line
        n_points += points
        n_lines += 1
        line = next_line
    return max(n_scores, 0), bad, n_lines, n_src, n_tgt, n_points


@njit(cache=True)
def source_trie(words, offsets, n_words):
    """The source phrases of the lines, numbered in order of first sight, and the trie over them.

    words: int32 source word ids of every line, ``offsets``: int64[n_lines + 1] CSR over them; ``n_words``: the
    source vocabulary's size. Returns (phrase of each line int64[n_lines], the phrases' words as CSR (offsets
    int64[n_phrases + 1], int32 ids), the trie's nodes: parent int64[n_nodes], last word int32[n_nodes],
    phrase ending there int32[n_nodes] or -1; node 0 is the root). Nodes are numbered as they are first
    reached, so the trie is the one a walk over the distinct phrases in order of first sight builds.
    """
    n_lines = offsets.shape[0] - 1
    phrase_of_line = np.empty(n_lines, np.int64)
    parents = np.empty(words.shape[0] + 1, np.int64)
    last = np.empty(words.shape[0] + 1, np.int32)
    phrase_at = np.full(words.shape[0] + 1, -1, np.int32)
    parents[0], last[0] = -1, 0
    n_nodes = 1
    keys, node_at = build_table(parents[:1], last[:1], n_words)  # node_at: the node whose key is in each slot
    phrase_offsets = np.zeros(n_lines + 1, np.int64)
    phrase_words = np.empty(words.shape[0], np.int32)
    n_phrases = 0
    for line in range(n_lines):
        node = 0
        for k in range(offsets[line], offsets[line + 1]):
            s, new = insert(keys, n_words, node, words[k])
            if not new:
                node = node_at[s]
                continue
            parents[n_nodes], last[n_nodes], node_at[s] = node, words[k], n_nodes
            node = n_nodes
            n_nodes += 1
            if 2 * n_nodes > keys.shape[0]:  # half full: a table twice as large
                keys, node_at = build_table(parents[:n_nodes], last[:n_nodes], n_words)
        if phrase_at[node] < 0:
            phrase_at[node] = n_phrases
            at = phrase_offsets[n_phrases]
            for k in range(offsets[line], offsets[line + 1]):
                phrase_words[at] = words[k]
                at += 1
            phrase_offsets[n_phrases + 1] = at
            n_phrases += 1
        phrase_of_line[line] = phrase_at[node]
    return (phrase_of_line, phrase_offsets[:n_phrases + 1], phrase_words[:phrase_offsets[n_phrases]],
            parents[:n_nodes], last[:n_nodes], phrase_at[:n_nodes])
