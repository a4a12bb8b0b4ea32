package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// sealed returns n events sealed one after the other, and the head.
func sealed(t *testing.T, n int) ([][]byte, []string, ChainHead) {
	t.Helper()
	var head ChainHead
	docs, ids := make([][]byte, n), make([]string, n)
	for i := range docs {
		in, _ := json.Marshal(map[string]any{"candidate": map[string]string{"summary": fmt.Sprintf("secret plan %d", i)}})
		e := &Event{ID: fmt.Sprintf("ev%02d", i), Type: EventApplied, At: time.Unix(int64(i), 0).UTC(),
			RecordID: fmt.Sprintf("r%d", i), Input: in, Reason: "because",
			Decision: &Decision{Risk: RiskHigh, Action: ActionReject, Reasons: []Reason{{Rule: "test.rule", Message: fmt.Sprintf("quotes secret plan %d", i)}}}}
		var err error
		if docs[i], head, err = SealEvent(e, head); err != nil {
			t.Fatal(err)
		}
		ids[i] = e.ID
	}
	return docs, ids, head
}

// edit decodes doc, lets fn change it, and encodes it again.
func edit(t *testing.T, doc []byte, fn func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestChainVerifierNamesTheFirstTamperedEvent(t *testing.T) {
	type entry struct {
		pos uint64
		id  string
		doc []byte
	}
	cases := []struct {
		name     string
		tamper   func(t *testing.T, es []entry) []entry
		kind, id string
	}{
		{"intact", func(t *testing.T, es []entry) []entry { return es }, "", ""},
		{"text erased keeps the chain", func(t *testing.T, es []entry) []entry {
			for i := range es {
				doc, changed, err := EraseEventText(es[i].doc, "erasure")
				if err != nil || !changed {
					t.Fatalf("erase: %v %v", changed, err)
				}
				es[i].doc = doc
			}
			return es
		}, "", ""},
		{"text edited", func(t *testing.T, es []entry) []entry {
			es[3].doc = bytes.Replace(es[3].doc, []byte("secret plan 3"), []byte("harmless plan"), 1)
			return es
		}, ChainChanged, "ev03"},
		{"text removed without an erasure", func(t *testing.T, es []entry) []entry {
			es[2].doc = edit(t, es[2].doc, func(m map[string]any) { delete(m, "input"); delete(m, "reason") })
			return es
		}, ChainChanged, "ev02"},
		{"a rule's message edited", func(t *testing.T, es []entry) []entry {
			es[6].doc = bytes.Replace(es[6].doc, []byte("quotes secret plan 6"), []byte("quotes nothing"), 1)
			return es
		}, ChainChanged, "ev06"},
		{"decision edited", func(t *testing.T, es []entry) []entry {
			es[4].doc = edit(t, es[4].doc, func(m map[string]any) { m["type"] = "rejected" })
			return es
		}, ChainChanged, "ev04"},
		{"newest event edited", func(t *testing.T, es []entry) []entry {
			es[7].doc = edit(t, es[7].doc, func(m map[string]any) { m["by"] = "mallory" })
			return es
		}, ChainChanged, "ev07"},
		{"event removed with its position", func(t *testing.T, es []entry) []entry {
			return append(es[:5:5], es[6:]...)
		}, ChainRemoved, "ev05"},
		{"event removed, its position kept", func(t *testing.T, es []entry) []entry {
			es[5].doc = nil
			return es
		}, ChainRemoved, "ev05"},
		{"newest events cut off", func(t *testing.T, es []entry) []entry { return es[:6] }, ChainRemoved, "ev07"},
		{"two events swapped", func(t *testing.T, es []entry) []entry {
			es[2].doc, es[3].doc = es[3].doc, es[2].doc
			es[2].id, es[3].id = es[3].id, es[2].id
			return es
		}, ChainReordered, "ev03"},
		{"event moved back", func(t *testing.T, es []entry) []entry {
			moved := es[1]
			out := append([]entry{}, es[:1]...)
			out = append(out, es[2:6]...)
			out = append(out, moved)
			out = append(out, es[6:]...)
			for i := range out {
				out[i].pos = uint64(i + 1)
			}
			return out
		}, ChainReordered, "ev02"},
	}
	for _, tc := range cases {
		for _, file := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/file=%v", tc.name, file), func(t *testing.T) {
				docs, ids, head := sealed(t, 8)
				es := make([]entry, len(docs))
				for i := range docs {
					es[i] = entry{uint64(i + 1), ids[i], docs[i]}
				}
				es = tc.tamper(t, es)
				v := NewChainVerifier(ChainHead{})
				for _, e := range es {
					if file {
						if e.doc == nil {
							continue // a file has no positions: a missing line
						}
						e.pos, e.id = 0, ""
					}
					v.Add(e.pos, e.id, e.doc)
				}
				rep := v.End(&head)
				if tc.kind == "" {
					if !rep.OK || rep.Events != 8 {
						t.Fatalf("want an intact chain of 8, got %+v %v", rep, rep.Problem)
					}
					return
				}
				if rep.OK || rep.Problem == nil {
					t.Fatalf("want %s of %s, the chain verified: %+v", tc.kind, tc.id, rep)
				}
				if rep.Problem.Kind != tc.kind || rep.Problem.EventID != tc.id {
					t.Fatalf("want %s of %s, got %s of %s: %s", tc.kind, tc.id, rep.Problem.Kind, rep.Problem.EventID, rep.Problem.Detail)
				}
			})
		}
	}
}

