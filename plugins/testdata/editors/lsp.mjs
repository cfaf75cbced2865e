// lsp.mjs SERVER SCHEMA DOC: starts yaml-language-server (the path of
// its bin/) over stdio as an editor does, maps the JSON Schema file
// SCHEMA to the YAML file DOC, opens DOC and prints the diagnostics the
// server publishes for it as JSON lines {line, message} (line from 1).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [server, schemaFile, docFile] = process.argv.slice(2);
const schemaURI = pathToFileURL(schemaFile).href;
const docURI = pathToFileURL(docFile).href;
const settings = { yaml: { validate: true, schemas: { [schemaURI]: [docURI] }, schemaStore: { enable: false } } };

const child = spawn(process.execPath, [server, "--stdio"], { stdio: ["pipe", "pipe", "inherit"] });
let nextID = 1;
const send = (msg) => {
  const body = JSON.stringify({ jsonrpc: "2.0", ...msg });
  child.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
};
const fail = (why) => { console.error(why); child.kill(); process.exit(1); };
const timer = setTimeout(() => fail("no diagnostics within 60s"), 60000);

function onMessage(msg) {
  if (msg.method === "workspace/configuration") {
    send({ id: msg.id, result: msg.params.items.map((it) => (it.section === "yaml" ? settings.yaml : it.section ? null : settings)) });
  } else if (msg.id !== undefined && msg.method) {
    send({ id: msg.id, result: null });
  } else if (msg.id === 1) {
    send({ method: "initialized", params: {} });
    send({ method: "workspace/didChangeConfiguration", params: { settings } });
    send({ method: "textDocument/didOpen", params: { textDocument: { uri: docURI, languageId: "yaml", version: 1, text: readFileSync(docFile, "utf8") } } });
  } else if (msg.method === "textDocument/publishDiagnostics" && msg.params.uri === docURI && msg.params.diagnostics.length > 0) {
    for (const d of msg.params.diagnostics) {
      console.log(JSON.stringify({ line: d.range.start.line + 1, message: d.message }));
    }
    clearTimeout(timer);
    child.kill();
    process.exit(0);
  }
}

let buf = Buffer.alloc(0);
child.stdout.on("data", (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  for (;;) {
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0) return;
    const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, end).toString())[1]);
    if (buf.length < end + 4 + len) return;
    onMessage(JSON.parse(buf.subarray(end + 4, end + 4 + len).toString()));
    buf = buf.subarray(end + 4 + len);
  }
});
child.on("exit", (code) => fail(`yaml-language-server exited (${code}) before diagnostics`));

send({ id: nextID++, method: "initialize", params: { processId: process.pid, rootUri: null, capabilities: { workspace: { configuration: true } } } });
