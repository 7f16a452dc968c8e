"""Render each language's spaCy project (languages/<lc>/project.yml) and training config
(languages/<lc>/configs/config.cfg) from the templates in factory/templates/, so that the four
(or more) language projects cannot drift apart. Per-language values come from the locale's settings
(factory/locale.py: languages/<lc>/locale.yml over the shared defaults of factory/templates/defaults.yml);
each step's `deps` include the locale files it reads (Locale.project_deps).

The root project.yml is rendered too (factory/templates/root_project.yml.j2): its build-<lc>
commands and its build-all workflow list every locale of the project, so adding a locale edits no
project file by hand.
"""

from __future__ import annotations

from pathlib import Path

import typer
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from . import project_root
from .locale import REQUIRED, Locale, LocaleError, project_locales
from .locale import languages_dir as project_languages_dir
from .outputs import write_text_atomic

TEMPLATES = Path(__file__).resolve().parent / "templates"
ROOT_TEMPLATE = "root_project.yml.j2"


class RenderError(RuntimeError):
    pass


def _env(trim_blocks: bool = False) -> Environment:
    # StrictUndefined: a missing locale value is an error, never an empty string in a config
    # (trim_blocks: the root template's loops, one line per locale, leave no blank line behind)
    return Environment(loader=FileSystemLoader(str(TEMPLATES)), undefined=StrictUndefined,
                       keep_trailing_newline=True, trim_blocks=trim_blocks)


def language_context(lang: str, languages_dir: Path | None = None) -> dict:
    languages_dir = languages_dir or project_languages_dir()  # the project's, asked for now
    try:
        locale = Locale.load(lang, root=languages_dir.parent, require=REQUIRED)
    except LocaleError as err:
        raise RenderError(str(err)) from None
    return {**locale.settings, "locale_deps": locale.project_deps()}


def render_config(lang: str, languages_dir: Path | None = None, **overrides) -> str:
    """The training config of a language; `overrides` replace locale/default values (e.g. ner_model)."""
    return _env().get_template("config.cfg.j2").render(**{**language_context(lang, languages_dir), **overrides})


def render_project(lang: str, languages_dir: Path | None = None) -> str:
    return _env().get_template("project.yml.j2").render(**language_context(lang, languages_dir))


def project_languages(languages_dir: Path | None = None) -> list[str]:
    languages_dir = languages_dir or project_languages_dir()  # the project's, asked for now
    return project_locales(languages_dir.parent)


def rendered_files(lang: str, languages_dir: Path | None = None) -> dict[Path, str]:
    languages_dir = languages_dir or project_languages_dir()  # the project's, asked for now
    base = languages_dir / lang
    return {base / "project.yml": render_project(lang, languages_dir),
            base / "configs" / "config.cfg": render_config(lang, languages_dir)}


def _build_help(locale: Locale) -> str:
    """The help line of the root project's build-<lc> command, from the locale's settings."""
    lang, source = locale.lang, locale.settings["source_lang"]
    if source == lang:
        return f"Build and install deid_{lang} (offline: no translation)"
    route = " and ".join(f"{p['from']}->{p['to']}" for p in locale.get("argos_packages") or []
                         if isinstance(p, dict) and "from" in p and "to" in p)
    needs = (f"needs Argos {route} packages in languages/{lang}/assets/argos" if route
             else f"needs the Argos packages of the {source}->{lang} route in languages/{lang}/assets/argos")
    if locale.synth_files():
        needs += f"; without them, from the {locale.settings['name']} synthetic corpus alone"
    return f"Build and install deid_{lang} ({needs})".replace('"', "'")


def root_locales(languages_dir: Path | None = None) -> list[dict]:
    """Every locale of the project, as the root project lists them: those built from their own
    language first (no translation), then the others, by code."""
    languages_dir = languages_dir or project_languages_dir()  # the project's, asked for now
    locales = []
    for lang in project_languages(languages_dir):
        try:
            locale = Locale.load(lang, root=languages_dir.parent, require=REQUIRED)
        except LocaleError as err:
            raise RenderError(str(err)) from None
        locales.append(locale)
    locales.sort(key=lambda loc: (loc.settings["source_lang"] != loc.lang, loc.lang))
    return [{"lang": loc.lang, "help": _build_help(loc)} for loc in locales]


def render_root_project(languages_dir: Path | None = None) -> str:
    """The root project.yml: its fixed commands, and a build-<lc> command per locale in build-all."""
    return _env(trim_blocks=True).get_template(ROOT_TEMPLATE).render(locales=root_locales(languages_dir))


def rendered_root(languages_dir: Path | None = None) -> dict[Path, str]:
    languages_dir = languages_dir or project_languages_dir()  # the project's, asked for now
    return {languages_dir.parent / "project.yml": render_root_project(languages_dir)}


def render_all(languages: list[str] | None = None, check: bool = False,
               languages_dir: Path | None = None) -> list[Path]:
    """Write the rendered files (or, with check=True, return those that differ from their rendering):
    each language's (`languages`, default every one) and the root project.yml, which lists them all."""
    changed = []
    files: dict[Path, str] = {}
    for lang in languages or project_languages(languages_dir):
        files.update(rendered_files(lang, languages_dir))
    files.update(rendered_root(languages_dir))
    for path, text in files.items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        changed.append(path)
        if not check:
            write_text_atomic(path, text)
    return changed


def render_projects_command(
    languages: list[str] = typer.Argument(None, help="Languages to render (default: every languages/*/locale.yml)"),
    check: bool = typer.Option(False, "--check", help="Only report files that differ from their rendering (exit 1)"),
) -> None:
    """Render languages/<lc>/project.yml and configs/config.cfg, and the root project.yml, from factory/templates/."""
    try:
        changed = render_all(languages or None, check=check)
    except RenderError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    for path in changed:
        typer.echo(f"{'differs' if check else 'wrote'}: {path.relative_to(project_root()) if path.is_relative_to(project_root()) else path}")
    if check and changed:
        raise typer.Exit(1)
