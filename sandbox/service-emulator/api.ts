// The service's own endpoints (spec endpoints 1-6). Each handler gets a parsed JSON body and
// the caller's workspace, and returns a status and body. 400s are counted by the pipeline.
import { normaliseEmail, type Store, type WorkspaceData } from './state';

export interface ApiContext {
  store: Store;
  d: WorkspaceData;
  body: unknown;
  now: number;
}

export interface ApiReply {
  status: number;
  body?: unknown;
}

type Handler = (ctx: ApiContext) => ApiReply;

const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
const MAX_EVENT_NAME = 255;
const RESERVED = new Set(['event_name', 'email', 'event_attribute']);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function bad(message: string): ApiReply {
  return { status: 400, body: { message } };
}

function validEmail(v: unknown): string | ApiReply {
  if (v === undefined || v === null || v === '') return bad('email is required.');
  if (typeof v !== 'string' || v.length > 254 || !EMAIL.test(v.trim())) return bad('email must be a valid email address.');
  return normaliseEmail(v);
}

const validateKey: Handler = ({ d, body }) => {
  if (!isObject(body)) return bad('Request body must be a JSON object.');
  if (typeof body.type !== 'string' || body.type === '') return bad('type is required.');
  if (!isObject(body.data)) return bad('data must be a JSON object with shop_id and shop_name.');
  const { shop_id: shopId, shop_name: shopName } = body.data;
  if (typeof shopId !== 'string' || shopId === '') return bad('data.shop_id is required.');
  if (typeof shopName !== 'string') return bad('data.shop_name is required.');
  d.shops.set(shopId, shopName);
  return { status: 200, body: { success: true, workspace_id: d.ws.id, workspace_name: d.ws.name } };
};

const checkKey: Handler = () => ({ status: 200, body: { success: true } });

function page(results: unknown[]): unknown {
  return { count: results.length, next: null, previous: null, results };
}

const lists: Handler = ({ d }) => ({ status: 200, body: page(d.lists.map((l) => ({ ...l }))) });

const customFields: Handler = ({ d }) => ({ status: 200, body: page(d.customFields.map((f) => ({ ...f }))) });

const deleteContact: Handler = ({ d, body }) => {
  if (!isObject(body)) return bad('Request body must be a JSON object.');
  const email = validEmail(body.email);
  if (typeof email !== 'string') return email;
  if (!d.contacts.delete(email)) return { status: 404, body: { detail: 'Contact not found.' } };
  d.deleted.push(email);
  return { status: 200, body: { message: 'User deleted successfully' } };
};

const sendEvent: Handler = ({ store, d, body, now }) => {
  if (!isObject(body)) return bad('Request body must be a JSON object.');
  const name = body.event_name;
  if (typeof name !== 'string' || name.trim() === '') return bad('event_name is required.');
  if (name.length > MAX_EVENT_NAME) return bad(`event_name must be at most ${MAX_EVENT_NAME} characters.`);
  const email = validEmail(body.email);
  if (typeof email !== 'string') return email;
  const attrs = body.event_attribute;
  if (attrs !== undefined && !isObject(attrs)) return bad('event_attribute must be a JSON object.');
  const contactProperties: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (!RESERVED.has(k)) contactProperties[k] = v;
  store.upsertContact(d, email, contactProperties, now);
  store.addEvent({
    workspaceId: d.ws.id,
    event_name: name,
    email,
    event_attribute: attrs ?? {},
    contactProperties,
    receivedAt: now,
  });
  return { status: 200, body: { success: true } };
};

/** Paths without trailing slash (both forms are served); spec table forms, /api where the spec gives it. */
export const API_ROUTES: ReadonlyMap<string, Partial<Record<string, Handler>>> = new Map<string, Partial<Record<string, Handler>>>([
  ['/webhook/api_key/validate', { POST: validateKey, GET: checkKey }],
  ['/api/webhook/api_key/validate', { GET: checkKey }],
  ['/api/webhook/customfields', { GET: customFields }],
  ['/webhook/lists', { GET: lists }],
  ['/api/webhook/lists', { GET: lists }],
  ['/api/webhook/contact/delete', { POST: deleteContact }],
  ['/webhook/send', { POST: sendEvent }],
]);
