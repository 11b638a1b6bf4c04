"""Write the variant catalogue ``nsvqa/generation/data/variants/*.json``.

The specs, the factors and the aliases, and where their figures come from, are
:mod:`nsvqa.generation.catalogue`; this script writes them with the catalogue's index,
``catalogue.json``. The output is checked in. When the ``--dist`` folder is absent it reads
the tables back from the committed variants, so a clone regenerates the catalogue byte for byte
(tests/generation/test_variants.py checks it; see docs/variants.md)::

    python scripts/build_variants.py --dist tests/fixtures/reference/superclevr/dist --out nsvqa/generation/data/variants
    python scripts/build_variants.py --dist none --out /tmp/variants     # from what a clone has
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from nsvqa.fileio import write_json_atomic
from nsvqa.config import HelpFormatter, parse_checked
from nsvqa.generation.catalogue import Tables, catalogue, catalogue_index
from nsvqa.generation.variants import VariantError


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=__doc__.splitlines()[0])
    p.add_argument("--dist", type=Path, default=Path("tests/fixtures/reference/superclevr/dist"),
                   help="folder of the Super-CLEVR generator's dist/*.npz tables (default: "
                        "tests/fixtures/reference/superclevr/dist, the committed copy); when it is "
                        "absent, the tables are read back from the committed variants in --from")
    p.add_argument("--from", dest="committed", type=Path, default=Path("nsvqa/generation/data/variants"),
                   help="the committed catalogue the tables are read from without --dist")
    p.add_argument("--ontology", type=Path, default=Path("executors/data/ontologies/superclevr.json"),
                   help="the ontology JSON the variants' values are checked against")
    p.add_argument("--out", type=Path, default=Path("nsvqa/generation/data/variants"),
                   help="folder of the variant JSON files to write")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    tables = Tables(args.dist, args.committed)
    try:
        cat = catalogue(tables, json.loads(args.ontology.read_text()))
    except VariantError as e:
        raise SystemExit(f"build_variants.py: {e}") from None
    args.out.mkdir(parents=True, exist_ok=True)
    for name, spec in cat.items():
        write_json_atomic(args.out / f"{name}.json", spec, indent=1)
    write_json_atomic(args.out / "catalogue.json", catalogue_index(), indent=1)
    print(f"wrote {len(cat)} variants and catalogue.json to {args.out} (tables from {tables.source})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
