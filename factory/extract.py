"""Stage 1, extract: decide the build, then read any supported corpus (the embedded synthetic one
included) into validated JSONL records.

    factory extract ../shared/corpora/meddocan/train --format brat --label-map meddocan --source-lang es \
        --out data/extract.jsonl --report data/extract.report.json
    factory extract - --format synth --n 1000 --seed 13 --source-lang es --lang fr --native-share 0.5 \
        --packages-dir assets/argos --if-no-route skip --out corpus/extracted.jsonl --build corpus/build.json

The build is decided here, once (`decide`, written to `--build`, build_decision.py): its languages,
whether it is native (the user's annotated notes, trained as annotated), whether the source is
translated and by which installed route, and what is not used and why. What is not used is not
read: without an Argos route (and `--if-no-route skip`) the source records of a translation build
are not extracted at all, and the build takes the target's own synthetic corpus alone.

Every format goes through `readers.read_corpus`. Output records carry canonical labels only and pass
`records.validate_record`; the report holds the decision, the reader's counts (spans dropped per
label, trimmed, skipped records with reasons by id), the corpus statistics summary (stats.py) and,
for a generated corpus, its own summary under the format's name ("synth": templates used, document
types).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import srsly
import typer

from .build_decision import IF_NO_ROUTE, BuildDecision, languages_of
from .readers import FORMATS, GENERATED_FORMATS, ReadReport, check_language, read_corpus
from .records import Record, RecordError, validate_record, write_records
from .outputs import all_or_nothing, write_text_atomic
from .stats import format_summary, record_stats, summarize
from .synth import read_synth  # noqa: F401  (registers the "synth" format with the readers)

# Formats whose corpora use their own labels: the label map used when none is given.
DEFAULT_LABEL_MAPS = {"i2b2": "i2b2"}


class NothingToBuild(ValueError):
    """The decision leaves no record to build from (no route and no native corpus)."""


def resolve_native(native: str, source_format: str, source_lang: str, lang: str) -> bool:
    """Is the source the user's own annotated notes in the build's language (the native path)?

    Native notes are trained as annotated: no record is dropped by language detection or corpus
    thresholds, and surrogate copies are only an optional, measured augmentation. "auto": native
    when the source is annotated (not the embedded synthetic corpus) and already in the build's
    language."""
    value = str(native).strip().lower()
    if value in ("yes", "true", "1"):
        return True
    if value in ("no", "false", "0"):
        return False
    if value != "auto":
        raise ValueError(f"--native must be auto, yes or no, not {native!r}")
    return source_format != "synth" and source_lang == lang


def decide(source_lang: str, lang: str, source_format: str, native: str = "auto", native_share: float = 0.0,
           packages_dir: str | Path | None = None, argos_dir: str | Path | None = None, if_no_route: str = "fail",
           source_path: str | Path | None = None) -> BuildDecision:
    """What the build is and what it leaves out (build_decision.py), before anything is read.

    packages_dir, argos_dir: where translate will find the Argos route (its --packages-dir and
    --argos-dir). Given either, the route is looked for here: without one, `if_no_route` "skip"
    leaves the source out (not extracted) and "fail" raises RouteMissing now. Given neither, the
    route is not checked (translation "unchecked": translate looks, and applies its own
    --if-no-route)."""
    from .locale import Locale

    if not 0.0 <= native_share <= 1.0:
        raise ValueError(f"--native-share must be between 0 and 1, not {native_share}")
    if if_no_route not in IF_NO_ROUTE:
        raise ValueError(f"--if-no-route must be skip or fail, not {if_no_route!r}")
    is_native = resolve_native(native, source_format, source_lang, lang)
    if is_native and source_lang != lang:
        raise ValueError(f"--native {native}: the native path trains on the source as annotated, so the source must be "
                         f"in the build's language (--source-lang {source_lang}, --lang {lang})")
    decision = BuildDecision(lang=lang, source_lang=source_lang, source_format=source_format,
                             source_path=None if source_path is None or str(source_path) == "-" else str(source_path),
                             native=is_native, if_no_route=if_no_route)
    if source_lang == lang:  # nothing to translate, nothing to mix
        decision.uses[lang] = ("native" if is_native else "as_written" if source_format in GENERATED_FORMATS
                               else "surrogates")
        return decision
    decision.native_share = native_share
    if native_share >= 1.0:
        decision.uses[source_lang] = "skipped"
        decision.skipped.append({"what": f"{source_lang} source records",
                                 "why": f"native_share 1: the build takes corpora/synth/{lang}/ alone"})
    elif packages_dir is None and argos_dir is None:
        decision.translation = "unchecked"
        decision.uses[source_lang] = "translate"
    else:
        from .argos_env import RouteMissing, missing_route_message, pairs_at_hand, pivot_of, route_at_hand

        decision.route = route_at_hand(source_lang, lang, packages_dir, argos_dir)
        if decision.route is not None:
            decision.translation = "route"
            decision.uses[source_lang] = "translate"
        else:
            message = missing_route_message(source_lang, lang, pivot_of(lang), pairs_at_hand(packages_dir, argos_dir),
                                            packages_dir)
            if if_no_route == "fail":
                raise RouteMissing(message)
            decision.translation = "skipped"
            decision.uses[source_lang] = "skipped"
            decision.skipped.append({"what": f"{source_lang} source records", "why": message})
    if native_share > 0:
        if Locale.of(lang).synth_dir.is_dir():
            decision.uses[lang] = "as_written"
        else:
            decision.skipped.append({"what": f"native {lang} records", "why": f"no native synthetic corpus (corpora/synth/{lang}/)"})
    if all(use == "skipped" for use in decision.uses.values()):
        raise NothingToBuild(f"no records left to build {lang} from: " + decision.why_skipped())
    return decision


def extract(inp: str | Path | None, fmt: str, source_lang: str, out: str | Path, report_path: str | Path | None = None,
            label_map: str | None = None, n: int = 1000, seed: int = 13, on_error: str = "raise",
            lang: str | None = None, native_share: float = 0.0, *, native: str = "auto",
            packages_dir: str | Path | None = None, argos_dir: str | Path | None = None, if_no_route: str = "fail",
            build_path: str | Path | None = None) -> dict[str, Any]:
    """Decide the build (`decide`), read (or generate) what it uses, validate every record, write
    them (and the decision to `build_path`) atomically; return the report (the decision under "build").

    `n` and `seed` apply to a generated format (synth), whose INPUT is optional (its data folder).

    lang, native_share: a build for `lang` (another language than the source) also takes lang's
    own synthetic corpus (corpora/synth/<lang>/) when there is one, so the model sees prose of its
    language and not only translations. `native_share` is its share of all records (0: none; 1:
    the native corpus alone, `n` records, the source is not read); those records carry lang=`lang`
    and pass translation untouched. When the source is left out (native_share 1, or no route),
    the native corpus gives `n` records."""
    lang = lang or source_lang
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    for code in dict.fromkeys((source_lang, lang)):
        check_language(code)  # before anything is read or written
    generated = fmt in GENERATED_FORMATS
    if not generated and (inp is None or str(inp) == "-"):
        raise ValueError(f"format {fmt!r} needs an INPUT path")
    decision = decide(source_lang, lang, fmt, native, native_share, packages_dir, argos_dir, if_no_route, inp)
    report: dict[str, Any] = {"format": fmt, "lang": source_lang, "input": None if inp is None else str(inp), "out": str(out)}
    if generated:
        report.update({"n": n, "seed": seed})
    label_map = None if generated else label_map or DEFAULT_LABEL_MAPS.get(fmt)
    report["label_map"] = label_map
    reader_report = ReadReport()
    per_record: list[dict[str, Any]] = []

    def checked(items: Iterable[Record], code: str, where: str) -> Iterator[Record]:
        for record in items:
            record.lang = code
            validate_record(record, where=where)
            per_record.append(record_stats(record))
            yield record

    chosen: list[Record] = []
    source_used = decision.use_of(source_lang) != "skipped"
    if source_used:
        records = read_corpus(inp, fmt, label_map, source_lang, on_error=on_error, report=reader_report, n=n, seed=seed)
        chosen = list(checked(records, source_lang, str(inp if inp is not None else f"{fmt} corpus")))
    mix = _native_synthetic(source_lang, lang, native_share, len(chosen), n, seed, alone=not source_used)
    if mix is not None:
        report["native_synth"] = mix["report"]
        chosen += list(checked(mix["records"], lang, f"corpora/synth/{lang}"))
    decision.records = {code: sum(r.lang == code for r in chosen) for code in decision.uses}
    report["build"] = decision.to_dict()
    if source_used:
        report["reader"] = reader_report.to_dict()
        if reader_report.corpus is not None:
            report[fmt] = reader_report.corpus.to_dict()
    report["stats"] = summarize(per_record)
    # the records and the decision that says how to use them replace the earlier ones together
    with all_or_nothing():
        report["records_written"] = write_records(out, chosen)
        if build_path:
            decision.write(build_path)
        if report_path:
            write_text_atomic(report_path, srsly.json_dumps(report, indent=2))
    return report


def _native_synthetic(source_lang: str, lang: str | None, share: float, n_source: int, n: int, seed: int,
                      alone: bool = False) -> dict | None:
    """lang's own synthetic records for a translation build (see extract), with their report;
    `alone`: the source is left out, the native corpus gives `n` records (as with share 1)."""
    from .locale import Locale

    if not lang or lang == source_lang or share <= 0:
        return None
    folder = Locale.of(lang).synth_dir
    if not folder.is_dir():
        return {"records": [], "report": {"share": share, "records": 0, "reason": f"no native synthetic corpus (corpora/synth/{lang}/)"}}
    alone = alone or share >= 1.0
    count = n if alone else round(n_source * share / (1.0 - share))
    records = list(read_corpus(None, "synth", None, lang, n=count, seed=seed + 1))
    return {"records": records, "report": {"share": share, "records": len(records), "source_records": 0 if alone else n_source}}


def decision_line(decision: BuildDecision) -> str:
    """What the build is, in one line (counts and languages; no text): printed by extract."""
    counts = decision.records
    if decision.translation_skipped:
        why = next(s["why"] for s in decision.skipped if s["what"] == f"{decision.source_lang} source records")
        return (f"translation skipped: the {decision.source_lang} source records are not extracted, the build goes on "
                f"with {counts.get(decision.lang, 0)} native {decision.lang} records: {why} Then run the build again "
                f"(extract reruns when its packages folder changes).")
    parts = []
    for code, use in decision.uses.items():
        if use == "translate":
            route = " -> ".join(decision.route) if decision.route else "route not checked: translate looks for it"
            parts.append(f"{counts.get(code, 0)} {code} records to translate ({route})")
        elif use == "surrogates":
            parts.append(f"{counts.get(code, 0)} {code} records (surrogates drawn)")
        elif use == "as_written":
            parts.append(f"{counts.get(code, 0)} {code} synthetic records (kept as written)")
        elif use == "native":
            parts.append(f"{counts.get(code, 0)} {code} annotated notes (native: trained as annotated)")
    line = f"build {decision.lang} from {decision.source_format} {decision.source_lang}: " + " + ".join(parts)
    if decision.skipped:
        line += "; not used: " + decision.why_skipped()
    return line


def extract_command(
    inp: str = typer.Argument("-", metavar="INPUT", help="Corpus file or folder (synth: its data folder, '-' for corpora/synth/<source-lang>)"),
    fmt: str = typer.Option(..., "--format", help=f"One of: {', '.join(FORMATS)}, or auto (from the path)"),
    source_lang: str | None = typer.Option(None, "--source-lang", help="Language of the source corpus (default: --lang, else es)"),
    lang: str | None = typer.Option(None, "--lang", help="Language of the build (default: --source-lang); another language: "
                                    "a translation build"),
    out: Path = typer.Option(..., "--out", help="Output JSONL of validated records"),
    report: Path | None = typer.Option(None, "--report", help="Write the extraction report (JSON) here"),
    build: Path | None = typer.Option(None, "--build", help="Write the build decision (JSON) here: the later stages read it "
                                      "(their --build)"),
    label_map: str | None = typer.Option(None, "--label-map", help="Label map name in corpora/label_maps/ or a YAML path"),
    n: int = typer.Option(1000, "--n", help="synth: number of records"),
    seed: int = typer.Option(13, "--seed", help="synth: random seed"),
    on_error: str = typer.Option("raise", "--on-error", help="raise: stop at the first bad record; skip: skip it and report its id"),
    optional: bool = typer.Option(False, "--optional", help="INPUT '-' is allowed: write an empty file (an optional corpus such as a dev set)"),
    native: str = typer.Option("auto", "--native", help="yes: the source is your annotated notes in --lang, trained as "
                               "annotated (detection and thresholds only report); auto: yes when the source is not synth "
                               "and is in --lang; no"),
    native_share: float = typer.Option(0.0, "--native-share", help="Translation build: share of records drawn from "
                                       "--lang's own synthetic corpus (corpora/synth/<lang>/), 0-1"),
    packages_dir: Path | None = typer.Option(None, "--packages-dir", help="Translation build: the folder of .argosmodel "
                                             "files translate installs (checked here for a route)"),
    argos_dir: Path | None = typer.Option(None, "--argos-dir", help="Translation build: where Argos has installed packages "
                                          "(checked here for a route)"),
    if_no_route: str = typer.Option("fail", "--if-no-route", help="With --packages-dir/--argos-dir and no route there: fail, "
                                    "or skip (the source is not extracted; the build takes --lang's synthetic corpus)"),
) -> None:
    """Decide the build and extract its corpus (brat, jsonl, docbin, i2b2, inline or the embedded synthetic corpus) into validated JSONL."""
    if optional and inp == "-":
        write_records(out, [])
        if report:
            write_text_atomic(report, srsly.json_dumps({"format": None, "input": None, "records_written": 0}, indent=2))
        typer.echo(f"no corpus given: wrote an empty {out}")
        return
    source_lang, lang = languages_of(source_lang, lang)
    from .argos_env import RouteMissing

    try:
        if fmt == "auto":
            from .readers import guess_format

            fmt = guess_format(inp)
        rep = extract(None if inp == "-" else inp, fmt, source_lang, out, report, label_map, n, seed, on_error,
                      lang, native_share, native=native, packages_dir=packages_dir, argos_dir=argos_dir,
                      if_no_route=if_no_route, build_path=build)
    except (ValueError, RouteMissing) as err:
        if isinstance(err, RecordError):
            raise  # a bad record: the factory command prints it (file and record, no text)
        typer.echo(f"error: {err}", err=True)  # a bad option (format, language, on_error), no route, nothing left
        raise typer.Exit(1)
    reader = rep.get("reader", {})
    for skipped in reader.get("skipped", []):
        # the reasons name file, record and offsets only: safe to show
        typer.echo(f"skipped: {skipped['reason']}", err=True)
    typer.echo(f"wrote {rep['records_written']} records to {out}"
               + (f" (skipped {reader['records_skipped']}, spans dropped by label {reader['spans_dropped_by_label']})" if reader else ""))
    typer.echo(decision_line(BuildDecision.from_dict(rep["build"])))
    typer.echo(format_summary(rep["stats"], title=f"{fmt}:{inp}"))
