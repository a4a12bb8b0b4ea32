package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
)

// debugListener serves Go's profiler (/debug/pprof/) on addr, which must
// be a loopback address: profiles and goroutine dumps show the process's
// internals, and the listener has no token. It is how BENCHMARKS.md's
// profile of a running sidecar is taken:
//
//	go tool pprof 'http://127.0.0.1:7602/debug/pprof/profile?seconds=20'
func debugListener(addr string, log *slog.Logger) (listener, error) {
	if !loopback(addr) {
		return listener{}, fmt.Errorf("--debug-listen %q: the profiler is served on a loopback address only", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return listener{}, fmt.Errorf("debug listener: %w", err)
	}
	log.Info("profiler on", "addr", ln.Addr().String())
	return listener{"debug listener", newServer(mux, log), ln}, nil
}
