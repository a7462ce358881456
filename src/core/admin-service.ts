import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { AdminService } from "../gen/switchboard/admin/v1/admin_pb.js";
import { checkAddressLiteral, parseOutboundUrl } from "../providers/webhook/index.js";
import { internStates, type InternState } from "../store/interns.js";
import { sealedPrefix } from "../store/secret-box.js";
import type { Store } from "../store/store.js";
import { catalogueError } from "./error-catalogue.js";
import { characterCount, nulTextPath, shownId } from "./text-rules.js";

const roles = new Set(["org:admin", "org:member"]);
/** Above this a balance no longer fits the credits column (numeric(20,6)); far above any real one. */
const maxCreditsUsd = 1e12;

/** Options for {@link createAdminService}. */
export interface AdminServiceOptions {
  /** Default webhook destinations may be private addresses (`WEBHOOK_ALLOW_PRIVATE`), as video submits may. */
  webhookAllowPrivate?: boolean;
}

/** PostgreSQL text cannot hold NUL: refused by wire name here rather than failing in the store. */
function refuseNul(request: object, context: HandlerContext): void {
  for (const field of context.method.input.fields) {
    const nulAt = nulTextPath((request as Record<string, unknown>)[field.localName], field.name);
    if (nulAt) throw catalogueError("bad_request", `${nulAt} must not contain NUL characters.`);
  }
}

function required(value: string, name: string): string {
  if (!value.trim()) throw catalogueError("bad_request", `${name} is required.`);
  return value;
}

/**
 * A secret the gateway stores: one starting with the sealed mark would be
 * read back as a sealed value while it is kept in clear (PostgreSQL without
 * SECRETS_KEY), and left unsealed once a key is set.
 */
function storableSecret(value: string, name: string): string {
  if (value.startsWith(sealedPrefix)) throw catalogueError("bad_request", `${name} must not start with "${sealedPrefix}".`);
  return value;
}

function internState(value: string): InternState {
  if (!(internStates as readonly string[]).includes(value)) throw catalogueError("bad_request", `state must be one of ${internStates.join(", ")}.`);
  return value as InternState;
}

async function requireOrganization(store: Store, orgId: string): Promise<void> {
  if (!(await store.organizations.exists(required(orgId, "org_id")))) throw catalogueError("not_found", `Organization ${shownId(orgId)} not found.`);
}

/**
 * AdminService: the operator's commands. Every change to what replicas cache
 * (keys, members and their listing pages, programme, interns) is published as
 * a change notice once it is committed, so it holds on this replica at once
 * and on the others as soon as the notice arrives.
 */
