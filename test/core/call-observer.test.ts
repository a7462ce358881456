import { describe, expect, it } from "vitest";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { OrganizationService } from "../../src/gen/switchboard/v1/organization_pb.js";
import { ErrorDetailSchema } from "../../src/gen/switchboard/v1/error_pb.js";
import { createCallObserver, type CallRecord } from "../../src/core/call-observer.js";
import { catalogueError } from "../../src/core/error-catalogue.js";

/** Runs one unary call through the observer whose handler throws `error`; returns what the caller got and what was recorded. */
async function failWith(error: unknown) {
  const records: CallRecord[] = [];
  const observe = createCallObserver({ callEnded: (record) => records.push(record) });
  const method = OrganizationService.method.listMembers;
  const call = observe(async () => {
    throw error;
  });
  const request = { stream: false, method, service: OrganizationService, requestMethod: "POST", url: "/x", signal: new AbortController().signal, header: new Headers(), contextValues: createContextValues(), message: {} };
  const thrown = await call(request as never).then(
    () => undefined,
    (e: unknown) => e as ConnectError,
  );
  return { thrown: thrown!, record: records[0] };
}

describe("the call observer", () => {
  it("turns an unexpected exception into internal with the catalogue detail, withholding its text, and records it for the log", async () => {
    const bug = new TypeError("cannot read properties of undefined (reading 'secret')");
    const { thrown, record } = await failWith(bug);
    expect(thrown).toBeInstanceOf(ConnectError);
    expect(thrown.code).toBe(Code.Internal);
    expect(thrown.rawMessage).toBe("Internal server error.");
    expect(thrown.findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 500, reason: "internal", retryable: true });
    expect(record).toMatchObject({ code: "internal", status: 500, unexpectedError: bug });
  });

  it("gives a runtime refusal without a detail (a deadline) the catalogue's, keeping its code and message", async () => {
    const { thrown, record } = await failWith(new ConnectError("the operation timed out", Code.DeadlineExceeded));
    expect(thrown.code).toBe(Code.DeadlineExceeded);
    expect(thrown.rawMessage).toBe("the operation timed out");
    expect(thrown.findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 504, reason: "timeout" });
    expect(record.unexpectedError).toBeUndefined();
  });

  it("passes a catalogue error through as it is", async () => {
    const refusal = catalogueError("not_found", "Intern x not found.");
    const { thrown, record } = await failWith(refusal);
    expect(thrown).toBe(refusal);
    expect(record).toMatchObject({ code: "not_found", status: 404, reason: "not_found" });
    expect(record.unexpectedError).toBeUndefined();
  });
});
