import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { createClient, ConnectError } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AdminService } from "../gen/switchboard/admin/v1/admin_pb.js";
import { describeError } from "../core/error-catalogue.js";
import { ErrorDetailSchema } from "../gen/switchboard/v1/error_pb.js";
import { errorEnvelope } from "../bridge/error-envelope.js";
import { adminTokenPath } from "../server/admin-token.js";

interface Connection {
  server: string;
  token?: string;
}

function adminClient(connection: Connection) {
  const token = connection.token ?? process.env.ADMIN_TOKEN ?? readToken();
  const transport = createConnectTransport({
    baseUrl: connection.server,
    httpVersion: "1.1",
    interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))],
  });
  return createClient(AdminService, transport);
}

function readToken(): string {
  const path = adminTokenPath(resolve(process.env.DATA_DIR || "./data"));
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    throw new Error(`No admin token: pass --token, set ADMIN_TOKEN, or run from the server's directory (${path}).`);
  }
}

function usd(value: string): number {
  // Decimal digits only: Number() would read "" as 0 and take "0x10" or "1e3".
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(value)) throw new InvalidArgumentError("must be a non-negative decimal number, such as 12.50");
  const amount = Number(value);
  if (!Number.isFinite(amount)) throw new InvalidArgumentError("must be a non-negative decimal number, such as 12.50");
  return amount;
}

/**
 * The server's own refusals carry the catalogue's detail and print as its
 * envelope; anything else failed on the way (a wrong port or scheme, not a
 * Switchboard server) and prints its cause, never as the server's 500.
 */
function failureEnvelope(error: unknown, server: string): object {
  if (error instanceof ConnectError && error.findDetails(ErrorDetailSchema).length > 0) return errorEnvelope(describeError(error));
  const cause = error instanceof ConnectError ? error.rawMessage : (error as Error).message;
  return { error: { message: error instanceof ConnectError ? `No answer from AdminService at ${server}: ${cause}` : cause } };
}

function serverUrl(value: string): string {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) throw new InvalidArgumentError("must be an http:// or https:// URL");
  return value;
}

/** Runs one admin call and prints its JSON result (or error envelope, exit 1). */
async function run(command: Command, call: (client: ReturnType<typeof adminClient>) => Promise<object>): Promise<void> {
  // The admin-level options, not the sub-command's: `intern add` has a --token of its own.
  let adminCommand: Command | null = command;
  while (adminCommand && adminCommand.name() !== "admin") adminCommand = adminCommand.parent;
  const connection = (adminCommand?.opts() ?? {}) as Connection;
  try {
    process.stdout.write(JSON.stringify(await call(adminClient(connection))) + "\n");
  } catch (error) {
    process.stderr.write(JSON.stringify(failureEnvelope(error, connection.server)) + "\n");
    process.exitCode = 1;
  }
}

/** `switchboard admin …`: clients of AdminService on a running server (DESIGN §2). */
export function registerAdminCommands(program: Command): void {
  const admin = program
    .command("admin")
    .description("operator commands, sent to a running server's AdminService")
    .option("--server <url>", "server base URL (its HTTP/1.1 PORT)", serverUrl, "http://127.0.0.1:8080")
    .option("--token <token>", "admin token (default: ADMIN_TOKEN or DATA_DIR/admin-token)");

  const org = admin.command("org").description("organizations");
  org
    .command("create")
    .requiredOption("--name <name>")
    .action(async (o, c: Command) => run(c, async (client) => ({ id: (await client.createOrganization({ name: o.name })).id })));

  const member = admin.command("member").description("members");
  member
    .command("add")
    .requiredOption("--org <org>")
    .requiredOption("--email <email>")
    .requiredOption("--first-name <first>")
    .requiredOption("--last-name <last>")
    .requiredOption("--role <role>", "org:admin or org:member")
    .action(async (o, c: Command) =>
      run(c, async (client) => ({
        id: (await client.addMember({ orgId: o.org, email: o.email, firstName: o.firstName, lastName: o.lastName, role: o.role })).id,
      })),
    );
  member
    .command("remove")
    .description("mark a member as having left the organization")
    .requiredOption("--org <org>")
    .requiredOption("--member <id>")
    .action(async (o, c: Command) => run(c, async (client) => (await client.removeMember({ orgId: o.org, memberId: o.member }), {})));

  const key = admin.command("key").description("API keys");
  key
    .command("create")
    .requiredOption("--org <org>")
    .requiredOption("--member <id>")
    .option("--management", "a management key")
    .option("--grant", "keeps working after its creator leaves")
    .action(async (o, c: Command) =>
      run(c, async (client) => {
        const created = await client.createKey({ orgId: o.org, memberId: o.member, management: Boolean(o.management), grant: Boolean(o.grant) });
        return { id: created.id, key: created.key };
      }),
    );
  key
    .command("revoke")
    .requiredOption("--id <id>")
    .action(async (o, c: Command) => run(c, async (client) => (await client.revokeKey({ id: o.id }), {})));

  const programme = admin.command("programme").description("interns programme membership");
  for (const [name, joined] of [
    ["join", true],
    ["leave", false],
  ] as const) {
    programme
      .command(name)
      .requiredOption("--org <org>")
      .action(async (o, c: Command) => run(c, async (client) => (await client.setProgrammeMembership({ orgId: o.org, member: joined }), {})));
  }

  const intern = admin.command("intern").description("interns");
  intern
    .command("add")
    .requiredOption("--org <org>")
    .requiredOption("--id <id>")
    .requiredOption("--endpoint <url>", "intern host base URL")
    .requiredOption("--token <secret>", "intern host token")
    .option("--state <state>", "provisioned, suspended or running", "provisioned")
    .action(async (o, c: Command) =>
      run(c, async (client) => ({ id: (await client.addIntern({ orgId: o.org, id: o.id, endpoint: o.endpoint, token: o.token, state: o.state })).id })),
    );
  intern
    .command("state")
    .requiredOption("--id <id>")
    .requiredOption("--state <state>", "provisioned, suspended or running")
    .option("--org <org>", "organization, when the id exists in several")
    .action(async (o, c: Command) => run(c, async (client) => (await client.setInternState({ orgId: o.org ?? "", id: o.id, state: o.state }), {})));

  admin
    .command("credits")
    .command("set")
    .requiredOption("--org <org>")
    .requiredOption("--usd <amount>", "balance in USD", usd)
    .action(async (o, c: Command) => run(c, async (client) => (await client.setCredits({ orgId: o.org, usd: o.usd }), {})));

  admin
    .command("webhook")
    .description("video webhooks")
    .command("set")
    .description("set the signing secret and default callback URL (an empty value clears one)")
    .requiredOption("--org <org>")
    .option("--secret <secret>", "HMAC-SHA256 signing secret, 16 to 256 characters")
    .option("--callback-url <url>", "HTTPS URL for jobs submitted without callback_url")
    .action(async (o, c: Command) =>
      run(c, async (client) => (await client.setWebhookSettings({ orgId: o.org, signingSecret: o.secret, callbackUrl: o.callbackUrl }), {})),
    );
}
