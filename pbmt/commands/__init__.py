"""One module per ``pbmt`` verb: ``add_arguments(parser)`` and ``run(args) -> exit code``; ``cli`` the ``pbmt``
command that dispatches to them, ``options`` what their parsers share, ``server`` what ``pbmt serve`` runs."""
