"""One module per ``pbmt`` verb: ``add_arguments(parser)`` and ``run(args) -> exit code``."""
