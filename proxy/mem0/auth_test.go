package mem0

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

func TestAPIKeys(t *testing.T) {
	keys, err := proxy.ParseAgentKeys(" key-one, ,key-two ")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *Options) { o.Keys = proxy.NewAgentKeys(keys) })
	tests := []struct {
		name   string
		header []string
		want   int
	}{
		{"platform token", []string{"Authorization", "Token key-one"}, http.StatusOK},
		{"second key", []string{"Authorization", "Token key-two"}, http.StatusOK},
		{"open-source X-API-Key", []string{"X-API-Key", "key-two"}, http.StatusOK},
		{"bearer", []string{"Authorization", "Bearer key-one"}, http.StatusOK},
		{"wrong key", []string{"Authorization", "Token key-three"}, http.StatusUnauthorized},
		{"prefix of a key", []string{"Authorization", "Token key-on"}, http.StatusUnauthorized},
		{"unknown scheme", []string{"Authorization", "Basic key-one"}, http.StatusUnauthorized},
		{"no key", nil, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/v1/ping/", "/v1/events/", "/memories?user_id=alice", "/v1/entities/"} {
				resp := e.do("GET", path, nil, tt.header...)
				if path == "/v1/entities/" && tt.want == http.StatusOK {
					wantErrorShape(t, resp, http.StatusNotFound, memory.ENOTFOUND)
					continue
				}
				if tt.want == http.StatusUnauthorized {
					wantErrorShape(t, resp, http.StatusUnauthorized, memory.EUNAUTHORIZED)
					if resp.header.Get("WWW-Authenticate") == "" {
						t.Fatal("a 401 names its scheme")
					}
				} else if resp.status != tt.want {
					t.Fatalf("GET %s: status %d, want %d: %s", path, resp.status, tt.want, resp.raw)
				}
			}
		})
	}
	// A refused request writes nothing.
	e.do("POST", "/v3/memories/add/", []byte(`{"messages": "I like tea", "user_id": "alice", "infer": false}`), "Authorization", "Token nope")
	if n := len(e.active()); n != 0 {
		t.Fatalf("an unauthorized add wrote %d memories", n)
	}
}

func TestNoKeysConfiguredMeansNoKeyRequired(t *testing.T) {
	e := newEnv(t)
	ping := e.call("GET", "/v1/ping/", nil, http.StatusOK, "Authorization", "Token anything").obj()
	if ping["status"] != "ok" || ping["org_id"] == "" {
		t.Fatalf("ping: %v", ping)
	}
	e.call("GET", "/v1/ping", nil, http.StatusOK)
}

func TestRoutesAnswerJSONWithAndWithoutTrailingSlash(t *testing.T) {
	e := newEnv(t)
	id := e.addApplied("I keep bees")
	for _, path := range []string{"/v1/memories/" + id, "/v1/memories/" + id + "/", "/v1/memories/" + id + "/history",
		"/v1/memories/" + id + "/history/", "/memories/" + id + "/history", "/v1/events", "/v1/ping"} {
		e.call("GET", path, nil, http.StatusOK)
	}
	for _, path := range []string{"/v1/entities/", "/v2/entities/user/alice/", "/v3/nothing"} {
		wantErrorShape(t, e.do("GET", path, nil), http.StatusNotFound, memory.ENOTFOUND)
	}
	// Keys with surrounding spaces and empty entries are ignored.
	keys, err := proxy.ParseAgentKeys(" a ,, b,")
	if err != nil || len(keys) != 2 {
		t.Fatalf("ParseAgentKeys: %d keys, %v", len(keys), err)
	}
	for _, k := range []string{"a", "b"} {
		if _, ok := proxy.NewAgentKeys(keys).Verify(k); !ok {
			t.Fatalf("ParseAgentKeys lost key %q", k)
		}
	}
}

// The Mem0 routes share the agent listener's mux with the native API.
func TestRegistersBesideTheNativeAPI(t *testing.T) {
	e := newEnv(t)
	mux := http.NewServeMux()
	(&proxy.Native{Gov: e.gov, Search: e.h.index, Log: slog.New(slog.DiscardHandler)}).Register(mux)
	e.h.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, want := range map[string]int{"/api/v1/memories?subjectId=alice": http.StatusOK, "/v1/ping/": http.StatusOK,
		"/memories?user_id=alice": http.StatusOK} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
