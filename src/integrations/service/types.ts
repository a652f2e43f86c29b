// The email service as the rest of the connector sees it. HTTP and undici types never leave
// src/integrations/service/: callers get these shapes and a closed set of outcomes (see errors.ts).

/** Rate-limit headers, parsed from every response (failures included) when present. */
export interface RateInfo {
  limit?: number;
  remaining?: number;
}

/**
 * The closed set of failures (errors.ts classifies every answer into one; see the answer table,
 * docs/delivery.md#what-each-answer-of-the-service-means). What the outbox does with each is
 * decided by decideRetry alone:
 * - `rate_limited` (429): wait what the service asks, then send again.
 * - `auth` (401, or a key no header can carry): the key is refused; the shop's deliveries are held.
 * - `blocked` (403): the service blocked the team for a while; the workspace pauses.
 * - `bad_request` (400, and the other 4xx the request itself caused: 405, 409, 411, 413, 414, 415,
 *   422, ...): sending the same request again gets the same answer; the message is dead.
 * - `not_acceptable` (406): our Accept header is wrong, a bug; retried with backoff.
 * - `not_found` (404 or 410 on an endpoint the service always has): the configured address is wrong;
 *   retried a few times, then the shop's deliveries are held until the address answers.
 * - `retryable`: 5xx, 408, 425, a redirect, a 2xx that is not an acceptance (`success: false`,
 *   or no JSON where JSON is due), timeouts and network errors; retried with backoff.
 */
export type FailureKind = 'rate_limited' | 'auth' | 'blocked' | 'bad_request' | 'not_acceptable' | 'not_found' | 'retryable';

export type ServiceFailure = {
  kind: FailureKind;
  status?: number;
  /** A sentence for a person. Never contains the API key. */
  message: string;
  /** Only for rate_limited, and only when the service said how long to wait. */
  retryAfterMs?: number;
  rate: RateInfo;
  durationMs: number;
  /**
   * Whether the request may have reached the service and been accepted. False when the service
   * answered (any status: it refused) or the connection was never made; true for timeouts and
   * connections closed after the request was written. The outbox counts such sends against a
   * message's cap, so an event is never re-sent without end.
   */
  mayHaveArrived: boolean;
};

export type ServiceResult<T> = { kind: 'ok'; value: T; status: number; rate: RateInfo; durationMs: number } | ServiceFailure;

export interface Workspace {
  workspaceId: string;
  workspaceName: string;
}

export interface ServiceList {
  id: string | null;
  name: string | null;
  raw: unknown;
}

export interface ServiceCustomField {
  key: string | null;
  label: string | null;
  type: string | null;
  raw: unknown;
}

/** Extra top-level keys are contact properties; the service saves them on the contact. */
export interface SendEventBody {
  event_name: string;
  email: string;
  event_attribute?: Record<string, unknown>;
  [contactProperty: string]: unknown;
}

export interface SendOptions {
  /**
   * Called with the moment (epoch ms) the request is written to its connection, once per
   * request (twice when a 404 makes the client try the other path).
   */
  onSent?: (at: number) => void;
}

export interface ServiceClient {
  /** Endpoint 1: POST with Bearer; binds a shop to the key's workspace. */
  validateKey(apiKey: string, shop: { shopId: string; shopName: string }): Promise<ServiceResult<Workspace>>;
  /** Endpoint 2: GET key test; an empty or JSON 200 is ok. */
  checkKey(apiKey: string): Promise<ServiceResult<void>>;
  /** Endpoint 4. */
  listLists(apiKey: string): Promise<ServiceResult<ServiceList[]>>;
  /** Endpoint 3. */
  listCustomFields(apiKey: string): Promise<ServiceResult<ServiceCustomField[]>>;
  /**
   * Endpoint 5. A 404 the service answered itself (a JSON body) means the contact is already
   * gone, which is success; a 404 without one (a proxy, a wrong address) is `not_found`.
   */
  deleteContact(apiKey: string, email: string, options?: SendOptions): Promise<ServiceResult<{ alreadyGone: boolean }>>;
  /** Endpoint 6, on the webhook URL. Only a 2xx with a JSON body that does not say `success: false` is an acceptance. */
  sendEvent(apiKey: string, body: SendEventBody, options?: SendOptions): Promise<ServiceResult<void>>;
  /** Closes pooled connections; waits for requests in flight. */
  close(): Promise<void>;
}
