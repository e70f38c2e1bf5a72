// Evaluates flags with the OpenFeature Go SDK and the flagd provider in RPC mode (Connect,
// flagd.evaluation.v1, HTTP/1.1) against flagpole. Driven by tests/flagd/test_flagd_go.py:
//
//	go run . INPUT.json OUTPUT.json
//
// INPUT:  {"port": N, "providers": {NAME: {"host": "KEY@127.0.0.1", "cache": "disabled"|"lru",
//
//	"resolver": "rpc" (default)|"in-process", "port": the provider's own port (optional)}},
//
//	"cases": [{"provider", "type": "boolean"|"string"|"integer"|"float"|"object", "flag",
//	           "default", "context", "metadata": true (optional)}]}
//
// OUTPUT: {"results": [{"value", "variant", "reason", "errorCode", and "flagMetadata" when the
//
//	case asks for it}]}
//
// Or, as a session (flagd_support.DriverSession): `go run . --session`, the same port and
// providers as the first line of input, then one line of cases at a time; provider events
// (READY, configuration change) are printed as they happen.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	flagd "github.com/open-feature/go-sdk-contrib/providers/flagd/pkg"
	"github.com/open-feature/go-sdk/openfeature"
)

type providerOptions struct {
	Host     string `json:"host"`
	Cache    string `json:"cache"`
	Resolver string `json:"resolver"`
	Port     uint16 `json:"port"`
}

type evalCase struct {
	Provider string         `json:"provider"`
	Type     string         `json:"type"`
	Flag     string         `json:"flag"`
	Default  any            `json:"default"`
	Context  map[string]any `json:"context"`
	Metadata bool           `json:"metadata"`
}

type input struct {
	Port      uint16                     `json:"port"`
	Providers map[string]providerOptions `json:"providers"`
	Cases     []evalCase                 `json:"cases"`
}

type result struct {
	Value     any    `json:"value"`
	Variant   string `json:"variant"`
	Reason    string `json:"reason"`
	ErrorCode string `json:"errorCode"`
	// A pointer: an empty metadata is written `{}`, an unasked one not at all.
	FlagMetadata *map[string]any `json:"flagMetadata,omitempty"`
}

type output struct {
	Results []result `json:"results"`
}

func evalContext(ctx map[string]any) openfeature.EvaluationContext {
	attrs := map[string]any{}
	key := ""
	for k, v := range ctx {
		if k == "targetingKey" {
			key, _ = v.(string)
			continue
		}
		attrs[k] = v
	}
	return openfeature.NewEvaluationContext(key, attrs)
}

func number(v any) float64 {
	f, _ := v.(float64)
	return f
}

func evaluate(cases []evalCase) []result {
	ctx := context.Background()
	out := make([]result, 0, len(cases))
	for _, c := range cases {
		client := openfeature.NewClient(c.Provider)
		ec := evalContext(c.Context)
		var r result
		var d openfeature.ResolutionDetail
		switch c.Type {
		case "boolean":
			def, _ := c.Default.(bool)
			v, _ := client.BooleanValueDetails(ctx, c.Flag, def, ec)
			r.Value, d = v.Value, v.ResolutionDetail
		case "string":
			def, _ := c.Default.(string)
			v, _ := client.StringValueDetails(ctx, c.Flag, def, ec)
			r.Value, d = v.Value, v.ResolutionDetail
		case "integer":
			v, _ := client.IntValueDetails(ctx, c.Flag, int64(number(c.Default)), ec)
			r.Value, d = v.Value, v.ResolutionDetail
		case "float":
			v, _ := client.FloatValueDetails(ctx, c.Flag, number(c.Default), ec)
			r.Value, d = v.Value, v.ResolutionDetail
		default:
			v, _ := client.ObjectValueDetails(ctx, c.Flag, c.Default, ec)
			r.Value, d = v.Value, v.ResolutionDetail
		}
		r.Variant, r.Reason, r.ErrorCode = d.Variant, string(d.Reason), string(d.ErrorCode)
		if c.Metadata {
			metadata := map[string]any(d.FlagMetadata)
			if metadata == nil {
				metadata = map[string]any{}
			}
			r.FlagMetadata = &metadata
		}
		out = append(out, r)
	}
	return out
}

// setProviders sets one provider per domain, named as in `providers`.
func setProviders(port uint16, providers map[string]providerOptions) error {
	for name, o := range providers {
		resolver := flagd.WithRPCResolver()
		if o.Resolver == "in-process" {
			resolver = flagd.WithInProcessResolver()
		}
		own := port
		if o.Port != 0 {
			own = o.Port
		}
		opts := []flagd.ProviderOption{
			resolver, flagd.WithHost(o.Host), flagd.WithPort(own),
			flagd.WithRetryBackoffMs(200), flagd.WithRetryBackoffMaxMs(500),
		}
		if o.Cache == "lru" {
			opts = append(opts, flagd.WithLRUCache(100))
		} else {
			opts = append(opts, flagd.WithoutCache())
		}
		provider, err := flagd.NewProvider(opts...)
		if err != nil {
			return err
		}
		if err := openfeature.SetNamedProviderAndWait(name, provider); err != nil {
			return fmt.Errorf("provider %s: %w", name, err)
		}
	}
	return nil
}

// session serves flagd_support.DriverSession on standard input and output.
func session() error {
	var mu sync.Mutex
	out := json.NewEncoder(os.Stdout)
	emit := func(message any) {
		mu.Lock()
		defer mu.Unlock()
		_ = out.Encode(message)
	}
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(make([]byte, 1<<20), 1<<24)
	if !lines.Scan() {
		return fmt.Errorf("no set-up line")
	}
	var in input
	if err := json.Unmarshal(lines.Bytes(), &in); err != nil {
		return err
	}
	if err := setProviders(in.Port, in.Providers); err != nil {
		return err
	}
	for name := range in.Providers {
		name := name
		ready := func(openfeature.EventDetails) {
			emit(map[string]any{"event": "ready", "provider": name})
		}
		changed := func(details openfeature.EventDetails) {
			emit(map[string]any{"event": "changed", "provider": name, "flags": details.FlagChanges})
		}
		client := openfeature.NewClient(name)
		client.AddHandler(openfeature.ProviderReady, &ready)
		client.AddHandler(openfeature.ProviderConfigChange, &changed)
	}
	emit(map[string]any{"reply": "ready"})
	for lines.Scan() {
		var req input
		if err := json.Unmarshal(lines.Bytes(), &req); err != nil {
			return err
		}
		emit(map[string]any{"reply": evaluate(req.Cases)})
	}
	openfeature.Shutdown()
	return lines.Err()
}

func run(in input) (output, error) {
	if err := setProviders(in.Port, in.Providers); err != nil {
		return output{}, err
	}
	out := output{Results: evaluate(in.Cases)}
	openfeature.Shutdown()
	return out, nil
}

func main() {
	if os.Args[1] == "--session" {
		if err := session(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		panic(err)
	}
	out, err := run(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	encoded, _ := json.Marshal(out)
	if err := os.WriteFile(os.Args[2], encoded, 0o644); err != nil {
		panic(err)
	}
}
