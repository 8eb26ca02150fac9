// A hostile agent in Node (its own HTTP client, its own event loop): a flood of
// $FLOOD requests at once to the model gateway, $HALF_OPEN connections held
// half-open while it asks once more, a body of $BODY_MB MB at each door, and
// refusals of its own written to /_refused. Answers with what each got.
import http from "node:http";
import https from "node:https";
import net from "node:net";
import fs from "node:fs";

const model = new URL(process.env.OPENAI_BASE_URL.replace(/\/$/, ""));
const tools = process.env.HELIXBENCH_TOOLS_URL.replace(/\/$/, "");
const token = process.env.OPENAI_API_KEY;
const FLOOD = Number(process.env.FLOOD || 500);
const HALF_OPEN = Number(process.env.HALF_OPEN || 600);
const BODY_MB = Number(process.env.BODY_MB || 50);
const auth = { Authorization: `Bearer ${token}` };
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

function ask(url, { method = "GET", body = null, headers = {} } = {}) {
  return new Promise((resolve) => {
    const target = new URL(url);
    const client = target.protocol === "https:" ? https : http;
    const options = { method, headers, agent: target.protocol === "https:" ? undefined : agent };
    if (target.protocol === "https:") options.ca = fs.readFileSync(process.env.NODE_EXTRA_CA_CERTS);
    const request = client.request(target, options, (reply) => {
      reply.resume();
      reply.on("end", () => resolve(reply.statusCode));
    });
    request.on("error", (error) => resolve(error.code || String(error)));
    if (body) request.end(body);
    else request.end();
  });
}

async function main() {
  const question = JSON.parse(fs.readFileSync(0, "utf8").split("\n")[0]);
  const models = `${model.origin}${model.pathname}/models`;
  const statuses = {};
  const all = await Promise.all(Array.from({ length: FLOOD }, () => ask(models, { headers: auth })));
  for (const status of all) statuses[status] = (statuses[status] || 0) + 1;
  const held = [];
  for (let i = 0; i < HALF_OPEN; i++) {
    const socket = net.connect(Number(model.port), model.hostname);
    socket.on("error", () => {});
    if (i % 2) socket.write("GET /v1/models HTTP/1.1\r\nHost: x\r\n");
    held.push(socket);
  }
  await new Promise((done) => setTimeout(done, 500));
  const during = await ask(models, { headers: auth });
  for (const socket of held) socket.destroy();
  const body = Buffer.alloc(BODY_MB << 20, 120);
  const bodies = {
    model: await ask(`${model.origin}${model.pathname}/chat/completions`, {
      method: "POST", body, headers: { ...auth, "Content-Type": "application/json" },
    }),
    tools: await ask(`${tools}/entrez/eutils/epost.fcgi`, { method: "POST", body }),
    front: await ask("https://eutils.ncbi.nlm.nih.gov/entrez/eutils/epost.fcgi", {
      method: "POST", body,
    }),
  };
  const forged = {
    tools: await ask(`${tools}/_refused?syscall=forged-node&count=${"9".repeat(4300)}`),
    front: await ask("https://eutils.ncbi.nlm.nih.gov/_refused?name=FORGED-node.example"),
  };
  const report = { id: question.id, replies: all.length, statuses, during, bodies, forged };
  console.log(JSON.stringify({ answer: JSON.stringify(report) }));
}

main();
