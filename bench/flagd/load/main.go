// Load generator of bench/flagd.sh: drives one server with CONC concurrent callers for a fixed
// time and prints one JSON line: calls, errors, RPS, and the server's CPU time per call (from
// /proc/PID/stat, user + system, over the measured window only).
//
//	flagd-load -mode grpc-bool|grpc-all|ofrep-single|ofrep-bulk -addr HOST:PORT -key KEY
//	           -pid PID [-conc 16] [-conns 0] [-duration 10s] [-warmup 2s] [-flag NAME]
//	flagd-load -mode capture -addr HOST:PORT -key KEY -out FILE [-metadata]
//	flagd-load -mode decode -in FILE
//
// gRPC calls go over one HTTP/2 connection per caller (as separate provider instances would), or
// with -conns N over N connections the callers share (as ghz does: one by default);
// OFREP calls use keep-alive HTTP/1.1. Every call sends a context with a targetingKey (one of
// 1,000) and a `plan` trait, so a targeting rule is evaluated each time.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"buf.build/gen/go/open-feature/flagd/grpc/go/flagd/evaluation/v1/evaluationv1grpc"
	evaluationv1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/evaluation/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"
)

func cpuTicks(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	text := string(raw)
	fields := strings.Fields(text[strings.LastIndexByte(text, ')')+2:])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return utime + stime
}

func contextFor(i int) map[string]any {
	plan := "free"
	if i%4 == 0 {
		plan = "pro"
	}
	return map[string]any{"targetingKey": fmt.Sprintf("user-%d", i%1000), "plan": plan}
}

type caller func(i int) error

func grpcCaller(addr, key, mode, flagKey string) (caller, func()) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	client := evaluationv1grpc.NewServiceClient(conn)
	ctx := context.Background()
	if key != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "flagd-selector", key)
	}
	return func(i int) error {
		s, _ := structpb.NewStruct(contextFor(i))
		if mode == "grpc-all" {
			_, err := client.ResolveAll(ctx, &evaluationv1.ResolveAllRequest{Context: s})
			return err
		}
		_, err := client.ResolveBoolean(ctx, &evaluationv1.ResolveBooleanRequest{FlagKey: flagKey, Context: s})
		return err
	}, func() { conn.Close() }
}

func ofrepCaller(addr, key, mode, flagKey string) (caller, func()) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	url := "http://" + addr + "/ofrep/v1/evaluate/flags"
	if mode == "ofrep-single" {
		url += "/" + flagKey
	}
	return func(i int) error {
		body, _ := json.Marshal(map[string]any{"context": contextFor(i)})
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", key)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}, client.CloseIdleConnections
}

func main() {
	mode := flag.String("mode", "grpc-bool", "grpc-bool, grpc-all, ofrep-single, ofrep-bulk, capture or decode")
	addr := flag.String("addr", "127.0.0.1:8013", "server address")
	key := flag.String("key", "", "environment key (flagd-selector / X-API-Key)")
	flagKey := flag.String("flag", "flag_000", "the flag read by single-flag modes")
	pid := flag.Int("pid", 0, "the server's pid (CPU time)")
	conc := flag.Int("conc", 16, "concurrent callers")
	conns := flag.Int("conns", 0, "gRPC: connections the callers share (0: one per caller)")
	duration := flag.Duration("duration", 10*time.Second, "measured time")
	warmup := flag.Duration("warmup", 2*time.Second, "unmeasured time first")
	outPath := flag.String("out", "", "capture: where the answer's bytes go")
	in := flag.String("in", "", "decode: the saved answer")
	withMetadata := flag.Bool("metadata", false, "capture: ask for per-flag metadata (flagpole-metadata: true)")
	flag.Parse()
	switch *mode {
	case "capture":
		var extra []string
		if *withMetadata {
			extra = []string{"flagpole-metadata", "true"}
		}
		capture(*addr, *key, *outPath, extra)
		return
	case "decode":
		decodeBench(*in)
		return
	}

	var calls, errors atomic.Int64
	var measuring atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var firstErr atomic.Value
	// Shared connections: caller w uses connection w % conns; closed once all callers are done.
	var shared []caller
	for c := 0; strings.HasPrefix(*mode, "grpc") && c < *conns; c++ {
		call, done := grpcCaller(*addr, *key, *mode, *flagKey)
		shared = append(shared, call)
		defer done()
	}
	for w := 0; w < *conc; w++ {
		var call caller
		done := func() {}
		switch {
		case len(shared) > 0:
			call = shared[w%len(shared)]
		case strings.HasPrefix(*mode, "grpc"):
			call, done = grpcCaller(*addr, *key, *mode, *flagKey)
		default:
			call, done = ofrepCaller(*addr, *key, *mode, *flagKey)
		}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer done()
			for i := w; ; i += *conc {
				select {
				case <-stop:
					return
				default:
				}
				err := call(i)
				if measuring.Load() {
					calls.Add(1)
					if err != nil {
						errors.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
				}
			}
		}(w)
	}
	time.Sleep(*warmup)
	startTicks := cpuTicks(*pid)
	start := time.Now()
	measuring.Store(true)
	time.Sleep(*duration)
	measuring.Store(false)
	elapsed := time.Since(start)
	ticks := cpuTicks(*pid) - startTicks
	close(stop)
	wg.Wait()
	n := calls.Load()
	out := map[string]any{
		"mode": *mode, "calls": n, "errors": errors.Load(),
		"rps": float64(n) / elapsed.Seconds(),
		// CLK_TCK is 100 on Linux: one tick is 10,000 µs.
		"cpu_us_per_call": float64(ticks) * 10000 / float64(max(n, 1)),
	}
	if e := firstErr.Load(); e != nil {
		out["first_error"] = e
	}
	encoded, _ := json.Marshal(out)
	fmt.Println(string(encoded))
}
