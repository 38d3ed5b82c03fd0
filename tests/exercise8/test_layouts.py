"""Suite for task layouts: a ('data', 'model') mesh, two placements, and three questions read off an array.

Meshes and arrays are described by probes_layouts.py in the worker; what each device should hold is
worked out here from the mesh shape and the PartitionSpec (grader.suite.meshes). Visible tests run
the statement's cases on the squarest mesh at 1, 2 and 4 devices; the hidden ones (course.yaml) run
every other mesh shape, 8 devices and other PartitionSpecs.
"""

import numpy as np
import pytest

from grader.suite import expect_raises, expect_shape, feedback, meshes

AXES = ("data", "model")
BATCH = [["data", "model"], None]   # place_batch: rows over both axes, 'data' first
WEIGHTS = [None, "model"]           # place_weights: columns over 'model'
# function: (the array it places, its PartitionSpec, what that means)
PLACEMENTS = {"place_batch": ("x", BATCH, "rows split over every device, 'data' first: P(('data', 'model'), None)"),
              "place_weights": ("w", WEIGHTS, "columns split over 'model', the same blocks on every mesh row: "
                                              "P(None, 'model')")}


def _check_mesh(student, devices, model):
    call = f"data_model_mesh({model}) on {devices} devices"
    mesh = student.probe("probes_layouts.data_model_mesh", model)
    if mesh["type"] != "Mesh":
        raise AssertionError(f"{call} returned {mesh['type']}, expected a jax.sharding.Mesh: "
                             "jax.make_mesh((rows, model), ('data', 'model')) builds one with axis names")
    if mesh["axis_names"] != list(AXES):
        raise AssertionError(f"{call} has axis names {tuple(mesh['axis_names'])}, expected ('data', 'model')")
    ids = expect_shape(mesh["device_ids"], (devices // model, model), f"the device grid of {call}")
    if sorted(ids.ravel()) != list(range(devices)):
        raise AssertionError(f"{call} holds devices {sorted(ids.ravel().tolist())}: a mesh uses every device once")


@pytest.mark.devices(1, 2, 4)
def test_data_model_mesh_uses_every_device(student, devices):
    for _, model in meshes.shapes(devices):
        _check_mesh(student, devices, model)


@pytest.mark.devices(1, 2, 4)
def test_data_model_mesh_rejects_a_model_size_that_does_not_divide(student, devices):
    expect_raises(lambda: student.probe("probes_layouts.data_model_mesh", 3), "ValueError",
                  f"data_model_mesh(3) on {devices} devices", mentions=(3, devices),
                  why="3 devices along 'model' do not divide the device count, so no mesh fits")


def _slice(name, block) -> str:
    return f"{name}[" + ", ".join(f"{a}:{b}" for a, b in block) + "]" if block else "nothing"


def _check_placement(student, rng, function, rows, cols):
    name, spec, meaning = PLACEMENTS[function]
    x = rng.normal(size=(2 * rows * cols, 2 * cols)).astype(np.float32)
    call = f"{function}({name}, mesh) on a {rows} x {cols} mesh"
    out = student.probe("probes_layouts.place", function, x, rows, cols)
    ids = meshes.device_ids((rows, cols))
    expected = {int(d): meshes.block_of(x.shape, spec, AXES, (rows, cols), pos) for pos, d in np.ndenumerate(ids)}
    got = {int(d): tuple(tuple(pair) for pair in block) for d, block in out.get("blocks", {}).items()}
    if "blocks" not in out:
        raise AssertionError(f"{call} returned {out['type']}, not a jax.Array on the mesh: "
                             f"jax.device_put(x, NamedSharding(mesh, P(...))) places it")
    feedback.layout(call, [[f"d{d}: {_slice(name, expected[d])}" for d in row] for row in ids.tolist()],
                    [[f"d{d}: {_slice(name, got.get(d))}" for d in row] for row in ids.tolist()])
    if not np.array_equal(out["values"], x):
        raise AssertionError(f"{call} changed the values of {name}: placing an array moves it, never computes on it")
    if got != expected:
        laid_out = f" is laid out as {meshes.spec_text(out['spec'])}," if "spec" in out else ""
        device = next(d for d in expected if got.get(d) != expected[d])
        raise AssertionError(f"{call}{laid_out} so device {device} holds {_slice(name, got.get(device))}; "
                             f"expected {meaning}")


@pytest.mark.devices(1, 2, 4)
@pytest.mark.parametrize("function", PLACEMENTS)
def test_placement_gives_each_device_its_block(student, rng, devices, function):
    _check_placement(student, rng, function, *meshes.square(devices))


def _pairs(answer) -> tuple | None:
    return tuple(tuple(int(v) for v in row) for row in answer) if isinstance(answer, np.ndarray) and \
        answer.ndim == 2 and answer.shape[1] == 2 else None


def _check_questions(student, shape, spec, rows, cols):
    sizes = (rows, cols)
    about = f"an array of shape {shape} laid out as {meshes.spec_text(spec)} on a {rows} x {cols} mesh"
    out = student.probe("probes_layouts.questions", list(shape), spec, rows, cols)
    want = meshes.block_shape(shape, spec, AXES, sizes)
    got = out["shard_shape"]
    if not isinstance(got, np.ndarray) or tuple(got.tolist()) != want:
        said = tuple(got.tolist()) if isinstance(got, np.ndarray) else got.get("text")
        raise AssertionError(f"shard_shape(x) returned {said} for {about}, expected {want}: each dimension divided "
                             "by the sizes of the mesh axes its PartitionSpec entry names")
    copies = meshes.copies(spec, AXES, sizes)
    got = out["copies"]
    if not isinstance(got, np.ndarray) or got.shape != () or int(got) != copies:
        said = got.tolist() if isinstance(got, np.ndarray) else got.get("text")
        blocks, on = rows * cols // copies, rows * cols
        measured = ""
        if said == on == blocks:  # round 61: either count, split whole; which one the function returned is unknown
            measured = (f"; {on} is both how many devices the array is on and how many different blocks they hold "
                        "(each its own here), not how many devices hold each element: the number of devices "
                        "divided by the number of different blocks")
        elif said == on and on != copies:  # round 51: len(x.sharding.device_set)
            measured = f"; {on} is how many devices the array is on, not how many devices hold each element"
        elif said == blocks and blocks != copies:
            measured = (f"; {blocks} is how many different blocks the {on} devices hold, not how many devices hold "
                        "each element")
        why = ("the devices along the mesh axes the PartitionSpec leaves out hold the same block" if copies > 1 else
               "the PartitionSpec splits over every mesh axis larger than 1, so each element is on one device")
        raise AssertionError(f"copies(x) returned {said} for {about}, expected {copies}: {why}{measured}")
    for (pos, device), answer in zip(np.ndenumerate(meshes.device_ids(sizes)), out["blocks"]):
        block = meshes.block_of(shape, spec, AXES, sizes, pos)
        if _pairs(answer) != block:
            said = _pairs(answer) or (answer.tolist() if isinstance(answer, np.ndarray) else answer.get("text"))
            raise AssertionError(f"block_of(x, device) for device {device} at mesh position {pos} returned {said} "
                                 f"for {about}, expected {block}: one (start, stop) pair per dimension of x")


QUESTIONS = [["data", "model"], [None, "model"], [["data", "model"], None], []]
OTHER_QUESTIONS = [["model", "data"], [["model", "data"]], [None, ["data", "model"]]]


def _ask(student, specs, rows, cols):
    for spec in specs:
        _check_questions(student, (2 * rows * cols, 3 * rows * cols), spec, rows, cols)


@pytest.mark.devices(1, 2, 4)
def test_layout_questions_read_the_array(student, devices):
    _ask(student, QUESTIONS, *meshes.square(devices))


@pytest.mark.devices(8)
def test_data_model_mesh_on_eight_devices(student, devices):
    for _, model in meshes.shapes(devices):
        _check_mesh(student, devices, model)


def test_layouts_on_every_other_mesh_shape(student, rng, devices):
    for rows, cols in [s for s in meshes.shapes(devices) if s != meshes.square(devices)] or [meshes.square(devices)]:
        for function in PLACEMENTS:
            _check_placement(student, rng, function, rows, cols)
        _ask(student, QUESTIONS[:1] + OTHER_QUESTIONS, rows, cols)
