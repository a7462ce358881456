import { afterEach, describe, expect, it } from "vitest";
import { fork, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DataDirLockedError, lockDataDir } from "../../src/store/data-dir-lock.js";
import { temporaryDirectories } from "../support/temporary-directories.js";

const hasProc = existsSync("/proc/self/stat") && existsSync("/proc/sys/kernel/random/boot_id");
const dirs = temporaryDirectories("switchboard-lock-");
const dataDir = dirs.make;
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  dirs.removeAll();
});

function sleeper(): ChildProcess {
  const child = spawn("sleep", ["30"]);
  children.push(child);
  return child;
}

/** Field 22 of /proc/<pid>/stat: when the process started, in ticks since boot. */
function startTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
}

const bootId = () => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();

describe("embedded data directory lock", () => {
  it("takes over a lock left with this process's own PID (a container restarted as PID 1)", () => {
    const dir = dataDir();
    writeFileSync(join(dir, "switchboard.lock"), String(process.pid));
    const release = lockDataDir(dir);
    expect(readFileSync(join(dir, "switchboard.lock"), "utf8").split("\n")[0]).toBe(String(process.pid));
    release();
    expect(existsSync(join(dir, "switchboard.lock"))).toBe(false);
  });

  it("still refuses a second lock of a directory this process holds, until released", () => {
    const dir = dataDir();
    const release = lockDataDir(dir);
    expect(() => lockDataDir(dir)).toThrow(DataDirLockedError);
    release();
    lockDataDir(dir)();
  });

  it.runIf(hasProc)("takes over a lock whose PID another process reuses (it started later, or in another boot)", () => {
    const dir = dataDir();
    const reuser = sleeper();
    const started = Number(startTime(reuser.pid!));
    writeFileSync(join(dir, "switchboard.lock"), `${reuser.pid}\n${bootId()}\n${started - 1}\n`);
    lockDataDir(dir)();
    writeFileSync(join(dir, "switchboard.lock"), `${reuser.pid}\n00000000-0000-0000-0000-000000000000\n${started}\n`);
    lockDataDir(dir)();
  });

  it.runIf(hasProc)("refuses a lock whose holder is the very process that wrote it", () => {
    const dir = dataDir();
    const holder = sleeper();
    writeFileSync(join(dir, "switchboard.lock"), `${holder.pid}\n${bootId()}\n${startTime(holder.pid!)}\n`);
    expect(() => lockDataDir(dir)).toThrow(new RegExp(`in use by process ${holder.pid}\\.`));
  });

  it("reads a lock file of an older version (the PID alone)", () => {
    const dir = dataDir();
    const holder = sleeper();
    writeFileSync(join(dir, "switchboard.lock"), String(holder.pid));
    expect(() => lockDataDir(dir)).toThrow(DataDirLockedError);
  });

  it("breaks a takeover guard left behind by a crash", () => {
    const dir = dataDir();
    const guard = join(dir, "switchboard.lock.guard");
    mkdirSync(guard);
    const longAgo = new Date(Date.now() - 60_000);
    utimesSync(guard, longAgo, longAgo);
    lockDataDir(dir)();
    expect(existsSync(guard)).toBe(false);
  });

  it("gives a stale lock to exactly one of several processes starting together", { timeout: 60_000 }, async () => {
    const dir = dataDir();
    const contenders = [0, 1, 2, 3].map(() => fork(join(import.meta.dirname, "../support/lock-contender.ts"), [], { execArgv: ["--import", "tsx"] }));
    children.push(...contenders);
    await Promise.all(contenders.map((child) => new Promise((resolve) => child.once("message", resolve))));
    const holders: number[] = [];
    for (let round = 0; round < 150; round++) {
      // Left by a process that died: no such PID runs.
      writeFileSync(join(dir, "switchboard.lock"), "2147483");
      const at = Date.now() + 20;
      const answers = await Promise.all(
        contenders.map((child) => new Promise<{ ok: boolean }>((resolve) => {
          child.once("message", resolve);
          child.send({ dir, at });
        })),
      );
      holders.push(answers.filter((answer) => answer.ok).length);
    }
    expect(holders.filter((count) => count !== 1)).toEqual([]);
  });
});
