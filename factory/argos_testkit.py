"""Build real, offline `.argosmodel` packages whose CTranslate2 model copies its input.

No machine of the project can download Argos packages, yet every stage that uses Argos must run for
real in tests and CI. A copy model is a stand-in for translation *quality*, not for *mechanics*: it is
a genuine CTranslate2 Transformer that Argos installs, tokenizes for, sentence-splits for and decodes
exactly as it does a downloaded package, so the production code path is exercised unchanged.

How the hand-set Transformer copies (one head, one encoder and one decoder layer, pre-norm):
the model width is V + P + 1 (V = vocabulary, P = max positions, one spare column that stays zero). Source token embeddings are one-hot in
the first block (A), learned position encodings one-hot in the second block (P); embeddings are not
scaled. The decoder needs no memory of what it wrote (step t copies source position t), so its token
embeddings are zero and block A of the decoder stays free. Self-attention and feed-forward blocks are
zeroed. Cross-attention queries and keys read only the position block (the query scaled so step t
attends almost only to source position t), values read the token block, and the attention output
lands in block A of the decoder. The output projection maps block A back to the vocabulary; with
`add_source_eos` the end of the source yields `</s>`. The width is kept small on purpose: decoding
cost grows with its square.

A *lossy* variant drops chosen tokens (e.g. a placeholder) from the output, optionally only from a
given source position on (so short chunks survive and long sentences lose it), which lets tests
exercise placeholder repair and dropping with a real model.
"""

from __future__ import annotations

import io
import json
import logging
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import typer

from .outputs import write_bytes_atomic

log = logging.getLogger(__name__)

# Logit given to the copied token; large enough that beam search never prefers anything else.
_COPY_LOGIT = 20.0
# Weight on the SPARE column of the lossy rows: 3x their largest real weight (see build_copy_model).
_SPARE_WEIGHT = 6 * _COPY_LOGIT
# Query scale: the attention logit gap between position t and any other is about this / sqrt(2).
_QUERY_SCALE = 40.0


@dataclass
class LossySpec:
    """Tokens (surface strings) the lossy model deletes, from source position `from_position` on."""

    tokens: tuple[str, ...]
    from_position: int = 0


def _default_sentences(from_code: str) -> list[str]:
    """A few neutral sentences so a tokenizer can be trained when the caller gives none
    (corpora/argos_testkit/sentences.txt, which the factory ships)."""
    from . import project_root

    path = project_root() / "corpora" / "argos_testkit" / "sentences.txt"
    if not path.exists():
        raise FileNotFoundError(f"{path}: the copy models' default sentences are missing; pass `sentences`")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]


def language_of(code: str) -> tuple[str, str]:
    """(name, spaCy language) of a language code, as its locale says (languages/<code>/locale.yml:
    `name`, `spacy_lang`); a code the project has no locale of keeps the code as its name and gets
    spaCy's own blank language when spaCy has one, else the multi-language one ("xx")."""
    import spacy

    from .locale import Locale

    locale = Locale.find(code)
    if locale is not None:
        return str(locale.get("name") or code), str(locale.get("spacy_lang") or code)
    try:
        spacy.util.get_lang_class(code)
    except ImportError:
        return code, "xx"
    return code, code


def train_sentencepiece(sentences: Sequence[str], out_prefix: Path, vocab_size: int = 400, user_symbols: Iterable[str] = ()) -> Path:
    """Train a small unigram SentencePiece model with byte fallback (every character is encodable)."""
    import sentencepiece as spm

    out_prefix.parent.mkdir(parents=True, exist_ok=True)
    corpus = out_prefix.parent / (out_prefix.name + ".train.txt")
    # Repeat the sentences so small inputs still reach SentencePiece's minimum data size.
    corpus.write_text("\n".join(list(sentences) * 3) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(out_prefix),
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        byte_fallback=True,
        hard_vocab_limit=False,
        user_defined_symbols=list(user_symbols),
        minloglevel=2,
    )
    corpus.unlink()
    return out_prefix.with_suffix(".model")


