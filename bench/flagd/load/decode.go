// What a caller pays for a ResolveAll answer: `-mode capture` saves one answer's bytes as the
// server sent them (raw codec, no re-encoding); `-mode decode` times decoding saved bytes into
// the generated Go messages (google.golang.org/protobuf, as the Go flagd provider's connect
// client does) and prints one JSON line: µs and allocations per decode.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"time"

	evaluationv1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/evaluation/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// rawCodec hands the bytes through as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// capture saves one ResolveAll answer (the load's context for caller 1) to path; extra
// metadata pairs (name=value) go with the call.
func capture(addr, key, path string, extra []string) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	ctx := context.Background()
	if key != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "flagd-selector", key)
	}
	ctx = metadata.AppendToOutgoingContext(ctx, extra...)
	s, _ := structpb.NewStruct(contextFor(1))
	request, _ := proto.Marshal(&evaluationv1.ResolveAllRequest{Context: s})
	var response []byte
	err = conn.Invoke(ctx, "/flagd.evaluation.v1.Service/ResolveAll", &request, &response,
		grpc.ForceCodec(rawCodec{}))
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(path, response, 0o644); err != nil {
		panic(err)
	}
}

// decodeBench decodes the saved answer for about a second.
func decodeBench(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	var probe evaluationv1.ResolveAllResponse
	if err := proto.Unmarshal(data, &probe); err != nil {
		panic(err)
	}
	run := func(n int) (time.Duration, uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		for i := 0; i < n; i++ {
			var m evaluationv1.ResolveAllResponse
			if err := proto.Unmarshal(data, &m); err != nil {
				panic(err)
			}
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		return elapsed, after.Mallocs - before.Mallocs
	}
	run(200) // warm up
	n := 1000
	for {
		elapsed, _ := run(n)
		if elapsed > 300*time.Millisecond {
			n = int(float64(n) * float64(time.Second) / float64(elapsed))
			break
		}
		n *= 4
	}
	elapsed, mallocs := run(n)
	out := map[string]any{
		"language": "go", "bytes": len(data), "flags": len(probe.Flags),
		"us_per_decode":     float64(elapsed.Nanoseconds()) / float64(n) / 1000,
		"allocs_per_decode": float64(mallocs) / float64(n),
	}
	encoded, _ := json.Marshal(out)
	fmt.Println(string(encoded))
}
