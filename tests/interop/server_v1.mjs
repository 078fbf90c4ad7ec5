// An MCP server on the official TypeScript SDK v1 (@modelcontextprotocol/
// sdk 1.x): the legacy era only, with 2025-11-25 tasks. Its tools are what
// the interop scenarios need (tests/interop.rs).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import * as z from 'zod';

const server = new McpServer({ name: 'interop-v1', version: '1.0.0' }, {
  capabilities: { tools: { listChanged: true }, tasks: { requests: { tools: { call: {} } } } },
  taskStore: new InMemoryTaskStore(),
  taskMessageQueue: new InMemoryTaskMessageQueue(),
});
const text = (t) => ({ content: [{ type: 'text', text: t }] });
// Each call says what it got, on stderr, so a test sees what ran.
server.registerTool('echo', { inputSchema: { text: z.string() } }, async (args) => {
  process.stderr.write(`interop server: echo ${JSON.stringify(args)}\n`);
  return text(args.text);
});
server.registerTool('pid', {}, async () => text(String(process.pid)));
server.registerTool('crash', { inputSchema: { code: z.number() } }, async ({ code }) => {
  process.stderr.write('interop server: crashing on purpose\n');
  process.exit(code);
});
// A task-augmented tool: the call is answered with a task at once, the
// work finishes `ms` later; tasks/result blocks until then.
server.experimental.tasks.registerToolTask('delay', { inputSchema: { ms: z.number() } }, {
  async createTask({ ms }, { taskStore, taskRequestedTtl }) {
    const task = await taskStore.createTask({ ttl: taskRequestedTtl });
    setTimeout(() => taskStore.storeTaskResult(task.taskId, 'completed', text(`delayed ${ms}`)), ms);
    return { task };
  },
  async getTask(_args, { taskId, taskStore }) {
    return await taskStore.getTask(taskId);
  },
  async getTaskResult(_args, { taskId, taskStore }) {
    return await taskStore.getTaskResult(taskId);
  },
});
// INTEROP_FLOOD: stderr floods, 64 KiB at a time, for as long as it runs.
if (process.env.INTEROP_FLOOD) {
  const chunk = 'flood '.repeat(10922) + '\n';
  setInterval(() => process.stderr.write(chunk), 1);
}
await server.connect(new StdioServerTransport());
process.stderr.write('READY\n');
