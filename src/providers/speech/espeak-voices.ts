import { SpeechProviderError } from "./speech-provider-error.js";

/**
 * OpenAI's voice names mapped onto eSpeak NG variants, so clients written for
 * OpenAI work unchanged against the embedded model. The mapping keeps each
 * name's character where eSpeak can (gender, pitch, British for fable and
 * ballad); it cannot make eSpeak sound like OpenAI.
 */
export const openAiVoices: ReadonlyMap<string, string> = new Map([
  ["alloy", "en-us+f4"],
  ["ash", "en-us+m3"],
  ["ballad", "en-gb-x-rp+m7"],
  ["coral", "en-us+f3"],
  ["echo", "en-us+m2"],
  ["fable", "en-gb-x-rp+m1"],
  ["onyx", "en-us+m8"],
  ["nova", "en-us+f2"],
  ["sage", "en-gb+f1"],
  ["shimmer", "en-us+f5"],
  ["verse", "en-us+m6"],
  ["marin", "en-us+f1"],
  ["cedar", "en-us+m4"],
]);

/** A voice the worker can load, and the language its text is split by. */
export interface EspeakVoice {
  /** Canonical `language` or `language+variant`, as eSpeak spells it. */
  readonly voice: string;
  /** Primary language subtag, for sentence splitting. */
  readonly language: string;
}

/** Resolves caller voice names against what the installed eSpeak NG data holds. */
export interface EspeakVoiceCatalogue {
  /** Throws a `bad_request` SpeechProviderError naming valid choices when `voice` is unknown. */
  resolve(voice: string): EspeakVoice;
  /** Every accepted name without variants: OpenAI names, then eSpeak languages. */
  readonly names: readonly string[];
}

/**
 * Builds the catalogue from the worker's report of languages and variants, so
 * the accepted names always match the data package actually loaded.
 * Accepted: an OpenAI name, `language`, or `language+variant`, case-insensitively;
 * `language` is an eSpeak voice file name (`en-us`, `fr`) or a language tag one
 * of them speaks (`en-gb` → `en`, `zh` → `cmn`).
 */
export function createEspeakVoiceCatalogue(
  languages: readonly (readonly [name: string, voice: string])[],
  variants: readonly string[],
): EspeakVoiceCatalogue {
  const languageByName = new Map(languages.map(([name, voice]) => [name.toLowerCase(), voice]));
  const variantByName = new Map(variants.map((name) => [name.toLowerCase(), name]));

  function refuse(voice: string): never {
    // The voice is caller input of any length; echo only enough to recognise it.
    const shown = voice.length > 64 ? `${voice.slice(0, 64)}…` : voice;
    throw new SpeechProviderError(
      "bad_request",
      `Unknown voice '${shown}' for local/espeak-ng. Use an OpenAI voice (${[...openAiVoices.keys()].join(", ")}), ` +
        `an eSpeak NG language such as en-us, en, fr, de or es (${languageByName.size} available), ` +
        `optionally with a variant such as en-us+f3 or fr+m2.`,
    );
  }

  return {
    names: [...openAiVoices.keys(), ...languageByName.keys()],
    resolve(voice) {
      const requested = voice.toLowerCase();
      const [languageName, variantName, extra] = (openAiVoices.get(requested) ?? requested).split("+");
      const language = languageByName.get(languageName);
      const variant = variantName === undefined ? undefined : variantByName.get(variantName);
      if (language === undefined || extra !== undefined || (variantName !== undefined && variant === undefined)) refuse(voice);
      return { voice: variant === undefined ? language : `${language}+${variant}`, language: language.split("-")[0] };
    },
  };
}
