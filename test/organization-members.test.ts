import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { OrganizationService } from "../src/gen/switchboard/v1/organization_pb.js";
import { ErrorDetailSchema } from "../src/gen/switchboard/v1/error_pb.js";
import { getJson, grpcTransportFor, startTestServer, type TestServer } from "./support/test-server.js";

let t: TestServer;
let otherOrgKey: string;
const url = (query = "") => `${t.httpUrl}/api/v1/organization/members${query}`;

beforeAll(async () => {
  t = await startTestServer();
  const orgId = t.tenant.organization_id;
  // 119 more members, so the tenant has 120 in all; one more who has left.
  for (let i = 1; i < 120; i++) {
    await t.admin.addMember({ orgId, email: `m${i}@example.com`, firstName: `F${i}`, lastName: `L${i}`, role: i % 10 === 0 ? "org:admin" : "org:member" });
  }
  const leaver = await t.admin.addMember({ orgId, email: "gone@example.com", role: "org:member" });
  await t.admin.removeMember({ orgId, memberId: leaver.id });
  const other = await t.admin.createOrganization({ name: "Other" });
  const otherMember = await t.admin.addMember({ orgId: other.id, email: "x@other.example", firstName: "X", lastName: "Y", role: "org:admin" });
  otherOrgKey = (await t.admin.createKey({ orgId: other.id, memberId: otherMember.id, management: true })).key;
});
afterAll(() => t?.close());

describe("GET /api/v1/organization/members", () => {
  it("lists the first 50 members with the total by default", async () => {
    const { status, body } = await getJson(url(), t.tenant.management_key);
    expect(status).toBe(200);
    expect(body.total_count).toBe(120);
    expect(body.data).toHaveLength(50);
    expect(body.data[0]).toEqual({ id: t.tenant.member_id, email: "admin@example.com", first_name: "Dev", last_name: "Admin", role: "org:admin" });
    expect(body.data.map((m: { email: string }) => m.email)).not.toContain("gone@example.com");
  });

  it("pages with offset and limit", async () => {
    const { body } = await getJson(url("?offset=110&limit=100"), t.tenant.management_key);
    expect(body.data).toHaveLength(10);
    expect(body.data[0].email).toBe("m110@example.com");
    expect(body.total_count).toBe(120);
    const past = await getJson(url("?offset=500"), t.tenant.management_key);
    expect(past.body).toEqual({ data: [], total_count: 120 });
  });

  it("renders absent names as null", async () => {
    const o = await t.admin.createOrganization({ name: "Nameless" });
    const m = await t.admin.addMember({ orgId: o.id, email: "n@example.com", role: "org:member" });
    const key = (await t.admin.createKey({ orgId: o.id, memberId: m.id, management: true })).key;
    const { body } = await getJson(url(), key);
    expect(body.data[0]).toEqual({ id: m.id, email: "n@example.com", first_name: null, last_name: null, role: "org:member" });
  });

  it.each([["?offset=-1"], ["?limit=0"], ["?limit=101"], ["?limit=abc"], ["?offset=1.5"], ["?limit=1&limit=2"], ["?offset="]])("refuses %s with 400", async (query) => {
    const { status, body } = await getJson(url(query), t.tenant.management_key);
    expect(status).toBe(400);
    expect(body.error.code).toBe(400);
    expect(body.error.metadata.reason).toBe("bad_request");
    expect(typeof body.error.message).toBe("string");
  });

  it("answers an offset past the last member, up to int64's, with an empty page and the total", async () => {
    for (const offset of ["120", "9007199254740993", "9223372036854775807"]) {
      const { status, body } = await getJson(url(`?offset=${offset}`), t.tenant.management_key);
      expect([status, body]).toEqual([200, { data: [], total_count: 120 }]);
    }
    const beyond = await getJson(url("?offset=9223372036854775808"), t.tenant.management_key);
    expect([beyond.status, beyond.body.error.message]).toEqual([400, "offset must be at most 9223372036854775807."]);
  });

  it("shows a member who joins or leaves at once, though the page was just served from the cache", async () => {
    const o = await t.admin.createOrganization({ name: "Changing" });
    const first = await t.admin.addMember({ orgId: o.id, email: "first@example.com", role: "org:admin" });
    const key = (await t.admin.createKey({ orgId: o.id, memberId: first.id, management: true })).key;
    const emails = async () => ((await getJson(url(), key)).body.data as { email: string }[]).map((member) => member.email);
    expect(await emails()).toEqual(["first@example.com"]);
    expect(await emails()).toEqual(["first@example.com"]);
    const second = await t.admin.addMember({ orgId: o.id, email: "second@example.com", role: "org:member" });
    expect(await emails()).toEqual(["first@example.com", "second@example.com"]);
    await t.admin.removeMember({ orgId: o.id, memberId: second.id });
    expect(await emails()).toEqual(["first@example.com"]);
  });

  it("decides the key before the query: 401 for a missing key, whatever the query holds", async () => {
    const { status, body } = await getJson(url("?limit=abc"));
    expect([status, body.error.metadata]).toEqual([401, undefined]);
  });

  it("only shows the key's own organization", async () => {
    const { body } = await getJson(url(), otherOrgKey);
    expect(body.total_count).toBe(1);
    expect(body.data[0].email).toBe("x@other.example");
  });

  it("refuses a missing or invalid key with 401 and no metadata", async () => {
    for (const key of [undefined, "sb-v1-not-a-key"]) {
      const { status, body } = await getJson(url(), key);
      expect(status).toBe(401);
      expect(body).toEqual({ error: { code: 401, message: expect.stringMatching(/Authentication header is missing/) } });
    }
  });

  it("refuses a standard key: management keys only", async () => {
    const { status, body } = await getJson(url(), t.tenant.api_key);
    expect(status).toBe(401);
    expect(body.error.metadata.reason).toBe("management_key_required");
  });

  it("refuses a revoked key at once", async () => {
    const created = await t.admin.createKey({ orgId: t.tenant.organization_id, memberId: t.tenant.member_id, management: true });
    expect((await getJson(url(), created.key)).status).toBe(200);
    await t.admin.revokeKey({ id: created.id });
    expect((await getJson(url(), created.key)).status).toBe(401);
  });
});

