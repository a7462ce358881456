/**
 * Worker-thread entry of the embedded engine (internal): eSpeak NG's
 * WebAssembly synthesizes synchronously and would block the event loop, so
 * each pool thread owns one instance, resamples to 24 kHz and encodes MP3 here
 * too, and posts finished bytes to the pool.
 */
import { parentPort, type MessagePort } from "node:worker_threads";
import initialize, { type EspeakNGWorker } from "@echogarden/espeak-ng-emscripten";
import { createMp3Encoder, type WasmMediaEncoder } from "wasm-media-encoders";
import type { EspeakWorkerEvent, EspeakWorkerRequest } from "./espeak-messages.js";
import { createPcmResampler, type PcmResampler } from "./pcm-resampler.js";

type Mp3Encoder = WasmMediaEncoder<"audio/mpeg">;

interface Job {
  readonly resampler: PcmResampler;
  /** Present for mp3 jobs; pcm jobs are written out raw. */
  readonly encoder: Mp3Encoder | undefined;
  /** Whether the job has posted audio yet; the first block goes out at once for time to first byte. */
  started: boolean;
}

const outputRate = 24000;
/** Speech at 24 kHz mono needs little more than 64 kbit/s; constant bitrate streams evenly. */
const mp3Bitrate = 64;
/** After the first block, audio is posted in about one-second batches to keep messages few. */
const batchSamples = 22050;
/** Encoders kept for reuse; each is a WebAssembly instance that takes ~15 ms to create. */
const maxIdleEncoders = 4;
const variantsDirectory = "/usr/share/espeak-ng-data/voices/!v";
const warmUpText = "Warming up the speech engine, so that the first caller does not wait for it.";
/** Plain, breathy (f2) and low-voiced variants take different synthesis paths; each needs warming. */
const warmUpVoices = ["en-us", "en-us+f2", "en-us+m8"];

const port = workerPort();

const jobs = new Map<number, Job>();
const idleEncoders: Mp3Encoder[] = [];
let espeak: EspeakNGWorker;
let inputRate = 22050;
let currentVoice = "";
let currentRate = 0;

/** Jobs cancelled while their segments were still queued; see {@link handle}. */
const cancelled = new Set<number>();

// Requests are handled strictly in arrival order, after initialisation; a cancellation is
// also noted at once so that segments queued before it can be skipped.
let queue: Promise<void> = start();
port.on("message", (request: EspeakWorkerRequest) => {
  if (request.type === "cancel") cancelled.add(request.job);
  queue = queue.then(() => handle(request));
});

async function start(): Promise<void> {
  try {
    const module = await initialize();
    espeak = new module.eSpeakNGWorker();
    inputRate = espeak.get_samplerate();
    const languages = languageNames(espeak);
    const variants = module.FS.readdir(variantsDirectory).filter((name) => !name.startsWith("."));
    idleEncoders.push(await createMp3Encoder());
    warmUp();
    post({ type: "ready", languages, variants });
  } catch (error) {
    post({ type: "init-failed", message: errorMessage(error) });
  }
}

/**
 * eSpeak NG's set_voice takes voice file names only, so language tags such as
 * `en-gb` or `zh` are mapped to the voice listing them at the best priority
 * (lowest number). Every voice is tried once, since a few in the list fail to load.
 */
function languageNames(engine: EspeakNGWorker): [string, string][] {
  const voices = engine.list_voices().map((voice) => ({ file: voice.identifier.split("/").pop() ?? "", languages: voice.languages }));
  const loadable = voices.filter(({ file }) => file !== "" && engine.set_voice(file) === 0);
  const names = new Map<string, string>(loadable.map(({ file }) => [file.toLowerCase(), file]));
  const aliases = new Map<string, { voice: string; priority: number }>();
  for (const { file, languages } of loadable) {
    for (const { name, priority } of languages) {
      const known = aliases.get(name.toLowerCase());
      if (known === undefined || priority < known.priority) aliases.set(name.toLowerCase(), { voice: file, priority });
    }
  }
  for (const [alias, { voice }] of aliases) if (!names.has(alias)) names.set(alias, voice);
  return [...names];
}

/**
 * WebAssembly tiers up only after running hot code; without this the first
 * requests run 5–10× slower. A second round finishes the tier-up; a third
 * measured no faster.
 */
function warmUp(): void {
  for (let round = 0; round < 2; round++) {
    for (const voice of warmUpVoices) {
      for (const format of ["pcm", "mp3"] as const) {
        const job = openJob(format === "mp3" ? idleEncoders.pop() : undefined);
        synthesize(voice, 175, warmUpText, () => undefined, job);
        finish(job);
        closeJob(job);
      }
    }
  }
}

