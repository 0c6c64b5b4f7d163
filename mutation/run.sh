#!/usr/bin/env bash
# make mutation: mutmut over the privacy-critical code (docs/mutation.md). Not part of CI.
#   mutation/run.sh            fresh run (drops mutmut's cache in mutation/work/mutants)
#   mutation/run.sh --keep     resume / re-test only functions whose source changed
# MUTATION_TIMEOUT (seconds, default 10800) bounds the census run (mutmut tests the mutants
# with the fastest tests first). The mutants it did not reach are then estimated from a seeded
# uniform random sample of MUTATION_SAMPLE of them (default 300; 0: none), tested by name
# within MUTATION_SAMPLE_TIMEOUT (default 3600) s; mutation/report.py weighs the sample.
# One worker, nice 10.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
export DPGL_DATA_DIR="${DPGL_DATA_DIR:-$ROOT/../shared/datasets}"
export PYTHONHASHSEED=0
"$VENV/bin/python" "$ROOT/mutation/prepare.py" "$@"
if [ "${1:-}" != "--keep" ]; then rm -f "$ROOT/mutation/reports/sample.json"; fi
cd "$ROOT/mutation/work"
LOG="$ROOT/mutation/reports/mutmut-run.log"
start=$(date +%s)
status=0
timeout --signal=INT --kill-after=120 "${MUTATION_TIMEOUT:-10800}" \
    nice -n 10 "$VENV/bin/mutmut" run --max-children 1 > "$LOG" 2>&1 || status=$?
echo "mutmut census run exit status $status after $(( $(date +%s) - start )) s" | tee -a "$LOG"
if [ "${MUTATION_SAMPLE:-300}" -gt 0 ]; then
    mapfile -t sample < <("$VENV/bin/python" "$ROOT/mutation/sample.py" "${MUTATION_SAMPLE:-300}")
    if [ "${#sample[@]}" -gt 0 ]; then
        start=$(date +%s)
        status=0
        timeout --signal=INT --kill-after=120 "${MUTATION_SAMPLE_TIMEOUT:-3600}" \
            nice -n 10 "$VENV/bin/mutmut" run --max-children 1 "${sample[@]}" \
            > "$ROOT/mutation/reports/mutmut-run-sample.log" 2>&1 || status=$?
        echo "mutmut sample run (${#sample[@]} mutants) exit status $status after" \
             "$(( $(date +%s) - start )) s" | tee -a "$LOG"
    fi
fi
"$VENV/bin/mutmut" export-cicd-stats
cp mutants/mutmut-cicd-stats.json "$ROOT/mutation/reports/"
"$VENV/bin/python" "$ROOT/mutation/report.py"
