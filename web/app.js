// The chat page: conversations on the left, the current one on the right, a composer at
// the bottom. Talks to the server through api.js, keeps its state through store.js,
// renders replies with markdown.js and builds the rest with ui.js's helpers. No framework: the DOM is rebuilt from `state` when a
// conversation changes, and only the streaming reply is updated while tokens arrive.

import { ApiError, fetchModel, streamChat } from "./api.js";
import { renderMarkdown } from "./markdown.js";
import * as store from "./store.js";
import { button, copyText, el, setupTheme, showNotice } from "./ui.js";

const $ = (id) => document.getElementById(id);

const state = {
  conversations: store.loadConversations(),  // most recently updated first
  currentId: null,
  settings: store.loadSettings(),
  apiKey: store.loadApiKey(),
  model: null,       // { id, maxModelLen } once /v1/models answered
  generation: null,  // the reply being streamed: { controller, conversation, message, node }
};

function current() {
  return state.conversations.find((c) => c.id === state.currentId) || null;
}

function persist() {
  if (!store.saveConversations(state.conversations)) {
    showNotice("The browser refused to store the conversations (storage full?).", "error");
  }
}

function touch(conversation) {
  conversation.updated = Date.now();
  state.conversations.sort((a, b) => b.updated - a.updated);
}

// ---- notices ---------------------------------------------------------------------------

const STATUS_TITLES = {
  0: "Connection failed",
  400: "Bad request",
  401: "API key needed",
  404: "Not found",
  413: "Too large",
  429: "Too many requests",
  500: "Server error",
  503: "Server busy",
};

function showApiError(error) {
  const title = STATUS_TITLES[error.status] || "Error";
  let text = (error.status ? error.status + " " : "") + title + ": " + error.message;
  if (error.retryAfter) text += " (retry in " + error.retryAfter + " s)";
  showNotice(text, "error");
  if (error.status === 401) askForApiKey();
}

// ---- API key ---------------------------------------------------------------------------

function askForApiKey() {
  const dialog = $("api-key-dialog");
  if (dialog.open) return;
  $("api-key-input").value = state.apiKey;
  dialog.showModal();
  $("api-key-input").focus();
}

function setupApiKeyDialog() {
  const dialog = $("api-key-dialog");
  $("api-key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const save = event.submitter ? event.submitter.value === "save" : true;
    dialog.close();
    if (!save) return;
    state.apiKey = $("api-key-input").value.trim();
    store.saveApiKey(state.apiKey);
    $("notices").replaceChildren();
    loadModel();
  });
  $("change-key").addEventListener("click", askForApiKey);
}

// ---- model -----------------------------------------------------------------------------

async function loadModel() {
  try {
    state.model = await fetchModel(state.apiKey);
    $("model-name").textContent = state.model.id;
    $("model-context").textContent = state.model.maxModelLen
      ? "· context " + state.model.maxModelLen + " tokens" : "";
  } catch (error) {
    $("model-name").textContent = "model unavailable";
    if (error instanceof ApiError) showApiError(error);
    else showNotice(String(error), "error");
  }
}

// ---- conversation list -----------------------------------------------------------------

function renderList() {
  const list = $("conversation-list");
  list.replaceChildren();
  for (const conversation of state.conversations) {
    const item = el("li", conversation.id === state.currentId ? "active" : "");
    item.dataset.id = conversation.id;
    const title = button(conversation.title, "conversation-title", () => select(conversation.id));
    item.append(title,
      button("✎", "rename", () => startRename(item, conversation), "Rename"),
      button("×", "delete", () => remove(conversation), "Delete"));
    list.append(item);
  }
}

function startRename(item, conversation) {
  const input = el("input", "rename-input");
  input.value = conversation.title;
  item.replaceChildren(input);
  input.focus();
  input.select();
  let finished = false;
  const finish = (keep) => {
    if (finished) return;
    finished = true;
    const title = input.value.trim();
    if (keep && title) {
      conversation.title = title;
      persist();
    }
    renderList();
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") finish(true);
    if (event.key === "Escape") finish(false);
  });
  input.addEventListener("blur", () => finish(true));
}

function remove(conversation) {
  if (!window.confirm('Delete "' + conversation.title + '"?')) return;
  if (state.generation && state.generation.conversation === conversation) stop();
  state.conversations = state.conversations.filter((c) => c !== conversation);
  persist();
  if (state.currentId === conversation.id) {
    state.currentId = state.conversations.length ? state.conversations[0].id : null;
  }
  render();
}

function select(id) {
  state.currentId = id;
  document.body.classList.remove("sidebar-open");
  render();
}

function startNewChat() {
  const empty = state.conversations.find((c) => c.messages.length === 0);
  const conversation = empty || store.newConversation();
  if (!empty) state.conversations.unshift(conversation);
  select(conversation.id);
  $("input").focus();
}

