// Preload: SIGKILLs this process as it is about to write (KILL_AT=write) or rename into place
// (KILL_AT=rename) a file whose name ends with $KILL_AT_FILE: a crash at exactly that point.
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";

const name = process.env.KILL_AT === "rename" ? "renameSync" : "writeFileSync";
const original = fs[name];
fs[name] = function (...args) {
  if (String(args[name === "renameSync" ? 1 : 0]).endsWith(process.env.KILL_AT_FILE ?? "\0")) process.kill(process.pid, "SIGKILL");
  return original.apply(this, args);
};
syncBuiltinESMExports();
