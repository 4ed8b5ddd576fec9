// Preloaded (`node --import ./loopback.mjs …`) into reference servers that
// listen on every interface, so the ones muster's tests start listen on
// 127.0.0.1 only: a `listen(port)` without a host gets 127.0.0.1.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  } else if (args[0] && typeof args[0] === "object" && args[0].host === undefined && args[0].path === undefined) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
