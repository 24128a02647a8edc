// What the page keeps in the browser: conversations and settings in localStorage (they
// survive a reload and a restart of the browser), the API key in sessionStorage (gone
// when the tab's session ends).
//
// A conversation: { id, title, created, updated (ms since 1970), messages: [message] }
// A message:      { role: "user" | "assistant", content, stats?, state? }
//   stats (assistant): { ttftMs, tokensPerSecond, completionTokens, finishReason }
//   state (assistant): "done" | "stopped" | "error"

const CONVERSATIONS = "pagoda.conversations";
const SETTINGS = "pagoda.settings";
const THEME = "pagoda.theme";
const API_KEY = "pagoda.apiKey";

export const DEFAULT_SETTINGS = Object.freeze({
  systemPrompt: "",
  temperature: 0.7,
  topP: 0.95,
  maxTokens: 512,
  extraFields: "",
});

function readJson(storage, key, fallback) {
  try {
    const text = storage.getItem(key);
    return text === null ? fallback : JSON.parse(text);
  } catch {
    return fallback;  // unreadable (edited by hand, or storage refused): start afresh
  }
}

function writeJson(storage, key, value) {
  try {
    storage.setItem(key, JSON.stringify(value));
    return true;
  } catch {
    return false;  // quota exceeded or storage disabled
  }
}

export function loadConversations() {
  const list = readJson(localStorage, CONVERSATIONS, []);
  return Array.isArray(list) ? list.filter((c) => c && c.id && Array.isArray(c.messages)) : [];
}

export function saveConversations(conversations) {
  return writeJson(localStorage, CONVERSATIONS, conversations);
}

export function newConversation() {
  const now = Date.now();
  const id = (crypto.randomUUID ? crypto.randomUUID() : String(now) + Math.random()).toString();
  return { id, title: "New chat", created: now, updated: now, messages: [] };
}

export function loadSettings() {
  return { ...DEFAULT_SETTINGS, ...readJson(localStorage, SETTINGS, {}) };
}

export function saveSettings(settings) {
  writeJson(localStorage, SETTINGS, settings);
}

export function loadTheme() {
  return localStorage.getItem(THEME);
}

export function saveTheme(theme) {
  localStorage.setItem(THEME, theme);
}

export function loadApiKey() {
  return sessionStorage.getItem(API_KEY) || "";
}

export function saveApiKey(key) {
  if (key) sessionStorage.setItem(API_KEY, key);
  else sessionStorage.removeItem(API_KEY);
}
