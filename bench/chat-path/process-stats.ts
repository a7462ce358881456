import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const ticksPerSecond = 100;

/** Resident memory of a process from /proc (Linux), in bytes; null when it is gone or /proc is missing. */
export interface ProcessRss {
  /** VmRSS: everything resident. */
  rss: number;
  /** RssAnon: resident anonymous memory (heaps, stacks), without mapped files such as code. */
  rssAnon: number;
}

/** Reads VmRSS and RssAnon of `pid` from /proc/PID/status. */
export function readRss(pid: number): ProcessRss | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kib("VmRSS"), rssAnon: kib("RssAnon") };
  } catch {
    return null;
  }
}

/** User + system CPU time of `pid` in milliseconds, from /proc/PID/stat; null when unavailable. */
export function readCpuMs(pid: number): number | null {
  try {
    // The command name may hold spaces; the fields after it are fixed.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
  } catch {
    return null;
  }
}

/** Pids whose parent is `pid`, from /proc (children of every thread). */
export function childPidsOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((task) => {
      try {
        return readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number);
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

/** Whether `pid` is alive (and not a zombie). */
export function isAlive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1][0] !== "Z";
  } catch {
    return false;
  }
}
