import type { ServiceImpl } from "@connectrpc/connect";
import { toBinary, type DescFile, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { ServerReflection, type ServerReflectionRequest, type ServerReflectionResponseSchema } from "../gen/grpc/reflection/v1/reflection_pb.js";

/**
 * grpc.reflection.v1 over the files the server was built from, so `buf curl`
 * and grpcurl can discover and call every service without local protos.
 */
export function createReflectionService(files: readonly DescFile[], serviceNames: readonly string[]): ServiceImpl<typeof ServerReflection> {
  const byName = new Map<string, DescFile>();
  const bySymbol = new Map<string, DescFile>();
  const visit = (file: DescFile) => {
    if (byName.has(file.proto.name)) return;
    byName.set(file.proto.name, file);
    for (const dependency of file.dependencies) visit(dependency);
    for (const type of [...file.messages, ...file.enums, ...file.services, ...file.extensions]) bySymbol.set(type.typeName, file);
    for (const service of file.services) for (const method of service.methods) bySymbol.set(`${service.typeName}.${method.name}`, file);
    const nested = (messages: DescFile["messages"]) => {
      for (const message of messages) {
        bySymbol.set(message.typeName, file);
        for (const inner of message.nestedEnums) bySymbol.set(inner.typeName, file);
        nested(message.nestedMessages);
      }
    };
    nested(file.messages);
  };
  files.forEach(visit);

  // A file and everything it imports, each once, the requested file first.
  const withDependencies = (file: DescFile): Uint8Array[] => {
    const seen = new Set<string>();
    const out: Uint8Array[] = [];
    const add = (f: DescFile) => {
      if (seen.has(f.proto.name)) return;
      seen.add(f.proto.name);
      out.push(toBinary(FileDescriptorProtoSchema, f.proto));
      f.dependencies.forEach(add);
    };
    add(file);
    return out;
  };

  const answer = (request: ServerReflectionRequest): MessageInitShape<typeof ServerReflectionResponseSchema>["messageResponse"] => {
    const notFound = (what: string) => ({ case: "errorResponse" as const, value: { errorCode: 5, errorMessage: `${what} not found` } });
    switch (request.messageRequest.case) {
      case "listServices":
        return { case: "listServicesResponse", value: { service: serviceNames.map((name) => ({ name })) } };
      case "fileByFilename": {
        const file = byName.get(request.messageRequest.value);
        return file ? { case: "fileDescriptorResponse", value: { fileDescriptorProto: withDependencies(file) } } : notFound(request.messageRequest.value);
      }
      case "fileContainingSymbol": {
        const file = bySymbol.get(request.messageRequest.value.replace(/^\./, ""));
        return file ? { case: "fileDescriptorResponse", value: { fileDescriptorProto: withDependencies(file) } } : notFound(request.messageRequest.value);
      }
      case "allExtensionNumbersOfType":
        return { case: "allExtensionNumbersResponse", value: { baseTypeName: request.messageRequest.value, extensionNumber: [] } };
      default:
        return { case: "errorResponse", value: { errorCode: 12, errorMessage: "unimplemented" } };
    }
  };

  return {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield { validHost: request.host, originalRequest: request, messageResponse: answer(request) };
      }
    },
  };
}
