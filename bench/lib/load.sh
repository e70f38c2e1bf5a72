# Sourced by the wrk-driven benchmarks (bench/http.sh, bench/ofrep.sh, bench/fleet.sh,
# bench/soak.sh): the load generator and the limits it needs, set up one way.

# wrk 4.1.0 from Debian (installed if missing; the version the tables in bench/RESULTS.md were
# taken with is checked), and taskset for pinning.
ensure_wrk() {
  local want="4.1.0" found
  install_wrk
  found="$( (wrk -v 2>&1 || true) | head -1 | awk '{print $2}')"
  case "$found" in
    "$want"*|debian/"$want"*) ;;
    *) echo "warning: wrk $found found, the results in bench/RESULTS.md were taken with $want" >&2 ;;
  esac
  command -v taskset >/dev/null 2>&1 || { echo "taskset (util-linux) is needed" >&2; exit 1; }
}

# wrk from Debian when it is missing (bench/fleet.sh and bench/soak.sh take any version).
install_wrk() {
  local sudo=""
  if ! command -v wrk >/dev/null 2>&1; then
    echo "installing wrk (apt-get)…" >&2
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y -qq wrk >/dev/null
  fi
}

# The open-file limit raised as far as it goes, up to 65536 (inherited by the servers and the
# load generator).
lift_open_files() {
  ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}

# Raises the open-file limit (lift_open_files); warns with `$2` when it stays below `$1`.
raise_open_files() {
  local need="$1" warning="$2"
  lift_open_files
  if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
    echo "warning: ulimit -n is $(ulimit -n); $warning" >&2
  fi
}
