// Package fakefleet stands in for sidecars that share a store, so the
// tools' fleet modes can be tested before (and apart from) a real shared
// store: a test binary re-executed as a "sidecar" takes the sidecar's
// flags (--data-dir, --listen, --admin-listen, --store) and forwards both
// listeners to one real sidecar, the backend, which plays the shared
// database. Killing an instance kills a forwarder; killing the backend is
// a database crash. The backend's addresses are read from a file on every
// request, so a restarted backend on new ports is found again.
package fakefleet

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// envBackendFile names the file that holds the backend's agent and admin
// URLs; set, it makes MaybeRun serve as a forwarder.
const envBackendFile = "MEMGATE_FAKEFLEET_BACKEND"

// Env returns the environment that makes a test binary a forwarder to the
// backend whose URLs WriteBackend put in file.
func Env(file string) []string { return []string{envBackendFile + "=" + file} }

// WriteBackend records the backend's listeners for the forwarders.
func WriteBackend(file, agent, admin string) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(agent+"\n"+admin+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file) // a forwarder never reads half a file
}

// MaybeRun serves as a forwarder and exits when the environment asks for
// one; otherwise it returns at once. Call it first in TestMain.
func MaybeRun() {
	file := os.Getenv(envBackendFile)
	if file == "" {
		return
	}
	if err := serve(file, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fakefleet:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serve(file string, args []string) error {
	fs := flag.NewFlagSet("fakefleet", flag.ContinueOnError)
	fs.String("data-dir", "", "ignored: the backend holds the data")
	listen := fs.String("listen", "", "agent listener")
	adminListen := fs.String("admin-listen", "", "admin listener")
	fs.String("store", "", "the shared store (the backend stands for it)")
	fs.SetOutput(os.Stdout) // --help lists --store, as a sidecar with a shared store does
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 2)
	for i, addr := range []string{*listen, *adminListen} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: forwarder(file, i)}
		go func() { errc <- srv.Serve(ln) }()
		go func() { <-ctx.Done(); srv.Close() }()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

// forwarder proxies to line i of file: 0 the agent, 1 the admin listener.
func forwarder(file string, line int) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			if u, err := backend(file, line); err == nil {
				r.SetURL(u)
			}
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// The backend is down: a store that does not answer.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"error":{"code":"unavailable","message":%q}}`, err.Error())
		},
	}
}

func backend(file string, line int) (*url.URL, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if line >= len(lines) {
		return nil, fmt.Errorf("%s: no line %d", file, line)
	}
	return url.Parse(lines[line])
}
