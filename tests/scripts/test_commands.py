"""The installed commands (pyproject.toml's ``[project.scripts]``): each names itself in ``usage:``
and answers ``--version``; its module imports nothing heavy, so ``--help`` answers at once; an
install without an extra gets one line naming it and the exit status 2; ``nsvqa-execute-programs``
runs on numpy alone and ``nsvqa-evaluate-rd`` without torch (issue 78)."""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import nsvqa
from nsvqa.cli import HEAVY_MODULES, needs_extra

REPO = Path(__file__).resolve().parents[2]
COMMANDS = {name: target.split(":")[0] for name, target in
            tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"].items()}
#: Python run first in a subprocess: every module named in argv[1] (comma-separated) cannot be imported.
BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = set(sys.argv.pop(1).split(","))
    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, Blocker())
""")


def _run_blocked(blocked, code: str, *argv: str) -> subprocess.CompletedProcess:
    """``python -c BLOCKER + code`` with ``blocked`` modules unimportable, in the repository."""
    return subprocess.run([sys.executable, "-c", BLOCKER + textwrap.dedent(code), ",".join(blocked), *argv],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_names_the_installed_command_and_version_prints_the_version(command, capsys):
    main = importlib.import_module(COMMANDS[command]).main
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith(f"usage: {command} "), out[:200]
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out == f"{command} {nsvqa.__version__}\n"


def test_a_shim_prints_the_installed_name():
    proc = subprocess.run([sys.executable, "scripts/evaluate_rd.py", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: nsvqa-evaluate-rd "), proc.stderr[-500:]


@pytest.mark.parametrize("command", sorted(c for c in COMMANDS if ".cli." in COMMANDS[c]))
def test_without_the_heavy_stack_help_answers(command):
    """The command's module imported with every heavy module missing (as on ``pip install nsvqa``):
    ``--help`` answers (no parser needs the registry's models or a network's module)."""
    proc = _run_blocked(sorted(HEAVY_MODULES), """
        import runpy
        module = sys.argv[1]
        sys.argv[1:2] = []
        runpy.run_module(module, run_name="__main__")
    """, COMMANDS[command], "--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith(f"usage: {command} ")


def test_a_missing_module_after_parsing_is_one_line_and_status_2(tmp_path):
    """``sys.modules['torch'] = None`` (torch not installed): the command parses its arguments,
    then says which install it needs, in one line."""
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"questions": []}))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # `import torch` raises ModuleNotFoundError, as without the extra
        from orchestration.cli.parse_questions import main
        sys.exit(main(sys.argv[1:]))
    """), "--checkpoint", str(tmp_path / "run"), "--questions", str(questions), "--out", str(tmp_path / "p.json")],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == ['nsvqa-parse-questions needs the full install: pip install "nsvqa[full]" '
                                        "(no module named 'torch')"]


def test_needs_extra_passes_other_missing_modules_on():
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        with needs_extra("nsvqa-x"):
            import no_such_module  # noqa: F401
    with pytest.raises(SystemExit) as e:
        with needs_extra("nsvqa-x", "eval"):
            raise ModuleNotFoundError("No module named 'matplotlib.pyplot'", name="matplotlib.pyplot")
    assert e.value.code == 2


def test_execute_programs_runs_on_numpy_alone(tmp_path):
    """The executors' command on the bundled examples with torch, PIL, pycocotools, scipy and
    matplotlib unimportable: it answers, and none of them was asked for."""
    out = tmp_path / "predictions.jsonl"
    examples = REPO / "data" / "examples"
    proc = _run_blocked(sorted(HEAVY_MODULES), """
        from nsvqa.cli.execute_programs import main
        status = main(sys.argv[1:])
        assert not [m for m in sys.modules if m.partition(".")[0] in BLOCKED], "a heavy module was imported"
        sys.exit(status)
    """, "--scenes", str(examples / "scenes.json"), "--questions", str(examples / "questions.json"),
        "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and any(r["answer"] == r["gold"] for r in rows)


@pytest.fixture
def one_run(tmp_path):
    from nsvqa.artifacts.predictions import Prediction, predictions_path, write_predictions

    run = tmp_path / "run"
    for train in ("easy", "mid", "hard"):
        for test in ("easy", "mid", "hard"):
            write_predictions(predictions_path(run, "pnsvqa", train, test),
                              [Prediction(question_index=i, question_type="count", answer="2",
                                          prediction="2" if i % 3 else "1", probability=0.8) for i in range(6)])
    return run


def test_evaluate_rd_runs_without_torch(one_run, tmp_path):
    out = tmp_path / "report"
    # the [eval] extra: numpy, scipy, matplotlib (which brings pillow); no torch, no pycocotools
    proc = _run_blocked(["torch", "torchvision", "pycocotools", "transformers"], """
        from orchestration.cli.evaluate_rd import main
        status = main(sys.argv[1:])
        assert "torch" not in sys.modules
        sys.exit(status)
    """, "--runs", str(one_run), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["factors"]["visual"]["models"]["pnsvqa"]["matrix"][1][1] == pytest.approx(4 / 6)


def test_evaluate_rd_names_its_extra_when_matplotlib_is_missing(one_run, tmp_path):
    code = """
        from orchestration.cli.evaluate_rd import main
        sys.exit(main(sys.argv[1:]))
    """
    proc = _run_blocked(["torch", "matplotlib", "scipy"], code, "--runs", str(one_run), "--out", str(tmp_path / "a"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ['nsvqa-evaluate-rd needs the eval install: pip install "nsvqa[eval]" '
                                        "(no module named 'matplotlib')"]
    proc = _run_blocked(["torch", "matplotlib", "scipy"], code, "--runs", str(one_run), "--out", str(tmp_path / "b"),
                        "--no-plots")  # numpy alone: a report without its figures
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "b" / "report.json").is_file()
