"""Worker-side half of the train suite: the student's train_step with lr fixed, for student.program.

``jax.jit(train_step)`` would trace lr, which a step built with ``static_broadcasted_argnums``
(a correct choice) cannot take; closing over lr compiles either kind.
"""

from grader.sandbox import student_function


def train_step(lr):
    step = student_function("train.train_step")
    return lambda params, batch: step(params, batch, lr)
