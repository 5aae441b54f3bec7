from precmon.cli import main

raise SystemExit(main())
