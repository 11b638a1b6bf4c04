"""``nsvqa-fetch-pretrained NAME [--url URL]``: a pretrained set into the user cache, every file checked.

    nsvqa-fetch-pretrained mid-mini --url https://example.org/nsvqa/pretrained/mid-mini
    nsvqa-fetch-pretrained mid-mini --url file:///data/sets/mid-mini
    nsvqa-fetch-pretrained mid-mini                # from $NSVQA_PRETRAINED_URL/mid-mini, or a clone's pretrained/

``URL`` is the set's own folder: a ``file://`` folder or an ``http(s)://`` base under which lie
``manifest.json`` and the files its ``sha256`` lists (the layout :mod:`nsvqa.pretrained` describes).
The manifest is read first, then each file it lists, into a temporary folder inside the cache
(:func:`nsvqa.fileio.temporary_folder`); each file's sha256 is checked against the manifest as it
arrives, and only a set whose every file passed is renamed into place
(``<cache>/<name>/``, :func:`nsvqa.pretrained.cache_dir`), so a failed or interrupted fetch leaves
nothing half-written there (its temporary is removed, or swept by the next fetch once its writer is
gone). A set already in the cache with the same manifest is left as it is; one that differs is
replaced only with ``--force``. Nothing is fetched at import; the standard library's urllib does the
transfers.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from executors.errors import FormatError
from executors.io import loads_json, read_json
from nsvqa.cli import command_parser
from nsvqa.fileio import atomic_open, sweep_temporaries, temporary_folder, temporary_name
from nsvqa.pretrained import (MANIFEST, PRETRAINED_DIR, PretrainedError, cache_dir, is_set_path, safe_relative,
                              verified)

#: The variable naming the base URL of published sets (``<base>/<name>/manifest.json``), the default of ``--url``.
URL_ENV = "NSVQA_PRETRAINED_URL"
#: Seconds a transfer may stall before it fails.
TIMEOUT_S = 60.0
#: Bytes read at a time.
CHUNK = 1 << 20


class FetchError(PretrainedError):
    """A set that could not be fetched: unreachable, not a set, or a file whose sha256 differs (named)."""


def default_url(name: str) -> str:
    """Where ``name`` is fetched from without ``--url``: ``$NSVQA_PRETRAINED_URL/<name>``, else the
    set in a clone's ``pretrained/`` (a ``file://`` URL).

    Raises:
        FetchError: neither is there (the message says to pass ``--url``).
    """
    base = os.environ.get(URL_ENV)
    if base:
        return base.rstrip("/") + "/" + urllib.parse.quote(name)
    if (PRETRAINED_DIR / name / MANIFEST).is_file():
        return (PRETRAINED_DIR / name).resolve().as_uri()
    raise FetchError(f"no URL for set {name!r}: pass --url (the folder holding its {MANIFEST}) or set {URL_ENV}")


def _join(url: str, rel: str) -> str:
    """``url`` (a set's folder) / ``rel`` (a manifest's file name, quoted per part)."""
    return url.rstrip("/") + "/" + "/".join(urllib.parse.quote(p) for p in rel.split("/"))


def _open(url: str):
    """A readable response for ``url`` (``file://``, ``http://`` or ``https://``).

    Raises:
        FetchError: another scheme, or the transfer failed (the URL and why named).
    """
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("file", "http", "https"):
        raise FetchError(f"{url}: a file://, http:// or https:// URL expected")
    try:
        return urllib.request.urlopen(url, timeout=TIMEOUT_S)  # noqa: S310 (schemes checked above)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise FetchError(f"{url}: not fetched ({type(e).__name__}: {getattr(e, 'reason', e)})") from None


def _download(url: str, path: Path, digest: str | None) -> str:
    """``url`` into ``path`` (a new file in the fetch's temporary folder); returns its sha256.

    Raises:
        FetchError: the transfer failed, or its sha256 is not ``digest`` (when given).
    """
    h = hashlib.sha256()
    with _open(url) as src, atomic_open(path, "wb") as dst:  # the file appears only whole and checked
        try:
            while chunk := src.read(CHUNK):
                h.update(chunk)
                dst.write(chunk)
        except OSError as e:
            raise FetchError(f"{url}: transfer broke off ({type(e).__name__}: {e})") from None
        got = h.hexdigest()
        if digest is not None and got != digest:
            raise FetchError(f"{url}: sha256 {got} differs from the {digest} its manifest records: a corrupted or "
                             f"altered copy; nothing was written to the cache")
    return got


def _read_manifest(path: Path, url: str, name: str) -> dict[str, Any]:
    """The fetched manifest, checked: a JSON object naming set ``name`` whose ``sha256`` maps file
    names inside the set to digests.

    Raises:
        FetchError: not such a manifest (the URL and the field named).
    """
    try:
        manifest = loads_json(path.read_bytes(), url, allow_nan=True)
    except FormatError as e:
        raise FetchError(f"{url}: not a set's manifest ({e})") from None
    files = manifest.get("sha256") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) and len(v) == 64 for v in files.values()):
        raise FetchError(f"{url}, field 'sha256': expected file name -> sha256 (hex) of each file of the set")
    if manifest.get("name") != name:
        raise FetchError(f"{url}, field 'name': {manifest.get('name')!r}; expected the set asked for, {name!r}")
    for rel in files:
        try:
            safe_relative(rel, url)
        except PretrainedError as e:
            raise FetchError(str(e)) from None
    return manifest


def fetch_set(name: str, url: str | None = None, *, cache: str | os.PathLike | None = None,
              force: bool = False) -> Path:
    """Fetch set ``name`` from ``url`` (its folder: ``file://`` or ``http(s)://``; default
    :func:`default_url`) into ``cache`` (default :func:`nsvqa.pretrained.cache_dir`), every file
    checked against the manifest's sha256, the set renamed into place only once whole.

    Returns:
        ``<cache>/<name>``.

    Raises:
        FetchError: a bad name or URL, a transfer that failed, a manifest that is not one of set
            ``name``, a file whose sha256 differs, or a different set already cached without
            ``force``; nothing is left in the cache but what was there before.
    """
    if is_set_path(name) or not name or name.startswith(".") or name != name.strip():
        raise FetchError(f"set name {name!r}: a plain name (letters, digits, - _ .), not a path")
    url = url or default_url(name)
    if urllib.parse.urlsplit(url).scheme == "" and Path(url).is_dir():
        url = Path(url).resolve().as_uri()  # a folder given as a plain path
    root = Path(cache) if cache is not None else cache_dir()
    final = root / name
    sweep_temporaries(root)  # what a killed fetch left
    tmp = temporary_folder(root, name)
    try:
        _download(_join(url, MANIFEST), tmp / MANIFEST, None)
        manifest = _read_manifest(tmp / MANIFEST, _join(url, MANIFEST), name)
        for rel, digest in manifest["sha256"].items():
            _download(_join(url, rel), tmp / rel, digest)
        if (final / MANIFEST).is_file():
            if (final / MANIFEST).read_bytes() == (tmp / MANIFEST).read_bytes():
                try:
                    verified(final)
                    return final  # the same set, whole: nothing to replace
                except PretrainedError:
                    pass  # a damaged copy of the same set: replaced by the whole one
            elif not force:
                raise FetchError(f"{final}: a different set {name!r} is cached there; --force replaces it")
        umask = os.umask(0o022)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # a folder as any other (mkdtemp makes it 0700)
        old = root / temporary_name(name) if final.exists() else None
        if old is not None:
            final.rename(old)  # aside first: the rename below puts the whole new set in its place
        tmp.rename(final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return final
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser("nsvqa-fetch-pretrained", __doc__.splitlines()[0], epilog="\n".join(__doc__.splitlines()[1:5]))
    p.add_argument("name", help="the set's name (e.g. mid-mini)")
    p.add_argument("--url", default=None,
                   help=f"the set's folder: file:///... or http(s)://... holding {MANIFEST} "
                        f"(default: ${URL_ENV}/NAME, else a clone's pretrained/NAME)")
    p.add_argument("--cache", type=Path, default=None,
                   help="the cache folder (default: $XDG_CACHE_HOME/nsvqa/pretrained or ~/.cache/nsvqa/pretrained)")
    p.add_argument("--force", action="store_true", help="replace a different set of the same name in the cache")
    return p


def main(argv: list[str] | None = None) -> int:
    """The command: 0 on success (the set's folder printed), 2 when the fetch failed (one line)."""
    args = get_args_parser().parse_args(argv)
    try:
        folder = fetch_set(args.name, args.url, cache=args.cache, force=args.force)
    except PretrainedError as e:
        print(f"nsvqa-fetch-pretrained: {e}", file=sys.stderr)
        return 2
    manifest = read_json((folder / MANIFEST))
    print(f"{folder}: set {args.name!r}, {len(manifest['sha256'])} files checked against its manifest's sha256")
    return 0


if __name__ == "__main__":
    sys.exit(main())