def _sp_pieces(model_path: Path) -> list[str]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(model_path))
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def build_copy_model(vocab: Sequence[str], out_dir: Path, max_positions: int = 320, lossy: LossySpec | None = None) -> Path:
    """Write a CTranslate2 Transformer that copies its input (see the module docstring)."""
    import numpy as np
    from ctranslate2.specs import common_spec, transformer_spec

    V, P = len(vocab), max_positions
    d = V + P + 1
    A, POS, SPARE = 0, V, V + P  # block offsets in the model width; SPARE: one column that stays 0

    spec = transformer_spec.TransformerSpec.from_config(
        (1, 1), 1, pre_norm=True, no_final_norm=True, activation=common_spec.Activation.RELU
    )
    enc, dec = spec.encoder, spec.decoder

    def zeros(*shape):
        return np.zeros(shape, dtype=np.float32)

    def ln(norm):
        norm.gamma = np.ones(d, dtype=np.float32)
        norm.beta = zeros(d)

    def zero_linear(linear, out_dim, in_dim):
        linear.weight = zeros(out_dim, in_dim)
        linear.bias = zeros(out_dim)

    token_emb = zeros(V, d)
    token_emb[np.arange(V), A + np.arange(V)] = 1.0
    positions = zeros(P, d)
    positions[np.arange(P), POS + np.arange(P)] = 1.0

    for stack in (enc, dec):
        stack.scale_embeddings = False
        stack.position_encodings.encodings = positions.copy()
    enc.embeddings[0].weight = token_emb
    dec.embeddings.weight = zeros(V, d)

    for layer in (enc.layer[0], dec.layer[0]):
        ln(layer.self_attention.layer_norm)
        zero_linear(layer.self_attention.linear[0], 3 * d, d)
        zero_linear(layer.self_attention.linear[1], d, d)
        ln(layer.ffn.layer_norm)
        # A one-unit feed-forward block: zero anyway, and the smallest CTranslate2 accepts.
        zero_linear(layer.ffn.linear_0, 1, d)
        zero_linear(layer.ffn.linear_1, d, 1)

    cross = dec.layer[0].attention
    ln(cross.layer_norm)
    query = zeros(d, d)
    query[POS + np.arange(P), POS + np.arange(P)] = _QUERY_SCALE
    cross.linear[0].weight = query
    cross.linear[0].bias = zeros(d)
    kv = zeros(2 * d, d)
    kv[POS + np.arange(P), POS + np.arange(P)] = 1.0  # keys: the source position
    kv[d + A + np.arange(V), A + np.arange(V)] = 1.0  # values: the source token
    cross.linear[1].weight = kv
    cross.linear[1].bias = zeros(2 * d)
    out = zeros(d, d)
    out[A + np.arange(V), A + np.arange(V)] = 1.0  # the copied token lands in block A
    cross.linear[2].weight = out
    cross.linear[2].bias = zeros(d)

    projection = zeros(V, d)
    projection[np.arange(V), A + np.arange(V)] = _COPY_LOGIT
    if lossy and lossy.tokens:
        index = {piece: i for i, piece in enumerate(vocab)}
        blank = index.get("▁")
        if blank is None:
            raise ValueError("lossy copy model needs the bare '▁' piece in the vocabulary")
        dropped = [index[t] for t in lossy.tokens if t in index]
        if not dropped:
            raise ValueError("none of the lossy tokens is a single piece of the vocabulary")
        start = max(0, min(lossy.from_position, P))
        for tok in dropped:
            # From `start` on: the dropped token loses 2x its copy logit, the bare space gains half,
            # so a copied ordinary token (20) still beats the space (10) and a dropped one (-20) does not.
            projection[tok, POS + start : POS + P] = -2 * _COPY_LOGIT
        projection[blank, POS + start : POS + P] = _COPY_LOGIT / 2
        # Rounding guard. Argos runs CTranslate2 with compute_type "auto", which is int8 on most x86
        # CPUs: each projection row is scaled so that its largest weight becomes 127, and AVX2 int8
        # kernels add pairs of neighbouring products in 16 bits, which saturate when a row holds a
        # run of large same-sign weights (the penalty above). The drop then silently vanished on one
        # CPU and worked on another. A weight on the always-zero SPARE column sets every lossy row's
        # scale, so the real weights quantize to at most a third of the int8 range, where no pair can
        # saturate; the column adds nothing to any logit, in float32 or int8.
        projection[dropped + [blank], SPARE] = _SPARE_WEIGHT
    dec.projection.weight = projection
    dec.projection.bias = zeros(V)

    spec.register_source_vocabulary(list(vocab))
    spec.register_target_vocabulary(list(vocab))
    spec.config.add_source_eos = True
    spec.config.unk_token = "<unk>"
    spec.config.bos_token = "<s>"
    spec.config.eos_token = "</s>"
    spec.validate()
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    spec.save(str(out_dir))
    return out_dir


