import { readFile } from "node:fs/promises";
import { z } from "zod";
import { espeakModelId } from "./espeak-engine.js";

/** The embedded engine's entry; present in every configuration, free of charge. */
export interface EmbeddedSpeechModelConfig {
  readonly provider: "espeak-ng";
  readonly id: typeof espeakModelId;
  readonly pricePer1kChars: 0;
  readonly supportsCloning: false;
}

/** An operator-configured OpenAI-compatible upstream, with its API key already read from the environment. */
export interface UpstreamSpeechModelConfig {
  readonly provider: "openai-compatible";
  readonly id: string;
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly upstreamModel: string;
  /** USD per 1000 input characters. */
  readonly pricePer1kChars: number;
  readonly supportsCloning: boolean;
  readonly timeoutMs?: number;
}

/** One speech model the server offers. */
export type SpeechModelConfig = EmbeddedSpeechModelConfig | UpstreamSpeechModelConfig;

const embeddedModel: EmbeddedSpeechModelConfig = {
  provider: "espeak-ng",
  id: espeakModelId,
  pricePer1kChars: 0,
  supportsCloning: false,
};

const upstreamEntry = z.strictObject({
  id: z.string().min(1).max(256),
  provider: z.literal("openai-compatible"),
  base_url: z.url({ protocol: /^https?$/ }),
  api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name").optional(),
  upstream_model: z.string().min(1),
  price_per_1k_chars: z.number().nonnegative(),
  supports_cloning: z.boolean().default(false),
  timeout_ms: z.number().int().positive().max(600_000).optional(),
});

// Other top-level sections (video models…) may share the file; only `speech` is read here.
const modelsFile = z.looseObject({ speech: z.array(upstreamEntry).default([]) });

/**
 * Reads the speech models the operator configured, so adding an upstream is
 * an edit to a JSON file rather than a code change. Without `path`, only the
 * embedded `local/espeak-ng` is offered; it is always first in the result.
 *
 * File shape (unknown keys in an entry are errors, to catch typos):
 * ```json
 * {"speech": [{
 *   "id": "openai/tts-1",                  // model id callers send; unique; not "local/espeak-ng"
 *   "provider": "openai-compatible",       // the only upstream kind so far
 *   "base_url": "https://api.openai.com/v1", // POST {base_url}/audio/speech
 *   "api_key_env": "OPENAI_API_KEY",       // optional; the variable must be set
 *   "upstream_model": "tts-1",             // sent as `model`
 *   "price_per_1k_chars": 0.015,           // USD, >= 0
 *   "supports_cloning": false,             // optional, default false
 *   "timeout_ms": 30000                    // optional: headers, then each chunk
 * }]}
 * ```
 * Throws an Error naming the file and every invalid field.
 */
export async function loadSpeechModels(
  path?: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<readonly SpeechModelConfig[]> {
  if (path === undefined) return [embeddedModel];
  const invalid = (problems: string[]): Error => new Error(`Invalid speech models file ${path}:\n  - ${problems.join("\n  - ")}`);

  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, "utf8"));
  } catch (error) {
    throw invalid([error instanceof Error ? error.message : String(error)]);
  }
  const parsed = modelsFile.safeParse(json);
  if (!parsed.success) {
    throw invalid(parsed.error.issues.map((issue) => `${issue.path.join(".") || "(file)"}: ${issue.message}`));
  }

  const problems: string[] = [];
  const seen = new Set<string>([espeakModelId]);
  const upstreams = parsed.data.speech.map((entry, index): UpstreamSpeechModelConfig => {
    if (entry.id === espeakModelId) problems.push(`speech.${index}.id: ${espeakModelId} is built in and cannot be configured`);
    else if (seen.has(entry.id)) problems.push(`speech.${index}.id: duplicate model id ${entry.id}`);
    seen.add(entry.id);
    const apiKey = entry.api_key_env === undefined ? undefined : env[entry.api_key_env];
    if (entry.api_key_env !== undefined && !apiKey) {
      problems.push(`speech.${index}.api_key_env: environment variable ${entry.api_key_env} is not set`);
    }
    return {
      provider: entry.provider,
      id: entry.id,
      baseUrl: entry.base_url,
      ...(apiKey ? { apiKey } : {}),
      upstreamModel: entry.upstream_model,
      pricePer1kChars: entry.price_per_1k_chars,
      supportsCloning: entry.supports_cloning,
      ...(entry.timeout_ms === undefined ? {} : { timeoutMs: entry.timeout_ms }),
    };
  });
  if (problems.length > 0) throw invalid(problems);
  return [embeddedModel, ...upstreams];
}
