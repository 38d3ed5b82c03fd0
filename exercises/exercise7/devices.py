"""Task devices: count the devices JAX sees and put an array on one of them.

Write two functions.

count_devices(platform=None) -> int
    With platform=None: how many devices JAX uses (the devices jax.pmap maps over). With a platform
    name, "cpu", "gpu" or "tpu": how many devices of that platform there are, and 0 when this
    machine has none of them.

        >>> count_devices()                      # a laptop with 4 emulated CPU devices
        4
        >>> count_devices("cpu"), count_devices("gpu"), count_devices("tpu")
        (4, 0, 0)

put_on_device(x, index) -> jax.Array
    x (an array of any shape) copied onto the device jax.devices()[index], with the same shape,
    dtype and values. Return the jax.Array itself (not a NumPy copy): the grader looks at where it lives.
    Valid indices are 0 .. count_devices() - 1. Any other index, too large or negative, raises
    ValueError with a message that names the index and the device count, for example
    "no device 5: there are 4 devices, indices 0 .. 3".

        >>> y = put_on_device(jnp.arange(3.), 2)         # on the same laptop
        >>> y.devices()
        {CpuDevice(id=2)}

Where the chapter is out of date (checked on JAX 0.10.2):
  * jax.device_count("gpu") does not return 0 on a machine without GPUs: it raises RuntimeError
    ("Unknown backend: 'gpu' requested ..."), and so does jax.devices("gpu"). Catch that error,
    or count the devices whose .platform matches.
  * x.device() is gone. x.device is now a property (the Device of an array that lives on one
    device), x.devices() is the set of devices an array lives on, and x.sharding says how it is
    laid out over them. Check your placement with y.devices() == {jax.devices()[index]}.
  * jax.devices()[-1] is valid Python, but a device index here is never negative: reject it
    instead of quietly using the last device.

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax


def count_devices(platform=None):
    raise NotImplementedError("count_devices: all devices, or those of one platform")


def put_on_device(x, index):
    raise NotImplementedError("put_on_device: x on device jax.devices()[index]")


if __name__ == "__main__":  # python devices.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
