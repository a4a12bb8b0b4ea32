// Package relate asks a chat model how a free-text fact relates to the
// active memories it may repeat or update: the update step Mem0 runs after
// extracting facts, for one fact, over an OpenAI-compatible
// chat-completions endpoint (llmapi). Chat implements facts.Relater.
//
// The protocol is Mem0's. The model is shown the candidate memories with
// short ids ("0", "1"…, never the records' own ids, which a model would
// mangle) and the new fact, and answers
//
//	{"memory": [{"id": "0", "text": "...", "event": "UPDATE", "old_memory": "..."}]}
//
// where event is ADD (a new fact), UPDATE (a new value of that memory's
// fact), DELETE (the fact contradicts that memory) or NONE (that memory
// already states it). Like Mem0, the model may list every memory shown;
// the verdict is the strongest event: an UPDATE, then a DELETE, of the
// best-ranked memory named; then ADD; then NONE of the best-ranked
// memory named. A memory's "text" in the answer (Mem0's merged text) is
// ignored: a memory's text is what its writer wrote, never the model's.
//
// Anything else (a transport error, a timeout, an error status, an answer
// that is not that JSON, an event not in the list, an id that was not
// shown, no entry at all) is an error, and the caller falls back to the
// comparison without a model (facts.ModelMatcher).
package relate
