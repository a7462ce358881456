import type { FastifyInstance, FastifyRequest } from "fastify";
import { createClient, type Transport } from "@connectrpc/connect";
import { OrganizationService } from "../gen/switchboard/v1/organization_pb.js";
import { coreCallOptions } from "./core-call-options.js";
import { bridgeRefusal, refuse } from "./bridge-refusal.js";
import { openApiSchema } from "./openapi-schemas.js";

const int64Max = 2n ** 63n - 1n;

// Query strings are text; the core wants integers (int64 on the wire). Only
// the syntax and what int64 holds are checked here: the range rules live in
// the core (a negative one is refused there).
function integerParam(query: Record<string, unknown>, name: string): bigint | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !/^-?\d{1,19}$/.test(value)) throw bridgeRefusal(`${name} must be an integer.`);
  const integer = BigInt(value);
  if (integer > int64Max) throw bridgeRefusal(`${name} must be at most ${int64Max}.`);
  return integer;
}

/** GET /organization/members → OrganizationService.ListMembers. */
export function registerMembersRoute(app: FastifyInstance, transport: Transport): void {
  const client = createClient(OrganizationService, transport);
  const accessProbe = (request: FastifyRequest) => client.listMembers({}, coreCallOptions(request));
  app.get("/organization/members", { config: { accessProbe }, schema: { response: { 200: openApiSchema("MemberList") } } }, async (request, reply) => {
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
      return refuse(request, reply, error);
    }
  });
}
