// The A2A JavaScript SDK's client against a Vigil agent served over A2A
// (agentsrv/a2aserve/jsclient_test.go runs it): it resolves the card,
// sends a task, streams one, answers one that is input-required, and
// cancels one. Each outcome is printed as a JSON line.
//
// Usage: node client.mjs BASE_URL TOKEN
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { randomUUID } from "node:crypto";

const [base, token] = process.argv.slice(2);
const fetchImpl = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", "Bearer " + token);
  return fetch(url, { ...init, headers });
};
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
}));
// The card is at /a2a/agent/.well-known/agent-card.json: the SDK resolves
// its well-known path against the base URL, whose trailing slash keeps
// the agent's name.
const client = await factory.createFromUrl(base + "/a2a/agent/");

const text = (parts) => (parts ?? []).filter((p) => p.kind === "text").map((p) => p.text).join("");
const message = (t, extra = {}) => ({ message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text: t }], ...extra } });
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const summary = (step, task) => ({
  step, id: task.id, context: task.contextId, state: task.status.state,
  answer: text(task.artifacts?.[0]?.parts), status: text(task.status.message?.parts),
  receipt: task.metadata?.["vigil/receipt"] ?? null,
});

// 1. A task, answered.
out(summary("send", await client.sendMessage(message("Hi"))));

// 2. A task streamed: the task, chunks, the answer, the final status.
const kinds = [];
let chunks = "", answer = "", final = null;
for await (const ev of client.sendMessageStream(message("Count"))) {
  kinds.push(ev.kind);
  if (ev.kind === "artifact-update") {
    if (ev.append) chunks += text(ev.artifact.parts);
    else answer = text(ev.artifact.parts);
  }
  if (ev.kind === "status-update" && ev.final) final = ev;
}
out({ step: "stream", kinds, chunks, answer, state: final?.status.state, receipt: final?.metadata?.["vigil/receipt"] ?? null });

// 3. A task that waits for approval, allowed by a message on it.
const waiting = await client.sendMessage(message("6*7?"));
out(summary("input-required", waiting));
out(summary("allowed", await client.sendMessage(message("allow", { taskId: waiting.id, contextId: waiting.contextId }))));

// 4. A task that waits, cancelled.
const again = await client.sendMessage(message("6*7 again?"));
out(summary("cancelled", await client.cancelTask({ id: again.id })));
