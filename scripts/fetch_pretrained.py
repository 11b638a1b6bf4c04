"""``python scripts/fetch_pretrained.py NAME [--url URL]``: the command ``nsvqa-fetch-pretrained``
(:mod:`nsvqa.fetch`) from a clone: a pretrained set into the user cache, every file sha256-checked."""
from __future__ import annotations

import sys

from nsvqa.fetch import main

if __name__ == "__main__":
    sys.exit(main())
