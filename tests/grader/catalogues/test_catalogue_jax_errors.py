"""Wrong submissions that fail inside JAX: the report tells the mistake, and keeps JAX's own text as ``error``.

Each loses points on its task with a reason in the student's terms (grader.suite.jax_errors), leaves
another task at full points, and the failed cases keep what JAX said for instructors.
"""

import pytest

from catalogue import expect_caught, mutate

BASICS_CHECK = '    _check_leading_axis("x", x)\n    return _square_plus_one(x)'

WRONG = {
    "the chapter's ring for 4 devices, on 2": (
        mutate("ring", ("for i in range(n)]", "for i in range(4)]"), ("(i + shift) % n", "(i + shift) % 4")),
        "ring", "dot", "2", "lax.ppermute's perm ((0, 1), (1, 2), (2, 3), (3, 0)) is written for 4 devices, but this "
                            "ring has 2", "ppermute sources and destinations must be unique"),
    "psum over the wrong mesh axis": (
        mutate("mesh", ('lax.psum(x_block @ w_block, "model")', 'lax.psum(x_block @ w_block, "data")')),
        "mesh", "dot", "4", "shard_map's out_specs P('data', None) says the result is the same on every device along "
                            "mesh axis 'model'", "out_specs which require replication"),
    "w not placed on the mesh (Explicit axes)": (
        mutate("mesh", ('    w = jax.device_put(w, NamedSharding(mesh, P("model", None)))\n', "")),
        "mesh", "dot", "4", "laid out as P('model', None), but it arrives as P(None, None)",
        "does not match the specs of the input"),
    "np.sqrt inside pmap": (
        mutate("collectives", ("jnp.sqrt(variance)", "np.sqrt(variance)"),
               ("import jax\n", "import jax\nimport numpy as np\n")),
        "collectives", "dot", "2", "np.sqrt is a NumPy function", "__array__() was called on traced array"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_a_jax_error_is_told_as_the_mistake_behind_it(make_submission, mistake):
    source, wrong, intact, devices, reason, raw = WRONG[mistake]
    lost = expect_caught(make_submission({wrong: source}), wrong, intact, devices, reason)
    failed = [c for c in lost["cases"] if c["outcome"] == "failed" and reason in c["message"]]
    assert failed and all(raw in c["error"] for c in failed), [c["error"] for c in failed]


def test_no_leading_axis_check_is_not_credited_with_jaxs_valueerror(make_submission):
    source = mutate("basics", (BASICS_CHECK, "    return _square_plus_one(x)"))
    lost = expect_caught(make_submission({"basics": source}), "basics", "devices", "1,2",
                         "raised ValueError inside JAX, not from a check of your own")
    messages = {c["devices"]: c["message"] for c in lost["cases"] if c["test"] == "test_rejects_wrong_leading_axis"
                and c["name"].endswith("square_plus_one]")}
    assert "raised IndivisibleError inside JAX" in messages[2], messages
