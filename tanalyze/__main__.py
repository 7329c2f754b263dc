import sys

from tanalyze.cli import main

sys.exit(main())
