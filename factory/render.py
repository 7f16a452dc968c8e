"""Render each language's spaCy project (languages/<lc>/project.yml) and training config
(languages/<lc>/configs/config.cfg) from the templates in factory/templates/, so that the four
(or more) language projects cannot drift apart. Per-language values come from the locale's settings
(factory/locale.py: languages/<lc>/locale.yml over the shared defaults of factory/templates/defaults.yml);
each step's `deps` include the locale files it reads (Locale.project_deps).
"""

from __future__ import annotations

from pathlib import Path

import typer
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from . import PROJECT_ROOT
from .locale import REQUIRED, Locale, LocaleError, available
from .records import write_text_atomic

TEMPLATES = Path(__file__).resolve().parent / "templates"
LANGUAGES = PROJECT_ROOT / "languages"


class RenderError(RuntimeError):
    pass


def _env() -> Environment:
    # StrictUndefined: a missing locale value is an error, never an empty string in a config
    return Environment(loader=FileSystemLoader(str(TEMPLATES)), undefined=StrictUndefined,
                       keep_trailing_newline=True)


def language_context(lang: str, languages_dir: Path = LANGUAGES) -> dict:
    try:
        locale = Locale.load(lang, root=languages_dir.parent, require=REQUIRED)
    except LocaleError as err:
        raise RenderError(str(err)) from None
    return {**locale.settings, "locale_deps": locale.project_deps()}


def render_config(lang: str, languages_dir: Path = LANGUAGES, **overrides) -> str:
    """The training config of a language; `overrides` replace locale/default values (e.g. ner_model)."""
    return _env().get_template("config.cfg.j2").render(**{**language_context(lang, languages_dir), **overrides})


def render_project(lang: str, languages_dir: Path = LANGUAGES) -> str:
    return _env().get_template("project.yml.j2").render(**language_context(lang, languages_dir))


def project_languages(languages_dir: Path = LANGUAGES) -> list[str]:
    return available(languages_dir.parent)


def rendered_files(lang: str, languages_dir: Path = LANGUAGES) -> dict[Path, str]:
    base = languages_dir / lang
    return {base / "project.yml": render_project(lang, languages_dir),
            base / "configs" / "config.cfg": render_config(lang, languages_dir)}


def render_all(languages: list[str] | None = None, check: bool = False,
               languages_dir: Path = LANGUAGES) -> list[Path]:
    """Write the rendered files (or, with check=True, return those that differ from their rendering)."""
    changed = []
    for lang in languages or project_languages(languages_dir):
        for path, text in rendered_files(lang, languages_dir).items():
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
    """Render languages/<lc>/project.yml and configs/config.cfg from factory/templates/."""
    try:
        changed = render_all(languages or None, check=check)
    except RenderError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    for path in changed:
        typer.echo(f"{'differs' if check else 'wrote'}: {path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path}")
    if check and changed:
        raise typer.Exit(1)
