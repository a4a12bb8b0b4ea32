// Loads OpenClaw's Mem0 plugin through the real openclaw plugin SDK, as
// OpenClaw activates a plugin (its entry's register(api)), with the plugin
// config memgate ships (deploy/openclaw/mem0.json) pointed at a memgate on
// loopback, and calls the plugin's own tools. Each step prints one JSON
// line {step, text, details}: text is exactly what the model reads.
//
// MEMGATE_URL, MEMGATE_KEY: the agent listener and a key.
// MEMGATE_APPROVE: a test-only URL that approves what waits (the reviewer).
// OPENCLAW_CONFIG: deploy/openclaw/mem0.json. SKILLS=1: the plugin's skills mode.
import { readFileSync } from "node:fs";
import entry from "@mem0/openclaw-mem0";

const shipped = JSON.parse(readFileSync(process.env.OPENCLAW_CONFIG, "utf8"));
const pluginConfig = {
  ...shipped.plugins.entries["openclaw-mem0"].config,
  baseUrl: process.env.MEMGATE_URL,
  apiKey: process.env.MEMGATE_KEY,
  autoCapture: false, // no model turn here: nothing to capture
};
if (process.env.SKILLS === "1") pluginConfig.skills = {};

const tools = {};
const hooks = {};
const noop = () => {};
const api = {
  id: "openclaw-mem0",
  pluginConfig,
  registrationMode: "full",
  logger: { info: noop, warn: noop, error: (m) => console.error(m), debug: noop },
  registerTool: (tool) => { tools[tool.name] = tool; },
  registerService: noop, registerCli: noop, registerCommand: noop, registerHook: noop,
  on: (name, fn) => { (hooks[name] ??= []).push(fn); },
  resolvePath: (p) => p,
};
entry.register(api);

const out = (step, res) => console.log(JSON.stringify({ step, text: res.content.map((c) => c.text).join("\n"), details: res.details ?? null }));
let n = 0;
const call = async (step, name, params) => {
  if (!tools[name]) throw new Error(`the plugin registered no ${name} tool (has ${Object.keys(tools)})`);
  const res = await tools[name].execute(`call-${++n}`, params);
  out(step, res);
  return res;
};
// Auto-recall, as OpenClaw runs it before it builds a turn's prompt: what
// it adds to the prompt for a user message about the rule.
const recall = async (step) => {
  for (const fn of hooks.before_prompt_build ?? []) {
    const res = await fn({ prompt: "Should I auto-publish the project alpha launch post today?" }, { sessionKey: "agent:main:main", trigger: "user" });
    console.log(JSON.stringify({ step, text: res?.prependContext ?? "", details: null }));
  }
};
const eventOf = (res) => /event_id (\S+) /.exec(res.content[0].text)?.[1];

const applied = await call("add_applied", "memory_add", { text: "I prefer dark mode in every editor" });
const parked = await call("add_parked", "memory_add", { text: "Auto-publish is disabled for project alpha from now on" });
await call("add_refused", "memory_add", { text: "The SMTP password for the mailer is Orchid-7741!" });
if (process.env.SKILLS === "1") process.exit(0);

const darkId = applied.details.results.find((r) => r.event === "ADD").id;
const policyId = parked.details.results.find((r) => r.event === "PENDING_REVIEW").id;
await call("update_applied", "memory_update", { memoryId: darkId, text: "I prefer a light theme in every editor" });
await call("event_waiting", "memory_event_status", { event_id: eventOf(parked) });
await call("search_waiting", "memory_search", { query: "auto-publish project alpha" });
await recall("recall_waiting");

const approved = await fetch(process.env.MEMGATE_APPROVE, { method: "POST" });
if (!approved.ok) throw new Error(`approve: ${approved.status}`);
await call("event_decided", "memory_event_status", { event_id: eventOf(parked) });
await call("search_decided", "memory_search", { query: "auto-publish project alpha" });
await recall("recall_decided");

// The plugin ignores the answers of update and delete: what the model
// reads is the plugin's own text, whatever memgate decided.
await call("update_parked", "memory_update", { memoryId: policyId, text: "Auto-publish is enabled for project alpha" });
await call("delete_parked", "memory_delete", { memoryId: policyId });
await call("delete_applied", "memory_delete", { memoryId: darkId });
// The plugin's recall leaves a timer running; the scenario is done.
process.exit(0);
