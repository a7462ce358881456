import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema } from "../src/gen/switchboard/v1/error_pb.js";
import { startTestServer, type TestServer } from "./support/test-server.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

async function refusalOf(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  if (!error) throw new Error("expected a refusal");
  return { message: error.rawMessage, detail: error.findDetails(ErrorDetailSchema)[0] };
}

describe("AdminService refusals", () => {
  it("refuse a NUL character by field name, with a 400, instead of failing in the store", async () => {
    expect(await refusalOf(t.admin.createOrganization({ name: "Acme\u0000" }))).toMatchObject({ message: "name must not contain NUL characters.", detail: { httpStatus: 400, reason: "bad_request" } });
    const orgId = t.tenant.organization_id;
    expect(await refusalOf(t.admin.addMember({ orgId, email: "a\u0000@example.com", role: "org:member" }))).toMatchObject({ message: "email must not contain NUL characters." });
    expect(await refusalOf(t.admin.setWebhookSettings({ orgId, signingSecret: "0123456789abcdef\u0000" }))).toMatchObject({ message: "signing_secret must not contain NUL characters." });
  });

  it("refuse a credit balance the store cannot hold", async () => {
    expect(await refusalOf(t.admin.setCredits({ orgId: t.tenant.organization_id, usd: 1e14 }))).toMatchObject({ detail: { httpStatus: 400, reason: "bad_request" } });
    await t.admin.setCredits({ orgId: t.tenant.organization_id, usd: 1e12 });
    await t.admin.setCredits({ orgId: t.tenant.organization_id, usd: 10 });
  });

  it("refuse a default webhook destination written as a non-public address, as video submits do", async () => {
    const refused = await refusalOf(t.admin.setWebhookSettings({ orgId: t.tenant.organization_id, callbackUrl: "https://127.0.0.1/hook" }));
    expect(refused).toMatchObject({ detail: { httpStatus: 400, reason: "bad_request" } });
    expect(refused.message).toMatch(/^callback_url: .*non-public address/);
    await t.admin.setWebhookSettings({ orgId: t.tenant.organization_id, callbackUrl: "https://hooks.example.com/switchboard" });
  });

  it("count a signing secret in characters, not UTF-16 units", async () => {
    await t.admin.setWebhookSettings({ orgId: t.tenant.organization_id, signingSecret: "🔑".repeat(200) });
    expect(await refusalOf(t.admin.setWebhookSettings({ orgId: t.tenant.organization_id, signingSecret: "🔑".repeat(257) }))).toMatchObject({ message: "signing_secret must be 16 to 256 characters." });
    await t.admin.setWebhookSettings({ orgId: t.tenant.organization_id, signingSecret: "" });
  });

  it("refuse a host token or signing secret that would read back as a sealed value", async () => {
    const orgId = t.tenant.organization_id;
    expect(await refusalOf(t.admin.addIntern({ orgId, id: "sealed-looking", endpoint: "http://127.0.0.1:9", token: "sbx1:abcdef" }))).toMatchObject({
      message: 'token must not start with "sbx1:".',
      detail: { httpStatus: 400, reason: "bad_request" },
    });
    expect(await refusalOf(t.admin.setWebhookSettings({ orgId, signingSecret: "sbx1:0123456789abcdef" }))).toMatchObject({ message: 'signing_secret must not start with "sbx1:".' });
    // Refused, so nothing was stored: the id is still free.
    await t.admin.addIntern({ orgId, id: "sealed-looking", endpoint: "http://127.0.0.1:9", token: "a-plain-token" });
  });

  it("repeat a huge id only in part, so the status message stays small", async () => {
    const refused = await refusalOf(t.admin.revokeKey({ id: "k".repeat(200_000) }));
    expect(refused.detail).toMatchObject({ httpStatus: 404, reason: "not_found" });
    expect(refused.message).toBe(`No live key ${"k".repeat(128)}….`);
  });
});
