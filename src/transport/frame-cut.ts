/**
 * How a link cuts its queue of payloads into data frames (docs/design.md section 4,
 * "Batching" and "Pieces"): each frame takes the longest run of payloads, from the first not
 * framed yet, that encodes within the frame limit and limits.frameMessagesMax; a payload too
 * large for a frame on its own is first split into pieces by the runtime's rule
 * (`MeshOptions.splitPayload`), which keeps their order and what the receiver may conclude
 * from them. Whatever the size of the queue, no frame passes the limit.
 *
 * The first frame of a flush is encoded whole at once, which is all the usual flush does.
 * Once a run does not fit, each payload is measured alone (msgpackr without records encodes
 * an array as its elements' own encodings one after the other), so the rest is cut in one
 * pass over the queue, not by encoding ever smaller runs again.
 */
import { assert } from '../assert.js';
import { limits } from '../limits.js';
import type { DataFrame } from './codec.js';
import { encodeFrame } from './codec.js';

/** The rule that splits one payload too large for a frame: `parts` payloads or fewer, in order, or null. */
export type SplitPayload<P> = (payload: P, parts: number) => readonly P[] | null;

/** What a cutter is built with. */
export interface FrameCutOptions<P> {
  /** Largest encoded frame (limits.frameBytesMax in production; the simulator may set less). */
  readonly frameBytesMax: number;
  /** MeshOptions.splitPayload; without it a payload too large alone is a programmer error. */
  readonly split?: SplitPayload<P> | undefined;
}

/** One frame cut from the queue: its payloads and its bytes. */
export interface CutFrame<P> {
  readonly payloads: readonly P[];
  readonly bytes: Buffer;
}

/** Bytes a msgpack array header may add over the one-byte header of an array of 0 to 15 payloads. */
const arrayHeaderGrowthBytes = 4;

/** Cuts one flush's queue into frames, in order; the queue may grow where a payload is split. */
export class FrameCutter<P> {
  readonly #queue: P[];
  readonly #opts: FrameCutOptions<P>;
  /** The first payload not framed yet. */
  #from = 0;
  /** Encoded size of each payload of the queue alone, measured on demand once a run overflowed. */
  #sizes: (number | undefined)[] | null = null;
  /** The frame header (no payload) of the smallest seq, to measure payloads by difference. */
  readonly #emptyFrameBytes = encodeFrame({ t: 'data', seq: 1, payloads: [] }).length;

  /** `queue` is taken over: pieces replace the payloads they split. */
  constructor(queue: P[], opts: FrameCutOptions<P>) {
    this.#queue = queue;
    this.#opts = opts;
  }

  /** True when every payload of the queue is in a frame taken. */
  get done(): boolean {
    return this.#from >= this.#queue.length;
  }

  /** The payloads not framed yet, in order (pieces included). */
  rest(): P[] {
    return this.#from === 0 ? this.#queue : this.#queue.slice(this.#from);
  }

  /** The next frame (seq and ack as given), not taken until `take`. */
  cut(seq: number, ack: number | undefined): CutFrame<P> {
    assert(!this.done, 'a frame carries at least one payload');
    const frameOf = (payloads: readonly P[]): DataFrame<P> => (ack === undefined ? { t: 'data', seq, payloads } : { t: 'data', seq, payloads, ack });
    const available = Math.min(this.#queue.length - this.#from, limits.frameMessagesMax);
    if (this.#sizes === null) {
      const payloads = this.#queue.slice(this.#from, this.#from + available);
      const bytes = encodeFrame(frameOf(payloads));
      if (bytes.length <= this.#opts.frameBytesMax) return { payloads, bytes };
      this.#sizes = new Array<number | undefined>(this.#from);
    }
    const headerBytes = encodeFrame(frameOf([])).length + arrayHeaderGrowthBytes;
    const room = this.#opts.frameBytesMax - headerBytes;
    let count = 0;
    let total = 0;
    while (count < available) {
      const size = this.#sizeAt(this.#from + count, room);
      if (total + size > room) break;
      total += size;
      count++;
    }
    const payloads = this.#queue.slice(this.#from, this.#from + count);
    const bytes = encodeFrame(frameOf(payloads));
    assert(count >= 1 && bytes.length <= this.#opts.frameBytesMax, `a frame cut to ${this.#opts.frameBytesMax} bytes encodes to ${bytes.length}`);
    return { payloads, bytes };
  }

  /** The frame `cut` returned was sent: its `count` payloads are framed. */
  take(count: number): void {
    this.#from += count;
  }

  /** The size of payload `i` alone, splitting it first (in place) while it does not fit in `room`. */
  #sizeAt(i: number, room: number): number {
    const sizes = this.#sizes;
    assert(sizes !== null, 'sizes are measured once a run overflowed');
    for (;;) {
      const known = sizes[i];
      if (known !== undefined) return known;
      const payload = this.#queue[i] as P;
      const size = encodeFrame({ t: 'data', seq: 1, payloads: [payload] }).length - this.#emptyFrameBytes;
      if (size <= room) {
        sizes[i] = size;
        return size;
      }
      // Pieces of about half a frame each: the next frames take one or two of them.
      const pieces = this.#opts.split?.(payload, Math.ceil((2 * size) / room)) ?? null;
      assert(pieces !== null && pieces.length > 1, `one payload encodes to ${size} bytes, over the ${room} bytes a frame has room for, and cannot be split`);
      this.#queue.splice(i, 1, ...pieces);
      sizes.splice(i, 1, ...new Array<undefined>(pieces.length).fill(undefined));
    }
  }
}
