/**
 * Types for the part of `@echogarden/espeak-ng-emscripten` the worker drives;
 * the package ships none. Worked out from its Emscripten glue (espeak-ng.js).
 */
declare module "@echogarden/espeak-ng-emscripten" {
  /** One voice of `list_voices()`: `languages[].name` are the names `set_voice` accepts. */
  export interface EspeakVoiceInfo {
    name: string;
    identifier: string;
    languages: { priority: number; name: string }[];
  }

  /** The synthesizer; one per thread, since eSpeak NG keeps global state. */
  export interface EspeakNGWorker {
    /** `espeak_SetVoiceByName`: `language` or `language+variant`; 0 on success. */
    set_voice(name: string): number;
    /** Words per minute; eSpeak clamps to 80–450. */
    set_rate(wordsPerMinute: number): void;
    get_rate(): number;
    get_samplerate(): number;
    list_voices(): EspeakVoiceInfo[];
    /**
     * Synthesizes `text` (SSML is honoured) synchronously, calling `onAudio`
     * with each ~100 ms block of 16-bit samples; returning true aborts.
     */
    synthesize(text: string, onAudio: (samples: Int16Array, events: unknown[]) => boolean): void;
  }

  /** The initialised module: the worker class plus the in-memory file system holding espeak-ng-data. */
  export interface EspeakModule {
    eSpeakNGWorker: new () => EspeakNGWorker;
    FS: { readdir(path: string): string[] };
  }

  /** Loads the WebAssembly and the 24 MB data package. */
  export default function initialize(options?: Record<string, unknown>): Promise<EspeakModule>;
}
