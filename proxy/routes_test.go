package proxy_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/memgate/memgate/proxy"
)

// TestJSONRoutes: what the mux has no route or no method for answers in
// the JSON error shape, with the Allow header; routes and the mux's
// redirects are untouched.
func TestJSONRoutes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/memories/{id}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("POST /api/v1/memories/{id}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("GET /v1/memories/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("list")) })
	srv := httptest.NewServer(proxy.JSONRoutes(mux))
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/api/v1/memories/x", 200, "", ""},
		{"GET", "/nowhere", 404, "not_found", ""},
		{"DELETE", "/api/v1/memories/x", 405, "method_not_allowed", "GET, HEAD, POST"},
		{"GET", "/v1/memories", http.StatusTemporaryRedirect, "", ""},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body proxy.ErrorBody
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || body.Error.Code != tc.code || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d %q allow %q, want %d %q allow %q", tc.method, tc.path, resp.StatusCode, body.Error.Code,
				resp.Header.Get("Allow"), tc.status, tc.code, tc.allow)
		}
		if tc.code != "" && resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s %s: content type %q", tc.method, tc.path, resp.Header.Get("Content-Type"))
		}
	}
}
