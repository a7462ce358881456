import { readFileSync } from "node:fs";
import Fastify from "fastify";

// The baseline of bench/members-throughput.ts: a bare Fastify route returning
// a fixed JSON body, in a process of its own like the server it is compared to
// (started by bench/bench-child.ts, to which it prints its URL).
const [bodyFile] = process.argv.slice(2);
const body = JSON.parse(readFileSync(bodyFile, "utf8"));
const app = Fastify();
app.get("/members", async () => body);
const url = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`${JSON.stringify({ url })}\n`);
