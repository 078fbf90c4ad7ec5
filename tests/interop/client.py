"""An MCP client on the official Python SDK (`mcp`), the legacy era:
`python client.py SCENARIO -- COMMAND...` starts COMMAND over stdio,
plays SCENARIO and prints what it saw as one JSON object, as the
TypeScript clients (client_v1.mjs) do.

Scenario `approve`: one `echo` call, with mcp-bound's approval card
answered as INTEROP_ELICIT says: accept, accept-false, decline, cancel,
error, never (no answer; the card's withdrawal is seen), or none (no
elicitation callback, so none is declared).

In the 2026-07-28 era (the `mcp.Client`, version negotiation `auto`):
`modern` is the same call, its `input_required` rounds driven by the SDK;
`tamper`, `replay` and `expire` drive the rounds by hand, to send back a
changed `requestState`, the same one twice, or one past its deadline.
"""

import json
import os
import sys

import anyio
import mcp_types as types
from mcp.client.client import Client
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


def outcome_of(error):
    data = getattr(error, "error", None)
    code = getattr(data, "code", None)
    message = str(getattr(data, "message", error)).split("\n")[0]
    reason = ((getattr(data, "data", None) or {}).get("mcp_bound") or {}).get("reason")
    return {"error": {"code": code, "message": message, "reason": reason}}


async def modern(command, args):
    asked = []

    async def answer(context, params):
        fields = list(params.requested_schema["properties"].keys())
        asked.append({"message": params.message, "fields": fields, "withdrawn": False})
        if ELICIT == "accept":
            return types.ElicitResult(action="accept", content={"approve": True})
        return ANSWERS[ELICIT]

    server = StdioServerParameters(command=command, args=args)
    async with Client(server, elicitation_callback=answer) as client:
        try:
            result = await client.call_tool("echo", {"text": "approved <b>"})
            call = {"text": result.content[0].text}
        except Exception as error:
            call = outcome_of(error)
    return {"call": call, "asked": asked}


APPROVE = {"mcp-bound-approval": types.ElicitResult(action="accept", content={"approve": True})}


async def by_hand(scenario, command, args):
    """The rounds driven by hand: the first answered input_required, the
    retry's state changed, sent twice, or sent late."""
    server = StdioServerParameters(command=command, args=args)
    rounds = []

    async def unused(context, params):  # declares elicitation; never called
        return types.ElicitResult(action="decline")

    async with Client(server, elicitation_callback=unused) as client:
        session = client.session
        arguments = {"text": "approved <b>"}
        first = await session.call_tool("echo", arguments, allow_input_required=True)
        state = first.request_state
        keys = sorted((first.input_requests or {}).keys())
        rounds.append({"result_type": first.result_type, "keys": keys})
        if scenario == "tamper":
            state = state[:-1] + ("0" if state[-1] != "0" else "1")
        if scenario == "expire":
            # The scenario is the deadline passing: --tool-approval-timeout 1s.
            await anyio.sleep(2)
        tries = 2 if scenario == "replay" else 1
        for _ in range(tries):
            try:
                again = await session.call_tool(
                    "echo", arguments, input_responses=APPROVE, request_state=state, allow_input_required=True
                )
                rounds.append({"text": again.content[0].text})
            except Exception as error:
                rounds.append(outcome_of(error))
    return {"rounds": rounds}


def main():
    argv = sys.argv[1:]
    scenarios = ["approve", "modern", "tamper", "replay", "expire"]
    if len(argv) < 3 or argv[0] not in scenarios or argv[1] != "--":
        print(f"usage: client.py {{{','.join(scenarios)}}} -- COMMAND...", file=sys.stderr)
        sys.exit(2)
    scenario, command, args = argv[0], argv[2], argv[3:]
    if scenario == "approve":
        seen = anyio.run(approve, command, args)
    elif scenario == "modern":
        seen = anyio.run(modern, command, args)
    else:
        seen = anyio.run(by_hand, scenario, command, args)
    print(json.dumps(seen))


main()
