#!/usr/bin/env bash
# Peak resident memory of the commands that compute large results, measured under --max-memory
# (issues 19 and 32): each run must stay within 1.25 x the limit + 64 MB, or be refused (exit 2
# with a TooLarge message naming the memory limit). Prints a table; exits 1 on a violation.
#
#   scripts/check-memory.sh [--quick] [PATHLIFT]
#
# PATHLIFT defaults to $PATHLIFT_BUILD_DIR/cli/pathlift, else build/cli/pathlift. --quick runs
# only the 64M limit on the smaller networks and models (a few seconds, for the test suite).
#
# Inputs: built-in feed-forward networks, and models written in the work folder by
# /usr/bin/python3: ONNX Gemm models (PyTorch's Linear as torch.onnx.export writes it, made with
# the onnx package; full mode: Linear(690000, 72), a 199 MB file whose 49.7 M parameters are
# 397 MB as doubles, at 400M), pathlift-layers JSON convolutional nets, and (full mode) a conv
# net written by torch.onnx.export that would unroll to ~1e12 edges, which `lift` must refuse.
# A model that the Python modules at hand cannot write (no onnx, no torch) is skipped.
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
/usr/bin/python3 - "$work" "$quick" "$root" <<'EOF'
import json
import sys
import numpy as np
work, quick = sys.argv[1], sys.argv[2] == "1"
rng = np.random.default_rng(0)
np.save(f"{work}/X5.npy", rng.standard_normal((400, 5)))
np.save(f"{work}/X8.npy", rng.standard_normal((20, 8)))
np.save(f"{work}/X5b.npy", rng.standard_normal((40, 5)))


def layers_json(path, shape, channels):
    """Conv(3x3, padding 1) -> ReLU -> Conv -> ReLU -> AdaptiveAvgPool(1) -> Flatten ->
    Linear(10) as pathlift-layers JSON, without weights (theta: --seed 0)."""
    c = shape[0]
    layers = [{"name": "input", "kind": "input"}]
    offset = 0
    for i in (1, 2):
        layers.append({"name": f"conv{i}", "kind": "conv", "inputs": [len(layers) - 1],
                       "out_channels": channels, "kernel": [3, 3], "padding": [1, 1],
                       "weight_offset": offset, "bias_offset": offset + channels * c * 9})
        offset += channels * c * 9 + channels
        c = channels
        layers.append({"name": f"relu{i}", "kind": "activation", "inputs": [len(layers) - 1],
                       "activation": "relu"})
    layers.append({"name": "pool", "kind": "adaptive_avg_pool", "inputs": [len(layers) - 1],
                   "output_size": [1, 1]})
    layers.append({"name": "flatten", "kind": "flatten", "inputs": [len(layers) - 1]})
    layers.append({"name": "fc", "kind": "linear", "inputs": [len(layers) - 1],
                   "out_features": 10, "weight_offset": offset, "bias_offset": offset + 10 * c})
    with open(path, "w") as f:
        json.dump({"format": "pathlift-layers", "version": 1, "input_shape": shape,
                   "layers": layers, "outputs": [len(layers) - 1],
                   "num_params": offset + 11 * c}, f)


layers_json(f"{work}/conv_small.json", [3, 32, 32], 16)
if not quick:
    layers_json(f"{work}/conv_large.json", [3, 256, 256], 32)
    # conv 3 -> 128 -> 128 at 512x512 (issue 50: its estimate was 3-3.5 GiB where it peaks at
    # 0.3-0.8 GB, so 1G refused it); the output layer's 33.5 M entries are outputs.
    layers_json(f"{work}/conv_512.json", [3, 512, 512], 128)

sys.path.insert(0, f"{sys.argv[3]}/scripts")
try:
    import onnx  # noqa: F401
except ImportError:
    print("check-memory: no onnx module: the ONNX Gemm models are skipped", file=sys.stderr)
else:
    from gemm_onnx import gemm_onnx as gemm

    gemm(f"{work}/gemm_small.onnx", 20000, 72)
    if not quick:
        gemm(f"{work}/gemm.onnx", 690000, 72)

