"""Argos Translate set-up: where its packages live, installing them from local `.argosmodel`
files, the one opt-in download, and the installed route source -> [pivot ->] target.

* Packages come from local `.argosmodel` files (`--packages-dir`, one folder per language project;
  the spaCy project lists them as assets with URL and checksum for machines that are online).
  Nothing is ever downloaded unless asked (`download_route`, `--download`).
* Route: the direct package when installed, otherwise source -> pivot -> target (pivot from
  languages/<target>/locale.yml, English by default, as the thesis did es -> en -> fr).

Argos is imported lazily so the rest of the factory works without it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import zipfile
from pathlib import Path
from typing import Any

from .locale import Locale
from .netguard import network_allowed

log = logging.getLogger(__name__)

_MARKER = ".deid_factory_sha256"  # written into each package we install, to detect a changed file


class RouteMissing(RuntimeError):
    """No installed Argos route from source to target; the message says what to install and how."""


def _package_members(path: Path) -> tuple[dict[str, Any], set[str]]:
    """metadata.json and top-level folder names inside an .argosmodel zip."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        meta_name = next((n for n in names if n.count("/") == 1 and n.endswith("/metadata.json")), None)
        if meta_name is None:
            raise ValueError(f"{path}: not an Argos package (no <root>/metadata.json)")
        metadata = json.loads(zf.read(meta_name).decode("utf-8"))
        metadata["_root"] = meta_name.split("/")[0]
        dirs = {n.split("/")[1] for n in names if n.count("/") >= 2}
    return metadata, dirs


def package_files(packages_dir: str | Path | None) -> list[Path]:
    if not packages_dir:
        return []
    packages_dir = Path(packages_dir)
    if not packages_dir.is_dir():
        raise FileNotFoundError(f"packages directory not found: {packages_dir}")
    return sorted(packages_dir.glob("*.argosmodel"))


def _auto_chunk_type(packages_dir, argos_dir) -> str | None:
    """SPACY when every package at hand carries its own spaCy sentence splitter and none a Stanza or
    MiniSBD one: Argos' default splitter would otherwise try to download a MiniSBD model."""
    sbd: list[set[str]] = []
    for path in package_files(packages_dir):
        sbd.append(_package_members(path)[1] & {"spacy", "stanza", "minisbd"})
    if argos_dir and Path(argos_dir).is_dir():
        for pkg in Path(argos_dir).iterdir():
            if (pkg / "metadata.json").exists():
                sbd.append({p.name for p in pkg.iterdir() if p.name in ("spacy", "stanza", "minisbd")})
    if sbd and all(s == {"spacy"} for s in sbd):
        return "SPACY"
    return None