func TestEraseEventTextKeepsHashAndDropsText(t *testing.T) {
	docs, _, _ := sealed(t, 1)
	before, err := EventHash(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	out, changed, err := EraseEventText(docs[0], "retention")
	if err != nil || !changed {
		t.Fatalf("erase: %v %v", changed, err)
	}
	if bytes.Contains(out, []byte("secret plan")) || bytes.Contains(out, []byte("because")) {
		t.Fatalf("the text survived: %s", out)
	}
	after, err := EventHash(out)
	if err != nil || after != before {
		t.Fatalf("hash changed: %s -> %s (%v)", before, after, err)
	}
	var e Event
	if err := json.Unmarshal(out, &e); err != nil || e.Erased != "retention" || e.TextHash == "" {
		t.Fatalf("decoded %+v, %v", e, err)
	}
	again, changed, err := EraseEventText(out, "erasure")
	if err != nil || changed || !bytes.Equal(again, out) {
		t.Fatalf("a second erasure changed the event: %v %v", changed, err)
	}
}

// BenchmarkSealEvent seals an applied write's event as the store does
// under its commit lock: the recorded input of a 160-byte text and a
// decision with two reasons.
//
//	go test -run '^$' -bench BenchmarkSealEvent ./memory/
func BenchmarkSealEvent(b *testing.B) {
	text := strings.Repeat("the user keeps the backup keys in the blue folder ", 4)[:160]
	in, _ := json.Marshal(map[string]any{"op": "write", "candidate": map[string]any{"summary": text, "layer": "knowledge",
		"subjectId": "bench-1", "factType": "note"}, "current": nil, "pending": []any{}})
	e := &Event{ID: "01JBENCH0000000000000000", Type: EventApplied, At: time.Unix(1, 0).UTC(), RecordID: "01JREC", SlotID: "slot_1",
		Input: in, Decision: &Decision{Risk: RiskLow, Action: ActionApply, Categories: []string{}, Affects: []string{"answers"},
			Reasons: []Reason{{Rule: "knowledge_verified", Message: "low-risk knowledge"}, {Rule: "new_fact", Message: "a new fact"}}}}
	// "parts" is SealEvent; "map" the round trip it replaced, for the
	// ratio in one run; "link" is what is left of "parts" for a store to
	// do under the lock that orders its commits (PreparedEvent.Seal).
	prepared, err := prepareEvent(e, "00112233445566778899aabbccddeeff")
	if err != nil {
		b.Fatal(err)
	}
	link := func(_ *Event, head ChainHead, _ string) ([]byte, ChainHead, error) {
		doc, next := prepared.Seal(head)
		return doc, next, nil
	}
	for _, bc := range []struct {
		name string
		seal func(*Event, ChainHead, string) ([]byte, ChainHead, error)
	}{{"parts", sealEvent}, {"map", sealEventByMap}, {"link", link}} {
		b.Run(bc.name, func(b *testing.B) {
			var head ChainHead
			for b.Loop() {
				_, next, err := bc.seal(e, head, "00112233445566778899aabbccddeeff")
				if err != nil {
					b.Fatal(err)
				}
				head = next
			}
		})
	}
}

// sealEventByMap is the chain's definition followed step by step (the
// seal before it encoded the text parts apart): the whole event encoded,
// decoded into a map, hashed from the map and encoded again.
func sealEventByMap(e *Event, head ChainHead, salt string) ([]byte, ChainHead, error) {
	c := *e
	c.Seq, c.Prev, c.PrevID = head.Seq+1, head.Hash, head.EventID
	c.Salt, c.TextHash, c.Erased = salt, "", ""
	raw, err := MarshalStored(&c)
	if err != nil {
		return nil, head, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, head, err
	}
	hdr, text, err := eventParts(m)
	if err != nil {
		return nil, head, err
	}
	th, err := hashText(text, c.Salt)
	if err != nil {
		return nil, head, err
	}
	m["textHash"], _ = json.Marshal(th)
	hdr["textHash"] = m["textHash"]
	h, err := hashHeader(hdr)
	if err != nil {
		return nil, head, err
	}
	doc, err := MarshalStored(m)
	return doc, ChainHead{Seq: c.Seq, Hash: h, EventID: c.ID}, err
}

// The seal takes the text parts apart to encode them once; the stored
// bytes and both hashes are those of the map round trip, for text with
// what JSON escapes (<, >, &, U+2028, quotes, control characters),
// input that is not compact or holds escapes, and every optional part
// present or absent.
func TestSealEventMatchesTheMapRoundTrip(t *testing.T) {
	texts := []string{"", "plain", "a <b> & c", "line\u2028sep\u2029", `quote " and \ back`, "tab\tnew\nline\x01",
		"中文 <重要> & 细节", "emoji 🙂 & é"}
	inputs := []json.RawMessage{nil, json.RawMessage(`null`), json.RawMessage(` { "z" : 1 , "a" : [ 1, 2 ] } `),
		json.RawMessage(`{"s":"\u003cb\u003e & <i>","u":"\u2028"}`), json.RawMessage("{\"t\":\"x\u2028y <&>\"}")}
	decisions := []*Decision{nil,
		{Risk: RiskLow, Action: ActionApply},
		{Risk: RiskHigh, Action: ActionReview, Categories: []string{"strategy"}, Affects: []string{"actions"},
			Reasons: []Reason{{Rule: "r1", Message: ""}, {Rule: "r2", Message: "quotes <the> text & more"}}},
		{Risk: RiskHigh, Action: ActionReject, Reasons: []Reason{{Rule: "only", Message: ""}}}}
	n := 0
	var head ChainHead
	for i, text := range texts {
		for j, in := range inputs {
			for k, d := range decisions {
				e := &Event{ID: fmt.Sprintf("ev%03d", n), Type: EventApplied, At: time.Unix(int64(n), 7).UTC(),
					RecordID: "r<1>", Reason: text, Input: in, Decision: d}
				if (i+j+k)%2 == 0 {
					e.Actor = &Actor{AgentID: "agent & co", RunID: text}
					e.Related = []string{"a", text}
					e.Erasure = &ErasureSummary{ID: "er1"}
					e.By = text
				}
				salt := fmt.Sprintf("%032x", n)
				want, wantHead, err := sealEventByMap(e, head, salt)
				if err != nil {
					t.Fatal(err)
				}
				got, gotHead, err := sealEvent(e, head, salt)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) || gotHead != wantHead {
					t.Fatalf("event %d:\n got %s %+v\nwant %s %+v", n, got, gotHead, want, wantHead)
				}
				if h, err := EventHash(got); err != nil || h != gotHead.Hash {
					t.Fatalf("event %d: EventHash %s, %v; sealed %s", n, h, err, gotHead.Hash)
				}
				// Prepared once (before a store's commit lock), sealed
				// after whichever head the lock then gives, as often as
				// asked: the link is all that changes.
				p, err := prepareEvent(e, salt)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range []ChainHead{head, {}, {Seq: 41, Hash: "h<&>", EventID: "prev & id"}} {
					want, wantHead, err := sealEventByMap(e, h, salt)
					if err != nil {
						t.Fatal(err)
					}
					if got, gotHead := p.Seal(h); !bytes.Equal(got, want) || gotHead != wantHead {
						t.Fatalf("event %d prepared, sealed after %+v:\n got %s %+v\nwant %s %+v", n, h, got, gotHead, want, wantHead)
					}
				}
				head = gotHead
				n++
			}
		}
	}
	bad := &Event{ID: "bad", Input: json.RawMessage(`{"unclosed":`)}
	if _, _, err := sealEvent(bad, head, "00"); err == nil {
		t.Fatal("an event with invalid input was sealed")
	}
}
