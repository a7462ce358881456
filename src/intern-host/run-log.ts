import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { RunEventSchema, type RunEvent } from "../gen/switchboard/host/v1/host_pb.js";

/** The payload of one run event to append: the proto's oneof, as an init shape. */
export type RunEventKind = Exclude<NonNullable<MessageInitShape<typeof RunEventSchema>["kind"]>, { case: undefined }>;

/** Events that end a stream: the reader detaches when it hands one out. */
export function endsStream(event: RunEvent): boolean {
  const kind = event.kind.case;
  return kind === "paused" || kind === "finished" || kind === "failed";
}

/** Options for {@link createRunLog}. */
export interface RunLogOptions {
  /** Bytes of undelivered events the log may hold (`--replay-bytes`). */
  readonly capBytes: number;
  readonly started: { sessionId: string; runId: string };
}

/**
 * A run's ordered, sequence-numbered output: `started` is entry 1 and is
 * re-sent at the head of every stream; the other entries wait until the one
 * attached reader takes them. Taken entries are dropped: a resumed stream
 * starts after the `paused` event that ended the previous one, so delivered
 * output is never needed again. Text that waits behind a slow reader is
 * coalesced: a content or reasoning chunk joins the waiting event of the same
 * kind just before it, so a reader that falls behind catches up in fewer,
 * larger events instead of paying per-message costs for every agent chunk.
 * What waits is capped in bytes; past the cap
 * the log is `overflowed`: what already waits stays deliverable, everything
 * after it but the terminal event is dropped, so no reader can get a gap-free
 * continuation beyond what waits.
 */
export interface RunLog {
  readonly started: RunEvent;
  /** Appends an event; false when the log is overflowed and the event was dropped. */
  append(kind: RunEventKind): boolean;
  /** Appends the run's terminal event, which is kept whatever the cap. */
  appendTerminal(kind: RunEventKind): void;
  /** Takes the next waiting event, if any. */
  take(): RunEvent | undefined;
  readonly overflowed: boolean;
  /** A waiting event ends the attached reader's stream, so what overflows after it is the next reader's loss. */
  readonly streamEndWaiting: boolean;
  /** Resolves at the next append; rejects when `signal` aborts. */
  changed(signal: AbortSignal): Promise<void>;
  /** Bytes of the events waiting for a reader. */
  readonly waitingBytes: number;
  /** Drops every waiting event: nobody can read them any more. */
  discard(): void;
}

/** Taken slots are reclaimed in bulk once this many pile up, so a reader that trails a long run does not keep them all. */
const compactAfter = 1024;

/** Coalesced text stops growing past this many characters, to keep messages moderate. */
const coalesceLimit = 16 * 1024;

/** Bytes counted per event besides its text: seq, tags and framing. */
const eventOverheadBytes = 32;

/** Creates the output log of one run. */
export function createRunLog(options: RunLogOptions): RunLog {
  const started = create(RunEventSchema, { seq: 1n, kind: { case: "started", value: options.started } });
  let nextSeq = 2n;
  let waiting: RunEvent[] = [];
  let head = 0;
  let waitingBytes = 0;
  let overflowed = false;
  let streamEndsWaiting = 0;
  let wake: (() => void) | undefined;

  function overflow(): false {
    overflowed = true;
    return false;
  }

  function numbered(kind: RunEventKind): RunEvent {
    return create(RunEventSchema, { seq: nextSeq++, kind });
  }

  function enqueue(event: RunEvent, bytes: number): void {
    waiting.push(event);
    waitingBytes += bytes;
    if (endsStream(event)) streamEndsWaiting++;
    notify();
  }

  function notify(): void {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  }

  return {
    started,
    append(kind) {
      if (overflowed) return false;
      const last = head < waiting.length ? waiting[waiting.length - 1] : undefined;
      if (last && (kind.case === "content" || kind.case === "reasoning") && last.kind.case === kind.case && last.kind.value.length < coalesceLimit) {
        const bytes = Buffer.byteLength(kind.value);
        if (waitingBytes + bytes > options.capBytes) return overflow();
        last.kind.value += kind.value;
        waitingBytes += bytes;
        return true;
      }
      const event = create(RunEventSchema, { kind });
      const bytes = eventBytes(event);
      // The cap bounds what piles up behind a reader: one event larger than it
      // still goes to a reader that has taken everything else.
      if (waitingBytes > 0 && waitingBytes + bytes > options.capBytes) return overflow();
      event.seq = nextSeq++;
      enqueue(event, bytes);
      return true;
    },
    appendTerminal(kind) {
      const event = numbered(kind);
      enqueue(event, eventBytes(event));
    },
    take() {
      if (head >= waiting.length) return undefined;
      const event = waiting[head++];
      waitingBytes -= eventBytes(event);
      if (endsStream(event)) streamEndsWaiting--;
      if (head === waiting.length) {
        waiting = [];
        head = 0;
      } else if (head >= compactAfter && head * 2 > waiting.length) {
        waiting = waiting.slice(head);
        head = 0;
      }
      return event;
    },
    get overflowed() {
      return overflowed;
    },
    get streamEndWaiting() {
      return streamEndsWaiting > 0;
    },
    get waitingBytes() {
      return waitingBytes;
    },
    discard() {
      waiting = [];
      head = 0;
      waitingBytes = 0;
      streamEndsWaiting = 0;
    },
    changed(signal) {
      if (head < waiting.length) return Promise.resolve();
      if (signal.aborted) return Promise.reject(signal.reason);
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
        wake = () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
      });
    },
  };
}

function eventBytes(event: RunEvent): number {
  const kind = event.kind;
  switch (kind.case) {
    case "content":
    case "reasoning":
      return Buffer.byteLength(kind.value) + eventOverheadBytes;
    case "activity":
      return Buffer.byteLength(kind.value.title) + kind.value.toolCallId.length + kind.value.status.length + eventOverheadBytes;
    case "interaction":
      return Buffer.byteLength(kind.value.arguments) + kind.value.id.length + eventOverheadBytes;
    default:
      return eventOverheadBytes;
  }
}
