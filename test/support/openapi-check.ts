/**
 * Holds real HTTP answers to the OpenAPI description (src/http/openapi.ts): a JSON answer
 * to its operation's schema for that status and content type, each line of an NDJSON
 * answer to `x-ndjson-lines`, each server-sent event to `x-sse-events`; and records which
 * (operation, status) pairs were checked, so a test can demand that each was.
 */
import { request } from 'node:http';
import { validate } from './json-schema.js';
import { waitFor } from './wait.js';

type Json = Record<string, unknown>;

/** One item of a stream: an SSE event (its name and data) or an NDJSON line (event ''). */
export interface StreamItem {
  readonly event: string;
  readonly data: Json;
}

/** An open answer read as it arrives. */
export interface OpenStream {
  readonly status: number;
  readonly contentType: string;
  readonly items: StreamItem[];
  /** Waits until an item satisfies `match` (items already read count) and returns it. */
  next(what: string, match: (i: StreamItem) => boolean, timeoutMs?: number): Promise<StreamItem>;
  close(): void;
}

/** Opens `method url` and parses its body as server-sent events or NDJSON while it arrives. */
export function openStream(url: string, method = 'GET', body?: unknown): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = request(url, { method, headers: text === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
      const contentType = String(res.headers['content-type'] ?? '').split(';')[0] ?? '';
      const items: StreamItem[] = [];
      let buffered = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffered += chunk;
        const sep = contentType === 'text/event-stream' ? '\n\n' : '\n';
        let at: number;
        while ((at = buffered.indexOf(sep)) >= 0) {
          const block = buffered.slice(0, at);
          buffered = buffered.slice(at + sep.length);
          const item = contentType === 'text/event-stream' ? sseItem(block) : { event: '', data: JSON.parse(block) as Json };
          if (item !== null) items.push(item);
        }
      });
      res.on('error', () => undefined);
      let seen = 0;
      resolve({
        status: res.statusCode ?? 0, contentType, items,
        next: async (what, match, timeoutMs = 5000) => {
          let found: StreamItem | undefined;
          await waitFor(what, () => {
            for (; seen < items.length && found === undefined; seen++) if (match(items[seen] as StreamItem)) found = items[seen];
            return found !== undefined;
          }, timeoutMs);
          return found as StreamItem;
        },
        close: () => req.destroy(),
      });
    });
    req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
    req.end(text);
  });
}

function sseItem(block: string): StreamItem | null {
  let event = 'message';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('event: ')) event = line.slice(7);
    else if (line.startsWith('data: ')) data += line.slice(6);
  }
  return data === '' ? null : { event, data: JSON.parse(data) as Json };
}

/** The OpenAPI description and what was checked against it. */
export class OpenApiCheck {
  readonly spec: Json;
  /** `METHOD /template STATUS` of every answer checked. */
  readonly checked = new Set<string>();

  constructor(spec: Json) {
    this.spec = spec;
  }

  /** The response object of an operation for a status; throws when the description has none. */
  #response(method: string, template: string, status: number): Json {
    const path = (this.spec['paths'] as Record<string, Json>)[template];
    const op = path?.[method.toLowerCase()] as Json | undefined;
    if (op === undefined) throw new Error(`the description has no operation ${method} ${template}`);
    const response = (op['responses'] as Record<string, Json>)[String(status)];
    if (response === undefined) throw new Error(`${method} ${template} answered ${status}, which the description does not list`);
    this.checked.add(`${method} ${template} ${status}`);
    return response;
  }

  #media(method: string, template: string, status: number, contentType: string): Json {
    const content = this.#response(method, template, status)['content'] as Record<string, Json>;
    const media = content[contentType];
    if (media === undefined) throw new Error(`${method} ${template} ${status} came as ${contentType}; the description lists ${Object.keys(content).join(', ')}`);
    return media;
  }

  /** Problems of a JSON answer (empty: it matches the description). */
  json(method: string, template: string, status: number, body: unknown, contentType = 'application/json'): string[] {
    return validate(body, this.#media(method, template, status, contentType)['schema'] as Json, this.spec);
  }

  /** Problems of the items read so far of a stream answer (SSE events or NDJSON lines). */
  stream(method: string, template: string, s: OpenStream): string[] {
    const media = this.#media(method, template, s.status, s.contentType);
    if (s.contentType === 'application/x-ndjson') {
      const lines = media['x-ndjson-lines'] as Json[];
      return s.items.flatMap((item, i) => validate(item.data, lines[Math.min(i, lines.length - 1)] as Json, this.spec, `line ${i}`));
    }
    const events = media['x-sse-events'] as Record<string, Json>;
    return s.items.flatMap((item) => {
      const schema = events[item.event];
      return schema === undefined ? [`event ${item.event} is not in the description`] : validate(item.data, schema, this.spec, `event ${item.event}`);
    });
  }

  /** Problems of a request body the test sends, against the operation's requestBody. */
  requestBody(method: string, template: string, body: unknown): string[] {
    const op = (this.spec['paths'] as Record<string, Json>)[template]?.[method.toLowerCase()] as Json;
    const schema = ((op['requestBody'] as Json)['content'] as Record<string, Json>)['application/json']?.['schema'] as Json;
    return validate(body, schema, this.spec, 'request');
  }
}
