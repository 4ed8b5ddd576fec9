"""An HTTP MCP server that checks OAuth access tokens, for
tests/upstream_oauth.rs: the official MCP Python SDK's server (`MCPServer`)
as a resource server, with the SDK's bearer middleware and a token verifier
that checks the JWT's signature against the issuer's JWKS (PyJWT), its
`iss`, its `aud` (this server's URL, RFC 8707) and its expiry, and the
`memory:read` scope (the SDK's `required_scopes`). Its `whoami` tool answers
the token's client id; `echo_token` answers the token itself, as a careless
server might (muster redacts it).

`POST /revoke` (an admin route, open like the SDK's custom routes) revokes
every token seen so far, as an authorization server's revocation would:
the next request with one is refused 401. Each token accepted is appended
to DIR/accepted.txt and each refusal to DIR/refused.txt, so the test can
look for them in muster's log and answers.

Usage: oauth_upstream.py PORT ISSUER DIR   (listens on 127.0.0.1:PORT/mcp)
"""

import sys
from pathlib import Path

import jwt
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

port, issuer, out = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
resource = f"http://127.0.0.1:{port}/mcp"
keys = jwt.PyJWKClient(f"{issuer}/jwks", cache_keys=False)
seen: set[str] = set()
revoked: set[str] = set()


def note(name: str, token: str) -> None:
    with open(out / name, "a") as f:
        f.write(token + "\n")


class JwtVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        if token in revoked:
            note("refused.txt", token)
            return None
        try:
            key = keys.get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=["ES256", "RS256"],
                audience=resource,
                issuer=issuer,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            note("refused.txt", token)
            return None
        seen.add(token)
        note("accepted.txt", token)
        return AccessToken(
            token=token,
            client_id=claims.get("client_id", ""),
            scopes=claims.get("scope", "").split(),
            expires_at=claims.get("exp"),
            resource=resource,
            subject=claims.get("sub"),
        )


server = MCPServer(
    "notes",
    log_level="WARNING",
    token_verifier=JwtVerifier(),
    auth=AuthSettings(
        issuer_url=issuer,
        resource_server_url=resource,
        required_scopes=["memory:read"],
        validate_token_resource=True,
    ),
)


@server.tool(description="The OAuth client the caller's access token was issued to.")
def whoami() -> str:
    token = get_access_token()
    return token.client_id if token else "nobody"


@server.tool(description="Echoes the caller's access token, as a careless server might.")
def echo_token() -> str:
    token = get_access_token()
    return f"your token is {token.token}" if token else "none"


@server.custom_route("/revoke", methods=["POST"])
async def revoke(request: Request) -> JSONResponse:
    revoked.update(seen)
    return JSONResponse({"revoked": len(revoked)})


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=port)