describe("OrganizationService over Connect and gRPC", () => {
  it("answers over the Connect protocol on the HTTP/1.1 listener", async () => {
    const transport = createConnectTransport({
      baseUrl: t.httpUrl,
      httpVersion: "1.1",
      interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${t.tenant.management_key}`), next(req))],
    });
    const response = await createClient(OrganizationService, transport).listMembers({ limit: 2n });
    expect(response.data).toHaveLength(2);
    expect(response.totalCount).toBe(120n);
  });

  it("answers over gRPC (HTTP/2) with the same refusals and error detail", async () => {
    const client = createClient(OrganizationService, grpcTransportFor(t.grpcUrl, t.tenant.management_key));
    expect((await client.listMembers({ offset: 119n })).data).toHaveLength(1);
    const error = await client.listMembers({ limit: 0n }).catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    const detail = (error as ConnectError).findDetails(ErrorDetailSchema)[0];
    expect(detail).toMatchObject({ httpStatus: 400, reason: "bad_request", retryable: false });
  });

  it("serves a polyglot client built from proto/ with @grpc/grpc-js", async () => {
    const definition = protoLoader.loadSync("switchboard/v1/organization.proto", { includeDirs: [join(import.meta.dirname, "../proto")], keepCase: true, longs: Number, defaults: false });
    const loaded = grpc.loadPackageDefinition(definition) as any;
    const client = new loaded.switchboard.v1.OrganizationService(new URL(t.grpcUrl).host, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", `Bearer ${t.tenant.management_key}`);
      const response: any = await new Promise((resolve, reject) => client.listMembers({ limit: 3 }, metadata, (error: Error | null, value: unknown) => (error ? reject(error) : resolve(value))));
      expect(response.data).toHaveLength(3);
      expect(response.total_count).toBe(120);
      const refused: any = await new Promise((resolve) => client.listMembers({}, new grpc.Metadata(), (error: unknown) => resolve(error)));
      expect(refused.code).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      client.close();
    }
  });
});
