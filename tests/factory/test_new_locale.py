"""Scaffolding a new locale (`factory new-locale`) writes every file it needs as data, with the forms
of its country or start locale: it loads through Locale with no build, its pack's starter cases
pass, and it never overwrites."""

from __future__ import annotations

import re
import shutil

import pytest
from typer.testing import CliRunner

from deid_factory import PROJECT_ROOT
from deid_factory.cli import app
from deid_factory.new_locale import scaffold_locale
from deid_factory.packs import load_pack, run_pack_cases
from deid_runtime.regex_pack import RegexPack

import yaml

from deid_factory.locale import Locale


def test_scaffold_writes_a_working_starter_pack(tmp_path):
    written = scaffold_locale("it", "Italian", "it_IT", calling_code="39", root=tmp_path)
    # an empty project starts from the factory's own `en`: its settings and surrogate data (titles included)
    english = {p.name for p in Locale.load("en").surrogate_data_files()} | {"silver.yml", "placeholders.yml", "surrogates.yml", "errors.yml"}
    assert {p.name for p in written} == {"locale.yml", "pack.yml", "context.yml", "project.yml", "config.cfg",
                                         "sections.yml", "lexicon.yml", "clinical.yml", "formats.yml", "slots.yml",
                                         "checks.yml", "drugs.txt"} | english  # + the start pack's clinical lexicon
    assert "titles.yml" in english
    settings = yaml.safe_load((tmp_path / "languages" / "it" / "locale.yml").read_text())
    assert settings["lang"] == "it" and settings["faker_locale"] == "it_IT" and settings["regex_pack"] == "it"
    pack = RegexPack.from_dir(tmp_path / "regex_packs" / "it")
    results = run_pack_cases(pack)
    assert len(results) >= 10
    assert all(r.passed for r in results), [r.describe() for r in results if not r.passed]
    assert [m.text for m in pack.find("tel +39 123 456 789, mail a.b@c.it")] == ["+39 123 456 789", "a.b@c.it"]


def test_scaffold_refuses_to_overwrite(tmp_path):
    scaffold_locale("it", "Italian", "it_IT", root=tmp_path)
    with pytest.raises(FileExistsError, match="already exists"):
        scaffold_locale("it", "Italian", "it_IT", root=tmp_path)


def test_scaffold_rejects_bad_codes(tmp_path):
    with pytest.raises(ValueError, match="lowercase"):
        scaffold_locale("IT", "Italian", "it_IT", root=tmp_path)


def test_pack_test_command_reports_failures(tmp_path):
    scaffold_locale("it", "Italian", "it_IT", root=tmp_path)
    runner = CliRunner()
    # a starter pack passes its cases, but is not finished (too few cases) until --no-minimums
    unfinished = runner.invoke(app, ["pack-test", "it", "--packs-dir", str(tmp_path / "regex_packs")])
    assert unfinished.exit_code == 1 and "0 failed" in unfinished.output and "not finished" in unfinished.output
    ok = runner.invoke(app, ["pack-test", "it", "--packs-dir", str(tmp_path / "regex_packs"), "--no-minimums"])
    assert ok.exit_code == 0, ok.output
    assert "0 failed" in ok.output
    pack_file = tmp_path / "regex_packs" / "it" / "pack.yml"
    # break one expectation: the command must fail and name pack, pattern and case
    pack_file.write_text(pack_file.read_text().replace("expect: [info@helloworld.org]}", "expect: [nobody@example.org]}", 1))
    bad = runner.invoke(app, ["pack-test", "it", "--packs-dir", str(tmp_path / "regex_packs"), "--no-minimums"])
    assert bad.exit_code == 1
    assert "pattern 'email', case 0" in bad.output


def test_pack_test_runs_the_clinical_lexicon_s_cases_too(tmp_path):
    """`factory pack-test` runs every case pytest runs: the clinical lexicon's (facts, drugs, the
    surrogate checks) beside the patterns'; a broken one fails the command and is named."""
    scaffold_locale("it", "Italian", "it_IT", root=tmp_path)  # with the start locale's clinical lexicon
    packs = tmp_path / "regex_packs"
    runner = CliRunner()
    ok = runner.invoke(app, ["pack-test", "it", "--packs-dir", str(packs), "--no-minimums"])
    assert ok.exit_code == 0 and "0 failed" in ok.output, ok.output
    clinical_file, checks_file = packs / "it" / "clinical.yml", packs / "it" / "checks.yml"
    clinical, checks = (yaml.safe_load(f.read_text(encoding="utf-8")) for f in (clinical_file, checks_file))
    # a fact case that expects nothing where the lexicon finds a dose
    case = next(c for p in clinical["patterns"] for c in p["cases"] if c["expect"])
    case["expect"] = []
    clinical_file.write_text(yaml.safe_dump(clinical, allow_unicode=True), encoding="utf-8")
    bad = runner.invoke(app, ["pack-test", "it", "--packs-dir", str(packs), "--no-minimums"])
    assert bad.exit_code == 1 and "pattern 'clinical:" in bad.output, bad.output
    case["expect"] = []
    clinical_file.write_text(yaml.safe_dump({k: v for k, v in clinical.items() if k != "patterns"} | {"patterns": []},
                                            allow_unicode=True), encoding="utf-8")
    # a surrogate check case on the wrong side: a name said unsure, a dose said sure
    person = checks["cases"]["PERSON"]
    person["sure"], person["unsure"] = person["unsure"], person["sure"]
    checks_file.write_text(yaml.safe_dump(checks, allow_unicode=True), encoding="utf-8")
    bad = runner.invoke(app, ["pack-test", "it", "--packs-dir", str(packs), "--no-minimums"])
    assert bad.exit_code == 1 and "pattern 'check:PERSON:" in bad.output, bad.output


