// What both interop clients (client_v1.mjs, client_v2.mjs) share: waiting,
// and reducing a call's outcome to what does not differ between runs.

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export const within = (promise, ms) => Promise.race([promise, sleep(ms).then(() => 'not within the wait')]);

const textOf = (result) => result.content?.[0]?.text;

/** A call's text, or its error's code and first message line. */
export async function outcome(promise) {
  try {
    return { text: textOf(await promise) };
  } catch (error) {
    return { error: { code: error.code ?? null, message: String(error.message).split('\n')[0] } };
  }
}

/** The server crashes in a call; then one more call. */
export async function crash(client) {
  const before = await outcome(client.callTool({ name: 'pid', arguments: {} }));
  const crashed = await outcome(client.callTool({ name: 'crash', arguments: { code: 3 } }));
  const after = await outcome(client.callTool({ name: 'pid', arguments: {} }));
  return {
    before: before.text !== undefined,
    crash: crashed.error ? { code: crashed.error.code } : crashed,
    after: after.error ? { error: after.error.code } : { new_server: after.text !== before.text },
  };
}

/** `node client.mjs SCENARIO -- COMMAND...`: the scenario and the command. */
export function parseArgs(name, scenarios) {
  const [scenario, separator, command, ...args] = process.argv.slice(2);
  if (!scenarios[scenario] || separator !== '--' || !command) {
    console.error(`usage: ${name} {${Object.keys(scenarios).join(',')}} -- COMMAND...`);
    process.exit(2);
  }
  return { scenario, command, args };
}
