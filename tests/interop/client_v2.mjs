// An MCP client on the official TypeScript SDK v2 (@modelcontextprotocol/
// client), as a host runs it: `node client_v2.mjs SCENARIO -- COMMAND...`
// starts COMMAND over stdio (version negotiation `auto`: the server/discover
// probe on a throwaway sibling, then the era it found), plays SCENARIO and
// prints what it saw as one JSON object, with nothing in it that differs
// between runs (no pids, ids or times), so that a direct run and a run
// through mcp-bound can be compared.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { crash, outcome, parseArgs, sleep, within } from './common.mjs';

const scenarios = {
  // A listen stream open longer than mcp-bound's --request-timeout still
  // delivers the change it was opened for, and the client's close ends it.
  async listen(client) {
    const changed = new Promise((resolve) => client.setNotificationHandler('notifications/tools/list_changed', () => resolve(true)));
    const subscription = await client.listen({ toolsListChanged: true });
    await sleep(Number(process.env.INTEROP_LISTEN_MS ?? 1500));
    const change = await outcome(client.callTool({ name: 'change', arguments: {} }));
    const notified = await within(changed, 10000);
    await subscription.close();
    return { honored: subscription.honoredFilter, change, notified, closed: await subscription.closed };
  },
  // The server ends the stream itself (a graceful result) and closes.
  async 'server-ended'(client) {
    const subscription = await client.listen({ toolsListChanged: true });
    const end = await outcome(client.callTool({ name: 'end', arguments: {} }));
    return { end, closed: await within(subscription.closed, 10000) };
  },
  // The host closes while listening: the stream just ends.
  async 'close-listening'(client) {
    const subscription = await client.listen({ toolsListChanged: true });
    return { honored: subscription.honoredFilter };
  },
  // A multi-round-trip tool call: input_required, the client answers, the
  // retry (a new request id) completes.
  async mrtr(client) {
    let asked = 0;
    client.setRequestHandler('elicitation/create', async () => {
      asked += 1;
      return { action: 'accept', content: { ok: true } };
    });
    return { confirm: await outcome(client.callTool({ name: 'confirm', arguments: {} })), asked };
  },
  crash,
  // mcp-bound's approval card, answered as INTEROP_ELICIT says (accept,
  // decline), and the server's own question (confirm's ok) answered yes.
  async approve(client) {
    const asked = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      const fields = Object.keys(request.params.requestedSchema.properties);
      asked.push({ message: request.params.message, fields, withdrawn: false });
      if (fields.includes('ok')) return { action: 'accept', content: { ok: true } };
      return process.env.INTEROP_ELICIT === 'accept'
        ? { action: 'accept', content: { approve: true } }
        : { action: 'decline' };
    });
    const tool = process.env.INTEROP_TOOL ?? 'echo';
    const args = tool === 'echo' ? { text: 'approved <b>' } : {};
    return { call: await outcome(client.callTool({ name: tool, arguments: args })), asked };
  },
  // Which era the probe found, and one call in it.
  async probe(client) {
    return {
      version: client.getNegotiatedProtocolVersion?.() ?? null,
      echo: await outcome(client.callTool({ name: 'echo', arguments: { text: 'hi' } })),
    };
  },
};

const { scenario, command, args } = parseArgs('client_v2.mjs', scenarios);
const client = new Client(
  { name: 'interop-v2-client', version: '1.0.0' },
  { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } },
);
await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));
const seen = await scenarios[scenario](client);
await client.close();
console.log(JSON.stringify(seen));
