export { startInternHost, type InternHostOptions, type RunningInternHost } from "./intern-host.js";
export { createInternHostRoutes, type InternHostRoutes } from "./intern-host-routes.js";
export { hostDefaults, type HostLogger, type InternHostRoutesOptions } from "./host-options.js";
export { defaultModePreferences, type ApprovalMode, type ModePreferences } from "./mode-preferences.js";
export { referenceAgentCommand, type ReferenceAgentCommandOptions } from "./reference-agent/reference-agent-command.js";
