// Package facts tells, without a model, whether a free-text memory write
// repeats an active memory, states a new value of its fact, or is another
// fact (DESIGN §1 rule 1 for free text). The governor asks it through
// memory.FactMatcher for each write that policy did not place in a slot.
//
// The Matcher takes its candidates from an index of the subject's facts
// kept with the subject's part of the search index (index.go): every
// active memory of the same subject and scope that Compare could find
// related, by its text, its key or most of its words, so that the answer
// is the one comparing the write with every memory would give, at a cost
// that does not grow with their number. Where the search index keeps no
// part of the subject (a store without a commit feed, such as PostgreSQL,
// or a part over its budget), they are the memories ranked highest for
// the write's text (BM25, and by meaning too when the index has an
// embedder). Compare reads each pair of texts:
//
//   - Repeat: the same text once case, width, look-alikes, white space and
//     framing punctuation are folded (textfold.Key), or the same words in
//     the same order once fillers ("now", "really", articles), plural
//     endings and a few verb synonyms ("likes", "prefers") are folded.
//   - Update: both texts name one fact, a key (subject and attribute) and
//     a relation, and give it different values. A text is split at its
//     relation ("is", "moved to", "prefers", "lives in", "works at"; "是",
//     "改为", "喜欢", "住在"): the words before it, and any phrase after
//     the value that starts with a preposition ("on flights", "when
//     travelling"), are the key; the rest is the value. The relation must
//     hold one value at a time: a copula or a change verb after a key
//     that names an attribute ("Alice's manager is", "the staging
//     database moved to", "项目的状态是"), a place or an employer; a
//     preference or a tool only when the two values share their head
//     ("window seats" and "aisle seats", "Postgres 15" and "Postgres
//     16"). A negation added or removed on the same words ("eats meat",
//     "no longer eats meat") is an update too.
//     A value told by how it changed ("was raised to", "migrated to",
//     "升级到", "推迟到") is a new value of the key before the verb; the
//     same words with another number near their end, where the writer
//     says it changed ("wakes up at 6 am", "now wakes up at 7:30 am"),
//     are one fact with a new value. A value's head is its
//     last word that is not a number ("window seats", "aisle seats").
//   - Possible: the same key and relation with values that may both hold
//     ("likes cats", "likes dogs"): kept apart, and named on the record so
//     explain shows it.
//   - Distinct: anything else. "Alice's manager is Tom" and "Alice manages
//     Tom" have different relations; "allergic to peanuts" and "allergic
//     to penicillin" name no attribute ("Alice is …" is not single
//     valued); "window seats on flights" and "on trains" have different
//     keys.
//
// A matcher only proposes: an update is judged by policy as an override
// of the memory it would replace, and a repeat changes nothing.
//
// ModelMatcher adds a model's verdict (Mem0's update step, through a
// Relater such as package relate's) for the writes it is asked about,
// used only where it cannot lower what the write is judged as; any
// failure leaves Compare's answer.
//
// The labelled set in testdata/ (repeat, update and distinct groups,
// English and Chinese) measures Compare; its aside part is never used to
// tune it (compare_test.go prints the figures).
package facts
