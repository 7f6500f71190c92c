"""``python -m localcluster``: see ``localcluster.cli``."""

from localcluster.cli import main

raise SystemExit(main())
