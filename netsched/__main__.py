"""`python -m netsched` is the `netsched` command."""

import sys

from netsched.cli import main

sys.exit(main())
