package mem0

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

func TestParkedEventSucceedsOnApproval(t *testing.T) { onEachBacking(t, parkedEventSucceedsOnApproval) }

func parkedEventSucceedsOnApproval(t *testing.T, on backing) {
	e := newEnvOn(t, on)
	ans := e.add("Never auto-publish posts for project alpha")
	evID := ans["event_id"].(string)
	ev := e.call("GET", "/v1/event/"+evID+"/", nil, http.StatusOK).obj()
	if ev["status"] != statusPending || ev["event_type"] != eventAdd || ev["completed_at"] != nil || len(ev["results"].([]any)) != 1 {
		t.Fatalf("before review: %v", ev)
	}
	if it := ev["results"].([]any)[0].(map[string]any); it["event"] != proxy.EventPendingReview {
		t.Fatalf("a waiting event lists its PENDING_REVIEW entry: %v", it)
	}
	if ev["payload"].(map[string]any)["user_id"] != "alice" {
		t.Fatalf("the event keeps the request: %v", ev["payload"])
	}
	e.approveAll()
	ev = e.call("GET", "/v1/event/"+evID, nil, http.StatusOK).obj()
	if ev["status"] != statusSucceeded || ev["completed_at"] == nil {
		t.Fatalf("after approval: %v", ev)
	}
	res := ev["results"].([]any)
	if len(res) != 1 || res[0].(map[string]any)["event"] != eventAdd || res[0].(map[string]any)["memory"] != "Never auto-publish posts for project alpha" {
		t.Fatalf("results after approval: %v", res)
	}
}

func TestParkedEventFailsOnRejection(t *testing.T) { onEachBacking(t, parkedEventFailsOnRejection) }

func parkedEventFailsOnRejection(t *testing.T, on backing) {
	e := newEnvOn(t, on)
	evID := e.add("Never auto-publish anything")["event_id"].(string)
	q := e.pending()
	if _, err := e.gov.Reject(context.Background(), q[0].Record.ID, memory.Review{By: "carol", Note: "too broad"}); err != nil {
		t.Fatal(err)
	}
	ev := e.call("GET", "/v1/event/"+evID+"/", nil, http.StatusOK).obj()
	if ev["status"] != statusFailed || ev["error"] != "rejected by carol: too broad" {
		t.Fatalf("after rejection: %v", ev)
	}
}

func TestEventOfAnAppliedWriteAndItsRollback(t *testing.T) {
	onEachBacking(t, eventOfAnAppliedWriteAndItsRollback)
}

func eventOfAnAppliedWriteAndItsRollback(t *testing.T, on backing) {
	e := newEnvOn(t, on)
	ans := e.add("I am learning Portuguese")
	evID := ans["event_id"].(string)
	recID := ans["results"].([]any)[0].(map[string]any)["record_id"].(string)
	ev := e.call("GET", "/v1/event/"+evID+"/", nil, http.StatusOK).obj()
	if ev["status"] != statusSucceeded || ev["metadata"].(map[string]any)["applied"] != 1.0 {
		t.Fatalf("applied event: %v", ev)
	}
	if _, err := e.gov.Rollback(context.Background(), recID, false, "wrong user", "operator"); err != nil {
		t.Fatal(err)
	}
	ev = e.call("GET", "/v1/event/"+evID+"/", nil, http.StatusOK).obj()
	if ev["status"] != statusFailed || !strings.Contains(ev["error"].(string), "wrong user") {
		t.Fatalf("a rolled-back write's event fails: %v", ev)
	}
}

func TestEventsListNewestFirstAndSurviveRestart(t *testing.T) {
	onEachBacking(t, eventsListNewestFirstAndSurviveRestart)
}

func eventsListNewestFirstAndSurviveRestart(t *testing.T, on backing) {
	e := newEnvOn(t, on)
	var ids []string
	for _, s := range []string{"one fact", "two facts", "Never auto-publish three"} {
		ids = append(ids, e.add(s)["event_id"].(string))
	}
	e.restart()
	list := e.call("GET", "/v1/events/?page=1&page_size=2", nil, http.StatusOK).obj()
	got := texts(list["results"].([]any), "id")
	if list["count"] != 3.0 || !slices.Equal(got, []string{ids[2], ids[1]}) || list["next"] == nil {
		t.Fatalf("events page 1: count %v, ids %q, want %q", list["count"], got, []string{ids[2], ids[1]})
	}
	statuses := texts(list["results"].([]any), "status")
	if !slices.Equal(statuses, []string{statusPending, statusSucceeded}) {
		t.Fatalf("statuses %q", statuses)
	}
	list = e.call("GET", "/v1/events/?page=2&page_size=2", nil, http.StatusOK).obj()
	if got := texts(list["results"].([]any), "id"); !slices.Equal(got, []string{ids[0]}) || list["previous"] == nil {
		t.Fatalf("events page 2: %v", list)
	}
	wantErrorShape(t, e.do("GET", "/v1/event/unknown/", nil), http.StatusNotFound, memory.ENOTFOUND)
}

func TestEventOfADeleteNamesTheDeletedText(t *testing.T) {
	onEachBacking(t, eventOfADeleteNamesTheDeletedText)
}

func eventOfADeleteNamesTheDeletedText(t *testing.T, on backing) {
	e := newEnvOn(t, on)
	id := e.addApplied("I have a dog")
	evID := e.call("DELETE", "/v1/memories/"+id+"/", nil, http.StatusOK).obj()["event_id"].(string)
	ev := e.call("GET", "/v1/event/"+evID+"/", nil, http.StatusOK).obj()
	res := ev["results"].([]any)
	if ev["event_type"] != eventDelete || len(res) != 1 || res[0].(map[string]any)["event"] != eventDelete ||
		res[0].(map[string]any)["memory"] != "I have a dog" {
		t.Fatalf("delete event: %v", ev)
	}
}
