package slack

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// groupMembersFunc lists a Slack user group's members (usergroups.users.list).
type groupMembersFunc func(ctx context.Context, group string) ([]string, error)

// reviewers decides who may approve or reject: listed user ids, and the
// members of one user group, looked up and cached for ttl. With neither
// configured nobody may decide in Slack (fail closed; the CLI still works).
type reviewers struct {
	ids     map[string]bool
	group   string
	ttl     time.Duration
	members groupMembersFunc
	now     func() time.Time
	log     *slog.Logger

	mu      sync.Mutex
	cached  map[string]bool
	fetched time.Time
}

func newReviewers(ids []string, group string, ttl time.Duration, members groupMembersFunc, now func() time.Time, log *slog.Logger) *reviewers {
	r := &reviewers{ids: map[string]bool{}, group: group, ttl: ttl, members: members, now: now, log: log}
	for _, id := range ids {
		r.ids[id] = true
	}
	return r
}

// allowed reports whether user may decide. An error means membership could
// not be checked (and nothing was cached): the caller refuses.
func (r *reviewers) allowed(ctx context.Context, user string) (bool, error) {
	if user == "" {
		return false, nil
	}
	if r.ids[user] {
		return true, nil
	}
	if r.group == "" {
		return false, nil
	}
	members, err := r.groupMembers(ctx)
	if err != nil {
		return false, err
	}
	return members[user], nil
}

func (r *reviewers) groupMembers(ctx context.Context) (map[string]bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cached != nil && r.now().Sub(r.fetched) < r.ttl {
		return r.cached, nil
	}
	list, err := r.members(ctx, r.group)
	if err != nil {
		if r.cached != nil {
			// Slack is briefly unreachable: the last known members are a
			// better answer than refusing every reviewer.
			r.log.Warn("refreshing the reviewer group failed; using the cached members", "group", r.group, "err", err)
			return r.cached, nil
		}
		return nil, fmt.Errorf("usergroups.users.list %s: %w", r.group, err)
	}
	r.cached = make(map[string]bool, len(list))
	for _, id := range list {
		r.cached[id] = true
	}
	r.fetched = r.now()
	return r.cached, nil
}
