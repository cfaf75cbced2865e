// drive.ts drives a Vigil server with the TypeScript client that
// @hey-api/openapi-ts generated from its /openapi.json (into ./gen):
// create → turn → approve → job → verify, reading the typed event stream
// on the way. server/tsclient_test.go generates, compiles and runs it:
// node out/drive.js BASE_URL TOKEN. It prints one line per step and
// `ok` at the end; it exits 1 on the first thing that is not as the
// document says.
import { createClient } from './gen/client';
import * as api from './gen/sdk.gen';
import type { ApprovalRequestData, CoreEvent, SessionEvent, Job, Summary, ToolResultData } from './gen/types.gen';

// Node's globals, without @types/node.
declare const process: { argv: string[]; exit(code: number): never };
declare function setTimeout(fn: () => void, ms: number): unknown;
declare function clearTimeout(timer: unknown): void;

const [base, token] = process.argv.slice(2);
// The bearer token goes only where the bearer scheme is asked for: the
// event stream also lists the ticket scheme (a query parameter), and a
// callback that answered every scheme would put the token in the URL.
const client = createClient({ baseUrl: base, auth: (a) => (a.scheme === 'bearer' ? token : undefined) });

function fail(msg: string): never {
  console.log('FAIL: ' + msg);
  process.exit(1);
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

// poll calls get until it returns a value, for at most 20 s.
async function poll<T>(what: string, get: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = await get();
    if (v !== undefined) return v;
    await sleep(50);
  }
  fail('timed out waiting for ' + what);
}

// describe narrows a core record by its type: it compiles only while the
// generated CoreEvent is a union discriminated on `type` with one member
// per core type of docs/log-format.md (the default case proves there is
// no other).
function describe(ev: CoreEvent): string {
  switch (ev.type) {
    case 'turn/start': return `turn ${ev.turn} starts` + (ev.data.continues ? ` continuing ${ev.data.continues}` : '');
    case 'turn/end': return `turn ${ev.turn} ends ${ev.data.reason}`;
    case 'step/start': return `step ${ev.turn}.${ev.step}`;
    case 'step/end': return `step ${ev.step} ends ${ev.data.finish ?? ''} (${ev.data.usage?.output ?? 0} out)`;
    case 'step/usage': return `step ${ev.step} used ${ev.data.input}+${ev.data.output}`;
    case 'user/message': return `user: ${ev.data.content}`;
    case 'request/header': return `header (${ev.data.reason}) with ${ev.data.header.tools?.length ?? 0} tools`;
    case 'request/digest': return `digest ${ev.data.sha256.slice(0, 8)} of ${ev.data.messages} messages`;
    case 'request/oneshot': return `one-shot ${ev.data.purpose}`;
    case 'request/usage': return `one-shot used ${ev.data.input}+${ev.data.output}`;
    case 'assistant/chunk': return `chunk ${ev.data.text ?? ev.data.reasoning ?? ev.data.tool_call?.index}`;
    case 'assistant/message': return `assistant: ${ev.data.content ?? ''} ${(ev.data.tool_calls ?? []).map((c) => c.name).join(',')}`;
    case 'tool/call': return `call ${ev.data.id} ${ev.data.name}(${ev.data.arguments})`;
    case 'tool/start': return `start ${ev.data.id}`;
    case 'tool/result': return `result ${ev.data.id}: ${ev.data.content ?? ev.data.error?.code}`;
    case 'tool/retry': return `retry ${ev.data.id} in turn ${ev.turn}`;
    case 'tool/reconcile': return `reconciled ${ev.data.id} by ${ev.data.by ?? 'its retry'}: ${ev.data.content ?? ev.data.error?.code}`;
    case 'compaction/start': return `compaction ${ev.data.id}`;
    case 'compaction/end': return `compaction ${ev.data.id} ends`;
    case 'approval/request': return `approval asked for ${ev.data.id} by ${ev.data.by ?? '?'}`;
    case 'approval/decision': return `approval ${ev.data.allow ? 'given' : 'refused'} for ${ev.data.id} (${ev.data.scope ?? 'call'})`;
    case 'approval/policy': return `policy by ${ev.data.by}: default ${ev.data.default}`;
    case 'session/end-seed': return 'end of seed';
    default: {
      const none: never = ev;
      return none;
    }
  }
}

const coreTypes = new Set<string>(['turn/start', 'turn/end', 'step/start', 'step/end', 'step/usage', 'user/message',
  'request/header', 'request/digest', 'request/oneshot', 'request/usage', 'assistant/chunk', 'assistant/message',
  'tool/call', 'tool/start', 'tool/result', 'tool/retry', 'tool/reconcile', 'compaction/start', 'compaction/end', 'approval/request',
  'approval/decision', 'approval/policy', 'session/end-seed']);
const isCore = (ev: SessionEvent): ev is CoreEvent => coreTypes.has(ev.type);

