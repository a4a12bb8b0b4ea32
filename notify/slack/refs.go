package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/memgate/memgate/memory/storeapi"
)

// refNamespace keeps, per record, the Slack message that announced it, so a
// later decision (from Slack, the CLI or the admin API) updates that message.
const refNamespace = "slack"

// messageRef locates a posted review message.
type messageRef struct {
	Channel  string    `json:"channel"`
	TS       string    `json:"ts"`
	PostedAt time.Time `json:"postedAt"`
}

type refs struct{ kv storeapi.KV }

// get returns the record's message, or nil if none was posted.
func (r refs) get(ctx context.Context, recordID string) (*messageRef, error) {
	b, err := r.kv.Get(ctx, refNamespace, recordID)
	if errors.Is(err, storeapi.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("slack message of %s: %w", recordID, err)
	}
	var ref messageRef
	if err := json.Unmarshal(b, &ref); err != nil || ref.TS == "" {
		return nil, nil // unreadable: announce afresh rather than fail forever
	}
	return &ref, nil
}

func (r refs) put(ctx context.Context, recordID string, ref messageRef) error {
	b, err := json.Marshal(ref)
	if err != nil {
		return err
	}
	if err := r.kv.Put(ctx, refNamespace, recordID, b); err != nil {
		return fmt.Errorf("slack message of %s: %w", recordID, err)
	}
	return nil
}