def build_package(
    out_path: str | Path,
    from_code: str,
    to_code: str,
    sentences: Sequence[str] | None = None,
    lossy_tokens: Sequence[str] = (),
    lossy_from_position: int = 0,
    max_positions: int = 320,
    vocab_size: int = 400,
    package_version: str = "1.0",
) -> Path:
    """Build one `.argosmodel` zip for from_code -> to_code and return its path.

    `sentences` train the tokenizer (placeholder terms and typical text of the corpus go there);
    `lossy_tokens` become single pieces that the model deletes (see LossySpec).
    """
    import spacy

    out_path = Path(out_path)
    if out_path.suffix != ".argosmodel":
        out_path = out_path / f"translate-{from_code}_{to_code}{'-lossy' if lossy_tokens else ''}.argosmodel"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    sentences = list(sentences) if sentences else _default_sentences(from_code)
    for tok in lossy_tokens:
        if not tok or any(ch.isspace() for ch in tok):
            raise ValueError("a lossy token must be one word without spaces")
    root_name = f"{from_code}_{to_code}"
    with tempfile.TemporaryDirectory(prefix="argos_testkit_") as tmp:
        pkg = Path(tmp) / root_name
        pkg.mkdir()
        sp_model = train_sentencepiece(sentences + list(lossy_tokens), Path(tmp) / "sp" / "sentencepiece", vocab_size, lossy_tokens)
        shutil.copy(sp_model, pkg / "sentencepiece.model")
        vocab = _sp_pieces(sp_model)
        lossy = LossySpec(tuple(lossy_tokens), lossy_from_position) if lossy_tokens else None
        build_copy_model(vocab, pkg / "model", max_positions=max_positions, lossy=lossy)
        # A blank pipeline without sentencizer: with ARGOS_CHUNK_TYPE=SPACY Argos loads it and adds its own.
        (from_name, lang), (to_name, _) = language_of(from_code), language_of(to_code)
        spacy.blank(lang).to_disk(pkg / "spacy")
        metadata = {
            "package_version": package_version,
            "argos_version": "1.9",
            "from_code": from_code,
            "from_name": from_name,
            "to_code": to_code,
            "to_name": to_name,
            "type": "translate",
            "links": [],
        }
        (pkg / "metadata.json").write_text(json.dumps(metadata, indent=2), encoding="utf-8")
        (pkg / "README.md").write_text(
            f"Copy model {from_code}->{to_code} built by deid_factory.argos_testkit (a test stand-in: it copies its input"
            + (f"; lossy: drops {len(lossy_tokens)} token(s) from position {lossy_from_position}" if lossy_tokens else "")
            + ").\n",
            encoding="utf-8",
        )
        # The zip is built in memory (a few MB) and written atomically under a unique temp name: two
        # builds of the same package cannot clash, and a failure leaves no stray temp file behind.
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for file in sorted(pkg.rglob("*")):
                zf.write(file, file.relative_to(Path(tmp)).as_posix())
        write_bytes_atomic(out_path, buffer.getvalue())
    log.info("built %s -> %s copy package %s", from_code, to_code, out_path.name)
    return out_path


def parse_pairs(pairs: str) -> list[tuple[str, str]]:
    """'es-en,en-fr' -> [('es', 'en'), ('en', 'fr')]; a clear error for anything else."""
    result = []
    for item in pairs.split(","):
        item = item.strip()
        if not item:
            continue
        parts = item.split("-")
        if len(parts) != 2 or not all(p.isalpha() and 2 <= len(p) <= 3 for p in parts):
            raise ValueError(f"bad language pair {item!r}: expected FROM-TO like es-en")
        result.append((parts[0].lower(), parts[1].lower()))
    if not result:
        raise ValueError("no language pair given")
    return result


def build_packages(
    out_dir: str | Path,
    pairs: str | Sequence[tuple[str, str]],
    sentences: Sequence[str] | None = None,
    lossy_tokens: Sequence[str] = (),
    lossy_from_position: int = 0,
    max_positions: int = 320,
) -> list[Path]:
    """Build one package per pair into out_dir (the form `factory translate --packages-dir` installs)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(pairs, str):
        pairs = parse_pairs(pairs)
    return [
        build_package(out_dir / f"translate-{a}_{b}.argosmodel", a, b, sentences, lossy_tokens, lossy_from_position, max_positions)
        for a, b in pairs
    ]


def argos_testkit_command(
    out_dir: Path = typer.Argument(..., help="Folder for the .argosmodel files"),
    pairs: str = typer.Option("es-en,en-fr", help="Language pairs, e.g. es-en,en-fr"),
    lossy: str = typer.Option("", help="Comma-separated words the packages drop (to test repair and drops)"),
    lossy_from_position: int = typer.Option(0, help="Drop the lossy words only from this token position on"),
    sentences_file: Path | None = typer.Option(None, help="Text (one sentence a line) to train the tokenizer on"),
    max_positions: int = typer.Option(320, help="Longest sentence (in tokens) the copy model can copy"),
) -> None:
    """Build copy-model .argosmodel packages (offline test stand-ins for Argos Translate packages)."""

    try:
        pair_list = parse_pairs(pairs)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--pairs") from None
    sentences = None
    if sentences_file is not None:
        if not sentences_file.exists():
            raise typer.BadParameter(f"file not found: {sentences_file}", param_hint="--sentences")
        sentences = [l.strip() for l in sentences_file.read_text(encoding="utf-8").splitlines() if l.strip()]
    from .placeholders import all_placeholder_terms

    # Placeholder terms of every locale join the tokenizer data so they are whole pieces in the vocab.
    sentences = (sentences or _default_sentences("")) + all_placeholder_terms()
    lossy_tokens = [t for t in (x.strip() for x in lossy.split(",")) if t]
    paths = build_packages(out_dir, pair_list, sentences, lossy_tokens, lossy_from_position, max_positions)
    for path in paths:
        typer.echo(str(path))