// events reads the session's events after seq after, as JSONL (the
// client would parse application/jsonl as one JSON value: ask for text).
async function events(id: string, after = -1): Promise<CoreEvent[]> {
  const { data, error } = await api.streamEvents({ client, path: { id }, query: { after }, parseAs: 'text' });
  if (error || data === undefined) fail('events: ' + JSON.stringify(error));
  const out: CoreEvent[] = [];
  for (const line of data.split('\n')) {
    if (line === '') continue;
    const ev = JSON.parse(line) as SessionEvent;
    if (!isCore(ev)) fail('a plugin record in this session: ' + line);
    console.log(`  ${ev.seq} ${describe(ev)}`);
    out.push(ev);
  }
  return out;
}

// follow reads the session's events as server-sent events through the
// client's SSE support, resuming after seq after (Last-Event-ID), until
// one that until accepts.
async function follow(id: string, after: number, until: (ev: CoreEvent) => boolean): Promise<CoreEvent[]> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 20000);
  const { stream } = await client.sse.get<{ 200: SessionEvent }>({
    url: '/v1/sessions/{id}/events',
    path: { id },
    headers: after < 0 ? { Accept: 'text/event-stream' } : { Accept: 'text/event-stream', 'Last-Event-ID': String(after) },
    security: [{ scheme: 'bearer', type: 'http' }],
    signal: stop.signal,
    sseMaxRetryAttempts: 1,
  });
  const out: CoreEvent[] = [];
  for await (const ev of stream) {
    if (!isCore(ev)) fail('a plugin record in this session: ' + JSON.stringify(ev));
    console.log(`  sse ${ev.seq} ${describe(ev)}`);
    out.push(ev);
    if (until(ev)) break;
  }
  stop.abort();
  clearTimeout(timer);
  if (out.length === 0 || !until(out[out.length - 1])) fail('the event stream ended before the awaited event');
  return out;
}

// noRoute tells a 404 for a route this server lacks (one of issue 28's
// contract that another branch builds) from any other error.
const noRoute = (status: number, error?: { code: string; message: string }) =>
  status === 404 && error?.code === 'not_found' && error.message.startsWith('no route');

async function summary(id: string): Promise<Summary> {
  const { data, error } = await api.getSession({ client, path: { id } });
  if (!data) fail('get session: ' + JSON.stringify(error));
  return data;
}

// job waits for a job to finish, through GET /v1/jobs/{id}. It returns
// undefined when the server has no such route.
async function job(id: string): Promise<Job | undefined> {
  let missing = '';
  const j = await poll('job ' + id, async () => {
    const { data, error, response } = await api.getJob({ client, path: { id } });
    if (noRoute(response.status, error)) {
      missing = error?.message ?? '';
      return null;
    }
    if (!data) fail('get job: ' + JSON.stringify(error));
    return data.state === 'queued' || data.state === 'running' ? undefined : data;
  });
  if (j === null) {
    console.log('SKIP-JOB: the server has no GET /v1/jobs/{id} (' + missing + ')');
    return undefined;
  }
  return j;
}

