import type { PermissionOptionKind, RequestPermissionRequest, RequestPermissionResponse } from "@agentclientprotocol/sdk/unstable";
import { catalogueError } from "../core/error-catalogue.js";
import { cancelAnswer } from "./run.js";

/** The `arguments` object of a permission interaction, as the spec shows it. */
export interface PermissionArguments {
  kind: "permission";
  operation: string | null;
  options: PermissionOptionKind[];
}

/**
 * Describes a `session/request_permission` for the caller: the tool's
 * programmatic name, else its title (from the request, else from the tool
 * call the agent announced earlier), and the distinct option kinds offered,
 * in the agent's order, since agents offer several options of one kind.
 */
export function describePermission(request: RequestPermissionRequest, announcedTitle: string | undefined): PermissionArguments {
  const kinds: PermissionOptionKind[] = [];
  for (const option of request.options) if (!kinds.includes(option.kind)) kinds.push(option.kind);
  return {
    kind: "permission",
    operation: request.toolCall.name || request.toolCall.title || announcedTitle || null,
    options: kinds,
  };
}

/**
 * Turns the caller's answer into the ACP outcome: the first option of the
 * answered kind. `cancel` is handled by the run (it cancels the turn), and
 * any kind the agent did not offer is `bad_request`.
 */
export function selectPermissionOption(request: RequestPermissionRequest, answer: string): RequestPermissionResponse {
  const option = request.options.find((candidate) => candidate.kind === answer);
  if (!option) {
    const offered = describePermission(request, undefined).options.join(", ");
    throw catalogueError("bad_request", `The answer must be one of the offered kinds (${offered}) or "${cancelAnswer}".`);
  }
  return { outcome: { outcome: "selected", optionId: option.optionId } };
}

/**
 * The host's own answer in self-drive: `allow_once`, else `allow_always` for
 * agents that offer no one-time approval. Undefined when the agent offers no
 * allowing option at all, so the request goes to the caller after all.
 */
export function selfDriveOutcome(request: RequestPermissionRequest): RequestPermissionResponse | undefined {
  const option = request.options.find((candidate) => candidate.kind === "allow_once") ?? request.options.find((candidate) => candidate.kind === "allow_always");
  return option ? { outcome: { outcome: "selected", optionId: option.optionId } } : undefined;
}