function exportAll() {
  const data = {
    exported: new Date().toISOString(),
    model: state.model ? state.model.id : null,
    conversations: state.conversations,
  };
  const blob = new Blob([JSON.stringify(data, null, 2)], { type: "application/json" });
  const link = el("a");
  link.href = URL.createObjectURL(blob);
  link.download = "pagoda-conversations.json";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 60000);  // after the download started
}

// ---- messages --------------------------------------------------------------------------

function statsText(stats) {
  const parts = [];
  if (stats.ttftMs != null) parts.push("first token " + Math.round(stats.ttftMs) + " ms");
  if (stats.tokensPerSecond != null) parts.push(stats.tokensPerSecond.toFixed(1) + " tokens/s");
  if (stats.completionTokens != null) parts.push(stats.completionTokens + " tokens");
  if (stats.finishReason) parts.push(stats.finishReason);
  return parts.join(" · ");
}

function fillContent(node, message) {
  const content = node.querySelector(".content");
  if (message.role === "assistant") {
    content.replaceChildren(renderMarkdown(message.content, copyText));
  } else {
    content.textContent = message.content;  // the user's own text, shown as typed
  }
  node.dataset.state = message.state || "done";
  const stats = node.querySelector(".stats");
  if (stats) {
    let text = message.stats ? statsText(message.stats) : "";
    if (message.state === "stopped") text = (text ? text + " · " : "") + "stopped";
    stats.textContent = text;
  }
}

function messageNode(conversation, message, index) {
  const node = el("div", "message " + message.role);
  node.dataset.index = index;
  node.append(el("div", "role", message.role === "user" ? "You" : "Assistant"));
  node.append(el("div", "content"));
  if (message.role === "assistant") node.append(el("div", "stats"));
  const actions = el("div", "actions");
  const busy = state.generation !== null;
  actions.append(button("Copy", "copy-message", (e) => copyText(message.content, e.target)));
  if (message.role === "user" && !busy) {
    actions.append(button("Edit", "edit", () => startEdit(node, conversation, index)));
  }
  const last = index === conversation.messages.length - 1;
  if (message.role === "assistant" && last && !busy) {
    actions.append(button("Regenerate", "regenerate", () => regenerate(conversation)));
  }
  node.append(actions);
  fillContent(node, message);
  return node;
}

function renderMessages() {
  const conversation = current();
  const box = $("messages");
  box.replaceChildren();
  if (!conversation || conversation.messages.length === 0) {
    box.append(el("div", "empty", "Send a message to start."));
    return;
  }
  conversation.messages.forEach((message, index) => {
    const node = messageNode(conversation, message, index);
    box.append(node);
    if (state.generation && state.generation.message === message) state.generation.node = node;
  });
  box.scrollTop = box.scrollHeight;
}

function startEdit(node, conversation, index) {
  const message = conversation.messages[index];
  const area = el("textarea", "edit-area");
  area.value = message.content;
  area.rows = Math.min(12, Math.max(3, message.content.split("\n").length));
  const resend = button("Send", "edit-send", () => {
    const text = area.value.trim();
    if (!text) return;
    conversation.messages = conversation.messages.slice(0, index);
    conversation.messages.push({ role: "user", content: text });
    generate(conversation);
  });
  const cancel = button("Cancel", "edit-cancel", () => renderMessages());
  node.lastElementChild.hidden = true;  // the message's own actions, while editing
  const editActions = el("div", "actions");
  editActions.append(resend, cancel);
  node.querySelector(".content").replaceChildren(area, editActions);
  area.focus();
}

function render() {
  renderList();
  renderMessages();
  const busy = state.generation !== null;
  $("send").hidden = busy;
  $("stop").hidden = !busy;
  document.body.dataset.busy = busy ? "true" : "false";
}

// ---- generation ------------------------------------------------------------------------

function requestBody(conversation) {
  const s = state.settings;
  const messages = [];
  if (s.systemPrompt.trim()) messages.push({ role: "system", content: s.systemPrompt });
  for (const m of conversation.messages) {
    if (m.role === "assistant" && !m.content) continue;  // a reply that failed before text
    messages.push({ role: m.role, content: m.content });
  }
  const body = { messages };
  if (state.model) body.model = state.model.id;
  if (Number.isFinite(s.temperature)) body.temperature = s.temperature;
  if (Number.isFinite(s.topP)) body.top_p = s.topP;
  if (Number.isFinite(s.maxTokens) && s.maxTokens > 0) body.max_tokens = s.maxTokens;
  return { ...parseExtraFields(s.extraFields), ...body };
}

function parseExtraFields(text) {
  if (!text || !text.trim()) return {};
  try {
    const value = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value;
  } catch {
    // reported below
  }
  showNotice("Extra request fields are not a JSON object; they were left out.", "error");
  return {};
}