async function main() {
  const health = await api.getHealth({ client });
  if (health.data?.status !== 'ok') fail('health: ' + JSON.stringify(health.error));

  const created = await api.createSession({ client, body: {} });
  if (!created.data) fail('create: ' + JSON.stringify(created.error));
  const id = created.data.id;
  console.log(`created ${id} (${created.data.status}, ${created.response.headers.get('Location')})`);

  const refused = await api.queueTurn({ client, path: { id }, body: { prompt: '' } });
  if (refused.error?.code !== 'bad_request') fail('an empty prompt was not refused: ' + JSON.stringify(refused));

  const turn = await api.queueTurn({ client, path: { id }, body: { prompt: '6 times 7?' } });
  if (!turn.data) fail('turn: ' + JSON.stringify(turn.error));
  console.log(`queued turn job ${turn.data.job} at ${turn.data.position}`);

  const streamed = await follow(id, -1, (ev) => ev.type === 'approval/request');
  const suspended = await poll('the turn to suspend', async () => {
    const s = await summary(id);
    return s.status === 'suspended' ? s : undefined;
  });
  const pending = suspended.pending ?? [];
  if (pending.length !== 1 || pending[0].tool !== 'calc') fail('pending: ' + JSON.stringify(pending));
  console.log(`suspended on ${pending[0].call} ${pending[0].tool}(${pending[0].arguments})`);

  const asked = (await events(id)).filter((e) => e.type === 'approval/request');
  const request: ApprovalRequestData | undefined = asked.map((e) => (e.type === 'approval/request' ? e.data : undefined))[0];
  if (request?.id !== pending[0].call) fail('the stream has no approval/request for ' + pending[0].call);
  const last = streamed[streamed.length - 1];
  if (last.type !== 'approval/request' || last.data.id !== request.id) fail('the server-sent events disagree: ' + JSON.stringify(last));

  const decided = await api.decideCall({ client, path: { id, call: request.id }, body: { allow: true, reason: 'arithmetic is fine', scope: 'call' } });
  if (!decided.data) fail('decide: ' + JSON.stringify(decided.error));
  console.log(`queued decision job ${decided.data.job}`);

  const j = await job(decided.data.job);
  if (j) {
    if (j.state !== 'done' || j.kind !== 'decide' || j.session !== id) fail('decision job: ' + JSON.stringify(j));
    console.log(`job ${j.id} ${j.kind} ${j.state}`);
  }

  const idle = await poll('the turn to end', async () => {
    const s = await summary(id);
    return s.status === 'idle' ? s : undefined;
  });
  const resumed = await follow(id, last.seq, (ev) => ev.type === 'turn/end');
  if (resumed[0].seq !== last.seq + 1) fail(`Last-Event-ID ${last.seq} resumed at ${resumed[0].seq}`);
  const rest = await events(id, suspended.events - 1);
  const results = rest.flatMap((e): ToolResultData[] => (e.type === 'tool/result' ? [e.data] : []));
  if (results.length !== 1 || results[0].content !== '42') fail('tool results: ' + JSON.stringify(results));
  const end = rest[rest.length - 1];
  if (end?.type !== 'turn/end' || end.data.reason !== 'completed') fail('the turn did not complete: ' + JSON.stringify(end));

  const again = await api.decideCall({ client, path: { id, call: request.id }, body: { allow: false } });
  const code = again.error?.code;
  if (code !== 'not_pending' && code !== 'decided' && code !== 'already_decided') fail('a second decision: ' + JSON.stringify(again));

  // Only an unknown outcome is reconciled: this call returned 42.
  const reconciled = await api.reconcileCall({ client, path: { id, call: request.id }, body: { result: '42' } });
  if (reconciled.response.status !== 409 || reconciled.error?.code !== 'outcome_known') fail('a reconcile of a known outcome: ' + JSON.stringify(reconciled.data ?? reconciled.error));
  console.log(`reconcile refused: ${reconciled.error.code}`);

  const report = await api.verifySession({ client, path: { id } });
  if (!report.data?.ok || report.data.events !== idle.events) fail('verify: ' + JSON.stringify(report.data ?? report.error));
  console.log(`verified ${report.data.events} events`);

  const cancelled = await api.cancelSession({ client, path: { id }, body: {} });
  if (cancelled.data?.session !== id || cancelled.data.cancelled !== 0) fail('cancel: ' + JSON.stringify(cancelled.data ?? cancelled.error));

  // A browser's EventSource cannot send a header: a ticket, alone,
  // authenticates one GET of the stream.
  const ticket = await api.createEventTicket({ client, path: { id }, body: {} });
  if (noRoute(ticket.response.status, ticket.error)) {
    console.log('SKIP-TICKET: the server has no POST /v1/sessions/{id}/events/tickets (' + ticket.error?.message + ')');
  } else {
    if (!ticket.data) fail('ticket: ' + JSON.stringify(ticket.error));
    const byTicket = (t: string) => (a: { in?: string }) => (a.in === 'query' ? t : undefined);
    // query: {} because the fetch client puts a query-parameter credential
    // into the request's own query object, and without one it adds it to a
    // copy that is then dropped.
    const streamed = await api.streamEvents({ client, path: { id }, query: {}, parseAs: 'text', auth: byTicket(ticket.data.ticket) });
    if (streamed.data?.split('\n').filter((l) => l !== '').length !== idle.events) fail('the stream by ticket: ' + JSON.stringify(streamed.error));
    const reused = await api.streamEvents({ client, path: { id }, query: {}, parseAs: 'text', auth: byTicket(ticket.data.ticket) });
    if (reused.response.status !== 401 || reused.error?.code !== 'unauthorized') fail('a ticket used twice: ' + JSON.stringify(reused.error));
    console.log(`streamed ${idle.events} events by ticket, once`);
  }

  const anon = await api.getSession({ client, path: { id }, auth: () => undefined });
  if (anon.response.status !== 401 || anon.error?.code !== 'unauthorized') fail('a request without a token: ' + JSON.stringify(anon.error));

  const deleted = await api.deleteSession({ client, path: { id }, query: { tree: true } });
  if (deleted.data?.deleted.length !== 1 || deleted.data.deleted[0] !== id) fail('delete: ' + JSON.stringify(deleted.data ?? deleted.error));
  const gone = await api.getSession({ client, path: { id } });
  if (gone.response.status !== 404 || gone.error?.code !== 'not_found') fail('a deleted session: ' + JSON.stringify(gone.data ?? gone.error));
  console.log('deleted');
  console.log('ok');
}

main().catch((e: unknown) => fail(String(e)));
