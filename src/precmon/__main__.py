"""`python -m precmon`: the same as the `precmon` command."""

from precmon.cli import main

raise SystemExit(main())