// Streams a reply to the conversation's last (user) message into a new assistant message.
async function generate(conversation) {
  if (state.generation) return;
  if (conversation.title === "New chat" && conversation.messages.length > 0) {
    conversation.title = conversation.messages[0].content.replace(/\s+/g, " ").slice(0, 48);
  }
  const body = requestBody(conversation);
  const message = { role: "assistant", content: "", state: "streaming" };
  conversation.messages.push(message);
  touch(conversation);
  persist();
  const generation = { controller: new AbortController(), conversation, message, node: null };
  state.generation = generation;
  render();

  const started = performance.now();
  let firstAt = null;
  let pieces = 0;
  let pendingFrame = false;
  // Repaint at most once a frame: a fast model sends many tokens per frame.
  const repaint = () => {
    pendingFrame = false;
    if (generation.node && generation.node.isConnected) {
      fillContent(generation.node, message);
      const box = $("messages");
      box.scrollTop = box.scrollHeight;
    }
  };
  try {
    const result = await streamChat(body, state.apiKey, generation.controller.signal, (text) => {
      if (firstAt === null) firstAt = performance.now();
      pieces++;
      message.content += text;
      if (!pendingFrame) { pendingFrame = true; requestAnimationFrame(repaint); }
    });
    const ended = performance.now();
    const tokens = result.usage ? result.usage.completion_tokens : pieces;
    message.stats = {
      ttftMs: firstAt === null ? null : firstAt - started,
      // The decode rate: tokens after the first, over the time after the first.
      tokensPerSecond: firstAt !== null && tokens > 1 && ended > firstAt
        ? (tokens - 1) / ((ended - firstAt) / 1000) : null,
      completionTokens: tokens,
      finishReason: result.finishReason,
    };
    message.state = "done";
  } catch (error) {
    if (error.name === "AbortError") {
      message.state = "stopped";
      message.stats = { ttftMs: firstAt === null ? null : firstAt - started,
                        completionTokens: pieces };
    } else {
      message.state = "error";
      if (error instanceof ApiError) showApiError(error);
      else showNotice("The reply could not be read: " + error.message, "error");
      if (!message.content) conversation.messages.pop();
    }
  }
  state.generation = null;
  touch(conversation);
  persist();
  render();
}

// Aborting the fetch closes its connection; the server notices the client left and
// aborts the request in the engine (see api.js, streamChat).
function stop() {
  if (state.generation) state.generation.controller.abort();
}

function regenerate(conversation) {
  const last = conversation.messages[conversation.messages.length - 1];
  if (!last || last.role !== "assistant") return;
  conversation.messages.pop();
  generate(conversation);
}

function submit() {
  const input = $("input");
  const text = input.value.trim();
  if (!text || state.generation) return;
  let conversation = current();
  if (!conversation) {
    conversation = store.newConversation();
    state.conversations.unshift(conversation);
    state.currentId = conversation.id;
  }
  input.value = "";
  conversation.messages.push({ role: "user", content: text });
  generate(conversation);
}

// ---- settings --------------------------------------------------------------------------

const NUMBER_SETTINGS = [["temperature", "temperature"], ["top-p", "topP"], ["max-tokens", "maxTokens"]];

function setupSettings() {
  const fill = () => {
    $("system-prompt").value = state.settings.systemPrompt;
    for (const [id, key] of NUMBER_SETTINGS) $(id).value = state.settings[key];
    $("extra-fields").value = state.settings.extraFields;
  };
  const read = () => {
    state.settings.systemPrompt = $("system-prompt").value;
    for (const [id, key] of NUMBER_SETTINGS) {
      const value = parseFloat($(id).value);
      state.settings[key] = Number.isFinite(value) ? value : store.DEFAULT_SETTINGS[key];
    }
    state.settings.maxTokens = Math.round(state.settings.maxTokens);
    state.settings.extraFields = $("extra-fields").value;
    store.saveSettings(state.settings);
  };
  fill();
  $("settings").addEventListener("change", read);
  $("settings").addEventListener("input", read);
  $("settings-reset").addEventListener("click", () => {
    state.settings = { ...store.DEFAULT_SETTINGS };
    store.saveSettings(state.settings);
    fill();
  });
  $("settings-toggle").addEventListener("click", () => {
    const panel = $("settings");
    panel.hidden = !panel.hidden;
    $("settings-toggle").setAttribute("aria-expanded", String(!panel.hidden));
  });
}

// ---- start -----------------------------------------------------------------------------

function start() {
  setupTheme();
  setupSettings();
  setupApiKeyDialog();
  $("composer").addEventListener("submit", (event) => { event.preventDefault(); submit(); });
  $("input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  $("stop").addEventListener("click", stop);
  $("new-chat").addEventListener("click", startNewChat);
  $("export").addEventListener("click", exportAll);
  $("menu").addEventListener("click", () => document.body.classList.toggle("sidebar-open"));
  // A reply interrupted by a reload was cut short: say so instead of "streaming" forever.
  for (const conversation of state.conversations) {
    for (const message of conversation.messages) {
      if (message.state === "streaming") message.state = "stopped";
    }
  }
  state.currentId = state.conversations.length ? state.conversations[0].id : null;
  render();
  loadModel();
  $("input").focus();
}

start();
