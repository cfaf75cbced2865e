// The MCP TypeScript SDK's client against vigil's MCP server, as an IDE
// or an assistant would use it: list the tools, call one (with progress),
// call one whose turn waits for an approval (answered by elicitation),
// and cancel one. agentsrv/mcpserve/tsclient_test.go runs it and checks
// what it prints (one JSON object) against the server's logs.
//
// Over stdio: node client.mjs stdio COMMAND [ARGS...] (the server is
// spawned, with the environment). Over streamable HTTP: node client.mjs
// http URL, with the bearer token in VIGIL_MCP_TOKEN.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, ...args] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args, env: process.env, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: `Bearer ${process.env.VIGIL_MCP_TOKEN}` } },
      });

const client = new Client({ name: "vigil-tsclient-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  return { action: "accept", content: { allow: true, reason: "" } };
});
await client.connect(transport);

const out = { protocol: client.getServerVersion()?.name };
const { tools } = await client.listTools();
out.tools = tools.map((t) => ({ name: t.name, properties: Object.keys(t.inputSchema.properties ?? {}).sort() }));

const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");

// A turn, its chunks as progress.
const progress = [];
let res = await client.callTool({ name: "agent", arguments: { task: "Say hello." } }, undefined, {
  onprogress: (p) => progress.push(p.message),
});
out.hello = { text: text(res), isError: res.isError ?? false, progress, receipt: res._meta?.["vigil/receipt"] };

// A turn that waits for an approval: the client is asked, and answers.
res = await client.callTool({ name: "agent", arguments: { task: "What is 6*7?" } });
out.approval = { text: text(res), isError: res.isError ?? false, asked, receipt: res._meta?.["vigil/receipt"] };

// The same session again, by the session argument.
res = await client.callTool({ name: "agent", arguments: { task: "Say hello again.", session: out.hello.receipt.session } });
out.again = { text: text(res), receipt: res._meta?.["vigil/receipt"] };

// A turn cancelled once it streamed.
const abort = new AbortController();
try {
  await client.callTool({ name: "agent", arguments: { task: "Wait." } }, undefined, {
    signal: abort.signal,
    onprogress: () => abort.abort("the test cancels"),
  });
  out.cancelled = "not cancelled";
} catch (err) {
  out.cancelled = String(err?.message ?? err);
}
// The cancellation is a notification the client sends in the background:
// closing at once would abort its POST before it leaves.
await new Promise((resolve) => setTimeout(resolve, 1000));

await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
