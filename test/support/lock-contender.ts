// A process competing for a data directory lock (forked by test/server/data-dir-lock.test.ts).
// On { dir, at } it spins until `at`, so contenders start together, then tries lockDataDir(dir)
// and answers { ok }; on { hold } it takes the lock and answers once it holds it.
import { lockDataDir } from "../../src/store/data-dir-lock.js";

process.on("message", (message: { dir: string; at: number }) => {
  while (Date.now() < message.at);
  let ok = false;
  try {
    lockDataDir(message.dir);
    ok = true;
  } catch {
    // held by another contender
  }
  process.send!({ ok });
});
process.send!({ ready: true });
