import { Command } from "commander";
import { registerAdminCommands } from "./admin-command.js";
import { registerInternHostCommand } from "./intern-host-command.js";
import { registerServeCommand } from "./serve-command.js";

/** The `switchboard` command: one sub-command per deployable or operator task. */
const program = new Command("switchboard").description("Switchboard API server, intern host and admin client").showHelpAfterError()
  // `admin --token` (admin token) and `admin intern add --token` (host token) differ.
  .enablePositionalOptions();
registerServeCommand(program);
registerInternHostCommand(program);
registerAdminCommands(program);
await program.parseAsync(process.argv);
