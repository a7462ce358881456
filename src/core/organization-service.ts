import type { ServiceImpl } from "@connectrpc/connect";
import { OrganizationService } from "../gen/switchboard/v1/organization_pb.js";
import { callerOf } from "./caller.js";
import { catalogueError } from "./error-catalogue.js";
import type { MemberDirectory } from "./member-directory.js";

/** Default and bounds of member listing pages. */
export const memberPaging = { defaultLimit: 50, maxLimit: 100 } as const;

/** OrganizationService: member listing for management keys. */
export function createOrganizationService(members: MemberDirectory): Partial<ServiceImpl<typeof OrganizationService>> {
  return {
    async listMembers(request, context) {
      const caller = callerOf(context);
      const offset = request.offset ?? 0n;
      const limit = request.limit ?? BigInt(memberPaging.defaultLimit);
      if (offset < 0n) throw catalogueError("bad_request", "offset must be an integer of at least 0.");
      if (limit < 1n || limit > BigInt(memberPaging.maxLimit)) throw catalogueError("bad_request", `limit must be an integer from 1 to ${memberPaging.maxLimit}.`);
      // Any offset past 2^53 is past every organization's last member: the same empty page.
      const skip = offset > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(offset);
      return members.page(caller.orgId, skip, Number(limit));
    },
  };
}
