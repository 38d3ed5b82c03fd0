"""Wrong submissions that fail inside JAX: the report tells the mistake, and keeps JAX's own text as ``error``.

Each loses points on its task with a reason in the student's terms (grader.suite.jax_errors), leaves
another task at full points, and the failed cases keep what JAX said for instructors.
"""

import pytest

from catalogue import Catalogue, Wrong, mutate

BASICS_CHECK = '    _check_leading_axis("x", x)\n    return _square_plus_one(x)'

# mistake -> (its task, the submission, what JAX itself said)
WRONG = {
    "the chapter's ring for 4 devices, on 2": ("ring", Wrong(
        {"ring": mutate("ring", ("for i in range(n)]", "for i in range(4)]"), ("(i + shift) % n", "(i + shift) % 4"))},
        "2", says=("lax.ppermute's perm ((0, 1), (1, 2), (2, 3), (3, 0)) is written for 4 devices, but this "
                   "ring has 2",)),
        "ppermute sources and destinations must be unique"),
    "psum over the wrong mesh axis": ("mesh", Wrong(
        {"mesh": mutate("mesh", ('lax.psum(x_block @ w_block, "model")', 'lax.psum(x_block @ w_block, "data")'))},
        "4", says=("shard_map's out_specs P('data', None) says the result is the same on every device along "
                   "mesh axis 'model'",)),
        "out_specs which require replication"),
    "w not placed on the mesh (Explicit axes)": ("mesh", Wrong(
        {"mesh": mutate("mesh", ('    w = jax.device_put(w, NamedSharding(mesh, P("model", None)))\n', ""))},
        "4", says=("laid out as P('model', None), but it arrives as P(None, None)",)),
        "does not match the specs of the input"),
    "np.sqrt inside pmap": ("collectives", Wrong(
        {"collectives": mutate("collectives", ("jnp.sqrt(variance)", "np.sqrt(variance)"),
                               ("import jax\n", "import jax\nimport numpy as np\n"))},
        "2", says=("np.sqrt is a NumPy function",)),
        "__array__() was called on traced array"),
}
CATALOGUES = {t: Catalogue(t, {name: wrong for name, (task, wrong, _) in WRONG.items() if task == t}, intact="dot")
              for t in {task for task, _, _ in WRONG.values()}}
NO_CHECK = Catalogue("basics", {"no leading axis check": Wrong(
    {"basics": mutate("basics", (BASICS_CHECK, "    return _square_plus_one(x)"))},
    "1,2", says=("inside JAX at basics.py:", "not from a check of your own"))}, intact="devices")


@pytest.mark.parametrize("mistake", WRONG)
def test_a_jax_error_is_told_as_the_mistake_behind_it(mistake):
    task, wrong, raw = WRONG[mistake]
    lost = CATALOGUES[task].expect_caught(mistake)
    failed = [c for c in lost["cases"] if c["outcome"] == "failed" and wrong.says[0] in c["message"]]
    assert failed and all(raw in c["error"] for c in failed), [c["error"] for c in failed]


def test_no_leading_axis_check_is_not_credited_with_jaxs_valueerror():
    lost = NO_CHECK.expect_caught("no leading axis check")
    messages = {c["devices"]: c["message"] for c in lost["cases"] if c["test"] == "test_rejects_wrong_leading_axis"
                and c["name"].endswith("square_plus_one]")}
    assert "raised IndivisibleError inside JAX" in messages[2], messages
