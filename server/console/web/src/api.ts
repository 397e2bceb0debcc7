// The console's only way to the server: floe's documented APIs, called
// with the signed-in principal's bearer token. Nothing here is private to
// the console; every request is one any other client could send.

const TOKEN_KEY = "floe.token";

export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(t: string) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// ApiError is a refused or failed request, in whichever of the three
// APIs' error models it came back.
export class ApiError extends Error {
  constructor(public status: number, public code: string, message: string) {
    super(message);
  }
  get forbidden() { return this.status === 403; }
  get unauthorized() { return this.status === 401; }
  get notFound() { return this.status === 404; }
}

// errorOf reads Nessie's ({status, errorCode, message}), floe's
// ({error: {status, code, message}}) and Iceberg's ({error: {code, type,
// message}}) error bodies.
function errorOf(status: number, body: any): ApiError {
  if (typeof body?.error === "string") {
    // OAuth's token endpoint: {error, error_description} (RFC 6749).
    return new ApiError(status, body.error, String(body.error_description ?? body.error));
  }
  const e = body?.error && typeof body.error === "object" ? body.error : body;
  const code = String(e?.errorCode ?? e?.type ?? e?.code ?? status);
  const msg = String(e?.message ?? e?.reason ?? `HTTP ${status}`);
  return new ApiError(status, code, msg);
}

// parseJSON keeps integers beyond 2^53 (Iceberg snapshot ids are random
// int64s) as their exact decimal strings instead of rounding them: with
// the reviver's source text where the browser gives it, else by quoting
// long integer literals before parsing.
const reviverHasSource = (() => {
  try { return (JSON.parse as any)("1", (_k: string, _v: unknown, c?: { source?: string }) => c?.source === "1") === true; } catch { return false; }
})();