def test_scaffold_copies_concerns_and_renders_the_project(tmp_path):
    english = tmp_path / "languages" / "en"
    english.mkdir(parents=True)
    (english / "silver.yml").write_text("street_suffixes: [street]\n", encoding="utf-8")
    shutil.copytree(Locale.load("en").surrogate_data_dir, english / "surrogate_data")
    written = scaffold_locale("it", "Italian", "it_IT", root=tmp_path, start_from="en")
    silver = tmp_path / "languages" / "it" / "silver.yml"
    assert silver in written
    assert "translate the" in silver.read_text() and "street_suffixes: [street]" in silver.read_text()
    project = yaml.safe_load((tmp_path / "languages" / "it" / "project.yml").read_text())
    assert project["vars"]["lang"] == "it"
    assert "build" in project["workflows"]
    assert (tmp_path / "languages" / "it" / "configs" / "config.cfg").exists()


def test_scaffold_is_data_only_and_builds_a_synthetic_corpus(tmp_path):
    """Everything a new locale needs is scaffolded as data: the starter synthetic corpus generates
    records with spans, the surrogate data loads in the engine, and nothing of the locale it was
    copied from is left that would need code (its `lang`, its country's identifier kinds)."""
    from deid_factory.locale import Locale as FactoryLocale
    from deid_runtime.surrogates.locale import LocaleData
    from deid_factory.readers import read_corpus
    from deid_runtime.validators import VALIDATORS

    english = tmp_path / "languages" / "en"
    english.mkdir(parents=True)
    for concern in ("placeholders.yml", "surrogates.yml"):
        (english / concern).write_text((PROJECT_ROOT / "languages" / "en" / concern).read_text(encoding="utf-8"), encoding="utf-8")
    shutil.copytree(FactoryLocale.load("en").surrogate_data_dir, english / "surrogate_data")
    written = scaffold_locale("it", "Italian", "it_IT", calling_code="39", root=tmp_path)
    engine = tmp_path / "languages" / "it" / "surrogate_data"  # in the locale's own folder: no package written
    assert engine / "formats.yml" in written
    assert not [p for p in written if p.suffix == ".py"]
    # the starter corpus: records with PHI spans, in the new locale's language
    records = list(read_corpus(tmp_path / "corpora" / "synth" / "it", "synth", lang="it", n=5, seed=1))
    assert len(records) == 5 and all(r.lang == "it" and r.spans for r in records)
    # the surrogate data: loads, and says the locale's own faker locale, calling code and country
    data = LocaleData.load(engine)
    assert (data.lang, data.formats["faker_locale"], data.calling_code, data.formats["identifiers"]) == ("it", "it_IT", "39", ["it"])
    # the copied settings are the new locale's, and no identifier kind of another country is left
    for concern in ("placeholders.yml", "surrogates.yml"):
        assert yaml.safe_load((tmp_path / "languages" / "it" / concern).read_text())["lang"] == "it"
    roles = yaml.safe_load((tmp_path / "languages" / "it" / "surrogates.yml").read_text())["ids"]["roles"]
    kinds = {o["kind"] for options in roles.values() for o in options}
    assert kinds <= {"pattern", "iban"} | {k for k in VALIDATORS if k.startswith("it_")}, kinds
    assert {o.get("country") for options in roles.values() for o in options if o["kind"] == "iban"} <= {"IT"}
    assert "it_codicefiscale" in (tmp_path / "languages" / "it" / "surrogates.yml").read_text()  # listed for the author


def test_a_start_locale_without_surrogate_data_is_refused(tmp_path):
    from deid_factory.new_locale import NewLocaleError

    (tmp_path / "languages" / "en").mkdir(parents=True)  # the project's own `en`, incomplete
    with pytest.raises(NewLocaleError, match="start locale 'en' has no surrogate data"):
        scaffold_locale("it", "Italian", "it_IT", root=tmp_path, start_from="en")


