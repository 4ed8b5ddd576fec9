"""Points the official MCP Python SDK's own OAuth flow at muster's `/mcp`
under `[auth]`: its client-credentials provider meets the 401, follows
`resource_metadata` to muster's protected resource metadata, discovers the
authorization server named there, gets a token for the resource and lists
the tools. Prints what it saw as one JSON object for tests/auth.rs to judge;
it asserts nothing itself.

Usage: oauth.py URL ISSUER CLIENT_ID SCOPE   (the secret is CLIENT_ID-secret)
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client


class Memory:
    """Tokens and client information kept for one run."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


async def main():
    url, issuer, client_id, scope = sys.argv[1:5]
    storage = Memory()
    provider = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=client_id,
        client_secret=f"{client_id}-secret",
        scope=scope,
        issuer=issuer,
    )
    async with httpx2.AsyncClient(auth=provider) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            listed = await client.list_tools()
            seen = {
                "tools": sorted(t.name for t in listed.tools),
                "token_type": storage.tokens.token_type if storage.tokens else None,
                "scope": storage.tokens.scope if storage.tokens else None,
            }
    print(json.dumps(seen))


asyncio.run(main())
