import { z } from "zod";
import type { VideoModelCapabilities, VideoPricing } from "./video-model.js";
import { localProviderSlug } from "./test-pattern-provider.js";
import { parseVideoSize } from "./video-size.js";

/**
 * The `video` section of the operator-edited models file (JSON). Other
 * top-level members, such as the `speech` section, are ignored here, so one
 * file serves every engine. Unknown keys inside an entry are errors, to catch
 * typos.
 *
 * ```jsonc
 * {"video": [
 *   {
 *     "id": "openai/sora-2",                    // public model id; unique
 *     "provider": "openai-videos",              // an OpenAI-videos-compatible upstream, or "local" (test pattern)
 *     "slug": "openai",                         // optional: key read in provider.options; default: id up to the first "/"
 *     "base_url": "https://api.openai.com/v1",  // POST {base_url}/videos, GET {base_url}/videos/{id}[/content]
 *     "api_key_env": "OPENAI_API_KEY",          // or "api_key": "sk-…"; or neither for an open upstream
 *     "headers": {"OpenAI-Project": "proj_…"},  // optional, sent on every call
 *     "upstream_model": "sora-2",               // sent as `model`
 *     "timeout_ms": 30000,                      // optional: each submit, poll or cancel call
 *     "download_timeout_ms": 600000,            // optional: a whole content download
 *     "poll_interval_ms": 5000,                 // optional: hint for the job worker
 *     "forward": ["seed"],                      // optional: request members sent verbatim besides the OpenAI ones
 *     "capabilities": {                         // all optional; flags default to false
 *       "prompt_optional": false,               // may generate from images alone
 *       "upscaling": false,                     // creativity / upscale_factor allowed
 *       "generate_audio": true,                 // default of generate_audio
 *       "audio_references": false,
 *       "video_references": false,
 *       "seed": false,                          // honours seed
 *       "durations": [4, 8, 12],                // allowed seconds
 *       "max_duration_seconds": 12,             // default: the largest of durations
 *       "default_duration_seconds": 4,          // default: first of durations, else 5 (capped by the maximum)
 *       "sizes": ["1280x720", "720x1280"],      // allowed WIDTHxHEIGHT
 *       "default_size": "1280x720"              // default: first of sizes
 *     },
 *     "pricing": {                              // USD; required for upstream models
 *       "per_video": 0,
 *       "per_second": 0.1,
 *       "per_second_by_size": {"1792x1024": 0.5},
 *       "per_second_audio": 0
 *     }
 *   },
 *   {"id": "local/image-only", "provider": "local", "capabilities": {"prompt_optional": true}}
 * ]}
 * ```
 * A `local` entry takes only `id`, `capabilities` and `pricing`. An entry
 * with id `local/test-pattern` replaces the embedded one (it must be
 * `local`); further `local` entries are test pattern models with other
 * capabilities, handy for exercising validation offline.
 */
export interface VideoModelsFile {
  models: VideoModelConfig[];
}

/** Request members an operator may forward verbatim to an upstream that understands them. */
export const forwardableMembers = [
  "aspect_ratio",
  "resolution",
  "duration",
  "seed",
  "generate_audio",
  "creativity",
  "upscale_factor",
  "frame_images",
  "input_references",
] as const;

/** One of {@link forwardableMembers}. */
export type ForwardableMember = (typeof forwardableMembers)[number];

/** How to reach an upstream, with its key already read from the environment. */
export interface UpstreamVideoConfig {
  baseUrl: string;
  apiKey?: string;
  headers: Record<string, string>;
  upstreamModel: string;
  forward: ForwardableMember[];
  timeoutMs?: number;
  downloadTimeoutMs?: number;
  pollIntervalMs?: number;
}

/** One model entry, normalised. */
export interface VideoModelConfig {
  id: string;
  /** `local`, or the key read in `provider.options`. */
  slug: string;
  capabilities: VideoModelCapabilities;
  pricing: VideoPricing;
  /** Absent for the local renderer. */
  upstream?: UpstreamVideoConfig;
}

/** Id of the embedded model, always offered; a file entry with this id must use the local provider. */
export const testPatternModelId = "local/test-pattern";

/** Thrown when the models file cannot be read or does not follow the documented shape. */
export class VideoModelsFileError extends Error {
  override readonly name = "VideoModelsFileError";
}

const slug = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, "a slug: lowercase letters, digits, - and _");
const sizeString = z.string().refine((value) => parseVideoSize(value) !== undefined, "must be WIDTHxHEIGHT");
const price = z.number().nonnegative();

const capabilitiesSchema = z.strictObject({
  prompt_optional: z.boolean().default(false),
  upscaling: z.boolean().default(false),
  generate_audio: z.boolean().default(false),
  audio_references: z.boolean().default(false),
  video_references: z.boolean().default(false),
  seed: z.boolean().default(false),
  durations: z.array(z.int().min(1)).min(1).optional(),
  max_duration_seconds: z.int().min(1).optional(),
  default_duration_seconds: z.int().min(1).optional(),
  sizes: z.array(sizeString).min(1).optional(),
  default_size: sizeString.optional(),
});

const pricingSchema = z.strictObject({
  per_video: price.default(0),
  per_second: price.default(0),
  per_second_by_size: z.record(sizeString, price).default({}),
  per_second_audio: price.default(0),
});

const common = {
  id: z.string().min(1).max(256),
  capabilities: capabilitiesSchema.default(capabilitiesSchema.parse({})),
};

const localEntry = z.strictObject({
  ...common,
  provider: z.literal(localProviderSlug),
  pricing: pricingSchema.default(pricingSchema.parse({})),
});

