#!/usr/bin/env bash
# Fuzzes pathlift's input readers and command line with libFuzzer (docs/fuzzing.md): configures
# build-fuzz with clang (PATHLIFT_FUZZ: ASan + UBSan + coverage on every target), builds the
# harnesses of fuzz/, runs each for SECONDS (default 600) on its corpus fuzz/corpus/<harness>/,
# merges the inputs that add coverage back into that corpus, and prints per harness the execs,
# exec/s, coverage (libFuzzer's cov: and ft:) and any finding. One fuzzer at a time.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]     (harnesses: fuzz_network fuzz_onnx fuzz_npy fuzz_text fuzz_cli fuzz_metric fuzz_rescale)
#
# Exits 1 when a harness found a crash, leak, timeout or out-of-memory (the reproducer is under
# build-fuzz/fuzz-runs/<harness>/; copy it into fuzz/corpus/<harness>/ to keep it as a
# regression test once fixed). Environment: PATHLIFT_FUZZ_MAX_LEN (default 4096 bytes),
# PATHLIFT_FUZZ_JOBS (build parallelism, default the cores).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
shift || true
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  harnesses=(fuzz_network fuzz_onnx fuzz_npy fuzz_text fuzz_cli fuzz_metric fuzz_rescale)
fi
build=build-fuzz
max_len=${PATHLIFT_FUZZ_MAX_LEN:-4096}
jobs=${PATHLIFT_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD"
fi
# -O1 and line tables: fast enough to fuzz, quick to build, stack traces with lines.
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" -DPATHLIFT_FUZZ=ON \
  -DPATHLIFT_BUILD_TESTS=OFF -DPATHLIFT_BUILD_PYTHON=OFF -DPATHLIFT_BUILD_BENCHMARKS=OFF \
  -DPATHLIFT_BUILD_EXAMPLES=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$jobs" --target "${harnesses[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
found=0
summary=()
for h in "${harnesses[@]}"; do
  corpus=fuzz/corpus/$h
  run=$build/fuzz-runs/$h
  rm -rf "$run"
  mkdir -p "$run/new" "$run/artifacts" "$corpus"
  dict=()
  if [ -f "fuzz/dict/$h.dict" ]; then
    dict=("-dict=fuzz/dict/$h.dict")
  fi
  echo "== $h: ${seconds} s on $corpus ($(find "$corpus" -type f | wc -l) inputs)"
  # New inputs go to $run/new (the first folder); the repository's corpus is only read here.
  status=0
  "$build/fuzz/$h" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$run/artifacts/" "${dict[@]}" \
    "$run/new" "$corpus" >"$run/log" 2>&1 || status=$?
  stats=$(grep -E '^#[0-9]+' "$run/log" | grep -E 'cov: ' | tail -n 1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$run/log" | tail -n 1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$stats")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$stats")
  # Keep the corpus small: only inputs that add coverage, at most max_len bytes.
  before=$(find "$corpus" -type f | wc -l)
  "$build/fuzz/$h" -merge=1 -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    "$corpus" "$run/new" >"$run/merge.log" 2>&1 || true
  after=$(find "$corpus" -type f | wc -l)
  line="$h: execs ${execs:-?}, exec/s ${rate:-?}, cov ${cov:-?}, ft ${ft:-?}, corpus $before -> $after"
  crashes=$(find "$run/artifacts" -type f ! -name 'slow-unit-*' | sort)
  if [ "$status" -ne 0 ] || [ -n "$crashes" ]; then
    found=1
    line="$line, FINDING (exit $status): ${crashes:-see $run/log}"
    echo "-- $h: finding; the log's report:"
    grep -E -m 1 -A 12 'ERROR: |fuzz finding:|runtime error:|deadly signal' "$run/log" || tail -n 20 "$run/log"
  fi
  echo "$line"
  summary+=("$line")
done

echo "== fuzzing summary (${seconds} s per harness, max_len $max_len)"
printf '%s\n' "${summary[@]}"
exit "$found"
