package llmapi

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Endpoint is a checked endpoint URL.
type Endpoint struct {
	// URL is where requests go: the URL as given, its fragment dropped and
	// the API's path appended when it was a base URL.
	URL string
	// Display is URL without its query, for errors and logs (a query may
	// hold a key).
	Display string
}

// ParseEndpoint checks raw, an http or https URL with a host and without
// credentials, and appends suffix to its path unless the path already ends
// with it ("/chat/completions", "/embeddings": both a base URL ".../v1"
// and the full URL are accepted). keyVar names the setting that carries
// the key instead of the URL, for the error. Errors never repeat a URL
// that carries credentials or does not parse.
func ParseEndpoint(raw, suffix, keyVar string) (Endpoint, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return Endpoint{}, errors.New("a URL is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Endpoint{}, errors.New("the URL does not parse") // the parse error would repeat the URL, credentials and all
	}
	if u.User != nil {
		return Endpoint{}, fmt.Errorf("the URL must not carry credentials; set %s instead", keyVar)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Endpoint{}, fmt.Errorf("URL %q must start with http:// or https://", raw)
	}
	if u.Host == "" {
		return Endpoint{}, fmt.Errorf("URL %q has no host", raw)
	}
	u.Fragment, u.RawFragment = "", ""
	u.Path, u.RawPath = withSuffix(u.Path, suffix), ""
	display := *u
	display.RawQuery, display.ForceQuery = "", false
	return Endpoint{URL: u.String(), Display: display.String()}, nil
}

// withSuffix returns path with suffix appended, unless it ends with it
// already; trailing slashes are dropped either way.
func withSuffix(path, suffix string) string {
	path = strings.TrimRight(path, "/")
	if strings.HasSuffix(path, suffix) {
		return path
	}
	return path + suffix
}
