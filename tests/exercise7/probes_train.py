"""Worker-side half of the train suite: compile the student's train_step with lr fixed.

``jax.jit(train_step)`` would trace lr, which a step built with ``static_broadcasted_argnums``
(a correct choice) cannot take; closing over lr compiles either kind. Returns the HLO text.
"""

import jax

from grader.sandbox import student_function


def train_step(params, batch, lr) -> str:
    step = student_function("train.train_step")
    return jax.jit(lambda p, b: step(p, b, lr)).lower(params, batch).compile().as_text()
