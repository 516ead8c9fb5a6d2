# progress.sh — sourced (POSIX sh) by the suites `make test` runs with their output in a log:
# bindings/python/run_tests.sh, bindings/java/run_tests.sh, tests/userpaths/run.sh and
# bindings/python/ensure_venv.sh. `progress KIND TEXT` appends "KIND UNIX-SECONDS TEXT" to
# $TESTSUM_PROGRESS, which tests/make_test.sh follows with `testsum progress` (the protocol is in
# tests/testsum/progress.go); a `say` line also goes to stderr, so the suite's log and a person
# running the script by hand read it too. Without TESTSUM_PROGRESS only stderr gets the lines.
# (Not a KYLIX_ name: the library warns about KYLIX_ variables it does not know.)

progress() { # progress say|step|start|total|done TEXT...
  _kind=$1
  shift
  [ "$_kind" = say ] && echo "$*" >&2
  [ -n "${TESTSUM_PROGRESS:-}" ] && printf '%s %s %s\n' "$_kind" "$(date +%s)" "$*" >>"$TESTSUM_PROGRESS"
  return 0
}

size_kb() { # size_kb DIR: its size in KiB, 0 when it is missing
  _s=$(du -sk "$1" 2>/dev/null | cut -f1)
  echo "${_s:-0}"
}

# fetching STEP WHAT CACHE COMMAND...: says WHAT (the download, with its expected size) before
# COMMAND runs, then how long it took and how much CACHE (pip's or Maven's download cache) grew:
# what came over the network. STEP is the short name of what runs meanwhile. Returns COMMAND's
# status.
fetching() {
  _step=$1 _what=$2 _cache=$3
  shift 3
  _before=$(size_kb "$_cache")
  _t0=$(date +%s)
  progress say "$_what"
  progress step "$_step"
  if "$@"; then _rc=0; else _rc=$?; fi
  _took=$(( $(date +%s) - _t0 ))
  _grew=$(( ($(size_kb "$_cache") - _before + 512) / 1024 ))
  if [ "$_rc" != 0 ]; then
    progress say "$_step: failed after $_took s (exit status $_rc), $_grew MB downloaded (into $_cache)"
  elif [ "$_grew" -gt 0 ]; then
    progress say "$_step: done in $_took s, $_grew MB downloaded (into $_cache)"
  else
    progress say "$_step: done in $_took s, nothing downloaded ($_cache had it all)"
  fi
  return "$_rc"
}

pip_cache() { # pip_cache PYTHON: where that pip keeps its downloads
  "$1" -m pip cache dir 2>/dev/null || echo "${PIP_CACHE_DIR:-$HOME/.cache/pip}"
}