const upstreamEntry = z
  .strictObject({
    ...common,
    provider: z.literal("openai-videos"),
    slug: slug.optional(),
    base_url: z.url({ protocol: /^https?$/ }),
    api_key: z.string().min(1).optional(),
    api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name").optional(),
    headers: z.record(z.string(), z.string()).default({}),
    upstream_model: z.string().min(1),
    timeout_ms: z.int().positive().max(600_000).optional(),
    download_timeout_ms: z.int().positive().optional(),
    poll_interval_ms: z.int().positive().optional(),
    forward: z.array(z.enum(forwardableMembers)).default([]),
    pricing: pricingSchema,
  })
  .refine((entry) => !(entry.api_key && entry.api_key_env), "give api_key or api_key_env, not both");

const fileSchema = z.looseObject({ video: z.array(z.discriminatedUnion("provider", [localEntry, upstreamEntry])).default([]) });

type Entry = z.infer<typeof localEntry> | z.infer<typeof upstreamEntry>;

function normaliseCapabilities(raw: Entry["capabilities"]): VideoModelCapabilities {
  const max = raw.max_duration_seconds ?? (raw.durations ? Math.max(...raw.durations) : undefined);
  return {
    promptOptional: raw.prompt_optional,
    upscaling: raw.upscaling,
    generateAudio: raw.generate_audio,
    audioReferences: raw.audio_references,
    videoReferences: raw.video_references,
    seed: raw.seed,
    durations: raw.durations,
    maxDurationSeconds: max,
    defaultDurationSeconds: raw.default_duration_seconds ?? raw.durations?.[0] ?? Math.min(5, max ?? 5),
    sizes: raw.sizes,
    defaultSize: raw.default_size ?? raw.sizes?.[0],
  };
}

function capabilityProblems(where: string, capabilities: VideoModelCapabilities): string[] {
  const { durations, maxDurationSeconds, defaultDurationSeconds, sizes, defaultSize } = capabilities;
  const problems: string[] = [];
  if (durations && !durations.includes(defaultDurationSeconds)) problems.push(`${where}.capabilities: default_duration_seconds is not in durations`);
  if (maxDurationSeconds !== undefined && defaultDurationSeconds > maxDurationSeconds) {
    problems.push(`${where}.capabilities: default_duration_seconds exceeds max_duration_seconds`);
  }
  if (durations && maxDurationSeconds !== undefined && durations.some((seconds) => seconds > maxDurationSeconds)) {
    problems.push(`${where}.capabilities: durations exceed max_duration_seconds`);
  }
  if (sizes && defaultSize && !sizes.includes(defaultSize)) problems.push(`${where}.capabilities: default_size is not in sizes`);
  return problems;
}

function upstreamOf(entry: z.infer<typeof upstreamEntry>, where: string, env: Readonly<Record<string, string | undefined>>, problems: string[]): UpstreamVideoConfig {
  const apiKey = entry.api_key_env === undefined ? entry.api_key : env[entry.api_key_env];
  if (entry.api_key_env !== undefined && !apiKey) problems.push(`${where}.api_key_env: environment variable ${entry.api_key_env} is not set`);
  return {
    baseUrl: entry.base_url.replace(/\/+$/, ""),
    ...(apiKey && { apiKey }),
    headers: entry.headers,
    upstreamModel: entry.upstream_model,
    forward: entry.forward,
    timeoutMs: entry.timeout_ms,
    downloadTimeoutMs: entry.download_timeout_ms,
    pollIntervalMs: entry.poll_interval_ms,
  };
}

function slugOf(entry: Entry, where: string, problems: string[]): string {
  if (entry.provider === localProviderSlug) return localProviderSlug;
  const derived = entry.slug ?? entry.id.split("/")[0];
  if (!slug.safeParse(derived).success) problems.push(`${where}.slug: give a slug (lowercase letters, digits, - and _); the id does not start with one`);
  return derived;
}

/**
 * Validates the parsed models file and normalises its `video` section
 * (camelCase, defaults filled, keys read from `env`), so configuration errors
 * stop the server at start rather than fail jobs later. Throws
 * {@link VideoModelsFileError} listing every problem.
 */
export function parseVideoModelsFile(json: unknown, env: Readonly<Record<string, string | undefined>> = process.env): VideoModelsFile {
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".") || "(file)"}: ${issue.message}`);
    throw new VideoModelsFileError(`Invalid video models:\n  - ${problems.join("\n  - ")}`);
  }
  const problems: string[] = [];
  const seen = new Set<string>();
  const models = parsed.data.video.map((entry, index): VideoModelConfig => {
    const where = `video.${index}`;
    if (seen.has(entry.id)) problems.push(`${where}.id: duplicate model id ${entry.id}`);
    seen.add(entry.id);
    if (entry.id === testPatternModelId && entry.provider !== localProviderSlug) {
      problems.push(`${where}.provider: ${testPatternModelId} must use the ${localProviderSlug} provider`);
    }
    const capabilities = normaliseCapabilities(entry.capabilities);
    problems.push(...capabilityProblems(where, capabilities));
    return {
      id: entry.id,
      slug: slugOf(entry, where, problems),
      capabilities,
      pricing: {
        perVideo: entry.pricing.per_video,
        perSecond: entry.pricing.per_second,
        perSecondBySize: entry.pricing.per_second_by_size,
        perSecondAudio: entry.pricing.per_second_audio,
      },
      ...(entry.provider === "openai-videos" && { upstream: upstreamOf(entry, where, env, problems) }),
    };
  });
  if (problems.length > 0) throw new VideoModelsFileError(`Invalid video models:\n  - ${problems.join("\n  - ")}`);
  return { models };
}
