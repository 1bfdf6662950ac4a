from context_keeper.cli import main

raise SystemExit(main())
