import sys

from ragjudge.cli import main

sys.exit(main())
