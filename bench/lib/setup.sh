# Sourced by the benchmarks that share this set-up (bench/flagd.sh, bench/unleash.sh): the
# command line, the output directory, which cores the servers and the load take, free ports.

# bench_options "NAME…" ARG…: each `--name VALUE` among the arguments sets the variable NAME in
# capitals (its default set before); any other argument stops the script.
bench_options() {
  local names=" $1 " name
  shift
  while [ $# -gt 0 ]; do
    name="${1#--}"
    if [ "$name" = "$1" ] || [[ "$names" != *" $name "* ]]; then
      echo "unknown option $1" >&2; exit 2
    fi
    [ $# -ge 2 ] || { echo "$1 needs a value" >&2; exit 2; }
    printf -v "${name^^}" '%s' "$2"
    shift 2
  done
}

# bench_setup NAME: OUT, the benchmark's output directory (bench/out/NAME, made), and the cores:
# SERVER_CPU the last, for the server measured; LOAD_CPU the others, for the load generator.
bench_setup() {
  OUT="bench/out/$1"
  mkdir -p "$OUT"
  local last=$(( $(nproc) - 1 ))
  SERVER_CPU="$last"
  LOAD_CPU="0-$(( last > 0 ? last - 1 : 0 ))"
}

# A port free on loopback now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
