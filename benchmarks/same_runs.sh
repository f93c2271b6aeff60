#!/usr/bin/env bash
# The same evaluation runs from two versions of the code, to show a refactoring left the rankings alone (issue 26:
# 31 of 31 TREC run files byte-identical between c3f6dd1 and the refactored main). Usage, from the repository root:
#   git worktree add ../before OLD_COMMIT
#   benchmarks/same_runs.sh ../before/src reports/before && benchmarks/same_runs.sh src reports/after
#   diff -r reports/before reports/after --include='*.trec' -q   # (or cmp each runs/*.trec)
# Reads the data in place from TRACERAG_DATASETS; the eval caches its collections (TRACERAG_CACHE_DIR) as usual.
set -euo pipefail
SRC=$(cd "$1" && pwd); OUT=$(mkdir -p "$2" && cd "$2" && pwd)
export PYTHONPATH="$SRC"
run() { python -m tracerag.cli eval "$@"; }
run --benchmark hipe-entities-dated --runs bm25,hybrid,bm25+date,entity,hybrid+entity --no-dense --sample 200 \
  --seed 0 --out "$OUT/dated"
run --benchmark xling-piaf --runs bm25,dense,hybrid --sample 150 --seed 0 --out "$OUT/xpiaf"
run --benchmark miami211-services --runs bm25,hybrid --no-dense --sample 150 --seed 0 --out "$OUT/miami"
run --benchmark ocr-known-item --runs bm25,hybrid,bm25+expansion --no-dense --sample 150 --seed 0 --out "$OUT/ocr"
