// Calls to the MUMA API. Invariants: the token lives in sessionStorage only (gone when
// the tab closes), is sent as a bearer header and never put in a URL; every role check
// happens on the server, this module only reports what the server answered.

const TOKEN_KEY = "muma.token";
const USER_KEY = "muma.user";

export class ApiError extends Error {
  constructor(status, body) {
    const detail = body && typeof body === "object" ? body.detail || body.error : body;
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.detail = detail || `HTTP ${status}`;
  }
}

export const store = {
  get token() { return sessionStorage.getItem(TOKEN_KEY); },
  set token(value) { sessionStorage.setItem(TOKEN_KEY, value); },
  get user() { return sessionStorage.getItem(USER_KEY) || ""; },
  set user(value) {
    if (value) sessionStorage.setItem(USER_KEY, value);
    else sessionStorage.removeItem(USER_KEY);
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(USER_KEY);
  },
};

let onUnauthorized = () => {};
export function setUnauthorizedHandler(handler) { onUnauthorized = handler; }

export async function api(method, path, { query, body, token } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
  }
  const headers = { Authorization: `Bearer ${token || store.token || ""}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
    credentials: "omit",
  });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    if (response.status === 401 && !token) onUnauthorized(error);
    throw error;
  }
  return data;
}

export const get = (path, query) => api("GET", path, { query });
export const post = (path, body, query) => api("POST", path, { body, query });
export const put = (path, body) => api("PUT", path, { body });
export const del = (path, query) => api("DELETE", path, { query });
