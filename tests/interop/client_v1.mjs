// An MCP client on the official TypeScript SDK v1 (@modelcontextprotocol/
// sdk 1.x), the legacy era: `node client_v1.mjs SCENARIO -- COMMAND...`
// starts COMMAND over stdio, plays SCENARIO and prints what it saw as one
// JSON object with nothing in it that differs between runs, so that a
// direct run and a run through mcp-bound can be compared.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, ElicitRequestSchema, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { crash, outcome, parseArgs, within } from './common.mjs';

const scenarios = {
  // One call, in whatever the server is (a v2 server serves it legacy).
  async echo(client) {
    return {
      version: client.getServerVersion()?.name ?? null,
      echo: await outcome(client.callTool({ name: 'echo', arguments: { text: 'hi' } })),
    };
  },
  // A 2025-11-25 task: the call is answered with a task at once, and
  // tasks/result is asked for at once, so it blocks until the task ends.
  async task(client) {
    const stream = client.experimental.tasks.callToolStream(
      { name: 'delay', arguments: { ms: Number(process.env.INTEROP_TASK_MS ?? 1500) } },
      CallToolResultSchema,
      { task: { ttl: 60000 } },
    );
    for await (const message of stream) {
      if (message.type === 'taskCreated') {
        const result = await outcome(client.experimental.tasks.getTaskResult(message.task.taskId, CallToolResultSchema));
        return { created: true, result };
      }
      return { created: false, first: message.type };
    }
    return { created: false };
  },
  // The server crashes in a call, then one more call; a restarted legacy
  // server is announced with a tools list_changed.
  async crash(client) {
    const changed = new Promise((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve(true)));
    const seen = await crash(client);
    return { ...seen, list_changed: seen.after.error === undefined ? await within(changed, 5000) : null };
  },
};

// How the person answers mcp-bound's approval card (INTEROP_ELICIT):
// accept, accept-false, decline, cancel, error, never (no answer; the
// card's withdrawal is seen), or none (no elicitation declared).
const elicit = process.env.INTEROP_ELICIT ?? 'none';
const asked = [];
let withdrawn;
const withdrawal = new Promise((resolve) => { withdrawn = resolve; });
const answers = {
  accept: { action: 'accept', content: { approve: true } },
  'accept-false': { action: 'accept', content: { approve: false } },
  decline: { action: 'decline' },
  cancel: { action: 'cancel' },
};
function answer(request, extra) {
  const seen = { message: request.params.message, fields: Object.keys(request.params.requestedSchema.properties), withdrawn: false };
  asked.push(seen);
  if (elicit === 'error') throw new McpError(-32603, 'the interop client fails on purpose');
  if (elicit === 'never') {
    return new Promise(() => extra.signal.addEventListener('abort', () => { seen.withdrawn = true; withdrawn(); }));
  }
  return answers[elicit];
}
scenarios.approve = async (client) => {
  const call = await outcome(client.callTool({ name: 'echo', arguments: { text: 'approved <b>' } }));
  // mcp-bound withdraws the card before it answers the call.
  if (elicit === 'never') await within(withdrawal, 5000);
  return { call, asked };
};

const { scenario, command, args } = parseArgs('client_v1.mjs', scenarios);
const capabilities = elicit === 'none' ? {} : { elicitation: {} };
const client = new Client({ name: 'interop-v1-client', version: '1.0.0' }, { capabilities });
if (elicit !== 'none') client.setRequestHandler(ElicitRequestSchema, answer);
await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));
const seen = await scenarios[scenario](client);
await client.close();
console.log(JSON.stringify(seen));
