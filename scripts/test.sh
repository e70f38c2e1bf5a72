#!/usr/bin/env bash
# The whole test suite: formatting and lints, Rust unit/integration tests, then the Python suites
# (differential tests against the reference engine and the Flagsmith SDK) in a venv this script
# creates and owns (.venv). Safe to run repeatedly; the venv is reused when requirements match.
#
# CI=true (as .ci/run sets it) makes every test that cannot run a failure: the tools only some
# suites need are then required too, and pytest turns any skip into a failure (tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."

# Prerequisites first, so a missing tool stops the run at once with one line saying what to
# install, not minutes later in the middle of a build.
PYTHON="${PYTHON:-python3}"
# in_ci: CI is set to true/1/yes (the test as tests/conftest.py makes it).
in_ci() { local v="${CI:-}"; case "${v,,}" in 1|true|yes) return 0 ;; esac; return 1; }
# at_least FOUND WANTED: true when dotted version FOUND >= WANTED.
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
check_prerequisites() {
  local missing=() want found
  want=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
  found=$(rustc --version 2>/dev/null | awk '{print $2}') || true
  if [ -z "$found" ] || ! command -v cargo >/dev/null 2>&1; then
    missing+=("Rust >= $want (install: https://rustup.rs)")
  elif ! at_least "${found%%-*}" "$want"; then
    missing+=("Rust >= $want, found $found (rustup update stable)")
  elif ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    missing+=("rustfmt and clippy (rustup component add rustfmt clippy)")
  fi
  found=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || true
  if [ -z "$found" ] || ! at_least "$found" 3.9; then
    missing+=("Python >= 3.9${found:+, found $found} (Debian: apt-get install python3 python3-venv; or set PYTHON=/path/to/python3)")
  elif ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing+=("Python's venv module (Debian: apt-get install python3-venv)")
  fi
  found=$(node --version 2>/dev/null | tr -d v) || true
  if [ -z "$found" ] || ! at_least "$found" 20 || ! command -v npm >/dev/null 2>&1; then
    missing+=("Node.js >= 20 with npm${found:+, found $found} (https://nodejs.org/en/download)")
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    local IFS=";"
    echo "missing prerequisites:${missing[*]/#/ }" >&2
    exit 1
  fi
}
check_prerequisites

# The browser tests (tests/ofrep/test_ofrep_browser.py, the status page's) drive the system
# Chromium through playwright-core (installed by `npm ci` with the other Node test dependencies; it
# never downloads a browser). Install the Debian package when it is missing and we can.
have_chromium() {
  [ -n "${FLAGPOLE_CHROMIUM:-}" ] && return 0
  for name in chromium chromium-browser google-chrome-stable google-chrome; do
    command -v "$name" >/dev/null 2>&1 && return 0
  done
  return 1
}
# can_apt: we are root with apt-get, so a missing Debian package can be installed.
can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
# apt_install PACKAGE: installs it quietly; when that fails, says so with apt-get's last lines
# and returns false.
apt_install() {
  local log ok=0
  log=$(mktemp)
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$log" 2>&1 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >>"$log" 2>&1 || ok=1
  if [ "$ok" != 0 ]; then
    echo "could not install $1:" >&2
    tail -n 5 "$log" >&2
  fi
  rm -f "$log"
  return "$ok"
}
# system_tool PACKAGE NAME HAVE SHOW SUITE: a Debian package some suite runs (NAME in messages).
# HAVE (a command) says whether it is here and SHOW prints what is; when missing it is installed
# if we can, else named: under CI=true its absence stops the run (SUITE would fail on it anyway),
# otherwise SUITE is skipped.
system_tool() {
  local package=$1 name=$2 have=$3 show=$4 suite=$5
  if "$have"; then
    echo "found: $("$show")"
  elif can_apt; then
    if apt_install "$package"; then
      echo "installed: $("$show")"
    elif in_ci; then
      exit 1
    fi
  elif in_ci; then
    echo "missing prerequisite: $name (Debian: apt-get install $package)" >&2
    exit 1
  else
    echo "no $name (Debian: apt-get install $package); $suite will be skipped"
  fi
}

if ! have_chromium && can_apt; then
  echo "== chromium (apt-get install chromium, for the browser tests)"
  if apt_install chromium; then
    echo "installed: $(chromium --version 2>/dev/null || echo '?')"
  fi
fi

# Tools for some suites: without one, its tests skip when run by hand (pytest's summary lists
# them) and the run is an error under CI=true, before anything is built.
optional_missing=()
command -v go >/dev/null 2>&1 || optional_missing+=("Go >= 1.24 (the Go flagd provider and docs snippet tests; https://go.dev/dl)")
{ command -v java && command -v javac && command -v mvn; } >/dev/null 2>&1 ||
  optional_missing+=("a JDK >= 17 and Maven (the Java flagd provider and docs snippet tests; apt-get install default-jdk-headless maven)")
