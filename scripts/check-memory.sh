#!/usr/bin/env bash
# Peak resident memory of the commands that compute large results, measured under --max-memory
# (issue 19): each run must stay within 1.25 x the limit + 64 MB, or be refused (exit 2 with a
# TooLarge message naming the memory limit). Prints a table; exits 1 on a violation.
#
#   scripts/check-memory.sh [--quick] [PATHLIFT]
#
# PATHLIFT defaults to $PATHLIFT_BUILD_DIR/cli/pathlift, else build/cli/pathlift. --quick runs
# only the 64M limit on the smaller networks (a few seconds, for the test suite).
set -u

quick=0
if [[ "${1:-}" == "--quick" ]]; then
  quick=1
  shift
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="${1:-${PATHLIFT_BUILD_DIR:-$root/build}/cli/pathlift}"
cli="$(realpath "$cli" 2>/dev/null || echo "$cli")"
if [[ ! -x "$cli" ]]; then
  echo "check-memory: no pathlift executable at $cli" >&2
  exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "check-memory: /usr/bin/time (GNU time) is needed" >&2
  exit 2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work" <<'EOF'
import sys
import numpy as np
rng = np.random.default_rng(0)
np.save(f"{sys.argv[1]}/X5.npy", rng.standard_normal((400, 5)))
np.save(f"{sys.argv[1]}/X8.npy", rng.standard_normal((20, 8)))
np.save(f"{sys.argv[1]}/X5b.npy", rng.standard_normal((40, 5)))
EOF

# One case a line: a name, then the command's arguments (-o paths are relative to $work).
small=(
  "lift|lift --ff 5,64,64,64,2 -o phi.npy"
  "jacobian|jacobian --ff 5,64,64,64,2 -o J.npz"
  "jacobian-paper|jacobian --paper-formula --ff 5,64,64,64,2 -o J.npz"
  "check|check --ff 5,64,64,64,2"
  "rank|rank --ff 5,24,24,24,2 --no-numerical"
  "linearize|linearize --ff 5,64,64,2 --data X5.npy -o L.npz"
  "kernel-full|kernel --full --ff 5,64,64,64,2 -o K.npy"
)
large=(
  "lift|lift --ff 8,96,96,96,4 -o phi.npy"
  "jacobian|jacobian --ff 8,96,96,96,4 -o J.npz"
  "jacobian-paper|jacobian --paper-formula --ff 8,96,96,96,4 -o J.npz"
  "check|check --ff 8,96,96,96,4"
  "linearize|linearize --ff 8,96,96,96,4 --data X8.npy -o L.npz"
  "linearize|linearize --ff 5,64,64,64,2 --data X5b.npy -o L.npz"
  "kernel-diag|kernel --diag --ff 8,96,96,96,4 -o D.npy"
)
limits=(64M 256M 1G)
cases=("${small[@]}" "${large[@]}")
if ((quick)); then
  limits=(64M)
  cases=("${small[@]}")
fi

mb() {  # "64M" / "1G" -> MiB
  case "$1" in
    *G) echo $((${1%G} * 1024)) ;;
    *M) echo "${1%M}" ;;
  esac
}

fail=0
printf '%-15s %-6s %9s %8s %8s %s\n' command limit peak_MB refused seconds ok
for limit in "${limits[@]}"; do
  for entry in "${cases[@]}"; do
    name="${entry%%|*}"
    read -r -a args <<<"${entry#*|}"
    (cd "$work" && /usr/bin/time -v "$cli" "${args[@]}" --max-memory "$limit" \
      >"$work/stdout" 2>"$work/stderr")
    rc=$?
    peak_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/stderr")
    secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/stderr")
    peak=$(((${peak_kb:-0} + 1023) / 1024))
    bound=$(($(mb "$limit") * 5 / 4 + 64))
    refused=no
    ok=yes
    if ((rc == 2)) && grep -q "memory limit" "$work/stderr"; then
      refused=yes
    elif ((rc != 0 && rc != 1)); then
      ok="NO (exit $rc: $(grep -m1 '^error' "$work/stderr"))"
    fi
    if ((peak > bound)); then
      ok="NO (peak above $bound MB)"
    fi
    [[ "$ok" == yes ]] || fail=1
    printf '%-15s %-6s %9s %8s %8s %s\n' "$name" "$limit" "$peak" "$refused" "$secs" "$ok"
    rm -f "$work"/.*.tmp "$work"/phi.npy "$work"/J.npz "$work"/L.npz "$work"/K.npy "$work"/D.npy
  done
done
exit $fail