def configure_argos(
    packages_dir: str | Path | None = None,
    argos_dir: str | Path | None = None,
    device: str = "cpu",
    beam_size: int | None = None,
    intra_threads: int | None = None,
    compute_type: str | None = None,
) -> None:
    """Point Argos at its settings before (or, for what it re-reads, after) it is imported.

    argos_dir: where packages are installed (ARGOS_PACKAGES_DIR); default: Argos' own folder.
    compute_type: CTranslate2's (float32, int8, ...); default Argos' "auto" (int8 on most CPUs)."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda, not {device!r}")
    env = {"ARGOS_DEVICE_TYPE": device}
    if argos_dir:
        Path(argos_dir).mkdir(parents=True, exist_ok=True)
        env["ARGOS_PACKAGES_DIR"] = str(Path(argos_dir).resolve())
    if beam_size:
        env["ARGOS_BEAM_SIZE"] = str(beam_size)
    if intra_threads is not None:
        env["ARGOS_INTRA_THREADS"] = str(intra_threads)
    if compute_type:
        env["ARGOS_COMPUTE_TYPE"] = compute_type
    if "ARGOS_CHUNK_TYPE" not in os.environ:
        chunk = _auto_chunk_type(packages_dir, argos_dir)
        if chunk:
            env["ARGOS_CHUNK_TYPE"] = chunk
    os.environ.update(env)
    import sys

    if "argostranslate.settings" in sys.modules:  # already imported: update what it reads at call time
        settings = sys.modules["argostranslate.settings"]
        settings.device = device
        if beam_size:
            settings.beam_size = int(beam_size)
        if intra_threads is not None:
            settings.intra_threads = int(intra_threads)
        if compute_type:
            settings.compute_type = compute_type
        if os.environ.get("ARGOS_CHUNK_TYPE") in settings.chunk_type_mapping:
            settings.chunk_type = settings.chunk_type_mapping[os.environ["ARGOS_CHUNK_TYPE"]]
        if argos_dir:
            settings.package_data_dir = Path(env["ARGOS_PACKAGES_DIR"])
            settings.package_dirs = [settings.package_data_dir]
        _clear_argos_caches()


def _clear_argos_caches() -> None:
    import sys

    tr = sys.modules.get("argostranslate.translate")
    if tr is not None:
        tr.get_installed_languages.cache_clear()
        tr.installed_translates.clear()


def _import_argos():
    """Import argostranslate with its one download-at-import (the spaCy xx model) turned off."""
    try:
        from argostranslate import networking, settings  # noqa: F401
    except ImportError:
        raise RouteMissing("Argos Translate is not installed: install the translate extra "
                           "(pip install 'deid-factory[translate]')") from None

    def offline_cache_spacy():  # the original downloads xx_sent_ud_sm when not cached
        cached = Path(settings.cache_dir) / "spacy"
        return cached if (cached / "senter" / "model").exists() else None

    networking.cache_spacy = offline_cache_spacy
    from argostranslate import package, translate, utils

    if not settings.debug:
        # Argos logs every paragraph it translates at INFO level; clinical text stays out of logs.
        utils.logger.setLevel(logging.WARNING)
    return package, translate


def import_argos_with(env: dict[str, str]):
    """Import argostranslate with the environment variables `env` set for the import only (Argos
    reads its data/config/cache folders once, at import: tests and benchmarks point them at a temp
    folder so nothing lands in the user's home), then give the process its own values back."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return _import_argos()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def install_packages(packages_dir: str | Path | None) -> list[str]:
    """Install every .argosmodel of packages_dir that is not installed yet (or changed); return pair names."""
    files = package_files(packages_dir)
    if not files:
        return []
    package, _ = _import_argos()
    from argostranslate import settings

    installed: list[str] = []
    for path in files:
        metadata, _ = _package_members(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        pair = f"{metadata.get('from_code')}-{metadata.get('to_code')}"
        target_dir = Path(settings.package_data_dir) / metadata["_root"]
        marker = target_dir / _MARKER
        if marker.exists() and marker.read_text().strip() == digest:
            continue
        # Another package of the same pair (an older or different file) would shadow this one.
        for pkg in package.get_installed_packages():
            if (pkg.from_code, pkg.to_code) == (metadata.get("from_code"), metadata.get("to_code")):
                package.uninstall(pkg)
        package.install_from_path(path)
        marker.write_text(digest + "\n")
        installed.append(pair)
        log.info("installed Argos package %s from %s", pair, path.name)
    _clear_argos_caches()
    return installed


def download_route(source: str, target: str, pivot: str) -> list[str]:
    """Only when asked (--download): fetch the Argos index and install the direct package, or the
    two pivot packages. This is the one place that opens a connection; no text is ever sent."""
    package, _ = _import_argos()
    from argostranslate import settings

    with network_allowed():
        package.update_package_index()  # logs and returns on failure
    if not Path(settings.local_package_index).exists():
        raise RouteMissing(f"--download: could not fetch the Argos package index ({settings.remote_package_index}); is this machine online?")
    available = {(p.from_code, p.to_code): p for p in package.get_available_packages()}
    wanted = [(source, target)] if (source, target) in available else [(source, pivot), (pivot, target)]
    installed = []
    for pair in wanted:
        if pair not in available:
            raise RouteMissing(f"--download: the Argos index has no package translate-{pair[0]}_{pair[1]}")
        try:
            with network_allowed():
                path = available[pair].download()
        except Exception as err:  # Argos raises a bare Exception("Download failed ..."), urllib an OSError
            if type(err) is not Exception and not isinstance(err, OSError):
                raise  # anything else is a programming error: not turned into "route missing"
            raise RouteMissing(f"--download: could not download translate-{pair[0]}_{pair[1]} ({type(err).__name__})") from None
        package.install_from_path(path)
        installed.append(f"{pair[0]}-{pair[1]}")
    _clear_argos_caches()
    return installed


def pivot_of(target: str) -> str:
    """The pivot language of the route to `target` (pivot_lang of its locale.yml; English when the
    locale has none or is not in the project)."""
    locale = Locale.find(target)
    return str(locale.raw.get("pivot_lang") or "en") if locale is not None else "en"


def pairs_at_hand(packages_dir: str | Path | None, argos_dir: str | Path | None) -> set[tuple[str, str]]:
    """The translation pairs `ArgosRoute.open` would find, read without importing Argos: the
    .argosmodel files of packages_dir (which it installs first) and the packages already installed
    in argos_dir. A folder that does not exist holds none."""
    pairs: set[tuple[str, str]] = set()
    if packages_dir and Path(packages_dir).is_dir():
        for path in package_files(packages_dir):
            metadata, _ = _package_members(path)
            if metadata.get("type", "translate") == "translate":
                pairs.add((str(metadata.get("from_code")), str(metadata.get("to_code"))))
    if argos_dir and Path(argos_dir).is_dir():
        for meta_file in sorted(Path(argos_dir).glob("*/metadata.json")):
            try:
                metadata = json.loads(meta_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # not a package Argos could load either
            if isinstance(metadata, dict) and metadata.get("type", "translate") == "translate":
                pairs.add((str(metadata.get("from_code")), str(metadata.get("to_code"))))
    return pairs


def route_at_hand(source: str, target: str, packages_dir: str | Path | None, argos_dir: str | Path | None,
                  pivot: str | None = None) -> list[str] | None:
    """The route `ArgosRoute.open` would take with these folders (direct, else through the pivot),
    or None (`missing_route_message` says what is missing)."""
    pairs = pairs_at_hand(packages_dir, argos_dir)
    pivot = pivot or pivot_of(target)
    if (source, target) in pairs:
        return [source, target]
    if (source, pivot) in pairs and (pivot, target) in pairs:
        return [source, pivot, target]
    return None


def missing_route_message(source: str, target: str, pivot: str, pairs: set[tuple[str, str]], packages_dir) -> str:
    """What is missing and the offline way to add it: the .argosmodel files into the language's
    assets/argos/ folder (the build's --packages-dir). The online ways come last, as such."""
    needed = [(source, target)] if source == pivot or target == pivot else [(source, pivot), (pivot, target)]
    missing = [f"translate-{a}_{b}" for a, b in needed if (a, b) not in pairs]
    where = f" (none found in {packages_dir})" if packages_dir else ""
    return (
        f"no Argos route {source} -> {target}{where}: it needs translate-{source}_{target}.argosmodel, or the pivot pair "
        f"{' + '.join(f'{m}.argosmodel' for m in missing) or f'translate-{source}_{pivot} + translate-{pivot}_{target}'}. "
        f"Offline: copy the .argosmodel files into languages/{target}/assets/argos/ (the build's packages folder; "
        f"`factory translate --packages-dir FOLDER` for another folder). On a machine that is online, "
        f"`spacy project assets languages/{target}` downloads them into that folder; this command never downloads "
        f"anything unless given --download."
    )


class ArgosRoute:
    """The installed route source -> [pivot ->] target, as a list of Argos translations (hops)."""

    def __init__(self, route: list[str], hops: list[Any]):
        self.route = route
        self.hops = hops

    @classmethod
    def open(
        cls,
        source: str,
        target: str,
        packages_dir: str | Path | None = None,
        argos_dir: str | Path | None = None,
        device: str = "cpu",
        beam_size: int | None = None,
        pivot: str | None = None,
        install: bool = True,
        intra_threads: int | None = None,
        download: bool = False,
        compute_type: str | None = None,
    ) -> "ArgosRoute":
        if device == "cuda":  # checked before any setting changes, so a failed call leaves Argos as it was
            import ctranslate2

            if ctranslate2.get_cuda_device_count() == 0:
                raise RuntimeError("--device cuda was asked but CTranslate2 sees no CUDA device")
        configure_argos(packages_dir, argos_dir, device, beam_size, intra_threads, compute_type)
        package, translate = _import_argos()
        if install:
            install_packages(packages_dir)
        pairs = {(p.from_code, p.to_code) for p in package.get_installed_packages() if getattr(p, "type", "translate") == "translate"}
        pivot = pivot or pivot_of(target)
        direct_or_pivot = (source, target) in pairs or {(source, pivot), (pivot, target)} <= pairs
        if not direct_or_pivot and download:
            download_route(source, target, pivot)
            pairs = {(p.from_code, p.to_code) for p in package.get_installed_packages() if getattr(p, "type", "translate") == "translate"}
        if (source, target) in pairs:
            route = [source, target]
        elif (source, pivot) in pairs and (pivot, target) in pairs:
            route = [source, pivot, target]
        else:
            raise RouteMissing(missing_route_message(source, target, pivot, pairs, packages_dir))
        languages = {lang.code: lang for lang in translate.get_installed_languages()}
        hops = []
        for a, b in zip(route, route[1:]):
            hop = languages[a].get_translation(languages[b])
            if hop is None:  # pragma: no cover - pairs said it was installed
                raise RouteMissing(missing_route_message(source, target, pivot, pairs, packages_dir))
            hops.append(hop)
        return cls(route, hops)

    def translate_hops(self, text: str) -> list[str]:
        """Translate through each hop; return the text after every hop (pivot..., target)."""
        outputs = []
        for hop in self.hops:
            text = hop.translate(text)
            outputs.append(text)
        return outputs

    def translate_text(self, text: str) -> str:
        return self.translate_hops(text)[-1]
