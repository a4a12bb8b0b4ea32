package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Record is the part of memgate's record the tools check.
type Record struct {
	ID           string  `json:"id"`
	SlotID       string  `json:"slotId"`
	Layer        string  `json:"layer"`
	SubjectID    string  `json:"subjectId"`
	FactType     string  `json:"factType"`
	Summary      string  `json:"summary"`
	Status       string  `json:"status"`
	Supersedes   string  `json:"supersedes"`
	SupersededBy string  `json:"supersededBy"`
	ExpectedHead string  `json:"expectedHead"`
	Review       *Review `json:"review"`
	// What an erasure or retention keeps of a record whose text it
	// removed: the decision, the times and the salted hash.
	Decision  *Decision `json:"decision"`
	CreatedAt time.Time `json:"createdAt"`
	Erased    *Erased   `json:"erased"`
}

// Decision is the policy's decision on a record.
type Decision struct {
	Risk   string `json:"risk"`
	Action string `json:"action"`
}

// Erased says which erasure or retention pass removed a record's text.
type Erased struct {
	ID       string    `json:"id"` // "retention-…" for the retention pass
	At       time.Time `json:"at"`
	TextHash string    `json:"textHash"`
}

// Review is a record's human decision.
type Review struct {
	Outcome string `json:"outcome"`
	By      string `json:"by"`
}

// Record statuses as the API spells them.
const (
	StatusPending    = "pending_review"
	StatusActive     = "active"
	StatusSuperseded = "superseded"
	StatusRejected   = "rejected"
	StatusRolledBack = "rolled_back"
)

// APIError is a non-2xx answer in memgate's error shape.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// Client calls a sidecar's native and admin APIs.
type Client struct {
	Agent, Admin, Token string
	HTTP                *http.Client
}

// NewClient returns a client for p.
func NewClient(p *Process, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{Agent: p.Agent, Admin: p.Admin, Token: p.Token, HTTP: hc}
}

// Do sends body as JSON and decodes a 2xx answer into out. A non-2xx answer
// is an *APIError; a transport failure is returned as is (the request's
// outcome is then unknown).
func (c *Client) Do(ctx context.Context, method, u string, body, out any) error {
	_, err := c.send(ctx, method, u, body, out)
	return err
}

// send is Do that also returns the HTTP status (0 when none came back).
func (c *Client) send(ctx context.Context, method, u string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if strings.HasPrefix(u, c.Admin) {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("%s %s: reading the answer: %w", method, u, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(data, &eb)
		return resp.StatusCode, &APIError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decoding %.200q: %w", method, u, data, err)
		}
	}
	return resp.StatusCode, nil
}

// Write posts a native candidate. The status tells an applied write (201)
// from a parked one (202); an unchanged repeat answers 200.
func (c *Client) Write(ctx context.Context, candidate any) (Record, int, error) {
	var r Record
	status, err := c.send(ctx, http.MethodPost, c.Agent+"/api/v1/memories", candidate, &r)
	return r, status, err
}

// Get reads any record by id over the admin API.
func (c *Client) Get(ctx context.Context, id string) (Record, error) {
	var r Record
	err := c.Do(ctx, http.MethodGet, c.Admin+"/admin/v1/memories/"+url.PathEscape(id), nil, &r)
	return r, err
}

// Approve approves a parked write (override mode).
func (c *Client) Approve(ctx context.Context, id, note string) (Record, error) {
	var r Record
	err := c.Do(ctx, http.MethodPost, c.Admin+"/admin/v1/reviews/"+url.PathEscape(id)+"/approve",
		map[string]string{"note": note, "by": "memgate-bench"}, &r)
	return r, err
}

// Reject rejects a parked write.
func (c *Client) Reject(ctx context.Context, id, reason string) (Record, error) {
	var r Record
	err := c.Do(ctx, http.MethodPost, c.Admin+"/admin/v1/reviews/"+url.PathEscape(id)+"/reject",
		map[string]string{"reason": reason, "by": "memgate-bench"}, &r)
	return r, err
}

// RollbackResult is the answer of a rollback.
type RollbackResult struct {
	RolledBack []Record `json:"rolledBack"`
	Restored   *Record  `json:"restored"`
}

// Rollback rolls back one record (no cascade).
func (c *Client) Rollback(ctx context.Context, id, reason string) (RollbackResult, error) {
	var r RollbackResult
	err := c.Do(ctx, http.MethodPost, c.Admin+"/admin/v1/memories/"+url.PathEscape(id)+"/rollback",
		map[string]any{"reason": reason, "by": "memgate-bench"}, &r)
	return r, err
}

// History lists every version of the slot (subjectID, factType), oldest first.
func (c *Client) History(ctx context.Context, subjectID, factType string) ([]Record, error) {
	var h struct {
		Versions []Record `json:"versions"`
	}
	err := c.Do(ctx, http.MethodGet, c.Agent+"/api/v1/subjects/"+url.PathEscape(subjectID)+"/facts/"+url.PathEscape(factType)+"/history", nil, &h)
	return h.Versions, err
}
