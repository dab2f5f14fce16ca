from pbmt.cli import main

raise SystemExit(main())