export function createAdminService(store: Store, options: AdminServiceOptions = {}): ServiceImpl<typeof AdminService> {
  const service: ServiceImpl<typeof AdminService> = {
    async createOrganization(request) {
      return { id: await store.organizations.create(required(request.name, "name")) };
    },
    async addMember(request) {
      await requireOrganization(store, request.orgId);
      if (!roles.has(request.role)) throw catalogueError("bad_request", "role must be org:admin or org:member.");
      if (!/^[^\s@]+@[^\s@]+$/.test(request.email)) throw catalogueError("bad_request", "email is not an email address.");
      let id: string;
      try {
        id = await store.members.add({ orgId: request.orgId, email: request.email, firstName: request.firstName, lastName: request.lastName, role: request.role });
      } catch (error) {
        if ((error as { code?: string }).code === "23505") throw catalogueError("bad_request", `${shownId(request.email)} is already a member.`);
        throw error;
      }
      await store.changes.publish({ kind: "member", orgId: request.orgId, memberId: id });
      return { id };
    },
    async removeMember(request) {
      if (!(await store.members.remove(required(request.orgId, "org_id"), required(request.memberId, "member_id")))) {
        throw catalogueError("not_found", `No current member ${shownId(request.memberId)} in ${shownId(request.orgId)}.`);
      }
      await store.changes.publish({ kind: "member", orgId: request.orgId, memberId: request.memberId });
      return {};
    },
    async createKey(request) {
      await requireOrganization(store, request.orgId);
      if (!(await store.members.isCurrent(request.orgId, required(request.memberId, "member_id")))) {
        throw catalogueError("not_found", `No current member ${shownId(request.memberId)} in ${shownId(request.orgId)}.`);
      }
      const key = await store.apiKeys.create({ orgId: request.orgId, memberId: request.memberId, management: request.management, grant: request.grant });
      return { id: key.id, key: key.secret };
    },
    async revokeKey(request) {
      if (!(await store.apiKeys.revoke(required(request.id, "id")))) throw catalogueError("not_found", `No live key ${shownId(request.id)}.`);
      await store.changes.publish({ kind: "key", keyId: request.id });
      return {};
    },
    async setProgrammeMembership(request) {
      if (!(await store.organizations.setProgramme(required(request.orgId, "org_id"), request.member))) throw catalogueError("not_found", `Organization ${shownId(request.orgId)} not found.`);
      await store.changes.publish({ kind: "organization", orgId: request.orgId });
      return {};
    },
    async addIntern(request) {
      await requireOrganization(store, request.orgId);
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(request.id)) throw catalogueError("bad_request", "id must be 1 to 128 letters, digits, '.', '_' or '-'.");
      let endpoint: URL;
      try {
        endpoint = new URL(request.endpoint);
      } catch {
        throw catalogueError("bad_request", "endpoint must be an http(s) URL.");
      }
      if (endpoint.protocol !== "http:" && endpoint.protocol !== "https:") throw catalogueError("bad_request", "endpoint must be an http(s) URL.");
      storableSecret(required(request.token, "token"), "token");
      try {
        await store.interns.add({ orgId: request.orgId, id: request.id, endpoint: request.endpoint, hostToken: request.token, state: internState(request.state ?? "provisioned") });
      } catch (error) {
        if ((error as { code?: string }).code === "23505") throw catalogueError("bad_request", `Intern ${request.id} already exists in ${shownId(request.orgId)}.`);
        throw error;
      }
      await store.changes.publish({ kind: "intern", orgId: request.orgId, id: request.id });
      return { id: request.id };
    },
    async setInternState(request) {
      const matched = await store.interns.setState(request.orgId || undefined, required(request.id, "id"), internState(request.state));
      if (matched === 0) throw catalogueError("not_found", `Intern ${shownId(request.id)} not found.`);
      if (matched > 1) throw catalogueError("bad_request", `Intern id ${shownId(request.id)} exists in several organizations: give org_id.`);
      await store.changes.publish({ kind: "intern", ...(request.orgId && { orgId: request.orgId }), id: request.id });
      return {};
    },
    async setCredits(request) {
      if (!Number.isFinite(request.usd) || request.usd < 0 || request.usd > maxCreditsUsd) throw catalogueError("bad_request", `usd must be a number from 0 to ${maxCreditsUsd}.`);
      if (!(await store.organizations.setCredits(required(request.orgId, "org_id"), request.usd))) throw catalogueError("not_found", `Organization ${shownId(request.orgId)} not found.`);
      return {};
    },
    async setWebhookSettings(request) {
      const secret = request.signingSecret;
      const secretCharacters = secret ? characterCount(secret, 256) : 0;
      if (secret && (secretCharacters < 16 || secretCharacters > 256)) throw catalogueError("bad_request", "signing_secret must be 16 to 256 characters.");
      if (secret) storableSecret(secret, "signing_secret");
      if (request.callbackUrl) {
        try {
          // As at video submit: an address written out must be a public one.
          checkAddressLiteral(parseOutboundUrl(request.callbackUrl), { allowPrivate: options.webhookAllowPrivate });
        } catch (error) {
          throw catalogueError("bad_request", `callback_url: ${(error as Error).message}`);
        }
      }
      // An empty string clears a setting; an absent one keeps it.
      const settings = {
        ...(secret !== undefined && { signingSecret: secret || null }),
        ...(request.callbackUrl !== undefined && { callbackUrl: request.callbackUrl || null }),
      };
      if (!(await store.webhookSettings.set(required(request.orgId, "org_id"), settings))) throw catalogueError("not_found", `Organization ${shownId(request.orgId)} not found.`);
      return {};
    },
  };
  return Object.fromEntries(
    Object.entries(service).map(([name, method]) => [
      name,
      (request: object, context: HandlerContext) => {
        refuseNul(request, context);
        return (method as (request: object, context: HandlerContext) => unknown).call(service, request, context);
      },
    ]),
  ) as ServiceImpl<typeof AdminService>;
}