export function parseJSON(text: string): any {
  if (reviverHasSource) {
    return (JSON.parse as any)(text, (_k: string, v: unknown, c?: { source?: string }) =>
      typeof v === "number" && !Number.isSafeInteger(v) && c?.source && /^-?\d+$/.test(c.source) ? c.source : v);
  }
  return JSON.parse(text.replace(/([:,[]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"$2"'));
}

type Method = "GET" | "POST" | "PUT" | "DELETE";

export async function call<T = any>(method: Method, url: string, body?: unknown, form?: URLSearchParams): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  const t = token();
  if (t) headers.Authorization = "Bearer " + t;
  let payload: BodyInit | undefined;
  if (form) {
    payload = form;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: payload, credentials: "omit" });
  } catch (err) {
    throw new ApiError(0, "NETWORK", "The server did not answer: " + String(err));
  }
  const text = await res.text();
  let json: any = undefined;
  if (text) {
    try { json = parseJSON(text); } catch { json = undefined; }
  }
  if (!res.ok) throw errorOf(res.status, json ?? { message: text || res.statusText });
  return json as T;
}

// ---- Nessie API v2 (/api/v2) ----

export type Ref = { type: "BRANCH" | "TAG" | "DETACHED"; name?: string; hash: string; metadata?: any };
export type ContentKey = { elements: string[] };
export type Content = {
  type: string; id?: string; metadataLocation?: string; snapshotId?: number; schemaId?: number;
  specId?: number; sortOrderId?: number; versionId?: number; elements?: string[]; properties?: Record<string, string>;
};
export type CommitMeta = {
  hash: string; committer?: string; author?: string; authors: string[]; message: string;
  commitTime?: string; authorTime?: string; properties: Record<string, string>; parentCommitHashes: string[];
};
export type Operation = { type: string; key: ContentKey; content?: Content };
export type LogEntry = { commitMeta: CommitMeta; parentCommitHash?: string; additionalParents?: string[]; operations?: Operation[] };
export type Page<K extends string, T> = { [P in K]: T[] } & { hasMore?: boolean; token?: string };

const NESSIE = "/api/v2";

// refPath is a reference expression (main, etl/daily, main@<hash>, or
// @<hash>) as one path segment.
export const refPath = (r: string) => encodeURIComponent(r);

// keyPath encodes a content key as Nessie's spec 2.2.0 path form (see
// internal/nessiekey): elements joined by '.', escaped when one holds
// '.', '/', '\' or '%'.
export function keyPath(elements: string[]): string {
  const joined = elements.join("");
  let s: string;
  if (!/[./\\%]/.test(joined)) {
    s = elements.join(".");
  } else {
    s = "." + elements.map((e) => e.replace(/[*./\\%]/g, (c) => ({ "*": "**", ".": "*.", "/": "*{", "\\": "*}", "%": "*[" } as Record<string, string>)[c])).join(".");
  }
  return encodeURIComponent(s);
}

export const keyString = (k: ContentKey | string[]) => (Array.isArray(k) ? k : k.elements).join(".");

function qs(params: Record<string, string | number | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") p.set(k, String(v));
  const s = p.toString();
  return s ? "?" + s : "";
}

export const nessie = {
  references: (pageToken?: string, max = 50) =>
    call<Page<"references", Ref>>("GET", `${NESSIE}/trees${qs({ "max-records": max, "page-token": pageToken, fetch: "ALL" })}`),
  reference: (name: string) => call<{ reference: Ref }>("GET", `${NESSIE}/trees/${refPath(name)}`),
  create: (name: string, type: "BRANCH" | "TAG", from: Ref) =>
    call<{ reference: Ref }>("POST", `${NESSIE}/trees${qs({ name, type })}`, { type: from.type, name: from.name, hash: from.hash }),
  remove: (ref: Ref) => call("DELETE", `${NESSIE}/trees/${refPath(`${ref.name}@${ref.hash}`)}`),
  entries: (ref: string, pageToken?: string, filter?: string, max = 50) =>
    call<Page<"entries", { name: ContentKey; type: string; contentId?: string }> & { effectiveReference?: Ref }>(
      "GET", `${NESSIE}/trees/${refPath(ref)}/entries${qs({ "max-records": max, "page-token": pageToken, filter })}`),
  content: (ref: string, key: string[]) =>
    call<{ content: Content; effectiveReference?: Ref }>("GET", `${NESSIE}/trees/${refPath(ref)}/contents/${keyPath(key)}`),
  history: (ref: string, pageToken?: string, filter?: string, max = 40) =>
    call<Page<"logEntries", LogEntry>>("GET", `${NESSIE}/trees/${refPath(ref)}/history${qs({ "max-records": max, "page-token": pageToken, filter, fetch: "ALL" })}`),
  diff: (from: string, to: string, pageToken?: string, max = 50) =>
    call<Page<"diffs", { key: ContentKey; from?: Content; to?: Content }> & { effectiveFromReference: Ref; effectiveToReference: Ref }>(
      "GET", `${NESSIE}/trees/${refPath(from)}/diff/${refPath(to)}${qs({ "max-records": max, "page-token": pageToken })}`),
  merge: (target: Ref, from: Ref, message: string) =>
    call("POST", `${NESSIE}/trees/${refPath(`${target.name}@${target.hash}`)}/history/merge`,
      { fromRefName: from.name, fromHash: from.hash, message }),
};

// ---- floe's own API (/api/floe/v1) ----

export type RefStatus = {
  name: string; type: "BRANCH" | "TAG"; hash: string; created: string; age: string; lastCommit?: string;
  lastActivity: string; expiresAt?: string; expired: boolean;
  retention: { maxAge?: string; maxAgeSource?: string; keepCommits?: number; keepHistory?: string; protected?: boolean };
};
export type MergePlan = {
  source: { name?: string; hash: string }; target: { name?: string; hash: string }; mergeBase: string; mergeable: boolean;
  keys: { key: string[]; conflict: { type?: string; message?: string } | null }[];
  tables: { key: string[]; action: string; snapshots: number; reason: string; classification?: any }[];
};

const FLOE = "/api/floe/v1";

export const QUEUE_STATES = ["queued", "validating", "review", "merged", "failed", "cancelled", "rejected"] as const;
export type QueueState = typeof QUEUE_STATES[number];
export const FINAL_STATES: string[] = ["merged", "failed", "cancelled", "rejected"];
export type CheckResult = { name: string; passed: boolean; reason?: string; durationSeconds: number };
export type Validation = { candidate?: string; targetHead?: string; at?: string; passed?: boolean; error?: string; results?: CheckResult[] };
export type AuditEvent = { at: string; from?: string; to: string; reason?: string; principal: string; candidate?: string };
export type MergeRequest = {
  id: string; seq: number; target: string; source: string; sourceRef?: string; sourceHash: string; tables?: string[];
  priority?: number; requiredChecks?: string[]; idempotencyKey?: string; message?: string; principal: string; class: string;
  state: QueueState; reason?: string; reasonCode?: string; enqueuedAt: string; startedAt?: string; endedAt?: string;
  approved?: boolean; classification?: string; tableClasses?: { table?: string; class?: string; reason?: string }[];
  batched?: boolean; validations?: Validation[]; landedCommit?: string; landedOnto?: string; hygiene?: string[]; audit: AuditEvent[];
};
export type SubmitMerge = { source: string; target: string; tables?: string[]; priority?: number; requiredChecks?: string[]; message?: string };
export type QueueReport = {
  since?: string; until?: string; states?: Record<string, number>; bypassCommits?: Record<string, number>;
  pending?: { target?: string; queued?: number; review?: number }[];
  classes?: {
    class: string; count: number; classification?: Record<string, number>; batched?: number; medianWaitSeconds?: number;
    medianMergeSeconds?: number; failures?: number; failureReasons?: Record<string, number>; review?: number; cancelled?: number; rejected?: number;
  }[];
};

export const floe = {
  refs: () => call<{ references: RefStatus[] }>("GET", `${FLOE}/refs`),
  planMerge: (source: string, target: string) => call<MergePlan>("POST", `${FLOE}/merge-plans`, { source, target }),
  // The merge queue (/merge-requests). The listing is one document (no
  // page token), at most limit requests in arrival order.
  mergeRequests: (f: { state?: string; target?: string; sourcePrefix?: string; since?: string; limit?: number }) =>
    call<{ requests: MergeRequest[] }>("GET", `${FLOE}/merge-requests${qs(f)}`),
  mergeRequest: (id: string) => call<MergeRequest>("GET", `${FLOE}/merge-requests/${encodeURIComponent(id)}`),
  submitMerge: (body: SubmitMerge) => call<MergeRequest>("POST", `${FLOE}/merge-requests`, body),
  reviewMerge: (id: string, verdict: "approve" | "reject" | "cancel", reason: string) =>
    call<MergeRequest>("POST", `${FLOE}/merge-requests/${encodeURIComponent(id)}/${verdict}`, reason ? { reason } : {}),
  queueReport: (since = "24h") => call<QueueReport>("GET", `${FLOE}/merge-requests/report${qs({ since })}`),
  // The change feed (/events): a page after a cursor, filtered by
  // reference and type; "now" is the current end.
  events: (f: { after?: string; ref?: string; types?: string; limit?: number }) =>
    call<EventPage>("GET", `${FLOE}/events${qs(f)}`),
};

// FeedEvent is one event of the change feed (docs/changefeed.md).
export type FeedEvent = {
  id: string; type: string; ref: string; refType: string; commit: string; principal: string; time: string;
  move?: { from?: string; to?: string; fastForward?: boolean; reason?: string };
  commitDetails?: { message?: string; source?: string; operation?: string; keys?: string[][]; tables?: { key: string[]; class?: string; resolution?: string }[] };
  content?: { key: string[]; previousKey?: string[]; via: string; iceberg?: { operation?: string; snapshotId?: string | number } };
  queue?: { request: string; from?: string; to: string; reason?: string };
  gc?: { id: string; outcome: string; deleted: number };
  policy?: { source: string; revision?: string };
};
export type EventPage = { events: FeedEvent[]; next: string };

// tailEvents follows the change feed as Server-Sent Events after a cursor
// (with fetch, not EventSource, which cannot send the bearer token),
// calling onEvent for each event and onNext as the cursor moves, until
// signal aborts or the stream ends.
export async function tailEvents(f: { after: string; ref?: string; types?: string }, signal: AbortSignal,
  onEvent: (e: FeedEvent) => void, onNext: (id: string) => void): Promise<void> {
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  const t = token();
  if (t) headers.Authorization = "Bearer " + t;
  const res = await fetch(`${FLOE}/events${qs(f)}`, { headers, signal, credentials: "omit" });
  if (!res.ok || !res.body) {
    const text = await res.text();
    let json: any;
    try { json = parseJSON(text); } catch { json = undefined; }
    throw errorOf(res.status, json ?? { message: text || res.statusText });
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let cut: number;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const msg = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let id = "", event = "", data = "";
      for (const line of msg.split("\n")) {
        if (line.startsWith("id: ")) id = line.slice(4);
        else if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (event === "error") throw errorOf(500, parseJSON(data));
      if (data) onEvent(parseJSON(data) as FeedEvent);
      if (id) onNext(id);
    }
  }
}

// ---- Iceberg REST catalog (/v1) ----

let defaultPrefix: Promise<string> | undefined;

// warehouse is the default warehouse's name, from /v1/config's prefix
// ("lake" unless floe serve says otherwise).
async function warehouse(): Promise<string> {
  defaultPrefix ??= call<{ overrides?: Record<string, string>; defaults?: Record<string, string> }>("GET", "/v1/config")
    .then((c) => decodeURIComponent(c.overrides?.prefix ?? c.defaults?.prefix ?? "lake").split("@")[0])
    .catch((e) => { defaultPrefix = undefined; throw e; });
  return defaultPrefix;
}

// prefix is the warehouse at a reference expression: lake@etl/daily,
// lake@main@<hash>, lake@<hash>.
async function prefix(ref: string): Promise<string> {
  const wh = await warehouse();
  return encodeURIComponent(ref.startsWith("@") ? wh + ref : `${wh}@${ref}`);
}

function identPath(key: string[]): string {
  const ns = encodeURIComponent(key.slice(0, -1).join("\u001f"));
  return `namespaces/${ns}`;
}

export const iceberg = {
  table: async (ref: string, key: string[]) =>
    call<{ "metadata-location": string; metadata: any }>("GET", `/v1/${await prefix(ref)}/${identPath(key)}/tables/${encodeURIComponent(key[key.length - 1])}`),
  view: async (ref: string, key: string[]) =>
    call<{ "metadata-location": string; metadata: any }>("GET", `/v1/${await prefix(ref)}/${identPath(key)}/views/${encodeURIComponent(key[key.length - 1])}`),
  // oauthToken is the client-credentials flow floe serves.
  oauthToken: (clientId: string, secret: string) =>
    call<{ access_token: string; expires_in?: number }>("POST", "/v1/oauth/tokens", undefined,
      new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: secret, scope: "catalog" })),
};
