#!/usr/bin/env bash
# Create the virtual environments for the peer libraries and install them (idempotent).
#
#   benchmarks/peers/setup_peers.sh            # install everything missing
#   RINGFIRE_PEERS_HOME=/some/dir benchmarks/peers/setup_peers.sh
#
# Venvs live OUTSIDE the repository (default ~/.ringfire-peers):
#   py311/  CPython 3.11: tenseal, seal-python, desilofhe (CPU build), numpy
#   py310/  CPython 3.10: openfhe (its wheel only holds a cp310 extension), numpy
#   concrete/ CPython 3.11: concrete-python (Zama's TFHE compiler; it pulls torch, ~6 GB,
#           hence a venv of its own) and setuptools<70 (its namespace package imports
#           pkg_resources)
# Prints a summary of what is installed and what failed; exit status 0 unless no
# peer at all could be installed.
set -u
HOME_DIR="${RINGFIRE_PEERS_HOME:-$HOME/.ringfire-peers}"
mkdir -p "$HOME_DIR"
PIP_FLAGS=(--disable-pip-version-check -q)

find_python() {  # $1 = major.minor
    local v="$1" c
    for c in "$HOME/.pyenv/versions/$v"*/bin/python3 "$(command -v python$v 2>/dev/null)"; do
        [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
    done
    return 1
}

make_venv() {  # $1 = dir, $2 = major.minor
    local dir="$1" v="$2" py
    if [ -x "$dir/bin/python" ]; then return 0; fi
    py="$(find_python "$v")" || { echo "no python$v found (pyenv ~/.pyenv/versions/$v*)" >&2; return 1; }
    "$py" -m venv "$dir" || return 1
    "$dir/bin/python" -m pip install "${PIP_FLAGS[@]}" --upgrade pip >/dev/null 2>&1 || true
}

ok=(); failed=()
try_install() {  # $1 = venv dir, $2 = pip name, $3 = import name
    local dir="$1" pkg="$2" mod="$3"
    if "$dir/bin/python" -c "import $mod" >/dev/null 2>&1; then ok+=("$pkg"); return 0; fi
    echo "installing $pkg into $dir ..."
    if "$dir/bin/python" -m pip install "${PIP_FLAGS[@]}" --only-binary=:all: "$pkg" \
        && "$dir/bin/python" -c "import $mod" >/dev/null 2>&1; then
        ok+=("$pkg")
    else
        failed+=("$pkg"); echo "FAILED: $pkg" >&2
    fi
}

if make_venv "$HOME_DIR/py311" 3.11; then
    try_install "$HOME_DIR/py311" numpy numpy
    try_install "$HOME_DIR/py311" tenseal tenseal
    try_install "$HOME_DIR/py311" seal-python seal
    try_install "$HOME_DIR/py311" desilofhe desilofhe
else
    failed+=("py311-venv(tenseal,seal-python,desilofhe)")
fi
if make_venv "$HOME_DIR/py310" 3.10; then
    try_install "$HOME_DIR/py310" numpy numpy
    try_install "$HOME_DIR/py310" openfhe openfhe
else
    failed+=("py310-venv(openfhe)")
fi
if make_venv "$HOME_DIR/concrete" 3.11; then
    # concrete-python pulls torch, whose metadata asks for setuptools>=77, which no longer has
    # the pkg_resources concrete's namespace package imports: setuptools<70 goes in afterwards
    # (pip warns about torch's pin; torch is not used here).
    if ! "$HOME_DIR/concrete/bin/python" -c "import concrete.fhe" >/dev/null 2>&1; then
        "$HOME_DIR/concrete/bin/python" -m pip install "${PIP_FLAGS[@]}" --only-binary=:all: "concrete-python==2.10.0"
        "$HOME_DIR/concrete/bin/python" -m pip install "${PIP_FLAGS[@]}" "setuptools<70" 2>/dev/null
    fi
    try_install "$HOME_DIR/concrete" "concrete-python==2.10.0" concrete.fhe
else
    failed+=("concrete-venv(concrete-python)")
fi

echo "peers home: $HOME_DIR"
echo "installed: ${ok[*]:-none}"
echo "failed:    ${failed[*]:-none}"
[ ${#ok[@]} -gt 0 ]
