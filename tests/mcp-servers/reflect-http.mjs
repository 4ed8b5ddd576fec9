// A Streamable HTTP "server" that refuses every request with 400 and a body
// echoing the Authorization header it was sent, as a misconfigured proxy
// would: muster must not pass that body on with the credential in it.
// Prints its port on stdout, then serves until killed.
import { createServer } from "node:http";

const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(400, { "content-type": "text/plain" });
    res.end(`bad request: authorization ${req.headers.authorization} is not accepted`);
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${server.address().port}\n`);
});
