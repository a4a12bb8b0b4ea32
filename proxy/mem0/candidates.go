package mem0

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"unicode"

	"github.com/memgate/memgate/internal/clip"
	"github.com/memgate/memgate/memory"
)

// How an add's text became candidates. It is recorded in each candidate's
// evidence.sourceRef as "mem0:<mode>:<role>#<n>", so policy can tell a
// verbatim write from an inferred one (and drop chit-chat and questions
// only from the latter).
const (
	modeVerbatim = "verbatim" // infer=false: each message as sent
	modeInfer    = "infer"    // infer=true without an extractor: each message
	modeExtract  = "extract"  // facts an extractor model drew from the conversation
	modeDeduced  = "deduced"  // deduced_memories the client's own model wrote
	modeUpdate   = "update"   // PUT of a memory's text
	modeDelete   = "delete"   // DELETE of a memory
)

// maxExcerptBytes bounds the evidence a candidate carries.
const maxExcerptBytes = 4 << 10

// writeRequest is what every add needs besides its text.
type writeRequest struct {
	scope    memory.Scope
	actor    memory.Actor
	metadata map[string]any
}

func (h *Handler) writeRequest(r *http.Request, scope memory.Scope, metadata map[string]any) writeRequest {
	return writeRequest{scope: scope, actor: actorOf(r, scope), metadata: metadata}
}

// actorOf names who triggered a write: the Mem0 entity ids, the client
// library (X-Mem0-Client, e.g. "mem0-js/3.3.1"; X-Mem0-Source, e.g.
// "OPENCLAW") and the remote address.
func actorOf(r *http.Request, scope memory.Scope) memory.Actor {
	client := r.Header.Get("X-Mem0-Client")
	if src := r.Header.Get("X-Mem0-Source"); src != "" {
		client = strings.TrimSpace(client + " " + src)
	}
	if client == "" {
		client = r.Header.Get("User-Agent")
	}
	return memory.Actor{UserID: scope.UserID, AgentID: scope.AgentID, RunID: scope.RunID, Dialect: Dialect,
		RemoteAddr: remoteIP(r), Client: clean(client, 128)}
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// clean drops control characters and bounds s, for values that end up in
// records and log lines.
func clean(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	return clip.Bytes(strings.TrimSpace(s), max)
}

func (wr writeRequest) candidate(summary string, src memory.Source, excerpt, sourceRef string) memory.Candidate {
	return memory.Candidate{Summary: summary, CandidateSource: src, Actor: wr.actor, Scope: wr.scope,
		Metadata: wr.metadata, Evidence: memory.Evidence{Excerpt: clip.Bytes(excerpt, maxExcerptBytes), SourceRef: sourceRef}}
}

// addCandidates turns an add into candidates:
//   - deduced_memories (the client's model already chose the facts): one
//     model-inference candidate each, the conversation as evidence;
//   - infer=false: each message verbatim, sourced by its role;
//   - infer=true with an extractor: each fact it extracts, as a
//     model-inference (falling back to the messages if it fails);
//   - infer=true without one: each message, sourced by its role; policy
//     drops chit-chat and questions.
//
// System messages are instructions, not memories, and are skipped.
func (h *Handler) addCandidates(ctx context.Context, wr writeRequest, req *addRequest, msgs []Message) []memory.Candidate {
	var out []memory.Candidate
	if len(req.DeducedMemories) > 0 {
		conv := transcript(msgs)
		for i, d := range req.DeducedMemories {
			if d = strings.TrimSpace(d); d != "" {
				out = append(out, wr.candidate(d, memory.SourceInference, conv, fmt.Sprintf("mem0:%s:model#%d", modeDeduced, i)))
			}
		}
		return out
	}
	infer := req.Infer == nil || *req.Infer
	if infer && h.extractor != nil {
		facts, err := h.extractor.Extract(ctx, conversation(msgs), hints(req))
		if err == nil {
			conv := transcript(msgs)
			for i, f := range facts {
				if f = strings.TrimSpace(f); f != "" {
					out = append(out, wr.candidate(f, memory.SourceInference, conv, fmt.Sprintf("mem0:%s:model#%d", modeExtract, i)))
				}
			}
			return dedupe(out)
		}
		h.log.Warn("mem0 extractor failed; remembering the messages themselves", "err", err)
	}
	mode := modeVerbatim
	if infer {
		mode = modeInfer
	}
	lastUser := ""
	for i, m := range msgs {
		src, ok := sourceOf(m.Role)
		if !ok || m.Content == "" {
			continue
		}
		// A user's words are their own evidence; an assistant's statement
		// rests on what the user said before it, if anything.
		excerpt := m.Content
		if src == memory.SourceInference {
			excerpt = lastUser
		} else if src == memory.SourceUser {
			lastUser = m.Content
		}
		out = append(out, wr.candidate(m.Content, src, excerpt, fmt.Sprintf("mem0:%s:%s#%d", mode, m.Role, i)))
	}
	if infer {
		out = dedupe(out)
	}
	return out
}

// dedupe drops repeated texts within one add.
func dedupe(cs []memory.Candidate) []memory.Candidate {
	seen := map[string]bool{}
	out := cs[:0]
	for _, c := range cs {
		if !seen[c.Summary] {
			seen[c.Summary] = true
			out = append(out, c)
		}
	}
	return out
}

// conversation returns the messages an extractor should read.
func conversation(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if _, ok := sourceOf(m.Role); ok && m.Content != "" {
			out = append(out, m)
		}
	}
	return out
}

// transcript renders messages as "role: content" lines, bounded.
func transcript(msgs []Message) string {
	var b strings.Builder
	for _, m := range conversation(msgs) {
		fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
		if b.Len() > maxExcerptBytes {
			break
		}
	}
	return clip.Bytes(strings.TrimSpace(b.String()), maxExcerptBytes)
}

func hints(req *addRequest) ExtractHints {
	return ExtractHints{Instructions: req.CustomInstructions, Includes: req.Includes, Excludes: req.Excludes}
}

// validate checks candidates before anything is written, so a bad one
// fails the whole request instead of half of it.
func validate(cs []memory.Candidate) error {
	for i := range cs {
		c := cs[i] // Normalize fills defaults; check a copy
		if err := c.Normalize(); err != nil {
			if len(cs) == 1 {
				return err
			}
			return memory.Errorf(memory.EINVALID, "memory %d: %s", i+1, memory.ErrorMessage(err))
		}
	}
	return nil
}

// ModelFact reports whether rec is a fact a model drew from a
// conversation in a Mem0 add: one the Extractor extracted, or one of the
// client's deduced_memories. These are the writes Mem0 runs its update
// step for, and the ones memgate shows a model beside their candidate
// memories (facts.ModelMatcher.Asks) when --extractor-url is set; the
// messages of an add, verbatim or without an extractor, are matched
// without a model.
func ModelFact(rec *memory.Record) bool {
	if rec.Actor.Dialect != Dialect || rec.CandidateSource != memory.SourceInference {
		return false
	}
	ref := rec.Evidence.SourceRef
	return strings.HasPrefix(ref, "mem0:"+modeExtract+":") || strings.HasPrefix(ref, "mem0:"+modeDeduced+":")
}
