"""Epoch-based settings turned into spaCy's step-based ones, and the training log printed once.

The batch size compounds from 100 to 1000 words over the whole run, so the first epoch takes about
three times the steps of the later ones. Evaluating every first-epoch's steps made the log's epoch
column jump (5, 7, 10) and a patience of 5 epochs last ~15."""

import subprocess
import sys

from deid_factory.train import epoch_steps, steps_per_epoch, training_schedule

NOTES = [300] * 800  # the default build's size: 800 notes of ~300 tokens


def _epoch_at(step: int, steps: list[int]) -> int:
    done = 0
    for epoch, n in enumerate(steps):
        done += n
        if step <= done:
            return epoch
    return len(steps)


def test_later_epochs_take_fewer_steps_as_the_batch_grows():
    steps = epoch_steps(NOTES, 20)
    assert steps[0] == steps_per_epoch(NOTES)
    assert steps[0] > 2.5 * steps[-1]
    assert steps == sorted(steps, reverse=True)
    assert steps[-1] == steps[-2]  # steady once the batch has grown to 1,000 words


def test_every_epoch_holds_an_evaluation_and_the_epoch_column_never_skips_one():
    steps = epoch_steps(NOTES, 20)
    plan = training_schedule(NOTES, max_epochs=20, patience=5)
    evals = range(plan["eval_frequency"], sum(steps) + 1, plan["eval_frequency"])
    epochs = [_epoch_at(step, steps) for step in evals]
    assert all(b - a <= 1 for a, b in zip(epochs, epochs[1:])), epochs
    assert set(epochs) == set(range(20))


def test_patience_never_lasts_longer_than_its_epochs():
    steps = epoch_steps(NOTES, 20)
    plan = training_schedule(NOTES, max_epochs=20, patience=5)
    # from any epoch on, 5 epochs hold at least the patience's steps
    assert all(sum(steps[i:i + 5]) >= plan["patience_steps"] for i in range(len(steps) - 4))


def test_spacys_training_lines_are_printed_once():
    code = ("import logging; from deid_factory.logs import setup_command_logging; setup_command_logging(); "
            "lg = logging.getLogger('spacy'); lg.setLevel(logging.INFO); lg.info('initialised-pipeline')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (out.stdout + out.stderr).count("initialised-pipeline") == 1
