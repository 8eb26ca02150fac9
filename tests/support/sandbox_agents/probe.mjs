// A Node agent: fetch() to NCBI's public URL written into its code, then the canary
// by net.connect and dgram, and a lookup of a foreign name.
import dgram from "node:dgram";
import dns from "node:dns/promises";
import net from "node:net";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const question = JSON.parse(Buffer.concat(chunks).toString());
const canary = Number(process.env.CANARY_PORT);
const reply = await (
  await fetch(`https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term=${question.id}`)
).text();
const connected = await new Promise((done) => {
  const socket = net.connect(canary, "127.0.0.1");
  socket.on("connect", () => done(true));
  socket.on("error", () => done(false));
});
await new Promise((done) => {
  const socket = dgram.createSocket("udp4");
  socket.send("canary", canary, "127.0.0.1", () => { socket.close(); done(); });
});
const resolved = await dns.lookup("canary.example.com").then(() => true, () => false);
console.log(JSON.stringify({ answer: JSON.stringify({ reply, connected, resolved }) }));