if not quick:
    try:
        import torch
    except ImportError:
        print("check-memory: no torch module: the ONNX conv net is skipped", file=sys.stderr)
    else:
        nn = torch.nn
        net = nn.Sequential(nn.Conv2d(3, 192, 3, padding=1), nn.ReLU(),
                            nn.Conv2d(192, 192, 3, padding=1), nn.ReLU(),
                            nn.Conv2d(192, 192, 3, padding=1), nn.ReLU(),
                            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(192, 10)).eval()
        torch.onnx.export(net, torch.zeros(1, 3, 1024, 1024), f"{work}/big.onnx",
                          input_names=["x"], output_names=["y"], opset_version=13)
        # An MLP of d = 9.47 M (issue 50: rescale peaked at 532-609 MB under --max-memory 300M).
        mlp = nn.Sequential(nn.Linear(2000, 3000), nn.ReLU(), nn.Linear(3000, 1150), nn.ReLU(),
                            nn.Linear(1150, 10)).eval()
        torch.onnx.export(mlp, torch.zeros(1, 2000), f"{work}/mlp.onnx", input_names=["x"],
                          output_names=["y"], opset_version=13)
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
  "rescale-pc|rescale --path-cond --ff 100,300,300,10 -o r.npy --max-sweeps 20"
  "rescale-enorm|rescale --enorm --ff 100,300,300,10 -o r.npy --max-sweeps 20"
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
# Models at a limit of their own: name|limit|expected (any: it runs or is refused; refused: it
# must be refused, exit 2 naming the memory limit; runs: it must not be refused)|arguments.
models_small=(
  "onnx-info|64M|any|info --onnx gemm_small.onnx"
  "onnx-norm|64M|any|norm --onnx gemm_small.onnx"
  "onnx-kdiag|64M|any|kernel --diag --onnx gemm_small.onnx -o D.npy"
  "onnx-lift|64M|any|lift --onnx gemm_small.onnx -o phi.npy"
  "layers-info|64M|any|info --network conv_small.json"
  "layers-norm|64M|any|norm --network conv_small.json"
  "layers-kdiag|64M|any|kernel --diag --network conv_small.json -o D.npy"
  "layers-lift|64M|any|lift --network conv_small.json -o phi.npy"
)
models_large=(
  "onnx-info|400M|any|info --onnx gemm.onnx"
  "onnx-norm|400M|any|norm --onnx gemm.onnx"
  "onnx-kdiag|400M|any|kernel --diag --onnx gemm.onnx -o D.npy"
  "onnx-kdiag|1G|any|kernel --diag --onnx gemm.onnx -o D.npy"
  "layers-info|256M|any|info --network conv_large.json"
  "layers-norm|256M|any|norm --network conv_large.json"
  "layers-kdiag|1G|any|kernel --diag --network conv_large.json -o D.npy"
  "layers-lift|1G|refused|lift --network conv_large.json -o phi.npy"
  "onnx-big-lift|1G|refused|lift --onnx big.onnx -o phi.npy"
  "conv512-norm|1G|runs|norm --network conv_512.json --s 1,2"
  "conv512-trace|1G|runs|kernel --trace --network conv_512.json"
  "conv512-diag|1G|runs|kernel --diag --network conv_512.json -o D.npy"
  "onnx-rescale-pc|300M|any|rescale --path-cond --onnx mlp.onnx -o r.npy --max-sweeps 20"
  "onnx-rescale-pc|1G|any|rescale --path-cond --onnx mlp.onnx -o r.npy --max-sweeps 20"
  "onnx-rescale-en|300M|any|rescale --enorm --onnx mlp.onnx -o r.npy --max-sweeps 20"
  "onnx-rescale-en|1G|any|rescale --enorm --onnx mlp.onnx -o r.npy --max-sweeps 20"
)
models=("${models_small[@]}" "${models_large[@]}")
if ((quick)); then
  limits=(64M)
  cases=("${small[@]}")
  models=("${models_small[@]}")
fi

mb() {  # "64M" / "1G" -> MiB
  case "$1" in
    *G) echo $((${1%G} * 1024)) ;;
    *M) echo "${1%M}" ;;
  esac
}

fail=0
# One run: its name, the limit, the outcome expected (any | refused), the command's arguments.
measure() {
  local name="$1" limit="$2" expect="$3"
  shift 3
  (cd "$work" && timeout 300 /usr/bin/time -v "$cli" "$@" --max-memory "$limit" \
    >"$work/stdout" 2>"$work/stderr")
  local rc=$?
  local peak_kb secs
  peak_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/stderr")
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/stderr")
  local peak=$(((${peak_kb:-0} + 1023) / 1024))
  local bound=$(($(mb "$limit") * 5 / 4 + 64))
  local refused=no
  local ok=yes
  if ((rc == 2)) && grep -q "memory limit" "$work/stderr"; then
    refused=yes
  elif ((rc == 124)); then
    ok="NO (still running after 300 s)"
  elif ((rc != 0 && rc != 1)); then
    ok="NO (exit $rc: $(grep -m1 '^error' "$work/stderr"))"
  fi
  if [[ "$expect" == refused && "$refused" != yes && "$ok" == yes ]]; then
    ok="NO (a refusal expected, exit $rc)"
  fi
  if [[ "$expect" == runs && "$refused" == yes ]]; then
    ok="NO (refused, where it fits: $(grep -m1 '^error' "$work/stderr" | cut -c1-120))"
  fi
  if ((peak > bound)); then
    ok="NO (peak above $bound MB)"
  fi
  [[ "$ok" == yes ]] || fail=1
  printf '%-15s %-6s %9s %8s %8s %s\n' "$name" "$limit" "$peak" "$refused" "$secs" "$ok"
  rm -f "$work"/.*.tmp "$work"/phi.npy "$work"/J.npz "$work"/L.npz "$work"/K.npy "$work"/D.npy \
    "$work"/r.npy
}

printf '%-15s %-6s %9s %8s %8s %s\n' command limit peak_MB refused seconds ok
for limit in "${limits[@]}"; do
  for entry in "${cases[@]}"; do
    read -r -a args <<<"${entry#*|}"
    measure "${entry%%|*}" "$limit" any "${args[@]}"
  done
done
for entry in "${models[@]}"; do
  IFS='|' read -r name limit expect command <<<"$entry"
  read -r -a args <<<"$command"
  model=""  # the file after --onnx or --network
  for ((i = 1; i < ${#args[@]}; i++)); do
    [[ "${args[i - 1]}" == --onnx || "${args[i - 1]}" == --network ]] && model="${args[i]}"
  done
  if [[ ! -e "$work/$model" ]]; then
    printf '%-15s %-6s %9s %8s %8s %s\n' "$name" "$limit" - - - "skipped (no $model)"
    continue
  fi
  measure "$name" "$limit" "$expect" "${args[@]}"
done
exit $fail
