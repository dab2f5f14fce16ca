from pbmt.commands.cli import main

raise SystemExit(main())
