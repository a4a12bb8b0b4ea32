// Package audit writes and checks exports of memgate's audit chain
// (memory/chain.go): JSON Lines a third party can check offline, signed
// with a key memgate's store never holds (HMAC-SHA256 or Ed25519).
//
// An export is, one JSON document a line:
//
//	{"memgateAuditExport":1,"from":…,"to":…,"start":{seq,hash,eventId},"exportedAt":…}
//	<each event as the store keeps it, sealed, in chain order>
//	{"end":{"count":N,"last":{seq,hash,eventId}}}
//	{"signature":{"alg":"hmac-sha256"|"ed25519","keyId":…,"value":<base64>}}   (with a key)
//
// start is the link before the first event exported (the zero head when
// the export begins at the chain's start), last the last event exported.
// The signature is over the SHA-256 of every byte before its line. A
// checker replays the chain from start through the events to last, so
// every event, and through their salted text hashes every text still in
// them, is covered by the signature; erased text is absent and counted.
package audit
