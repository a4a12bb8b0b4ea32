package slack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/slack-go/slack"
)

// maxInteractionBody bounds an interaction request; Slack's are a few KB.
const maxInteractionBody = 1 << 20

// decisionTimeout bounds handling one interaction. The work is not tied to
// the request: a decision is not cut off because Slack hung up after its
// three seconds.
const decisionTimeout = 10 * time.Second

// Handler serves POST /slack/interactions, Slack's interactivity request
// URL. Every request must carry a valid X-Slack-Signature over
// "v0:<timestamp>:<body>" made with the signing secret, and a timestamp
// within five minutes; anything else (forged, missing, old, or no secret
// configured) is refused with 401 and changes nothing. Mount it on the
// admin listener outside the bearer-token check: Slack signs, it has no
// token.
func (s *Service) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "invalid", "POST only")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxInteractionBody))
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body is too large")
			return
		} else if err != nil {
			writeError(w, http.StatusBadRequest, "invalid", "reading the request body failed")
			return
		}
		if err := verify(r.Header, body, s.cfg.SigningSecret); err != nil {
			s.log.Warn("refused a Slack request that is not verifiably from Slack", "remote", r.RemoteAddr, "err", err)
			s.metrics.interaction("http", "unsigned")
			writeError(w, http.StatusUnauthorized, "unauthorized", "the Slack request signature is missing, wrong or too old")
			return
		}
		form, err := url.ParseQuery(string(body))
		payload := form.Get("payload")
		if err != nil || payload == "" {
			writeError(w, http.StatusBadRequest, "invalid", "a form field payload with the interaction is required")
			return
		}
		var cb slack.InteractionCallback
		if err := json.Unmarshal([]byte(payload), &cb); err != nil {
			writeError(w, http.StatusBadRequest, "invalid", "the interaction payload is not valid JSON")
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), decisionTimeout)
		defer cancel()
		s.interact(ctx, cb)
		w.WriteHeader(http.StatusOK) // an empty 200 also closes a submitted modal
	})
}

// verify checks Slack's request signature and timestamp (slack-go's
// verifier: HMAC-SHA256, constant-time compare, ±5 minutes).
func verify(h http.Header, body []byte, secret string) error {
	sv, err := slack.NewSecretsVerifier(h, secret)
	if err != nil {
		return err
	}
	if _, err := sv.Write(body); err != nil {
		return err
	}
	return sv.Ensure()
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message = code, msg
	_ = json.NewEncoder(w).Encode(body)
}
