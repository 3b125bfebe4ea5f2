"""The MCP server (``memspool mcp``): memspool's operations as tools an agent can call.

A thin layer over :class:`memspool.service.Service`, built on the official
MCP Python SDK and served over stdio.
"""

from __future__ import annotations

from memspool.mcp.server import build_server, main

__all__ = ["build_server", "main"]
