"""An MCP server on the official Python SDK (`mcp` 2.x), both eras over
stdio: the tools the interop scenarios need (tests/interop.rs)."""

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("interop-py")


@server.tool()
def echo(text: str) -> str:
    return text


@server.tool()
def pid() -> str:
    return str(os.getpid())


@server.tool()
async def sleep(ms: int) -> str:
    await asyncio.sleep(ms / 1000)
    return f"slept {ms}"


@server.tool()
def crash(code: int) -> str:
    sys.stderr.write("interop server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(code)


@server.tool()
async def change(ctx: Context) -> str:
    """The tool list changes: a listening client is told."""
    await ctx.notify_tools_changed()
    return "changed"


if __name__ == "__main__":
    sys.stderr.write("READY\n")
    sys.stderr.flush()
    server.run("stdio")