async function handle(request: EspeakWorkerRequest): Promise<void> {
  if (request.type === "cancel") {
    cancelled.delete(request.job);
    const job = jobs.get(request.job);
    jobs.delete(request.job);
    if (job !== undefined) closeJob(job);
    return;
  }
  // Yield to the event loop so a cancellation that arrived during the previous segment is seen
  // before this one is synthesized for nobody.
  await new Promise((resolve) => setImmediate(resolve));
  if (cancelled.has(request.job)) return;
  try {
    let job = jobs.get(request.job);
    if (job === undefined) {
      job = openJob(request.format === "mp3" ? (idleEncoders.pop() ?? (await createMp3Encoder())) : undefined);
      jobs.set(request.job, job);
    }
    const id = request.job;
    synthesize(request.voice, request.rate, request.text, (bytes) => post({ type: "audio", job: id, bytes }, [bytes.buffer]), job);
    if (request.last) {
      const tail = finish(job);
      if (tail.length > 0) post({ type: "audio", job: id, bytes: tail }, [tail.buffer]);
      jobs.delete(id);
      closeJob(job);
    }
    post({ type: "segment-done", job: id, last: request.last });
  } catch (error) {
    const job = jobs.get(request.job);
    jobs.delete(request.job);
    if (job !== undefined) closeJob(job);
    post({ type: "failed", job: request.job, message: errorMessage(error) });
  }
}

function openJob(encoder: Mp3Encoder | undefined): Job {
  encoder?.configure({ sampleRate: outputRate, channels: 1, bitrate: mp3Bitrate });
  return { resampler: createPcmResampler(inputRate, outputRate), encoder, started: false };
}

function closeJob(job: Job): void {
  // configure() on reuse frees the old LAME state, so an abandoned stream needs no flush.
  if (job.encoder !== undefined && idleEncoders.length < maxIdleEncoders) idleEncoders.push(job.encoder);
}

/** Speaks one segment, handing encoded blocks to `emit` as eSpeak produces them. */
function synthesize(voice: string, rate: number, text: string, emit: (bytes: Uint8Array<ArrayBuffer>) => void, job: Job): void {
  if (voice !== currentVoice) {
    if (espeak.set_voice(voice) !== 0) throw new Error(`eSpeak NG could not load voice ${voice}`);
    currentVoice = voice;
  }
  if (rate !== currentRate) {
    espeak.set_rate(rate);
    currentRate = rate;
  }
  let pending: Int16Array[] = [];
  let pendingLength = 0;
  const flush = (): void => {
    const bytes = encode(job, job.resampler.process(toFloat(pending, pendingLength)));
    pending = [];
    pendingLength = 0;
    if (bytes.length > 0) {
      job.started = true;
      emit(bytes);
    }
  };
  // An exception must not unwind through eSpeak's WebAssembly frames: stop the synthesis
  // cleanly (returning true aborts it) and rethrow once eSpeak has returned.
  let failure: { error: unknown } | undefined;
  espeak.synthesize(escapeMarkup(text), (samples) => {
    try {
      pending.push(samples);
      pendingLength += samples.length;
      if (!job.started || pendingLength >= batchSamples) flush();
      return false;
    } catch (error) {
      failure = { error };
      return true;
    }
  });
  if (failure !== undefined) throw failure.error;
  if (pendingLength > 0) flush();
}

/** Drains the resampler and the encoder at the end of a job. */
function finish(job: Job): Uint8Array<ArrayBuffer> {
  const body = encode(job, job.resampler.flush());
  if (job.encoder === undefined) return body;
  return concatenate(body, job.encoder.finalize());
}

function encode(job: Job, samples: Float32Array): Uint8Array<ArrayBuffer> {
  if (job.encoder !== undefined) {
    // The encoder returns a view of its WebAssembly memory, reused on the next call.
    return samples.length === 0 ? new Uint8Array(0) : job.encoder.encode([samples]).slice();
  }
  const bytes = new Uint8Array(samples.length * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < samples.length; i++) {
    const value = Math.round(samples[i] * 32768);
    view.setInt16(i * 2, value > 32767 ? 32767 : value < -32768 ? -32768 : value, true);
  }
  return bytes;
}

function toFloat(blocks: readonly Int16Array[], length: number): Float32Array {
  const out = new Float32Array(length);
  let offset = 0;
  for (const block of blocks) {
    for (let i = 0; i < block.length; i++) out[offset + i] = block[i] / 32768;
    offset += block.length;
  }
  return out;
}

function concatenate(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** eSpeak NG runs with SSML on: unescaped input could inject `<break time="1h"/>` and the like. */
function escapeMarkup(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function post(event: EspeakWorkerEvent, transfer: ArrayBuffer[] = []): void {
  port.postMessage(event, transfer);
}

function workerPort(): MessagePort {
  if (parentPort === null) throw new Error("espeak-worker must run in a worker thread");
  return parentPort;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
