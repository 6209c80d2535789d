#!/usr/bin/env bash
# The packaging check (docs/install.md), run by CI after the Release build; as root or not.
#   (a) `cmake --install BUILD --prefix P` into a fresh prefix writes only inside P, and from P
#       the library, headers, CMake package, CLI and Python package are there; the package
#       imports with PYTHONPATH=P/lib/python3.X/site-packages, the CLI runs.
#   (b) `pip install --no-build-isolation --no-index .` into a venv made with
#       --system-site-packages: the package imports from the venv (version metadata ==
#       pathlift.__version__, a small computation checked against numpy), the CLI is in the
#       venv's bin/, the checkout gains no untracked file, and `pip uninstall` removes both.
# Usage: scripts/check-install.sh [BUILD_DIR]   (default: build)
# Both parts run from a temporary folder outside the checkout, so the source tree's python/
# is never what gets imported. (b) builds in build-pip/ with ccache when installed (setup.py).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(realpath "${1:-build}")
python=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pathlift-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "check-install: $*" >&2
  exit 1
}
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# check_package DIR MODE COMMAND...: run by COMMAND (a Python), from outside the checkout, the
# package must come from DIR, its version metadata equal pathlift.__version__ (MODE metadata),
# and Phi(theta) equal the products of theta along the enumerated paths. Prints the version.
check_package() {
  (cd "$tmp" && "${@:3}" - "$1" "$2" <<'EOF'
import sys
import numpy as np
import pathlift
where, metadata = sys.argv[1], sys.argv[2] == "metadata"
assert pathlift.__file__.startswith(where + "/"), f"pathlift imported from {pathlift.__file__}"
if metadata:
    import importlib.metadata
    assert importlib.metadata.version("pathlift") == pathlift.__version__, \
        (importlib.metadata.version("pathlift"), pathlift.__version__)
net = pathlift.feed_forward(3, [4, 2], 2)
theta = pathlift.normal_weights(net.d, 1)
paths = pathlift.enumerate_paths(net)
expected = [np.prod(theta[paths.path(p)]) for p in range(len(paths))]
assert np.allclose(pathlift.path_lifting(net, theta), expected)
assert pathlift.jacobian(net, theta).shape == (len(paths), net.d)
print(f"pathlift {pathlift.__version__} from {pathlift.__file__}: P = {len(paths)}, ok",
      file=sys.stderr)
print(pathlift.__version__)
EOF
  )
}

echo "== (a) cmake --install $build --prefix <tmp>/prefix"
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
  fail "cmake --install failed: $(cat "$tmp/install.log")"
installed=$(sed -n 's/^-- \(Installing\|Up-to-date\): //p' "$tmp/install.log")
[ -n "$installed" ] || fail "cmake --install reported no file"
outside=$(grep -v "^$prefix/" <<<"$installed" || true)
[ -z "$outside" ] || fail "cmake --install wrote outside the prefix $prefix:
$outside
(PATHLIFT_PYTHON_INSTALL_DIR in $build/CMakeCache.txt is absolute? A tree configured before it
became relative keeps the old value: cmake -U PATHLIFT_PYTHON_INSTALL_DIR $build)"
site=$prefix/lib/python$pyver/site-packages
for f in include/pathlift/pathlift.hpp include/pathlift/version.hpp bin/pathlift \
  "lib/python$pyver/site-packages/pathlift/__init__.py" \
  "lib/python$pyver/site-packages/pathlift/_pathlift.pyi"; do
  [ -f "$prefix/$f" ] || fail "cmake --install did not install $f"
done
ls "$site"/pathlift/_pathlift.*.so >/dev/null 2>&1 || fail "no _pathlift module in $site/pathlift"
find "$prefix" -name libpathlift.a -o -name 'libpathlift.so*' | grep -q . ||
  fail "no libpathlift in $prefix"
find "$prefix" -name pathliftConfig.cmake | grep -q . || fail "no pathliftConfig.cmake in $prefix"
echo "$(wc -l <<<"$installed") files, all under the prefix"
version=$(check_package "$site/pathlift" no-metadata env PYTHONPATH="$site" "$python")
cli_version=$("$prefix/bin/pathlift" --version)
echo "$prefix/bin/pathlift --version: $cli_version"
[[ $cli_version == *"$version"* ]] || fail "pathlift --version does not name $version"

echo "== (b) pip install --no-build-isolation --no-index . into a venv (--system-site-packages)"
# The checkout's untracked files (git refuses a checkout owned by another user: no check then).
untracked() { { git -C "$src" ls-files --others --exclude-standard 2>/dev/null || true; } | sort; }
git -C "$src" rev-parse 2>/dev/null || echo "(git cannot read $src: no check of untracked files)"
untracked >"$tmp/untracked.before"
"$python" -m venv --system-site-packages "$tmp/venv"
venv=$tmp/venv
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install --no-build-isolation --no-index \
  --no-cache-dir . >"$tmp/pip.log" 2>&1 || fail "pip install failed: $(tail -n 60 "$tmp/pip.log")"
untracked >"$tmp/untracked.after"
new=$(comm -13 "$tmp/untracked.before" "$tmp/untracked.after")
[ -z "$new" ] || fail "pip install left untracked files in the checkout: $new"
venv_site=$venv/lib/python$pyver/site-packages
[ "$(check_package "$venv_site/pathlift" metadata "$venv/bin/python")" = "$version" ] ||
  fail "the venv's pathlift is not version $version"
[ "$("$venv/bin/pathlift" --version)" = "$cli_version" ] ||
  fail "the venv's pathlift --version differs from the cmake-installed one ($cli_version)"
"$venv/bin/pip" uninstall -y -q pathlift
[ ! -e "$venv/bin/pathlift" ] && [ ! -e "$venv_site/pathlift" ] ||
  fail "pip uninstall left $(ls -d "$venv/bin/pathlift" "$venv_site/pathlift" 2>/dev/null)"
echo "pip install, import, CLI and pip uninstall: ok"
