"""One module per ``pbmt`` verb: ``add_arguments(parser)`` and ``run(args) -> exit code``; ``options`` holds what
their parsers share (old spellings as hidden aliases, defaults read from the code)."""
