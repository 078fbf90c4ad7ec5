// An MCP server on the official TypeScript SDK v2 (@modelcontextprotocol/
// server), serving both eras over stdio as serveStdio does: the 2026-07-28
// era when the client's first request carries the _meta envelope, the
// legacy one after an initialize. Its tools are what the interop scenarios
// need (tests/interop.rs).
import { McpServer, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

let server;
let handle;

function build() {
  server = new McpServer({ name: 'interop-v2', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  const text = (t) => ({ content: [{ type: 'text', text: t }] });
  // Each call says what it got, on stderr, so a test sees what ran.
  server.registerTool('echo', { inputSchema: z.object({ text: z.string() }) }, async (args) => {
    process.stderr.write(`interop server: echo ${JSON.stringify(args)}\n`);
    return text(args.text);
  });
  server.registerTool('pid', {}, async () => text(String(process.pid)));
  server.registerTool('sleep', { inputSchema: z.object({ ms: z.number() }) }, async ({ ms }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return text(`slept ${ms}`);
  });
  server.registerTool('crash', { inputSchema: z.object({ code: z.number() }) }, async ({ code }) => {
    process.stderr.write('interop server: crashing on purpose\n');
    process.exit(code);
  });
  // A multi-round-trip tool: the first round asks, the retry answers.
  const answer = z.object({ ok: z.boolean() });
  server.registerTool('confirm', {}, async (ctx) => {
    const given = acceptedContent(ctx.mcpReq.inputResponses, 'ok', answer);
    if (given?.ok !== true) {
      process.stderr.write('interop server: confirm asks\n');
      return inputRequired({ inputRequests: { ok: inputRequired.elicit({ message: 'go?', requestedSchema: answer }) } });
    }
    process.stderr.write('interop server: confirm runs\n');
    return text('confirmed');
  });
  // The tool list changes: a listening client is told.
  server.registerTool('change', {}, async () => {
    setTimeout(() => server.sendToolListChanged(), 10);
    return text('changed');
  });
  // The server ends every listen stream (a graceful complete result) and
  // closes, as on its own shutdown.
  server.registerTool('end', {}, async () => {
    setTimeout(() => handle.close(), 10);
    return text('ending');
  });
  return server;
}

handle = serveStdio(build);
process.stderr.write('READY\n');
