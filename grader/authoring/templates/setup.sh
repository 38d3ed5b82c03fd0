#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image: a virtualenv with the
# exact versions this course was released with (requirements.txt). Written by `grade release`.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$ROOT/venv"
MIN_MINOR=@MIN_MINOR@

find_python() {
  for py in python3.13 python3.12 python3.11 python3; do
    if command -v "$py" >/dev/null && "$py" -c "import sys; sys.exit(sys.version_info < (3, $MIN_MINOR))" 2>/dev/null; then
      echo "$py"
      return 0
    fi
  done
  return 1
}

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get update -y && DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

if ! PY="$(find_python)"; then
  echo "no Python >= 3.$MIN_MINOR found; installing python3.$MIN_MINOR with apt" >&2
  apt_install "python3.$MIN_MINOR" "python3.$MIN_MINOR-venv"
  PY="python3.$MIN_MINOR"
fi
if ! "$PY" -m venv "$VENV"; then
  apt_install "$(basename "$PY")-venv"
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/pip" install --no-cache-dir -r "$SOURCE/requirements.txt"
"$VENV/bin/python" -c "import jax; print('autograder ready: jax', jax.__version__)"
