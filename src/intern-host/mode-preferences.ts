import type { SessionModeState } from "@agentclientprotocol/sdk/unstable";

/** The two approval modes of the public API; a run keeps the one it started with. */
export type ApprovalMode = "manual" | "self-drive";

/** Ordered ACP mode ids to look for, per approval mode. */
export interface ModePreferences {
  readonly selfDrive: readonly string[];
  readonly manual: readonly string[];
}

/**
 * Mode ids of the agents we know, most wanted first (DESIGN §4): self-drive
 * takes the most permissive mode (claude `bypassPermissions`, codex
 * `agent-full-access`/`full-access`, gemini `yolo`), manual the asking mode
 * with the sandbox on (claude and gemini `default`, codex `workspace-write`,
 * then `auto` and `read-only`). The reference agent offers `default` and
 * `bypassPermissions`.
 */
export const defaultModePreferences: ModePreferences = {
  selfDrive: ["bypassPermissions", "agent-full-access", "full-access", "yolo"],
  manual: ["default", "workspace-write", "auto", "read-only"],
};

/**
 * Picks the agent's mode for a run: the first preferred id the agent
 * advertises, or undefined when it advertises none of them (the session then
 * keeps whatever mode it is in).
 */
export function chooseSessionMode(modes: SessionModeState | null | undefined, approvalMode: ApprovalMode, preferences: ModePreferences): string | undefined {
  if (!modes) return undefined;
  const offered = new Set(modes.availableModes.map((mode) => mode.id));
  const wanted = approvalMode === "self-drive" ? preferences.selfDrive : preferences.manual;
  return wanted.find((id) => offered.has(id));
}
