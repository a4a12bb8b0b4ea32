// Drives memgate's Mem0 dialect with the real mem0ai SDK (MemoryClient with
// `host`), the way an app or the OpenClaw plugin does. Run by
// proxy/mem0/sdk_test.go, which serves memgate on loopback and sets:
//   MEMGATE_URL      base URL of the Mem0 routes
//   MEMGATE_KEY      an accepted API key
//   MEM0_PACKAGE     which installed SDK to load (mem0ai, mem0ai-openclaw)
//   MEMGATE_APPROVE  a test-only URL that approves every parked write
//   MEMGATE_DROPS_CHITCHAT  set when the policy refuses small talk from
//                    inferred adds (the default policy does)
// Exits non-zero on the first failed expectation.
import assert from "node:assert/strict";

const { MEMGATE_URL: host, MEMGATE_KEY: apiKey, MEM0_PACKAGE: pkg, MEMGATE_APPROVE: approveURL } = process.env;
const { default: MemoryClient } = await import(pkg);

const step = (name) => console.log(`ok ${name}`);
const user = "alice";
const dropsChitChat = process.env.MEMGATE_DROPS_CHITCHAT === "1";

// Raw calls for what the SDK has no method for (events), with the SDK's header.
async function raw(path) {
  const resp = await fetch(`${host}${path}`, { headers: { Authorization: `Token ${apiKey}` } });
  assert.equal(resp.status, 200, `GET ${path}: ${resp.status}`);
  return resp.json();
}

const client = new MemoryClient({ apiKey, host });
await client.ping();
step("ping");

// add, applied at once: its results come back in Mem0's shape.
const added = await client.add([{ role: "user", content: "I love hiking in the Swiss Alps" }], { userId: user, infer: false });
assert.equal(added.status, "SUCCEEDED");
assert.equal(added.results.length, 1);
assert.equal(added.results[0].event, "ADD");
assert.equal(added.results[0].memory, "I love hiking in the Swiss Alps");
const hikingId = added.results[0].id;
assert.ok(hikingId);
step("add applied");

// add with inference (the default): chit-chat is dropped by policy, not an error.
const inferred = await client.add(
  [
    { role: "user", content: "Hi!" },
    { role: "user", content: "My favourite food is ramen" },
    { role: "assistant", content: "Noted: the user loves ramen." },
  ],
  { userId: user, metadata: { topic: "food" } },
);
const inferredTexts = ["My favourite food is ramen", "Noted: the user loves ramen."];
if (!dropsChitChat) inferredTexts.unshift("Hi!");
assert.deepEqual(inferred.results.map((r) => r.memory).sort(), inferredTexts.sort());
assert.equal(inferred.status, "SUCCEEDED");
step("add inferred");

// add, parked for review: Mem0's queued answer, and nothing readable changes.
const parked = await client.add([{ role: "user", content: "Never auto-publish posts for project alpha without my approval" }], {
  userId: user,
  infer: false,
});
assert.equal(parked.status, "PENDING");
assert.ok(parked.eventId, "a parked write names its event");
// One PENDING_REVIEW entry: a client that keeps ADD and UPDATE entries skips it.
assert.equal(parked.results.length, 1);
assert.equal(parked.results[0].event, "PENDING_REVIEW");
assert.ok(parked.results[0].memory.startsWith("NOT SAVED YET: "));
assert.equal(parked.results.filter((r) => r.event === "ADD" || r.event === "UPDATE").length, 0);
let event = await raw(`/v1/event/${parked.eventId}/`);
assert.equal(event.status, "PENDING");
step("add parked");

// getAll (v3, paginated) lists the active layer only.
const all = await client.getAll({ filters: { user_id: user }, page: 1, pageSize: 50 });
const active = ["I love hiking in the Swiss Alps", ...inferredTexts].sort();
assert.equal(all.count, active.length);
assert.deepEqual(all.results.map((m) => m.memory).sort(), active);
step("getAll");

// search ranks lexically and never shows the parked write.
const found = await client.search("hiking in the Alps", { filters: { user_id: user }, topK: 5 });
assert.equal(found.results[0].id, hikingId);
assert.ok(found.results[0].score > 0 && found.results[0].score <= 1);
assert.ok(!found.results.some((m) => m.memory.includes("auto-publish")));
const orFound = await client.search("ramen", { filters: { OR: [{ user_id: user }, { agent_id: "nobody" }] }, threshold: 0.1 });
assert.equal(orFound.results.length, 2);
step("search");

// get
const got = await client.get(hikingId);
assert.equal(got.id, hikingId);
assert.equal(got.memory, "I love hiking in the Swiss Alps");
assert.equal(got.userId, user);
step("get");

// update: a new version behind the same id.
const updated = await client.update(hikingId, { text: "I love hiking in the Dolomites" });
assert.equal(updated.event, "UPDATE");
assert.equal(updated.status, "SUCCEEDED");
assert.equal((await client.get(hikingId)).memory, "I love hiking in the Dolomites");
step("update");

// history: the slot's versions.
const history = await client.history(hikingId);
assert.deepEqual(
  history.map((h) => [h.event, h.oldMemory, h.newMemory]),
  [
    ["ADD", null, "I love hiking in the Swiss Alps"],
    ["UPDATE", "I love hiking in the Swiss Alps", "I love hiking in the Dolomites"],
  ],
);
step("history");

// The reviewer approves; the parked write's event turns SUCCEEDED.
const approved = await fetch(approveURL, { method: "POST" });
assert.equal(approved.status, 200);
event = await raw(`/v1/event/${parked.eventId}/`);
assert.equal(event.status, "SUCCEEDED");
assert.equal(event.results.length, 1);
assert.equal(event.results[0].data.memory, "Never auto-publish posts for project alpha without my approval");
const policyId = event.results[0].id;
const afterApproval = await client.search("auto-publish project alpha", { filters: { user_id: user } });
assert.equal(afterApproval.results[0].id, policyId);
const events = await raw("/v1/events/");
assert.ok(events.results.some((e) => e.id === parked.eventId && e.status === "SUCCEEDED"));
step("event succeeded after approval");

// delete: governed too. A plain memory goes; a policy waits for a human.
const deleted = await client.delete(hikingId);
assert.match(deleted.message, /deleted/i);
await assert.rejects(client.get(hikingId), (err) => err.name === "MemoryNotFoundError" || /404/.test(String(err.message)));
const parkedDelete = await client.delete(policyId);
assert.equal(parkedDelete.status, "PENDING");
assert.equal((await client.get(policyId)).memory, "Never auto-publish posts for project alpha without my approval");
step("delete");

// deleteAll by entity.
await client.add([{ role: "user", content: "Bob likes juice" }], { userId: "bob", infer: false });
const bobGone = await client.deleteAll({ userId: "bob" });
assert.equal(bobGone.deleted, 1);
assert.equal((await client.getAll({ filters: { user_id: "bob" } })).count, 0);
step("deleteAll");

// A wrong key is refused with the SDK's authentication error.
const intruder = new MemoryClient({ apiKey: "wrong-key", host });
await assert.rejects(intruder.add([{ role: "user", content: "I am an intruder" }], { userId: user, infer: false }), (err) =>
  /401|Invalid API key/.test(String(err.message)),
);
step("wrong key refused");

console.log("all steps passed");
