// A worker entry for the module-worker test: a project file and a package, imported as the eSpeak worker does.
import { parentPort, workerData } from "node:worker_threads";
import { create } from "@bufbuild/protobuf";
import { createPcmResampler } from "../../src/providers/speech/pcm-resampler.js";
import { GetHostStatusResponseSchema } from "../../src/gen/switchboard/host/v1/host_pb.js";

const resampler = createPcmResampler(22050, 24000);
const samples = resampler.process(new Float32Array(22050)).length + resampler.flush().length;
const status = create(GetHostStatusResponseSchema, { agentName: (workerData as { name: string }).name });
parentPort!.postMessage({ samples, agentName: status.agentName });
