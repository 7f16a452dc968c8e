"""deid_runtime: the code every deid_<lang> pipeline runs (regex pack matcher, validators, spaCy
components, tokenizer, surrogate engine, router, redaction). Its own distribution, `deid-runtime`
(factory/runtime/pyproject.toml), that each deid_<lang> wheel requires and deid_factory imports;
its spaCy factories and tokenizer are registered through entry points. No factory-only
dependencies (no Argos, no torch, no Faker), and nothing here imports deid_factory."""

__version__ = "0.1.0"
