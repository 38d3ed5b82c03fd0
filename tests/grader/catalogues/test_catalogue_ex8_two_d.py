"""Wrong submissions for exercise 8's extra-credit task two_d: each loses points, says why, and leaves layouts whole."""

import pytest

from catalogue import Catalogue, Right, Wrong, mutate

SPECS = 'SPECS = (P("data", "model"), P("model", "data"), P("data", None), P("data", None))'
GATHER_W1 = 'w1_rows = lax.all_gather(w1, "data", axis=0, tiled=True)'
GATHER_W2 = 'w2_cols = lax.all_gather(w2, "data", axis=1, tiled=True)'


def two_d(*edits):
    return {"two_d": mutate("two_d", *edits, exercise="exercise8")}


WRONG = {
    "weights whole over 'data' (data parallelism), gradients all-reduced": Wrong(two_d(
        (SPECS, 'SPECS = (P(None, "model"), P("model", None), P("data", None), P("data", None))'),
        (GATHER_W1, "w1_rows = w1"), (GATHER_W2, "w2_cols = w2")), devices="4",
        says=("train_step all-reduces", "over 'data'", "a whole gradient", "reduce-scatters their gradients")),
    # Rounds 43 and 45 (written apart): the gradients not divided by n_data, told as the factor alone before
    "the gradients summed over 'data', not averaged": Wrong(two_d(
        ("return w1 - lr * g1 / n, w2 - lr * g2 / n", "return w1 - lr * g1, w2 - lr * g2")), devices="4",
        says=("train_step's update is 2 times the full-batch step", "divide them by the number of devices along "
              "'data'")),
}

RIGHT = {
    "the loss averaged as a psum over n": Right(two_d(
        ('lax.pmean(loss, "data")', 'lax.psum(loss, "data") / n')), devices="4"),
}

CATALOGUE = Catalogue(exercise="exercise8", task="two_d", intact="layouts", wrong=WRONG, right=RIGHT)


@pytest.mark.parametrize("name", WRONG)
def test_wrong_two_d_is_caught(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("name", RIGHT)
def test_other_right_two_d_keeps_full_marks(name):
    CATALOGUE.expect_full_marks(name)
