/**
 * Worker-thread entry of the test pattern renderer (internal). The encoder is
 * WebAssembly that blocks its thread for the whole render and installs
 * process-wide `uncaughtException`/`unhandledRejection` handlers when loaded,
 * so it only ever runs here, never on the server's event loop.
 *
 * Protocol: `workerData` is a TestPatternPlan; the worker posts
 * `{type: "progress", frames}` now and then and `{type: "done", bytes}` once.
 */
import { parentPort, workerData } from "node:worker_threads";
import HME from "h264-mp4-encoder";
import { normalizeMp4Timestamps } from "./mp4-timestamps.js";
import { drawTestPatternFrame } from "./test-pattern-frames.js";
import type { TestPatternPlan } from "./test-pattern-plan.js";

const plan = workerData as TestPatternPlan;
const port = parentPort;
if (!port) throw new Error("test-pattern-worker must run in a worker thread");

const encoder = await HME.createH264MP4Encoder();
const outputFilename = "test-pattern.mp4";
let bytes: Uint8Array<ArrayBuffer>;
try {
  encoder.width = plan.width;
  encoder.height = plan.height;
  encoder.frameRate = plan.fps;
  encoder.groupOfPictures = plan.fps;
  encoder.speed = 10;
  encoder.outputFilename = outputFilename;
  encoder.initialize();
  const frame = new Uint8Array(plan.width * plan.height * 4);
  const pixels = new Uint32Array(frame.buffer);
  for (let index = 0; index < plan.frameCount; index++) {
    drawTestPatternFrame(plan, index, pixels);
    encoder.addFrameRgba(frame);
    if ((index + 1) % plan.fps === 0) port.postMessage({ type: "progress", frames: index + 1 });
  }
  encoder.finalize();
  bytes = new Uint8Array(encoder.FS.readFile(outputFilename));
  encoder.FS.unlink(outputFilename);
} finally {
  encoder.delete();
}
normalizeMp4Timestamps(bytes);
port.postMessage({ type: "done", bytes }, [bytes.buffer]);
