"""The frozen code tree a study run executes: a git worktree of HEAD, made once per commit and
reused, so that commits made while pieces run change nothing they run (``run_study.py --frozen``
and every job of a launch). Standard library and :class:`~orchestration.study.settings.errors.StudyError` only."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from orchestration.study.settings.errors import StudyError

#: Set in the environment of a run from a frozen tree (``run_study.py --frozen``, a launch's jobs):
#: the tree's folder; a run that finds it runs that tree as it is.
FROZEN_ENV = "NSVQA_FROZEN_CODE"
#: the file whose presence says a code tree is whole
SCRIPT = Path("scripts") / "run_study.py"
#: this checkout
REPO = Path(__file__).resolve().parents[3]


def run_git(repo: str | os.PathLike, *args: str, needs: str) -> str:
    """``git -C REPO ARGS``'s output.

    Raises:
        StudyError: git fails or is missing: ``needs`` (why a checkout is needed), the command and
            git's message.
    """
    try:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise StudyError(f"{needs}: git {' '.join(args)}: {getattr(e, 'stderr', '') or e}".strip()) from None


def frozen_tree(folder: str | os.PathLike, repo: str | os.PathLike | None = None, *,
                sweep: bool = False) -> tuple[Path, str]:
    """A git worktree of ``repo``'s HEAD (default: this checkout) at ``FOLDER/code-<commit>`` (made
    once, reused; a folder there without :data:`SCRIPT`, left by an interrupted call, is made
    again), and the uncommitted changes to tracked files it leaves out (``git status --porcelain``).
    Every call prunes git's records of worktrees whose folders are gone. ``sweep`` removes the other
    ``FOLDER/code-*`` trees first (one process runs one tree: ``--frozen``); a launch keeps them,
    since its queued jobs may still run an older one.

    Raises:
        StudyError: not a git checkout, or git fails (its message).
    """
    repo = Path(repo) if repo is not None else REPO

    def git(*a: str) -> str:
        return run_git(repo, *a, needs="a frozen copy of the committed code needs a git checkout")

    sha = git("rev-parse", "--short=12", "HEAD").strip()
    folder = Path(folder)
    where = (folder / f"code-{sha}").resolve()
    if sweep:
        for old in folder.glob("code-*"):
            if old.resolve() != where:  # a copy of another commit, a worktree or a leftover folder
                shutil.rmtree(old, ignore_errors=True)
    git("worktree", "prune")  # the records of code trees removed since (by hand, or a folder lost)
    if not (where / SCRIPT).is_file():
        shutil.rmtree(where, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", str(where), sha)
    return where, git("status", "--porcelain", "--untracked-files=no")


__all__ = ["FROZEN_ENV", "SCRIPT", "run_git", "frozen_tree"]
