import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** What a shell command did. */
export interface ShellResult {
  exitCode: number | null;
  /** stdout and stderr interleaved, cut at {@link maxOutputBytes}. */
  output: string;
  /** The sandbox, not the command, most likely stopped it (read-only file system, no network, EPERM). */
  deniedBySandbox: boolean;
}

/** Options for {@link runShellCommand}. */
export interface ShellOptions {
  readonly cwd: string;
  /** Path of bwrap to confine the command with; undefined runs it unsandboxed. */
  readonly sandbox: string | undefined;
  /** Directories the sandbox shows empty (an empty tmpfs over each), so their files cannot even be read. */
  readonly hidden?: readonly string[];
  readonly signal: AbortSignal;
}

const maxOutputBytes = 64 * 1024;
const commandTimeoutMs = 60_000;
const sandboxDenial = /read-only file system|network is unreachable|temporary failure in name resolution|could not resolve host|operation not permitted|permission denied/i;

/** Whether commands can be sandboxed here: the bwrap to use, or why not, in words for the caller. */
export type SandboxAvailability = { bubblewrap: string } | { unavailable: string };

/**
 * Finds a working bwrap: the operator's path when given, else on PATH, then
 * proves it can build a sandbox here (it needs user namespaces, which some
 * kernels and containers forbid). Manual mode refuses to run commands
 * without one rather than pretend to sandbox them.
 */
export function checkSandbox(explicit: string | undefined): SandboxAvailability {
  const bubblewrap =
    explicit !== undefined
      ? isExecutable(explicit)
        ? explicit
        : undefined
      : (process.env.PATH ?? "")
          .split(delimiter)
          .filter(Boolean)
          .map((dir) => join(dir, "bwrap"))
          .find(isExecutable);
  if (!bubblewrap) return { unavailable: "bubblewrap (bwrap) is not installed on this machine" };
  const probe = spawnSync(bubblewrap, [...sandboxArguments("/"), "true"], { stdio: "ignore", timeout: 5_000 });
  if (probe.status !== 0) return { unavailable: "bubblewrap (bwrap) cannot create a sandbox on this machine (user namespaces are not allowed)" };
  return { bubblewrap };
}

/**
 * bwrap's arguments: the whole file system read-only, `hidden` directories
 * empty, `cwd` writable (mounted last, so it shows even inside a hidden one),
 * private /dev and /proc, no network, no outliving the agent.
 */
function sandboxArguments(cwd: string, hidden: readonly string[] = []): string[] {
  return [
    ...["--ro-bind", "/", "/"],
    ...hidden.flatMap((dir) => ["--tmpfs", dir]),
    ...["--dev", "/dev", "--proc", "/proc", "--bind", cwd, cwd, "--chdir", cwd, "--unshare-all", "--die-with-parent", "--new-session", "--"],
  ];
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs a command with /bin/sh, for real. Sandboxed, bubblewrap gives it a
 * read-only view of the whole file system except the working directory, its
 * own /dev and /proc, and no network; it dies with the agent. The command is
 * killed when `signal` aborts or after 60 s.
 */
export function runShellCommand(command: string, options: ShellOptions): Promise<ShellResult> {
  const shell = ["/bin/sh", "-c", command];
  const argv = options.sandbox ? [options.sandbox, ...sandboxArguments(options.cwd, options.hidden), ...shell] : shell;
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const collect = (chunk: Buffer) => {
      if (output.length < maxOutputBytes) output += chunk.toString("utf8").slice(0, maxOutputBytes - output.length);
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    const kill = () => child.kill("SIGKILL");
    const timer = setTimeout(kill, commandTimeoutMs);
    options.signal.addEventListener("abort", kill, { once: true });
    const finish = (exitCode: number | null) => {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", kill);
      resolve({ exitCode, output, deniedBySandbox: options.sandbox !== undefined && exitCode !== 0 && sandboxDenial.test(output) });
    };
    child.once("error", (error) => {
      output += error.message;
      finish(null);
    });
    child.once("close", (code) => finish(code));
  });
}
