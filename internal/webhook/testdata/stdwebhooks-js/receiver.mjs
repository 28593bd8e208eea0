// A webhook receiver built only on the stock Standard Webhooks verifier (the npm
// package standardwebhooks), for internal/webhook's TestNodeStandardWebhooksReceiver.
// It listens on 127.0.0.1 (a free port, printed as "listening PORT"), answers 204 to
// a POST the verifier accepts and 401 with the verifier's error to any other.
// PUT /secret sets the secret it verifies with (the body: a whsec_ secret, or
// "raw:" + a plain secret for the raw-key form), as a receiver's operator does when
// a secret is rotated. The first secret comes from $SECRET.
import http from "node:http";
import { Webhook } from "standardwebhooks";

function verifier(secret) {
  return secret.startsWith("raw:") ? new Webhook(secret.slice(4), { format: "raw" }) : new Webhook(secret);
}

let wh = verifier(process.env.SECRET);

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    if (req.method === "PUT" && req.url === "/secret") {
      wh = verifier(body.toString());
      res.writeHead(204).end();
      return;
    }
    try {
      wh.verify(body, req.headers);
      res.writeHead(204).end();
    } catch (e) {
      res.writeHead(401, { "Content-Type": "text/plain" }).end(String(e.message));
    }
  });
});

server.listen(0, "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});

// The test closes stdin when it is done (or dies): stop then.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