command -v curl >/dev/null 2>&1 || optional_missing+=("curl (the TLS test and docs snippets; apt-get install curl)")
have_chromium || optional_missing+=("Chromium (the browser tests; apt-get install chromium, or set FLAGPOLE_CHROMIUM)")
if [ ${#optional_missing[@]} -gt 0 ]; then
  if in_ci; then
    printf 'missing for CI (CI=true: every test must run):\n' >&2
    printf '  %s\n' "${optional_missing[@]}" >&2
    exit 1
  fi
  printf 'WARNING: the tests needing these will be SKIPPED:\n' >&2
  printf '  %s\n' "${optional_missing[@]}" >&2
fi

# The fleet tests (tests/serve/test_fleet.py) run Debian's redis-server (and redis-cli) on loopback
# ports. Installed with apt-get when missing and we are root; otherwise named, and under CI=true
# its absence stops the run (the suite would fail on it anyway).
have_redis() { command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; }
redis_version() { redis-server --version | awk '{print $3}'; }
echo "== redis-server (fleet tests)"
system_tool redis-server redis-server have_redis redis_version "the fleet tests"

# The Unleash edge-mode tests (tests/unleash/test_edge_upstream.py) run a real Unleash server on a
# throwaway PostgreSQL cluster: Debian's postgresql (its server binaries live in
# /usr/lib/postgresql/*/bin, off PATH; the tests look there). Installed like redis-server.
have_postgres() {
  [ -n "${FLAGPOLE_PG_BINDIR:-}" ] && [ -x "$FLAGPOLE_PG_BINDIR/initdb" ] && return 0
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && return 0
  command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1
}
postgres_bin() { compgen -G '/usr/lib/postgresql/*/bin/initdb' | head -n1 || command -v initdb; }
echo "== postgresql (Unleash server tests)"
# The package's own cluster is never used: the tests make theirs.
system_tool postgresql PostgreSQL have_postgres postgres_bin "the Unleash server tests"

# The Helm chart tests (tests/serve/test_helm.py) run `helm lint` and `helm template`. Helm is a
# Go program: installed into .tools/bin (untracked) at the version the chart is tested with.
# go_built TOOL VERSION: .tools/bin/TOOL is there, built from its module at VERSION (`go version
# -m` reads the module version a binary was built from).
go_built() {
  [ -x ".tools/bin/$1" ] &&
    [ "$(go version -m ".tools/bin/$1" 2>/dev/null | awk '$1 == "mod" {print $3}')" = "$2" ]
}
HELM_VERSION=v3.22.0
echo "== helm $HELM_VERSION (chart tests)"
if go_built helm "$HELM_VERSION"; then
  echo "found: .tools/bin/helm"
elif command -v go >/dev/null 2>&1; then
  if GOBIN="$PWD/.tools/bin" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"; then
    echo "installed: .tools/bin/helm"
  else
    echo "could not install helm $HELM_VERSION" >&2
    in_ci && exit 1
  fi
else
  echo "no Go to install helm with; the Helm chart tests will be skipped"
fi

# The tracing tests (tests/serve/test_tracing.py) export to a real Jaeger, built here from the Go
# module proxy into .tools/bin. tests/serve/jaeger/go.mod pins it as a tool: Jaeger's own go.mod
# has replace directives, which a plain `go install …@v1.76.0` refuses.
echo "== jaeger v1.76.0 (tracing tests)"
if [ -x .tools/bin/jaeger ] && grep -q 'github.com/jaegertracing/jaeger v1.76.0' <(go version -m .tools/bin/jaeger 2>/dev/null); then
  echo "found: .tools/bin/jaeger"
elif command -v go >/dev/null 2>&1; then
  if (cd tests/serve/jaeger && GOBIN="$(cd ../../.. && pwd)/.tools/bin" go install tool); then
    echo "built: .tools/bin/jaeger"
  else
    echo "could not build Jaeger; the tracing tests will fail or be skipped" >&2
    in_ci && exit 1
  fi
elif in_ci; then
  echo "missing prerequisite: Go (to build Jaeger for the tracing tests)" >&2
  exit 1
fi

# The flag-file suites (tests/flagd/test_flag_file_*.py) compare Flagpole with flagd itself on the
# same flag file: flagd built from the Go module proxy into .tools/bin. tests/flagd/ref/go.mod pins
# it as a tool and says which version and why.
FLAGD_VERSION=v0.16.0
echo "== flagd $FLAGD_VERSION (flag-file suites)"
if go_built flagd "$FLAGD_VERSION"; then
  echo "found: .tools/bin/flagd"
elif command -v go >/dev/null 2>&1; then
  # flagd's own modules are not all in the public checksum database: go.sum pins them instead.
  if (cd tests/flagd/ref && GONOSUMDB=github.com/open-feature,buf.build/gen/go \
        GOBIN="$(cd ../../.. && pwd)/.tools/bin" go install tool); then
    echo "built: .tools/bin/flagd"
  else
    echo "could not build flagd; the flag-file suites will fail or be skipped" >&2
    in_ci && exit 1
  fi
elif in_ci; then
  echo "missing prerequisite: Go (to build flagd for the flag-file suites)" >&2
  exit 1
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== import cycles between source files (scripts/check_cycles.py)"
python3 scripts/check_cycles.py

echo "== every module file named in ARCHITECTURE.md (scripts/check_architecture.py)"
python3 scripts/check_architecture.py

echo "== no OpenFeature front door names an engine (scripts/check_doors.py)"
python3 scripts/check_doors.py

echo "== every task spawned through Tasks (scripts/check_spawns.py)"
python3 scripts/check_spawns.py

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo build --release"
cargo build --release --locked -p flagpole

# Unleash's client specification (crates/unleash/tests/client_specification.rs) comes from npm:
# installed here, before the Rust tests (the pytest suites install their own Node packages), and
# reinstalled only when its lock file changes.
echo "== Unleash client specification (npm ci in tests/unleash/node)"
spec_node=tests/unleash/node
stamp="$spec_node/node_modules/.lock.sha"
want=$(sha256sum "$spec_node/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  (cd "$spec_node" && npm ci --silent --no-audit --no-fund --ignore-scripts)
  echo "$want" > "$stamp"
fi
export FLAGPOLE_UNLEASH_SPEC="$PWD/$spec_node/node_modules/@unleash/client-specification/specifications"

# The real Unleash server (tests/unleash/server: unleash-server and the Node 22 it needs, both
# from npm) for the edge-mode tests: runtime dependencies only and no install scripts (none is
# needed to run it), reinstalled only when its lock file changes. The stamp is the one the tests'
# own install step (tests/unleash/unleash_server.py) checks.
echo "== Unleash server (npm ci in tests/unleash/server)"
server_node=tests/unleash/server
stamp="$server_node/node_modules/.flagpole-lock.sha"
want=$(sha256sum "$server_node/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  (cd "$server_node" && npm ci --silent --no-audit --no-fund --omit=dev --ignore-scripts)
  echo "$want" > "$stamp"
fi

echo "== cargo test"
cargo test --workspace --locked

# The Python bindings are their own workspace (a PyO3 extension module; see bindings/python).
echo "== bindings/python: fmt, clippy, test"
cargo fmt --manifest-path bindings/python/Cargo.toml -- --check
cargo clippy --manifest-path bindings/python/Cargo.toml --all-targets --locked -- -D warnings
cargo test --manifest-path bindings/python/Cargo.toml --locked

echo "== python venv (.venv)"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha
want=$(sha256sum tests/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r tests/requirements.txt
  echo "$want" > "$stamp"
fi

# flagd's reference evaluator (tests/flagd_definitions) in a venv of its own: the flagd provider
# above needs openfeature-flagd-core 2.x, the differential test compares with 1.0.0.
echo "== python venv (.venv-flagd-reference)"
if [ ! -x .venv-flagd-reference/bin/python ]; then
  "$PYTHON" -m venv .venv-flagd-reference
fi
stamp=.venv-flagd-reference/.requirements.sha
want=$(sha256sum tests/flagd_definitions/requirements-reference.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv-flagd-reference/bin/python -m pip install --quiet -r tests/flagd_definitions/requirements-reference.txt
  echo "$want" > "$stamp"
fi
export FLAGPOLE_FLAGD_REFERENCE_PYTHON="$PWD/.venv-flagd-reference/bin/python"

echo "== python bindings wheel (bindings/python, installed into .venv)"
wheels=bindings/python/target/wheels
rm -f "$wheels"/*.whl
.venv/bin/maturin build --release --locked -m bindings/python/Cargo.toml --out "$wheels"
# The distribution was called `flagpole` before; a .venv from then holds it under that name.
.venv/bin/python -m pip uninstall --quiet --yes flagpole >/dev/null 2>&1 || true
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheels"/flagpole_python-*.whl

echo "== pytest"
export FLAGPOLE_BIN="$PWD/target/release/flagpole"
# -rs: every skip's reason in the summary (there should be none; under CI=true they fail).
.venv/bin/python -m pytest tests -q -rs "$@"
