import type { FastifyInstance } from "fastify";
import { createClient, type Transport } from "@connectrpc/connect";
import { OrganizationService } from "../gen/switchboard/v1/organization_pb.js";
import { catalogueError } from "../core/error-catalogue.js";
import { coreCallOptions } from "./core-call-options.js";
import { sendError } from "./send-error.js";

// Query strings are text; the core wants integers. Only the syntax is checked
// here: the range rules live in the core.
function integerParam(query: Record<string, unknown>, name: string): bigint | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !/^-?\d{1,18}$/.test(value)) throw catalogueError("bad_request", `${name} must be an integer.`);
  return BigInt(value);
}

/** GET /organization/members → OrganizationService.ListMembers. */
export function registerMembersRoute(app: FastifyInstance, transport: Transport): void {
  const client = createClient(OrganizationService, transport);
  app.get("/organization/members", async (request, reply) => {
    try {
      const query = request.query as Record<string, unknown>;
      const response = await client.listMembers(
        { offset: integerParam(query, "offset"), limit: integerParam(query, "limit") },
        coreCallOptions(request),
      );
      return {
        data: response.data.map((member) => ({
          id: member.id,
          email: member.email,
          first_name: member.firstName ?? null,
          last_name: member.lastName ?? null,
          role: member.role,
        })),
        total_count: Number(response.totalCount),
      };
    } catch (error) {
      return sendError(reply, error);
    }
  });
}
