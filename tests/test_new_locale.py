"""Scaffolding a new locale gives a loadable pack whose starter cases pass, and never overwrites."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from deid_factory import PROJECT_ROOT
from deid_factory.cli import app
from deid_factory.packs import run_pack_cases, scaffold_locale
from deid_runtime.regex_pack import RegexPack

import yaml


def test_scaffold_writes_a_working_starter_pack(tmp_path):
    written = scaffold_locale("it", "Italian", "it_IT", calling_code="39", root=tmp_path)
    assert {p.name for p in written} == {"locale.yml", "pack.yml", "context.yml", "project.yml", "config.cfg",
                                         "sections.yml", "lexicon.yml", "clinical.yml", "formats.yml", "slots.yml"}
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


def test_scaffold_copies_concerns_and_renders_the_project(tmp_path):
    english = tmp_path / "languages" / "en"
    english.mkdir(parents=True)
    (english / "silver.yml").write_text("street_suffixes: [street]\n", encoding="utf-8")
    written = scaffold_locale("it", "Italian", "it_IT", root=tmp_path)
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
    from deid_runtime.surrogates.locale import Locale as SurrogateData
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
    data = SurrogateData.load(engine)
    assert (data.lang, data.formats["faker_locale"], data.calling_code, data.formats["identifiers"]) == ("it", "it_IT", "39", ["it"])
    # the copied settings are the new locale's, and no identifier kind of another country is left
    for concern in ("placeholders.yml", "surrogates.yml"):
        assert yaml.safe_load((tmp_path / "languages" / "it" / concern).read_text())["lang"] == "it"
    roles = yaml.safe_load((tmp_path / "languages" / "it" / "surrogates.yml").read_text())["ids"]["roles"]
    kinds = {o["kind"] for options in roles.values() for o in options}
    assert kinds <= {"pattern", "iban"} | {k for k in VALIDATORS if k.startswith("it_")}, kinds
    assert {o.get("country") for options in roles.values() for o in options if o["kind"] == "iban"} <= {"IT"}
    assert "it_codicefiscale" in (tmp_path / "languages" / "it" / "surrogates.yml").read_text()  # listed for the author
