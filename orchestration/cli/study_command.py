"""What ``nsvqa-run-study`` and its verbs (``study_run``, ``study_report``, ``study_checks``) share:
the command's name and the committed results it estimates from. Standard library only."""
from pathlib import Path

PROG = "nsvqa-run-study"
#: the committed pieces whose steps, scaled, estimate a study at another scale (--estimate, and the
#: time limits of a launch into a folder without committed pieces of its own)
ESTIMATE_FROM = Path(__file__).resolve().parents[2] / "results" / "study"

__all__ = ["PROG", "ESTIMATE_FROM"]
