"""Every complete path of a search-graph lattice, by recursion: the brute-force reference of lattice tests."""


def complete_paths(lattice) -> list[list[int]]:
    """Every path from node 0 to the final node of ``lattice`` (``pbmt.search.lattice.Lattice``), as lists of
    edges, found by recursion over the edges (independent of the kernels)."""
    out_edges = {}
    for e, s in enumerate(lattice.source.tolist()):
        out_edges.setdefault(s, []).append(e)
    final = lattice.n_nodes - 1
    paths = []

    def walk(node, path):
        if node == final:
            paths.append(path)
            return
        for e in out_edges.get(node, []):
            walk(int(lattice.target[e]), path + [e])

    walk(0, [])
    return paths


def path_words(lattice, path) -> list[str]:
    """The output words of a path."""
    return [w for e in path for w in
            lattice.words[lattice.word_offsets[lattice.option[e]]:lattice.word_offsets[lattice.option[e] + 1]]]
