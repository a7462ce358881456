import { MPEGDecoder } from "mpg123-decoder";

/** What POST /api/v1/audio/speech answered: the audio, or the error envelope. */
export interface SpeechReply {
  status: number;
  headers: Headers;
  audio: Buffer;
  /** The parsed body when it was JSON (refusals). */
  body: any;
}

/** 24 kHz × 16-bit mono: pcm bytes per second of audio. */
export const pcmBytesPerSecond = 48_000;

/** Posts a speech request with plain fetch, so tests see exactly what went over the wire. */
export async function postSpeech(
  httpUrl: string,
  body: unknown,
  options: { key?: string | null; headers?: Record<string, string>; raw?: string } = {},
): Promise<SpeechReply> {
  const response = await fetch(`${httpUrl}/api/v1/audio/speech`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(options.key ? { authorization: `Bearer ${options.key}` } : {}), ...options.headers },
    body: options.raw ?? JSON.stringify(body),
  });
  const audio = Buffer.from(await response.arrayBuffer());
  const json = response.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(audio.toString("utf8")) : undefined;
  return { status: response.status, headers: response.headers, audio, body: json };
}

/** Decodes an MP3 stream and reports its sample rate and duration. */
export async function decodeMp3(mp3: Uint8Array): Promise<{ sampleRate: number; seconds: number; errors: unknown[] }> {
  const decoder = new MPEGDecoder();
  await decoder.ready;
  try {
    const decoded = decoder.decode(mp3);
    return { sampleRate: decoded.sampleRate, seconds: decoded.samplesDecoded / decoded.sampleRate, errors: decoded.errors };
  } finally {
    decoder.free();
  }
}

/** Reads a Prometheus gauge from /metrics. */
export async function gaugeValue(httpUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}

/** Polls until `check` holds or `timeoutMs` passes; returns whether it held. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
