-- Prints one JSON line, prefixed with FLAGPOLE_WRK, with the figures the harness reads:
-- requests, duration (µs), latency percentiles (µs) and errors. Loaded by every wrk run.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'FLAGPOLE_WRK {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout))
end