def _scaffold_catalan(root):
    """A Catalan locale of Spain, as a new user writes it: the country only, no start locale; the
    command's output."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "deid_factory", "--root", str(root), "new-locale", "ca", "--name",
                             "Catalan", "--faker-locale", "es_ES", "--country", "es"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_a_country_s_scaffold_has_that_country_s_forms(tmp_path):
    """`--country es` starts from the project's Spanish locale (whose surrogate data names es): the
    starter corpus writes Spanish dates (day first), months, phones, towns and postal codes, the
    settings are Spain's (calling code, identifiers, titles), and nothing of the English start of
    the past is left (Springfield 62701, "MRN", month-first dates)."""
    from deid_factory.new_locale import country_locale
    from deid_runtime.surrogates.locale import LocaleData

    root = tmp_path / "proj"
    (root / "corpora").mkdir(parents=True)
    output = _scaffold_catalan(root)
    assert country_locale("es") == "es" and "languages/ca/surrogate_data/titles.yml" in output
    es = LocaleData.load(Locale.load("es").surrogate_data_dir)
    ca = root / "languages" / "ca"
    synth = root / "corpora" / "synth" / "ca"
    formats = yaml.safe_load((synth / "formats.yml").read_text(encoding="utf-8"))
    assert formats["months"] == es["date"]["months"] and formats["weekdays"] == es["date"]["weekdays"]
    assert all(f.startswith(("{d", "{yyyy}")) for f in formats["date_formats"]["numeric"])  # day first (or ISO)
    assert all(p.startswith(("+34", "0034", "6", "7", "8", "9")) for p in formats["phone_formats"]), formats["phone_formats"]
    assert formats["decimal_sep"] == ","  # corpora/synth/es/formats.yml
    lexicon = yaml.safe_load((synth / "lexicon.yml").read_text(encoding="utf-8"))
    assert [p["city"] for p in lexicon["lists"]["places"]] == [c for c, _ in es.cities[:len(lexicon["lists"]["places"])]]
    assert all(re.fullmatch(r"\d{5}", p["postcode"]) for p in lexicon["lists"]["places"])
    everything = "\n".join(p.read_text(encoding="utf-8") for p in [*synth.glob("*.yml"), *ca.glob("*.yml")])
    for english in ("Springfield", "62701", "MRN", "January", "{month} {d}, {yyyy}"):
        assert english not in everything, english
    data = LocaleData.load(ca / "surrogate_data")
    assert (data.calling_code, data.formats["identifiers"], data.formats["surnames_per_name"]) == ("34", ["es"], 2)
    assert data.titles == es.titles  # the start's titles, to translate: "Sr.", "Dra."...
    roles = yaml.safe_load((ca / "surrogates.yml").read_text(encoding="utf-8"))["ids"]["roles"]
    assert {o["kind"] for options in roles.values() for o in options} >= {"es_dni", "es_nass"}  # Spain's identifiers kept
    assert "es_dni" in (root / "regex_packs" / "ca" / "pack.yml").read_text(encoding="utf-8")  # validators named for the author


def test_a_fresh_scaffold_loads_through_locale_without_a_build(tmp_path, monkeypatch):
    """Every file the scaffold writes is read the way the stages read it, through Locale and with no
    build: settings, titles, regex pack (with the locale's {title}), synthetic corpus, surrogate data,
    error-analysis words, the project's declared deps, the rendered project."""
    import deid_factory
    from deid_factory.error_analysis import load_context_rules
    from deid_factory.readers import read_corpus
    from deid_factory.render import render_all
    from deid_runtime.surrogates.locale import LocaleData

    root = tmp_path / "proj"
    (root / "corpora").mkdir(parents=True)
    scaffold_locale("ca", "Catalan", "es_ES", root=root, country="es")
    monkeypatch.setattr(deid_factory, "_root", root)
    ca = Locale.load("ca")
    assert ca.folder == root.resolve() / "languages" / "ca" and ca.settings["regex_pack"] == "ca"
    assert ca.titles().forms() and ca.title_letters == ["D"]  # Spain's "D." (Don), to translate
    pack = load_pack("ca")
    assert all(r.passed for r in run_pack_cases(pack))
    assert pack.titles_file.resolve() == ca.titles_file.resolve()  # `{title}` is the locale's titles
    # the clinical lexicon starts as the start locale's: a dose is never PHI from the first build on
    assert pack.clinical is not None and pack.clinical.drugs and pack.clinical.patterns and "mg" in pack.clinical.short_words
    assert [p.name for p in ca.pack_files()] == ["checks.yml", "clinical.yml", "context.yml", "drugs.txt", "pack.yml"]
    records = list(read_corpus(ca.synth_dir, "synth", lang="ca", n=5, seed=1))
    assert len(records) == 5 and all(r.spans for r in records)
    titled = {r.text[:s.start].split()[-1] for r in records for s in r.spans
              if s.label == "PERSON" and s.attrs.get("kind") in ("patient", "staff")}  # "{patient.title} {patient}"
    assert titled and titled <= set(ca.titles().forms()), titled  # the persons' titles are the locale's
    assert all(s.attrs.get("role") in {"record"} for r in records for s in r.spans if s.label == "ID")
    rules = load_context_rules("ca")
    assert "Dra." in rules.titles and "Firmado" in rules.signature_markers  # copied from es, to translate
    assert all(p.exists() for paths in ca.stage_files().values() for p in paths) and ca.titles_file in ca.stage_files()["assemble"]
    assert render_all(["ca"], check=True, languages_dir=root / "languages") == []
    assert LocaleData.load(ca.surrogate_data_dir).lang == "ca"
