"""An MCP client on the official Python SDK (`mcp`), the legacy era:
`python client.py SCENARIO -- COMMAND...` starts COMMAND over stdio,
plays SCENARIO and prints what it saw as one JSON object, as the
TypeScript clients (client_v1.mjs) do.

Scenario `approve`: one `echo` call, with mcp-bound's approval card
answered as INTEROP_ELICIT says: accept, accept-false, decline, cancel,
error, never (no answer; the card's withdrawal is seen), or none (no
elicitation callback, so none is declared).
"""

import json
import os
import sys

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ELICIT = os.environ.get("INTEROP_ELICIT", "none")
ANSWERS = {
    "accept": types.ElicitResult(action="accept", content={"approve": True}),
    "accept-false": types.ElicitResult(action="accept", content={"approve": False}),
    "decline": types.ElicitResult(action="decline"),
    "cancel": types.ElicitResult(action="cancel"),
}


async def approve(command, args):
    asked = []
    withdrawn = anyio.Event()

    async def answer(context, params):
        seen = {
            "message": params.message,
            "fields": list(params.requested_schema["properties"].keys()),
            "withdrawn": False,
        }
        asked.append(seen)
        if ELICIT == "error":
            return types.ErrorData(code=-32603, message="the interop client fails on purpose")
        if ELICIT == "never":
            try:
                await anyio.sleep_forever()
            finally:
                seen["withdrawn"] = True
                withdrawn.set()
        return ANSWERS[ELICIT]

    callback = None if ELICIT == "none" else answer
    server = StdioServerParameters(command=command, args=args)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, elicitation_callback=callback) as session:
            await session.initialize()
            try:
                result = await session.call_tool("echo", {"text": "approved <b>"})
                call = {"text": result.content[0].text} if not result.is_error else {"error": {"code": None}}
            except Exception as error:  # the SDK raises the JSON-RPC error
                data = getattr(error, "error", None)
                code = getattr(data, "code", None)
                message = str(getattr(data, "message", error)).split("\n")[0]
                call = {"error": {"code": code, "message": message}}
            if ELICIT == "never":
                with anyio.move_on_after(5):
                    await withdrawn.wait()
    return {"call": call, "asked": asked}


def main():
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[0] != "approve" or argv[1] != "--":
        print("usage: client.py approve -- COMMAND...", file=sys.stderr)
        sys.exit(2)
    seen = anyio.run(approve, argv[2], argv[3:])
    print(json.dumps(seen))


main()
